"""Threads of the LangGraph-compatible API: rows in ``threads`` (tenant, metadata, status), state in the
checkpointer. Another tenant's thread is not found."""

from __future__ import annotations

import json
import uuid
from datetime import datetime, timedelta
from typing import Any, Literal

from psycopg.types.json import Jsonb
from psycopg_pool import AsyncConnectionPool
from pydantic import BaseModel, Field

from master_agent.service.limits import LangGraphBody, order_by
from master_agent.storage.documents import StoredMetadata
from master_agent.storage.retention import KEEP_LATEST, delete_thread_rows

ThreadStatus = Literal["idle", "busy", "interrupted", "error"]

#: A new thread, unless its id is taken, was deleted, or already has checkpoints (state nobody owns
#: must never be adopted by whoever names the id first).
INSERT_THREAD = """
INSERT INTO threads (thread_id, tenant_id, metadata, config, ttl_minutes, ttl_strategy)
SELECT %(thread_id)s, %(tenant_id)s, %(metadata)s, %(config)s, %(ttl_minutes)s, %(ttl_strategy)s
WHERE NOT EXISTS (SELECT 1 FROM checkpoints WHERE thread_id = %(thread_id)s::text)
  AND NOT EXISTS (SELECT 1 FROM deleted_threads WHERE thread_id = %(thread_id)s::text)
ON CONFLICT (thread_id) DO NOTHING
RETURNING *
"""
SELECT_THREAD = "SELECT * FROM threads WHERE tenant_id = %s AND thread_id = %s"
_MATCHING = """
WHERE tenant_id = %(tenant)s AND metadata @> %(metadata)s
  AND (%(values)s::jsonb IS NULL OR "values" @> %(values)s::jsonb)
  AND (%(status)s::text IS NULL OR status = %(status)s)
  AND (%(ids)s::uuid[] IS NULL OR thread_id = ANY(%(ids)s::uuid[]))
"""
SEARCH_THREADS = f"""
SELECT *, count(*) OVER () AS total FROM threads {_MATCHING}
ORDER BY {{order}}, thread_id
LIMIT %(limit)s OFFSET %(offset)s
"""
COUNT_THREADS = f"SELECT count(*) AS n FROM threads {_MATCHING}"
#: langgraph-api's ``sort_by`` values (``state_updated_at`` is ``updated_at`` here: a run's end and a state
#: update both touch the row).
SORT_COLUMNS = {
    "thread_id": "thread_id",
    "status": "status",
    "created_at": "created_at",
    "updated_at": "updated_at",
    "state_updated_at": "updated_at",
}
PATCH_THREAD = """
UPDATE threads SET metadata = metadata || %(metadata)s::jsonb, updated_at = now(),
       ttl_minutes = CASE WHEN %(set_ttl)s THEN %(ttl_minutes)s ELSE ttl_minutes END,
       ttl_strategy = CASE WHEN %(set_ttl)s THEN %(ttl_strategy)s ELSE ttl_strategy END
WHERE tenant_id = %(tenant)s AND thread_id = %(thread_id)s
RETURNING *
"""
#: A copy: the thread's row (idle) and every checkpoint, blob and pending write under the new id.
COPY_THREAD = [
    """INSERT INTO checkpoints (thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, type, checkpoint,
                             metadata)
       SELECT %(new)s, checkpoint_ns, checkpoint_id, parent_checkpoint_id, type, checkpoint, metadata
       FROM checkpoints WHERE thread_id = %(old)s""",
    """INSERT INTO checkpoint_blobs (thread_id, checkpoint_ns, channel, version, type, blob)
       SELECT %(new)s, checkpoint_ns, channel, version, type, blob FROM checkpoint_blobs WHERE thread_id = %(old)s""",
    """INSERT INTO checkpoint_writes (thread_id, checkpoint_ns, checkpoint_id, task_id, idx, channel, type, blob,
                                   task_path)
       SELECT %(new)s, checkpoint_ns, checkpoint_id, task_id, idx, channel, type, blob, task_path
       FROM checkpoint_writes WHERE thread_id = %(old)s""",
]
COPY_ROW = """
UPDATE threads AS copy SET status = CASE WHEN source.status IN ('interrupted', 'error') THEN source.status
                                         ELSE 'idle' END,
                           "values" = source."values", interrupts = source.interrupts
FROM threads AS source WHERE copy.thread_id = %(new)s AND source.thread_id = %(old)s
RETURNING copy.*
"""
STORE_VALUES = """
UPDATE threads SET "values" = %(values)s::jsonb, interrupts = %(interrupts)s::jsonb, updated_at = now(),
  status = COALESCE(%(status)s::text, status)
WHERE thread_id = %(thread_id)s
"""
PRUNABLE = """
SELECT thread_id FROM threads t
WHERE tenant_id = %(tenant)s AND thread_id = ANY(%(ids)s::uuid[])
  AND NOT EXISTS (SELECT 1 FROM runs r WHERE r.thread_id = t.thread_id::text AND r.status IN ('pending', 'running'))
"""
OWN_THREAD = "SELECT thread_id FROM threads WHERE tenant_id = %s AND thread_id = %s FOR UPDATE"


