"""The one-statement checkpointer stores what the stock ``AsyncPostgresSaver`` stores: the same graph
run on both, on one database, reads back the same history, pending writes and interrupts."""

from __future__ import annotations

import asyncio
import operator
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Annotated, Any, TypedDict

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import WRITES_IDX_MAP
from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
from langgraph.graph import StateGraph
from langgraph.graph.message import add_messages
from langgraph.types import Command, Send, interrupt

from master_agent.settings import Settings
from master_agent.storage.checkpoints import CheckpointSaver
from master_agent.storage.database import open_database

INTERRUPT = "__interrupt__"  # a special channel (private in LangGraph): its writes have a fixed index


class State(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]
    count: int
    seen: Annotated[list[str], operator.add]
    decision: str


def _graph(saver: Any) -> Any:
    def plan(state: State) -> dict[str, Any]:
        return {"messages": [AIMessage("planning")], "count": state["count"] + 1}

    def fan_out(state: State) -> list[Send]:
        return [Send("work", {"item": item}) for item in ("a", "b", "c")]

    def work(task: dict[str, str]) -> dict[str, Any]:
        return {"seen": [task["item"]]}

    def ask(state: State) -> dict[str, Any]:
        return {"decision": interrupt({"question": "go?", "seen": sorted(state["seen"])})}

    graph = StateGraph(State)
    graph.add_node("plan", plan)
    graph.add_node("work", work)
    graph.add_node("ask", ask)
    graph.add_edge("__start__", "plan")
    graph.add_conditional_edges("plan", fan_out, ["work"])
    graph.add_edge("work", "ask")
    return graph.compile(checkpointer=saver)


async def _history(graph: Any, config: RunnableConfig) -> list[dict[str, Any]]:
    return [
        {
            "values": snapshot.values,
            "next": snapshot.next,
            "step": snapshot.metadata.get("step"),
            "source": snapshot.metadata.get("source"),
            # Message ids are random per run; everything else must match.
            "writes": sorted(re.sub(r"id='[^']*'", "id=_", str(task.result)) for task in snapshot.tasks),
            "interrupts": [item.value for item in snapshot.interrupts],
        }
        async for snapshot in graph.aget_state_history(config)
    ]


def _comparable(history: list[dict[str, Any]]) -> list[dict[str, Any]]:
    for entry in history:
        entry["values"] = {
            **entry["values"],
            "messages": [(type(m).__name__, m.content) for m in entry["values"].get("messages", [])],
        }
    return history


async def test_same_history_as_the_stock_saver(fresh_database_uri: str, tmp_path: Any) -> None:
    settings = Settings(database_url=fresh_database_uri, data_dir=tmp_path, model="offline")
    async with open_database(settings) as database:
        assert isinstance(database.checkpointer, CheckpointSaver)
        histories = []
        for saver, thread in ((database.checkpointer, "ours"), (AsyncPostgresSaver(database.pool), "stock")):
            graph = _graph(saver)
            config: RunnableConfig = {"configurable": {"thread_id": thread}}
            first = await graph.ainvoke({"messages": [HumanMessage("hi")], "count": 0, "seen": []}, config)
            assert first["__interrupt__"][0].value == {"question": "go?", "seen": ["a", "b", "c"]}
            resumed = await graph.ainvoke(Command(resume="yes"), config)
            assert resumed["decision"] == "yes" and resumed["count"] == 1
            histories.append(_comparable(await _history(graph, config)))
        ours, stock = histories
        assert len(ours) >= 5
        assert ours == stock


async def test_repeated_special_writes_keep_the_last(fresh_database_uri: str, tmp_path: Any) -> None:
    """Two writes to one special index cannot go in one statement: the saver falls back to the stock
    per-row upserts, and the later write wins as it does there."""
    assert INTERRUPT in WRITES_IDX_MAP
    settings = Settings(database_url=fresh_database_uri, data_dir=tmp_path, model="offline")
    async with open_database(settings) as database:
        saver = database.checkpointer
        graph = _graph(saver)
        config: RunnableConfig = {"configurable": {"thread_id": "special"}}
        await graph.ainvoke({"messages": [HumanMessage("hi")], "count": 0, "seen": []}, config)
        stored = await saver.aget_tuple(config)
        assert stored is not None
        await saver.aput_writes(stored.config, [(INTERRUPT, "first"), (INTERRUPT, "second")], "task-1")
        again = await saver.aget_tuple(stored.config)
        assert again is not None
        mine = [(channel, value) for task, channel, value in again.pending_writes if task == "task-1"]
        assert mine == [(INTERRUPT, "second")]
        # A later special write of the same task replaces it too (one statement, upsert).
        await saver.aput_writes(stored.config, [(INTERRUPT, "third")], "task-1")
        last = await saver.aget_tuple(stored.config)
        assert last is not None
        mine = [(channel, value) for task, channel, value in last.pending_writes if task == "task-1"]
        assert mine == [(INTERRUPT, "third")]


