"""A graph whose one node streams ``count`` custom events, a little apart: a run whose events are
stored in several batches and whose end is stored with the last of them."""

from __future__ import annotations

import asyncio
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.config import get_stream_writer
from langgraph.graph import END, START, StateGraph
from typing_extensions import TypedDict


class Talk(TypedDict, total=False):
    count: int
    gap_s: float
    said: int


async def _talk(state: Talk) -> dict[str, Any]:
    writer = get_stream_writer()
    count = int(state.get("count", 20))
    for index in range(count):
        writer({"index": index})
        await asyncio.sleep(float(state.get("gap_s", 0.002)))
    return {"said": count}


def make_graph(config: RunnableConfig) -> StateGraph[Talk, Any, Any, Any]:
    graph: StateGraph[Talk, Any, Any, Any] = StateGraph(Talk)
    graph.add_node("talk", _talk)
    graph.add_edge(START, "talk")
    graph.add_edge("talk", END)
    return graph
