"""The runs queue: Postgres is the source of truth, any process may execute any run.

A run is claimed with ``FOR UPDATE SKIP LOCKED`` and held by a lease its worker renews with a
heartbeat. A run whose worker died (lease expired) is claimed again by any worker and continues from
its last checkpoint, so no finished step runs again. New runs wake workers through ``NOTIFY``: a run
that can start starts at once; the poll is only a fallback (a lost notification, an expired lease).
Tenants share a process's slots fairly: the queued run of the tenant holding the fewest slots here
goes first, and one tenant alone may take every slot (unless ``tenant_slots`` caps it on purpose).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import socket
import time
import uuid
from collections.abc import Callable, Coroutine
from datetime import datetime
from functools import partial
from typing import Any, Literal, cast

import psycopg
from pydantic import BaseModel, Field

from master_agent.errors import ConflictError, InputError
from master_agent.evolution.webhooks import deliver_webhook_now, enqueue_webhook
from master_agent.runtime.graph_runs import GraphRunEnd, RunOutcome, execute_graph_run
from master_agent.runtime.resources import RuntimeResources
from master_agent.runtime.run_events import (
    ANNOUNCE_EVENTS,
    EVENTS_CHANNEL,
    INSERT_EVENTS,
    STORE_EVENTS,
    RunEvent,
    RunEventLog,
    event_params,
)
from master_agent.runtime.run_stages import ClaimTrigger, RunStage, StageObserver, since_request
from master_agent.runtime.serialization import error_output
from master_agent.runtime.solve import SolveOutcome, record_failure, run_solution
from master_agent.storage.outages import is_outage, through_outages
from master_agent.storage.retention import delete_thread_rows

logger = logging.getLogger(__name__)

RunStatus = Literal["pending", "running", "success", "error", "interrupted"]
#: The error name of a run whose master agent's model failed (stream ``error`` events, run output).
MODEL_ERROR = "ModelError"
TERMINAL: frozenset[str] = frozenset({"success", "error", "interrupted"})
CHANNEL = "master_agent_runs"
CANCEL_CHANNEL = "master_agent_cancel"
#: Tells every process a run has finished, so waiters elsewhere answer at once instead of polling.
DONE_CHANNEL = "master_agent_run_done"
CancelAction = Literal["interrupt", "rollback"]
#: How often a waiter first re-reads a run executing elsewhere (it is woken by notifications first),
#: and how long the listener waits before reconnecting.
POLL_S = 0.5
#: A waiter for a run is woken by the run's end (here, or notified from elsewhere); it re-reads the run
#: after POLL_S, then less and less often (up to this), in case the notification was lost.
WAIT_POLL_MAX_S = 8.0

INSERT_RUN = """
INSERT INTO runs (run_id, tenant_id, thread_id, kind, solution_id, status)
VALUES (%s, %s, %s, %s, %s, 'pending')
"""
#: The claimable run whose thread has no other live or earlier run (runs on one thread go one at a
#: time, in order: the enqueue strategy) of the tenant holding the fewest of this process's slots
#: (``held``: tenant -> slots), oldest first. Tenants at their cap (``full_tenants``) wait.
#: ``queued_s``: how long the run waited since it was due.
CLAIM_RUN = """
UPDATE runs SET status = 'running', lease_owner = %(owner)s,
       lease_expires_at = now() + make_interval(secs => %(lease)s),
       started_at = coalesce(started_at, now()), attempts = attempts + 1, updated_at = now()
FROM (
    SELECT r.run_id, extract(epoch FROM clock_timestamp() - r.created_at) AS queued_s FROM runs r
    WHERE ((r.status = 'pending' AND r.created_at <= now())
           OR (r.status = 'running' AND r.lease_expires_at < now()))
      AND r.tenant_id <> ALL(%(full_tenants)s::text[])
      AND NOT (r.status = 'running' AND r.lease_owner = %(owner)s)
      AND NOT EXISTS (
          SELECT 1 FROM runs o
          WHERE o.thread_id = r.thread_id AND o.run_id <> r.run_id
            AND ((o.status = 'running' AND o.lease_expires_at >= now())
                 OR (o.status IN ('pending', 'running') AND o.created_at < r.created_at)))
    ORDER BY coalesce((%(held)s::jsonb ->> r.tenant_id)::int, 0), r.created_at
    FOR UPDATE OF r SKIP LOCKED
    LIMIT 1
) AS chosen
WHERE runs.run_id = chosen.run_id
RETURNING runs.run_id, runs.tenant_id, runs.thread_id, runs.kind, runs.solution_id, runs.attempts, runs.kwargs,
          chosen.queued_s
