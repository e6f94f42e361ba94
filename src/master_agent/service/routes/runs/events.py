"""A run's events as server-sent events: the stored backlog then the live ones, resumed after
``Last-Event-ID``, filtered by stream mode."""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass
from functools import partial
from typing import Any, get_args

from fastapi import HTTPException, Request
from prometheus_client import Gauge
from sse_starlette import EventSourceResponse

from master_agent.runtime.run_events import STORED_ELSEWHERE, RunEvent
from master_agent.runtime.runs import Run, RunQueue
from master_agent.service.routes.runs.request import KEEPALIVE_S, StreamMode
from master_agent.storage.outages import OutageTooLong, through_outages

#: How often a quiet stream looks in the database anyway (events stored by another process are
#: announced at once; this covers notifications lost while the listener reconnects).
STREAM_POLL_S = 1.0
#: How long a stream waits, in all, for an event stored after the one behind it (then it goes on
#: without it), and how often it looks again.
STREAM_GAP_WAIT_S = 2.0
STREAM_GAP_POLL_S = 0.05


def _sse(item: RunEvent) -> dict[str, str]:
    return {"event": item.event, "data": json.dumps(item.data, default=str), "id": str(item.seq)}


@dataclass(frozen=True)
class StreamedRun:
    """The run a stream follows; ``stored`` is the storing of a run the stream opened before it was
    stored (a run on a thread created for it)."""

    run_id: str
    thread_id: str
    attempt: int = 1
    stored: asyncio.Task[Any] | None = None

    @classmethod
    def of(cls, run: Run) -> StreamedRun:
        return cls(str(run.run_id), run.thread_id, max(run.attempts, 1))


async def run_events(
    queue: RunQueue,
    run: StreamedRun,
    last_event_id: int | None,
    cancel_on_disconnect: bool,
) -> AsyncIterator[dict[str, str]]:
    """The run's events strictly after ``last_event_id`` (None: from the start, the ``metadata``
    event 0 first, out at once before the graph's first step), then live ones, until ``end``."""
    run_id = run.run_id
    # Subscribed before the stored events are read: every later event arrives live, none is missed.
    live = queue.events.subscribe(run_id)
    seen = last_event_id if last_event_id is not None else 0
    ended = False
    gap_wait_s = 0.0
    try:
        if last_event_id is None:
            metadata = {"run_id": run_id, "thread_id": run.thread_id, "attempt": run.attempt}
            yield {"event": "metadata", "data": json.dumps(metadata), "id": "0"}
        if run.stored is not None:
            try:
                await asyncio.shield(run.stored)
            except Exception as failure:
                ended = True
                yield {
                    "event": "error",
                    "data": json.dumps({"error": type(failure).__name__, "message": str(failure)}),
                }
                yield {"event": "end", "data": "null"}
                return
        while not ended:
            try:
                current, backlog = await through_outages(
                    queue.resources.database.health,
                    partial(_status_then_backlog, queue, run_id, seen),
                    within_s=queue.outage_wait_s,
                )
            except OutageTooLong as outage:
                # The run goes on once the database is back; the client resumes with Last-Event-ID.
                ended = True
                yield {
                    "event": "error",
                    "data": json.dumps({"error": "DatabaseUnavailable", "message": str(outage)}),
                }
                return
            hole = False
            for item in backlog:
                if item.seq > seen + 1 and gap_wait_s < STREAM_GAP_WAIT_S:
                    # Events are stored by concurrent writes: one may commit before the one before it.
                    # The missing one is being written; read again rather than skip it.
                    hole = True
                    break
                yield _sse(item)
                seen, ended = item.seq, item.event == "end"
                if ended:
                    return
            if hole:
                await asyncio.sleep(STREAM_GAP_POLL_S)
                gap_wait_s += STREAM_GAP_POLL_S
                continue
            if current is None or current.status not in ("pending", "running"):
                # finished before events were kept (or they were removed): close like a finished run
                ended = True
                yield {"event": "end", "data": "null"}
                return
            # Live events while they come (a run executing here); the database again when another
            # process announces it stored events of the run (it executes there), or when quiet.
            while not ended:
                try:
                    item = await asyncio.wait_for(live.get(), STREAM_POLL_S)
                except TimeoutError:
                    break
                if item.event == STORED_ELSEWHERE:
                    break
                if item.seq > seen + 1:
                    # An event went by before this stream listened (a run executing here starts before
                    # its stream subscribes) and was not stored yet when the backlog was read: the
                    # database has it next, in order, with this one.
                    break
                if item.seq > seen:
                    yield _sse(item)
                    seen, ended = item.seq, item.event == "end"
    finally:
        queue.events.unsubscribe(run_id, live)
        if cancel_on_disconnect and not ended:
            # The client left before the end. This scope is being cancelled, so nothing can be
            # awaited here: the cancel runs as its own task.
            queue.spawn(cancel_when_stored(queue, run))


