"""Installing a pack's demo tenant once, whichever of several processes starting together gets there
first."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from psycopg import AsyncConnection
from psycopg_pool import AsyncConnectionPool


@asynccontextmanager
async def tenant_to_install(
    pool: AsyncConnectionPool[Any], tenant_id: str, lock_key: int
) -> AsyncIterator[AsyncConnection[Any] | None]:
    """A connection holding the pack's install lock (``pg_advisory_lock(lock_key)``) to create
    ``tenant_id`` on, or None when the tenant exists already."""
    async with pool.connection() as conn:
        await conn.execute("SELECT pg_advisory_lock(%s)", (lock_key,))
        try:
            cursor = await conn.execute("SELECT 1 FROM tenants WHERE tenant_id = %s", (tenant_id,))
            yield None if await cursor.fetchone() is not None else conn
        finally:
            await conn.execute("SELECT pg_advisory_unlock(%s)", (lock_key,))
