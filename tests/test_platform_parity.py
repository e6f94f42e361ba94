"""LangGraph Platform parity beyond the core loop, through the official langgraph-sdk (and RemoteGraph)
against the real service. Threads: patch, count, copy, prune, sorted and selected search, history by GET,
state at a checkpoint (time travel), state updates of a list-state graph. Runs: if_not_exists, stateless
background runs and batches, cancel of many, of a finished run, delete, breakpoints, the wait's headers
and keep-alive, stream ids. And /info."""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph
from langgraph.pregel.remote import RemoteGraph
from langgraph_sdk.client import LangGraphClient
from langgraph_sdk.errors import BadRequestError, NotFoundError, UnprocessableEntityError
from typing_extensions import TypedDict

from master_agent.runtime import RuntimeResources
from master_agent.storage.retention import ThreadTTLSweep, sweep_thread_ttls
from tests.live_server import LiveServer, live_server_fixture, sdk, two_tenant_keys

live = live_server_fixture(
    "threads", graphs=("tally=tests.tally_graph:make_graph", "approval=tests.approval_graph:make_graph")
)
keys = two_tenant_keys


async def _tally_thread(client: LangGraphClient, runs: int, **metadata: object) -> str:
    thread = await client.threads.create(metadata={"suite": "parity", **metadata})
    for _ in range(runs):
        await client.runs.wait(thread["thread_id"], "tally", input=[])
    return str(thread["thread_id"])


async def test_patch_count_and_sorted_selected_search(live: LiveServer, keys: dict[str, str]) -> None:
    client = sdk(live, keys["demo-retail"])
    tag = uuid.uuid4().hex
    first = await client.threads.create(metadata={"tag": tag, "n": 1})
    second = await client.threads.create(metadata={"tag": tag, "n": 2})
    patched = await client.threads.update(first["thread_id"], metadata={"owner": "ana"})
    assert patched["metadata"] == {"tag": tag, "n": 1, "owner": "ana"}
    assert await client.threads.count(metadata={"tag": tag}) == 2
    assert await client.threads.count(metadata={"tag": tag, "owner": "ana"}) == 1
    assert await client.threads.count(metadata={"tag": tag}, status="busy") == 0

    oldest_first = await client.threads.search(metadata={"tag": tag}, sort_by="created_at", sort_order="asc")
    assert [t["thread_id"] for t in oldest_first] == [first["thread_id"], second["thread_id"]]
    newest_first = await client.threads.search(metadata={"tag": tag}, sort_by="created_at", sort_order="desc")
    assert [t["thread_id"] for t in newest_first] == [second["thread_id"], first["thread_id"]]
    selected = await client.threads.search(metadata={"tag": tag}, select=["thread_id", "status"])
    assert all(set(t) == {"thread_id", "status"} for t in selected)
    by_id = await client.threads.search(ids=[second["thread_id"]])
    assert [t["thread_id"] for t in by_id] == [second["thread_id"]]

    other = sdk(live, keys["other-shop"])
    with pytest.raises(NotFoundError):
        await other.threads.update(first["thread_id"], metadata={"owner": "mallory"})
    assert await other.threads.count(metadata={"tag": tag}) == 0
    with pytest.raises(UnprocessableEntityError):
        await client.threads.search(sort_by="secret_column")  # type: ignore[arg-type]


async def test_copy_keeps_history_and_runs_on_apart(live: LiveServer, keys: dict[str, str]) -> None:
    client = sdk(live, keys["demo-retail"])
    original = await _tally_thread(client, 2, kind="original")
    copied = await client.threads.copy(original)
    assert copied["thread_id"] != original and copied["metadata"]["kind"] == "original"
    assert (await client.threads.get_state(copied["thread_id"]))["values"] == ["run 1", "run 2"]
    assert len(await client.threads.get_history(copied["thread_id"], limit=50)) == len(
        await client.threads.get_history(original, limit=50)
    )
    await client.runs.wait(copied["thread_id"], "tally", input=[])
    assert (await client.threads.get_state(copied["thread_id"]))["values"] == ["run 1", "run 2", "run 3"]
    assert (await client.threads.get_state(original))["values"] == ["run 1", "run 2"]
    with pytest.raises(NotFoundError):
        await sdk(live, keys["other-shop"]).threads.copy(original)


