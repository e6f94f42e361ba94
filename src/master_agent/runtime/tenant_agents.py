"""The tenant's own agents as the runtime sees them: what they may name (the catalogue), whether a
document may become one (every reason it may not, at once), and the checked changes of assistants that
the API, the CLI and the builder conversation make (each change of an agent changes the tenant's
capability version, so its next run builds the new graph)."""

from __future__ import annotations

import uuid
from typing import Any, Literal, cast

from langchain_core.runnables import RunnableConfig

from master_agent.capabilities import TenantRecord, bump_capability_version, domain_pack, load_tenant
from master_agent.capabilities.agents import (
    AgentCatalogue,
    AgentDocument,
    check_document,
    live_agents,
    parse_document,
)
from master_agent.capabilities.assistants import (
    Assistant,
    agent_payload,
    create_assistant,
    delete_assistant,
    is_system,
    patch_assistant,
    set_live_version,
)
from master_agent.capabilities.spec import TIERS, Tier
from master_agent.capabilities.tools.readers import SELECT_READER
from master_agent.errors import ConflictError, InputError, InvalidAgentError
from master_agent.evolution.tools import build_evolution_tools
from master_agent.runtime.factory import master_graph, tenant_tool_context
from master_agent.runtime.graphs import MASTER_GRAPH_ID, graph_ids
from master_agent.runtime.resources import RuntimeResources


async def agent_catalogue(resources: RuntimeResources, tenant: TenantRecord) -> AgentCatalogue:
    """What the tenant's agents may name: its tools (with the least tier of each), its pack's agents, its
    own live agents, and the tables its reader role may read."""
    pack = domain_pack(tenant.domain or "retail")
    tool_context = tenant_tool_context(resources, tenant)
    tools = {**build_evolution_tools(resources.evolution, tenant.tenant_id), **pack.build_tools(tool_context)}
    tiers: dict[str, Tier] = dict.fromkeys(tools, "free")
    # A pack tool is as exclusive as the least exclusive pack agent using it (the master agent's are free).
    users: dict[str, list[Tier]] = {}
    for spec in [pack.master, *pack.sub_agents.values()]:
        for name in spec["tools"]:
            users.setdefault(name, []).append(spec.get("min_tier", "free"))
    for name, needed in users.items():
        if name in tiers:
            tiers[name] = min(needed, key=TIERS.index)
    tables: tuple[str, ...] | None = None
    async with resources.database.pool.connection() as conn:
        row = await (await conn.execute(SELECT_READER, (tenant.tenant_id,))).fetchone()
    if row is not None:
        tables = tuple(row["tables"])
    return AgentCatalogue(
        tier=tenant.tier,
        domain=pack.name,
        max_depth=resources.settings.max_depth,
        tools=tiers,
        pack_agents=pack.sub_agents,
        descriptions={
            **{name: tool.description for name, tool in tools.items()},
            **{name: spec["description"] for name, spec in pack.sub_agents.items()},
        },
        reserved=frozenset({pack.master["name"]}),
        tenant_agents={
            name: stored.document
            for name, stored in (
                await live_agents(resources.database.pool, tenant.tenant_id, tenant.capability_version)
            ).items()
        },
        tables=tables,
        data_schema=tenant.data_schema,
    )


async def validated_agent(
    resources: RuntimeResources,
    tenant: TenantRecord,
    payload: Any,
    field: str,
    *,
    replacing: str | None = None,
) -> AgentDocument:
    """The agent document ``payload`` (found at ``field``) if the tenant may have it; otherwise an
    ``InvalidAgentError`` listing every reason. ``replacing``: the name of the agent it is a new version of."""
    document, problems = parse_document(payload)
    if document is not None:
        problems = check_document(document, await agent_catalogue(resources, tenant), replacing=replacing)
    if problems:
        raise InvalidAgentError(field, [problem.as_dict() for problem in problems])
    assert document is not None
    return document


def _known_graph(resources: RuntimeResources, graph_id: str | None) -> None:
    if graph_id is not None and graph_id not in graph_ids(resources):
        raise InputError("graph_id", f"unknown graph {graph_id!r}; known: {graph_ids(resources)}")


