"""Real servers for the service tests on loopback ports: uvicorn in the test's event loop, or
``master-agent serve`` as a subprocess."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn
from langgraph_sdk import get_client
from langgraph_sdk.client import LangGraphClient

from master_agent.capabilities import install_tenant
from master_agent.runtime import RuntimeResources
from master_agent.service.app import create_app
from master_agent.service.auth import create_key
from master_agent.service.limits import uvicorn_options
from master_agent.settings import Settings
from tests.cli_call import run_cli


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class LiveServer:
    def __init__(self, settings: Settings) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        config = uvicorn.Config(
            create_app(settings),
            host="127.0.0.1",
            port=self.port,
            log_level="warning",
            **uvicorn_options(settings),
        )
        self.server = uvicorn.Server(config)
        self.task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> LiveServer:
        self.task = asyncio.create_task(self.server.serve())
        while not self.server.started:
            if self.task.done():
                self.task.result()
            await asyncio.sleep(0.02)
        # Ready as ``/ok`` says it: routing's models and indexes loaded (``routing.warm``).
        await self.server.config.app.state.service.ready.wait()
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.server.should_exit = True
        if self.task is not None:
            await self.task


ROOT = Path(__file__).resolve().parents[1]


def start_serve(
    env: dict[str, str], *extra: str, log: Path | None = None
) -> tuple[subprocess.Popen[bytes], str]:
    """``master-agent serve`` in a subprocess on a free loopback port, once it answers ``/ok``."""
    port = free_port()
    # Warming every tenant's routing before ready costs seconds a test does not need (on by default).
    env = {"MASTER_AGENT_WARM_ROUTING": "false", **env}
    env = {**env, "PYTHONPATH": os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])}
    output = log.open("w") if log is not None else subprocess.DEVNULL
    server = subprocess.Popen(
        [sys.executable, "-m", "master_agent.cli", *extra, "serve", "--port", str(port)],
        env=env,
        cwd=ROOT,
        stdout=output,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    # A server that exits fails at once (``poll``); the deadline only ends one that never answers. On idle
    # cores it answers in seconds, but on the 2 cores shared with other work (a load of 20-28) every
    # ``serve`` of a whole run (session 15) missed 60 s with its log showing it starting, and failed its
    # test or errored the peer suite.
    deadline = time.monotonic() + 180
    while True:
        try:
            if httpx.get(f"{url}/ok", timeout=1).status_code == 200:
                return server, url
        except httpx.HTTPError:
            pass
        # Not answering yet, or answering 503 while it warms up.
        if time.monotonic() > deadline or server.poll() is not None:
            server.kill()
            raise AssertionError("master-agent serve did not start")
        time.sleep(0.1)


def create_key_cli(env: dict[str, str], tenant: str) -> str:
    """A new API key for ``tenant`` through ``master-agent keys create``, as an operator makes one."""
    created = run_cli(env, "keys", "create", "--tenant", tenant, timeout=120)
    assert created.returncode == 0, created.stderr
    key: str = json.loads(created.stdout)["api_key"]
    return key


async def sse_events(response: httpx.Response) -> AsyncIterator[tuple[str | None, str, Any]]:
    """(id, event, data) of each server-sent event of a streamed response."""
    fields: dict[str, str] = {}
    async for line in response.aiter_lines():
        if line:
            name, _, value = line.partition(":")
            fields[name] = value.removeprefix(" ")
            continue
        if "event" in fields:
            yield fields.get("id"), fields["event"], json.loads(fields.get("data") or "null")
        fields = {}


async def chat(client: httpx.AsyncClient, message: str, thread_id: str | None = None) -> dict[str, Any]:
    """One chat message: the streamed events, then the thread's state after it."""
    events: list[tuple[str, Any]] = []
    name = ""
    body: dict[str, Any] = {"message": message, **({"thread_id": thread_id} if thread_id else {})}
    async with client.stream("POST", "/chat/stream", json=body) as response:
        assert response.status_code == 200, await response.aread()
        async for line in response.aiter_lines():
            if line.startswith("event: "):
                name = line[7:].strip()
            elif line.startswith("data: "):
                events.append((name, json.loads(line[6:])))
    thread = str(events[0][1]["thread_id"])
    state = (await client.get(f"/threads/{thread}/state")).json()
    routed = [
        data["routing"]
        for event, data in events
        if event.startswith("custom") and isinstance(data, dict) and data.get("event") == "routing"
    ]
    return {
        "thread_id": thread,
        "state": state,
        "values": state["values"],
        "events": events,
        "routed": routed,
    }


def live_server_fixture(prefix: str, **overrides: Any) -> Any:
    """A module's ``live`` fixture: one service on a fresh database, ``overrides`` on its settings."""
    from tests.conftest import server_settings  # conftest is imported by pytest first

    @pytest.fixture(scope="module")
    async def live(pg_server_uri: str, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[LiveServer]:
        async with LiveServer(
            server_settings(pg_server_uri, tmp_path_factory, prefix, **overrides)
        ) as server:
            yield server

    return live


@pytest.fixture(scope="module")
async def two_tenant_keys(live: LiveServer) -> dict[str, str]:
    """API keys of the demo tenant and of a second retail tenant, ``other-shop``."""
    resources: RuntimeResources = live.server.config.app.state.service.resources
    pool = resources.database.pool
    await install_tenant(pool, resources.settings, "retail", "other-shop")
    return {tenant: (await create_key(pool, tenant)).key for tenant in ("demo-retail", "other-shop")}


def sdk(live: LiveServer, key: str) -> LangGraphClient:
    return get_client(url=live.url, api_key=key)


async def data_schema(live: LiveServer, tenant_id: str = "demo-retail") -> str:
    """The schema holding a tenant's business data."""
    resources: RuntimeResources = live.server.config.app.state.service.resources
    async with resources.database.pool.connection() as conn:
        row = await (
            await conn.execute("SELECT data_schema FROM tenants WHERE tenant_id = %s", (tenant_id,))
        ).fetchone()
    assert row is not None
    return str(row["data_schema"])


@contextlib.asynccontextmanager
async def tenant_clients(
    live: LiveServer, tenants: dict[str, str]
) -> AsyncIterator[dict[str, httpx.AsyncClient]]:
    """An HTTP client of ``live`` per name, each with a new API key of its tenant (name -> tenant)."""
    from master_agent.service.auth import create_key

    pool = live.server.config.app.state.service.resources.database.pool
    made = {
        name: httpx.AsyncClient(
            base_url=live.url, headers={"X-API-Key": (await create_key(pool, tenant)).key}, timeout=120
        )
        for name, tenant in tenants.items()
    }
    try:
        yield made
    finally:
        for client in made.values():
            await client.aclose()
