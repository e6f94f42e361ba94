"""The thread protocol's events (``threads.stream`` of the SDKs, langgraph-api's "protocol v2"): a
thread's stored run events turned into the protocol's channels (``lifecycle``, ``values``, ``updates``,
``messages``, ``tools``, ``input``, ``checkpoints``, ``tasks``, ``custom``), numbered per connection.

A connection replays the thread's runs from the first, so the same events get the same ``seq`` and
``event_id`` on every connection: a client resumes with ``since`` and drops what it has seen by id.
"""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import Field, field_validator

from master_agent.service.limits import LangGraphBody

#: The channels a stream may ask for (and ``custom:<name>``).
CHANNELS = frozenset(
    {"values", "updates", "messages", "tools", "lifecycle", "input", "checkpoints", "tasks", "custom"}
)
#: A run's root lifecycle at its end, by the run's stored status.
TERMINAL = {"success": "completed", "error": "failed", "interrupted": "interrupted"}

Namespace = list[str]


class EventStreamRequest(LangGraphBody):
    """The body of ``POST /threads/{id}/stream/events``: which events, and from where."""

    channels: list[str] = Field(min_length=1)
    namespaces: list[Namespace] | None = None
    depth: int | None = Field(default=None, ge=0)
    since: int | None = Field(default=None, ge=0, description="Only events after this seq.")

    @field_validator("channels")
    @classmethod
    def _known_channels(cls, channels: list[str]) -> list[str]:
        unknown = [name for name in channels if name not in CHANNELS and not name.startswith("custom:")]
        if unknown:
            raise ValueError(f"unknown channels {unknown}; use {sorted(CHANNELS)} or custom:<name>")
        return channels

    def wants(self, event: dict[str, Any]) -> bool:
        """Whether the event is on one of the channels and within the namespaces and depth asked for."""
        if not self._on_channel(event):
            return False
        if not self.namespaces:
            return True
        namespace = event["params"]["namespace"]
        for prefix in self.namespaces:
            if _prefix_of(prefix, namespace) and (
                self.depth is None or len(namespace) - len(prefix) <= self.depth
            ):
                return True
        return False

    def _on_channel(self, event: dict[str, Any]) -> bool:
        method = event["method"]
        if method == "input.requested":
            return "input" in self.channels
        if method == "custom":
            name = (event["params"].get("data") or {}).get("name")
            return "custom" in self.channels or (bool(name) and f"custom:{name}" in self.channels)
        return method in self.channels


def _prefix_of(prefix: Namespace, namespace: Namespace) -> bool:
    """Segments match literally, or by name when the prefix segment has no ``:<task id>``."""
    if len(prefix) > len(namespace):
        return False
    return all(
        want == got or (":" not in want and got.split(":", 1)[0] == want)
        for want, got in zip(prefix, namespace, strict=False)
    )


def parse_event_name(name: str) -> tuple[str, Namespace]:
    """``updates|child:1|grand:2`` -> (``updates``, [``child:1``, ``grand:2``])."""
    method, *namespace = name.split("|")
    return method, namespace


@dataclass
class _RunFrames:
    """What one run has shown so far: its open sub-graph namespaces and the interrupts announced."""

    run_id: str
    graph_name: str
    open_namespaces: dict[tuple[str, ...], str] = field(default_factory=dict)
    interrupts: set[str] = field(default_factory=set)
    terminal: bool = False
    """The root's terminal lifecycle went out (at an interrupt, or a failure): the end adds none."""


