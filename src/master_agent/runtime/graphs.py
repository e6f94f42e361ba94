"""The graphs the service runs, by graph id: ``master_agent`` (built per tenant by the factory), the
built-in ``meta`` graph (the meta-orchestrator) and any extra ones named in ``MASTER_AGENT_GRAPHS``
(like ``graphs`` in ``langgraph.json``)."""

from __future__ import annotations

import importlib
import inspect
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import StateGraph
from langgraph.graph.state import CompiledStateGraph

from master_agent.errors import ConfigError, InputError
from master_agent.runtime.factory import master_graph
from master_agent.runtime.loop import CompiledLoop
from master_agent.runtime.resources import RESOURCES_KEY, RuntimeResources

MASTER_GRAPH_ID = "master_agent"
META_GRAPH_ID = "meta"
#: Graphs every service serves besides the master graph, as ``graph_id=module:function`` items.
BUILTIN_GRAPHS = (f"{META_GRAPH_ID}=master_agent.meta.graph:make_meta_graph",)

_compiled: dict[tuple[str, int], CompiledLoop] = {}


def graph_ids(resources: RuntimeResources) -> list[str]:
    return [MASTER_GRAPH_ID, *(item.split("=", 1)[0] for item in _graph_items(resources))]


def _graph_items(resources: RuntimeResources) -> tuple[str, ...]:
    configured = {item.split("=", 1)[0] for item in resources.settings.graphs}
    builtin = tuple(item for item in BUILTIN_GRAPHS if item.split("=", 1)[0] not in configured)
    return (*builtin, *resources.settings.graphs)


def _factory(resources: RuntimeResources, graph_id: str) -> Any:
    for item in _graph_items(resources):
        name, _, target = item.partition("=")
        if name == graph_id:
            module, _, attribute = target.partition(":")
            try:
                return getattr(importlib.import_module(module), attribute)
            except (ImportError, AttributeError) as error:
                raise ConfigError(f"MASTER_AGENT_GRAPHS: cannot load {target!r}: {error}") from None
    raise InputError("graph_id", f"unknown graph {graph_id!r}; known: {graph_ids(resources)}")


async def graph_for(
    resources: RuntimeResources,
    graph_id: str,
    config: RunnableConfig,
    *,
    checkpointer: BaseCheckpointSaver[Any] | None = None,
) -> CompiledLoop:
    """The compiled graph ``graph_id`` for ``config``."""
    if graph_id == MASTER_GRAPH_ID:
        return await master_graph(resources, config, checkpointer=checkpointer)
    key = (graph_id, id(checkpointer))
    if key not in _compiled:
        made = _factory(resources, graph_id)(config)
        if inspect.isawaitable(made):
            made = await made
        if isinstance(made, CompiledStateGraph):
            made = made.builder
        if not isinstance(made, StateGraph):
            raise ConfigError(f"MASTER_AGENT_GRAPHS: {graph_id!r} must return a StateGraph")
        _compiled[key] = made.compile(checkpointer=checkpointer, name=graph_id)
    # One compiled graph serves every tenant; each run sees its own tenant's part of the store.
    tenant_id = str((config.get("configurable") or {}).get("tenant_id") or "")
    return (
        _compiled[key]
        .copy(update={"store": resources.tenant_store(tenant_id)})
        .with_config(configurable={RESOURCES_KEY: resources})
    )