class ThreadTTL(LangGraphBody):
    """A thread's own time to live, as langgraph-api takes it: swept ``ttl`` minutes after its last
    activity, by deleting it or by keeping only its latest checkpoint."""

    strategy: Literal["delete", "keep_latest"] = "delete"
    ttl: float = Field(gt=0, le=100 * 366 * 24 * 60, description="Minutes (at most 100 years).")


class Thread(BaseModel):
    thread_id: uuid.UUID
    created_at: datetime
    updated_at: datetime
    metadata: StoredMetadata
    status: ThreadStatus
    config: dict[str, Any]
    values: Any = None
    interrupts: dict[str, list[dict[str, Any]]] = Field(default_factory=dict)
    ttl_minutes: float | None = Field(default=None, exclude=True)
    ttl_strategy: str | None = Field(default=None, exclude=True)

    def ttl_json(self) -> dict[str, Any] | None:
        """The thread's TTL and when it runs out (``include=ttl``); None without one."""
        if self.ttl_minutes is None:
            return None
        expires = self.updated_at + timedelta(minutes=self.ttl_minutes)
        return {"strategy": self.ttl_strategy, "ttl": self.ttl_minutes, "expires_at": expires.isoformat()}


def _ttl_params(ttl: ThreadTTL | None) -> dict[str, Any]:
    return {"ttl_minutes": ttl.ttl if ttl else None, "ttl_strategy": ttl.strategy if ttl else None}


async def create_thread(
    pool: AsyncConnectionPool[Any],
    tenant_id: str,
    metadata: dict[str, Any],
    thread_id: uuid.UUID | None = None,
    config: dict[str, Any] | None = None,
    ttl: ThreadTTL | None = None,
) -> Thread | None:
    """None when ``thread_id`` is taken, was deleted, or has checkpoints already."""
    values = {
        "thread_id": thread_id or uuid.uuid4(),
        "tenant_id": tenant_id,
        "metadata": json.dumps(metadata),
        "config": json.dumps(config or {}),
        **_ttl_params(ttl),
    }
    async with pool.connection() as conn:
        row = await (await conn.execute(INSERT_THREAD, values)).fetchone()
    return Thread.model_validate(row) if row else None


async def get_thread(pool: AsyncConnectionPool[Any], tenant_id: str, thread_id: uuid.UUID) -> Thread | None:
    async with pool.connection() as conn:
        row = await (await conn.execute(SELECT_THREAD, (tenant_id, thread_id))).fetchone()
    return Thread.model_validate(row) if row else None


def _filters(
    tenant_id: str,
    metadata: dict[str, Any],
    values: dict[str, Any] | None,
    status: str | None,
    ids: list[uuid.UUID] | None,
) -> dict[str, Any]:
    return {
        "tenant": tenant_id,
        "metadata": json.dumps(metadata),
        "values": json.dumps(values) if values else None,
        "status": status,
        "ids": ids,
    }


async def search_threads(
    pool: AsyncConnectionPool[Any],
    tenant_id: str,
    *,
    metadata: dict[str, Any],
    status: str | None,
    limit: int,
    offset: int,
    values: dict[str, Any] | None = None,
    ids: list[uuid.UUID] | None = None,
    sort_by: str | None = None,
    sort_order: str | None = None,
) -> tuple[list[Thread], int]:
    """The tenant's threads matching the filters (``values``: their values contain it), newest first unless ``sort_by``/``sort_order`` say
    otherwise (``sort_by`` one of ``SORT_COLUMNS``), and how many match in all."""
    column = SORT_COLUMNS[sort_by or "created_at"]
    query = SEARCH_THREADS.format(order=order_by(column, sort_order))
    params = {**_filters(tenant_id, metadata, values, status, ids), "limit": limit, "offset": offset}
    async with pool.connection() as conn:
        rows = await (await conn.execute(query, params)).fetchall()
    return [Thread.model_validate(row) for row in rows], int(rows[0]["total"]) if rows else 0