async def _checked_agent(
    resources: RuntimeResources,
    tenant_id: str,
    graph_id: str,
    config: dict[str, Any],
    context: dict[str, Any],
    replacing: str | None = None,
) -> dict[str, Any] | None:
    """The checked agent document the config or context carries (None: no agent), and the config
    itself checked against the tenant's catalogue (e.g. ``sub_agents`` choosing agents)."""
    if not isinstance(config.get("configurable") or {}, dict):
        raise InputError("config.configurable", "send one object")
    payload, field = agent_payload(config, context)
    tenant = await load_tenant(resources.database.pool, tenant_id)
    if payload is not None:
        if graph_id != MASTER_GRAPH_ID:
            raise InputError(field, f"agents run on the {MASTER_GRAPH_ID!r} graph")
        document = await validated_agent(resources, tenant, payload, field, replacing=replacing)
        return document.model_dump(mode="json")
    if graph_id == MASTER_GRAPH_ID:
        configurable = {**(config.get("configurable") or {}), "tenant_id": tenant_id}
        configurable.pop("client_id", None)
        try:
            await master_graph(resources, cast(RunnableConfig, {"configurable": configurable}))
        except InputError as error:
            field = error.field if error.field.startswith("configurable") else f"configurable.{error.field}"
            raise InputError(f"config.{field}", str(error).split(": ", 1)[-1]) from None
    return None


def _own(resources: RuntimeResources, tenant_id: str, assistant: Assistant) -> None:
    if is_system(assistant.assistant_id, tenant_id, graph_ids(resources)):
        raise ConflictError(
            "assistant_id: the system assistant of a graph cannot be changed; create your own"
        )


async def save_assistant(
    resources: RuntimeResources,
    tenant_id: str,
    *,
    assistant_id: uuid.UUID,
    graph_id: str,
    name: str | None,
    description: str | None,
    config: dict[str, Any],
    context: dict[str, Any],
    metadata: dict[str, Any],
    if_exists: Literal["raise", "do_nothing"] = "raise",
) -> Assistant:
    """Create an assistant; one carrying an agent spec is checked first, and the tenant's next run
    sees it (its capability version changes)."""
    _known_graph(resources, graph_id)
    spec = await _checked_agent(resources, tenant_id, graph_id, config, context)
    pool = resources.database.pool
    assistant = await create_assistant(
        pool,
        tenant_id,
        assistant_id=assistant_id,
        graph_id=graph_id,
        name=name or (spec["name"] if spec else "Untitled"),
        description=description if description is not None else (spec or {}).get("description"),
        config=config,
        context=context,
        metadata=metadata,
        agent_spec=spec,
        if_exists=if_exists,
    )
    if spec is not None:
        await bump_capability_version(pool, tenant_id)
    return assistant


async def change_assistant(
    resources: RuntimeResources,
    tenant_id: str,
    current: Assistant,
    *,
    graph_id: str | None = None,
    name: str | None = None,
    description: str | None = None,
    config: dict[str, Any] | None = None,
    context: dict[str, Any] | None = None,
    metadata: dict[str, Any] | None = None,
) -> Assistant:
    """Store a new version of an assistant and make it live (an agent's is checked first)."""
    _own(resources, tenant_id, current)
    _known_graph(resources, graph_id)
    config = current.config if config is None else config
    context = current.context if context is None else context
    before = current.agent_spec()
    replacing = before.get("name") if before else None
    spec = await _checked_agent(
        resources, tenant_id, graph_id or current.graph_id, config, context, replacing=replacing
    )
    pool = resources.database.pool
    after = await patch_assistant(
        pool,
        tenant_id,
        current.assistant_id,
        graph_id=graph_id,
        name=name or (spec["name"] if spec is not None else None),
        description=description,
        config=config,
        context=context,
        metadata=metadata,
        agent_spec=spec,
    )
    if spec is not None or before is not None:
        await bump_capability_version(pool, tenant_id)
    return after


async def promote_version(
    resources: RuntimeResources, tenant_id: str, current: Assistant, version: int
) -> Assistant:
    """Make a stored version live (promote or roll back)."""
    _own(resources, tenant_id, current)
    pool = resources.database.pool
    live = await set_live_version(pool, tenant_id, current.assistant_id, version)
    if live.agent_spec() is not None or current.agent_spec() is not None:
        await bump_capability_version(pool, tenant_id)
    return live


async def remove_assistant(resources: RuntimeResources, tenant_id: str, current: Assistant) -> None:
    _own(resources, tenant_id, current)
    pool = resources.database.pool
    if await delete_assistant(pool, tenant_id, current.assistant_id):
        await bump_capability_version(pool, tenant_id)
