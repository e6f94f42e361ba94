"""The console's Agents pages: the tenant's agents, and one agent's versions (each with what changed
from the one before it, and a button that makes it live: promote or roll back), its recent runs (a failed
one says where in its call tree it failed) and its graph: the compiled LangGraph it runs drawn as a
diagram (``diagram``), its edges in a table one click away."""

from __future__ import annotations

import difflib
import itertools
import json
import uuid
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from master_agent.capabilities import load_tenant
from master_agent.capabilities.assistants import (
    Assistant,
    AssistantVersion,
    assistant_versions,
    resolve_assistant,
    search_assistants,
)
from master_agent.errors import ConflictError, InputError, MasterAgentError, NotFoundError
from master_agent.runtime.graphs import graph_for, graph_ids
from master_agent.runtime.runs import RunQueue
from master_agent.runtime.tenant_agents import promote_version
from master_agent.service.console.diagram import Diagram, graph_diagram
from master_agent.service.console.failures import failure_sites
from master_agent.service.console.pages import PAGE_ROWS, not_found, page
from master_agent.service.console.session import CONSOLE_PATH, ConsoleSession, SessionDep, checked_form
from master_agent.service.deps import QueueDep, ResourcesDep
from master_agent.service.routes.assistants import assistant_graph_config

router = APIRouter(prefix=CONSOLE_PATH, include_in_schema=False)

#: Runs of an agent listed on its page, newest first (each links to its thread, where all of them are).
RECENT_RUNS = 20


@router.get("/agents")
async def agents_page(request: Request, session: SessionDep, resources: ResourcesDep) -> HTMLResponse:
    found, total = await search_assistants(
        resources.database.pool,
        session.tenant_id,
        graph_ids(resources),
        graph_id=None,
        name=None,
        metadata={},
        limit=PAGE_ROWS,
        offset=0,
    )
    return page(request, session, "agents.html", title="Agents", agents=found, total=total)


def _settings(version: AssistantVersion) -> list[str]:
    """What a version is, as lines to compare: its name, description and settings, keys sorted."""
    whole = {
        "name": version.name,
        "description": version.description,
        "config": version.config,
        "context": version.context,
        "metadata": version.metadata,
    }
    return json.dumps(whole, indent=2, sort_keys=True, default=str).splitlines()


def version_changes(versions: list[AssistantVersion]) -> dict[int, list[str]]:
    """Each version's changes from the version before it (a unified diff's lines; the first has none)."""
    ordered = sorted(versions, key=lambda v: v.version)
    changes: dict[int, list[str]] = {}
    for before, after in itertools.pairwise(ordered):
        changes[after.version] = list(
            difflib.unified_diff(
                _settings(before),
                _settings(after),
                f"v{before.version}",
                f"v{after.version}",
                lineterm="",
                n=2,
            )
        )
    return changes


#: Graphs that could not be built, by (tenant, agent, version, the tenant's capability version): why. A
#: view of the page says why without building it again; a change of the tenant's capabilities (which may
#: be what it lacked) builds it again. The oldest are forgotten past ``UNBUILDABLE_KEPT``.
_unbuildable: OrderedDict[tuple[str, str, int, int], str] = OrderedDict()
UNBUILDABLE_KEPT = 512


@dataclass(frozen=True, kw_only=True)
class AgentGraph:
    """The graph an agent's live version runs, drawn (sub-agents' graphs drawn in one level), or why not."""

    diagram: Diagram | None = None
    edges: list[dict[str, Any]] = field(default_factory=list)
    error: str | None = None


async def agent_graph(resources: Any, tenant_id: str, agent: Assistant) -> AgentGraph:
    tenant = await load_tenant(resources.database.pool, tenant_id)
    key = (tenant_id, str(agent.assistant_id), agent.version, tenant.capability_version)
    if key in _unbuildable:
        return AgentGraph(error=_unbuildable[key])
    try:
        compiled = await graph_for(resources, agent.graph_id, assistant_graph_config(tenant_id, agent))
    except MasterAgentError as failed:  # its spec, its tools or its graph-making function: said once
        _unbuildable[key] = str(failed)
        while len(_unbuildable) > UNBUILDABLE_KEPT:
            _unbuildable.popitem(last=False)
        return AgentGraph(error=str(failed))
    drawable = compiled.get_graph(xray=1)
    edges = [
        {"source": edge.source, "target": edge.target, "conditional": bool(edge.conditional)}
        for edge in drawable.edges
    ]
    return AgentGraph(diagram=graph_diagram(drawable), edges=edges)


async def _agent_page(
    request: Request,
    session: ConsoleSession,
    resources: Any,
    queue: RunQueue,
    assistant_id: uuid.UUID,
    status_code: int = 200,
    error: str | None = None,
) -> HTMLResponse:
    pool = resources.database.pool
    agent = await resolve_assistant(pool, session.tenant_id, str(assistant_id), graph_ids(resources))
    if agent is None:
        return not_found(request, session, f"agent {assistant_id}")
    versions = await assistant_versions(
        pool, session.tenant_id, agent.assistant_id, metadata={}, limit=PAGE_ROWS, offset=0
    )
    runs = await queue.list_for_assistant(session.tenant_id, agent.assistant_id, limit=RECENT_RUNS)
    return page(
        request,
        session,
        "agent.html",
        status_code,
        title="Agent",
        agent=agent,
        versions=versions,
        changes=version_changes(versions),
        graph=await agent_graph(resources, session.tenant_id, agent),
        runs=runs,
        failures=await failure_sites(resources, queue.events, session.tenant_id, runs),
        error=error,
    )


@router.get("/agents/{assistant_id}")
async def agent_page(
    assistant_id: uuid.UUID, request: Request, session: SessionDep, resources: ResourcesDep, queue: QueueDep
) -> HTMLResponse:
    return await _agent_page(request, session, resources, queue, assistant_id)


@router.post("/agents/{assistant_id}/versions/{version}")
async def make_version_live(
    assistant_id: uuid.UUID,
    version: int,
    request: Request,
    session: SessionDep,
    resources: ResourcesDep,
    queue: QueueDep,
) -> Response:
    """Promote or roll back: the chosen stored version becomes the one the tenant's runs use."""
    await checked_form(request, session)
    pool = resources.database.pool
    agent = await resolve_assistant(pool, session.tenant_id, str(assistant_id), graph_ids(resources))
    if agent is None:
        return not_found(request, session, f"agent {assistant_id}")
    try:
        await promote_version(resources, session.tenant_id, agent, version)
    except NotFoundError:
        return not_found(request, session, f"agent {assistant_id}")
    except InputError as refused:  # no such version
        return await _agent_page(request, session, resources, queue, assistant_id, 422, error=str(refused))
    except ConflictError as refused:
        return await _agent_page(request, session, resources, queue, assistant_id, 409, error=str(refused))
    return RedirectResponse(f"{CONSOLE_PATH}/agents/{assistant_id}", status_code=303)
