"""LangGraph's ``RemoteGraph`` against the real service: every public method of it (sync and async),
as a graph of its own and as a node of a local parent graph, through an interrupt and its resume, with
sub-graphs. When a LangGraph upgrade brings a method, the surface test fails until a test drives it."""

from __future__ import annotations

import asyncio
import inspect
import re
import uuid
from pathlib import Path
from typing import Any

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.pregel.remote import RemoteGraph
from langgraph.types import Command
from typing_extensions import TypedDict

from tests.live_server import LiveServer, live_server_fixture, two_tenant_keys

live = live_server_fixture(
    "remote",
    graphs=("chat=tests.chat_model_graph:make_graph", "approval=tests.approval_graph:make_graph"),
)
keys = two_tenant_keys
HELLO = {"messages": [{"role": "user", "content": "hi"}]}


def _thread() -> RunnableConfig:
    return {"configurable": {"thread_id": str(uuid.uuid4())}}


def _remote(live: LiveServer, keys: dict[str, str], graph: str = "chat") -> RemoteGraph:
    return RemoteGraph(graph, url=live.url, api_key=keys["demo-retail"])


def _text(content: Any) -> str:
    # A protocol ("v3") run streams content blocks, and the message keeps them.
    if isinstance(content, list):
        return "".join(block.get("text", "") for block in content if isinstance(block, dict))
    return str(content)


def _texts(values: dict[str, Any]) -> list[str]:
    return [_text(m["content"] if isinstance(m, dict) else m.content) for m in values["messages"]]


def test_every_public_method_of_remote_graph_is_driven() -> None:
    source = Path(__file__).read_text()
    methods = sorted(
        name
        for name, _ in inspect.getmembers(RemoteGraph, inspect.isfunction)
        if not name.startswith("_") and name in RemoteGraph.__dict__
    )
    assert len(methods) >= 18
    assert [m for m in methods if not re.search(rf"\.{m}\(", source)] == []


async def test_invoke_stream_and_state_async(live: LiveServer, keys: dict[str, str]) -> None:
    remote = _remote(live, keys)
    config = _thread()
    result = await remote.ainvoke(HELLO, config)
    assert _texts(result) == ["hi", "hello there friend"]

    parts = [
        part
        async for part in remote.astream(HELLO, config, stream_mode=["values", "updates"], subgraphs=True)
    ]
    namespaces = {namespace for namespace, _, _ in parts}
    assert () in namespaces and any(ns and ns[0].startswith("writer:") for ns in namespaces), namespaces
    assert _texts([data for ns, mode, data in parts if mode == "values" and ns == ()][-1])[-1] == (
        "hello there friend"
    )

    # Streaming "v3": the run through the thread protocol's commands, its output awaited.
    async with await remote.astream_events(HELLO, config, version="v3") as run:
        output = await run.output()
    assert _texts(output)[-1] == "hello there friend" and len(output["messages"]) == 6

    state = await remote.aget_state(config)
    assert len(state.values["messages"]) == 6 and state.next == ()
    history = [snapshot async for snapshot in remote.aget_state_history(config, limit=3)]
    assert len(history) == 3 and history[0].config == state.config

    written = await remote.aupdate_state(config, {"messages": [{"role": "user", "content": "noted"}]})
    assert written["configurable"]["checkpoint_id"] != state.config["configurable"]["checkpoint_id"]
    assert _texts((await remote.aget_state(config)).values)[-1] == "noted"
    # Not implemented by RemoteGraph itself (langgraph raises before any request).
    with pytest.raises(NotImplementedError):
        await remote.abulk_update_state(config, [({"messages": []}, "writer")])

    drawn = await remote.aget_graph(xray=True)
    assert any(node.startswith("writer") for node in drawn.nodes), list(drawn.nodes)


def _drive_sync(live: LiveServer, keys: dict[str, str]) -> None:
    remote = _remote(live, keys)
    config = _thread()
    assert _texts(remote.invoke(HELLO, config))[-1] == "hello there friend"
    # Several modes without sub-graphs: RemoteGraph yields the SDK's parts (event, data, id).
    modes = [part[0] for part in remote.stream(HELLO, config, stream_mode=["values", "updates"])]
    assert "values" in modes and "updates" in modes
    with remote.stream_events(HELLO, config, version="v3") as run:
        assert _texts(run.output)[-1] == "hello there friend"
    state = remote.get_state(config)
    assert len(state.values["messages"]) == 6
    assert len(list(remote.get_state_history(config, limit=2))) == 2
    remote.update_state(config, {"messages": [{"role": "user", "content": "noted"}]})
    with pytest.raises(NotImplementedError):
        remote.bulk_update_state(config, [({"messages": []}, "writer")])
    assert _texts(remote.get_state(config).values)[-1] == "noted"
    assert any(node.startswith("writer") for node in remote.get_graph().nodes)


async def test_invoke_stream_and_state_sync(live: LiveServer, keys: dict[str, str]) -> None:
    # The sync methods block: they run beside the live server's event loop, as a script's would.
    await asyncio.to_thread(_drive_sync, live, keys)


def test_with_config_and_copy_keep_the_remote(live: LiveServer, keys: dict[str, str]) -> None:
    remote = _remote(live, keys)
    tagged = remote.with_config({"tags": ["remote"]})
    assert isinstance(tagged, RemoteGraph) and tagged.config is not None
    assert tagged.config["tags"] == ["remote"]
    renamed = remote.copy({"name": "writer-remote"})
    assert renamed.name == "writer-remote" and renamed.assistant_id == "chat"


class Parent(TypedDict, total=False):
    messages: list[Any]
    note: str


async def test_remote_graph_as_a_node_through_an_interrupt(live: LiveServer, keys: dict[str, str]) -> None:
    # A parent whose state carries a key the remote graph lacks; the remote graph interrupts.
    class Asking(TypedDict, total=False):
        request: str
        decision: str
        note: str

    builder: StateGraph[Any, Any, Any, Any] = StateGraph(Asking)
    builder.add_node("remote", _remote(live, keys, "approval"))
    builder.add_edge(START, "remote")
    builder.add_edge("remote", END)
    parent = builder.compile(checkpointer=InMemorySaver())
    config = _thread()
    first = await parent.ainvoke({"request": "the refund", "note": "parent only"}, config)
    assert first["__interrupt__"][0].value == {"question": "approve the refund?"}
    # The interrupt is the remote thread's (the parent's thread id): resumed there, as RemoteGraph
    # documents (a parent's resume re-sends the node's input, which starts the remote graph again).
    remote = _remote(live, keys, "approval")
    assert await remote.ainvoke(Command(resume="yes"), config) == {"request": "the refund", "decision": "yes"}
    assert (await remote.aget_state(config)).next == ()
