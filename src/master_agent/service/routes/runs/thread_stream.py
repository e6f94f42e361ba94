"""A thread's stream: every run of the thread as it runs, and its state updates, until the client leaves."""

from __future__ import annotations

import asyncio
import contextlib
import json
import uuid
from collections.abc import AsyncIterator, Callable
from datetime import datetime
from typing import Annotated, Literal, cast

from fastapi import APIRouter, Header, HTTPException, Query, Request
from sse_starlette import EventSourceResponse

from master_agent.runtime.runs import Run, RunQueue
from master_agent.service.deps import QueueDep, ResourcesDep, TenantDep
from master_agent.service.graph_state import snapshot_json, thread_snapshot
from master_agent.service.limits import StrictJsonRoute
from master_agent.service.routes.runs.events import (
    STREAM_POLL_S,
    StreamedRun,
    counted,
    event_seq,
    query_modes,
    run_events,
)
from master_agent.service.routes.runs.request import KEEPALIVE_S
from master_agent.service.routes.threads import existing_thread
from master_agent.service.threads import Thread, get_thread

router = APIRouter(tags=["runs"], route_class=StrictJsonRoute)


ThreadStreamMode = Literal["run_modes", "lifecycle", "state_update"]
#: A thread's runs a thread stream has not sent yet: those active when it joined or made since, in the
#: order they run (a delayed run's ``created_at`` is when it is due).
THREAD_RUNS_TO_STREAM = """
SELECT * FROM runs
WHERE thread_id = %(thread)s AND run_id <> ALL(%(seen)s::uuid[])
  AND (status IN ('pending', 'running') OR created_at >= %(since)s OR finished_at >= %(since)s)
ORDER BY created_at, run_id
"""
RUN_CREATED = "SELECT created_at FROM runs WHERE run_id = %s AND thread_id = %s"
#: The thread's latest root checkpoint when a stream joins (the server's clock with it).
LATEST_CHECKPOINT = """
SELECT (SELECT max(checkpoint_id) FROM checkpoints WHERE thread_id = %(thread)s AND checkpoint_ns = '') AS checkpoint_id,
       now() AS now
"""
#: Root checkpoints written by state updates (not by runs) after ``seen``, and whether the thread is still there.
STATE_UPDATES_AFTER = """
SELECT EXISTS (SELECT 1 FROM threads WHERE thread_id = %(thread)s::uuid) AS exists,
       ARRAY(SELECT checkpoint_id FROM checkpoints
             WHERE thread_id = %(thread)s::text AND checkpoint_ns = '' AND checkpoint_id > %(seen)s
               AND metadata ->> 'source' = 'update'
             ORDER BY checkpoint_id) AS updates
"""


def _thread_stream_modes(values: list[str]) -> set[ThreadStreamMode]:
    modes = query_modes(values)
    unknown = sorted(modes - {"run_modes", "lifecycle", "state_update"})
    if unknown:
        raise HTTPException(
            422, detail=f"stream_mode: unknown {unknown}; use run_modes, lifecycle, state_update"
        )
    return cast(set[ThreadStreamMode], modes) or {"run_modes"}


