"""The runs queue: Postgres is the source of truth, any process may execute any run.

A run is claimed with ``FOR UPDATE SKIP LOCKED`` and held by a lease its worker renews with a
heartbeat. A run whose worker died (lease expired) is claimed again by any worker and continues from
its last checkpoint, so no finished step runs again. New runs wake workers through ``NOTIFY`` (and a
short poll as a fallback).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import time
import uuid
from collections.abc import Callable
from typing import Any, Literal

import psycopg
from pydantic import BaseModel

from master_agent.runtime.resources import RuntimeResources
from master_agent.runtime.solve import SolveOutcome, run_solution

logger = logging.getLogger(__name__)

RunStatus = Literal["pending", "running", "success", "error", "interrupted"]
TERMINAL: frozenset[str] = frozenset({"success", "error", "interrupted"})
CHANNEL = "master_agent_runs"
POLL_S = 0.5

INSERT_RUN = """
INSERT INTO runs (run_id, tenant_id, thread_id, kind, solution_id, status)
VALUES (%s, %s, %s, %s, %s, 'pending')
"""
CLAIM_RUN = """
UPDATE runs SET status = 'running', lease_owner = %(owner)s,
       lease_expires_at = now() + make_interval(secs => %(lease)s),
       started_at = coalesce(started_at, now()), attempts = attempts + 1, updated_at = now()
WHERE run_id = (
    SELECT run_id FROM runs
    WHERE status = 'pending' OR (status = 'running' AND lease_expires_at < now())
    ORDER BY created_at
    FOR UPDATE SKIP LOCKED
    LIMIT 1
)
RETURNING run_id, tenant_id, thread_id, kind, solution_id, attempts
"""
RENEW_LEASES = """
UPDATE runs SET lease_expires_at = now() + make_interval(secs => %(lease)s)
WHERE lease_owner = %(owner)s AND status = 'running' AND run_id = ANY(%(runs)s)
"""
FINISH_RUN = """
UPDATE runs SET status = %(status)s, error = %(error)s, finished_at = now(), updated_at = now(),
       lease_owner = NULL, lease_expires_at = NULL
WHERE run_id = %(run_id)s AND lease_owner = %(owner)s
"""
SELECT_RUN = """
SELECT run_id, tenant_id, thread_id, kind, solution_id, status, error, attempts, created_at,
       started_at, finished_at
FROM runs WHERE run_id = %s
"""
COUNT_BY_STATUS = "SELECT status, count(*) AS n FROM runs GROUP BY status"


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


class RunQueue:
    """Enqueue runs, and execute claimed ones in this process (up to ``concurrency`` at once)."""

    def __init__(
        self, resources: RuntimeResources, *, on_finished: Callable[[str, float], None] | None = None
    ) -> None:
        self.resources = resources
        self.owner = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"
        self.lease_s = resources.settings.run_lease_s
        self.concurrency = resources.settings.run_concurrency
        self._slots = asyncio.Semaphore(self.concurrency)
        self._wake = asyncio.Event()
        self._running: dict[str, asyncio.Task[None]] = {}
        self._waiters: dict[str, list[asyncio.Future[str]]] = {}
        self._tasks: list[asyncio.Task[None]] = []
        self._on_finished = on_finished

    @property
    def active(self) -> int:
        return len(self._running)

    async def enqueue_solution(self, *, tenant_id: str, thread_id: str, solution_id: str) -> str:
        run_id = str(uuid.uuid4())
        async with self.resources.database.pool.connection() as conn:
            await conn.execute(INSERT_RUN, (run_id, tenant_id, thread_id, "strategic_goal", solution_id))
            await conn.execute(f"NOTIFY {CHANNEL}")
        self._wake.set()
        return run_id

    async def get(self, run_id: str) -> Run | None:
        async with self.resources.database.pool.connection() as conn:
            row = await (await conn.execute(SELECT_RUN, (run_id,))).fetchone()
        return Run.model_validate(row) if row else None

    async def wait(self, run_id: str, within_s: float | None = None) -> Run | None:
        """Until the run is finished (in any process) or ``within_s`` passes; the run as it is then."""
        deadline = None if within_s is None else time.monotonic() + within_s
        while True:
            run = await self.get(run_id)
            if run is None or run.status in TERMINAL:
                return run
            remaining = None if deadline is None else deadline - time.monotonic()
            if remaining is not None and remaining <= 0:
                return run
            future: asyncio.Future[str] = asyncio.get_running_loop().create_future()
            self._waiters.setdefault(run_id, []).append(future)
            with contextlib.suppress(TimeoutError):
                # Woken at once when this process finishes it; polled when another process runs it.
                await asyncio.wait_for(future, POLL_S if remaining is None else min(POLL_S, remaining))

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
        for task in [*self._tasks, *self._running.values()]:
            task.cancel()
        await asyncio.gather(*self._tasks, *self._running.values(), return_exceptions=True)
        self._tasks = []

    async def _claim_loop(self) -> None:
        while True:
            await self._slots.acquire()
            try:
                claimed = await self._claim()
            except Exception:
                logger.exception("claiming a run failed")
                claimed = None
            if claimed is None:
                self._slots.release()
                self._wake.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), POLL_S)
                continue
            run_id = str(claimed["run_id"])
            self._running[run_id] = asyncio.create_task(self._execute(claimed), name=f"run-{run_id}")

    async def _claim(self) -> dict[str, Any] | None:
        async with self.resources.database.pool.connection() as conn:
            row: dict[str, Any] | None = await (
                await conn.execute(CLAIM_RUN, {"owner": self.owner, "lease": self.lease_s})
            ).fetchone()
        return row

    async def _execute(self, claimed: dict[str, Any]) -> None:
        run_id = str(claimed["run_id"])
        started = time.perf_counter()
        status, error = "error", None
        try:
            outcome: SolveOutcome = await run_solution(self.resources, str(claimed["solution_id"]))
            status = {"interrupted": "interrupted", "error": "error"}.get(outcome.status, "success")
        except asyncio.CancelledError:
            # Shutting down: leave the run 'running'; its lease expires and a worker continues it.
            self._running.pop(run_id, None)
            self._slots.release()
            raise
        except Exception as failure:
            logger.exception("run %s failed", run_id)
            error = f"{type(failure).__name__}: {failure}"
        try:
            async with self.resources.database.pool.connection() as conn:
                await conn.execute(
                    FINISH_RUN, {"status": status, "error": error, "run_id": run_id, "owner": self.owner}
                )
        finally:
            self._running.pop(run_id, None)
            self._slots.release()
        if self._on_finished is not None:
            self._on_finished(status, time.perf_counter() - started)
        for future in self._waiters.pop(run_id, []):
            if not future.done():
                future.set_result(status)

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
            except Exception:
                logger.exception("renewing run leases failed")

    async def _listen_loop(self) -> None:
        """Wake the claim loop when any process enqueues a run."""
        while True:
            try:
                async with await psycopg.AsyncConnection.connect(
                    self.resources.database.uri, autocommit=True
                ) as conn:
                    await conn.execute(f"LISTEN {CHANNEL}")
                    async for _ in conn.notifies():
                        self._wake.set()
            except asyncio.CancelledError:
                raise
            except Exception:
                logger.warning("run notifications lost; polling until they reconnect", exc_info=True)
                await asyncio.sleep(POLL_S)
