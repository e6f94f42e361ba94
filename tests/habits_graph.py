"""A graph written as LangGraph's templates write them (the react-agent's shape): a dataclass run-time
context whose fields all have defaults, read as ``runtime.context.x``, and a native subgraph as a node."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime
from typing_extensions import TypedDict


@dataclass(kw_only=True)
class Context:
    """What a caller may set per run; a run without context gets these defaults."""

    greeting: str = "Hello"
    """The word the greeting starts with."""
    punctuation: str = "!"
    """What ends it."""


class Greeting(TypedDict, total=False):
    name: str
    greeting: str
    checked: bool


def _greet(state: Greeting, runtime: Runtime[Context]) -> dict[str, Any]:
    return {"greeting": f"{runtime.context.greeting}, {state['name']}{runtime.context.punctuation}"}


def _check(state: Greeting) -> dict[str, Any]:
    return {"checked": bool(state.get("greeting"))}


def _checker() -> Any:
    inner: StateGraph[Greeting, Any, Any, Any] = StateGraph(Greeting)
    inner.add_node("check", _check)
    inner.add_edge(START, "check")
    inner.add_edge("check", END)
    return inner.compile()


def make_graph(config: RunnableConfig) -> StateGraph[Greeting, Context, Any, Any]:
    graph: StateGraph[Greeting, Context, Any, Any] = StateGraph(Greeting, context_schema=Context)
    graph.add_node("greet", _greet)
    graph.add_node("checker", _checker())
    graph.add_edge(START, "greet")
    graph.add_edge("greet", "checker")
    graph.add_edge("checker", END)
    return graph
