"""A graph whose one node sleeps for ``seconds`` of its input: runs that hold a slot for a while."""

from __future__ import annotations

import asyncio
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph
from typing_extensions import TypedDict


class Nap(TypedDict, total=False):
    seconds: float
    slept: bool


async def _sleep(state: Nap) -> dict[str, Any]:
    await asyncio.sleep(float(state.get("seconds", 0.0)))
    return {"slept": True}


def make_graph(config: RunnableConfig) -> StateGraph[Nap, Any, Any, Any]:
    graph: StateGraph[Nap, Any, Any, Any] = StateGraph(Nap)
    graph.add_node("sleep", _sleep)
    graph.add_edge(START, "sleep")
    graph.add_edge("sleep", END)
    return graph
