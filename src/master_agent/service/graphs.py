"""The graphs this installation serves, registered at start by the processes that serve them: the
service (``create_app``), the CLI (``main``) and ``langgraph dev`` (``langgraph.json`` names
``make_master_agent_graph`` here). The runtime is given the front door and the graphs, never importing the
rooms above it (DESIGN.md, "Rooms")."""

from __future__ import annotations

import asyncio

from langchain_core.runnables import RunnableConfig

from master_agent.capabilities.terms import load_month_names
from master_agent.capabilities.tools.lexicon import noun_first
from master_agent.meta.registration import META_GRAPH
from master_agent.routing.graph import make_front_door
from master_agent.routing.registration import MASTER_GRAPH
from master_agent.runtime.factory import register_front_door
from master_agent.runtime.graphs import register_graph
from master_agent.runtime.loop import CompiledLoop
from master_agent.runtime.resources import shared_resources


def register_graphs() -> None:
    """The factory's front door and the served graphs, in the order the API lists them (again: no change)."""
    register_front_door(make_front_door)
    register_graph(MASTER_GRAPH)
    register_graph(META_GRAPH)


def _load_word_lists() -> None:
    load_month_names()
    noun_first("store")


async def make_master_agent_graph(config: RunnableConfig) -> CompiledLoop:
    """Graph factory for ``langgraph dev`` / LangGraph Studio (the server supplies the checkpointer)."""
    register_graphs()
    # The readers' word lists are files read once; read in a thread, not on the server's event loop
    # (``langgraph dev`` refuses a blocking call there).
    await asyncio.to_thread(_load_word_lists)
    return await MASTER_GRAPH.build(await shared_resources(), config)


__all__ = ["make_master_agent_graph", "register_graphs"]
