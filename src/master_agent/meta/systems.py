"""Compiled systems as tenant agents: the documents of a ``CompiledSpec`` saved in the agent-builder
registry (components first, the supervisor last, which names them), each a new version when an agent
of that name exists, so a recompiled system replaces the old one and the tenant's next run sees it."""

from __future__ import annotations

import uuid
from typing import Any

from master_agent.capabilities import load_tenant
from master_agent.capabilities.agents import AgentDocument, live_agents
from master_agent.capabilities.assistants import AGENT_SPEC_KEY, GRAPH_ID, resolve_assistant
from master_agent.meta.artifacts import CompiledSpec, SystemSpec
from master_agent.meta.compiler import system_names
from master_agent.runtime.graphs import graph_ids
from master_agent.runtime.resources import RuntimeResources
from master_agent.runtime.tenant_agents import agent_catalogue, change_assistant, save_assistant


async def register_system(
    resources: RuntimeResources, tenant_id: str, compiled: CompiledSpec, request_id: uuid.UUID
) -> list[str]:
    """Save the compiled system's agents for ``tenant_id``; their names, the supervisor last."""
    documents = [AgentDocument.model_validate(d) for d in compiled.config.get("agents") or []]
    pool = resources.database.pool
    names = []
    for document in documents:
        tenant = await load_tenant(pool, tenant_id)
        existing = (await live_agents(pool, tenant_id, tenant.capability_version)).get(document.name)
        metadata: dict[str, Any] = {
            "created_by": "meta",
            "meta_request": str(request_id),
            "system": compiled.system_name,
            "system_version": compiled.system_version,
        }
        context = {AGENT_SPEC_KEY: document.model_dump(mode="json")}
        if existing is None:
            await save_assistant(
                resources,
                tenant_id,
                assistant_id=uuid.uuid4(),
                graph_id=GRAPH_ID,
                name=None,
                description=None,
                config={},
                context=context,
                metadata=metadata,
            )
        else:
            current = await resolve_assistant(pool, tenant_id, existing.assistant_id, graph_ids(resources))
            assert current is not None  # live_agents just listed it
            await change_assistant(
                resources, tenant_id, current, config={}, context=context, metadata=metadata
            )
        names.append(document.name)
    return names


async def taken_names(resources: RuntimeResources, tenant_id: str) -> set[str]:
    """Every name in the tenant's namespace: its tools, its pack's agents, its own agents and their
    saved queries."""
    catalogue = await agent_catalogue(resources, await load_tenant(resources.database.pool, tenant_id))
    names = {*catalogue.tools, *catalogue.pack_agents, *catalogue.reserved}
    for name, document in catalogue.tenant_agents.items():
        names.add(name)
        names.update(query.name for query in document.queries)
    return names


async def free_system_name(resources: RuntimeResources, tenant_id: str, system: SystemSpec) -> str:
    """``system``'s name, or the first ``<name>_<n>`` whose agents and queries take no name the tenant
    uses: a new system never replaces another (a collision renames, never refuses)."""
    taken = await taken_names(resources, tenant_id)
    base = system.name[:36]
    for n in range(1, 1000):
        name = system.name if n == 1 else f"{base}_{n}"
        if not system_names(system.model_copy(update={"name": name})) & taken:
            return name
    raise RuntimeError(f"no free name for {system.name!r}")  # 999 systems of one name: not reachable
