"""What a queue keeps in its process: its run slots and the tenants holding them, the waiters for runs' ends,
the outputs of the runs executing here, and background tasks (webhooks among them)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import time
import uuid
from collections.abc import Callable, Coroutine
from typing import Any

from master_agent.evolution.webhooks import deliver_webhook_now
from master_agent.runtime.resources import RuntimeResources
from master_agent.runtime.run_events import RunEventLog
from master_agent.runtime.run_stages import ClaimTrigger, RunStage, StageObserver
from master_agent.runtime.runs.statements import (
    DONE_CHANNEL,
    POLL_S,
    SELECT_STATUS,
    TERMINAL,
    WAIT_POLL_MAX_S,
    CancelAction,
)


class RunBookkeeping:
    """This process's share of the runs: slots (fairly shared by tenants), waiters, outputs, background tasks."""

    def __init__(
        self,
        resources: RuntimeResources,
        *,
        on_finished: Callable[[str, float], None] | None = None,
        on_stage: StageObserver | None = None,
        on_claim: Callable[[ClaimTrigger], None] | None = None,
    ) -> None:
        self.resources = resources
        self.owner = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"
        self.lease_s = resources.settings.run_lease_s
        self.concurrency = resources.settings.run_concurrency
        self.outage_wait_s = resources.settings.outage_wait_s
        #: The claim loop's fallback poll (notifications wake it first).
        self.poll_s = resources.settings.run_poll_s
        self._slots = asyncio.Semaphore(self.concurrency)
        self._wake = asyncio.Event()
        #: Runs may be queued (one was stored pending, here or elsewhere, and the claim loop has not yet
        #: found the queue empty): a new run then queues behind them instead of taking a slot freed
        #: while the claim loop's claim is in flight (it so jumped runs queued for seconds: issue 46).
        self._backlog = False
        self._running: dict[str, asyncio.Task[None]] = {}
        self.tenant_slots = resources.settings.tenant_slots
        #: The tenant of each run executing here: the fewest held go first; none holds over ``tenant_slots``.
        self._running_tenant: dict[str, str] = {}
        self._waiters: dict[str, list[asyncio.Future[str]]] = {}
        #: Set while this process LISTENs for ends of runs elsewhere: waiters then need no polling (a
        #: reconnect wakes them all, for the ends it may have missed).
        self._listening = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self._on_finished = on_finished
        self._on_stage = on_stage
        self._on_claim = on_claim
        #: ``perf_counter()`` when each run executing here was claimed (or stored already claimed).
        self._claimed_at: dict[str, float] = {}
        self._cancelling: dict[str, CancelAction] = {}
        #: Cancel requests for runs not executing here when they came (``monotonic()`` of each): a run
        #: claimed here a moment before its cancel is stored as running before its task exists.
        self._cancels_unplaced: dict[str, float] = {}
        #: Runs executing here whose work is done and whose end is being stored: a cancel then would
        #: stop the storing (the run left 'running' under a lease), so it lets them end as they did.
        self._finishing: set[str] = set()
        self._background: set[asyncio.Task[Any]] = set()
        self._webhooks: set[asyncio.Task[None]] = set()
        #: What each run executing here will answer to ``runs.wait``, resolved when it ends.
        self._outputs: dict[str, asyncio.Future[Any]] = {}
        self.events = RunEventLog(resources.database.pool)

    @property
    def active(self) -> int:
        return len(self._running)

    def _wake_all(self) -> None:
        self._wake.set()
        for run_id in {*self._waiters, *self._outputs}:
            self._told_done(run_id, "unknown")

    def _wake_waiters(self, run_id: str, status: str) -> None:
        for future in self._waiters.pop(run_id, []):
            if not future.done():
                future.set_result(status)

    def _told_done(self, run_id: str, status: str) -> None:
        """A run's end told by another process (or, ``unknown``, maybe missed while not listening):
        its waiters wake, and a caller waiting here for the output of a run that does not execute here
        reads it from the database."""
        self._wake_waiters(run_id, status)
        if run_id not in self._running:
            self._resolve_output(run_id, None)

    def _resolve_output(self, run_id: str, output: Any) -> None:
        future = self._outputs.pop(run_id, None)
        if future is not None and not future.done():
            future.set_result(output)

    def _expect_output(self, run_id: str) -> None:
        """A caller here waits for a run just queued: should this process execute it, its output is
        kept for ``local_output`` as for a run started at once (its end elsewhere resolves it None)."""
        self._outputs.setdefault(run_id, asyncio.get_running_loop().create_future())

    async def local_output(self, run_id: str, within_s: float) -> Any:
        """What ``runs.wait`` answers for a run executing (or queued) in this process, as its worker
        kept it: no reads after the run. None when the run executes elsewhere, or ended in a way only
        the database tells (cancelled, taken over). TimeoutError when it runs longer than ``within_s``.
        While it is queued, its end is told by notification (another process executed it); the run
        is read as a safety net now and then, as ``wait`` does."""
        future = self._outputs.get(run_id)
        if future is None:
            return None
        deadline = time.monotonic() + within_s
        poll_s = POLL_S
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError
            step = WAIT_POLL_MAX_S if self._listening.is_set() else poll_s
            if run_id in self._running:
                step = remaining  # its end here resolves it
            with contextlib.suppress(TimeoutError):
                return await asyncio.wait_for(asyncio.shield(future), min(step, remaining))
            if run_id not in self._running and await self._ended_elsewhere(run_id):
                self._resolve_output(run_id, None)
            poll_s = min(poll_s * 2, WAIT_POLL_MAX_S)

    async def _ended_elsewhere(self, run_id: str) -> bool:
        """Whether the run is no longer pending or running (its end was not told here)."""
        async with self.resources.database.pool.connection() as conn:
            row = await (await conn.execute(SELECT_STATUS, (run_id,))).fetchone()
        return row is None or row["status"] in TERMINAL

    def _announce_done(self, run_id: str, status: str) -> None:
        self._told_done(run_id, status)
        self.events.notifier.send(DONE_CHANNEL, run_id)

    def spawn(self, work: Coroutine[Any, Any, Any]) -> asyncio.Task[Any]:
        """Run ``work`` in the background, kept alive until it is done."""
        task = asyncio.create_task(work)
        self._background.add(task)
        task.add_done_callback(self._background.discard)
        return task

    def _deliver_webhook(self, message_id: uuid.UUID) -> None:
        """Send a run's webhook now, retrying while this process runs (stopped with it: the scheduler
        leader takes the message up when it is due)."""
        task = asyncio.create_task(
            deliver_webhook_now(self.resources.database.pool, self.resources.settings, message_id)
        )
        self._webhooks.add(task)
        task.add_done_callback(self._webhooks.discard)

    def _held(self) -> dict[str, int]:
        """Run slots of this process each tenant holds."""
        held: dict[str, int] = {}
        for tenant in self._running_tenant.values():
            held[tenant] = held.get(tenant, 0) + 1
        return held

    def _full_tenants(self) -> list[str]:
        """Tenants at their cap of this process's run slots (none without ``tenant_slots``)."""
        if self.tenant_slots is None:
            return []
        return [tenant for tenant, count in self._held().items() if count >= self.tenant_slots]

    def _release(self, run_id: str) -> None:
        """A run executing here stopped: its slot is free again."""
        self._running.pop(run_id, None)
        self._running_tenant.pop(run_id, None)
        self._claimed_at.pop(run_id, None)
        self._slots.release()

    def _leave(self, run_id: str) -> None:
        """Stop executing a run here without finishing it (another worker will)."""
        self._release(run_id)
        self._resolve_output(run_id, None)
        self.events.forget(run_id)

    def _observe(self, stage: RunStage, seconds: float) -> None:
        if self._on_stage is not None:
            self._on_stage(stage, seconds)
