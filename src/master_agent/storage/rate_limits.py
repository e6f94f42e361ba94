"""Rate limits shared by every process of a deployment: fixed-window counters in PostgreSQL.

One row per limit (``bucket``) and ``subject`` (a tenant, a client address, a key prefix) holds the
count of its current window. Windows are cut from the database's clock, so processes on hosts whose
clocks differ still count into the same window. Counting is one statement (an upsert over every limit
a request touches), and attempts past a limit count too: a client that keeps sending while refused
stays refused until the window ends, which is what its ``Retry-After`` says.

A fixed window lets a burst straddling a window's end reach twice the limit within one window's length;
the limits are a guard against floods, not a billing meter, and the window is one cheap row.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from psycopg_pool import AsyncConnectionPool

from master_agent.errors import RateLimitedError
from master_agent.settings import Settings

Bucket = Literal["requests", "runs_started", "sign_in_failures"]

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


async def count_hits(
    pool: AsyncConnectionPool[Any], hits: Sequence[Hit], subject_kind: str = "tenant"
) -> None:
    """Count ``hits`` in one statement; RateLimitedError for the first limit now exceeded."""
    counted = sorted(
        (hit for hit in hits if hit.quota.enabled and hit.amount > 0),
        # One order for every statement, so two concurrent upserts lock shared rows alike (no deadlock).
        key=lambda hit: (hit.quota.bucket, hit.subject),
    )
    if not counted:
        return
    params = {
        "buckets": [hit.quota.bucket for hit in counted],
        "subjects": [hit.subject for hit in counted],
        "windows": [hit.quota.window_s for hit in counted],
        "amounts": [hit.amount for hit in counted],
    }
    async with pool.connection() as conn:
        rows = await (await conn.execute(COUNT_HITS, params)).fetchall()
    by_key = {(row["bucket"], row["subject"]): row for row in rows}
    for hit in counted:
        row = by_key[(hit.quota.bucket, hit.subject)]
        if row["count"] > hit.quota.limit:
            raise _refusal(hit.quota, subject_kind, row["remaining_s"])


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
