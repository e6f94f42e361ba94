"""API keys: created once and shown once, stored as sha256 hashes, revocable; the tenant comes from
the key, never from a request body."""

from __future__ import annotations

import hashlib
import secrets
import time
import uuid
from datetime import datetime
from typing import Any

from psycopg_pool import AsyncConnectionPool
from pydantic import BaseModel

from master_agent.errors import InputError, UnknownTenantError

KEY_PREFIX = "ma_"

INSERT_KEY = "INSERT INTO api_keys (key_id, tenant_id, name, prefix, key_hash) VALUES (%s, %s, %s, %s, %s)"
SELECT_TENANT_BY_KEY = """
SELECT k.tenant_id FROM api_keys k JOIN tenants t USING (tenant_id)
WHERE k.key_hash = %s AND k.revoked_at IS NULL
"""
REVOKE_KEY = (
    "UPDATE api_keys SET revoked_at = now() WHERE key_id = %s AND revoked_at IS NULL RETURNING tenant_id"
)
LIST_KEYS = """
SELECT key_id, tenant_id, name, prefix, created_at, revoked_at FROM api_keys
WHERE tenant_id = %s ORDER BY created_at
"""


class NewApiKey(BaseModel):
    """A key as created: ``key`` is shown this once and never stored."""

    key_id: uuid.UUID
    tenant_id: str
    key: str


class ApiKeyPublic(BaseModel):
    key_id: uuid.UUID
    tenant_id: str
    name: str
    prefix: str
    created_at: datetime
    revoked_at: datetime | None


def hash_key(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


async def create_key(pool: AsyncConnectionPool[Any], tenant_id: str, name: str = "") -> NewApiKey:
    async with pool.connection() as conn:
        exists = await (
            await conn.execute("SELECT 1 FROM tenants WHERE tenant_id = %s", (tenant_id,))
        ).fetchone()
        if exists is None:
            raise UnknownTenantError(tenant_id)
        key = KEY_PREFIX + secrets.token_urlsafe(32)
        key_id = uuid.uuid4()
        await conn.execute(INSERT_KEY, (key_id, tenant_id, name, key[:10], hash_key(key)))
    return NewApiKey(key_id=key_id, tenant_id=tenant_id, key=key)


async def revoke_key(pool: AsyncConnectionPool[Any], key_id: str) -> None:
    try:
        parsed = uuid.UUID(key_id)
    except ValueError:
        raise InputError("key_id", f"{key_id!r} is not a key id (a UUID)") from None
    async with pool.connection() as conn:
        row = await (await conn.execute(REVOKE_KEY, (parsed,))).fetchone()
    if row is None:
        raise InputError("key_id", f"no active key {key_id}")
    _key_cache.clear()  # this process stops trusting it at once; others within KEY_CACHE_S


async def list_keys(pool: AsyncConnectionPool[Any], tenant_id: str) -> list[ApiKeyPublic]:
    async with pool.connection() as conn:
        rows = await (await conn.execute(LIST_KEYS, (tenant_id,))).fetchall()
    return [ApiKeyPublic.model_validate(row) for row in rows]


#: How long this process trusts a key lookup; a key revoked in another process stops working within it.
KEY_CACHE_S = 2.0
_key_cache: dict[str, tuple[float, str]] = {}


async def tenant_for_key(pool: AsyncConnectionPool[Any], key: str) -> str | None:
    if not key.startswith(KEY_PREFIX):
        return None
    digest = hash_key(key)
    cached = _key_cache.get(digest)
    if cached is not None and cached[0] > time.monotonic():
        return cached[1]
    async with pool.connection() as conn:
        row = await (await conn.execute(SELECT_TENANT_BY_KEY, (digest,))).fetchone()
    if row is None:
        _key_cache.pop(digest, None)
        return None
    _key_cache[digest] = (time.monotonic() + KEY_CACHE_S, str(row["tenant_id"]))
    return str(row["tenant_id"])
