"""A graph written with ``context_schema`` (LangGraph's run-time context): its node reads ``Runtime.context``."""

from __future__ import annotations

from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime
from typing_extensions import TypedDict


class Greeting(TypedDict, total=False):
    name: str
    greeting: str


class Caller(TypedDict):
    language: str


def _greet(state: Greeting, runtime: Runtime[Caller]) -> dict[str, Any]:
    words = {"en": "Hello", "fr": "Bonjour"}
    return {"greeting": f"{words[runtime.context['language']]}, {state['name']}"}


def make_graph(config: RunnableConfig) -> StateGraph[Greeting, Caller, Any, Any]:
    graph: StateGraph[Greeting, Caller, Any, Any] = StateGraph(Greeting, context_schema=Caller)
    graph.add_node("greet", _greet)
    graph.add_edge(START, "greet")
    graph.add_edge("greet", END)
    return graph