"""
#: A graph run, queued ('pending'), or already claimed by ``owner`` when this process executes it at once.
#: A delayed run (``after_seconds``) is created in the future, as langgraph-api does: no worker claims it
#: before then, and runs on its thread created before that go first.
INSERT_GRAPH_RUN = """
INSERT INTO runs (run_id, tenant_id, thread_id, kind, status, assistant_id, kwargs, metadata, multitask_strategy,
                  lease_owner, lease_expires_at, started_at, attempts, created_at, updated_at)
VALUES (%(run_id)s, %(tenant_id)s, %(thread_id)s, 'graph',
        CASE WHEN %(owner)s::text IS NULL THEN 'pending' ELSE 'running' END,
        %(assistant_id)s, %(kwargs)s, %(metadata)s, %(strategy)s, %(owner)s,
        CASE WHEN %(owner)s::text IS NULL THEN NULL ELSE now() + make_interval(secs => %(lease)s) END,
        CASE WHEN %(owner)s::text IS NULL THEN NULL ELSE now() END,
        CASE WHEN %(owner)s::text IS NULL THEN 0 ELSE 1 END,
        now() + make_interval(secs => %(after_seconds)s), now())
RETURNING *
"""
LOCK_THREAD = "SELECT thread_id FROM threads WHERE thread_id = %s FOR UPDATE"
#: A due run of another tenant is queued: a tenant already running here lets it go first.
OTHERS_QUEUED = """
SELECT 1 FROM runs WHERE status = 'pending' AND created_at <= now() AND tenant_id <> %s LIMIT 1
"""
#: Wakes the claim loops of every process; the payload is the delay of a delayed run (seconds), when
#: it falls due.
WAKE_WORKERS = f"SELECT pg_notify('{CHANNEL}', %s)"
ACTIVE_ON_THREAD = "SELECT 1 FROM runs WHERE thread_id = %s AND status IN ('pending', 'running') LIMIT 1"
#: A thread taking a run: busy, and the graph shape its runs use (kept when ``config`` is null); its
#: metadata stamped with the run's graph and assistant, as langgraph-api stamps them (so
#: ``threads.search(metadata={"graph_id": ...})`` finds it).
BUSY_THREAD = """
UPDATE threads SET status = 'busy', config = coalesce(%s::jsonb, config), updated_at = now(),
  metadata = metadata || jsonb_build_object('graph_id', %s::text, 'assistant_id', %s::text)
WHERE thread_id = %s
"""
MARK_THREAD = "UPDATE threads SET status = %s, updated_at = now() WHERE thread_id = %s"
FINISH_RUN = """
UPDATE runs SET status = %(status)s, error = %(error)s, finished_at = now(), updated_at = now(),
       lease_expires_at = NULL
WHERE run_id = %(run_id)s AND lease_owner = %(owner)s
"""
#: Wakes the workers when a run just finished was holding back queued runs of its thread.
WAKE_IF_QUEUED = f"""
SELECT pg_notify('{CHANNEL}', '') FROM runs WHERE thread_id = %(thread_id)s AND status = 'pending' LIMIT 1
"""
#: A run's end in one statement: its last events (those not written yet), its status, its thread's
#: status (``thread_key`` null for a thread with no row), and the wake-ups of waiters elsewhere, of
#: streams elsewhere, and of runs queued behind it on its thread.
END_RUN = f"""
WITH {INSERT_EVENTS},
finished AS ({FINISH_RUN}),
marked AS (
    UPDATE threads SET status = %(thread_status)s, updated_at = now(),
           "values" = CASE WHEN %(set_values)s THEN %(values)s::jsonb ELSE "values" END,
           interrupts = coalesce(%(interrupts)s::jsonb, interrupts)
    WHERE thread_id = %(thread_key)s
)
SELECT pg_notify('{DONE_CHANNEL}', %(done)s),
       (SELECT count(*) FROM ({ANNOUNCE_EVENTS}) AS announced) AS announced,
       (SELECT count(*) FROM ({WAKE_IF_QUEUED}) AS woken) AS woken
