from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from psycopg import AsyncConnection
from psycopg.rows import dict_row
from psycopg_pool import AsyncConnectionPool

from master_agent.errors import StorageError
from master_agent.storage import apply_migrations, migrations_dir
from master_agent.storage.checkpoints import CheckpointSaver


async def _pool(uri: str) -> AsyncConnectionPool[AsyncConnection[dict[str, object]]]:
    pool: AsyncConnectionPool[AsyncConnection[dict[str, object]]] = AsyncConnectionPool(
        uri,
        min_size=1,
        max_size=4,
        kwargs={"autocommit": True, "row_factory": dict_row, "prepare_threshold": None},
        open=False,
    )
    await pool.open()
    return pool


async def test_migrations_apply_in_order_exactly_once(fresh_database_uri: str) -> None:
    pool = await _pool(fresh_database_uri)
    try:
        first = await apply_migrations(pool, CheckpointSaver(pool))
        assert first == sorted(p.name for p in migrations_dir().glob("[0-9]*.sql"))
        assert await apply_migrations(pool, CheckpointSaver(pool)) == []
        async with pool.connection() as conn:
            rows = await (
                await conn.execute("SELECT version FROM schema_migrations ORDER BY version")
            ).fetchall()
        assert [r["version"] for r in rows] == list(range(1, len(first) + 1))
    finally:
        await pool.close()


async def test_two_processes_starting_together_do_not_race(fresh_database_uri: str) -> None:
    pools = [await _pool(fresh_database_uri) for _ in range(3)]
    try:
        results = await asyncio.gather(*(apply_migrations(pool, CheckpointSaver(pool)) for pool in pools))
        assert sum(len(applied) for applied in results) == len(list(migrations_dir().glob("[0-9]*.sql")))
    finally:
        for pool in pools:
            await pool.close()


async def test_an_edited_applied_migration_is_refused(fresh_database_uri: str, tmp_path: Path) -> None:
    (tmp_path / "0001_first.sql").write_text("CREATE TABLE a (x int);")
    pool = await _pool(fresh_database_uri)
    try:
        assert await apply_migrations(pool, folder=tmp_path) == ["0001_first.sql"]
        (tmp_path / "0001_first.sql").write_text("CREATE TABLE a (x bigint);")
        with pytest.raises(StorageError, match="changed after it was applied"):
            await apply_migrations(pool, folder=tmp_path)
    finally:
        await pool.close()


async def test_a_failing_migration_leaves_nothing_half_applied(
    fresh_database_uri: str, tmp_path: Path
) -> None:
    (tmp_path / "0001_ok.sql").write_text("CREATE TABLE ok (x int);")
    (tmp_path / "0002_bad.sql").write_text("CREATE TABLE half (x int); SELECT * FROM missing_table;")
    pool = await _pool(fresh_database_uri)
    try:
        with pytest.raises(Exception, match="missing_table"):
            await apply_migrations(pool, folder=tmp_path)
        async with pool.connection() as conn:
            tables = await (
                await conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")
            ).fetchall()
        assert {t["tablename"] for t in tables} == {"ok", "schema_migrations"}
    finally:
        await pool.close()
