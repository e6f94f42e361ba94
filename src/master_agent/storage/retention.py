"""Checkpoint retention, like langgraph-api's ``checkpointer.ttl``: threads idle for longer than a TTL
are swept on an interval by the scheduler leader (or by ``master-agent threads prune``).

A thread is idle when its newest checkpoint and its row (if it has one) are older than the cutoff and
no run of it is pending or running. Strategies:

- ``keep_latest``: keep the latest checkpoint of each namespace (with its pending writes and the
  blobs it references), drop the history before it. The thread stays readable and resumable.
- ``delete``: delete the thread: its row, runs, events and every checkpoint.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any, Literal

from psycopg_pool import AsyncConnectionPool
from pydantic import BaseModel, Field

from master_agent.settings import Settings

Strategy = Literal["keep_latest", "delete"]

#: Threads handled per transaction (a sweep loops until none is left).
SWEEP_BATCH = 200

#: Idle threads with history to drop (``keep_latest``): more checkpoints than namespaces.
IDLE_WITH_HISTORY = """
SELECT c.thread_id FROM checkpoints c
GROUP BY c.thread_id
HAVING max((c.checkpoint->>'ts')::timestamptz) < %(cutoff)s
   AND count(*) > count(DISTINCT c.checkpoint_ns)
   AND NOT EXISTS (SELECT 1 FROM runs r WHERE r.thread_id = c.thread_id AND r.status IN ('pending', 'running'))
   AND NOT EXISTS (SELECT 1 FROM threads t WHERE t.thread_id::text = c.thread_id AND t.updated_at >= %(cutoff)s)
LIMIT %(batch)s
"""
#: Idle threads (``delete``): with checkpoints, or only a row.
IDLE_THREADS = """
WITH candidates AS (
    SELECT c.thread_id FROM checkpoints c
    GROUP BY c.thread_id
    HAVING max((c.checkpoint->>'ts')::timestamptz) < %(cutoff)s
    UNION
    SELECT t.thread_id::text FROM threads t
    WHERE t.updated_at < %(cutoff)s
      AND NOT EXISTS (SELECT 1 FROM checkpoints c WHERE c.thread_id = t.thread_id::text)
)
SELECT thread_id FROM candidates k
WHERE NOT EXISTS (SELECT 1 FROM runs r WHERE r.thread_id = k.thread_id AND r.status IN ('pending', 'running'))
  AND NOT EXISTS (SELECT 1 FROM threads t WHERE t.thread_id::text = k.thread_id AND t.updated_at >= %(cutoff)s)
LIMIT %(batch)s
"""
#: The latest checkpoint of each namespace of the given threads.
_LATEST = """
latest AS (
    SELECT DISTINCT ON (thread_id, checkpoint_ns) thread_id, checkpoint_ns, checkpoint_id, checkpoint
    FROM checkpoints WHERE thread_id = ANY(%(threads)s)
    ORDER BY thread_id, checkpoint_ns, checkpoint_id DESC
)"""
KEEP_LATEST = {
    "writes": f"""
WITH {_LATEST}
DELETE FROM checkpoint_writes w WHERE w.thread_id = ANY(%(threads)s) AND NOT EXISTS (
    SELECT 1 FROM latest l
    WHERE l.thread_id = w.thread_id AND l.checkpoint_ns = w.checkpoint_ns AND l.checkpoint_id = w.checkpoint_id)
""",
    "blobs": f"""
WITH {_LATEST}
DELETE FROM checkpoint_blobs b WHERE b.thread_id = ANY(%(threads)s) AND NOT EXISTS (
    SELECT 1 FROM latest l
    WHERE l.thread_id = b.thread_id AND l.checkpoint_ns = b.checkpoint_ns
      AND l.checkpoint->'channel_versions'->>b.channel = b.version)
""",
    "checkpoints": f"""
WITH {_LATEST}
DELETE FROM checkpoints c WHERE c.thread_id = ANY(%(threads)s) AND NOT EXISTS (
    SELECT 1 FROM latest l
    WHERE l.thread_id = c.thread_id AND l.checkpoint_ns = c.checkpoint_ns AND l.checkpoint_id = c.checkpoint_id)
