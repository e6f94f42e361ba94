"""Running the master graph on a thread for a queued run (the LangGraph-compatible API's runs).

The run's request (input or command, config, stream settings) was stored when it was created; any
worker executes it. A run taken over after its worker died continues from the thread's last
checkpoint instead of starting again.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any, Literal, cast

from langchain_core.messages import BaseMessageChunk
from langchain_core.runnables import RunnableConfig
from langgraph._internal._constants import CONFIG_KEY_STREAM_MESSAGES_V2
from langgraph.types import Command, StateSnapshot

from master_agent.runtime.graphs import MASTER_GRAPH_ID, graph_id_of, graph_registration
from master_agent.runtime.resources import RuntimeResources
from master_agent.runtime.serialization import interrupts_by_task, thread_output, to_jsonable

#: Keys of ``configurable`` that shape the graph (kept on the thread so state reads use the same graph).
SHAPE_KEYS = (
    "complexity",
    "ab_test_variant",
    "sub_agents",
    "max_iterations",
    "goal",
    "deploy_playbook",
    "agent_id",
    "agent_version",
)


def shape_of(config: dict[str, Any] | None, graph_id: str = MASTER_GRAPH_ID) -> dict[str, Any]:
    """What a thread keeps of its runs' config: the graph and the keys that shape it."""
    configurable = dict((config or {}).get("configurable") or {})
    shape = {key: configurable[key] for key in SHAPE_KEYS if configurable.get(key) is not None}
    return {"graph_id": graph_id, "configurable": shape}


RunOutcome = Literal["success", "interrupted", "error"]
#: A run started through the thread protocol (``threads.stream``): what it streams is shaped for that
#: protocol's channels (messages as content-block events, tool calls, compact checkpoints).
PROTOCOL_V2 = "v2"
#: The stream modes of a protocol run, as langgraph-api runs them.
PROTOCOL_STREAM_MODES = ("values", "updates", "messages", "tools", "custom", "tasks", "checkpoints")
Durability = Literal["sync", "async", "exit"]


@dataclass(frozen=True)
class GraphRunEnd:
    """How a graph run left its thread."""

    status: RunOutcome
    output: Any
    """The thread's values after the run as ``runs.wait`` answers them, from the run's own last values
    (None when the run streamed none, e.g. taken over after it had finished)."""
    error: str | None = None
    """Why the run ended ``error``: the master agent's model failed (the thread keeps its answer)."""
    interrupts: dict[str, list[dict[str, Any]]] | None = None
    """The thread's pending interrupts by task id, as its row keeps them (None: unknown, left as they were)."""


def thread_graph_config(tenant_id: str, thread_id: str, configurable: dict[str, Any]) -> RunnableConfig:
    shape = {key: configurable[key] for key in SHAPE_KEYS if configurable.get(key) is not None}
    return {"configurable": {**shape, "tenant_id": tenant_id, "thread_id": thread_id}}


def run_context(graph: Any, context: dict[str, Any] | None, configurable: dict[str, Any]) -> dict[str, Any]:
    """The run-time context a run's graph gets, as langgraph-api gives it: the request's ``context``
    (the assistant's under it), else the request's ``configurable``; kept to the keys the graph's context
    schema declares when it declares any; ``{}`` when nothing is left, so the schema's defaults apply
    (never None: a graph reading ``runtime.context.x`` would fail)."""
    given = dict(context or configurable)
    schema = graph.get_context_jsonschema() if getattr(graph, "context_schema", None) is not None else None
    declared = (schema or {}).get("properties")
    if declared:
        return {key: value for key, value in given.items() if key in declared}
    return given if context else {}


def command_of(payload: dict[str, Any]) -> Command[Any]:
    """A run's ``command`` as LangGraph takes it (``resume``, ``update``, ``goto``)."""
    return Command(resume=payload.get("resume"), update=payload.get("update"), goto=payload.get("goto") or ())


