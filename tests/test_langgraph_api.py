"""The LangGraph-compatible API driven unchanged by the official langgraph-sdk client, against a real
uvicorn server on a loopback port."""

from __future__ import annotations

import asyncio

import httpx
import pytest
from langgraph_sdk.client import LangGraphClient
from langgraph_sdk.errors import ConflictError, NotFoundError

from tests.live_server import LiveServer, live_server_fixture, sdk, two_tenant_keys

GOAL = "Increase Store 5's accessory attach rate by 20% within 60 days"
QUESTION = "What is the attach rate of Store 5?"


live = live_server_fixture(
    "lgapi",
    graphs=("trivial=benchmarks.trivial_graph:make_graph", "nested=tests.failing_graph:make_graph"),
)
keys = two_tenant_keys


@pytest.fixture(scope="module")
async def clients(live: LiveServer, keys: dict[str, str]) -> dict[str, LangGraphClient]:
    return {tenant: sdk(live, key) for tenant, key in keys.items()}


async def test_assistants(clients: dict[str, LangGraphClient]) -> None:
    client = clients["demo-retail"]
    found = await client.assistants.search(graph_id="master_agent")
    assert [a["graph_id"] for a in found] == ["master_agent"]
    assert {a["graph_id"] for a in await client.assistants.search()} == {
        "master_agent",
        "meta",
        "trivial",
        "nested",
    }
    assistant = await client.assistants.get(found[0]["assistant_id"])
    assert assistant["assistant_id"] == found[0]["assistant_id"]
    graph = await client.assistants.get_graph(assistant["assistant_id"])
    # The front door, node by node (the agent loops run inside `solve`).
    assert {node["id"] for node in graph["nodes"]} >= {
        "__start__",
        "route",
        "clarify",
        "solve",
        "answer_query",
        "__end__",
    }
    # xray as a count draws that many subgraph levels (1 is not True); a bad count names the parameter.
    nested = (await client.assistants.search(graph_id="nested"))[0]["assistant_id"]
    one_level = await client.assistants.get_graph(nested, xray=1)
    every_level = await client.assistants.get_graph(nested, xray=True)
    assert max(node["id"].count(":") for node in one_level["nodes"]) == 1
    assert max(node["id"].count(":") for node in every_level["nodes"]) >= 2
    for bad in ("0", "-1", "deep"):
        refused = await client.http.client.get(f"/assistants/{nested}/graph", params={"xray": bad})
        assert refused.status_code == 422 and "xray" in refused.json()["detail"], bad
    other = await clients["other-shop"].assistants.search()
    assert other[0]["assistant_id"] != assistant["assistant_id"]
    with pytest.raises(NotFoundError):
        await clients["other-shop"].assistants.get(assistant["assistant_id"])


async def test_threads_runs_and_state(clients: dict[str, LangGraphClient]) -> None:
    client = clients["demo-retail"]
    thread = await client.threads.create(metadata={"case": "state"})
    assert (await client.threads.get(thread["thread_id"]))["metadata"] == {"case": "state"}
    assert [t["thread_id"] for t in await client.threads.search(metadata={"case": "state"})] == [
        thread["thread_id"]
    ]

    run = await client.runs.create(thread["thread_id"], "master_agent", input={"goal": GOAL})
    assert run["status"] == "pending"
    output = await client.runs.join(thread["thread_id"], run["run_id"])
    assert output["envelope"]["status"] == "success"
    assert output["solution"]["root_cause"]["driver"] == "tenure_months"
    assert (await client.runs.get(thread["thread_id"], run["run_id"]))["status"] == "success"
    assert [r["run_id"] for r in await client.runs.list(thread["thread_id"])] == [run["run_id"]]
    assert (await client.threads.get(thread["thread_id"]))["status"] == "idle"

    state = await client.threads.get_state(thread["thread_id"])
    assert state["values"]["solution"] == output["solution"]
    assert state["next"] == []
    history = await client.threads.get_history(thread["thread_id"], limit=3)
    assert len(history) == 3 and history[0]["checkpoint_id"] == state["checkpoint_id"]

    updated = await client.threads.update_state(thread["thread_id"], {"goal": "changed"})
    assert updated["checkpoint_id"] != state["checkpoint_id"]
    assert (await client.threads.get_state(thread["thread_id"]))["values"]["goal"] == "changed"

    waited = await client.runs.wait(thread["thread_id"], "master_agent", input={"goal": QUESTION})
    assert waited["goal"] == QUESTION
    assert len(await client.runs.list(thread["thread_id"])) == 2

    await client.threads.delete(thread["thread_id"])
    with pytest.raises(NotFoundError):
        await client.threads.get(thread["thread_id"])


async def _stateless_threads(client: LangGraphClient) -> set[str]:
    return {thread["thread_id"] for thread in await client.threads.search(metadata={"stateless": True})}