async def test_state_at_a_checkpoint_and_history_by_get(live: LiveServer, keys: dict[str, str]) -> None:
    client = sdk(live, keys["demo-retail"])
    thread_id = await _tally_thread(client, 3)
    history = await client.threads.get_history(thread_id, limit=100)
    after_first = next(s for s in history if s["values"] == ["run 1"] and not s["next"])
    by_id = await client.threads.get_state(thread_id, checkpoint_id=after_first["checkpoint_id"])
    assert (
        by_id["values"] == ["run 1"] and by_id["checkpoint"]["checkpoint_id"] == after_first["checkpoint_id"]
    )
    by_checkpoint = await client.threads.get_state(thread_id, checkpoint=after_first["checkpoint"])
    assert by_checkpoint["values"] == ["run 1"]
    # Time travel: a run forked from that checkpoint.
    forked = await client.runs.wait(thread_id, "tally", input=[], checkpoint_id=after_first["checkpoint_id"])
    assert forked == ["run 1", "run 2"]
    with pytest.raises(NotFoundError):
        await client.threads.get_state(thread_id, checkpoint_id=str(uuid.uuid4()))

    headers = {"X-API-Key": keys["demo-retail"]}
    async with httpx.AsyncClient(base_url=live.url, headers=headers, timeout=30) as http:
        got = await http.get(f"/threads/{thread_id}/history", params={"limit": 2})
        assert got.status_code == 200 and len(got.json()) == 2
        assert got.json()[0]["checkpoint_id"] == (await client.threads.get_state(thread_id))["checkpoint_id"]
        before = await http.get(
            f"/threads/{thread_id}/history", params={"limit": 1, "before": got.json()[0]["checkpoint_id"]}
        )
        assert before.json()[0]["checkpoint_id"] == got.json()[1]["checkpoint_id"]
        bad = await http.get(f"/threads/{thread_id}/history", params={"limit": 0})
        assert bad.status_code == 422 and "limit" in bad.text


@pytest.mark.parametrize("kind", ["unknown", "of another thread", "malformed"])
async def test_a_checkpoint_the_thread_does_not_have_is_refused_naming_the_field(
    live: LiveServer, keys: dict[str, str], kind: str
) -> None:
    client = sdk(live, keys["demo-retail"])
    thread_id = await _tally_thread(client, 1)
    other = await _tally_thread(client, 1)
    checkpoint_id = {
        "unknown": str(uuid.uuid4()),
        "of another thread": (await client.threads.get_state(other))["checkpoint_id"],
        "malformed": "not-a-checkpoint",
    }[kind]
    status = 422 if kind == "malformed" else 404
    state = await client.threads.get_state(thread_id)
    history = await client.threads.get_history(thread_id, limit=100)
    runs = await client.runs.list(thread_id)
    run = {"assistant_id": "tally", "input": []}
    update = {"values": ["by hand"], "as_node": "mark"}
    asked: list[tuple[str, str, dict[str, Any] | None, str]] = [
        ("GET", f"/threads/{thread_id}/state/{checkpoint_id}", None, "checkpoint_id"),
        (
            "POST",
            f"/threads/{thread_id}/state/checkpoint",
            {"checkpoint": {"checkpoint_id": checkpoint_id}},
            "checkpoint.checkpoint_id",
        ),
        ("POST", f"/threads/{thread_id}/state", {**update, "checkpoint_id": checkpoint_id}, "checkpoint_id"),
        (
            "POST",
            f"/threads/{thread_id}/state",
            {**update, "checkpoint": {"checkpoint_id": checkpoint_id}},
            "checkpoint.checkpoint_id",
        ),
        ("POST", f"/threads/{thread_id}/runs", {**run, "checkpoint_id": checkpoint_id}, "checkpoint_id"),
        (
            "POST",
            f"/threads/{thread_id}/runs/wait",
            {**run, "checkpoint": {"checkpoint_id": checkpoint_id}},
            "checkpoint.checkpoint_id",
        ),
        (
            "POST",
            f"/threads/{thread_id}/runs/stream",
            {**run, "checkpoint_id": checkpoint_id},
            "checkpoint_id",
        ),
        ("POST", "/runs/wait", {**run, "checkpoint_id": checkpoint_id}, "checkpoint_id"),
    ]
    headers = {"X-API-Key": keys["demo-retail"]}
    async with httpx.AsyncClient(base_url=live.url, headers=headers, timeout=30) as http:
        for method, path, body, field in asked:
            answer = await http.request(method, path, json=body)
            assert answer.status_code == status, (path, body, answer.text)
            assert answer.json()["detail"].startswith(f"{field}: "), (path, answer.text)
    # Nothing was stored: no run, no checkpoint.
    assert await client.runs.list(thread_id) == runs
    assert await client.threads.get_history(thread_id, limit=100) == history
    assert (await client.threads.get_state(thread_id))["checkpoint_id"] == state["checkpoint_id"]