async def execute_graph_run(
    resources: RuntimeResources,
    run: dict[str, Any],
    publish: Callable[[str, Any], object],
    *,
    resumed: bool = False,
) -> GraphRunEnd:
    """Run (or continue) the graph for one claimed run; return how the thread was left. ``resumed``:
    this worker already started it (and met a database outage); it continues like a run taken over."""
    kwargs: dict[str, Any] = dict(run["kwargs"] or {})
    config_in: dict[str, Any] = dict(kwargs.get("config") or {})
    configurable = dict(config_in.get("configurable") or {})
    config = thread_graph_config(run["tenant_id"], run["thread_id"], configurable)
    registration = graph_registration(resources, graph_id_of(kwargs))
    if config_in.get("recursion_limit") is not None:
        config["recursion_limit"] = config_in["recursion_limit"]
    elif registration.recursion_limit is not None:
        config["recursion_limit"] = registration.recursion_limit(resources, config)
    config["configurable"]["run_id"] = str(run["run_id"])
    graph = await registration.build(resources, config, checkpointer=resources.database.checkpointer)
    graph_input: Any
    start: dict[str, str] = {}
    started = run["attempts"] > 1 or resumed
    if started and _run_has_pending_steps(await graph.aget_state(config), str(run["run_id"])):
        graph_input = None  # taken over after a crash, or after an outage: continue from the last checkpoint
    else:
        graph_input = command_of(kwargs["command"]) if kwargs.get("command") else kwargs.get("input")
        # Only a run's first start forks from the checkpoint it names; one taken over continues.
        start = kwargs.get("checkpoint") or {}
    protocol = kwargs.get("stream_protocol") == PROTOCOL_V2
    requested = kwargs.get("stream_mode") or ["values"]
    modes = [requested] if isinstance(requested, str) else list(requested)
    if protocol:
        modes = list(PROTOCOL_STREAM_MODES)
        # Chat models then stream content-block events (message-start, deltas, finish).
        config["configurable"][CONFIG_KEY_STREAM_MESSAGES_V2] = True
    published = {"messages" if mode.startswith("messages") else mode for mode in modes}
    # ``values`` is always streamed: the root's last values chunk carries ``__interrupt__`` when the
    # run stopped at an interrupt (its own or a nested sub-agent's), so no state read is needed after.
    graph_modes: list[Any] = sorted((published - {"events"}) | {"values"})
    translator = _EventTranslator(modes, protocol=protocol)
    # subgraphs=True always, so parts arrive as (namespace, mode, chunk); nested ones are dropped below
    # unless the client asked for them.
    subgraphs = bool(kwargs.get("stream_subgraphs"))
    interrupted: bool | None = None  # unknown until the root streams a dict of values
    values: Any = None
    interrupts: Any = ()
    # ``sync`` durability: each step is committed (and flushed) before the next starts; ``async``
    # (default) writes while the next step runs; ``exit`` only at the end.
    durability = cast(Durability, kwargs.get("durability") or "async")
    stream_options: dict[str, Any] = {
        "stream_mode": graph_modes,
        "subgraphs": True,
        "durability": durability,
        "context": run_context(graph, kwargs.get("context"), configurable),
        "interrupt_before": kwargs.get("interrupt_before"),
        "interrupt_after": kwargs.get("interrupt_after"),
    }
    run_config = {**config, "configurable": {**config["configurable"], **start}} if start else config
    if "events" in published:
        parts = _parts_publishing_events(graph, graph_input, run_config, stream_options, publish)
    elif protocol:
        parts = _v2_parts(graph.astream(graph_input, run_config, version="v2", **stream_options))
    else:
        parts = graph.astream(graph_input, run_config, **stream_options)
    async for part in parts:
        namespace, mode, chunk = cast(tuple[tuple[str, ...], str, Any], part)
        if not namespace and mode == "values" and isinstance(chunk, dict):
            interrupts = chunk.get("__interrupt__") or ()
            interrupted = bool(interrupts)
            values = {key: value for key, value in chunk.items() if key != "__interrupt__"}
        elif not namespace and mode == "values":
            values = chunk  # a state that is not an object (a list): no interrupts ride on it
        if (namespace and not subgraphs) or mode not in published:
            continue
        for event, data in translator.events(namespace, mode, chunk):
            publish(event, data)
    waiting: dict[str, list[dict[str, Any]]] = {}
    if interrupted is not False or kwargs.get("interrupt_before") or kwargs.get("interrupt_after"):
        # A static breakpoint leaves no ``__interrupt__``: the thread waits with steps to go. The
        # interrupts are kept by task, as the thread's row shows them.
        state = await graph.aget_state(config)
        interrupted = bool(state.interrupts) or bool(state.next)
        waiting = interrupts_by_task(state)
    output = None if values is None else thread_output(values, interrupts)
    if interrupted:
        return GraphRunEnd(status="interrupted", output=output, interrupts=waiting)
    failure = values.get("model_failure") if isinstance(values, dict) else None
    if isinstance(failure, str) and failure:
        return GraphRunEnd(status="error", output=output, error=failure, interrupts={})
    return GraphRunEnd(status="success", output=output, interrupts={})