async def count_threads(
    pool: AsyncConnectionPool[Any],
    tenant_id: str,
    *,
    metadata: dict[str, Any],
    status: str | None,
    values: dict[str, Any] | None = None,
) -> int:
    async with pool.connection() as conn:
        row = await (
            await conn.execute(COUNT_THREADS, _filters(tenant_id, metadata, values, status, None))
        ).fetchone()
    return int(row["n"]) if row else 0


async def patch_thread(
    pool: AsyncConnectionPool[Any],
    tenant_id: str,
    thread_id: uuid.UUID,
    metadata: dict[str, Any],
    ttl: ThreadTTL | None = None,
) -> Thread | None:
    """Merge ``metadata`` into the thread's (a key set to null stays, as langgraph-api keeps it); a
    ``ttl`` replaces the thread's (counted from now)."""
    params = {
        "tenant": tenant_id,
        "thread_id": thread_id,
        "metadata": json.dumps(metadata),
        "set_ttl": ttl is not None,
        **_ttl_params(ttl),
    }
    async with pool.connection() as conn:
        row = await (await conn.execute(PATCH_THREAD, params)).fetchone()
    return Thread.model_validate(row) if row else None


async def copy_thread(pool: AsyncConnectionPool[Any], tenant_id: str, source: Thread) -> Thread:
    """A new thread of the tenant with ``source``'s metadata, graph shape and whole checkpoint history
    (time travel on the copy leaves the original alone)."""
    new_id = uuid.uuid4()
    async with pool.connection() as conn, conn.transaction():
        row = await (
            await conn.execute(
                INSERT_THREAD,
                {
                    "thread_id": new_id,
                    "tenant_id": tenant_id,
                    "metadata": json.dumps(source.metadata),
                    "config": json.dumps(source.config),
                    # A copy of a thread meant to expire expires too.
                    "ttl_minutes": source.ttl_minutes,
                    "ttl_strategy": source.ttl_strategy,
                },
            )
        ).fetchone()
        assert row is not None  # a fresh uuid
        for statement in COPY_THREAD:
            await conn.execute(statement, {"new": str(new_id), "old": str(source.thread_id)})
        # A copy of a thread waiting at an interrupt waits there too (a busy one's copy is idle: the run
        # is the original's), with the same values.
        row = await (await conn.execute(COPY_ROW, {"new": new_id, "old": source.thread_id})).fetchone()
    return Thread.model_validate(row)


async def store_thread_values(
    pool: AsyncConnectionPool[Any],
    thread_id: uuid.UUID,
    values: Any,
    interrupts: dict[str, Any],
    status: ThreadStatus | None = None,
) -> None:
    """The thread row's copy of its current values and pending interrupts (after a state update), and
    its ``status`` when given (None: left as it is)."""
    params = {"values": json.dumps(values), "interrupts": json.dumps(interrupts), "status": status}
    async with pool.connection() as conn:
        await conn.execute(STORE_VALUES, {"thread_id": thread_id, **params})


async def prune_threads(
    pool: AsyncConnectionPool[Any],
    tenant_id: str,
    thread_ids: list[uuid.UUID],
    strategy: Literal["delete", "keep_latest"],
) -> int:
    """``delete``: the threads go as ``delete_thread`` removes one; ``keep_latest``: their history before
    the latest checkpoint of each namespace goes. Only the tenant's threads without an active run count
    (stop those first)."""
    async with pool.connection() as conn:
        rows = await (
            await conn.execute(PRUNABLE, {"tenant": tenant_id, "ids": list(dict.fromkeys(thread_ids))})
        ).fetchall()
    own = [uuid.UUID(str(row["thread_id"])) for row in rows]
    if strategy == "delete":
        return sum([await delete_thread(pool, tenant_id, thread_id) for thread_id in own])
    if own:
        async with pool.connection() as conn, conn.transaction():
            for statement in KEEP_LATEST.values():
                await conn.execute(statement, {"threads": [str(thread_id) for thread_id in own]})
    return len(own)


