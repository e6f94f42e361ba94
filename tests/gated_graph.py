"""A graph whose one node waits at a gate the test opens: runs that hold a slot exactly as long as a
test wants, and tell it when they begin (``entered``), with no sleeps."""

from __future__ import annotations

import asyncio
from collections import defaultdict
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph
from typing_extensions import TypedDict

#: Opened by the test: the run whose input names the gate ends.
GATES: defaultdict[str, asyncio.Event] = defaultdict(asyncio.Event)
#: Set when the run whose input names the gate has begun its node.
ARRIVALS: defaultdict[str, asyncio.Event] = defaultdict(asyncio.Event)
#: Gates in the order their runs began.
ENTERED: list[str] = []


class Gate(TypedDict, total=False):
    gate: str
    passed: bool


async def _wait_at_gate(state: Gate) -> dict[str, Any]:
    name = state["gate"]
    ENTERED.append(name)
    ARRIVALS[name].set()
    await GATES[name].wait()
    return {"passed": True}


def make_graph(config: RunnableConfig) -> StateGraph[Gate, Any, Any, Any]:
    graph: StateGraph[Gate, Any, Any, Any] = StateGraph(Gate)
    graph.add_node("gate", _wait_at_gate)
    graph.add_edge(START, "gate")
    graph.add_edge("gate", END)
    return graph