async def thread_events(
    queue: RunQueue,
    tenant: str,
    thread: Thread,
    modes: set[ThreadStreamMode],
    resume: tuple[str, int] | None,
    *,
    from_start: bool = False,
    replayed: Callable[[Run], bool] = lambda run: True,
) -> AsyncIterator[dict[str, str]]:
    """Every run of the thread as it runs (ids ``<run_id>:<seq>``), each closed by a ``run_done``
    metadata event; state updates made through the API as ``state_update``. Until the client leaves or
    the thread is deleted. ``from_start``: the thread's earlier runs first (those whose events are kept
    and that ``replayed`` keeps; a run made after the client joined is always streamed)."""
    pool = queue.resources.database.pool
    thread_id = str(thread.thread_id)
    async with pool.connection() as conn:
        latest = await (await conn.execute(LATEST_CHECKPOINT, {"thread": thread_id})).fetchone()
    assert latest is not None
    joined: datetime = latest["now"]
    since: datetime = thread.created_at if from_start else joined
    seen_checkpoint = latest["checkpoint_id"]
    seen: list[uuid.UUID] = []
    if resume is not None:
        async with pool.connection() as conn:
            row = await (await conn.execute(RUN_CREATED, (resume[0], thread_id))).fetchone()
        if row is not None:
            since = row["created_at"]
    while True:
        async with pool.connection() as conn:
            runs = await (
                await conn.execute(THREAD_RUNS_TO_STREAM, {"thread": thread_id, "seen": seen, "since": since})
            ).fetchall()
        for row in runs:
            run = Run.from_row(row)
            seen.append(run.run_id)
            if run.created_at < joined and not replayed(run):
                continue
            after_seq = resume[1] if resume is not None and resume[0] == str(run.run_id) else None
            if after_seq is not None and after_seq >= STREAM_DONE_SEQ:
                continue  # the client has all of it
            async for item in run_events(queue, StreamedRun.of(run), after_seq, False):
                event = item["event"]
                if event == "end":
                    item = {
                        "event": "metadata",
                        "data": json.dumps({"status": "run_done", "run_id": str(run.run_id)}),
                    }
                    item["id"] = f"{run.run_id}:{STREAM_DONE_SEQ}"
                elif "id" in item:
                    item = {**item, "id": f"{run.run_id}:{item['id']}"}
                lifecycle = event in ("metadata", "end")
                if "run_modes" in modes or ("lifecycle" in modes and lifecycle):
                    yield item
            break  # runs made meanwhile are read again, in the order they run
        if runs:
            continue
        async with pool.connection() as conn:
            found = await (
                await conn.execute(STATE_UPDATES_AFTER, {"thread": thread_id, "seen": seen_checkpoint or ""})
            ).fetchone()
        assert found is not None
        if not found["exists"]:
            return
        for checkpoint_id in found["updates"]:
            seen_checkpoint = checkpoint_id
            if "state_update" in modes:
                # Read again: a run since the stream joined may have fixed the thread's graph.
                thread = await get_thread(pool, tenant, thread.thread_id) or thread
                snapshot = await thread_snapshot(
                    queue.resources, tenant, thread, {"checkpoint_id": checkpoint_id}
                )
                yield {
                    "event": "state_update",
                    "data": json.dumps(
                        {"state": snapshot_json(snapshot), "thread_id": thread_id}, default=str
                    ),
                    "id": f"{thread_id}:{checkpoint_id}",
                }
        await asyncio.sleep(STREAM_POLL_S)


#: The id of a run's ``run_done`` event in a thread stream: after every event of the run.
STREAM_DONE_SEQ = 2**31 - 1


@router.get("/threads/{thread_id}/stream")
async def join_thread_stream(
    thread_id: uuid.UUID,
    request: Request,
    tenant: TenantDep,
    resources: ResourcesDep,
    queue: QueueDep,
    stream_mode: Annotated[list[str] | None, Query()] = None,
    stream_modes: Annotated[list[str] | None, Query()] = None,
    last_event_id: Annotated[str | None, Header(alias="Last-Event-ID")] = None,
) -> EventSourceResponse:
    """The thread's runs as they run, and its state updates, until the client leaves: ``run_modes``
    (every event of every run, default), ``lifecycle`` (each run's start and ``run_done``),
    ``state_update``. ``Last-Event-ID`` resumes after that event of that run."""
    thread = await existing_thread(resources, tenant, thread_id)
    modes = _thread_stream_modes([*(stream_mode or []), *(stream_modes or [])])
    resume: tuple[str, int] | None = None
    if last_event_id:
        run_part, _, seq_part = last_event_id.partition(":")
        seq = event_seq(seq_part)
        with contextlib.suppress(ValueError):
            resume = (str(uuid.UUID(run_part)), seq) if seq is not None else None
    gauge = request.app.state.service.metrics.active_streams
    return EventSourceResponse(
        counted(gauge, thread_events(queue, tenant, thread, modes, resume)), ping=KEEPALIVE_S
    )
