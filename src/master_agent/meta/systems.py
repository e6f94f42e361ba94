"""Compiled systems as tenant agents: the documents of a ``CompiledSpec`` saved in the agent-builder
registry (components first, the supervisor last, which names them), each a new version when an agent
of that name exists, so a recompiled system replaces the old one and the tenant's next run sees it."""

from __future__ import annotations

import uuid
from typing import Any

from master_agent.capabilities import load_tenant
from master_agent.capabilities.agents import AgentDocument, live_agents
from master_agent.capabilities.assistants import AGENT_SPEC_KEY, GRAPH_ID, resolve_assistant
from master_agent.meta.artifacts import CompiledSpec
from master_agent.runtime.graphs import graph_ids
from master_agent.runtime.resources import RuntimeResources
from master_agent.runtime.tenant_agents import change_assistant, save_assistant


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
