"""A trivial 3-node graph for measuring the service's own overhead (``MASTER_AGENT_GRAPHS``), and the same
graph compiled once (``graph``) for a peer server that takes a compiled graph (Aegra, ``benchmarks/aegra.py``)."""

from __future__ import annotations

import operator
from typing import Annotated, Any

from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph
from typing_extensions import TypedDict


class Counter(TypedDict):
    count: Annotated[int, operator.add]


def _step(_state: Counter) -> dict[str, Any]:
    return {"count": 1}


def make_graph(config: RunnableConfig) -> StateGraph[Counter, Any, Any, Any]:
    graph: StateGraph[Counter, Any, Any, Any] = StateGraph(Counter)
    graph.add_node("first", _step)
    graph.add_node("second", _step)
    graph.add_node("third", _step)
    graph.add_edge(START, "first")
    graph.add_edge("first", "second")
    graph.add_edge("second", "third")
    graph.add_edge("third", END)
    return graph


#: Compiled once at import, as a server that caches a static graph (Aegra's ``aegra.json``) expects; the
#: peer would otherwise call the factory for every run, which ours does not.
graph = make_graph({}).compile()