async def _parts_publishing_events(
    graph: Any,
    graph_input: Any,
    config: Any,
    stream_options: dict[str, Any],
    publish: Callable[[str, Any], object],
) -> AsyncIterator[Any]:
    """``stream_mode="events"``, as langgraph-api streams it: the run through ``astream_events`` (v2),
    each event published as ``events``; the root graph's stream chunks are the parts ``astream``
    would have given (they are not published as events)."""
    async for event in graph.astream_events(graph_input, config, version="v2", **stream_options):
        if event["event"] == "on_chain_stream" and not event.get("parent_ids"):
            yield event["data"]["chunk"]
        else:
            publish("events", to_jsonable(event))


async def _v2_parts(parts: AsyncIterator[Any]) -> AsyncIterator[Any]:
    """``astream(version="v2")`` parts as the ``(namespace, mode, chunk)`` of version 1 (a root values
    chunk carrying its interrupts as ``__interrupt__``)."""
    async for part in parts:
        chunk = part["data"]
        if part["type"] == "values" and part.get("interrupts") and isinstance(chunk, dict):
            chunk = {**chunk, "__interrupt__": part["interrupts"]}
        yield tuple(part["ns"]), part["type"], chunk


def _checkpoint_envelope(payload: dict[str, Any]) -> dict[str, Any]:
    """A ``checkpoints`` chunk as the thread protocol's Checkpoint: its id, parent, step and source."""
    metadata = payload.get("metadata") or {}
    parent = ((payload.get("parent_config") or {}).get("configurable") or {}).get("checkpoint_id")
    envelope = {
        "id": ((payload.get("config") or {}).get("configurable") or {}).get("checkpoint_id"),
        "step": metadata.get("step", 0),
        "source": metadata.get("source", "loop"),
    }
    return {**envelope, "parent_id": parent} if parent else envelope


def _run_has_pending_steps(state: StateSnapshot, run_id: str) -> bool:
    # The thread's last checkpoint must be this run's: before its first step is stored, the last one
    # is the previous run's (possibly waiting at an interrupt this run's input answers).
    return bool(state.next) and (state.metadata or {}).get("run_id") == run_id


class _EventTranslator:
    """Graph stream parts -> SSE events named like langgraph-api's (``values``, ``updates``,
    ``custom``, ``messages/partial`` ...; a nested sub-agent's carry ``|`` and its namespace)."""

    def __init__(self, modes: list[str], *, protocol: bool = False) -> None:
        self.modes = modes
        self.protocol = protocol
        self.messages: dict[str, Any] = {}

    def events(self, namespace: tuple[str, ...], mode: str, chunk: Any) -> list[tuple[str, Any]]:
        suffix = "|" + "|".join(namespace) if namespace else ""
        if self.protocol and mode == "checkpoints":
            return [(mode + suffix, to_jsonable(_checkpoint_envelope(chunk)))]
        if self.protocol and mode == "messages":
            return [(mode + suffix, to_jsonable(chunk[0]))]  # a content-block event; its metadata stays
        if mode != "messages":
            return [(mode + suffix, to_jsonable(chunk))]
        message, metadata = chunk
        if "messages-tuple" in self.modes:
            return [("messages" + suffix, [to_jsonable(message), to_jsonable(metadata)])]
        out: list[tuple[str, Any]] = []
        key = message.id or ""
        if key not in self.messages:
            out.append(("messages/metadata" + suffix, {key: {"metadata": to_jsonable(metadata)}}))
        if isinstance(message, BaseMessageChunk):
            self.messages[key] = self.messages[key] + message if key in self.messages else message
            out.append(("messages/partial" + suffix, [to_jsonable(self.messages[key])]))
        else:
            self.messages[key] = message
            out.append(("messages/complete" + suffix, [to_jsonable(message)]))
        return out
