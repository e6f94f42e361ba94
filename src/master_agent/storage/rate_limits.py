"""Rate limits shared by every process of a deployment: fixed-window counters in PostgreSQL.

One row per limit (``bucket``) and ``subject`` (a tenant, a client address, a key prefix) holds the
count of its current window. Windows are cut from the database's clock, so processes on hosts whose
clocks differ still count into the same window. Counting is one statement (an upsert over every limit
a request touches), and attempts past a limit count too: a client that keeps sending while refused
stays refused until the window ends, which is what its ``Retry-After`` says.

A fixed window lets a burst straddling a window's end reach twice the limit within one window's length;
the limits are a guard against floods, not a billing meter, and the window is one cheap row.

Far below a limit, a process counts without a round trip (issue 46: two of a run's database round trips
were its two requests' counts). Once it knows a subject's window (from its last count), a hit that keeps
what it knows plus what it has not sent yet within half the limit is admitted at once and sent with the
others of this process within ``BATCH_EVERY_S``, in one statement. A hit beyond that half is counted as
before, at once, with this process's unsent hits of the same counters, so the refusal at the limit is as
exact as before, but for the unsent hits of other processes (a fraction of a second of their traffic).
Limits under ``BATCH_FROM_LIMIT`` are always counted at once.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from psycopg_pool import AsyncConnectionPool

from master_agent.errors import RateLimitedError
from master_agent.settings import Settings

logger = logging.getLogger(__name__)

Bucket = Literal["requests", "runs_started", "sign_in_failures"]
#: Limits from this size on are counted in batches while far below them (see the module's docstring).
BATCH_FROM_LIMIT = 100
#: How long an admitted hit waits, at most, to be sent with the others.
BATCH_EVERY_S = 0.1

#: Add each hit to its counter, starting the current window in place when the stored one is older.
#: GREATEST: a statement whose transaction began just before a window's start never moves a counter back.
#: Its commit does not wait for the WAL flush (``synchronous_commit`` off for this statement's own
#: transaction): every request of a tenant updates its one row, so each waited for the previous one's
#: flush, and a crash of PostgreSQL itself losing the last counts of a fraction of a second lets a few
#: more requests through, no worse than a window's edge does.
COUNT_HITS = """
INSERT INTO rate_limit_counters AS c (bucket, subject, window_start, window_end, count)
SELECT h.bucket, h.subject, w.start, w.start + make_interval(secs => h.window_s), h.amount
FROM unnest(%(buckets)s::text[], %(subjects)s::text[], %(windows)s::int[], %(amounts)s::int[])
    WITH ORDINALITY AS h(bucket, subject, window_s, amount, position)
CROSS JOIN (SELECT set_config('synchronous_commit', 'off', true)) AS commit_mode
CROSS JOIN LATERAL (
    SELECT to_timestamp(floor(extract(epoch FROM now()) / h.window_s) * h.window_s) AS start
) w
ORDER BY h.position
ON CONFLICT (bucket, subject) DO UPDATE SET
    count = CASE WHEN c.window_start >= EXCLUDED.window_start THEN c.count + EXCLUDED.count
                 ELSE EXCLUDED.count END,
    window_start = GREATEST(c.window_start, EXCLUDED.window_start),
    window_end = GREATEST(c.window_end, EXCLUDED.window_end)