async def test_stateless_wait(clients: dict[str, LangGraphClient]) -> None:
    client = clients["demo-retail"]
    before = await _stateless_threads(client)
    output = await client.runs.wait(None, "master_agent", input={"goal": GOAL})
    assert output["envelope"]["status"] == "success"
    # Its thread is deleted after the answer (in the background, as LangGraph's server does).
    for _ in range(600):
        if await _stateless_threads(client) <= before:
            break
        await asyncio.sleep(0.05)
    else:
        raise AssertionError("a stateless wait's thread outlived it")


async def test_interrupt_then_resume_with_a_command(clients: dict[str, LangGraphClient]) -> None:
    client = clients["demo-retail"]
    thread = await client.threads.create()
    config = {"configurable": {"max_iterations": 1}}
    asked = await client.runs.wait(thread["thread_id"], "master_agent", input={"goal": GOAL}, config=config)
    assert asked["__interrupt__"][0]["value"]["reason"] == "max_iterations"
    assert (await client.threads.get(thread["thread_id"]))["status"] == "interrupted"
    state = await client.threads.get_state(thread["thread_id"])
    assert state["interrupts"] and state["next"]
    done = await client.runs.wait(
        thread["thread_id"], "master_agent", command={"resume": "approve"}, config=config
    )
    assert done["termination"]["reason"] == "escalated:max_iterations:approve"
    assert "__interrupt__" not in done


async def test_reject_refuses_while_active_and_enqueue_runs_in_order(
    clients: dict[str, LangGraphClient],
) -> None:
    client = clients["demo-retail"]
    thread = await client.threads.create()
    first = await client.runs.create(thread["thread_id"], "master_agent", input={"goal": GOAL})
    with pytest.raises(ConflictError):
        await client.runs.create(
            thread["thread_id"], "master_agent", input={"goal": GOAL}, multitask_strategy="reject"
        )
    second = await client.runs.create(
        thread["thread_id"], "master_agent", input={"goal": QUESTION}, multitask_strategy="enqueue"
    )
    output = await client.runs.join(thread["thread_id"], second["run_id"])
    runs = {r["run_id"]: r for r in await client.runs.list(thread["thread_id"])}
    assert runs[first["run_id"]]["status"] == runs[second["run_id"]]["status"] == "success"
    assert runs[first["run_id"]]["updated_at"] <= runs[second["run_id"]]["updated_at"]
    assert output["goal"] == QUESTION  # the second ran after the first, on the same thread


async def test_other_tenant_cannot_read_update_or_delete(clients: dict[str, LangGraphClient]) -> None:
    mine, theirs = clients["demo-retail"], clients["other-shop"]
    thread = await mine.threads.create(metadata={"owner": "demo"})
    run = await mine.runs.create(thread["thread_id"], "master_agent", input={"goal": QUESTION})
    await mine.runs.join(thread["thread_id"], run["run_id"])
    attempts = [
        lambda: theirs.threads.get(thread["thread_id"]),
        lambda: theirs.threads.get_state(thread["thread_id"]),
        lambda: theirs.threads.update_state(thread["thread_id"], {"goal": "hijacked"}),
        lambda: theirs.threads.delete(thread["thread_id"]),
        lambda: theirs.runs.get(thread["thread_id"], run["run_id"]),
        lambda: theirs.runs.join(thread["thread_id"], run["run_id"]),
        lambda: theirs.runs.create(thread["thread_id"], "master_agent", input={"goal": QUESTION}),
    ]

    async def stream() -> None:
        async for _ in theirs.runs.join_stream(thread["thread_id"], run["run_id"]):
            pass

    attempts.append(stream)
    for attempt in attempts:
        with pytest.raises((NotFoundError, httpx.HTTPStatusError)) as refused:
            await attempt()
        assert getattr(refused.value, "status_code", None) == 404 or refused.value.response.status_code == 404
    assert await theirs.threads.search(metadata={"owner": "demo"}) == []
    assert (await mine.threads.get_state(thread["thread_id"]))["values"]["goal"] == QUESTION


async def test_concurrent_waits(clients: dict[str, LangGraphClient]) -> None:
    client = clients["demo-retail"]
    outputs = await asyncio.gather(
        *(client.runs.wait(None, "master_agent", input={"goal": QUESTION}) for _ in range(6))
    )
    assert all(output["goal"] == QUESTION for output in outputs)


async def test_extra_graphs_are_served(clients: dict[str, LangGraphClient]) -> None:
    client = clients["demo-retail"]
    assert await client.runs.wait(None, "trivial", input={"count": 0}) == {"count": 3}
    thread = await client.threads.create()
    await client.runs.wait(thread["thread_id"], "trivial", input={"count": 10})
    assert (await client.threads.get_state(thread["thread_id"]))["values"] == {"count": 13}
    # Every durability langgraph-api knows is accepted; the run's steps are kept either way.
    for durability in ("sync", "async", "exit"):
        thread = await client.threads.create()
        output = await client.runs.wait(
            thread["thread_id"], "trivial", input={"count": 1}, durability=durability
        )
        assert output == {"count": 4}
        assert (await client.threads.get_state(thread["thread_id"]))["values"] == output
        kept = await client.threads.get_history(thread["thread_id"])
        assert len(kept) == (1 if durability == "exit" else 5)  # "exit": only the final checkpoint