async def _status_then_backlog(queue: RunQueue, run_id: str, seen: int) -> tuple[Run | None, list[RunEvent]]:
    # The status first: a run's end stores its last events in the same commit as its status, so once
    # the run is seen finished, the backlog read next holds every event it has.
    return await queue.get(run_id), await queue.events.read_after(run_id, seen)


async def cancel_when_stored(queue: RunQueue, run: StreamedRun) -> None:
    if run.stored is not None:
        with contextlib.suppress(Exception):
            await run.stored
    await queue.cancel(run.run_id, action="interrupt")


async def counted(gauge: Gauge, events: AsyncIterator[dict[str, str]]) -> AsyncIterator[dict[str, str]]:
    gauge.inc()
    try:
        async for item in events:
            yield item
    finally:
        gauge.dec()


#: A run's event id: its sequence number, at most 18 digits (the column holds far fewer; a longer
#: string is no id of ours, and ``int()`` of thousands of digits would be refused).
_EVENT_ID = re.compile(r"[0-9]{1,18}")


def event_seq(last_event_id: str | None) -> int | None:
    """The event a reconnect resumes strictly after; None (from the start, as langgraph-api does) for
    no id or one that is not ours (another server's, a proxy's)."""
    if last_event_id is None or not _EVENT_ID.fullmatch(last_event_id):
        return None
    return int(last_event_id)


def _of_modes(events: AsyncIterator[dict[str, str]], modes: set[str]) -> AsyncIterator[dict[str, str]]:
    """Only the events of ``modes`` (a subgraph's too; ``messages`` and ``messages-tuple`` both mean
    every ``messages...`` event), as langgraph-api filters a joined stream; ``error`` and ``end`` always."""
    if "messages-tuple" in modes:
        modes = modes | {"messages"}
    return (
        item
        async for item in events
        if item["event"] in ("error", "end") or item["event"].partition("|")[0].partition("/")[0] in modes
    )


def query_modes(values: list[str] | None) -> set[str]:
    """The modes of a ``stream_mode`` query: repeated, comma-separated or a JSON array (the JS SDK
    sends an array so)."""
    modes: set[str] = set()
    for value in values or []:
        parsed: Any = None
        if value.startswith("["):
            with contextlib.suppress(ValueError):
                parsed = json.loads(value)
        if isinstance(parsed, list):
            modes |= {str(mode) for mode in parsed}
        else:
            modes |= {mode.strip() for mode in value.split(",") if mode.strip()}
    return modes


def stream_modes_asked(values: list[str] | None) -> set[str]:
    """The run stream modes of a ``stream_mode`` query (as :func:`query_modes` reads it); empty:
    every event."""
    known = set(get_args(StreamMode))
    modes = query_modes(values)
    unknown = sorted(modes - known)
    if unknown:
        raise HTTPException(422, detail=f"stream_mode: unknown {unknown}; use {sorted(known)}")
    return modes


def stream_response(
    queue: RunQueue,
    run: Run | StreamedRun,
    request: Request,
    last_event_id: str | None,
    cancel_on_disconnect: bool,
    modes: set[str] | None = None,
) -> EventSourceResponse:
    gauge = request.app.state.service.metrics.active_streams
    after = event_seq(last_event_id)
    streamed = run if isinstance(run, StreamedRun) else StreamedRun.of(run)
    location = f"/threads/{run.thread_id}/runs/{run.run_id}/stream"
    events = run_events(queue, streamed, after, cancel_on_disconnect)
    return EventSourceResponse(
        counted(gauge, _of_modes(events, modes) if modes else events),
        ping=KEEPALIVE_S,
        headers={"Location": location, "Content-Location": f"/threads/{run.thread_id}/runs/{run.run_id}"},
    )