""",
}
DELETE_THREADS = {
    "writes": "DELETE FROM checkpoint_writes WHERE thread_id = ANY(%(threads)s)",
    "blobs": "DELETE FROM checkpoint_blobs WHERE thread_id = ANY(%(threads)s)",
    "checkpoints": "DELETE FROM checkpoints WHERE thread_id = ANY(%(threads)s)",
    "runs": "DELETE FROM runs WHERE thread_id = ANY(%(threads)s)",
    "threads": "DELETE FROM threads WHERE thread_id::text = ANY(%(threads)s)",
}


#: Checkpoints written for a deleted thread afterwards (a run still executing elsewhere) are dropped.
TOMBSTONE = (
    "INSERT INTO deleted_threads (thread_id) SELECT unnest(%(threads)s::text[]) ON CONFLICT DO NOTHING"
)


async def delete_thread_rows(conn: Any, thread_ids: list[str]) -> None:
    """Remove the threads, their runs (and events) and checkpoints, and leave tombstones so nothing is
    written for them afterwards; in the caller's transaction. Stop their active runs first."""
    await conn.execute(TOMBSTONE, {"threads": thread_ids})
    for statement in DELETE_THREADS.values():
        await conn.execute(statement, {"threads": thread_ids})


#: Threads whose own TTL has run out since their last activity (or last keep_latest sweep), not running.
EXPIRED_THREADS = """
SELECT t.thread_id::text AS thread_id, t.ttl_strategy FROM threads t
WHERE t.ttl_minutes IS NOT NULL
  AND greatest(t.updated_at, t.ttl_swept_at) + make_interval(secs => t.ttl_minutes * 60) < %(now)s
  AND NOT EXISTS (SELECT 1 FROM runs r WHERE r.thread_id = t.thread_id::text AND r.status IN ('pending', 'running'))
ORDER BY t.updated_at
LIMIT %(batch)s
FOR UPDATE OF t SKIP LOCKED
"""
MARK_TTL_SWEPT = "UPDATE threads SET ttl_swept_at = %(now)s WHERE thread_id::text = ANY(%(threads)s)"


class ThreadTTLSweep(BaseModel):
    deleted: int = 0
    pruned: int = 0


async def sweep_thread_ttls(pool: AsyncConnectionPool[Any], now: datetime) -> ThreadTTLSweep:
    """Apply each expired thread's own TTL strategy: ``delete`` it, or ``keep_latest`` checkpoint (the
    thread then counts as swept now, so it is pruned again only after another TTL)."""
    result = ThreadTTLSweep()
    while True:
        async with pool.connection() as conn, conn.transaction():
            rows = await (await conn.execute(EXPIRED_THREADS, {"now": now, "batch": SWEEP_BATCH})).fetchall()
            if not rows:
                return result
            doomed = [row["thread_id"] for row in rows if row["ttl_strategy"] != "keep_latest"]
            kept = [row["thread_id"] for row in rows if row["ttl_strategy"] == "keep_latest"]
            if doomed:
                await delete_thread_rows(conn, doomed)
            if kept:
                for statement in KEEP_LATEST.values():
                    await conn.execute(statement, {"threads": kept})
                await conn.execute(MARK_TTL_SWEPT, {"threads": kept, "now": now})
            result.deleted += len(doomed)
            result.pruned += len(kept)


class RetentionPolicy(BaseModel):
    """What a sweep keeps (``MASTER_AGENT_CHECKPOINT_TTL``, ``MASTER_AGENT_CHECKPOINT_TTL_MINUTES``)."""

    strategy: Strategy
    idle_minutes: float = Field(ge=0)
    """How long a thread must have been idle to be swept."""


def retention_policy(settings: Settings) -> RetentionPolicy | None:
    """The configured policy (None: ``MASTER_AGENT_CHECKPOINT_TTL=off``)."""
    if settings.checkpoint_ttl == "off":
        return None
    return RetentionPolicy(strategy=settings.checkpoint_ttl, idle_minutes=settings.checkpoint_ttl_minutes)


class SweepResult(BaseModel):
    """Rows a sweep removed, by kind, and the threads it touched."""

    strategy: Strategy
    threads: int = 0
    checkpoints: int = 0
    writes: int = 0
    blobs: int = 0
    runs: int = 0


async def sweep_checkpoints(
    pool: AsyncConnectionPool[Any], policy: RetentionPolicy, now: datetime
) -> SweepResult:
    """Apply ``policy`` to every thread idle since ``now - idle_minutes``, a batch per transaction."""
    cutoff = now - timedelta(minutes=policy.idle_minutes)
    select, statements = (
        (IDLE_WITH_HISTORY, KEEP_LATEST)
        if policy.strategy == "keep_latest"
        else (IDLE_THREADS, DELETE_THREADS)
    )
    result = SweepResult(strategy=policy.strategy)
    while True:
        async with pool.connection() as conn, conn.transaction():
            rows = await (await conn.execute(select, {"cutoff": cutoff, "batch": SWEEP_BATCH})).fetchall()
            threads = [str(row["thread_id"]) for row in rows]
            if not threads:
                return result
            result.threads += len(threads)
            for kind, statement in statements.items():
                removed = (await conn.execute(statement, {"threads": threads})).rowcount
                if kind != "threads":
                    setattr(result, kind, getattr(result, kind) + max(removed, 0))