class ProtocolFrames:
    """Turns one connection's run events into protocol events, numbered from 1 in the order made."""

    def __init__(self) -> None:
        self.seq = 0
        self.run: _RunFrames | None = None

    def _event(
        self, method: str, namespace: Namespace, data: Any, event_id: str, node: str | None = None
    ) -> dict[str, Any]:
        self.seq += 1
        params: dict[str, Any] = {"namespace": namespace, "timestamp": int(time.time() * 1000), "data": data}
        if node is not None:
            params["node"] = node
        return {"type": "event", "event_id": event_id, "seq": self.seq, "method": method, "params": params}

    def _lifecycle(
        self, run: _RunFrames, namespace: Namespace, status: str, *, error: str | None = None
    ) -> dict[str, Any]:
        key = "/".join(namespace)
        graph_name = namespace[-1].split(":", 1)[0] if namespace else run.graph_name
        data: dict[str, Any] = {"event": status, "graph_name": graph_name}
        if error is not None:
            data["error"] = error
        return self._event("lifecycle", namespace, data, f"{run.run_id}:lc:{key}:{status}")

    def run_started(self, run_id: str, graph_name: str) -> list[dict[str, Any]]:
        self.run = _RunFrames(run_id=run_id, graph_name=graph_name)
        return [self._lifecycle(self.run, [], "running")]

    def run_event(self, name: str, data: Any, source_id: str) -> list[dict[str, Any]]:
        """The protocol events of one stored event of the current run (``source_id``: its id)."""
        run = self.run
        if run is None:
            return []
        method, namespace = parse_event_name(name)
        made: list[dict[str, Any]] = []
        # The first event made from a stored one has its id; any more add ``.1``, ``.2`` ...
        ids = (source_id if n == 0 else f"{source_id}.{n}" for n in itertools.count())

        def emit(kind: str, payload: Any, node: str | None = None) -> None:
            made.append(self._event(kind, namespace, payload, next(ids), node))

        if method == "error":
            message = data.get("message") if isinstance(data, dict) else str(data)
            return [] if run.terminal else self._end(run, "failed", error=message)
        made.extend(self._open(run, namespace))
        if method == "values":
            made.extend(self._interrupted(run, namespace, _interrupts_of(data), source_id))
            values = (
                {k: v for k, v in data.items() if k != "__interrupt__"} if isinstance(data, dict) else data
            )
            if values not in (None, {}):
                emit("values", values)
        elif method == "updates" and isinstance(data, dict):
            if "__interrupt__" in data:
                made.extend(self._interrupted(run, namespace, _interrupts_of(data), source_id))
                return made
            for node, values in data.items():
                emit(
                    "updates",
                    {"node": node, "values": values if isinstance(values, dict) else {"value": values}},
                    node,
                )
                made.extend(self._close_children(run, namespace, node))
        elif method == "messages" and isinstance(data, dict) and isinstance(data.get("event"), str):
            emit("messages", data)  # a content-block event (legacy message chunks have no protocol form)
        elif method == "tools" and isinstance(data, dict):
            node = data.pop("__node", None)
            emit("tools", data, node if isinstance(node, str) else None)
        elif method == "custom":
            emit("custom", {"payload": data})
        elif method == "tasks":
            emit("tasks", data)
        elif method == "checkpoints" and isinstance(data, dict) and isinstance(data.get("id"), str):
            emit("checkpoints", data)
        return made

    def run_done(self, status: str, error: str | None) -> list[dict[str, Any]]:
        """The run's end: its open sub-graphs complete, then the root ends as the run did (a run that
        ended waiting at an interrupt is ``interrupted``)."""
        run = self.run
        self.run = None
        if run is None:
            return []
        if run.terminal:
            return [
                self._lifecycle(run, list(key), "completed")
                for key in sorted(run.open_namespaces, key=len, reverse=True)
            ]
        ending = TERMINAL.get(status, "failed")
        return self._end(run, ending, error=error if ending == "failed" else None)

    def _end(self, run: _RunFrames, status: str, *, error: str | None = None) -> list[dict[str, Any]]:
        made = [
            self._lifecycle(run, list(key), "completed")
            for key in sorted(run.open_namespaces, key=len, reverse=True)
        ]
        run.open_namespaces.clear()
        run.terminal = True
        made.append(self._lifecycle(run, [], status, error=error))
        return made

    def _open(self, run: _RunFrames, namespace: Namespace) -> list[dict[str, Any]]:
        made = []
        for depth in range(1, len(namespace) + 1):
            key = tuple(namespace[:depth])
            if key not in run.open_namespaces:
                run.open_namespaces[key] = "started"
                made.append(self._lifecycle(run, list(key), "started"))
        return made

    def _close_children(self, run: _RunFrames, namespace: Namespace, node: str) -> list[dict[str, Any]]:
        """A node's update at ``namespace``: its sub-graph under it (``node:<task>``) has finished."""
        done = [
            key
            for key in run.open_namespaces
            if len(key) > len(namespace)
            and list(key[: len(namespace)]) == namespace
            and key[len(namespace)].split(":", 1)[0] == node
        ]
        for key in done:
            del run.open_namespaces[key]
        return [self._lifecycle(run, list(key), "completed") for key in sorted(done, key=len, reverse=True)]

    def _interrupted(
        self, run: _RunFrames, namespace: Namespace, interrupts: list[dict[str, Any]], source_id: str
    ) -> list[dict[str, Any]]:
        """``input.requested`` for each interrupt not announced yet; the root is then interrupted."""
        made = []
        for item in interrupts:
            interrupt_id = item.get("id")
            if not isinstance(interrupt_id, str) or interrupt_id in run.interrupts:
                continue
            run.interrupts.add(interrupt_id)
            request = {"interrupt_id": interrupt_id, "payload": item.get("value"), "value": item.get("value")}
            made.append(
                self._event("input.requested", namespace, request, f"{run.run_id}:input:{interrupt_id}")
            )
        if made and not run.terminal:
            made.append(self._lifecycle(run, [], "interrupted"))
            run.terminal = True  # the run stops there; its end says nothing new
        return made


def _interrupts_of(data: Any) -> list[dict[str, Any]]:
    if not isinstance(data, dict):
        return []
    found = data.get("__interrupt__")
    return [item for item in found if isinstance(item, dict)] if isinstance(found, list) else []


class ProtocolCommand(LangGraphBody):
    """A command of ``POST /threads/{id}/commands``."""

    id: int
    method: str
    params: dict[str, Any] = Field(default_factory=dict)


ErrorCode = Literal[
    "invalid_argument",
    "unknown_command",
    "unknown_error",
    "no_such_run",
    "no_such_namespace",
    "no_such_interrupt",
    "no_such_checkpoint",
    "permission_denied",
    "not_supported",
]
