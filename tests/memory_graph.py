"""A graph with long-term memory: its node remembers a fact through ``Runtime.store`` and recalls the
nearest remembered facts with ``get_store()``, as a LangGraph user writes memory."""

from __future__ import annotations

from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.config import get_store
from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime
from typing_extensions import TypedDict

NAMESPACE = ("memories", "user-1")


class Memory(TypedDict, total=False):
    fact: str
    recalled: list[str]


async def _remember(state: Memory, runtime: Runtime[Any]) -> dict[str, Any]:
    assert runtime.store is not None
    await runtime.store.aput(NAMESPACE, str(abs(hash(state["fact"]))), {"text": state["fact"]})
    found = await get_store().asearch(NAMESPACE, query=state["fact"], limit=3)
    return {"recalled": [item.value["text"] for item in found]}


def make_graph(config: RunnableConfig) -> StateGraph[Memory, Any, Any, Any]:
    graph: StateGraph[Memory, Any, Any, Any] = StateGraph(Memory)
    graph.add_node("remember", _remember)
    graph.add_edge(START, "remember")
    graph.add_edge("remember", END)
    return graph
