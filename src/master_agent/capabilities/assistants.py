"""Assistants: a graph plus a config, versioned as langgraph-api versions them (every create or change is
a new immutable version; one is live). Each tenant has a system assistant per served graph; its id is
derived from the tenant, so every process agrees on it without coordination. An assistant whose config or
context carries an ``agent_spec`` is one of the tenant's own agents (``capabilities.agents``)."""

from __future__ import annotations

import contextlib
import json
import uuid
import weakref
from collections.abc import Iterator
from datetime import datetime
from typing import Any, Literal

import psycopg
from psycopg_pool import AsyncConnectionPool
from pydantic import BaseModel

from master_agent.errors import ConflictError, InputError, NotFoundError
from master_agent.storage.documents import StoredMetadata

GRAPH_ID = "master_agent"
#: Where an assistant's config or context carries a tenant agent's document.
AGENT_SPEC_KEY = "agent_spec"
_NAMESPACE = uuid.UUID("6f1c1bd2-5c1e-4c55-9a53-0d6d2f7d8a11")

UPSERT_SYSTEM = """
WITH made AS (
    INSERT INTO assistants (assistant_id, tenant_id, graph_id, name, metadata)
    VALUES (%(id)s, %(tenant)s, %(graph)s, %(graph)s, %(metadata)s)
    ON CONFLICT (assistant_id) DO NOTHING
    RETURNING assistant_id, tenant_id, graph_id, name, metadata, created_at
)
INSERT INTO assistant_versions (assistant_id, tenant_id, version, graph_id, name, metadata, created_at)
SELECT assistant_id, tenant_id, 1, graph_id, name, metadata, created_at FROM made
"""
SELECT_ONE = "SELECT * FROM assistants WHERE tenant_id = %s AND assistant_id = %s"
SELECT_FOR_CHANGE = "SELECT * FROM assistants WHERE tenant_id = %s AND assistant_id = %s FOR UPDATE"
_FILTERS = """
WHERE tenant_id = %(tenant)s
  AND (%(graph_id)s::text IS NULL OR graph_id = %(graph_id)s)
  AND (%(name)s::text IS NULL OR name = %(name)s)
  AND metadata @> %(metadata)s
"""
SEARCH = (
    "SELECT *, count(*) OVER () AS total FROM assistants"
    + _FILTERS
    + "ORDER BY {order}, assistant_id LIMIT %(limit)s OFFSET %(offset)s"
)
COUNT = "SELECT count(*) AS n FROM assistants" + _FILTERS
#: Serialises a tenant's creations, so two at once cannot both pass the count.
LOCK_TENANT_ASSISTANTS = "SELECT pg_advisory_xact_lock(hashtext('assistants:' || %s))"
COUNT_TENANT_ASSISTANTS = "SELECT count(*) AS n FROM assistants WHERE tenant_id = %s"
#: Assistants (agents included) one tenant may keep; each is a graph the service may build and route to.
MAX_ASSISTANTS_PER_TENANT = 500
INSERT_ASSISTANT = """
INSERT INTO assistants (assistant_id, tenant_id, graph_id, name, description, config, context, metadata,
                        version, agent_spec)
VALUES (%(id)s, %(tenant)s, %(graph_id)s, %(name)s, %(description)s, %(config)s, %(context)s, %(metadata)s,
        1, %(agent_spec)s)
ON CONFLICT (assistant_id) DO NOTHING
RETURNING *
"""
INSERT_VERSION = """
INSERT INTO assistant_versions (assistant_id, tenant_id, version, graph_id, name, description, config,
                                context, metadata, agent_spec)
VALUES (%(id)s, %(tenant)s, %(version)s, %(graph_id)s, %(name)s, %(description)s, %(config)s, %(context)s,
        %(metadata)s, %(agent_spec)s)
"""
MAKE_LIVE = """
UPDATE assistants SET graph_id = v.graph_id, name = v.name, description = v.description, config = v.config,
       context = v.context, metadata = v.metadata, agent_spec = v.agent_spec, version = v.version,
       updated_at = now()
FROM assistant_versions v
WHERE assistants.tenant_id = %(tenant)s AND assistants.assistant_id = %(id)s
  AND v.assistant_id = assistants.assistant_id AND v.version = %(version)s
RETURNING assistants.*
"""
NEXT_VERSION = "SELECT coalesce(max(version), 0) + 1 AS next FROM assistant_versions WHERE assistant_id = %s"
VERSIONS = """
SELECT * FROM assistant_versions
WHERE tenant_id = %(tenant)s AND assistant_id = %(id)s AND metadata @> %(metadata)s
ORDER BY version DESC LIMIT %(limit)s OFFSET %(offset)s
"""
DELETE = "DELETE FROM assistants WHERE tenant_id = %s AND assistant_id = %s RETURNING agent_spec"
AGENT_NAME_TAKEN = "assistants_agent_name"


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

    def agent_spec(self) -> dict[str, Any] | None:
        """The tenant agent's document this assistant carries, if any."""
        payload = agent_payload(self.config, self.context)[0]
        return payload if isinstance(payload, dict) else None


