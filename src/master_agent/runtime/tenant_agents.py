"""The tenant's own agents as the runtime sees them: what they may name (the catalogue) and whether a
document may become one (every reason it may not, at once)."""

from __future__ import annotations

from typing import Any

from master_agent.capabilities import TenantRecord, domain_pack
from master_agent.capabilities.agents import (
    AgentCatalogue,
    AgentDocument,
    check_document,
    live_agents,
    parse_document,
)
from master_agent.capabilities.spec import TIERS, Tier
from master_agent.capabilities.tools.readers import SELECT_READER
from master_agent.errors import InvalidAgentError
from master_agent.evolution.tools import build_evolution_tools
from master_agent.runtime.factory import tenant_tool_context
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