async def delete_thread(pool: AsyncConnectionPool[Any], tenant_id: str, thread_id: uuid.UUID) -> bool:
    """Remove the thread, its runs and its checkpoints in one transaction, and leave a tombstone so
    nothing is written for it afterwards. Stop its active runs first (``RunQueue.cancel``)."""
    async with pool.connection() as conn, conn.transaction():
        row = await (await conn.execute(OWN_THREAD, (tenant_id, thread_id))).fetchone()
        if row is None:
            return False
        await delete_thread_rows(conn, [str(thread_id)])
    return True


#: Whether a thread id is in use (by any tenant) or was, and so can no more be made by a run.
THREAD_ID_TAKEN = """
SELECT EXISTS (SELECT 1 FROM threads WHERE thread_id = %(thread)s)
    OR EXISTS (SELECT 1 FROM deleted_threads WHERE thread_id = %(thread)s::text) AS taken
"""


async def thread_id_taken(pool: AsyncConnectionPool[Any], thread_id: uuid.UUID) -> bool:
    """Whether ``thread_id`` names a thread (of any tenant) or a deleted one."""
    async with pool.connection() as conn:
        row = await (await conn.execute(THREAD_ID_TAKEN, {"thread": thread_id})).fetchone()
    assert row is not None  # EXISTS always answers one row
    return bool(row["taken"])


#: The JS SDK's ``threads.patchState``: metadata merged into the thread's latest (root) checkpoint.
PATCH_LATEST_CHECKPOINT = """
UPDATE checkpoints SET metadata = metadata || %(metadata)s
WHERE thread_id = %(thread)s AND checkpoint_ns = '' AND checkpoint_id = (
    SELECT max(checkpoint_id) FROM checkpoints WHERE thread_id = %(thread)s AND checkpoint_ns = ''
)
"""


async def patch_latest_checkpoint(
    pool: AsyncConnectionPool[Any], thread_id: uuid.UUID, metadata: dict[str, Any]
) -> bool:
    """Merge ``metadata`` into the metadata of the thread's latest checkpoint (the caller checked the
    thread is the tenant's); False when the thread has no checkpoint yet."""
    async with pool.connection() as conn:
        done = await conn.execute(
            PATCH_LATEST_CHECKPOINT, {"thread": str(thread_id), "metadata": Jsonb(metadata)}
        )
    patched: bool = done.rowcount > 0
    return patched


#: Bytes a thread's checkpoints occupy, as stored: checkpoint rows (the checkpoint and its metadata),
#: channel values by channel (one row per version), and pending writes.
STORAGE_CHECKPOINTS = """
SELECT count(*) AS count,
       coalesce(sum(pg_column_size(checkpoint) + pg_column_size(metadata)), 0)::bigint AS bytes
FROM checkpoints WHERE thread_id = %(thread)s
"""
STORAGE_BLOBS = """
SELECT channel, count(*) AS versions, coalesce(sum(octet_length(blob)), 0)::bigint AS bytes
FROM checkpoint_blobs WHERE thread_id = %(thread)s GROUP BY channel ORDER BY channel
"""
STORAGE_WRITES = """
SELECT count(*) AS count, coalesce(sum(octet_length(blob)), 0)::bigint AS bytes
FROM checkpoint_writes WHERE thread_id = %(thread)s
"""


async def thread_storage(pool: AsyncConnectionPool[Any], thread_id: uuid.UUID) -> dict[str, Any]:
    """langgraph-api's ``ThreadStorage`` of a thread (the caller checked it is the tenant's)."""
    params = {"thread": str(thread_id)}
    async with pool.connection() as conn:
        checkpoints = await (await conn.execute(STORAGE_CHECKPOINTS, params)).fetchone()
        blobs = await (await conn.execute(STORAGE_BLOBS, params)).fetchall()
        writes = await (await conn.execute(STORAGE_WRITES, params)).fetchone()
    assert checkpoints is not None and writes is not None  # aggregates always answer one row
    by_channel = {row["channel"]: {"versions": row["versions"], "bytes": row["bytes"]} for row in blobs}
    channel_values = {
        "count": sum(item["versions"] for item in by_channel.values()),
        "bytes": sum(item["bytes"] for item in by_channel.values()),
        "by_channel": by_channel,
    }
    return {
        "thread_id": str(thread_id),
        "total_bytes": checkpoints["bytes"] + channel_values["bytes"] + writes["bytes"],
        "checkpoints": {"count": checkpoints["count"], "bytes": checkpoints["bytes"]},
        "channel_values": channel_values,
        "pending_writes": {"count": writes["count"], "bytes": writes["bytes"]},
    }
