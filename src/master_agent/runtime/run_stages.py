"""The stages of a run, timed: where a run's time goes between the request and its stored end.

A run passes ``accept`` (request received -> run stored, ``enqueue`` included), ``enqueue`` (the
transaction storing it), ``queue_wait`` (stored -> claimed; zero when the process that stored it
executes it at once), ``claim`` (the claiming statement), ``start`` (claimed -> its graph begins),
``first_event`` (claimed -> its first stream event), ``end`` (its graph done -> its end stored) and
``run`` (claimed -> end stored). The run queue reports each through a ``StageObserver``; the service
exports them as one Prometheus histogram (``master_agent_run_stage_seconds``).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from contextvars import ContextVar
from typing import Literal

RunStage = Literal["accept", "enqueue", "queue_wait", "claim", "start", "first_event", "end", "run"]
STAGES: tuple[RunStage, ...] = (
    "accept",
    "enqueue",
    "queue_wait",
    "claim",
    "start",
    "first_event",
    "end",
    "run",
)

#: Called with a stage and its seconds.
StageObserver = Callable[[RunStage, float], None]
#: What woke the claim loop before a claim that found a run: a notification (``wake``) or its fallback
#: poll (``poll``: a notification was missed, a lease ran out, or a delayed run fell due elsewhere).
ClaimTrigger = Literal["wake", "poll"]

#: ``time.perf_counter()`` when the HTTP request now being handled arrived (set by the service).
request_received: ContextVar[float | None] = ContextVar("request_received", default=None)


def since_request() -> float | None:
    """Seconds since the current request arrived; None outside a request."""
    received = request_received.get()
    return None if received is None else time.perf_counter() - received
