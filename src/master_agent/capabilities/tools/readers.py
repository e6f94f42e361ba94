"""Tenant reader roles: the login the read-only SQL tool uses for one tenant's data.

A reader role can log in to this database only, reads its tenant's schema and nothing else (no TEMP,
no CREATE, no large objects, a pinned ``search_path``, bounded ``work_mem`` and temporary files: the
settings live in the SQL function ``master_agent_harden_reader`` of migration 0008), and sees only the
columns its domain pack leaves visible (ground truth kept for simulations is not granted).

Its password is ``HMAC-SHA256(secret, tenant_id)`` and is never written anywhere: the secret is
``MASTER_AGENT_SECRET_KEY`` or, unset, a random key kept in ``<data dir>/secret_key``. Processes that
share a database should share the secret; one that finds the role's password different (a rotated
secret) sets it again before connecting.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import os
import secrets
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any

from psycopg import AsyncConnection, sql
from psycopg_pool import AsyncConnectionPool

from master_agent.settings import Settings

#: Serialises role and grant changes: concurrent GRANTs on one object fail in PostgreSQL.
PROVISION_LOCK_KEY = 0x7265_6164_6572  # "reader"
SELECT_READER = """
SELECT r.role_name, t.data_schema,
       array(SELECT c.relname::text FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
             WHERE n.nspname = t.data_schema AND c.relkind IN ('r', 'v', 'm', 'p', 'f')
               AND has_any_column_privilege(r.role_name, c.oid, 'SELECT')
             ORDER BY 1) AS tables
FROM tenant_readers r JOIN tenants t USING (tenant_id)
WHERE r.tenant_id = %s
"""
SELECT_SCHEMA_COLUMNS = """
SELECT c.relname::text AS table_name, array_agg(a.attname::text ORDER BY a.attnum) AS columns
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
WHERE n.nspname = %s AND c.relkind IN ('r', 'v', 'm', 'p', 'f')
GROUP BY c.relname
"""
TENANTS_WITH_DATA = "SELECT tenant_id, data_schema, domain FROM tenants WHERE data_schema IS NOT NULL"


def reader_password(secret: bytes, tenant_id: str) -> str:
    """The reader role's password of ``tenant_id``: derived, so it never needs storing."""
    return hmac.new(secret, f"reader:{tenant_id}".encode(), hashlib.sha256).hexdigest()


def reader_secret(settings: Settings) -> bytes:
    """The secret reader passwords are derived from (see the module docstring). Reads a file the
    first time: from async code use ``load_reader_secret``."""
    if settings.secret_key is not None:
        return settings.secret_key.get_secret_value().encode()
    return _secret_file(settings.data_dir.resolve())


async def load_reader_secret(settings: Settings) -> bytes:
    if settings.secret_key is not None:
        return settings.secret_key.get_secret_value().encode()
    known = _SECRETS.get(settings.data_dir)
    if known is None:
        known = _SECRETS[settings.data_dir] = await asyncio.to_thread(reader_secret, settings)
    return known


_SECRETS: dict[Path, bytes] = {}


@lru_cache(maxsize=16)
def _secret_file(data_dir: Path) -> bytes:
    path = data_dir / "secret_key"
    if not path.exists():
        data_dir.mkdir(parents=True, exist_ok=True)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:  # another process made it first
            pass
        else:
            with os.fdopen(fd, "w") as handle:
                handle.write(secrets.token_hex(32))
    return path.read_text().strip().encode()


def reader_role_name(database: str, schema: str) -> str:
    # Roles belong to the whole server, schemas to one database: the database's name is part of the
    # role's, so tenants of the same id in two databases never share a login.
    tag = hashlib.sha256(database.encode()).hexdigest()[:8]
    return f"{schema[:40]}_{tag}_reader"


async def provision_reader(
    conn: AsyncConnection[Any],
    *,
    tenant_id: str,
    schema: str,
    password: str,
    hidden_columns: Mapping[str, tuple[str, ...]] | None = None,
) -> str:
    """Create or re-key the tenant's reader role, harden it and grant exactly its visible columns.
    Idempotent; call inside a transaction, on a connection with dict rows. Returns the role's name."""
    await conn.execute("SELECT pg_advisory_xact_lock(%s)", (PROVISION_LOCK_KEY,))
    row = await (
        await conn.execute("SELECT role_name FROM tenant_readers WHERE tenant_id = %s", (tenant_id,))
    ).fetchone()
    if row is not None:
        role = str(row["role_name"])
    else:
        database = await (await conn.execute("SELECT current_database() AS db")).fetchone()
        assert database is not None
        role = reader_role_name(database["db"], schema)
    exists = await (await conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (role,))).fetchone()
    if exists is None:
        await conn.execute(
            sql.SQL(
                "CREATE ROLE {} LOGIN PASSWORD {} NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION"
                " NOBYPASSRLS NOINHERIT CONNECTION LIMIT 8"
            ).format(sql.Identifier(role), sql.Literal(password))
        )
    else:
        await set_reader_password(conn, role, password)
    await conn.execute("SELECT master_agent_harden_reader(%s, %s)", (role, schema))
    hidden = hidden_columns or {}
    columns = await (await conn.execute(SELECT_SCHEMA_COLUMNS, (schema,))).fetchall()
    await conn.execute(
        sql.SQL("REVOKE ALL ON ALL TABLES IN SCHEMA {} FROM {}").format(
            sql.Identifier(schema), sql.Identifier(role)
        )
    )
    for item in columns:
        table, names = item["table_name"], list(item["columns"])
        table_id = sql.Identifier(schema, table)
        if table not in hidden:
            await conn.execute(sql.SQL("GRANT SELECT ON {} TO {}").format(table_id, sql.Identifier(role)))
            continue
        visible = [name for name in names if name not in hidden[table]]
        if visible:
            await conn.execute(
                sql.SQL("GRANT SELECT ({}) ON {} TO {}").format(
                    sql.SQL(", ").join(map(sql.Identifier, visible)), table_id, sql.Identifier(role)
                )
            )
    await conn.execute(
        "INSERT INTO tenant_readers (tenant_id, role_name) VALUES (%s, %s) ON CONFLICT (tenant_id) DO NOTHING",
        (tenant_id, role),
    )
    return role


async def set_reader_password(conn: AsyncConnection[Any], role: str, password: str) -> None:
    await conn.execute(
        sql.SQL("ALTER ROLE {} PASSWORD {}").format(sql.Identifier(role), sql.Literal(password))
    )


async def provision_readers(
    pool: AsyncConnectionPool[Any],
    settings: Settings,
    hidden_columns: Mapping[str, Mapping[str, tuple[str, ...]]],
) -> None:
    """Provision the reader of every tenant that has a data schema; ``hidden_columns`` by domain
    (``provision_tenant_readers`` takes them from the registered packs)."""
    secret = await load_reader_secret(settings)
    async with pool.connection() as conn, conn.transaction():
        tenants = await (await conn.execute(TENANTS_WITH_DATA)).fetchall()
        for tenant in tenants:
            await provision_reader(
                conn,
                tenant_id=tenant["tenant_id"],
                schema=tenant["data_schema"],
                password=reader_password(secret, tenant["tenant_id"]),
                hidden_columns=hidden_columns.get(tenant["domain"] or "", {}),
            )
