"""Assistants: a graph plus a config. Each tenant has a system assistant for ``master_agent``; its id is
derived from the tenant, so every process agrees on it without coordination."""

from __future__ import annotations

import json
import uuid
import weakref
from datetime import datetime
from typing import Any

from psycopg_pool import AsyncConnectionPool
from pydantic import BaseModel

from master_agent.service.limits import StoredMetadata

GRAPH_ID = "master_agent"
_NAMESPACE = uuid.UUID("6f1c1bd2-5c1e-4c55-9a53-0d6d2f7d8a11")

UPSERT_SYSTEM = """
INSERT INTO assistants (assistant_id, tenant_id, graph_id, name, metadata)
VALUES (%s, %s, %s, %s, %s)
ON CONFLICT (assistant_id) DO NOTHING
"""
SELECT_ONE = "SELECT * FROM assistants WHERE tenant_id = %s AND assistant_id = %s"
SEARCH = """
SELECT *, count(*) OVER () AS total FROM assistants
WHERE tenant_id = %(tenant)s
  AND (%(graph_id)s::text IS NULL OR graph_id = %(graph_id)s)
  AND (%(name)s::text IS NULL OR name = %(name)s)
  AND metadata @> %(metadata)s
ORDER BY created_at, assistant_id
LIMIT %(limit)s OFFSET %(offset)s
"""


class Assistant(BaseModel):
    assistant_id: uuid.UUID
    graph_id: str
    name: str
    description: str | None
    config: dict[str, Any]
    context: dict[str, Any]
    metadata: StoredMetadata
    version: int
    created_at: datetime
    updated_at: datetime


def system_assistant_id(tenant_id: str, graph_id: str = GRAPH_ID) -> uuid.UUID:
    return uuid.uuid5(_NAMESPACE, f"{tenant_id}:{graph_id}")


#: Per pool (a database; weakly, so a pool made later at a freed pool's address starts empty): the
#: tenants and graphs whose system assistants exist, and the system assistants as read once (nothing
#: changes them after they are created).
_ensured: weakref.WeakKeyDictionary[Any, set[tuple[str, tuple[str, ...]]]] = weakref.WeakKeyDictionary()
_system_assistants: weakref.WeakKeyDictionary[Any, dict[tuple[str, uuid.UUID], Assistant]] = (
    weakref.WeakKeyDictionary()
)


async def ensure_system_assistants(
    pool: AsyncConnectionPool[Any], tenant_id: str, graph_ids: list[str]
) -> None:
    """One assistant per served graph, created on first use (once per process and tenant)."""
    ensured = _ensured.setdefault(pool, set())
    key = (tenant_id, tuple(graph_ids))
    if key in ensured:
        return
    async with pool.connection() as conn:
        for graph_id in graph_ids:
            await conn.execute(
                UPSERT_SYSTEM,
                (
                    system_assistant_id(tenant_id, graph_id),
                    tenant_id,
                    graph_id,
                    graph_id,
                    json.dumps({"created_by": "system"}),
                ),
            )
    ensured.add(key)


async def resolve_assistant(
    pool: AsyncConnectionPool[Any], tenant_id: str, ref: str, graph_ids: list[str]
) -> Assistant | None:
    """An assistant by id, or the system assistant when ``ref`` names a graph."""
    await ensure_system_assistants(pool, tenant_id, graph_ids)
    if ref in graph_ids:
        assistant_id = system_assistant_id(tenant_id, ref)
    else:
        try:
            assistant_id = uuid.UUID(ref)
        except ValueError:
            return None
    known = _system_assistants.setdefault(pool, {})
    if (tenant_id, assistant_id) in known:
        return known[(tenant_id, assistant_id)]
    async with pool.connection() as conn:
        row = await (await conn.execute(SELECT_ONE, (tenant_id, assistant_id))).fetchone()
    if row is None:
        return None
    assistant = Assistant.model_validate(row)
    if assistant.metadata.get("created_by") == "system":
        known[(tenant_id, assistant_id)] = assistant
    return assistant


async def search_assistants(
    pool: AsyncConnectionPool[Any],
    tenant_id: str,
    graph_ids: list[str],
    *,
    graph_id: str | None,
    name: str | None,
    metadata: dict[str, Any],
    limit: int,
    offset: int,
) -> tuple[list[Assistant], int]:
    await ensure_system_assistants(pool, tenant_id, graph_ids)
    params = {
        "tenant": tenant_id,
        "graph_id": graph_id,
        "name": name,
        "metadata": json.dumps(metadata),
        "limit": limit,
        "offset": offset,
    }
    async with pool.connection() as conn:
        rows = await (await conn.execute(SEARCH, params)).fetchall()
    total = int(rows[0]["total"]) if rows else 0
    return [Assistant.model_validate(row) for row in rows], total
