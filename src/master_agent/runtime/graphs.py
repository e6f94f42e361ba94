"""The graphs the service runs, by graph id, each registered with what the API checks of a run of it.

The runtime registers no graph of a room above it: the composition roots (``master_agent.service.graphs``,
called by the service, the CLI and ``langgraph dev`` at start) register the master graph (its front door
from ``routing``) and the ``meta`` graph. ``MASTER_AGENT_GRAPHS`` adds graphs by ``graph_id=module:function``
(like ``graphs`` in ``langgraph.json``); they get only the API's generic checks, and one of them named like a
registered graph other than the master graph replaces it.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import StateGraph
from langgraph.graph.state import CompiledStateGraph

from master_agent.errors import ConfigError, InputError
from master_agent.runtime.loop import CompiledLoop
from master_agent.runtime.resources import RESOURCES_KEY, RuntimeResources

#: The graph the factory builds per tenant (``runtime.factory.master_graph``): the default of a thread.
MASTER_GRAPH_ID = "master_agent"


class GraphBuilder(Protocol):
    """The compiled graph for a run's ``config`` (with ``checkpointer`` when given)."""

    def __call__(
        self,
        resources: RuntimeResources,
        config: RunnableConfig,
        *,
        checkpointer: BaseCheckpointSaver[Any] | None = None,
    ) -> Awaitable[CompiledLoop]: ...


class InputCheck(Protocol):
    """Refuse a run's input (an ``InputError`` naming the field under ``input``) before it is stored."""

    def __call__(
        self, resources: RuntimeResources, tenant_id: str, thread_id: str, graph_input: Any
    ) -> Awaitable[None]: ...


class ConfigCheck(Protocol):
    """Refuse a run's config (an ``InputError`` naming the field under ``config``) before it is stored;
    ``config["configurable"]`` is the run's, without the tenant."""

    def __call__(
        self, resources: RuntimeResources, tenant_id: str, config: dict[str, Any]
    ) -> Awaitable[None]: ...


@dataclass(frozen=True, kw_only=True)
class GraphRegistration:
    """A graph the API serves and what the API checks of a run of it (None: only the generic checks)."""

    graph_id: str
    """The graph id assistants, threads and runs name."""
    build: GraphBuilder
    """The compiled graph for a run's config."""
    check_input: InputCheck | None = None
    """Refuses an input the graph would fail on."""
    check_command: Callable[[Mapping[str, Any]], None] | None = None
    """Refuses a run's ``command`` (its ``resume`` and ``update``); the error names the field under ``command``."""
    check_config: ConfigCheck | None = None
    """Refuses a config the graph could not be built for (None: ``recursion_limit`` must be a positive integer)."""
    pin_configurable: Callable[[dict[str, Any], Mapping[str, Any], Any], dict[str, Any]] | None = None
    """A run's ``configurable`` completed from its thread's config and its input, so that every run of the
    thread builds the graph its first run had: ``(configurable, thread_config, input) -> configurable``."""
    config_schema: Callable[[], dict[str, Any]] | None = None
    """The JSON schema of ``configurable`` (None: the compiled graph's own)."""
    recursion_limit: Callable[[RuntimeResources, RunnableConfig], int] | None = None
    """The ``recursion_limit`` of a run that sets none (None: LangGraph's default)."""


_registered: dict[str, GraphRegistration] = {}


def register_graph(registration: GraphRegistration) -> None:
    """Serve ``registration`` (again: replaced) from now on, in every process that registers it."""
    _registered[registration.graph_id] = registration


def graph_made_by(graph_id: str, make: Callable[[RunnableConfig], Any]) -> GraphBuilder:
    """A ``GraphBuilder`` for a graph-making function as ``langgraph.json`` names one: ``make(config)``
    returns a ``StateGraph`` (or an awaitable of one), compiled once per checkpointer and shared by every
    tenant, each run seeing its own tenant's part of the store."""
    compiled: dict[int, CompiledLoop] = {}

    async def build(
        resources: RuntimeResources,
        config: RunnableConfig,
        *,
        checkpointer: BaseCheckpointSaver[Any] | None = None,
    ) -> CompiledLoop:
        key = id(checkpointer)
        if key not in compiled:
            made = make(config)
            if inspect.isawaitable(made):
                made = await made
            if isinstance(made, CompiledStateGraph):
                made = made.builder
            if not isinstance(made, StateGraph):
                raise ConfigError(f"MASTER_AGENT_GRAPHS: {graph_id!r} must return a StateGraph")
            compiled[key] = made.compile(checkpointer=checkpointer, name=graph_id)
        tenant_id = str((config.get("configurable") or {}).get("tenant_id") or "")
        return (
            compiled[key]
            .copy(update={"store": resources.tenant_store(tenant_id)})
            .with_config(configurable={RESOURCES_KEY: resources})
        )

    return build


_configured: dict[tuple[str, str], GraphRegistration] = {}


def _configured_graph(graph_id: str, target: str) -> GraphRegistration:
    """The registration of a ``MASTER_AGENT_GRAPHS`` item (one per item, so its compiled graph is kept)."""
    key = (graph_id, target)
    if key not in _configured:
        module, _, attribute = target.partition(":")

        def make(config: RunnableConfig) -> Any:
            try:
                function = getattr(importlib.import_module(module), attribute)
            except (ImportError, AttributeError) as error:
                raise ConfigError(f"MASTER_AGENT_GRAPHS: cannot load {target!r}: {error}") from None
            return function(config)

        _configured[key] = GraphRegistration(graph_id=graph_id, build=graph_made_by(graph_id, make))
    return _configured[key]


def _graphs(resources: RuntimeResources) -> dict[str, GraphRegistration]:
    configured = {}
    for item in resources.settings.graphs:
        graph_id, _, target = item.partition("=")
        if graph_id != MASTER_GRAPH_ID:
            configured[graph_id] = _configured_graph(graph_id, target)
    registered = {graph_id: item for graph_id, item in _registered.items() if graph_id not in configured}
    return {**registered, **configured}


def check_state_keys(known: frozenset[str], field: str, values: Mapping[str, Any]) -> None:
    """Refuse keys a graph's state does not have (an ``InputError`` naming ``field`` and the known keys)."""
    unknown = sorted(set(values) - known)
    if unknown:
        raise InputError(field, f"unknown state keys {unknown}; known: {sorted(known)}")


def graph_ids(resources: RuntimeResources) -> list[str]:
    return list(_graphs(resources))


def graph_registration(resources: RuntimeResources, graph_id: str) -> GraphRegistration:
    """The registration of ``graph_id``, or an ``InputError`` naming the graphs there are."""
    graphs = _graphs(resources)
    if graph_id not in graphs:
        raise InputError("graph_id", f"unknown graph {graph_id!r}; known: {list(graphs)}")
    return graphs[graph_id]


def graph_id_of(thread_config: Mapping[str, Any] | None) -> str:
    """The graph a thread's (or a run's) config names, else the master graph."""
    return str((thread_config or {}).get("graph_id") or MASTER_GRAPH_ID)


async def graph_for(
    resources: RuntimeResources,
    graph_id: str,
    config: RunnableConfig,
    *,
    checkpointer: BaseCheckpointSaver[Any] | None = None,
) -> CompiledLoop:
    """The compiled graph ``graph_id`` for ``config``."""
    return await graph_registration(resources, graph_id).build(resources, config, checkpointer=checkpointer)
