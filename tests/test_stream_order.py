"""A stream served by one process of a run executing in another never ends before the run's last
event: 500 runs executed by server A, each followed from server B, none truncated."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from master_agent.service.auth import create_key
from master_agent.settings import Settings
from tests.conftest import create_database, installed_template
from tests.live_server import LiveServer, sse_events

RUNS = 500
AT_ONCE = 6
GRAPHS = ("chatty=tests.chatty_graph:make_graph",)


@pytest.fixture(scope="module")
async def servers(
    pg_server_uri: str, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[tuple[LiveServer, LiveServer]]:
    uri = create_database(
        pg_server_uri, "order", template=installed_template(pg_server_uri, tmp_path_factory)
    )
    # Only the chatty graph runs here: no message is routed, so neither server warms the tenants'
    # routing before it is ready (seconds of CPU each; tests/test_warm_start.py is about that).
    common: dict[str, Any] = {
        "database_url": uri,
        "model": "offline",
        "graphs": GRAPHS,
        "warm_routing": False,
    }
    executor = Settings(
        **common, data_dir=tmp_path_factory.mktemp("a"), run_concurrency=AT_ONCE, tenant_slots=AT_ONCE
    )
    follower = Settings(**common, data_dir=tmp_path_factory.mktemp("b"), scheduler="disabled")
    async with LiveServer(executor) as a, LiveServer(follower) as b:
        yield a, b


async def _follow(b: httpx.AsyncClient, thread_id: str, run_id: str) -> list[tuple[str | None, str]]:
    async with b.stream("GET", f"/threads/{thread_id}/runs/{run_id}/stream") as from_b:
        return [(event_id, event) async for event_id, event, _ in sse_events(from_b) if event != "metadata"]


async def _one_run(a: httpx.AsyncClient, b: httpx.AsyncClient, index: int) -> None:
    """A run streamed from A, which executes it; B follows it from the moment A names it (while it
    executes, or just after it ended: both are races B must win)."""
    thread_id = (await a.post("/threads", json={})).json()["thread_id"]
    body = {
        "assistant_id": "chatty",
        "input": {"count": 5 + index % 11, "gap_s": 0.0005 * (index % 3)},
        "stream_mode": ["custom", "values"],
    }
    async with a.stream("POST", f"/threads/{thread_id}/runs/stream", json=body) as from_a:
        events_a = sse_events(from_a)
        _, first, metadata = await anext(events_a)
        assert first == "metadata"
        run_id = metadata["run_id"]
        following = asyncio.create_task(_follow(b, thread_id, run_id))
        seen_a = [(event_id, event) async for event_id, event, _ in events_a]
    seen_b = await following
    assert seen_a[-1][1] == "end"
    assert seen_b == seen_a, f"run {run_id}: B sent {len(seen_b)} events, A sent {len(seen_a)}"


async def test_streams_followed_from_another_process_are_never_truncated(
    servers: tuple[LiveServer, LiveServer],
) -> None:
    a, b = servers
    pool = a.server.config.app.state.service.resources.database.pool
    key = (await create_key(pool, "demo-retail")).key
    headers = {"Authorization": f"Bearer {key}"}
    # A pooled connection is dropped by the client before uvicorn's 5-second keep-alive ends it: httpx's
    # default (also 5 s) let a request go out on a connection the server was closing (a ReadError on
    # ``POST /threads`` under load).
    limits = httpx.Limits(keepalive_expiry=1)
    async with (
        httpx.AsyncClient(base_url=a.url, headers=headers, timeout=60, limits=limits) as client_a,
        httpx.AsyncClient(base_url=b.url, headers=headers, timeout=60, limits=limits) as client_b,
    ):
        checked = 0
        for start in range(0, RUNS, AT_ONCE):
            batch = range(start, min(start + AT_ONCE, RUNS))
            await asyncio.gather(*(_one_run(client_a, client_b, index) for index in batch))
            checked += len(batch)
    assert checked == RUNS
