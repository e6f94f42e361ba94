"""The thread protocol (``client.threads.stream`` of langgraph-sdk, langgraph-api's protocol v2) against
the real service: a run started and watched through the SDK's session, an interrupt answered with
``run.respond``, messages and sub-graphs as content-block and lifecycle events, a reconnect with
``since``, and bad commands or filters refused with the field named."""

from __future__ import annotations

import asyncio
import json
import uuid
from typing import Any

import httpx

from master_agent.service.thread_protocol import ProtocolFrames
from tests.live_server import LiveServer, live_server_fixture, sdk, two_tenant_keys

live = live_server_fixture(
    "protocol",
    graphs=(
        "approval=tests.approval_graph:make_graph",
        "chat=tests.chat_model_graph:make_graph",
        "greeter=tests.context_graph:make_graph",
    ),
)
keys = two_tenant_keys
HI = {"messages": [{"role": "user", "content": "hi"}]}


async def _frames(live: LiveServer, key: str, thread_id: str, body: dict[str, Any]) -> list[Any]:
    """A finished thread's events on a raw connection: its replay comes at once; the stream then stays
    open for runs to come, so reading stops after a quiet second."""
    got: list[Any] = []
    async with (
        httpx.AsyncClient(base_url=live.url, headers={"X-API-Key": key}, timeout=30) as http,
        http.stream("POST", f"/threads/{thread_id}/stream/events", json=body) as response,
    ):
        assert response.status_code == 200
        lines = response.aiter_lines()
        while True:
            try:
                line = await asyncio.wait_for(anext(lines), 1.0)
            except TimeoutError:
                return got
            if line.startswith("data:"):
                got.append(json.loads(line[5:]))


async def test_a_run_streams_messages_subgraphs_and_its_end(live: LiveServer, keys: dict[str, str]) -> None:
    client = sdk(live, keys["demo-retail"])
    texts: list[str] = []
    children: list[Any] = []
    readers: list[asyncio.Task[None]] = []

    async def read(child: Any) -> None:
        # A message's text is complete once the projection has gone past its last event.
        streams = [message async for message in child.messages]
        texts.extend([str(await message.text) for message in streams])

    async def discover(thread: Any) -> None:
        async for child in thread.subgraphs:
            children.append(child)
            readers.append(asyncio.create_task(read(child)))

    async with client.threads.stream(assistant_id="chat") as thread:
        started = await thread.run.start(input=HI)
        assert uuid.UUID(started["run_id"])
        discovering = asyncio.create_task(discover(thread))
        output = await asyncio.wait_for(thread.output, 60)
        await asyncio.wait_for(discovering, 10)  # the projection ends with the run
        await asyncio.wait_for(asyncio.gather(*readers), 10)
    assert output["messages"][-1]["content"][0]["text"] == "hello there friend"
    assert [child.graph_name for child in children] == ["writer"]
    assert texts == ["hello there friend"]

    # The whole run, replayed on a raw connection: numbered in order, opened and closed.
    key = keys["demo-retail"]
    every = ["lifecycle", "values", "updates", "messages", "checkpoints", "tasks", "tools", "custom", "input"]
    events = await _frames(live, key, thread.thread_id, {"channels": every})
    seqs = [event["seq"] for event in events]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
    lifecycle = [
        (tuple(e["params"]["namespace"]), e["params"]["data"]["event"])
        for e in events
        if e["method"] == "lifecycle"
    ]
    child = children[0].path
    assert lifecycle == [((), "running"), (child, "started"), (child, "completed"), ((), "completed")]
    deltas = [e["params"]["data"] for e in events if e["method"] == "messages"]
    assert deltas[0]["event"] == "message-start" and deltas[-1]["event"] == "message-finish"
    assert {e["method"] for e in events} == {
        "lifecycle",
        "values",
        "updates",
        "checkpoints",
        "tasks",
        "messages",
    }
    checkpoint = next(e["params"]["data"] for e in events if e["method"] == "checkpoints")
    assert set(checkpoint) >= {"id", "step", "source"}

    # A reconnect with ``since`` gets the same events after that seq, with the same ids; filters narrow it.
    resumed = await _frames(live, key, thread.thread_id, {"channels": ["lifecycle"], "since": 3})
    assert [(e["seq"], e["event_id"]) for e in resumed] == [
        (e["seq"], e["event_id"]) for e in events if e["method"] == "lifecycle" and e["seq"] > 3
    ]
    scoped = await _frames(
        live, key, thread.thread_id, {"channels": ["values"], "namespaces": [["writer"]], "depth": 0}
    )
    assert scoped and all(e["params"]["namespace"] == list(child) for e in scoped)


