"""Telling a database outage from a failed query, and knowing when the database is back.

An outage (the server stopped, restarting, refusing connections, or the pool starved) is not
something an agent can reason about or a client can fix: runs wait it out and continue from their
last checkpoint, and requests are answered 503 at once while it lasts.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

import psycopg
from psycopg_pool import PoolTimeout

logger = logging.getLogger(__name__)

T = TypeVar("T")

#: SQLSTATEs of an unreachable or overwhelmed server: connection exceptions (08), too many
#: connections (53300: no statement ran), and the server shutting down or starting up (57P01..57P03).
#: A statement's own failure is not an outage, even where the server names a resource: a query over
#: ``temp_file_limit`` (53400), out of memory or disk for its sort (53100, 53200), too complex (54),
#: cancelled by its timeout (57014), bad data (22) or bad SQL (42) fails again if repeated; the agent
#: reads it once as a tool error.
OUTAGE_STATE_CLASSES = ("08",)
OUTAGE_STATES = frozenset({"53300", "57P01", "57P02", "57P03"})
#: Outages one piece of work waits out before it fails; the pause after each grows up to the last.
MAX_OUTAGE_RETRIES = 20
RETRY_PAUSE_S = 0.25
RETRY_PAUSE_MAX_S = 5.0
#: How long one probe waits for a connection.
PROBE_CONNECT_S = 2
#: Pause between probes while the database is down.
PROBE_EVERY_S = 0.5


def is_outage(error: BaseException) -> bool:
    """Whether ``error`` (or what caused it) says the database cannot be reached right now."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, psycopg.InterfaceError):
            return True  # e.g. "the connection is closed"
        if isinstance(current, psycopg.OperationalError):
            # No SQLSTATE: failed at the client (refused, lost, pool timeout); the server said nothing.
            state = current.sqlstate
            return state is None or state.startswith(OUTAGE_STATE_CLASSES) or state in OUTAGE_STATES
        current = current.__cause__ or current.__context__
    return False


def is_pool_timeout(error: BaseException) -> bool:
    """Whether ``error`` (or what caused it) is a pool checkout that waited its whole timeout: every
    connection was in use, or none could be made (only a probe tells which)."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        if isinstance(current, PoolTimeout):
            return True
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return False


class DatabaseHealth:
    """Whether the database answers, as last seen; probed with a fresh connection (never the pool,
    whose checkout would wait its whole timeout) whenever a failure raises the suspicion."""

    def __init__(self, uri: str) -> None:
        self._uri = uri
        self.down_since: float | None = None
        self._watch: asyncio.Task[bool] | None = None

    @property
    def up(self) -> bool:
        return self.down_since is None

    async def probe(self) -> bool:
        """Connect and ask once; record the answer."""
        try:
            async with await psycopg.AsyncConnection.connect(
                self._uri, autocommit=True, connect_timeout=PROBE_CONNECT_S
            ) as conn:
                await conn.execute("SELECT 1")
        except psycopg.Error as error:
            # A server that refuses the probe for another reason (a role, a setting) still answers.
            if not is_outage(error):
                return self._answered()
            if self.down_since is None:
                self.down_since = time.monotonic()
                logger.warning("the database is unreachable: %s", str(error).strip().splitlines()[0])
                self._watch = asyncio.create_task(self.wait_up(math.inf), name="database-watch")
            return False
        return self._answered()

    def _answered(self) -> bool:
        if self.down_since is not None:
            logger.warning("the database answers again after %.1f s", time.monotonic() - self.down_since)
            self.down_since = None
        return True

    async def suspect(self, error: BaseException) -> None:
        """A failure was seen: if it is an outage and the database was thought up, probe now."""
        if is_outage(error) and self.up:
            await self.probe()

    async def wait_up(self, within_s: float) -> bool:
        """Until the database answers (True) or ``within_s`` passes (False)."""
        deadline = time.monotonic() + within_s
        while not await self.probe():
            if time.monotonic() >= deadline:
                return False
            await asyncio.sleep(PROBE_EVERY_S)
        return True

    async def aclose(self) -> None:
        if self._watch is not None:
            self._watch.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._watch


class OutageTooLong(Exception):
    """The database stayed unreachable longer than a caller would wait."""


async def through_outages(
    health: DatabaseHealth,
    work: Callable[[], Awaitable[T]],
    *,
    within_s: float,
    before_retry: Callable[[], Awaitable[None]] | None = None,
) -> T:
    """``work()``, again after each outage it meets (at most ``MAX_OUTAGE_RETRIES`` times), as long as
    each outage ends within ``within_s``; ``before_retry`` may veto a retry by raising. ``work`` must be
    safe to repeat (it reads, writes idempotently, or continues from a checkpoint)."""
    retries = 0
    while True:
        try:
            return await work()
        except Exception as error:
            if not is_outage(error) or retries >= MAX_OUTAGE_RETRIES:
                raise
            retries += 1
            logger.warning("waiting for the database: %s", str(error).strip().splitlines()[0])
            if not await health.wait_up(within_s):
                raise OutageTooLong(f"the database stayed unreachable for {within_s:g} s") from error
            # Failing again while the server answers (too many connections, a stale pooled
            # connection) must not spin: the pause grows with each retry.
            await asyncio.sleep(min(RETRY_PAUSE_S * 2 ** (retries - 1), RETRY_PAUSE_MAX_S))
            if before_retry is not None:
                await before_retry()
