"""Streams, cancel and the multitask strategies of the LangGraph-compatible API, with the official SDK
(and raw httpx where a disconnect is the point). Slow runs use the crash pack's slow tool."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from langgraph_sdk import get_client
from langgraph_sdk.client import LangGraphClient
from langgraph_sdk.errors import NotFoundError

from master_agent.capabilities import install_tenant
from master_agent.runtime import RuntimeResources
from master_agent.service.auth import create_key
from tests import durability_pack
from tests.conftest import server_settings
from tests.live_server import LiveServer, chat, sse_events

GOAL = "Increase Store 5's accessory attach rate by 20% within 60 days"
QUESTION = "What is the attach rate of Store 5?"


@pytest.fixture(scope="module")
async def live(pg_server_uri: str, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[LiveServer]:
    settings = server_settings(
        pg_server_uri, tmp_path_factory, "lgstream", domain_packs=("tests.durability_pack",)
    )
    async with LiveServer(settings) as server:
        yield server


@pytest.fixture(scope="module")
async def keys(live: LiveServer) -> dict[str, str]:
    resources: RuntimeResources = live.server.config.app.state.service.resources
    pool = resources.database.pool
    await install_tenant(pool, resources.settings, "retail-crash", durability_pack.TENANT)
    return {
        "fast": (await create_key(pool, "demo-retail")).key,
        "slow": (await create_key(pool, durability_pack.TENANT)).key,
    }


def _sdk(live: LiveServer, key: str) -> LangGraphClient:
    return get_client(url=live.url, api_key=key)


async def test_stream_modes_and_subgraph_namespaces(live: LiveServer, keys: dict[str, str]) -> None:
    client = _sdk(live, keys["fast"])
    events: list[tuple[str, Any]] = []
    async for part in client.runs.stream(
        None,
        "master_agent",
        input={"goal": GOAL},
        stream_mode=["values", "updates", "custom"],
        stream_subgraphs=True,
    ):
        events.append((part.event, part.data))
    names = [name for name, _ in events]
    assert names[0] == "metadata"
    assert {"values", "updates", "custom"} <= set(names)
    nested = [name for name in names if "|" in name]
    assert any(
        name.startswith("custom|tools:") for name in nested
    )  # a sub-agent's events carry its namespace
    assert any(name.count("|") >= 2 for name in nested)  # and a sub-sub-agent's, two levels
    final = [data for name, data in events if name == "values"][-1]
    assert final["envelope"]["status"] == "success"
    # The stream opened before its thread and run were stored; both were, as the metadata names them.
    metadata = events[0][1]
    assert metadata["attempt"] == 1
    thread = await client.threads.get(metadata["thread_id"])
    run = await client.runs.get(metadata["thread_id"], metadata["run_id"])
    assert run["status"] == "success"
    # Stamped by its run with the graph and assistant, as langgraph-api stamps them.
    stamp = {"graph_id": "master_agent", "assistant_id": run["assistant_id"]}
    assert thread["metadata"] == {"stateless": True, **stamp}
    assert (await client.threads.get_state(metadata["thread_id"]))["values"] == final


async def test_messages_stream_model_tokens(live: LiveServer, keys: dict[str, str]) -> None:
    client = _sdk(live, keys["fast"])
    names = []
    async for part in client.runs.stream(
        None, "master_agent", input={"goal": QUESTION}, stream_mode="messages"
    ):
        names.append(part.event)
    assert names[0] == "metadata"
    assert "messages/metadata" in names and names.count("messages/partial") > 1


async def test_join_stream_replays_after_last_event_id(live: LiveServer, keys: dict[str, str]) -> None:
    client = _sdk(live, keys["fast"])
    thread = await client.threads.create()
    run = await client.runs.create(
        thread["thread_id"],
        "master_agent",
        input={"goal": QUESTION},
        stream_mode=["values", "updates"],
        stream_resumable=True,
    )
    await client.runs.join(thread["thread_id"], run["run_id"])
    everything = [p async for p in client.runs.join_stream(thread["thread_id"], run["run_id"])]
    after_first = [
        p async for p in client.runs.join_stream(thread["thread_id"], run["run_id"], last_event_id="0")
    ]
    later = [p async for p in client.runs.join_stream(thread["thread_id"], run["run_id"], last_event_id="3")]
    assert next(p.event for p in everything) == "metadata"
    # Strictly after the id given: event 0 (the metadata) is not sent again, nor event 3.
    assert [(p.event, p.data) for p in after_first] == [(p.event, p.data) for p in everything[1:]]
    assert [(p.event, p.data) for p in later] == [(p.event, p.data) for p in everything[4:]]


async def test_reconnect_with_last_event_id_gets_missed_then_live_events(
    live: LiveServer, keys: dict[str, str]
) -> None:
    headers = {"X-API-Key": keys["slow"]}
    async with httpx.AsyncClient(base_url=live.url, headers=headers, timeout=60) as http:
        thread = (await http.post("/threads", json={})).json()
        body = {
            "assistant_id": "master_agent",
            "input": {"goal": GOAL},
            "stream_mode": ["updates"],
            "stream_subgraphs": True,
        }
        seen: list[int] = []
        async with http.stream("POST", f"/threads/{thread['thread_id']}/runs/stream", json=body) as response:
            location = response.headers["location"]
            async for line in response.aiter_lines():
                if line.startswith("id: "):
                    seen.append(int(line[4:]))
                if len(seen) >= 3:
                    break  # drop the connection mid-run
        await asyncio.sleep(0.3)
        resumed: list[int] = []
        events: list[str] = []
        async with http.stream("GET", location, headers={"Last-Event-ID": str(seen[-1])}) as response:
            async for line in response.aiter_lines():
                if line.startswith("id: "):
                    resumed.append(int(line[4:]))
                if line.startswith("event: "):
                    events.append(line[7:].strip())
    assert resumed[0] == seen[-1] + 1  # nothing missed, nothing sent twice (not the metadata event 0)
    assert resumed == list(range(resumed[0], resumed[0] + len(resumed)))  # nothing skipped
    assert "metadata" not in events and events[-1] == "end"


async def _slow_run(client: LangGraphClient, thread_id: str) -> dict[str, Any]:
    run = await client.runs.create(thread_id, "master_agent", input={"goal": GOAL})
    for _ in range(300):  # until the slow tool is running
        if (await client.runs.get(thread_id, run["run_id"]))["status"] == "running":
            await asyncio.sleep(0.5)
            return run
        await asyncio.sleep(0.02)
    raise AssertionError("the slow run never started")


async def _slow_tool_runs(live: LiveServer) -> int:
    resources: RuntimeResources = live.server.config.app.state.service.resources
    async with resources.database.pool.connection() as conn:
        row = await (
            await conn.execute("SELECT count(*) AS n FROM crash_tool_runs WHERE phase = 'started'")
        ).fetchone()
    assert row is not None
    return int(row["n"])


async def _slow_tool_started(live: LiveServer, before: int) -> None:
    for _ in range(1000):
        if await _slow_tool_runs(live) > before:
            return
        await asyncio.sleep(0.02)
    raise AssertionError("the slow tool never started")


async def _checkpoints(live: LiveServer, thread_id: str, run_id: str) -> int:
    resources: RuntimeResources = live.server.config.app.state.service.resources
    async with resources.database.pool.connection() as conn:
        row = await (
            await conn.execute(
                "SELECT count(*) AS n FROM checkpoints WHERE thread_id = %s AND metadata ->> 'run_id' = %s",
                (thread_id, run_id),
            )
        ).fetchone()
    assert row is not None
    return int(row["n"])


async def test_cancel_interrupt_keeps_the_work_rollback_removes_it(
    live: LiveServer, keys: dict[str, str]
) -> None:
    client = _sdk(live, keys["slow"])
    thread = await client.threads.create()
    run = await _slow_run(client, thread["thread_id"])
    await client.runs.cancel(thread["thread_id"], run["run_id"], wait=True, action="interrupt")
    assert (await client.runs.get(thread["thread_id"], run["run_id"]))["status"] == "interrupted"
    assert await _checkpoints(live, thread["thread_id"], run["run_id"]) > 0

    thread = await client.threads.create()
    run = await _slow_run(client, thread["thread_id"])
    assert await _checkpoints(live, thread["thread_id"], run["run_id"]) > 0
    await client.runs.cancel(thread["thread_id"], run["run_id"], wait=True, action="rollback")
    with pytest.raises(NotFoundError):
        await client.runs.get(thread["thread_id"], run["run_id"])
    assert await _checkpoints(live, thread["thread_id"], run["run_id"]) == 0


async def test_multitask_interrupt_and_rollback(live: LiveServer, keys: dict[str, str]) -> None:
    client = _sdk(live, keys["slow"])
    for strategy in ("interrupt", "rollback"):
        thread = await client.threads.create()
        first = await _slow_run(client, thread["thread_id"])
        second = await client.runs.create(
            thread["thread_id"], "master_agent", input={"goal": QUESTION}, multitask_strategy=strategy
        )
        output = await client.runs.join(thread["thread_id"], second["run_id"])
        assert output["goal"] == QUESTION
        if strategy == "interrupt":
            assert (await client.runs.get(thread["thread_id"], first["run_id"]))["status"] == "interrupted"
            assert await _checkpoints(live, thread["thread_id"], first["run_id"]) > 0
        else:
            with pytest.raises(NotFoundError):
                await client.runs.get(thread["thread_id"], first["run_id"])
            assert await _checkpoints(live, thread["thread_id"], first["run_id"]) == 0


@pytest.mark.parametrize("stateless", [False, True], ids=["thread", "stateless"])
async def test_disconnect_does_not_cancel_unless_asked(
    live: LiveServer, keys: dict[str, str], stateless: bool
) -> None:
    headers = {"X-API-Key": keys["slow"]}
    async with httpx.AsyncClient(base_url=live.url, headers=headers, timeout=60) as http:
        results = {}
        for on_disconnect in ("continue", "cancel"):
            path = "/runs/stream"
            if not stateless:
                path = f"/threads/{(await http.post('/threads', json={})).json()['thread_id']}/runs/stream"
            body = {"assistant_id": "master_agent", "input": {"goal": GOAL}, "on_disconnect": on_disconnect}
            async with http.stream("POST", path, json=body) as response:
                # The client leaves right after the first event: for a stateless run, before its
                # thread and run may even be stored.
                run_path = response.headers["content-location"]
                async for line in response.aiter_lines():
                    if line.startswith("event: metadata"):
                        break
            for _ in range(200):
                found = await http.get(run_path)
                status = found.json()["status"] if found.status_code == 200 else "not stored yet"
                if status not in ("pending", "running", "not stored yet"):
                    break
                await asyncio.sleep(0.05)
            results[on_disconnect] = status
    assert results == {"continue": "success", "cancel": "interrupted"}


async def test_a_chat_message_during_an_active_run_starts_a_new_flow_carrying_the_previous_task(
    live: LiveServer, keys: dict[str, str]
) -> None:
    """Seed 002 "Interruption Handling", over HTTP: the run in flight is interrupted with its work kept
    and the new flow knows the task it cut short."""
    client = _sdk(live, keys["slow"])
    headers = {"X-API-Key": keys["slow"]}
    started = await _slow_tool_runs(live)
    async with httpx.AsyncClient(base_url=live.url, headers=headers, timeout=120) as http:
        async with http.stream("POST", "/chat/stream", json={"message": GOAL}) as first:
            assert first.status_code == 200
            async for _, event, data in sse_events(first):
                if event == "metadata":
                    thread_id, first_run = str(data["thread_id"]), str(data["run_id"])
                    break
        await _slow_tool_started(live, started)
        second = await chat(http, QUESTION, thread_id)
    assert (await client.runs.get(thread_id, first_run))["status"] == "interrupted"
    assert await _checkpoints(live, thread_id, first_run) > 0  # its work is kept
    routing = second["values"]["routing"]
    assert routing["message"] == QUESTION
    assert routing["previous_task"] == GOAL, second["values"]["routing_trace"]
    runs = await client.runs.list(thread_id)
    assert [run["status"] for run in runs] == ["success", "interrupted"]