async def test_an_interrupt_is_answered_through_the_session(live: LiveServer, keys: dict[str, str]) -> None:
    client = sdk(live, keys["demo-retail"])
    async with client.threads.stream(assistant_id="approval") as thread:
        await thread.run.start(input={"request": "a new laptop"})
        snapshots = [snapshot async for snapshot in thread.values]  # ends when the run stops to ask
        assert thread.interrupted and snapshots[-1] == {"request": "a new laptop"}
        [pending] = thread.interrupts
        assert pending["value"] == {"question": "approve a new laptop?"} and pending["namespace"] == []

        await thread.run.respond("yes")
        assert await asyncio.wait_for(thread.output, 60) == {"request": "a new laptop", "decision": "yes"}
    answered = await client.threads.get(thread.thread_id)
    assert answered["status"] == "idle" and answered["values"]["decision"] == "yes"


async def test_commands_state_and_bad_input(live: LiveServer, keys: dict[str, str]) -> None:
    key = keys["demo-retail"]
    client = sdk(live, key)
    thread = await client.threads.create()
    await client.runs.wait(thread["thread_id"], "approval", input={"request": "travel"})
    url = f"/threads/{thread['thread_id']}/commands"
    async with httpx.AsyncClient(base_url=live.url, headers={"X-API-Key": key}, timeout=30) as http:
        state = (
            await http.post(url, json={"id": 1, "method": "state.get", "params": {"namespace": []}})
        ).json()
        assert state["type"] == "success" and state["result"]["values"] == {"request": "travel"}
        listed = (
            await http.post(url, json={"id": 2, "method": "state.listCheckpoints", "params": {"limit": 2}})
        ).json()
        assert len(listed["result"]["checkpoints"]) == 2

        async def refused(command: dict[str, Any], status: int, code: str, field: str) -> None:
            answer = await http.post(url, json=command)
            assert answer.status_code == status, answer.text
            body = answer.json()
            assert body["type"] == "error" and body["error"] == code and field in body["message"]

        await refused({"id": 3, "method": "run.launch"}, 400, "unknown_command", "method")
        await refused({"id": 4, "method": "run.start", "params": {}}, 422, "invalid_argument", "assistant_id")
        await refused(
            {"id": 5, "method": "run.start", "params": {"assistant_id": "nope"}}, 404, "no_such_run", "nope"
        )
        await refused(
            {
                "id": 6,
                "method": "input.respond",
                "params": {"interrupt_id": "x", "response": 1, "namespace": []},
            },
            404,
            "no_such_interrupt",
            "interrupt_id",
        )
        assert (await http.post(url, json={"method": "run.start"})).status_code == 422  # no id
        # A method that is no string (an object) is refused naming it, not a server error.
        shapeless = await http.post(url, json={"id": 0, "method": {}, "params": {}})
        assert shapeless.status_code == 422 and "method" in shapeless.text
        bad_filter = await http.post(
            f"/threads/{thread['thread_id']}/stream/events", json={"channels": ["gossip"]}
        )
        assert bad_filter.status_code == 422 and "channels" in bad_filter.text
    # Nothing was lost: the thread still waits at its interrupt.
    assert (await client.threads.get(thread["thread_id"]))["status"] == "interrupted"

    other = {"X-API-Key": keys["other-shop"]}
    async with httpx.AsyncClient(base_url=live.url, headers=other, timeout=30) as http:
        assert (await http.post(url, json={"id": 1, "method": "state.get", "params": {}})).status_code == 404
        peek = await http.post(f"/threads/{thread['thread_id']}/stream/events", json={"channels": ["values"]})
        assert peek.status_code == 404


