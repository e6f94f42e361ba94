"""MCP at /mcp through the official MCP Python SDK's client against the real service: the tenant's
assistants listed as tools with their graphs' input schemas, a call runs one and answers its output, an
unknown tool or bad arguments answered as MCP errors, and another tenant sees only its own tools."""

from __future__ import annotations

import subprocess
import sys
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx
import httpx2
import mcp_types as types
import pytest
from mcp import Client, MCPError
from mcp.client.streamable_http import streamable_http_client

from tests.live_server import LiveServer, live_server_fixture, sdk, two_tenant_keys

live = live_server_fixture("mcp", graphs=("habits=tests.habits_graph:make_graph",))
keys = two_tenant_keys


@asynccontextmanager
async def _client(live: LiveServer, key: str) -> AsyncIterator[Client]:
    async with (
        httpx2.AsyncClient(headers={"X-API-Key": key}, timeout=120) as http,
        Client(streamable_http_client(f"{live.url}/mcp", http_client=http)) as client,
    ):
        yield client


async def test_assistants_are_tools_and_a_call_runs_one(live: LiveServer, keys: dict[str, str]) -> None:
    name = f"Greeter {uuid.uuid4().hex[:8]}"
    await sdk(live, keys["demo-retail"]).assistants.create(
        "habits", name=name, context={"greeting": "Hi"}, description="Greets someone by name."
    )
    async with _client(live, keys["demo-retail"]) as client:
        listed = await client.list_tools()
        tools = {tool.name: tool for tool in listed.tools}
        greeter = tools[name.replace(" ", "_")]
        assert greeter.title == name and greeter.description == "Greets someone by name."
        assert "name" in greeter.input_schema["properties"]
        assert "master_agent" in tools and "habits" in tools
        answered = await client.call_tool(greeter.name, {"name": "Ana"})
        assert isinstance(answered, types.CallToolResult) and not answered.is_error
        assert answered.structured_content is not None
        assert answered.structured_content["greeting"] == "Hi, Ana!"
        assert '"Hi, Ana!"' in answered.content[0].text  # type: ignore[union-attr]
        with pytest.raises(MCPError, match="Unknown tool"):
            await client.call_tool("no_such_tool", {})
        refused = await client.call_tool("master_agent", {"goal": ""})
        assert isinstance(refused, types.CallToolResult) and refused.is_error
        assert "input.goal" in refused.content[0].text  # type: ignore[union-attr]
    async with _client(live, keys["other-shop"]) as other:
        assert name.replace(" ", "_") not in {tool.name for tool in (await other.list_tools()).tools}


async def test_mcp_needs_an_api_key(live: LiveServer) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    headers = {"Accept": "application/json, text/event-stream"}
    async with httpx.AsyncClient(base_url=live.url, timeout=30) as http:
        assert (await http.post("/mcp", json=body, headers=headers)).status_code == 401


async def test_a_get_is_refused_not_held_open(live: LiveServer, keys: dict[str, str]) -> None:
    # A stateless server starts no messages of its own: a GET's stream would stay open, empty, until the
    # client left (as langgraph-api, it answers 405).
    headers = {"X-API-Key": keys["demo-retail"], "Accept": "text/event-stream"}
    async with httpx.AsyncClient(base_url=live.url, headers=headers, timeout=30) as http:
        for path in ("/mcp", "/mcp/"):
            refused = await http.get(path)
            assert refused.status_code == 405, refused.text
            assert refused.headers["allow"] == "POST, DELETE" and "stateless" in refused.json()["detail"]


def test_a_service_process_imports_the_protocol_sdks_only_when_a_request_needs_them() -> None:
    # The app's routes are all there, but MCP's and A2A's SDKs (~45 MiB, ~1 s of imports) wait for a request.
    probe = (
        "import sys, master_agent.service.app as app_module; app = app_module.create_app(); "
        "paths = set(app.openapi()['paths']); "
        "assert {'/mcp/', '/a2a/{assistant_id}'} <= paths, paths; "
        "print(sorted({name.split('.')[0] for name in sys.modules} & {'mcp', 'mcp_types', 'a2a'}))"
    )
    shown = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert shown.stdout.strip() == "[]"
