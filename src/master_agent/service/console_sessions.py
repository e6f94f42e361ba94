"""Web console sessions, kept in Postgres (``console_sessions``): the cookie holds a random opaque id and
the table only its sha256, so signing out, an expiry or revoking the API key that signed in ends the
session for every copy of the cookie at once. The anti-forgery token is derived from the session id.

Lives beside ``service.auth`` rather than in ``service.console``: the API's tenant dependency (for
``/console/api``) needs it, and the console package imports that dependency."""

from __future__ import annotations

import hashlib
import hmac
import secrets
from typing import Any

from psycopg_pool import AsyncConnectionPool
from pydantic import BaseModel

from master_agent.evolution.knowledge import tenant_session
from master_agent.service.auth import KEY_PREFIX, hash_key

#: Longest cookie value looked up; a session id is 43 characters, anything much longer is not one.
MAX_SESSION_ID_CHARS = 128
#: How stale ``last_seen_at`` may get before a request refreshes it: one write a minute per session,
#: not one per request, at the price of noticing idleness up to this late.
TOUCH_EVERY_S = 60
#: Rows stay this long past their absolute expiry (a trace of recent sign-ins), then sign-in deletes them.
KEEP_ENDED_S = 86_400

START_SESSION = """
INSERT INTO console_sessions (session_hash, tenant_id, key_id, expires_at)
SELECT %(session_hash)s, k.tenant_id, k.key_id, now() + %(lifetime_s)s * interval '1 second'
FROM api_keys k
WHERE k.key_hash = %(key_hash)s AND k.revoked_at IS NULL
RETURNING tenant_id
"""
DELETE_ENDED = "DELETE FROM console_sessions WHERE expires_at < now() - %s * interval '1 second'"
# One statement by the primary key (and api_keys' primary key): refused when revoked, past its absolute
# or idle expiry, or its key was revoked; ``last_seen_at`` refreshed when it is over a minute old.
FIND_SESSION = """
WITH found AS (
    SELECT s.session_hash, s.tenant_id, s.last_seen_at
    FROM console_sessions s JOIN api_keys k ON k.key_id = s.key_id
    WHERE s.session_hash = %(session_hash)s
      AND s.revoked_at IS NULL AND k.revoked_at IS NULL
      AND s.expires_at > now()
      AND s.last_seen_at > now() - %(idle_s)s * interval '1 second'
), touched AS (
    UPDATE console_sessions s SET last_seen_at = now()
    FROM found f
    WHERE s.session_hash = f.session_hash AND f.last_seen_at < now() - %(touch_s)s * interval '1 second'
)
SELECT tenant_id FROM found
"""
END_SESSION = "UPDATE console_sessions SET revoked_at = now() WHERE session_hash = %s AND revoked_at IS NULL"


class StartedSession(BaseModel):
    """A new sign-in: ``session_id`` goes in the cookie and is never stored."""

    session_id: str
    tenant_id: str


def hash_session(session_id: str) -> str:
    return hashlib.sha256(session_id.encode()).hexdigest()


def csrf_token_for_session(session_id: str) -> str:
    """The anti-forgery token of a session: only who holds the session id can make it (a page of another
    site cannot read the HttpOnly cookie), it needs no storage, and it dies with the session."""
    return hmac.new(session_id.encode(), b"master-agent console csrf", hashlib.sha256).hexdigest()


async def start_session(pool: AsyncConnectionPool[Any], key: str, lifetime_s: int) -> StartedSession | None:
    """A session for an active API key; None when the key is not one (or was revoked)."""
    if not key.startswith(KEY_PREFIX):
        return None
    session_id = secrets.token_urlsafe(32)
    params = {"session_hash": hash_session(session_id), "lifetime_s": lifetime_s, "key_hash": hash_key(key)}
    async with pool.connection() as conn:
        await conn.execute(DELETE_ENDED, (KEEP_ENDED_S,))
        row = await (await conn.execute(START_SESSION, params)).fetchone()
    if row is None:
        return None
    return StartedSession(session_id=session_id, tenant_id=str(row["tenant_id"]))


async def session_tenant(pool: AsyncConnectionPool[Any], session_id: str, idle_s: int) -> str | None:
    """The tenant of a live session; None when it does not exist, ended, or its key was revoked."""
    if not session_id or len(session_id) > MAX_SESSION_ID_CHARS:
        return None
    params = {"session_hash": hash_session(session_id), "idle_s": idle_s, "touch_s": TOUCH_EVERY_S}
    async with pool.connection() as conn:
        row = await (await conn.execute(FIND_SESSION, params)).fetchone()
    return str(row["tenant_id"]) if row is not None else None


async def end_session(pool: AsyncConnectionPool[Any], tenant_id: str, session_id: str) -> None:
    """Revoke the session; as the tenant, so row-level security keeps it to the tenant's own sessions."""
    async with tenant_session(pool, tenant_id) as conn:
        await conn.execute(END_SESSION, (hash_session(session_id),))
