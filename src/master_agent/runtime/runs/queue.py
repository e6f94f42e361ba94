"""``RunQueue``: enqueue runs (solutions and graph runs, with their multitask strategies), read them, wait for
their ends, and start or stop this process's worker."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
import uuid
from typing import Any, cast

from master_agent.errors import ConflictError, InputError
from master_agent.runtime.run_stages import since_request
from master_agent.runtime.runs.claims import RunClaims
from master_agent.runtime.runs.records import Run
from master_agent.runtime.runs.statements import (
    ACTIVE_ON_THREAD,
    CHANNEL,
    COUNT_BY_STATUS,
    ENQUEUE_GRAPH_RUN,
    INSERT_RUN,
    LOCK_THREAD,
    OTHERS_QUEUED,
    POLL_S,
    SELECT_RUN,
    TERMINAL,
    WAIT_POLL_MAX_S,
    CancelAction,
)


class RunQueue(RunClaims):
    """Enqueue runs, and execute claimed ones in this process (up to ``concurrency`` at once)."""

    async def enqueue_solution(self, *, tenant_id: str, thread_id: str, solution_id: str) -> str:
        run_id = str(uuid.uuid4())
        async with self.resources.database.pool.connection() as conn:
            await conn.execute(INSERT_RUN, (run_id, tenant_id, thread_id, "strategic_goal", solution_id))
        self.events.notifier.send(CHANNEL)
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
        in this process) is stored already claimed and starts at once, with no claim and no wake-up.
        Its output is kept in memory for ``local_output``, as is a queued one's should this process
        execute it."""
        if multitask_strategy not in ("reject", "enqueue", "interrupt", "rollback"):
            raise InputError("multitask_strategy", "use 'reject', 'enqueue', 'interrupt' or 'rollback'")
        run_id = run_id or str(uuid.uuid4())
        to_stop: list[str] = []
        slot = False
        began = time.perf_counter()
        if execute_here:
            # Before the run is stored: this process may claim it, and end it, the moment it is.
            self._expect_output(run_id)
        try:
            # Two round trips: the lock and the look (a fresh snapshot, taken under the lock), then
            # the write with the commit; a queued run's NOTIFY goes out after the commit. No BEGIN: a
            # pipeline's statements up to its sync (at its end) are one implicit transaction, and
            # psycopg's explicit one cost a round trip each to open and to commit it.
            async with self.resources.database.pool.connection() as conn, conn.pipeline():
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
                config = None if thread_config is None else json.dumps(thread_config)
                # One statement: the run and its busy thread are written together or not at all.
                inserted = await conn.execute(
                    ENQUEUE_GRAPH_RUN,
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
                        "thread_config": config,
                        "graph_id": kwargs.get("graph_id"),
                        "assistant_key": str(assistant_id),
                    },
                )
            row = await inserted.fetchone()
        except BaseException:
            if slot:
                self._slots.release()
            self._outputs.pop(run_id, None)
            raise
        assert row is not None  # INSERT ... RETURNING
        self._observe("enqueue", time.perf_counter() - began)
        if (accepted := since_request()) is not None:
            self._observe("accept", accepted)
        if slot:
            self._observe("queue_wait", 0.0)
            self._start(row)
        else:
            self.events.notifier.send(CHANNEL, str(after_seconds) if after_seconds else "")
            self._backlog = True
            self._wake.set()
        # The new run waits behind the old ones until they have stopped (claim order per thread).
        for old in to_stop:
            await self.cancel(old, action=cast(CancelAction, multitask_strategy))
        return Run.from_row(row)

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

    async def list_for_assistant(self, tenant_id: str, assistant_id: uuid.UUID, *, limit: int) -> list[Run]:
        """The assistant's runs on any of the tenant's threads, newest first."""
        async with self.resources.database.pool.connection() as conn:
            rows = await (
                await conn.execute(
                    "SELECT * FROM runs WHERE tenant_id = %s AND assistant_id = %s"
                    " ORDER BY created_at DESC LIMIT %s",
                    (tenant_id, assistant_id, limit),
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
            # Woken at once when it finishes here or elsewhere (DONE_CHANNEL). While notifications come,
            # the re-read is only a rare safety net: polling every waiter while runs queue cost several
            # reads per run at 100 clients (issue 46). Without them (the listener reconnecting, a queue
            # not started) it backs off from POLL_S.
            step = WAIT_POLL_MAX_S if self._listening.is_set() else poll_s
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(future, step if remaining is None else min(step, remaining))
            poll_s = min(poll_s * 2, WAIT_POLL_MAX_S)

    async def counts(self) -> dict[str, int]:
        async with self.resources.database.pool.connection() as conn:
            rows = await (await conn.execute(COUNT_BY_STATUS)).fetchall()
        return {row["status"]: int(row["n"]) for row in rows}

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
        self._listening.clear()
        await self.events.aclose()
