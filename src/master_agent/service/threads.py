"""Threads of the LangGraph-compatible API: rows in ``threads`` (tenant, metadata, status), state in the
checkpointer. Another tenant's thread is not found."""

from __future__ import annotations

import json
import uuid
from datetime import datetime
from typing import Any, Literal

from psycopg_pool import AsyncConnectionPool
from pydantic import BaseModel

from master_agent.storage.documents import StoredMetadata

ThreadStatus = Literal["idle", "busy", "interrupted", "error"]

#: A new thread, unless its id is taken, was deleted, or already has checkpoints (state nobody owns
#: must never be adopted by whoever names the id first).
INSERT_THREAD = """
INSERT INTO threads (thread_id, tenant_id, metadata, config)
SELECT %(thread_id)s, %(tenant_id)s, %(metadata)s, %(config)s
WHERE NOT EXISTS (SELECT 1 FROM checkpoints WHERE thread_id = %(thread_id)s::text)
  AND NOT EXISTS (SELECT 1 FROM deleted_threads WHERE thread_id = %(thread_id)s::text)
ON CONFLICT (thread_id) DO NOTHING
RETURNING *
"""
SELECT_THREAD = "SELECT * FROM threads WHERE tenant_id = %s AND thread_id = %s"
SEARCH_THREADS = """
SELECT *, count(*) OVER () AS total FROM threads
WHERE tenant_id = %(tenant)s AND metadata @> %(metadata)s
  AND (%(status)s::text IS NULL OR status = %(status)s)
ORDER BY created_at DESC, thread_id
LIMIT %(limit)s OFFSET %(offset)s
"""
DELETE_THREAD = "DELETE FROM threads WHERE tenant_id = %s AND thread_id = %s RETURNING thread_id"
#: Checkpoints written for the thread after this (a run still executing elsewhere) are dropped.
TOMBSTONE = "INSERT INTO deleted_threads (thread_id) VALUES (%s) ON CONFLICT (thread_id) DO NOTHING"


class Thread(BaseModel):
    thread_id: uuid.UUID
    created_at: datetime
    updated_at: datetime
    metadata: StoredMetadata
    status: ThreadStatus
    config: dict[str, Any]
    values: Any = None


async def create_thread(
    pool: AsyncConnectionPool[Any],
    tenant_id: str,
    metadata: dict[str, Any],
    thread_id: uuid.UUID | None = None,
    config: dict[str, Any] | None = None,
) -> Thread | None:
    """None when ``thread_id`` is taken, was deleted, or has checkpoints already."""
    values = {
        "thread_id": thread_id or uuid.uuid4(),
        "tenant_id": tenant_id,
        "metadata": json.dumps(metadata),
        "config": json.dumps(config or {}),
    }
    async with pool.connection() as conn:
        row = await (await conn.execute(INSERT_THREAD, values)).fetchone()
    return Thread.model_validate(row) if row else None


async def get_thread(pool: AsyncConnectionPool[Any], tenant_id: str, thread_id: uuid.UUID) -> Thread | None:
    async with pool.connection() as conn:
        row = await (await conn.execute(SELECT_THREAD, (tenant_id, thread_id))).fetchone()
    return Thread.model_validate(row) if row else None


async def search_threads(
    pool: AsyncConnectionPool[Any],
    tenant_id: str,
    *,
    metadata: dict[str, Any],
    status: str | None,
    limit: int,
    offset: int,
) -> tuple[list[Thread], int]:
    params = {
        "tenant": tenant_id,
        "metadata": json.dumps(metadata),
        "status": status,
        "limit": limit,
        "offset": offset,
    }
    async with pool.connection() as conn:
        rows = await (await conn.execute(SEARCH_THREADS, params)).fetchall()
    return [Thread.model_validate(row) for row in rows], int(rows[0]["total"]) if rows else 0


async def delete_thread(pool: AsyncConnectionPool[Any], tenant_id: str, thread_id: uuid.UUID) -> bool:
    """Remove the thread, its runs and its checkpoints in one transaction, and leave a tombstone so
    nothing is written for it afterwards. Stop its active runs first (``RunQueue.cancel``)."""
    async with pool.connection() as conn, conn.transaction():
        row = await (await conn.execute(DELETE_THREAD, (tenant_id, thread_id))).fetchone()
        if row is None:
            return False
        await conn.execute(TOMBSTONE, (str(thread_id),))
        await conn.execute("DELETE FROM runs WHERE thread_id = %s", (str(thread_id),))
        for table in ("checkpoint_writes", "checkpoint_blobs", "checkpoints"):
            await conn.execute(f"DELETE FROM {table} WHERE thread_id = %s", (str(thread_id),))
    return True