async def test_commit_waits_for_the_flush_only_for_sync_durability(
    fresh_database_uri: str, tmp_path: Any
) -> None:
    """A step of a ``sync`` run commits with ``synchronous_commit`` on; of an ``async`` run, off. The
    setting lasts for the statement's own transaction only (probed inside one held open)."""
    settings = Settings(database_url=fresh_database_uri, data_dir=tmp_path, model="offline")
    async with open_database(settings) as database, database.pool.connection() as conn:
        saver = database.checkpointer
        seen: dict[str, list[str]] = {}

        @asynccontextmanager
        async def in_open_transaction(**_: Any) -> AsyncIterator[Any]:
            async with conn.cursor() as cursor:
                yield cursor

        saver._cursor = in_open_transaction  # type: ignore[method-assign]
        for durability in ("sync", "async", "exit"):
            async with conn.transaction(force_rollback=True):
                graph = _graph(saver)
                config: RunnableConfig = {"configurable": {"thread_id": durability}}
                await graph.ainvoke(
                    {"messages": [HumanMessage("hi")], "count": 0, "seen": []}, config, durability=durability
                )
                setting = await (
                    await conn.execute("SELECT current_setting('synchronous_commit') AS s")
                ).fetchone()
                seen[durability] = [setting["s"]]
            after = await (await conn.execute("SELECT current_setting('synchronous_commit') AS s")).fetchone()
            seen[durability].append(after["s"])
    assert seen == {"sync": ["on", "on"], "async": ["off", "on"], "exit": ["off", "on"]}


class Counter(TypedDict):
    count: Annotated[int, operator.add]


async def test_a_step_and_its_task_writes_take_one_round_trip(fresh_database_uri: str, tmp_path: Any) -> None:
    """In an ``async`` run (the service's graph runs name their durability, ``async`` unless asked) each
    super-step's checkpoint carries the writes of the step before it: a
    3-node chain takes one pool checkout per checkpoint (and one to read the thread's last), not one
    more per task. The writes are all stored: the history reads them as the stock saver's does."""

    def step(_state: Counter) -> dict[str, int]:
        return {"count": 1}

    graph = StateGraph(Counter)
    for name in ("first", "second", "third"):
        graph.add_node(name, step)
    graph.add_edge("__start__", "first")
    graph.add_edge("first", "second")
    graph.add_edge("second", "third")
    settings = Settings(database_url=fresh_database_uri, data_dir=tmp_path, model="offline")
    async with open_database(settings) as database:
        checkouts: list[float] = []
        database.pool.on_wait = checkouts.append
        compiled = graph.compile(checkpointer=database.checkpointer)
        config: RunnableConfig = {"configurable": {"thread_id": "chain"}}
        assert await compiled.ainvoke({"count": 0}, config, durability="async") == {"count": 3}
        database.pool.on_wait = None
        history = [snapshot async for snapshot in compiled.aget_state_history(config)]
        # Input, start, and one per node: five checkpoints, plus the read of the thread's last one.
        assert len(history) == 5
        assert len(checkouts) == len(history) + 1
        stock = graph.compile(checkpointer=AsyncPostgresSaver(database.pool))
        await stock.ainvoke({"count": 0}, {"configurable": {"thread_id": "chain-stock"}}, durability="async")
        async with database.pool.connection() as conn:
            stored = await (
                await conn.execute(
                    "SELECT thread_id, count(*) AS n FROM checkpoint_writes"
                    " WHERE thread_id IN ('chain', 'chain-stock') GROUP BY thread_id ORDER BY thread_id"
                )
            ).fetchall()
        # Every task's writes are there, as many rows as the stock saver writes.
        assert [row["n"] for row in stored] == [7, 7]


async def test_a_finished_task_writes_alone_while_its_sibling_works(
    fresh_database_uri: str, tmp_path: Any
) -> None:
    """A task that finishes while a sibling of its step still works does not wait for the step's
    checkpoint: its writes are stored on their own after a moment, so a crash then does not run it
    again. The slow sibling waits until the fast one's writes are in the table (or the test fails)."""
    settings = Settings(database_url=fresh_database_uri, data_dir=tmp_path, model="offline")
    async with open_database(settings) as database:

        def fast(_state: Counter) -> dict[str, int]:
            return {"count": 1}

        async def slow(_state: Counter) -> dict[str, int]:
            for _ in range(600):
                async with database.pool.connection() as conn:
                    row = await (
                        await conn.execute(
                            "SELECT count(*) AS n FROM checkpoint_writes WHERE thread_id = 'siblings' AND channel = 'count'"
                        )
                    ).fetchone()
                if row is not None and row["n"] >= 1:
                    return {"count": 10}
                await asyncio.sleep(0.05)
            raise AssertionError("the fast task's writes were never stored while its sibling worked")

        graph = StateGraph(Counter)
        graph.add_node("fast", fast)
        graph.add_node("slow", slow)
        graph.add_edge("__start__", "fast")
        graph.add_edge("__start__", "slow")
        compiled = graph.compile(checkpointer=database.checkpointer)
        config: RunnableConfig = {"configurable": {"thread_id": "siblings"}}
        assert await compiled.ainvoke({"count": 0}, config, durability="async") == {"count": 11}