async def test_a_list_state_is_updated_with_a_list(live: LiveServer, keys: dict[str, str]) -> None:
    client = sdk(live, keys["demo-retail"])
    thread_id = await _tally_thread(client, 1)
    await client.threads.update_state(thread_id, ["by hand"], as_node="mark")
    assert (await client.threads.get_state(thread_id))["values"] == ["run 1", "by hand"]
    master = await client.threads.create(graph_id="master_agent")  # its graph known before any run
    with pytest.raises(UnprocessableEntityError):
        await client.threads.update_state(master["thread_id"], {"not_a_key": 1})
    # A thread made for no graph, never run, has no state to update (langgraph-api's 400).
    unmade = await client.threads.create()
    with pytest.raises(BadRequestError):
        await client.threads.update_state(unmade["thread_id"], {"goal": "x"})


async def test_prune_deletes_or_keeps_the_latest_checkpoint(live: LiveServer, keys: dict[str, str]) -> None:
    client = sdk(live, keys["demo-retail"])
    doomed = await _tally_thread(client, 1)
    kept = await _tally_thread(client, 3)
    assert (await client.threads.prune([doomed], strategy="delete"))["pruned_count"] == 1
    with pytest.raises(NotFoundError):
        await client.threads.get(doomed)
    assert len(await client.threads.get_history(kept, limit=100)) > 1
    assert (await client.threads.prune([kept], strategy="keep_latest"))["pruned_count"] == 1
    history = await client.threads.get_history(kept, limit=100)
    assert len(history) == 1 and history[0]["values"] == ["run 1", "run 2", "run 3"]
    await client.runs.wait(kept, "tally", input=[])  # still resumable from what is kept
    assert (await client.threads.get_state(kept))["values"][-1] == "run 4"
    # Another tenant's thread is neither pruned nor counted.
    other = sdk(live, keys["other-shop"])
    assert (await other.threads.prune([kept], strategy="delete"))["pruned_count"] == 0
    assert (await client.threads.get(kept))["thread_id"] == kept
    with pytest.raises(UnprocessableEntityError):
        await client.threads.prune([kept], strategy="everything")  # type: ignore[arg-type]


GOAL = "Increase Store 5's accessory attach rate by 20% within 60 days"


async def test_if_not_exists_create_and_remote_graph_as_a_node(
    live: LiveServer, keys: dict[str, str]
) -> None:
    client = sdk(live, keys["demo-retail"])
    fresh = str(uuid.uuid4())
    with pytest.raises(httpx.HTTPStatusError) as missing:
        await client.runs.wait(fresh, "tally", input=[])
    assert missing.value.response.status_code == 404
    assert await client.runs.wait(fresh, "tally", input=[], if_not_exists="create") == ["run 1"]
    assert (await client.threads.get(fresh))["thread_id"] == fresh
    # Another tenant cannot take the id over.
    with pytest.raises(httpx.HTTPStatusError) as taken:
        await sdk(live, keys["other-shop"]).runs.wait(fresh, "tally", input=[], if_not_exists="create")
    assert taken.value.response.status_code == 409

    # RemoteGraph as a node of a parent graph: the parent's thread id is new to the server.
    class Parent(TypedDict, total=False):
        marks: list[str]

    remote = RemoteGraph("tally", url=live.url, api_key=keys["demo-retail"])

    async def call_remote(state: Parent, config: RunnableConfig) -> dict[str, Any]:
        return {"marks": await remote.ainvoke([], config)}

    builder = StateGraph(Parent)
    builder.add_node("remote", call_remote)
    builder.add_edge(START, "remote")
    builder.add_edge("remote", END)
    parent_thread = str(uuid.uuid4())
    from langgraph.checkpoint.memory import InMemorySaver

    parent = builder.compile(checkpointer=InMemorySaver())
    result = await parent.ainvoke({}, {"configurable": {"thread_id": parent_thread}})
    assert result["marks"] == ["run 1"]
    state = await remote.aget_state({"configurable": {"thread_id": parent_thread}})
    assert state.values == ["run 1"] and state.config is not None


