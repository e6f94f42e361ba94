"""MCP (the Model Context Protocol) at ``/mcp``, as langgraph-api serves it: the tenant's assistants as tools.
The server is ``service/mcp_server.py`` (the official MCP SDK), started by the first MCP request
(``ProtocolServers``): the SDK is not paid for by a process that never serves it."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response
from fastapi.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from master_agent.service.deps import ServiceDep, TenantDep
from master_agent.service.protocol_servers import ProtocolServers

router = APIRouter(tags=["mcp"])


class _HandedOver(Response):
    """The request handed, as it came, to an ASGI app that answers it."""

    def __init__(self, app: ASGIApp) -> None:
        super().__init__()
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.app(scope, receive, send)


async def mcp(request: Request, tenant: TenantDep, service: ServiceDep) -> Response:
    """MCP over Streamable HTTP (JSON-RPC: ``initialize``, ``tools/list``, ``tools/call``): the tenant's
    assistants as tools.

    A ``GET`` (a stream for messages the server starts) is answered 405, as the protocol allows and as
    langgraph-api answers it: a stateless server starts none, so the stream would stay open, empty, until
    the client leaves."""
    if request.method == "GET":
        return JSONResponse(
            {"detail": "MCP here is stateless: POST JSON-RPC requests; there is no stream to GET"},
            status_code=405,
            headers={"Allow": "POST, DELETE"},
        )
    request.state.tenant = tenant
    request.state.service = service
    servers: ProtocolServers = request.app.state.protocols
    return _HandedOver((await servers.mcp()).manager.handle_request)


for _method in ("GET", "POST", "DELETE"):
    # One operation per method (distinct operation ids), at /mcp/ as langgraph-api lists it and at /mcp.
    router.add_api_route(
        "/mcp/", mcp, methods=[_method], name=f"mcp_{_method.lower()}", response_class=Response
    )
    router.add_api_route(
        "/mcp",
        mcp,
        methods=[_method],
        name=f"mcp_{_method.lower()}_bare",
        response_class=Response,
        include_in_schema=False,
    )