RETURNING c.bucket, c.subject, c.count, extract(epoch FROM c.window_end - now())::float8 AS remaining_s
"""
#: The current windows' counts of some subjects of one limit (read before a sign-in is checked).
READ_COUNTS = """
SELECT bucket, subject, count, extract(epoch FROM window_end - now())::float8 AS remaining_s
FROM rate_limit_counters
WHERE bucket = %(bucket)s AND subject = ANY(%(subjects)s) AND window_end > now()
"""
#: Counters whose window has ended (the scheduler leader runs it on its tick).
SWEEP_COUNTERS = "DELETE FROM rate_limit_counters WHERE window_end <= now()"


@dataclass(frozen=True)
class Quota:
    """One limit: at most ``limit`` per ``window_s`` seconds for each subject; 0 turns it off."""

    bucket: Bucket
    limit: int
    window_s: int
    setting: str
    """The environment variable setting ``limit``, named in the refusal."""

    @property
    def enabled(self) -> bool:
        return self.limit > 0


@dataclass(frozen=True)
class Quotas:
    requests: Quota
    runs_started: Quota
    sign_in_failures: Quota

    @classmethod
    def from_settings(cls, settings: Settings) -> Quotas:
        return cls(
            requests=Quota(
                "requests",
                settings.rate_requests,
                settings.rate_requests_window_s,
                "MASTER_AGENT_RATE_REQUESTS",
            ),
            runs_started=Quota(
                "runs_started", settings.rate_runs, settings.rate_runs_window_s, "MASTER_AGENT_RATE_RUNS"
            ),
            sign_in_failures=Quota(
                "sign_in_failures",
                settings.sign_in_failures,
                settings.sign_in_window_s,
                "MASTER_AGENT_SIGN_IN_FAILURES",
            ),
        )


@dataclass(frozen=True)
class Hit:
    quota: Quota
    subject: str
    amount: int = 1


def _retry_after(remaining_s: float) -> int:
    # Whole seconds (the header's unit), rounded up so a client honouring it never comes back early.
    return max(1, math.ceil(remaining_s))


def _refusal(quota: Quota, subject_kind: str, remaining_s: float) -> RateLimitedError:
    retry_after_s = _retry_after(remaining_s)
    return RateLimitedError(
        quota.bucket,
        f"{quota.bucket}: the limit of {quota.limit} per {quota.window_s} s is reached for this "
        f"{subject_kind} ({quota.setting}); retry after {retry_after_s} s",
        retry_after_s,
    )


@dataclass
class _Window:
    """What this process knows of one counter: its limit, its count when last stored, when its window
    ends (``monotonic()``), and its hits admitted here but not sent yet."""

    quota: Quota
    count: int = 0
    ends_at: float = 0.0
    unsent: int = 0


class HitCounter:
    """Counts hits into ``rate_limit_counters``: at once near a limit, in batches far below it."""

    def __init__(self, pool: AsyncConnectionPool[Any]) -> None:
        self._pool = pool
        self._windows: dict[tuple[str, str], _Window] = {}
        self._sender: asyncio.Task[None] | None = None

    def _far_below(self, hit: Hit, now: float) -> bool:
        window = self._windows.get((hit.quota.bucket, hit.subject))
        return (
            hit.quota.limit >= BATCH_FROM_LIMIT
            and window is not None
            and now < window.ends_at - BATCH_EVERY_S
            and window.count + window.unsent + hit.amount <= hit.quota.limit // 2
        )

    async def count(self, hits: Sequence[Hit], subject_kind: str = "tenant") -> None:
        """Count ``hits``; RateLimitedError for the first limit now exceeded."""
        counted = sorted(
            (hit for hit in hits if hit.quota.enabled and hit.amount > 0),
            # One order for every statement, so two concurrent upserts lock shared rows alike (no deadlock).
            key=lambda hit: (hit.quota.bucket, hit.subject),
        )
        if not counted:
            return
        now = time.monotonic()
        if all(self._far_below(hit, now) for hit in counted):
            for hit in counted:
                self._windows[(hit.quota.bucket, hit.subject)].unsent += hit.amount
            if self._sender is None or self._sender.done():
                self._sender = asyncio.create_task(self._send_later())
            return
        # This request's hits with the unsent ones of the same counters, which count before them.
        keys: list[tuple[str, str]] = [(hit.quota.bucket, hit.subject) for hit in counted]
        unsent = {key: self._take_unsent(key) for key in keys}
        try:
            rows = await self._store(
                [
                    (hit.quota, hit.subject, hit.amount + unsent[key])
                    for hit, key in zip(counted, keys, strict=True)
                ]
            )
        except BaseException:
            self._give_back(unsent)
            raise
        for hit in counted:
            row = rows[(hit.quota.bucket, hit.subject)]
            if row["count"] > hit.quota.limit:
                raise _refusal(hit.quota, subject_kind, row["remaining_s"])

    async def sent(self) -> None:
        """Return once this process's pending batch, if any, is stored."""
        if self._sender is not None:
            await asyncio.shield(self._sender)

    def _take_unsent(self, key: tuple[str, str]) -> int:
        window = self._windows.get(key)
        if window is None:
            return 0
        unsent, window.unsent = window.unsent, 0
        return unsent

    def _give_back(self, unsent: dict[tuple[str, str], int]) -> None:
        for key, amount in unsent.items():
            if amount and (window := self._windows.get(key)) is not None:
                window.unsent += amount

    async def _store(self, counts: Sequence[tuple[Quota, str, int]]) -> dict[tuple[str, str], Any]:
        """Add ``counts`` (quota, subject, amount) in one statement; the stored rows by counter, also
        kept as what this process knows of them."""
        params = {
            "buckets": [quota.bucket for quota, _, _ in counts],
            "subjects": [subject for _, subject, _ in counts],
            "windows": [quota.window_s for quota, _, _ in counts],
            "amounts": [amount for _, _, amount in counts],
        }
        async with self._pool.connection() as conn:
            rows = await (await conn.execute(COUNT_HITS, params)).fetchall()
        now = time.monotonic()
        quotas = {(quota.bucket, subject): quota for quota, subject, _ in counts}
        stored = {(row["bucket"], row["subject"]): row for row in rows}
        for key, row in stored.items():
            window = self._windows.setdefault(key, _Window(quotas[key]))
            window.count, window.ends_at = int(row["count"]), now + float(row["remaining_s"])
        return stored

    async def _send_later(self) -> None:
        await asyncio.sleep(BATCH_EVERY_S)
        keys = sorted(key for key, window in self._windows.items() if window.unsent)
        unsent = {key: self._take_unsent(key) for key in keys}
        if not unsent:
            return  # a count near a limit took them along
        try:
            await self._store([(self._windows[key].quota, key[1], amount) for key, amount in unsent.items()])
        except Exception as error:
            self._give_back(unsent)  # sent with the next count
            logger.warning("%d rate-limit counts not stored yet: %s", sum(unsent.values()), error)


