"""Stopping runs: a pending one at once, a running one through the worker executing it (in any process);
``interrupt`` keeps its work so far, ``rollback`` removes the run and its checkpoints."""

from __future__ import annotations

import asyncio
import time
import uuid
from typing import Any, cast

from master_agent.evolution.webhooks import enqueue_webhook
from master_agent.runtime.run_events import STORE_EVENTS, event_params
from master_agent.runtime.runs.bookkeeping import RunBookkeeping
from master_agent.runtime.runs.records import _mark_thread
from master_agent.runtime.runs.statements import (
    ACTIVE_RUNS_ON_THREAD,
    CANCEL_CHANNEL,
    CANCEL_PENDING,
    CHANNEL,
    DELETE_RUN,
    FINISH_RUN,
    LOCK_RUN,
    REQUEST_CANCEL,
    ROLLBACK_CHECKPOINTS,
    CancelAction,
)
from master_agent.storage.outages import through_outages

#: How long a cancel request for a run not executing here is kept for its start here (a claim in flight).
UNPLACED_CANCEL_S = 60.0

#: Longest a cancel waits for a run executing here to stop. Its caller then reads the run stopped, as
#: langgraph-api's cancel sets the status at once; a run still stopping past it stops later.
LOCAL_STOP_S = 10.0


class RunCancellation(RunBookkeeping):
    """Cancel runs, here or in the process executing them, and store a cancelled run's end."""

    async def cancel(self, run_id: str, *, action: CancelAction = "interrupt") -> bool:
        """Stop a run: a pending one at once, a running one through the worker executing it (in any
        process; when that is this one, returns once it has stopped). ``interrupt`` keeps its work so far;
        ``rollback`` removes the run and its checkpoints. False when the run had already finished."""
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
            await self._stop_local(run_id, action)
        else:
            self._announce_done(run_id, "interrupted")
        return True

    async def _stop_local(self, run_id: str, action: CancelAction) -> None:
        """Cancel the run if it executes here, and wait until its end is stored (interrupted, or as it
        ended when it was already finishing)."""
        task = self._running.get(run_id)
        self._cancel_local(run_id, action)
        if task is not None and task is not asyncio.current_task():
            await asyncio.wait({task}, timeout=LOCAL_STOP_S)

    def _cancel_local(self, run_id: str, action: CancelAction) -> None:
        task = self._running.get(run_id)
        if task is not None and run_id not in self._cancelling and run_id not in self._finishing:
            self._cancelling[run_id] = action
            task.cancel()

    async def _active_runs(self, conn: Any, thread_id: str) -> list[str]:
        rows = await (await conn.execute(ACTIVE_RUNS_ON_THREAD, (thread_id,))).fetchall()
        return [str(row["run_id"]) for row in rows]

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

        try:
            await through_outages(self.resources.database.health, store_end, within_s=self.outage_wait_s)
        finally:
            self.events.forget(run_id)
            self.events.deliver(run_id, last)
            self._release(run_id)
            self._cancelling.pop(run_id, None)
            self._resolve_output(run_id, None)
        self._announce_done(run_id, "interrupted")
        self.events.notifier.send(CHANNEL)  # for the run that interrupted this one, queued behind it
        if webhook_id is not None:
            self._deliver_webhook(webhook_id)

    async def _cancel_requested(self, run_id: str) -> None:
        if run_id not in self._running:
            # Executing elsewhere, or claimed here and not started yet: ``_start`` asks again.
            now = time.monotonic()
            for old in [key for key, at in self._cancels_unplaced.items() if now - at > UNPLACED_CANCEL_S]:
                del self._cancels_unplaced[old]
            self._cancels_unplaced[run_id] = now
            return
        action = await self._cancel_action(run_id)
        if action is not None:
            self._cancel_local(run_id, action)

    def _cancel_if_requested(self, run_id: str) -> None:
        """A run started here whose cancel request came while it was being claimed is cancelled now."""
        if self._cancels_unplaced.pop(run_id, None) is not None:
            self.spawn(self._cancel_requested(run_id))

    async def _cancel_action(self, run_id: str) -> CancelAction | None:
        async with self.resources.database.pool.connection() as conn:
            row = await (
                await conn.execute("SELECT cancel_action FROM runs WHERE run_id = %s", (run_id,))
            ).fetchone()
        return cast(CancelAction, row["cancel_action"]) if row and row["cancel_action"] else None
