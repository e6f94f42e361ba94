"""A graph whose whole state is a list (the shape of a messages-only graph): each run appends a mark."""

from __future__ import annotations

import operator
from typing import Annotated, Any

from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph

Tally = Annotated[list[str], operator.add]


def _mark(state: list[str]) -> list[str]:
    return [f"run {len(state) + 1}"]


def make_graph(config: RunnableConfig) -> StateGraph[Any, Any, Any, Any]:
    graph: StateGraph[Any, Any, Any, Any] = StateGraph(Tally)  # type: ignore[arg-type]
    graph.add_node("mark", _mark)
    graph.add_edge(START, "mark")
    graph.add_edge("mark", END)
    return graph
