"""A graph whose making function returns no graph: building it fails (a ``ConfigError`` naming it) every
time. ``BUILDS`` counts the attempts, so a test can tell a page that built it again from one that
remembered the failure."""

from __future__ import annotations

from typing import Any

from langchain_core.runnables import RunnableConfig

#: How many times the graph was asked for.
BUILDS = 0


def make_graph(config: RunnableConfig) -> Any:
    global BUILDS
    BUILDS += 1
    return {"not": "a StateGraph"}