def test_frames_number_events_and_close_what_a_run_opened() -> None:
    frames = ProtocolFrames()
    made = frames.run_started("r", "agent")
    made += frames.run_event("updates|tool:1", {"step": {"x": 1}}, "r:1")
    made += frames.run_event("values", {"x": 1, "__interrupt__": [{"id": "i", "value": "ok?"}]}, "r:2")
    made += frames.run_done("interrupted", None)
    assert [e["seq"] for e in made] == list(range(1, len(made) + 1))
    assert [(e["method"], e["params"]["namespace"], e["params"]["data"].get("event")) for e in made] == [
        ("lifecycle", [], "running"),
        ("lifecycle", ["tool:1"], "started"),
        ("updates", ["tool:1"], None),
        ("input.requested", [], None),
        ("lifecycle", [], "interrupted"),
        ("values", [], None),
        ("lifecycle", ["tool:1"], "completed"),
    ]
    assert made[3]["params"]["data"]["interrupt_id"] == "i"
    failed = ProtocolFrames()
    failed.run_started("s", "agent")
    [end] = failed.run_event("error", {"error": "ValueError", "message": "boom"}, "s:1")
    assert end["params"]["data"] == {"event": "failed", "graph_name": "agent", "error": "boom"}
    assert failed.run_done("error", "boom") == []


async def test_a_stream_opened_before_its_thread_sees_run_start_with_context_and_a_replay(
    live: LiveServer, keys: dict[str, str]
) -> None:
    # The SDK mints the thread id and opens its event stream before run.start makes the thread.
    client = sdk(live, keys["demo-retail"])
    thread_id = str(uuid.uuid4())
    headers = {"X-API-Key": keys["demo-retail"]}
    async with httpx.AsyncClient(base_url=live.url, headers=headers, timeout=30) as http:

        async def lifecycle() -> list[str]:
            seen: list[str] = []
            async with http.stream(
                "POST", f"/threads/{thread_id}/stream/events", json={"channels": ["lifecycle"]}
            ) as response:
                assert response.status_code == 200
                async for line in response.aiter_lines():
                    if line.startswith("data:"):
                        seen.append(json.loads(line[5:])["params"]["data"]["event"])
                        if seen[-1] in ("completed", "failed"):
                            return seen
            return seen

        watching = asyncio.create_task(lifecycle())
        await asyncio.sleep(0.5)
        command = {
            "id": 1,
            "method": "run.start",
            "params": {"assistant_id": "greeter", "input": {"name": "Ana"}, "context": {"language": "fr"}},
        }
        started = await http.post(f"/threads/{thread_id}/commands", json=command)
        assert started.status_code == 200, started.text
        assert (await asyncio.wait_for(watching, 30))[-1] == "completed"
        await client.runs.join(thread_id, started.json()["result"]["run_id"])
        # The run's context reached the graph.
        assert (await client.threads.get_state(thread_id))["values"]["greeting"] == "Bonjour, Ana"

        # A run naming a checkpoint needs no input: it replays the thread from there.
        history = await client.threads.get_history(thread_id)
        before_greeting = next(state for state in history if state["next"] == ["greet"])
        replay = {
            "id": 2,
            "method": "run.start",
            "params": {
                "assistant_id": "greeter",
                "context": {"language": "en"},
                "config": {"configurable": {"checkpoint_id": before_greeting["checkpoint"]["checkpoint_id"]}},
            },
        }
        again = await http.post(f"/threads/{thread_id}/commands", json=replay)
        assert again.status_code == 200, again.text
        await client.runs.join(thread_id, again.json()["result"]["run_id"])
        assert (await client.threads.get_state(thread_id))["values"]["greeting"] == "Hello, Ana"

        # Another tenant's stream of the thread is refused at once, not left waiting.
        other = await asyncio.wait_for(
            http.post(
                f"/threads/{thread_id}/stream/events",
                json={"channels": ["lifecycle"]},
                headers={"X-API-Key": keys["other-shop"]},
            ),
            30,
        )
        assert other.status_code == 404