async def test_stateless_background_runs_batches_and_cancel_many(
    live: LiveServer, keys: dict[str, str]
) -> None:
    client = sdk(live, keys["demo-retail"])
    run = await client.runs.create(None, "tally", input=[])
    kept = await client.runs.create(None, "tally", input=[], on_completion="keep")
    batch = await client.runs.create_batch(
        [{"assistant_id": "tally", "input": []}, {"assistant_id": "tally", "input": []}]  # type: ignore[typeddict-item]
    )
    assert len(batch) == 2 and all(item["status"] in ("pending", "running", "success") for item in batch)
    finished = await client.runs.join(kept["thread_id"], kept["run_id"])
    assert finished == ["run 1"]
    for _ in range(200):  # the deleted one's thread goes when its run ends
        try:
            await client.threads.get(run["thread_id"])
        except NotFoundError:
            break
        await asyncio.sleep(0.05)
    else:
        raise AssertionError("a stateless run's thread outlived it")
    with pytest.raises(NotFoundError):  # nothing of the batch is stored
        await client.runs.create_batch([{"assistant_id": "tally", "input": []}, {"assistant_id": "nope"}])  # type: ignore[typeddict-item]

    # Cancel many: a thread's queued runs.
    thread = await client.threads.create()
    first = await client.runs.create(thread["thread_id"], "master_agent", input={"goal": GOAL})
    queued = await client.runs.create(
        thread["thread_id"], "master_agent", input={"goal": GOAL}, multitask_strategy="enqueue"
    )
    await client.runs.cancel_many(thread_id=thread["thread_id"], run_ids=[queued["run_id"]])
    assert (await client.runs.get(thread["thread_id"], queued["run_id"]))["status"] == "interrupted"
    await client.runs.join(thread["thread_id"], first["run_id"])
    # Cancelling a finished run changes nothing; deleting it forgets it.
    await client.runs.cancel(thread["thread_id"], first["run_id"])
    assert (await client.runs.get(thread["thread_id"], first["run_id"]))["status"] == "success"
    await client.runs.delete(thread["thread_id"], first["run_id"])
    with pytest.raises(NotFoundError):
        await client.runs.get(thread["thread_id"], first["run_id"])
    assert (await client.threads.get_state(thread["thread_id"]))["values"]["goal"] == GOAL  # state stays
    with pytest.raises(UnprocessableEntityError):
        await client.runs.cancel_many(thread_id=thread["thread_id"], status="running")


async def test_a_delayed_run_waits_its_seconds_and_later_runs_go_first(
    live: LiveServer, keys: dict[str, str]
) -> None:
    client = sdk(live, keys["demo-retail"])
    thread = await client.threads.create()
    before = datetime.now(UTC)
    delayed = await client.runs.create(thread["thread_id"], "tally", input=[], after_seconds=3)
    assert datetime.fromisoformat(delayed["created_at"]) >= before + timedelta(seconds=3)
    assert await client.runs.wait(thread["thread_id"], "tally", input=[]) == ["run 1"]  # not held back
    assert (await client.runs.get(thread["thread_id"], delayed["run_id"]))["status"] == "pending"
    await client.runs.join(thread["thread_id"], delayed["run_id"])
    assert (await client.threads.get_state(thread["thread_id"]))["values"] == ["run 1", "run 2"]
    resources: RuntimeResources = live.server.config.app.state.service.resources
    async with resources.database.pool.connection() as conn:
        row = await (
            await conn.execute(
                "SELECT created_at, started_at FROM runs WHERE run_id = %s", (delayed["run_id"],)
            )
        ).fetchone()
    assert row is not None and row["started_at"] >= row["created_at"]  # not claimed before its time
    with pytest.raises(UnprocessableEntityError):
        await client.runs.create(thread["thread_id"], "tally", input=[], after_seconds=-1)


