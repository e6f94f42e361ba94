"""Numbered SQL migrations, applied in order exactly once under a Postgres advisory lock.

Files are ``migrations/NNNN_name.sql``; each runs in its own transaction and is recorded in
``schema_migrations``. The LangGraph checkpointer's own migrations run under the same lock, so two
processes starting together never race on ``setup()``.
"""

from __future__ import annotations

import asyncio
import hashlib
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from master_agent.errors import StorageError

if TYPE_CHECKING:
    from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
    from psycopg_pool import AsyncConnectionPool

#: Arbitrary constant naming our lock in pg_advisory_lock's bigint space.
MIGRATION_LOCK_KEY = 0x6D61_6769_6E74  # "magint"

LOCK_RETRY_S = 0.1

_FILE_PATTERN = re.compile(r"^(\d{4})_[a-z0-9_]+\.sql$")

CREATE_LEDGER = """
CREATE TABLE IF NOT EXISTS schema_migrations (
    version integer PRIMARY KEY,
    name text NOT NULL,
    checksum text NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now()
)
"""
SELECT_APPLIED = "SELECT version, checksum FROM schema_migrations"
INSERT_APPLIED = "INSERT INTO schema_migrations (version, name, checksum) VALUES (%s, %s, %s)"


def migrations_dir() -> Path:
    """The migrations folder: shipped inside the wheel, or the repository's in a source checkout."""
    packaged = Path(__file__).resolve().parent.parent / "_migrations"
    if packaged.is_dir():
        return packaged
    return Path(__file__).resolve().parents[3] / "migrations"


async def _try_lock(conn: Any) -> bool:
    row = await (
        await conn.execute("SELECT pg_try_advisory_lock(%s) AS locked", (MIGRATION_LOCK_KEY,))
    ).fetchone()
    return bool(row["locked"])


def _migration_files(folder: Path) -> list[tuple[int, str, str]]:
    files = []
    for path in sorted(folder.iterdir()):
        match = _FILE_PATTERN.match(path.name)
        if match:
            files.append((int(match.group(1)), path.name, path.read_text()))
    versions = [v for v, _, _ in files]
    if len(set(versions)) != len(versions):
        raise StorageError(f"two migrations share a number in {folder}")
    return files


@asynccontextmanager
async def migration_lock(conn: Any) -> AsyncIterator[None]:
    """Held while schemas change (ours, the checkpointer's, the store's): one process at a time."""
    # Waiting with try-and-sleep, not in pg_advisory_lock: a waiter blocked inside a statement holds
    # a snapshot, which the checkpointer's CREATE INDEX CONCURRENTLY in the lock holder waits for.
    while not await _try_lock(conn):  # noqa: ASYNC110  # the lock is another process's: no event to wait on
        await asyncio.sleep(LOCK_RETRY_S)
    try:
        yield
    finally:
        await conn.execute("SELECT pg_advisory_unlock(%s)", (MIGRATION_LOCK_KEY,))


async def apply_migrations(
    pool: AsyncConnectionPool[Any],
    checkpointer: AsyncPostgresSaver | None = None,
    folder: Path | None = None,
) -> list[str]:
    """Apply pending migrations; return the names applied now (empty when up to date)."""
    files = _migration_files(folder or migrations_dir())
    applied_now: list[str] = []
    async with pool.connection() as conn, migration_lock(conn):
        # The checkpointer's tables first: our migrations may add to them (triggers, indexes).
        if checkpointer is not None:
            await checkpointer.setup()
        await conn.execute(CREATE_LEDGER)
        cursor = await conn.execute(SELECT_APPLIED)
        done = {row["version"]: row["checksum"] for row in await cursor.fetchall()}
        for version, name, sql in files:
            checksum = hashlib.sha256(sql.encode()).hexdigest()
            if version in done:
                if done[version] != checksum:
                    raise StorageError(
                        f"migration {name} changed after it was applied; add a new numbered "
                        "file instead of editing an applied one"
                    )
                continue
            async with conn.transaction():
                await conn.execute(sql)  # a trusted file from the repository, not user input
                await conn.execute(INSERT_APPLIED, (version, name, checksum))
            applied_now.append(name)
    return applied_now