class AssistantVersion(BaseModel):
    assistant_id: uuid.UUID
    version: int
    graph_id: str
    name: str
    description: str | None
    config: dict[str, Any]
    context: dict[str, Any]
    metadata: StoredMetadata
    created_at: datetime


def agent_payload(config: dict[str, Any] | None, context: dict[str, Any] | None) -> tuple[Any, str]:
    """The agent document an assistant's config or context carries, and the field it came from."""
    configurable = (config or {}).get("configurable") or {}
    if isinstance(configurable, dict) and configurable.get(AGENT_SPEC_KEY) is not None:
        return configurable[AGENT_SPEC_KEY], f"config.configurable.{AGENT_SPEC_KEY}"
    if (context or {}).get(AGENT_SPEC_KEY) is not None:
        return (context or {})[AGENT_SPEC_KEY], f"context.{AGENT_SPEC_KEY}"
    return None, f"context.{AGENT_SPEC_KEY}"


def system_assistant_id(tenant_id: str, graph_id: str = GRAPH_ID) -> uuid.UUID:
    return uuid.uuid5(_NAMESPACE, f"{tenant_id}:{graph_id}")


def is_system(assistant_id: uuid.UUID, tenant_id: str, graph_ids: list[str]) -> bool:
    return any(assistant_id == system_assistant_id(tenant_id, graph_id) for graph_id in graph_ids)


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
                {
                    "id": system_assistant_id(tenant_id, graph_id),
                    "tenant": tenant_id,
                    "graph": graph_id,
                    "metadata": json.dumps({"created_by": "system"}),
                },
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
    if is_system(assistant_id, tenant_id, graph_ids):
        known[(tenant_id, assistant_id)] = assistant
    return assistant


SortBy = Literal["assistant_id", "graph_id", "name", "created_at", "updated_at"]


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
    sort_by: SortBy | None = None,
    sort_order: Literal["asc", "desc"] | None = None,
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
    # Both come from closed lists (the request model's literals), never from free text.
    order = f"{sort_by or 'created_at'} {(sort_order or 'asc').upper()}"
    async with pool.connection() as conn:
        rows = await (await conn.execute(SEARCH.format(order=order), params)).fetchall()
    total = int(rows[0]["total"]) if rows else 0
    return [Assistant.model_validate(row) for row in rows], total


async def count_assistants(
    pool: AsyncConnectionPool[Any],
    tenant_id: str,
    graph_ids: list[str],
    *,
    graph_id: str | None,
    name: str | None,
    metadata: dict[str, Any],
) -> int:
    await ensure_system_assistants(pool, tenant_id, graph_ids)
    params = {"tenant": tenant_id, "graph_id": graph_id, "name": name, "metadata": json.dumps(metadata)}
    async with pool.connection() as conn:
        row = await (await conn.execute(COUNT, params)).fetchone()
    return int(row["n"]) if row else 0


def _fields(
    tenant_id: str,
    assistant_id: uuid.UUID,
    *,
    graph_id: str,
    name: str,
    description: str | None,
    config: dict[str, Any],
    context: dict[str, Any],
    metadata: dict[str, Any],
    agent_spec: dict[str, Any] | None,
) -> dict[str, Any]:
    return {
        "id": assistant_id,
        "tenant": tenant_id,
        "graph_id": graph_id,
        "name": name,
        "description": description,
        "config": json.dumps(config),
        "context": json.dumps(context),
        "metadata": json.dumps(metadata),
        "agent_spec": None if agent_spec is None else json.dumps(agent_spec),
    }


@contextlib.contextmanager
def _agent_name_free(field: str, conflict: str) -> Iterator[None]:
    """A live agent name taken by another agent of the tenant (the unique index said so) is a 409."""
    try:
        yield
    except psycopg.errors.UniqueViolation as error:
        if error.diag.constraint_name != AGENT_NAME_TAKEN:
            raise
        raise ConflictError(f"{field}: {conflict}") from None