_COUNTERS: weakref.WeakKeyDictionary[Any, HitCounter] = weakref.WeakKeyDictionary()


def hit_counter(pool: AsyncConnectionPool[Any]) -> HitCounter:
    """This process's counter on ``pool``: one per pool, so its batches gather every request's hits."""
    counter = _COUNTERS.get(pool)
    if counter is None:
        counter = _COUNTERS[pool] = HitCounter(pool)
    return counter


async def count_hits(
    pool: AsyncConnectionPool[Any], hits: Sequence[Hit], subject_kind: str = "tenant"
) -> None:
    """Count ``hits`` (at once, or far below their limits in this process's next batch);
    RateLimitedError for the first limit now exceeded."""
    await hit_counter(pool).count(hits, subject_kind)


async def check_not_exceeded(
    pool: AsyncConnectionPool[Any], quota: Quota, subjects: Sequence[str], subject_kind: str
) -> None:
    """RateLimitedError when any of ``subjects`` has already used up ``quota`` in its current window
    (a read: for limits counting only failures, checked before the attempt)."""
    if not quota.enabled or not subjects:
        return
    async with pool.connection() as conn:
        rows = await (
            await conn.execute(READ_COUNTS, {"bucket": quota.bucket, "subjects": list(subjects)})
        ).fetchall()
    spent = [row for row in rows if row["count"] >= quota.limit]
    if spent:
        raise _refusal(quota, subject_kind, max(row["remaining_s"] for row in spent))


async def sweep_counters(pool: AsyncConnectionPool[Any]) -> int:
    """Delete the counters whose window has ended; returns how many."""
    async with pool.connection() as conn:
        cursor = await conn.execute(SWEEP_COUNTERS)
        deleted: int = cursor.rowcount
    return deleted
