"""The MCP and A2A servers of one service process, made by the first request that needs each: their SDKs
cost about 45 MiB and a second of imports per process, which a process that never serves them should not
pay (they are imported on a worker thread, so the event loop keeps serving meanwhile)."""

from __future__ import annotations

import asyncio
import importlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from master_agent.capabilities.assistants import Assistant
    from master_agent.service.a2a_agent import A2AEndpoint
    from master_agent.service.mcp_server import McpEndpoint


async def _imported(module: str) -> Any:
    return await asyncio.to_thread(importlib.import_module, module)


class ProtocolServers:
    """The app's MCP endpoint (its session manager runs in a task of the app's lifespan, entered and left
    there, as anyio's task groups require) and A2A endpoint, each made once on first use."""

    def __init__(self, version: str) -> None:
        self.version = version
        self._a2a: A2AEndpoint | None = None
        self._mcp: McpEndpoint | None = None
        self._mcp_failure: BaseException | None = None
        self._mcp_wanted = asyncio.Event()
        self._mcp_ready = asyncio.Event()
        self._stopping = asyncio.Event()

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """The app's lifespan: hosts the MCP endpoint once a request wants it; stops it on the way out."""
        self._mcp, self._mcp_failure = None, None
        self._mcp_wanted, self._mcp_ready, self._stopping = asyncio.Event(), asyncio.Event(), asyncio.Event()
        host = asyncio.create_task(self._host_mcp())
        try:
            yield
        finally:
            self._stopping.set()
            self._mcp_wanted.set()
            await host

    async def _host_mcp(self) -> None:
        await self._mcp_wanted.wait()
        if self._stopping.is_set():
            return
        try:
            endpoint: McpEndpoint = (await _imported("master_agent.service.mcp_server")).McpEndpoint(
                self.version
            )
            async with endpoint.running():
                self._mcp = endpoint
                self._mcp_ready.set()
                await self._stopping.wait()
        except Exception as failed:  # the request that wanted it answers with why (a 500)
            self._mcp_failure = failed
            self._mcp_ready.set()

    async def mcp(self) -> McpEndpoint:
        """The running MCP endpoint (started now if no request has wanted it yet)."""
        self._mcp_wanted.set()
        await self._mcp_ready.wait()
        if self._mcp is None:
            raise RuntimeError(f"the MCP server could not start: {self._mcp_failure!r}")
        return self._mcp

    async def a2a(self) -> A2AEndpoint:
        """The A2A endpoint (one request handler per app: the SDK tracks the tasks it runs in it)."""
        if self._a2a is None:
            module = await _imported("master_agent.service.a2a_agent")
            self._a2a = self._a2a or module.A2AEndpoint(version=self.version)
        return self._a2a

    async def a2a_card(self, assistant: Assistant, base_url: str) -> dict[str, Any]:
        """The assistant's A2A agent card as JSON."""
        module = await _imported("master_agent.service.a2a_agent")
        card: dict[str, Any] = module.card_document(assistant, base_url, self.version)
        return card
