"""A graph that fails two subgraphs down: ``solve`` runs ``analyst``, whose ``query_sales`` raises. The
console must say where (``solve > analyst > query_sales``) and why."""

from __future__ import annotations

from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph
from typing_extensions import TypedDict

#: What ``query_sales`` raises with.
FAILURE = "no sales rows for store 99 in the window asked"


class Ask(TypedDict, total=False):
    store: int
    planned: bool


def _plan(state: Ask) -> dict[str, Any]:
    return {"planned": True}


def _query_sales(state: Ask) -> dict[str, Any]:
    raise LookupError(FAILURE)


def _analyst() -> Any:
    inner: StateGraph[Ask, Any, Any, Any] = StateGraph(Ask)
    inner.add_node("query_sales", _query_sales)
    inner.add_edge(START, "query_sales")
    inner.add_edge("query_sales", END)
    return inner.compile()


def _solve() -> Any:
    middle: StateGraph[Ask, Any, Any, Any] = StateGraph(Ask)
    middle.add_node("plan", _plan)
    middle.add_node("analyst", _analyst())
    middle.add_edge(START, "plan")
    middle.add_edge("plan", "analyst")
    middle.add_edge("analyst", END)
    return middle.compile()


def make_graph(config: RunnableConfig) -> StateGraph[Ask, Any, Any, Any]:
    graph: StateGraph[Ask, Any, Any, Any] = StateGraph(Ask)
    graph.add_node("solve", _solve())
    graph.add_edge(START, "solve")
    graph.add_edge("solve", END)
    return graph