"""
RENEW_LEASES = """
UPDATE runs SET lease_expires_at = now() + make_interval(secs => %(lease)s)
WHERE lease_owner = %(owner)s AND status = 'running' AND run_id = ANY(%(runs)s)
"""
SELECT_RUN = "SELECT * FROM runs WHERE run_id = %s"
LOCK_RUN = "SELECT status, thread_id, kind FROM runs WHERE run_id = %s FOR UPDATE"
ACTIVE_RUNS_ON_THREAD = "SELECT run_id FROM runs WHERE thread_id = %s AND status IN ('pending', 'running')"
REQUEST_CANCEL = "UPDATE runs SET cancel_action = %s, updated_at = now() WHERE run_id = %s"
CANCEL_PENDING = """
UPDATE runs SET status = 'interrupted', cancel_action = 'interrupt', finished_at = now(), updated_at = now()
WHERE run_id = %s
"""
DELETE_RUN = "DELETE FROM runs WHERE run_id = %s"
#: The checkpoints a run wrote (LangGraph copies ``configurable.run_id`` into checkpoint metadata).
ROLLBACK_CHECKPOINTS = [
    """DELETE FROM checkpoint_writes w USING checkpoints c
       WHERE c.thread_id = %(thread)s AND c.metadata ->> 'run_id' = %(run)s
         AND w.thread_id = c.thread_id AND w.checkpoint_ns = c.checkpoint_ns AND w.checkpoint_id = c.checkpoint_id""",
    "DELETE FROM checkpoints WHERE thread_id = %(thread)s AND metadata ->> 'run_id' = %(run)s",
]
COUNT_BY_STATUS = "SELECT status, count(*) AS n FROM runs GROUP BY status"


class RunTakenOver(Exception):
    """Another worker took over a run this process was executing (its lease ran out meanwhile)."""


class Run(BaseModel):
    """A row of ``runs``."""

    run_id: uuid.UUID
    tenant_id: str
    thread_id: str
    kind: str
    solution_id: uuid.UUID | None
    status: RunStatus
    error: str | None = None
    attempts: int
    assistant_id: uuid.UUID | None = None
    request: dict[str, Any] = Field(default_factory=dict)
    """The run request as received (input or command, config, stream settings)."""
    metadata: dict[str, Any] = Field(default_factory=dict)
    multitask_strategy: str = "enqueue"
    created_at: datetime
    updated_at: datetime

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> Run:
        values = dict(row)
        values["request"] = values.pop("kwargs", None) or {}
        return cls.model_validate(values)


class RunQueue:
    """Enqueue runs, and execute claimed ones in this process (up to ``concurrency`` at once)."""

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
        self._tasks: list[asyncio.Task[None]] = []
        self._on_finished = on_finished
        self._on_stage = on_stage
        self._on_claim = on_claim
        #: ``perf_counter()`` when each run executing here was claimed (or stored already claimed).
        self._claimed_at: dict[str, float] = {}
        self._cancelling: dict[str, CancelAction] = {}
        self._background: set[asyncio.Task[Any]] = set()
        self._webhooks: set[asyncio.Task[None]] = set()
        #: What each run executing here will answer to ``runs.wait``, resolved when it ends.
        self._outputs: dict[str, asyncio.Future[Any]] = {}
        self.events = RunEventLog(resources.database.pool)

    @property
    def active(self) -> int:
        return len(self._running)

    async def enqueue_solution(self, *, tenant_id: str, thread_id: str, solution_id: str) -> str:
        run_id = str(uuid.uuid4())
        async with self.resources.database.pool.connection() as conn:
            await conn.execute(INSERT_RUN, (run_id, tenant_id, thread_id, "strategic_goal", solution_id))
            await conn.execute(WAKE_WORKERS, ("",))
        self._wake.set()
        return run_id

    async def enqueue_graph_run(
        self,
        *,
        tenant_id: str,
        thread_id: str,
        assistant_id: uuid.UUID,
        kwargs: dict[str, Any],
        metadata: dict[str, Any],
        multitask_strategy: str,
        thread_config: dict[str, Any] | None = None,
        execute_here: bool = False,
        run_id: str | None = None,
        after_seconds: int = 0,
    ) -> Run:
        """Queue a graph run on a thread. ``reject`` refuses it while another run is active there;
        ``enqueue`` queues it behind them. ``thread_config`` replaces the thread's stored graph shape.

        With ``execute_here``, a run that nothing holds back (no other run on its thread, a free slot
        in this process) is stored already claimed and starts at once, with no claim and no wake-up;
        its output is then kept in memory for ``local_output``."""
        if multitask_strategy not in ("reject", "enqueue", "interrupt", "rollback"):
            raise InputError("multitask_strategy", "use 'reject', 'enqueue', 'interrupt' or 'rollback'")
        run_id = run_id or str(uuid.uuid4())
        to_stop: list[str] = []
        slot = False
        began = time.perf_counter()
        try:
            # Two round trips: the lock and the look (a fresh snapshot, taken under the lock), then
            # the writes with the commit; the NOTIFY goes out when the transaction commits.
            async with (
                self.resources.database.pool.connection() as conn,
                conn.pipeline(),
                conn.transaction(),
            ):
                await conn.execute(LOCK_THREAD, (thread_id,))
                looked = await conn.execute(ACTIVE_ON_THREAD, (thread_id,))
                # A tenant already running here lets a queued run of another tenant go first.
                queued = (
                    await conn.execute(OTHERS_QUEUED, (tenant_id,)) if tenant_id in self._held() else None
                )
                active = await looked.fetchone()
                others = queued is not None and await queued.fetchone() is not None
                if active and multitask_strategy in ("interrupt", "rollback"):
                    to_stop = await self._active_runs(conn, thread_id)
                if multitask_strategy == "reject" and active:
                    raise ConflictError(
                        "Thread is already running a task. Wait for it to finish or choose a different "
                        "multitask strategy."
                    )
                if (
                    execute_here
                    and not after_seconds
                    and not active
                    and not self._slots.locked()
                    and not self._backlog
                    and not others
                    and tenant_id not in self._full_tenants()
                ):
                    await self._slots.acquire()  # free, so taken without waiting
                    slot = True
                inserted = await conn.execute(
                    INSERT_GRAPH_RUN,
                    {
                        "run_id": run_id,
                        "tenant_id": tenant_id,
                        "thread_id": thread_id,
                        "assistant_id": assistant_id,
                        "kwargs": json.dumps(kwargs),
                        "metadata": json.dumps(metadata),
                        "strategy": multitask_strategy,
                        "owner": self.owner if slot else None,
                        "lease": self.lease_s,
                        "after_seconds": after_seconds,
                    },
                )
                config = None if thread_config is None else json.dumps(thread_config)
                graph_id = kwargs.get("graph_id")
                await conn.execute(BUSY_THREAD, (config, graph_id, str(assistant_id), thread_id))
                if not slot:
                    await conn.execute(WAKE_WORKERS, (str(after_seconds) if after_seconds else "",))
            row = await inserted.fetchone()
        except BaseException:
            if slot:
                self._slots.release()
            raise
        assert row is not None  # INSERT ... RETURNING
        self._observe("enqueue", time.perf_counter() - began)
        if (accepted := since_request()) is not None:
            self._observe("accept", accepted)
        if slot:
            self._observe("queue_wait", 0.0)
            self._start(row)
        else:
            self._backlog = True
            self._wake.set()
        # The new run waits behind the old ones until they have stopped (claim order per thread).
        for old in to_stop:
            await self.cancel(old, action=cast(CancelAction, multitask_strategy))
        return Run.from_row(row)

    async def cancel(self, run_id: str, *, action: CancelAction = "interrupt") -> bool:
        """Stop a run: a pending one at once, a running one through the worker executing it (in any
        process). ``interrupt`` keeps its work so far; ``rollback`` removes the run and its checkpoints.
        False when the run had already finished."""
        pool = self.resources.database.pool
        async with pool.connection() as conn:
            async with conn.transaction():
                row = await (await conn.execute(LOCK_RUN, (run_id,))).fetchone()
                if row is None or row["status"] not in ("pending", "running"):
                    return False
                if row["status"] == "pending":
                    if action == "rollback":
                        await conn.execute(DELETE_RUN, (run_id,))
                    else:
                        await conn.execute(CANCEL_PENDING, (run_id,))
                    await _mark_thread(conn, str(row["thread_id"]), "idle")
                else:
                    await conn.execute(REQUEST_CANCEL, (action, run_id))
            if row["status"] == "running":
                await conn.execute("SELECT pg_notify(%s, %s)", (CANCEL_CHANNEL, run_id))
        if row["status"] == "running":
            self._cancel_local(run_id, action)
        else:
            await self._announce_done(run_id, "interrupted")
        return True

    def _wake_all(self) -> None:
        self._wake.set()
        for run_id in list(self._waiters):
            self._wake_waiters(run_id, "unknown")

    def _wake_waiters(self, run_id: str, status: str) -> None:
        for future in self._waiters.pop(run_id, []):
            if not future.done():
                future.set_result(status)

    def _resolve_output(self, run_id: str, output: Any) -> None:
        future = self._outputs.pop(run_id, None)
        if future is not None and not future.done():
            future.set_result(output)

    async def local_output(self, run_id: str, within_s: float) -> Any:
        """What ``runs.wait`` answers for a run executing in this process, as its worker kept it: no
        reads after the run. None when the run executes elsewhere, or ended in a way only the
        database tells (cancelled, taken over). TimeoutError when it runs longer than ``within_s``."""
        future = self._outputs.get(run_id)
        if future is None:
            return None
        return await asyncio.wait_for(asyncio.shield(future), within_s)

    async def _announce_done(self, run_id: str, status: str) -> None:
        self._wake_waiters(run_id, status)
        try:
            async with self.resources.database.pool.connection() as conn:
                await conn.execute("SELECT pg_notify(%s, %s)", (DONE_CHANNEL, run_id))
        except Exception:
            logger.warning("announcing the end of run %s failed; other processes will poll", run_id)

    def _cancel_local(self, run_id: str, action: CancelAction) -> None:
        task = self._running.get(run_id)
        if task is not None and run_id not in self._cancelling:
            self._cancelling[run_id] = action
            task.cancel()

    async def _active_runs(self, conn: Any, thread_id: str) -> list[str]:
        rows = await (await conn.execute(ACTIVE_RUNS_ON_THREAD, (thread_id,))).fetchall()
        return [str(row["run_id"]) for row in rows]

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

    async def list_for_thread(
        self, thread_id: str, *, limit: int, offset: int, status: str | None
    ) -> list[Run]:
        async with self.resources.database.pool.connection() as conn:
            rows = await (
                await conn.execute(
                    "SELECT * FROM runs WHERE thread_id = %s AND (%s::text IS NULL OR status = %s)"
                    " ORDER BY created_at DESC LIMIT %s OFFSET %s",
                    (thread_id, status, status, limit, offset),
                )
            ).fetchall()
        return [Run.from_row(row) for row in rows]

    async def get(self, run_id: str) -> Run | None:
        async with self.resources.database.pool.connection() as conn:
            row = await (await conn.execute(SELECT_RUN, (run_id,))).fetchone()
        return Run.from_row(row) if row else None

    async def wait(self, run_id: str, within_s: float | None = None) -> Run | None:
        """Until the run is finished (in any process) or ``within_s`` passes; the run as it is then."""
        deadline = None if within_s is None else time.monotonic() + within_s
        poll_s = POLL_S
        while True:
            # Registered before reading the run, so a finish in between still wakes this waiter.
            future: asyncio.Future[str] = asyncio.get_running_loop().create_future()
            self._waiters.setdefault(run_id, []).append(future)
            run = await self.get(run_id)
            if run is None or run.status in TERMINAL:
                return run
            remaining = None if deadline is None else deadline - time.monotonic()
            if remaining is not None and remaining <= 0:
                return run
            with contextlib.suppress(TimeoutError):
                # Woken at once when it finishes here or elsewhere (DONE_CHANNEL); the re-read is a
                # fallback, backing off so many waiters cost little while runs queue.
                await asyncio.wait_for(future, poll_s if remaining is None else min(poll_s, remaining))
            poll_s = min(poll_s * 2, WAIT_POLL_MAX_S)

    async def counts(self) -> dict[str, int]:
        async with self.resources.database.pool.connection() as conn:
            rows = await (await conn.execute(COUNT_BY_STATUS)).fetchall()
        return {row["status"]: int(row["n"]) for row in rows}

    # -- worker ------------------------------------------------------------------------------

    async def start(self) -> None:
        self._tasks = [
            asyncio.create_task(self._claim_loop(), name="runs-claim"),
            asyncio.create_task(self._heartbeat_loop(), name="runs-heartbeat"),
            asyncio.create_task(self._listen_loop(), name="runs-listen"),
        ]

    async def stop(self) -> None:
        for task in [*self._tasks, *self._running.values(), *self._webhooks]:
            task.cancel()
        await asyncio.gather(*self._tasks, *self._running.values(), *self._webhooks, return_exceptions=True)
        self._tasks = []
        await self.events.aclose()

    async def _claim_loop(self) -> None:
        trigger: ClaimTrigger = "wake"
        while True:
            if self._slots.locked():
                trigger = "wake"  # a run ending here frees the slot: an in-process wake-up
            await self._slots.acquire()
            # Cleared before the claim: a run enqueued while it is in flight wakes the next one.
            self._wake.clear()
            try:
                claimed = await self._claim()
            except Exception:
                logger.exception("claiming a run failed")
                claimed = None
            if claimed is None:
                self._backlog = False  # the queue holds nothing claimable: new runs may start at once
                self._slots.release()
                try:
                    await asyncio.wait_for(self._wake.wait(), self.poll_s)
                    trigger = "wake"
                except TimeoutError:
                    trigger = "poll"
                continue
            if self._on_claim is not None:
                self._on_claim(trigger)
            self._start(claimed)

    def _wake_claims(self, delay: str) -> None:
        """Wake the claim loop now, and again when a delayed run (``delay`` seconds) falls due."""
        self._backlog = True
        self._wake.set()
        with contextlib.suppress(ValueError):
            if float(delay) > 0:
                asyncio.get_running_loop().call_later(float(delay), self._wake.set)

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

    def _start(self, claimed: dict[str, Any]) -> None:
        """Execute a run claimed by this process (its slot already taken)."""
        run_id = str(claimed["run_id"])
        self._claimed_at[run_id] = time.perf_counter()
        self._running_tenant[run_id] = str(claimed["tenant_id"])
        self._outputs[run_id] = asyncio.get_running_loop().create_future()
        self._running[run_id] = asyncio.create_task(self._execute(claimed), name=f"run-{run_id}")

    async def _claim(self) -> dict[str, Any] | None:
        async with self.resources.database.pool.connection() as conn:
            began = time.perf_counter()
            row: dict[str, Any] | None = await (
                await conn.execute(
                    CLAIM_RUN,
                    {
                        "owner": self.owner,
                        "lease": self.lease_s,
                        "full_tenants": self._full_tenants(),
                        "held": json.dumps(self._held()),
                    },
                )
            ).fetchone()
        if row is not None:
            self._observe("claim", time.perf_counter() - began)
            self._observe("queue_wait", max(0.0, float(row.pop("queued_s"))))
        return row

    def _observe(self, stage: RunStage, seconds: float) -> None:
        if self._on_stage is not None:
            self._on_stage(stage, seconds)

    def _publisher(self, run_id: str) -> Callable[[str, Any], RunEvent]:
        """Publishes the run's events; the first one's time since the claim is observed."""
        first = True

        def publish(event: str, data: Any) -> RunEvent:
            nonlocal first
            if first:
                first = False
                if (claimed_at := self._claimed_at.get(run_id)) is not None:
                    self._observe("first_event", time.perf_counter() - claimed_at)
            return self.events.publish(run_id, event, data)

        return publish

    async def _execute(self, claimed: dict[str, Any]) -> None:
        run_id = str(claimed["run_id"])
        started = self._claimed_at.get(run_id, time.perf_counter())
        status, error = "error", None
        output: Any = None
        unfinished: BaseException | None = None  # what ended a strategic goal's run before its end
        # The thread row keeps its values unless the run leaves new ones.
        thread_values = _thread_values_params(None, None)
        graph_run = claimed["kind"] == "graph"
        await self.events.open_run(run_id, first_attempt=claimed["attempts"] == 1)
        try:
            end = await self._work_through_outages(claimed)
            status, output, failure = end.status, end.output, end.error
            thread_values = _thread_values_params(end.output, end.interrupts)
            if failure:
                logger.warning("run %s ended error: the master agent's model failed: %s", run_id, failure)
                error = f"{MODEL_ERROR}: {failure}"
                output = error_output(failure, MODEL_ERROR)
                self.events.publish(run_id, "error", {"error": MODEL_ERROR, "message": failure})
        except RunTakenOver:
            # Another worker took the run over while the database was away: it carries it on.
            self._leave(run_id)
            return
        except asyncio.CancelledError:
            action = self._cancelling.get(run_id)
            if action is None:
                # Shutting down: leave the run 'running'; its lease expires and a worker continues it.
                self._leave(run_id)
                raise
            # Shielded: a second cancel request for the same run must not stop the bookkeeping.
            await asyncio.shield(self._finish_cancelled(claimed, action))
            return
        except Exception as failure:
            logger.exception("run %s failed", run_id)
            error = f"{type(failure).__name__}: {failure}"
            unfinished = failure
            output = error_output(str(failure), type(failure).__name__)
            self.events.publish(run_id, "error", {"error": type(failure).__name__, "message": str(failure)})
        # Streams see the end once the run's status is stored, so a client reading the run then
        # finds it finished.
        ending = time.perf_counter()
        last = self.events.publish(run_id, "end", None, live=False)
        thread_id = str(claimed["thread_id"])
        stored = False

        webhook = (claimed.get("kwargs") or {}).get("webhook") if graph_run else None
        webhook_id: uuid.UUID | None = None

        async def store_end() -> None:
            nonlocal webhook_id
            async with (
                self.events.storing(run_id) as batch,
                self.resources.database.pool.connection() as conn,
                conn.transaction() if webhook else contextlib.nullcontext(),
            ):
                await conn.execute(
                    END_RUN,
                    {
                        **event_params(batch),
                        "status": status,
                        "error": error,
                        "run_id": run_id,
                        "owner": self.owner,
                        "thread_status": {"success": "idle"}.get(status, status),
                        "thread_key": _thread_key(thread_id) if graph_run else None,
                        **thread_values,
                        "done": run_id,
                        "thread_id": thread_id,
                    },
                )
                if webhook:
                    webhook_id = await enqueue_webhook(conn, run_id, webhook, *_webhook_result(output))
                if unfinished is not None and not graph_run:
                    # The goal's retries are spent: only now is it an error.
                    await record_failure(conn, str(claimed["solution_id"]), unfinished)

        try:
            await through_outages(self.resources.database.health, store_end, within_s=self.outage_wait_s)
            stored = True
            finished = time.perf_counter()
            self._observe("end", finished - ending)
            self._observe("run", finished - started)
            if webhook_id is not None:
                self._deliver_webhook(webhook_id)
            if graph_run and (claimed.get("kwargs") or {}).get("on_completion") == "delete":
                # A stateless background run: its thread was only its own.
                await through_outages(
                    self.resources.database.health,
                    partial(self._delete_thread, thread_id),
                    within_s=self.outage_wait_s,
                )
        finally:
            self.events.forget(run_id)
            self._release(run_id)
            self.events.deliver(run_id, last)
            self._wake_waiters(run_id, status)
            # Unstored, the database still says 'running': waiters must read what becomes of it.
            self._resolve_output(run_id, output if stored else None)
        if self._on_finished is not None:
            self._on_finished(status, time.perf_counter() - started)

    async def _delete_thread(self, thread_id: str) -> None:
        async with self.resources.database.pool.connection() as conn, conn.transaction():
            await delete_thread_rows(conn, [thread_id])

    async def _work_through_outages(self, claimed: dict[str, Any]) -> GraphRunEnd:
        """Execute the run; when the database goes away under it, wait until it is back and continue
        from the run's last checkpoint (steps after it run again; their events are sent again)."""
        run_id = str(claimed["run_id"])
        attempts = 0

        async def attempt() -> GraphRunEnd:
            nonlocal attempts
            attempts += 1
            return await self._work(claimed, resumed=attempts > 1)

        async def still_owned() -> None:
            if not await self._still_owned(run_id):
                raise RunTakenOver(run_id)

        return await through_outages(
            self.resources.database.health, attempt, within_s=self.outage_wait_s, before_retry=still_owned
        )

    async def _work(self, claimed: dict[str, Any], *, resumed: bool) -> GraphRunEnd:
        """How the run ended: its status, its output (None: read from the thread) and, when the master
        agent's model failed, why (the run then ends ``error``; the thread keeps the agent's answer)."""
        run_id = str(claimed["run_id"])
        if not resumed and (claimed_at := self._claimed_at.get(run_id)) is not None:
            self._observe("start", time.perf_counter() - claimed_at)
        publish = self._publisher(run_id)
        if claimed["kind"] == "graph":
            return await execute_graph_run(self.resources, claimed, publish, resumed=resumed)
        # A strategic goal streams its call tree as custom events, then the solution as values; it
        # continues from its last checkpoint by itself.
        outcome: SolveOutcome = await run_solution(
            self.resources, str(claimed["solution_id"]), on_event=lambda event: publish("custom", event)
        )
        publish("values", outcome.model_dump(mode="json"))
        failure = outcome.solution.model_failure if outcome.solution else None
        if failure:
            return GraphRunEnd(status="error", output=None, error=failure)
        status = {"interrupted": "interrupted", "error": "error"}.get(outcome.status, "success")
        return GraphRunEnd(status=cast(RunOutcome, status), output=None)

    async def _still_owned(self, run_id: str) -> bool:
        """Renew the lease of a run this process executes; False when another worker took it over."""
        async with self.resources.database.pool.connection() as conn:
            renewed = await conn.execute(
                RENEW_LEASES, {"lease": self.lease_s, "owner": self.owner, "runs": [run_id]}
            )
            return renewed.rowcount == 1

    async def _finish_cancelled(self, claimed: dict[str, Any], action: CancelAction) -> None:
        run_id, thread_id = str(claimed["run_id"]), str(claimed["thread_id"])
        last = self.events.publish(run_id, "end", None, live=False)
        webhook = (claimed.get("kwargs") or {}).get("webhook") if claimed["kind"] == "graph" else None
        webhook_id: uuid.UUID | None = None

        async def store_end() -> None:
            nonlocal webhook_id
            # The run's last events are stored with its status, as at any run's end.
            async with (
                self.events.storing(run_id) as batch,
                self.resources.database.pool.connection() as conn,
                conn.transaction(),
            ):
                await conn.execute(STORE_EVENTS, event_params(batch))
                if action == "rollback":
                    for statement in ROLLBACK_CHECKPOINTS:
                        await conn.execute(statement, {"thread": thread_id, "run": run_id})
                    await conn.execute(DELETE_RUN, (run_id,))
                else:
                    await conn.execute(
                        FINISH_RUN,
                        {"status": "interrupted", "error": None, "run_id": run_id, "owner": self.owner},
                    )
                    if webhook:
                        webhook_id = await enqueue_webhook(conn, run_id, webhook, None, None)
                await _mark_thread(conn, thread_id, "idle")
                # the run that interrupted this one
                await conn.execute(WAKE_IF_QUEUED, {"thread_id": thread_id})

        try:
            await through_outages(self.resources.database.health, store_end, within_s=self.outage_wait_s)
        finally:
            self.events.forget(run_id)
            self.events.deliver(run_id, last)
            self._release(run_id)
            self._cancelling.pop(run_id, None)
            self._resolve_output(run_id, None)
        await self._announce_done(run_id, "interrupted")
        if webhook_id is not None:
            self._deliver_webhook(webhook_id)

    async def _heartbeat_loop(self) -> None:
        while True:
            await asyncio.sleep(self.lease_s / 3)
            if not self._running:
                continue
            try:
                async with self.resources.database.pool.connection() as conn:
                    await conn.execute(
                        RENEW_LEASES,
                        {"lease": self.lease_s, "owner": self.owner, "runs": list(self._running)},
                    )
            except Exception as error:
                if not is_outage(error):
                    logger.exception("renewing run leases failed")
                await self.resources.database.health.suspect(error)

    async def _cancel_requested(self, run_id: str) -> None:
        if run_id in self._running:
            action = await self._cancel_action(run_id)
            if action is not None:
                self._cancel_local(run_id, action)

    async def _cancel_action(self, run_id: str) -> CancelAction | None:
        async with self.resources.database.pool.connection() as conn:
            row = await (
                await conn.execute("SELECT cancel_action FROM runs WHERE run_id = %s", (run_id,))
            ).fetchone()
        return cast(CancelAction, row["cancel_action"]) if row and row["cancel_action"] else None

    async def _listen_loop(self) -> None:
        """Wake the claim loop when any process enqueues a run; pass on cancel requests, ends of runs
        and stored events from other processes."""
        while True:
            try:
                async with await psycopg.AsyncConnection.connect(
                    self.resources.database.uri, autocommit=True
                ) as conn:
                    await conn.execute(f"LISTEN {CHANNEL}")
                    await conn.execute(f"LISTEN {CANCEL_CHANNEL}")
                    await conn.execute(f"LISTEN {DONE_CHANNEL}")
                    await conn.execute(f"LISTEN {EVENTS_CHANNEL}")
                    # Ends and enqueues while not listening were missed: everyone reads again.
                    self._wake_all()
                    async for notice in conn.notifies():
                        if notice.channel == CANCEL_CHANNEL:
                            await self._cancel_requested(notice.payload)
                        elif notice.channel == DONE_CHANNEL:
                            self._wake_waiters(notice.payload, "done")
                            self.events.stored_elsewhere(notice.payload)
                        elif notice.channel == EVENTS_CHANNEL:
                            self.events.stored_elsewhere(notice.payload)
                        else:
                            self._wake_claims(notice.payload)
            except asyncio.CancelledError:
                raise
            except Exception as error:
                # The listening connection is the first to notice the server going away.
                logger.warning("run notifications lost; polling until they reconnect: %s", error)
                await self.resources.database.health.suspect(error)
                await asyncio.sleep(POLL_S)


def _webhook_result(output: Any) -> tuple[Any, dict[str, Any] | None]:
    """A run's output as its webhook reports it: the values, or the error."""
    if isinstance(output, dict) and "__error__" in output:
        return None, output["__error__"]
    if isinstance(output, dict):
        return {key: value for key, value in output.items() if key != "__interrupt__"}, None
    return output, None


def _thread_values_params(output: Any, interrupts: dict[str, Any] | None) -> dict[str, Any]:
    """The thread row's ``values`` and ``interrupts`` after a run: its last values (kept as they were
    when the run streamed none, or failed before any) and its pending interrupts by task."""
    values, failed = _webhook_result(output)
    known = output is not None and failed is None
    return {
        "set_values": known,
        "values": json.dumps(values) if known else None,
        "interrupts": json.dumps(interrupts) if interrupts is not None else None,
    }


def _thread_key(thread_id: str) -> uuid.UUID | None:
    # Threads of the LangGraph API have UUIDs; a strategic goal's thread has no row.
    try:
        return uuid.UUID(thread_id)
    except ValueError:
        return None


async def _mark_thread(conn: Any, thread_id: str, status: str) -> None:
    key = _thread_key(thread_id)
    if key is not None:
        await conn.execute(MARK_THREAD, (status, key))
