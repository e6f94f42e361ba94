"""Stream events of runs: delivered live to subscribers in this process, and written to ``run_events``
in small batches so streams can be resumed (``Last-Event-ID``) and followed from any process.

Each event has a sequence number per run; a run taken over after a crash continues the numbering.
The last event of every run is ``end``.

A run nobody streams (``runs.wait``, a background run) has its events written with its end, in the
statement that stores its status, instead of in batches on the way: those batches were a statement and
a notification each, for events nobody read before the end (issue 46). A run is streamed once a stream
here subscribes to it, or a stream in another process announces it follows it (``WATCH_CHANNEL``); its
events written so far are then stored at once, and the later ones in batches as before. A run that
goes on longer than ``HOLD_UNWATCHED_S`` has its events stored in batches too, so a long run's events
outlive a crash of its process as before.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections import defaultdict
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from psycopg_pool import AsyncConnectionPool

from master_agent.storage.notifications import Notifier

logger = logging.getLogger(__name__)

FLUSH_EVERY_S = 0.05
FLUSH_BATCH = 64
#: How long the events of a run nobody streams wait for its end before they are stored in batches.
HOLD_UNWATCHED_S = 2.0
#: Runs whose streams a process remembers (streams elsewhere announce runs not yet claimed here).
WATCHED_KEPT = 4096
#: Wait before storing again events whose storing failed (they stay unwritten meanwhile).
FLUSH_RETRY_S = 1.0

SELECT_AFTER = "SELECT seq, event, data FROM run_events WHERE run_id = %s AND seq > %s ORDER BY seq"
SELECT_LAST = "SELECT coalesce(max(seq), 0) AS seq FROM run_events WHERE run_id = %s"
#: Tells every process that events of a run were stored, so streams of runs executing elsewhere read
#: them at once instead of at their next poll.
EVENTS_CHANNEL = "master_agent_run_events"
#: Tells every process that a stream follows a run (the payload), so the process executing it stores its
#: events as they come.
WATCH_CHANNEL = "master_agent_run_watched"
#: Writes a batch of events (parameters from ``event_params``): a CTE, so a run's end can write its
#: last events in the same statement.
INSERT_EVENTS = """stored_events AS (
    INSERT INTO run_events (run_id, seq, event, data)
    SELECT * FROM unnest(%(event_runs)s::uuid[], %(event_seqs)s::int[], %(event_names)s::text[],
                         %(event_data)s::jsonb[])
    ON CONFLICT DO NOTHING
)"""
#: A batch alone; ``RunEventLog.announce`` notifies the runs it holds once it is committed.
STORE_EVENTS = f"WITH {INSERT_EVENTS} SELECT 1 AS stored"
#: What a stream's queue receives when events of its run were stored by another process.
STORED_ELSEWHERE = "__stored_elsewhere__"


@dataclass(frozen=True)
class RunEvent:
    seq: int
    event: str
    data: Any


class RunEventLog:
    def __init__(self, pool: AsyncConnectionPool[Any], notifier: Notifier | None = None) -> None:
        self._pool = pool
        self.notifier = notifier or Notifier(pool)
        self._subscribers: dict[str, set[asyncio.Queue[RunEvent]]] = defaultdict(set)
        self._next_seq: dict[str, int] = {}
        self._pending: list[tuple[str, RunEvent]] = []
        #: ``monotonic()`` when the oldest pending event of each run was published.
        self._pending_since: dict[str, float] = {}
        #: Runs a stream follows (here or elsewhere): their events are stored as they come.
        self._watched: dict[str, None] = {}
        self._unflushed: dict[str, list[RunEvent]] = defaultdict(list)
        self._flusher: asyncio.Task[None] | None = None
        #: When the flusher, while it sleeps, wakes up to store what is due; no batch before ``_retry_at``
        #: after one failed.
        self._sleeping_until: float | None = None
        self._retry_at = 0.0
        #: One flush at a time; a run's end never waits for it unless the batch in flight holds
        #: events of that run (``_in_flight``), so ends of different runs never queue behind each other.
        self._write_lock = asyncio.Lock()
        self._in_flight: frozenset[str] = frozenset()
        self._batch_written = asyncio.Event()

    async def open_run(self, run_id: str, *, first_attempt: bool = False) -> None:
        """Before a worker publishes: continue numbering after any events an earlier attempt stored
        (a first attempt has none to read)."""
        if first_attempt:
            self._next_seq[run_id] = 1
            return
        async with self._pool.connection() as conn:
            row = await (await conn.execute(SELECT_LAST, (run_id,))).fetchone()
        self._next_seq[run_id] = int(row["seq"]) + 1 if row else 1

    def publish(self, run_id: str, event: str, data: Any, *, live: bool = True) -> RunEvent:
        """Number the event, queue it for storing and, with ``live``, hand it to this process's
        subscribers now (else the caller does, with ``deliver``)."""
        seq = self._next_seq.get(run_id, 1)
        self._next_seq[run_id] = seq + 1
        item = RunEvent(seq=seq, event=event, data=data)
        if live:
            self.deliver(run_id, item)
        self._pending.append((run_id, item))
        self._pending_since.setdefault(run_id, time.monotonic())
        self._unflushed[run_id].append(item)
        self._schedule_flush()
        return item

    def _due(self, run_id: str, now: float) -> bool:
        """Whether the pending events of ``run_id`` are stored by the next batch."""
        return run_id in self._watched or now - self._pending_since.get(run_id, now) >= HOLD_UNWATCHED_S

    def _schedule_flush(self) -> None:
        """A batch when pending events are due: soon for a run streamed, at ``HOLD_UNWATCHED_S`` for
        one nobody streams (its end stores them first, usually)."""
        if not self._pending_since:
            return
        now = time.monotonic()
        if any(self._due(run_id, now) for run_id in self._pending_since):
            at = now + FLUSH_EVERY_S
        else:
            at = min(self._pending_since.values()) + HOLD_UNWATCHED_S
        at = max(at, self._retry_at)
        if self._flusher is not None and not self._flusher.done():
            if self._sleeping_until is None or self._sleeping_until <= at:
                return  # storing now (it schedules again after), or due by then anyway
            self._flusher.cancel()  # only sleeping: it is woken sooner
        self._sleeping_until = at
        self._flusher = asyncio.create_task(self._flush_at(at))

    async def _flush_at(self, at: float) -> None:
        await asyncio.sleep(max(0.0, at - time.monotonic()))
        self._sleeping_until = None
        if not await self.flush(due_only=True):
            self._retry_at = time.monotonic() + FLUSH_RETRY_S
        if self._flusher is asyncio.current_task():
            self._flusher = None
        self._schedule_flush()

    def watch(self, run_id: str) -> None:
        """A stream follows ``run_id``: its events are stored as they come, those pending first."""
        self._watched[run_id] = None
        while len(self._watched) > WATCHED_KEPT:
            del self._watched[next(iter(self._watched))]
        self._schedule_flush()

    def deliver(self, run_id: str, item: RunEvent) -> None:
        for queue in list(self._subscribers.get(run_id, ())):
            queue.put_nowait(item)

    def forget(self, run_id: str) -> None:
        """The run stopped executing here: what it left pending is stored by the next batch."""
        self._next_seq.pop(run_id, None)
        if run_id in self._pending_since:
            self.watch(run_id)
        else:
            self._watched.pop(run_id, None)

    @contextlib.asynccontextmanager
    async def storing(self, run_id: str) -> AsyncIterator[list[tuple[str, RunEvent]]]:
        """The events of ``run_id`` not written yet, for a caller that writes them in its own
        statement (``event_params``). A batch the flusher is writing that holds events of the run is
        stored first, so a run's end never commits before its earlier events; the events count as
        written, and are announced, only if the block succeeds (else they wait for the next flush).
        The caller commits inside the block."""
        while run_id in self._in_flight:
            await self._batch_written.wait()
        batch = [entry for entry in self._pending if entry[0] == run_id]
        self._pending = [entry for entry in self._pending if entry[0] != run_id]
        since = self._pending_since.pop(run_id, None)
        try:
            yield batch
        except BaseException:
            self._pending[:0] = batch
            if since is not None:
                self._pending_since[run_id] = since
            raise
        self.written(batch)
        self.announce(batch)

    def _take_due(self, due_only: bool) -> list[tuple[str, RunEvent]]:
        """Up to ``FLUSH_BATCH`` pending events to store now (with ``due_only``, of runs due only)."""
        now = time.monotonic()
        due = {run_id for run_id in self._pending_since if not due_only or self._due(run_id, now)}
        batch = [entry for entry in self._pending if entry[0] in due][:FLUSH_BATCH]
        taken = {id(entry) for entry in batch}
        self._pending = [entry for entry in self._pending if id(entry) not in taken]
        left = {run_id for run_id, _ in self._pending}
        for run_id in {run_id for run_id, _ in batch} - left:
            self._pending_since.pop(run_id, None)
        return batch

    async def flush(self, *, due_only: bool = False) -> bool:
        """Store pending events in batches: all of them, or (``due_only``) those of runs streamed or
        going on for ``HOLD_UNWATCHED_S``. False when a batch could not be stored (it waits for the
        next try)."""
        async with self._write_lock:
            while batch := self._take_due(due_only):
                self._in_flight = frozenset(run_id for run_id, _ in batch)
                self._batch_written.clear()
                try:
                    async with self._pool.connection() as conn:
                        await conn.execute(STORE_EVENTS, event_params(batch))
                except Exception:
                    logger.exception("storing %d run events failed; retrying", len(batch))
                    self._pending[:0] = batch
                    now = time.monotonic()
                    for run_id, _ in batch:
                        self._pending_since.setdefault(run_id, now)
                    return False
                finally:
                    self._in_flight = frozenset()
                    self._batch_written.set()
                self.written(batch)
                self.announce(batch)
        self._retry_at = 0.0
        return True

    def announce(self, batch: list[tuple[str, RunEvent]]) -> None:
        """Tell every process that events of the runs in ``batch`` are stored (call it after the commit)."""
        for run_id in dict.fromkeys(run_id for run_id, _ in batch):
            self.notifier.send(EVENTS_CHANNEL, run_id)

    def written(self, batch: list[tuple[str, RunEvent]]) -> None:
        for run_id, item in batch:
            unflushed = self._unflushed.get(run_id)
            if unflushed and item in unflushed:
                unflushed.remove(item)
            if not unflushed:
                self._unflushed.pop(run_id, None)

    def stored_elsewhere(self, run_id: str) -> None:
        """Another process stored events of ``run_id``: its streams here read them."""
        if run_id not in self._next_seq:  # a run executing here is delivered live already
            self.deliver(run_id, RunEvent(seq=0, event=STORED_ELSEWHERE, data=None))

    def subscribe(self, run_id: str) -> asyncio.Queue[RunEvent]:
        """Live events of ``run_id``; the run counts as streamed from now on, here and (announced) in
        the process executing it."""
        queue: asyncio.Queue[RunEvent] = asyncio.Queue()
        self._subscribers[run_id].add(queue)
        self.watch(run_id)
        if run_id not in self._next_seq:
            self.notifier.send(WATCH_CHANNEL, run_id)
        return queue

    def unsubscribe(self, run_id: str, queue: asyncio.Queue[RunEvent]) -> None:
        subscribers = self._subscribers.get(run_id)
        if subscribers is not None:
            subscribers.discard(queue)
            if not subscribers:
                self._subscribers.pop(run_id, None)

    async def read_after(self, run_id: str, seq: int) -> list[RunEvent]:
        """Stored events after ``seq``, plus ones this process has not written yet."""
        async with self._pool.connection() as conn:
            rows = await (await conn.execute(SELECT_AFTER, (run_id, seq))).fetchall()
        events = {int(row["seq"]): RunEvent(int(row["seq"]), row["event"], row["data"]) for row in rows}
        for item in self._unflushed.get(run_id, ()):
            if item.seq > seq:
                events.setdefault(item.seq, item)
        return [events[key] for key in sorted(events)]

    async def aclose(self) -> None:
        if self._flusher is not None:
            if self._sleeping_until is not None:
                self._flusher.cancel()  # what it waits to store is stored below
            with contextlib.suppress(Exception, asyncio.CancelledError):
                await self._flusher
        if not await self.flush():
            # The database is unreachable at shutdown: these events are lost with the process (the
            # runs they belong to are taken over and continue their numbering from what is stored).
            logger.error("%d run events could not be stored before shutdown", len(self._pending))
        if self._flusher is not None:
            self._flusher.cancel()
        await self.notifier.aclose()


def event_params(batch: list[tuple[str, RunEvent]]) -> dict[str, Any]:
    """Parameters of ``INSERT_EVENTS`` for ``batch``."""
    return {
        "event_runs": [run_id for run_id, _ in batch],
        "event_seqs": [item.seq for _, item in batch],
        "event_names": [item.event for _, item in batch],
        "event_data": [json.dumps(item.data, default=str) for _, item in batch],
    }
