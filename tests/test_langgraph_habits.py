"""What a LangGraph user does out of habit, through the official langgraph-sdk against the real service,
answered as langgraph-api answers it: run-time context defaulted, unknown body fields ignored, options
the SDK sends acted on, thread metadata stamped by runs, native subgraphs listed."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import httpx
import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.pregel.remote import RemoteGraph
from langgraph_sdk.client import LangGraphClient
from langgraph_sdk.errors import NotFoundError, UnprocessableEntityError
from typing_extensions import TypedDict

from tests.live_server import LiveServer, live_server_fixture, sdk, two_tenant_keys

live = live_server_fixture(
    "habits",
    graphs=(
        "habits=tests.habits_graph:make_graph",
        "tally=tests.tally_graph:make_graph",
        "sleepy=tests.sleepy_graph:make_graph",
    ),
)
keys = two_tenant_keys


def _client(live: LiveServer, keys: dict[str, str]) -> LangGraphClient:
    return sdk(live, keys["demo-retail"])


async def test_a_run_without_context_gets_the_context_schema_defaults(
    live: LiveServer, keys: dict[str, str]
) -> None:
    client = _client(live, keys)
    thread = await client.threads.create()
    plain = await client.runs.wait(thread["thread_id"], "habits", input={"name": "Ana"})
    assert plain["greeting"] == "Hello, Ana!"
    # A context given is used; a key the schema does not declare is dropped, as langgraph-api drops it.
    given = await client.runs.wait(
        None, "habits", input={"name": "Ana"}, context={"greeting": "Bonjour", "mood": "sunny"}
    )
    assert given["greeting"] == "Bonjour, Ana!"
    # Without context, the configurable keys the schema declares are the context (langgraph-api's).
    configured = await client.runs.wait(
        None, "habits", input={"name": "Ana"}, config={"configurable": {"punctuation": "?"}}
    )
    assert configured["greeting"] == "Hello, Ana?"
    # An assistant's context is under the request's.
    assistant = await client.assistants.create("habits", context={"greeting": "Hi"}, name=uuid.uuid4().hex)
    mine = await client.runs.wait(None, assistant["assistant_id"], input={"name": "Ana"})
    assert mine["greeting"] == "Hi, Ana!"


async def test_fields_the_service_does_not_know_are_ignored(live: LiveServer, keys: dict[str, str]) -> None:
    headers = {"X-API-Key": keys["demo-retail"]}
    async with httpx.AsyncClient(base_url=live.url, headers=headers, timeout=60) as http:
        thread = await http.post("/threads", json={"metadata": {"k": 1}, "from_a_newer_sdk": True})
        assert thread.status_code == 200, thread.text
        thread_id = thread.json()["thread_id"]
        run = {"assistant_id": "habits", "input": {"name": "Ana"}, "some_future_option": {"x": 1}}
        waited = await http.post(f"/threads/{thread_id}/runs/wait", json=run)
        assert waited.status_code == 200 and waited.json()["greeting"] == "Hello, Ana!", waited.text
        found = await http.post("/assistants/search", json={"graph_id": "habits", "newer": 1})
        assert found.status_code == 200 and found.json()
        # A field it knows is still checked, and named.
        bad = await http.post("/threads/search", json={"limit": 0, "newer": 1})
        assert bad.status_code == 422 and "limit" in bad.text


async def test_a_thread_created_with_supersteps_holds_their_state(
    live: LiveServer, keys: dict[str, str]
) -> None:
    client = _client(live, keys)
    thread = await client.threads.create(
        graph_id="habits",
        supersteps=[
            {"updates": [{"values": {"name": "Ana"}, "as_node": "__start__"}]},
            {"updates": [{"values": {"greeting": "Hey, Ana"}, "as_node": "greet"}]},
        ],
    )
    assert thread["values"] == {"name": "Ana", "greeting": "Hey, Ana"}
    state = await client.threads.get_state(thread["thread_id"])
    assert state["values"] == {"name": "Ana", "greeting": "Hey, Ana"} and state["next"] == ["checker"]
    # The thread goes on from there: the next node runs.
    resumed = await client.runs.wait(thread["thread_id"], "habits", input=None)
    assert resumed["checked"] is True and resumed["greeting"] == "Hey, Ana"
    with pytest.raises(UnprocessableEntityError, match="supersteps"):
        await client.threads.create(
            graph_id="habits",
            supersteps=[{"updates": [{"values": {"name": "x"}, "as_node": "no_such_node"}]}],
        )
    with pytest.raises(UnprocessableEntityError, match="graph_id"):
        await client.threads.create(supersteps=[{"updates": [{"values": {}, "as_node": "greet"}]}])


async def test_thread_search_extracts_values_by_path(live: LiveServer, keys: dict[str, str]) -> None:
    client = _client(live, keys)
    tag = uuid.uuid4().hex
    thread = await client.threads.create(metadata={"tag": tag, "owner": {"name": "ana"}})
    await client.runs.wait(thread["thread_id"], "tally", input=[])
    await client.runs.wait(thread["thread_id"], "tally", input=[])
    found = await client.threads.search(
        metadata={"tag": tag},
        select=["thread_id"],
        extract={"last": "values[-1]", "owner": "metadata.owner.name", "nothing": "values[9]"},
    )
    assert found == [
        {"thread_id": thread["thread_id"], "extracted": {"last": "run 2", "owner": "ana", "nothing": None}}
    ]
    with pytest.raises(UnprocessableEntityError) as refused:
        await client.threads.search(extract={"bad": "secrets.key"})
    assert "extract" in refused.value.response.text


async def test_crons_are_found_by_graph_name(live: LiveServer, keys: dict[str, str]) -> None:
    client = _client(live, keys)
    thread = await client.threads.create()
    cron = await client.crons.create_for_thread(thread["thread_id"], "tally", schedule="0 3 * * *", input=[])
    try:
        by_name = await client.crons.search(assistant_id="tally", thread_id=thread["thread_id"])
        assert [c["cron_id"] for c in by_name] == [cron["cron_id"]]
        assert await client.crons.search(assistant_id="habits", thread_id=thread["thread_id"]) == []
        assert await client.crons.count(assistant_id="tally", thread_id=thread["thread_id"]) == 1
    finally:
        await client.crons.delete(cron["cron_id"])


async def test_remote_graph_as_a_node_ignores_the_parents_other_keys(
    live: LiveServer, keys: dict[str, str]
) -> None:
    class Parent(TypedDict, total=False):
        name: str
        goal: str
        greeting: str
        audit: list[str]

    builder = StateGraph(Parent)
    builder.add_node("remote", RemoteGraph("habits", url=live.url, api_key=keys["demo-retail"]))
    builder.add_edge(START, "remote")
    builder.add_edge("remote", END)
    parent = builder.compile(checkpointer=InMemorySaver())
    config: RunnableConfig = {"configurable": {"thread_id": str(uuid.uuid4())}}
    result = await parent.ainvoke({"name": "Ana", "audit": ["started"]}, config)
    assert result["greeting"] == "Hello, Ana!" and result["audit"] == ["started"]
    # The master graph too: its parent's state carries keys it does not have.
    builder = StateGraph(Parent)
    builder.add_node("remote", RemoteGraph("master_agent", url=live.url, api_key=keys["demo-retail"]))
    builder.add_edge(START, "remote")
    builder.add_edge("remote", END)
    master = builder.compile(checkpointer=InMemorySaver())
    goal = "Increase Store 5's accessory attach rate by 20% within 60 days"
    solved = await master.ainvoke(
        {"goal": goal, "audit": ["started"]}, {"configurable": {"thread_id": str(uuid.uuid4())}}
    )
    assert solved["goal"] == goal and solved["audit"] == ["started"]


async def _until_finished(client: LangGraphClient, thread_id: str, run_id: str) -> dict[str, Any]:
    for _ in range(200):
        run = await client.runs.get(thread_id, run_id)
        if run["status"] not in ("pending", "running"):
            return dict(run)
        await asyncio.sleep(0.1)
    raise AssertionError(f"run {run_id} still {run['status']}")


async def _until_running(client: LangGraphClient, thread_id: str, run_id: str) -> None:
    for _ in range(200):
        if (await client.runs.get(thread_id, run_id))["status"] == "running":
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"run {run_id} never ran")


async def test_selected_fields_of_assistants_and_runs(live: LiveServer, keys: dict[str, str]) -> None:
    client = _client(live, keys)
    found = await client.assistants.search(graph_id="habits", select=["assistant_id", "graph_id"])
    assert found and all(set(a) == {"assistant_id", "graph_id"} for a in found)
    thread = await client.threads.create()
    await client.runs.wait(thread["thread_id"], "tally", input=[])
    runs = await client.runs.list(thread["thread_id"], select=["run_id", "status"])
    assert [set(r) for r in runs] == [{"run_id", "status"}] and runs[0]["status"] == "success"


async def test_runs_stamp_their_graph_and_assistant_on_the_thread(
    live: LiveServer, keys: dict[str, str]
) -> None:
    client = _client(live, keys)
    tag = uuid.uuid4().hex
    thread = await client.threads.create(metadata={"tag": tag})
    await client.runs.wait(thread["thread_id"], "habits", input={"name": "Ana"})
    stamped = await client.threads.get(thread["thread_id"])
    habits = (await client.assistants.search(graph_id="habits", metadata={"created_by": "system"}))[0]
    assert stamped["metadata"] == {"tag": tag, "graph_id": "habits", "assistant_id": habits["assistant_id"]}
    by_graph = await client.threads.search(metadata={"graph_id": "habits", "tag": tag})
    assert [t["thread_id"] for t in by_graph] == [thread["thread_id"]]
    # A minimal update answers nothing and still updates.
    assert (
        await client.threads.update(thread["thread_id"], metadata={"owner": "ana"}, return_minimal=True)
        is None
    )
    assert (await client.threads.get(thread["thread_id"]))["metadata"]["owner"] == "ana"


async def test_native_subgraphs_are_listed(live: LiveServer, keys: dict[str, str]) -> None:
    client = _client(live, keys)
    subgraphs = await client.assistants.get_subgraphs("habits")
    assert list(subgraphs) == ["checker"]
    assert "checked" in subgraphs["checker"]["state_schema"]["properties"]
    assert await client.assistants.get_subgraphs("habits", namespace="nowhere") == {}


async def test_deleting_an_assistant_stops_and_removes_its_runs_and_can_take_its_threads(
    live: LiveServer, keys: dict[str, str]
) -> None:
    client = _client(live, keys)
    kept = await client.assistants.create("sleepy", name=uuid.uuid4().hex)
    thread = await client.threads.create()
    run = await client.runs.create(thread["thread_id"], kept["assistant_id"], input={"seconds": 60})
    await _until_running(client, thread["thread_id"], run["run_id"])
    await client.assistants.delete(kept["assistant_id"])
    # Its runs go with it (stopped first), as langgraph-api cascades them; the thread stays, idle.
    with pytest.raises(NotFoundError):
        await client.runs.get(thread["thread_id"], run["run_id"])
    left = await client.threads.get(thread["thread_id"])
    assert left["thread_id"] == thread["thread_id"] and left["status"] != "busy"

    taken = await client.assistants.create("sleepy", name=uuid.uuid4().hex)
    busy = await client.threads.create()
    done = await client.threads.create()
    await client.runs.wait(done["thread_id"], taken["assistant_id"], input={"seconds": 0})
    running = await client.runs.create(busy["thread_id"], taken["assistant_id"], input={"seconds": 60})
    await _until_running(client, busy["thread_id"], running["run_id"])
    other = await client.threads.create(metadata={"assistant_id": str(uuid.uuid4())})
    await client.assistants.delete(taken["assistant_id"], delete_threads=True)
    for gone in (busy, done):
        with pytest.raises(NotFoundError):
            await client.threads.get(gone["thread_id"])
    assert (await client.threads.get(other["thread_id"]))["thread_id"] == other["thread_id"]
    with pytest.raises(NotFoundError):
        await client.assistants.get(taken["assistant_id"])


async def test_a_joined_stream_keeps_to_its_modes_and_a_reconnect_gets_no_second_metadata(
    live: LiveServer, keys: dict[str, str]
) -> None:
    client = _client(live, keys)
    thread = await client.threads.create()
    run = await client.runs.create(
        thread["thread_id"], "habits", input={"name": "Ana"}, stream_mode=["values", "updates"]
    )
    await _until_finished(client, thread["thread_id"], run["run_id"])
    everything = [part async for part in client.runs.join_stream(thread["thread_id"], run["run_id"])]
    assert everything[0].event == "metadata" and {"values", "updates"} <= {p.event for p in everything}
    updates = [
        part.event
        async for part in client.runs.join_stream(thread["thread_id"], run["run_id"], stream_mode="updates")
    ]
    assert updates and set(updates) <= {"updates", "end"}
    both = {
        part.event
        async for part in client.runs.join_stream(
            thread["thread_id"], run["run_id"], stream_mode=["updates", "values"]
        )
    }
    assert {"updates", "values"} <= both and "metadata" not in both
    # A reconnect after the metadata event (id 0) does not get it again.
    again = [
        part.event
        async for part in client.runs.join_stream(thread["thread_id"], run["run_id"], last_event_id="0")
    ]
    assert again and "metadata" not in again
    headers = {"X-API-Key": keys["demo-retail"]}
    async with httpx.AsyncClient(base_url=live.url, headers=headers, timeout=30) as http:
        bad = await http.get(
            f"/threads/{thread['thread_id']}/runs/{run['run_id']}/stream", params={"stream_mode": "telepathy"}
        )
        assert bad.status_code == 422 and "stream_mode" in bad.text


async def test_a_join_that_asks_to_cancels_the_run_when_its_client_leaves(
    live: LiveServer, keys: dict[str, str]
) -> None:
    client = _client(live, keys)
    thread = await client.threads.create()
    run = await client.runs.create(thread["thread_id"], "sleepy", input={"seconds": 60})
    await _until_running(client, thread["thread_id"], run["run_id"])
    headers = {"X-API-Key": keys["demo-retail"]}
    path = f"/threads/{thread['thread_id']}/runs/{run['run_id']}/join"
    async with httpx.AsyncClient(base_url=live.url, headers=headers, timeout=1) as http:
        with pytest.raises(httpx.ReadTimeout):
            await http.get(path, params={"cancel_on_disconnect": "true"})
    assert (await _until_finished(client, thread["thread_id"], run["run_id"]))["status"] != "success"
    # Without it, a client that leaves leaves the run alone.
    second = await client.runs.create(thread["thread_id"], "sleepy", input={"seconds": 2})
    await _until_running(client, thread["thread_id"], second["run_id"])
    async with httpx.AsyncClient(base_url=live.url, headers=headers, timeout=0.5) as http:
        with pytest.raises(httpx.ReadTimeout):
            await http.get(f"/threads/{thread['thread_id']}/runs/{second['run_id']}/join")
    assert (await _until_finished(client, thread["thread_id"], second["run_id"]))["status"] == "success"


async def test_no_browser_origin_is_allowed_by_default(live: LiveServer) -> None:
    async with httpx.AsyncClient(base_url=live.url, timeout=30) as http:
        preflight = await http.options(
            "/threads/search",
            headers={"Origin": "https://smith.langchain.com", "Access-Control-Request-Method": "POST"},
        )
        assert preflight.status_code >= 400 and "access-control-allow-origin" not in preflight.headers
        info = await http.get("/info", headers={"Origin": "https://smith.langchain.com"})
        assert "access-control-allow-origin" not in info.headers


async def test_a_threads_storage_is_counted_as_stored(live: LiveServer, keys: dict[str, str]) -> None:
    client = _client(live, keys)
    thread = await client.threads.create()
    headers = {"X-API-Key": keys["demo-retail"]}
    async with httpx.AsyncClient(base_url=live.url, headers=headers, timeout=30) as http:
        empty = (await http.get(f"/threads/{thread['thread_id']}/storage")).json()
        assert empty["total_bytes"] == 0 and empty["checkpoints"]["count"] == 0
        await client.runs.wait(thread["thread_id"], "tally", input=[])
        one = (await http.get(f"/threads/{thread['thread_id']}/storage")).json()
        await client.runs.wait(thread["thread_id"], "tally", input=[])
        two = (await http.get(f"/threads/{thread['thread_id']}/storage")).json()
        assert 0 < one["checkpoints"]["count"] < two["checkpoints"]["count"]
        assert one["total_bytes"] < two["total_bytes"]
        parts = two["checkpoints"]["bytes"] + two["channel_values"]["bytes"] + two["pending_writes"]["bytes"]
        assert two["total_bytes"] == parts
        assert two["channel_values"]["count"] == sum(
            c["versions"] for c in two["channel_values"]["by_channel"].values()
        )
        other = await http.get(
            f"/threads/{thread['thread_id']}/storage", headers={"X-API-Key": keys["other-shop"]}
        )
        assert other.status_code == 404
