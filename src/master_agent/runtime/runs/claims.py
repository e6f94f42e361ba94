"""The worker's loops: claiming runs (woken by notifications, polling as a fallback), renewing the leases of
the runs executing here, and listening for enqueues, cancel requests, ends and events from other processes."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from typing import Any

import psycopg

from master_agent.runtime.run_events import EVENTS_CHANNEL, WATCH_CHANNEL
from master_agent.runtime.run_stages import ClaimTrigger
from master_agent.runtime.runs.execution import RunExecution
from master_agent.runtime.runs.statements import (
    CANCEL_CHANNEL,
    CHANNEL,
    CLAIM_RUN,
    DONE_CHANNEL,
    POLL_S,
    RENEW_LEASES,
)
from master_agent.storage.outages import is_outage

logger = logging.getLogger(__name__)


class RunClaims(RunExecution):
    """Claim runs for this process's free slots and keep their leases."""

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

    async def _listen_loop(self) -> None:
        """Wake the claim loop when any process enqueues a run; pass on cancel requests, ends of runs,
        stored events and streams following runs from other processes."""
        while True:
            try:
                async with await psycopg.AsyncConnection.connect(
                    self.resources.database.uri, autocommit=True
                ) as conn:
                    await conn.execute(f"LISTEN {CHANNEL}")
                    await conn.execute(f"LISTEN {CANCEL_CHANNEL}")
                    await conn.execute(f"LISTEN {DONE_CHANNEL}")
                    await conn.execute(f"LISTEN {EVENTS_CHANNEL}")
                    await conn.execute(f"LISTEN {WATCH_CHANNEL}")
                    # Ends and enqueues while not listening were missed: everyone reads again.
                    self._listening.set()
                    self._wake_all()
                    async for notice in conn.notifies():
                        if notice.channel == CANCEL_CHANNEL:
                            await self._cancel_requested(notice.payload)
                        elif notice.channel == DONE_CHANNEL:
                            self._told_done(notice.payload, "done")
                            self.events.stored_elsewhere(notice.payload)
                        elif notice.channel == EVENTS_CHANNEL:
                            self.events.stored_elsewhere(notice.payload)
                        elif notice.channel == WATCH_CHANNEL:
                            self.events.watch(notice.payload)
                        else:
                            self._wake_claims(notice.payload)
            except asyncio.CancelledError:
                raise
            except Exception as error:
                self._listening.clear()
                # The listening connection is the first to notice the server going away.
                logger.warning("run notifications lost; polling until they reconnect: %s", error)
                await self.resources.database.health.suspect(error)
                await asyncio.sleep(POLL_S)
