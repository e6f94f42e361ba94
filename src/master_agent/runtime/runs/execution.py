"""Executing a claimed run: its events published, its work carried on through database outages (unless another
worker took it over), and its end stored with its thread's values and its webhook."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections.abc import Callable
from functools import partial
from typing import Any, cast

from master_agent.evolution.webhooks import enqueue_webhook
from master_agent.runtime.graph_runs import GraphRunEnd, RunOutcome, execute_graph_run
from master_agent.runtime.run_events import RunEvent, event_params
from master_agent.runtime.runs.cancellation import RunCancellation
from master_agent.runtime.runs.records import (
    RunTakenOver,
    _thread_key,
    _thread_values_params,
    _webhook_result,
)
from master_agent.runtime.runs.statements import CHANNEL, DONE_CHANNEL, END_RUN, MODEL_ERROR, RENEW_LEASES
from master_agent.runtime.serialization import error_output
from master_agent.runtime.solve import SolveOutcome, record_failure, run_solution
from master_agent.storage.outages import through_outages
from master_agent.storage.retention import delete_thread_rows

logger = logging.getLogger(__name__)


class RunExecution(RunCancellation):
    """Execute the runs this process claimed, and store how each ended."""

    def _start(self, claimed: dict[str, Any]) -> None:
        """Execute a run claimed by this process (its slot already taken)."""
        run_id = str(claimed["run_id"])
        self._claimed_at[run_id] = time.perf_counter()
        self._running_tenant[run_id] = str(claimed["tenant_id"])
        # A caller here may already wait for it (queued by ``enqueue_graph_run``): the same future.
        self._outputs.setdefault(run_id, asyncio.get_running_loop().create_future())
        self._running[run_id] = asyncio.create_task(self._execute(claimed), name=f"run-{run_id}")
        self._cancel_if_requested(run_id)

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
        # finds it finished. From here the run ends as it did: a cancel no longer stops it.
        self._finishing.add(run_id)
        ending = time.perf_counter()
        last = self.events.publish(run_id, "end", None, live=False)
        thread_id = str(claimed["thread_id"])
        stored = False

        webhook = (claimed.get("kwargs") or {}).get("webhook") if graph_run else None
        webhook_id: uuid.UUID | None = None

        queued = False

        async def store_end() -> None:
            nonlocal webhook_id, queued
            async with (
                self.events.storing(run_id) as batch,
                self.resources.database.pool.connection() as conn,
                conn.transaction() if webhook else contextlib.nullcontext(),
            ):
                ended = await conn.execute(
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
                        "thread_id": thread_id,
                    },
                )
                queued = bool((await ended.fetchone() or {}).get("queued"))
                if webhook:
                    webhook_id = await enqueue_webhook(conn, run_id, webhook, *_webhook_result(output))
                if unfinished is not None and not graph_run:
                    # The goal's retries are spent: only now is it an error.
                    await record_failure(conn, str(claimed["solution_id"]), unfinished)

        try:
            await through_outages(self.resources.database.health, store_end, within_s=self.outage_wait_s)
            stored = True
            # After the commit: waiters elsewhere, and the runs queued behind this one on its thread.
            self.events.notifier.send(DONE_CHANNEL, run_id)
            if queued:
                self.events.notifier.send(CHANNEL)
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
            self._finishing.discard(run_id)
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