async def test_the_thread_stream_follows_every_run_and_state_update(
    live: LiveServer, keys: dict[str, str]
) -> None:
    client = sdk(live, keys["demo-retail"])
    thread = await client.threads.create()
    tid = thread["thread_id"]
    everything: list[Any] = []
    lifecycle: list[Any] = []

    async def follow(into: list[Any], modes: list[str]) -> None:
        async for part in await client.threads.join_stream(tid, stream_mode=modes):  # type: ignore[arg-type]
            into.append(part)

    readers = [
        asyncio.create_task(follow(everything, ["run_modes", "state_update"])),
        asyncio.create_task(follow(lifecycle, ["lifecycle"])),
    ]
    await asyncio.sleep(0.5)  # joined
    first = await client.runs.create(tid, "tally", input=[])
    second = await client.runs.create(tid, "tally", input=[])
    await client.runs.join(tid, second["run_id"])
    await client.threads.update_state(tid, ["by hand"], as_node="mark")  # type: ignore[arg-type]

    def done(parts: list[Any]) -> list[str]:
        return [
            p.data["run_id"] for p in parts if p.event == "metadata" and p.data.get("status") == "run_done"
        ]

    for _ in range(200):
        if (
            len(done(everything)) == 2
            and any(p.event == "state_update" for p in everything)
            and len(done(lifecycle)) == 2
        ):
            break
        await asyncio.sleep(0.05)
    for reader in readers:
        reader.cancel()
    assert done(everything) == [first["run_id"], second["run_id"]]
    values = [p.data for p in everything if p.event == "values"]
    assert ["run 1"] in values and ["run 1", "run 2"] in values
    [update] = [p.data for p in everything if p.event == "state_update"]
    assert update["thread_id"] == tid and update["state"]["values"] == ["run 1", "run 2", "by hand"]
    assert {p.event for p in lifecycle} == {"metadata"} and done(lifecycle) == done(everything)
    starts = [p.data["run_id"] for p in lifecycle if "attempt" in p.data]
    assert starts == [first["run_id"], second["run_id"]]

    # Resumed after the first run's first values: the rest of it, then the second run.
    ids = [p.id for p in everything if p.event == "values"]
    assert ids[0].startswith(first["run_id"] + ":")
    resumed: list[Any] = []

    async def follow_from(last: str) -> None:
        async for part in await client.threads.join_stream(tid, last_event_id=last):
            resumed.append(part)

    reader = asyncio.create_task(follow_from(ids[0]))
    for _ in range(200):
        if len(done(resumed)) == 2:
            break
        await asyncio.sleep(0.05)
    reader.cancel()
    assert done(resumed) == [first["run_id"], second["run_id"]]
    assert [p.id for p in resumed if p.event == "values"] == ids[1:]
    # Strictly after the id: the first run's start (its metadata event 0) is not sent again.
    assert [p.data["run_id"] for p in resumed if "attempt" in p.data] == [second["run_id"]]
    with pytest.raises(UnprocessableEntityError):
        async for _ in await client.threads.join_stream(tid, stream_mode="everything"):  # type: ignore[arg-type]
            pass
    with pytest.raises(NotFoundError):
        async for _ in await sdk(live, keys["other-shop"]).threads.join_stream(tid):
            pass


