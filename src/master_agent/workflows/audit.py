"""The audit trail of a stage-driven conversation (table ``audit_events``, append-only).

Each graph node collects its events and writes them in one statement when it ends (``flush``), so a
turn costs a few round trips, not one per field read.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any, Literal

from psycopg.types.json import Jsonb
from psycopg_pool import AsyncConnectionPool
from pydantic import BaseModel

AuditKind = Literal[
    "message", "decision", "transition", "read", "tool", "document", "task", "refused", "override"
]

INSERT_EVENT = """
INSERT INTO audit_events (tenant_id, thread_id, workflow, kind, stage, agent, detail, at)
VALUES (%s, %s, %s, %s, %s, %s, %s, %s)
"""
SELECT_EVENTS = """
SELECT event_id, tenant_id, thread_id, workflow, kind, stage, agent, detail, at
FROM audit_events
WHERE tenant_id = %s AND (%s::text IS NULL OR thread_id = %s) AND (%s::text IS NULL OR kind = %s)
ORDER BY event_id
LIMIT %s OFFSET %s
"""


# One row per conversation: its workflow, where it stands (the newest stage an event names), how many
# messages and events it has, when it began and when it last moved.
SELECT_CONVERSATIONS = """
SELECT thread_id, min(workflow) AS workflow,
       (array_agg(stage ORDER BY event_id DESC) FILTER (WHERE stage IS NOT NULL))[1] AS stage,
       count(*) FILTER (WHERE kind = 'message') AS messages, count(*) AS events,
       min(at) AS started_at, max(at) AS last_at
FROM audit_events WHERE tenant_id = %s
GROUP BY thread_id ORDER BY max(at) DESC, thread_id LIMIT %s
"""
COUNT_CONVERSATIONS = "SELECT count(DISTINCT thread_id) AS n FROM audit_events WHERE tenant_id = %s"


class Conversation(BaseModel):
    """A stage-driven conversation as its audit trail tells it."""

    thread_id: str
    workflow: str
    stage: str | None
    messages: int
    events: int
    started_at: datetime
    last_at: datetime


class AuditEvent(BaseModel):
    event_id: int
    tenant_id: str
    thread_id: str
    workflow: str
    kind: AuditKind
    stage: str | None
    agent: str | None
    detail: dict[str, Any]
    at: datetime


class AuditTrail:
    """The events of one thread of one workflow, written on ``flush``."""

    def __init__(
        self,
        pool: AsyncConnectionPool[Any],
        tenant_id: str,
        thread_id: str,
        workflow: str,
        now: Callable[[], datetime],
    ) -> None:
        self.pool = pool
        self.tenant_id = tenant_id
        self.thread_id = thread_id
        self.workflow = workflow
        self.now = now
        self.stage: str | None = None
        self.agent: str | None = None
        self.pending: list[tuple[Any, ...]] = []

    def add(self, kind: AuditKind, **detail: Any) -> None:
        self.pending.append(
            (
                self.tenant_id,
                self.thread_id,
                self.workflow,
                kind,
                self.stage,
                self.agent,
                Jsonb(detail),
                self.now(),
            )
        )

    def read(self, source: str, fields: list[str], **detail: Any) -> None:
        """Customer information accessed: which fields of which record."""
        self.add("read", source=source, fields=fields, **detail)

    def tool(self, name: str, args: dict[str, Any], result: Any) -> None:
        self.add("tool", tool=name, args=args, result=result)

    def document(self, kind: str, document_id: str, **detail: Any) -> None:
        self.add("document", document=kind, document_id=document_id, **detail)

    async def flush(self) -> None:
        if not self.pending:
            return
        rows, self.pending = self.pending, []
        async with self.pool.connection() as conn, conn.cursor() as cursor:
            await cursor.executemany(INSERT_EVENT, rows)


async def audit_events(
    pool: AsyncConnectionPool[Any],
    tenant_id: str,
    *,
    thread_id: str | None = None,
    kind: str | None = None,
    limit: int = 1000,
    offset: int = 0,
) -> list[AuditEvent]:
    async with pool.connection() as conn:
        cursor = await conn.execute(
            SELECT_EVENTS, (tenant_id, thread_id, thread_id, kind, kind, limit, offset)
        )
        return [AuditEvent.model_validate(row) for row in await cursor.fetchall()]


async def conversations(
    pool: AsyncConnectionPool[Any], tenant_id: str, limit: int
) -> tuple[list[Conversation], int]:
    """The tenant's ``limit`` most recently active conversations, and how many it has in all."""
    async with pool.connection() as conn:
        rows = await (await conn.execute(SELECT_CONVERSATIONS, (tenant_id, limit))).fetchall()
        total = await (await conn.execute(COUNT_CONVERSATIONS, (tenant_id,))).fetchone()
    return [Conversation.model_validate(row) for row in rows], int(total["n"]) if total else 0
