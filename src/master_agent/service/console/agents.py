"""The console's Agents pages: the tenant's agents, and one agent's versions (each with what changed
from the one before it, and a button that makes it live: promote or roll back) and its graph, the
nodes and edges of the compiled LangGraph it runs."""

from __future__ import annotations

import difflib
import itertools
import json
import uuid
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from master_agent.capabilities.assistants import (
    Assistant,
    AssistantVersion,
    assistant_versions,
    resolve_assistant,
    search_assistants,
)
from master_agent.errors import ConflictError, InputError, NotFoundError
from master_agent.runtime.graphs import graph_for, graph_ids
from master_agent.runtime.tenant_agents import promote_version
from master_agent.service.console.pages import PAGE_ROWS, not_found, page
from master_agent.service.console.session import CONSOLE_PATH, ConsoleSession, SessionDep, checked_form
from master_agent.service.deps import ResourcesDep
from master_agent.service.routes.assistants import assistant_graph_config

router = APIRouter(prefix=CONSOLE_PATH, include_in_schema=False)


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


async def _graph_edges(
    resources: Any, tenant_id: str, agent: Assistant
) -> tuple[list[str], list[dict[str, Any]]]:
    """The nodes and edges of the graph the agent runs (subgraphs drawn in, one level)."""
    compiled = await graph_for(resources, agent.graph_id, assistant_graph_config(tenant_id, agent))
    drawable = compiled.get_graph(xray=1)
    nodes = [node.id for node in drawable.nodes.values() if node.id not in ("__start__", "__end__")]
    edges = [
        {"source": edge.source, "target": edge.target, "conditional": edge.conditional}
        for edge in drawable.edges
    ]
    return nodes, edges


async def _agent_page(
    request: Request,
    session: ConsoleSession,
    resources: Any,
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
    try:
        nodes, edges = await _graph_edges(resources, session.tenant_id, agent)
        graph_error = None
    except (InputError, NotFoundError) as failed:  # a version whose graph cannot be built says why
        nodes, edges, graph_error = [], [], str(failed)
    return page(
        request,
        session,
        "agent.html",
        status_code,
        title="Agent",
        agent=agent,
        versions=versions,
        changes=version_changes(versions),
        nodes=nodes,
        edges=edges,
        graph_error=graph_error,
        error=error,
    )


@router.get("/agents/{assistant_id}")
async def agent_page(
    assistant_id: uuid.UUID, request: Request, session: SessionDep, resources: ResourcesDep
) -> HTMLResponse:
    return await _agent_page(request, session, resources, assistant_id)


@router.post("/agents/{assistant_id}/versions/{version}")
async def make_version_live(
    assistant_id: uuid.UUID, version: int, request: Request, session: SessionDep, resources: ResourcesDep
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
        return await _agent_page(request, session, resources, assistant_id, 422, error=str(refused))
    except ConflictError as refused:
        return await _agent_page(request, session, resources, assistant_id, 409, error=str(refused))
    return RedirectResponse(f"{CONSOLE_PATH}/agents/{assistant_id}", status_code=303)