async def test_stream_mode_events_streams_every_runnable_event(
    live: LiveServer, keys: dict[str, str]
) -> None:
    client = sdk(live, keys["demo-retail"])
    thread = await client.threads.create()
    parts = [
        part
        async for part in client.runs.stream(
            thread["thread_id"], "tally", input=[], stream_mode=["events", "values"]
        )
    ]
    events = [part.data for part in parts if part.event == "events"]
    assert {"on_chain_start", "on_chain_end"} <= {event["event"] for event in events}
    assert "mark" in {event["name"] for event in events if event["event"] == "on_chain_start"}
    assert all(
        event["parent_ids"] for event in events if event["event"] == "on_chain_stream"
    )  # root's: modes
    assert [part.data for part in parts if part.event == "values"][-1] == ["run 1"]
    assert (await client.threads.get_state(thread["thread_id"]))["values"] == ["run 1"]


async def test_a_threads_own_ttl_deletes_or_prunes_it_once_it_runs_out(
    live: LiveServer, keys: dict[str, str]
) -> None:
    client = sdk(live, keys["demo-retail"])
    doomed = await client.threads.create(ttl=5)
    pruned = await client.threads.create(ttl={"ttl": 5, "strategy": "keep_latest"})
    forever = await client.threads.create()
    for thread in (doomed, pruned, forever):
        await client.runs.wait(thread["thread_id"], "tally", input=[])
        await client.runs.wait(thread["thread_id"], "tally", input=[])
    shown = await client.threads.get(pruned["thread_id"], include=["ttl"])
    assert (
        shown["ttl"]["strategy"] == "keep_latest" and shown["ttl"]["ttl"] == 5 and shown["ttl"]["expires_at"]
    )
    assert "ttl" not in await client.threads.get(pruned["thread_id"])
    assert (await client.threads.get(forever["thread_id"], include=["ttl"]))["ttl"] is None
    copied = await client.threads.copy(pruned["thread_id"])
    assert (await client.threads.get(copied["thread_id"], include=["ttl"]))["ttl"][
        "strategy"
    ] == "keep_latest"
    longer = await client.threads.update(doomed["thread_id"], metadata={}, ttl=60)
    assert longer["thread_id"] == doomed["thread_id"]

    resources: RuntimeResources = live.server.config.app.state.service.resources
    pool = resources.database.pool
    assert await sweep_thread_ttls(pool, datetime.now(UTC)) == ThreadTTLSweep()  # nothing ran out yet
    later = datetime.now(UTC) + timedelta(minutes=10)
    swept = await sweep_thread_ttls(pool, later)
    assert swept.pruned >= 1
    assert len(await client.threads.get_history(pruned["thread_id"], limit=50)) == 1
    assert (await client.threads.get_state(pruned["thread_id"]))["values"] == ["run 1", "run 2"]
    assert (await sweep_thread_ttls(pool, later)).pruned == 0  # swept: counted again from now
    await client.threads.get(doomed["thread_id"])  # its TTL was made 60 minutes
    await sweep_thread_ttls(pool, datetime.now(UTC) + timedelta(minutes=61))
    with pytest.raises(NotFoundError):
        await client.threads.get(doomed["thread_id"])
    assert len(await client.threads.get_history(forever["thread_id"], limit=50)) > 1  # no TTL: untouched
    for bad in ({"ttl": 0}, {"ttl": 5, "strategy": "archive"}, {"strategy": "delete"}):
        with pytest.raises(UnprocessableEntityError):
            await client.threads.create(ttl=bad)