async def create_assistant(
    pool: AsyncConnectionPool[Any],
    tenant_id: str,
    *,
    assistant_id: uuid.UUID,
    graph_id: str,
    name: str,
    description: str | None,
    config: dict[str, Any],
    context: dict[str, Any],
    metadata: dict[str, Any],
    agent_spec: dict[str, Any] | None,
    if_exists: Literal["raise", "do_nothing"] = "raise",
) -> Assistant:
    """Store version 1 of a new assistant (live at once)."""
    fields = _fields(
        tenant_id,
        assistant_id,
        graph_id=graph_id,
        name=name,
        description=description,
        config=config,
        context=context,
        metadata=metadata,
        agent_spec=agent_spec,
    )
    taken = f"another agent of this tenant is named {(agent_spec or {}).get('name')!r}"
    with _agent_name_free("agent_spec.name", taken):
        async with pool.connection() as conn, conn.transaction():
            await conn.execute(LOCK_TENANT_ASSISTANTS, (tenant_id,))
            counted = await (await conn.execute(COUNT_TENANT_ASSISTANTS, (tenant_id,))).fetchone()
            if counted is not None and counted["n"] >= MAX_ASSISTANTS_PER_TENANT:
                raise InputError(
                    "assistant",
                    f"this tenant has {counted['n']} assistants, the most it may keep"
                    f" ({MAX_ASSISTANTS_PER_TENANT}); delete one first",
                )
            row = await (await conn.execute(INSERT_ASSISTANT, fields)).fetchone()
            if row is not None:
                await conn.execute(INSERT_VERSION, {**fields, "version": 1})
                return Assistant.model_validate(row)
            existing = await (await conn.execute(SELECT_ONE, (tenant_id, assistant_id))).fetchone()
    if existing is not None and if_exists == "do_nothing":
        return Assistant.model_validate(existing)
    # Another tenant's id is reported as taken too, but never shown.
    raise ConflictError(f"assistant_id: assistant {assistant_id} already exists")


async def patch_assistant(
    pool: AsyncConnectionPool[Any],
    tenant_id: str,
    assistant_id: uuid.UUID,
    *,
    graph_id: str | None,
    name: str | None,
    description: str | None,
    config: dict[str, Any] | None,
    context: dict[str, Any] | None,
    metadata: dict[str, Any] | None,
    agent_spec: dict[str, Any] | None,
) -> Assistant:
    """Store a new version (the live one's fields, changed as given; metadata merged) and make it
    live."""
    taken = f"another agent of this tenant is named {(agent_spec or {}).get('name')!r}"
    with _agent_name_free("agent_spec.name", taken):
        async with pool.connection() as conn, conn.transaction():
            row = await (await conn.execute(SELECT_FOR_CHANGE, (tenant_id, assistant_id))).fetchone()
            if row is None:
                raise NotFoundError("assistant", str(assistant_id))
            before = Assistant.model_validate(row)
            config = before.config if config is None else config
            context = before.context if context is None else context
            version = int(
                (await (await conn.execute(NEXT_VERSION, (assistant_id,))).fetchone() or {})["next"]
            )
            fields = _fields(
                tenant_id,
                assistant_id,
                graph_id=graph_id or before.graph_id,
                name=name or before.name,
                description=before.description if description is None else description,
                config=config,
                context=context,
                metadata={**before.metadata, **(metadata or {})},
                agent_spec=agent_spec,
            )
            await conn.execute(INSERT_VERSION, {**fields, "version": version})
            after = await (
                await conn.execute(MAKE_LIVE, {"tenant": tenant_id, "id": assistant_id, "version": version})
            ).fetchone()
    return Assistant.model_validate(after)


async def set_live_version(
    pool: AsyncConnectionPool[Any], tenant_id: str, assistant_id: uuid.UUID, version: int
) -> Assistant:
    """Promote (or roll back to) a stored version."""
    with _agent_name_free(
        "version", f"version {version} names an agent another agent of this tenant is named now"
    ):
        async with pool.connection() as conn, conn.transaction():
            row = await (
                await conn.execute(MAKE_LIVE, {"tenant": tenant_id, "id": assistant_id, "version": version})
            ).fetchone()
    if row is None:
        async with pool.connection() as conn:
            exists = await (await conn.execute(SELECT_ONE, (tenant_id, assistant_id))).fetchone()
        if exists is None:
            raise NotFoundError("assistant", str(assistant_id))
        raise InputError("version", f"assistant {assistant_id} has no version {version}")
    return Assistant.model_validate(row)


async def assistant_versions(
    pool: AsyncConnectionPool[Any],
    tenant_id: str,
    assistant_id: uuid.UUID,
    *,
    metadata: dict[str, Any],
    limit: int,
    offset: int,
) -> list[AssistantVersion]:
    params = {
        "tenant": tenant_id,
        "id": assistant_id,
        "metadata": json.dumps(metadata),
        "limit": limit,
        "offset": offset,
    }
    async with pool.connection() as conn:
        rows = await (await conn.execute(VERSIONS, params)).fetchall()
    return [AssistantVersion.model_validate(row) for row in rows]


async def delete_assistant(pool: AsyncConnectionPool[Any], tenant_id: str, assistant_id: uuid.UUID) -> bool:
    """Delete an assistant and its versions; True when it was a tenant agent."""
    async with pool.connection() as conn:
        row = await (await conn.execute(DELETE, (tenant_id, assistant_id))).fetchone()
    if row is None:
        raise NotFoundError("assistant", str(assistant_id))
    return row["agent_spec"] is not None
