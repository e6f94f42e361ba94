"""The agent-to-agent protocol (A2A) routes, as langgraph-api serves them: each of the tenant's assistants is
an A2A agent at ``/a2a/{assistant_id}``, its card at ``/a2a/{assistant_id}/.well-known/agent-card.json`` and
``/.well-known/agent-card.json?assistant_id=...``. The protocol itself is ``service/a2a_agent.py``, imported
by the first A2A request (``ProtocolServers``): the SDK is not paid for by a process that never serves it."""

from __future__ import annotations

from fastapi import APIRouter, HTTPException, Request, Response
from fastapi.responses import JSONResponse

from master_agent.capabilities.assistants import Assistant, resolve_assistant
from master_agent.runtime.graphs import graph_ids
from master_agent.service.deps import ServiceDep, TenantDep
from master_agent.service.protocol_servers import ProtocolServers
from master_agent.service.state import ServiceState

router = APIRouter(tags=["a2a"])


async def find_assistant(service: ServiceState, tenant: str, assistant_id: str) -> Assistant:
    """The tenant's assistant ``assistant_id`` (by id or graph name), or a 404."""
    resources = service.resources
    assistant = await resolve_assistant(resources.database.pool, tenant, assistant_id, graph_ids(resources))
    if assistant is None:
        raise HTTPException(404, detail=f"Assistant {assistant_id} not found")
    return assistant


@router.post("/a2a/{assistant_id}", response_class=Response)
async def a2a(assistant_id: str, request: Request, tenant: TenantDep, service: ServiceDep) -> Response:
    """A2A JSON-RPC (``SendMessage``, ``GetTask``, ``ListTasks``, ``CancelTask``) with the assistant."""
    await find_assistant(service, tenant, assistant_id)
    request.state.tenant = tenant
    request.state.service = service
    servers: ProtocolServers = request.app.state.protocols
    return await (await servers.a2a()).dispatcher.handle_requests(request)


@router.get("/a2a/{assistant_id}/.well-known/agent-card.json")
async def agent_card(
    assistant_id: str, request: Request, tenant: TenantDep, service: ServiceDep
) -> JSONResponse:
    """The assistant's A2A agent card."""
    assistant = await find_assistant(service, tenant, assistant_id)
    base = str(request.base_url).rstrip("/")
    servers: ProtocolServers = request.app.state.protocols
    return JSONResponse(await servers.a2a_card(assistant, base))


@router.get("/.well-known/agent-card.json")
async def agent_card_by_query(
    assistant_id: str, request: Request, tenant: TenantDep, service: ServiceDep
) -> JSONResponse:
    """The agent card of ``assistant_id`` (langgraph-api's other address for it)."""
    return await agent_card(assistant_id, request, tenant, service)
