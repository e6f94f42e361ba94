"""The MCP server behind ``/mcp`` (the route is ``service/routes/mcp.py``), as langgraph-api serves it: each of the tenant's
assistants is a tool (its name made a valid tool name, its graph's input schema the tool's), and calling
one runs the assistant as a stateless run and answers its output.

The protocol is the official MCP Python SDK's server (Streamable HTTP, stateless, JSON answers); this
module only gives it the two handlers. The tenant comes from the API key, as on every route: a client
sees and runs only its own tenant's assistants, and a call counts as a run against its limits.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import mcp_types as types
from fastapi import HTTPException
from mcp import MCPError
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

from master_agent.capabilities.assistants import Assistant, search_assistants
from master_agent.runtime.graphs import graph_for, graph_ids
from master_agent.service.routes.assistants import assistant_graph_config, graph_schemas
from master_agent.service.routes.runs import RunCreate, start_stateless_wait
from master_agent.service.state import ServiceState
from master_agent.storage.rate_limits import Hit, count_hits

logger = logging.getLogger(__name__)

#: Tools in one page of ``tools/list`` (a cursor pages on), and the assistants a call looks through.
PAGE_SIZE = 100
MAX_ASSISTANTS = 1000
_INVALID = re.compile(r"[^A-Za-z0-9_\-.]")


def tool_name(name: str) -> str:
    """An assistant's name as an MCP tool name (``^[A-Za-z0-9_.-]{1,128}$``), as langgraph-api makes it."""
    return _INVALID.sub("", re.sub(r"\s+", "_", name.strip()))[:128]


def _caller(ctx: ServerRequestContext[Any, Any]) -> tuple[ServiceState, str]:
    """The service and the tenant the route put on the HTTP request before handing it to the SDK."""
    state = ctx.request.state if ctx.request is not None else None
    if state is None or not hasattr(state, "tenant"):
        raise MCPError(types.INVALID_REQUEST, "no authenticated tenant on this request")
    return state.service, state.tenant


async def _assistants(
    service: ServiceState, tenant: str, limit: int, offset: int
) -> tuple[list[Assistant], int]:
    """A page of the tenant's assistants (its graphs' own first) and how many it has."""
    resources = service.resources
    return await search_assistants(
        resources.database.pool,
        tenant,
        graph_ids(resources),
        graph_id=None,
        name=None,
        metadata={},
        limit=limit,
        offset=offset,
    )


async def _tool(service: ServiceState, tenant: str, assistant: Assistant) -> types.Tool | None:
    resources = service.resources
    try:
        graph = await graph_for(resources, assistant.graph_id, assistant_graph_config(tenant, assistant))
        schema = dict(graph_schemas(graph)["input_schema"] or {})
    except Exception:  # as langgraph-api: an assistant whose schema cannot be made is left out
        logger.warning("MCP: no input schema for assistant %s; not listed", assistant.assistant_id)
        return None
    schema.setdefault("type", "object")
    return types.Tool(
        name=tool_name(assistant.name),
        title=assistant.name,
        description=assistant.description or f"Tool based on the {assistant.name} assistant",
        input_schema=schema,
        annotations=types.ToolAnnotations(
            read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=True
        ),
    )


async def _list_tools(
    ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
) -> types.ListToolsResult:
    service, tenant = _caller(ctx)
    cursor = params.cursor if params is not None and params.cursor else "0"
    offset = int(cursor) if cursor.isdigit() else 0
    found, total = await _assistants(service, tenant, PAGE_SIZE, offset)
    tools: dict[str, types.Tool] = {}
    for assistant in found:
        name = tool_name(assistant.name)
        if name and name not in tools and (tool := await _tool(service, tenant, assistant)) is not None:
            tools[name] = tool
    more = offset + len(found) < total
    return types.ListToolsResult(
        tools=list(tools.values()), next_cursor=str(offset + len(found)) if more else None
    )


async def _call_tool(
    ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
) -> types.CallToolResult:
    service, tenant = _caller(ctx)
    resources = service.resources
    found, _ = await _assistants(service, tenant, MAX_ASSISTANTS, 0)
    matching = [assistant for assistant in found if tool_name(assistant.name) == params.name]
    if len(matching) != 1:
        problem = "Multiple tools found with the same name" if matching else f"Unknown tool: {params.name}"
        raise MCPError(types.INVALID_PARAMS, problem)
    await count_hits(resources.database.pool, [Hit(service.quotas.runs_started, tenant, 1)])
    body = RunCreate(assistant_id=str(matching[0].assistant_id), input=dict(params.arguments or {}))
    try:
        _, output = await start_stateless_wait(body, tenant, resources, service.queue)
        value = await output
    except HTTPException as refused:  # the run was refused (bad arguments): the model can fix it
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=str(refused.detail))], is_error=True
        )
    if isinstance(value, dict) and "__error__" in value:
        failure = value["__error__"]
        text = f"{failure.get('error')}: {failure.get('message')}"
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=True)
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=json.dumps(value, default=str))],
        structured_content=value if isinstance(value, dict) else None,
    )


class McpEndpoint:
    """The SDK's server and its Streamable HTTP session manager (one per app; ``running`` in its lifespan)."""

    def __init__(self, version: str) -> None:
        self.server: Server[Any] = Server(
            "master-agent", version=version, on_list_tools=_list_tools, on_call_tool=_call_tool
        )
        self.manager = StreamableHTTPSessionManager(self.server, json_response=True, stateless=True)

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        async with self.manager.run():
            yield
