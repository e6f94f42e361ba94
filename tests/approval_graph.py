"""A graph that asks a person: its one node interrupts with the request and stores the answer it is
resumed with. A thread of it waits at an interrupt between runs."""

from __future__ import annotations

from typing import Any, TypedDict

from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph
from langgraph.types import interrupt


class Approval(TypedDict, total=False):
    request: str
    decision: str


def _ask(state: Approval) -> dict[str, Any]:
    return {"decision": interrupt({"question": f"approve {state.get('request', '')}?"})}


def make_graph(config: RunnableConfig) -> StateGraph[Any, Any, Any, Any]:
    graph: StateGraph[Any, Any, Any, Any] = StateGraph(Approval)
    graph.add_node("ask", _ask)
    graph.add_edge(START, "ask")
    graph.add_edge("ask", END)
    return graph