async def test_thread_row_shows_values_and_interrupts(live: LiveServer, keys: dict[str, str]) -> None:
    client = sdk(live, keys["demo-retail"])
    tallied = await _tally_thread(client, 2)
    assert (await client.threads.get(tallied))["values"] == ["run 1", "run 2"]

    tag = uuid.uuid4().hex
    thread = await client.threads.create(metadata={"tag": tag})
    assert (await client.threads.get(thread["thread_id"]))["values"] is None
    await client.runs.wait(thread["thread_id"], "approval", input={"request": f"budget {tag}"})
    waiting = await client.threads.get(thread["thread_id"])
    assert waiting["status"] == "interrupted" and waiting["values"] == {"request": f"budget {tag}"}
    [(task_id, [pending])] = waiting["interrupts"].items()
    assert pending["value"] == {"question": f"approve budget {tag}?"}
    task = (await client.threads.get_state(thread["thread_id"]))["tasks"][0]
    assert task["id"] == task_id

    # Found by what its values contain, without reading its state; another tenant finds nothing.
    assert [t["thread_id"] for t in await client.threads.search(values={"request": f"budget {tag}"})] == [
        thread["thread_id"]
    ]
    assert await client.threads.count(values={"request": f"budget {tag}"}) == 1
    assert await client.threads.search(values={"request": "no such budget"}) == []
    assert await sdk(live, keys["other-shop"]).threads.search(values={"request": f"budget {tag}"}) == []
    selected = await client.threads.search(metadata={"tag": tag}, select=["values", "interrupts"])
    assert selected == [{"values": waiting["values"], "interrupts": waiting["interrupts"]}]

    copied = await client.threads.copy(thread["thread_id"])
    assert copied["values"] == waiting["values"] and copied["interrupts"] == waiting["interrupts"]

    await client.runs.wait(thread["thread_id"], "approval", command={"resume": "yes"})
    answered = await client.threads.get(thread["thread_id"])
    assert answered["status"] == "idle" and answered["interrupts"] == {}
    assert answered["values"] == {"request": f"budget {tag}", "decision": "yes"}
    await client.threads.update_state(thread["thread_id"], {"decision": "no"}, as_node="ask")
    assert (await client.threads.get(thread["thread_id"]))["values"]["decision"] == "no"


async def test_breakpoints_stop_the_run_and_input_none_goes_on(
    live: LiveServer, keys: dict[str, str]
) -> None:
    client = sdk(live, keys["demo-retail"])
    thread = await client.threads.create()
    await client.runs.wait(thread["thread_id"], "tally", input=[], interrupt_before=["mark"])
    assert (await client.threads.get(thread["thread_id"]))["status"] == "interrupted"
    assert (await client.threads.get_state(thread["thread_id"]))["next"] == ["mark"]
    assert await client.runs.wait(thread["thread_id"], "tally", input=None) == ["run 1"]


async def test_wait_headers_stream_ids_and_info(live: LiveServer, keys: dict[str, str]) -> None:
    client = sdk(live, keys["demo-retail"])
    thread = await client.threads.create()
    headers = {"X-API-Key": keys["demo-retail"]}
    async with httpx.AsyncClient(base_url=live.url, headers=headers, timeout=60) as http:
        waited = await http.post(
            f"/threads/{thread['thread_id']}/runs/wait", json={"assistant_id": "tally", "input": []}
        )
        assert waited.status_code == 200 and waited.json() == ["run 1"]
        assert waited.headers["location"].endswith("/join")
        assert (await http.get(waited.headers["location"])).json() == ["run 1"]

        ids = []
        async with http.stream(
            "POST", f"/threads/{thread['thread_id']}/runs/stream", json={"assistant_id": "tally", "input": []}
        ) as streamed:
            async for line in streamed.aiter_lines():
                if line.startswith("id:"):
                    ids.append(line[3:].strip())
        assert ids[0] == "0" and len(ids) > 2  # the metadata event has an id too
        run_id = streamed.headers["content-location"].rsplit("/", 1)[-1]
        replayed = []
        async with http.stream(
            "GET",
            f"/threads/{thread['thread_id']}/runs/{run_id}/stream",
            headers={"Last-Event-ID": "1700000000000-0"},  # not one of ours: from the start
        ) as again:
            assert again.status_code == 200
            async for line in again.aiter_lines():
                if line.startswith("id:"):
                    replayed.append(line[3:].strip())
        assert replayed == ids
        # A reconnect resumes strictly after the id it names: the first event is not sent again.
        for seen in (1, 2):
            resumed = []
            async with http.stream(
                "GET",
                f"/threads/{thread['thread_id']}/runs/{run_id}/stream",
                headers={"Last-Event-ID": ids[seen - 1]},
            ) as again:
                async for line in again.aiter_lines():
                    if line.startswith("id:"):
                        resumed.append(line[3:].strip())
            assert resumed == ids[seen:]

        info = await httpx.AsyncClient(base_url=live.url).get("/info")
        assert info.status_code == 200 and info.json()["flags"]["assistants"] is True
