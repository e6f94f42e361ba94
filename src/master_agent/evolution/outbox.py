"""Notifications: written to the ``outbox`` table in the writer's transaction, delivered later by a
pluggable ``Notifier``. The default notifier only records delivery, so nothing leaves the machine."""

from __future__ import annotations

import importlib
import json
import uuid
from datetime import datetime
from typing import Any, Protocol, cast

from psycopg import AsyncConnection
from psycopg_pool import AsyncConnectionPool
from pydantic import BaseModel

from master_agent.errors import ConfigError

INSERT_MESSAGE = """
INSERT INTO outbox (message_id, tenant_id, channel, subject, body) VALUES (%s, %s, %s, %s, %s)
"""
CLAIM_PENDING = """
SELECT message_id, tenant_id, channel, subject, body, status, created_at, delivered_at FROM outbox
WHERE status = 'pending' AND channel <> 'webhook' ORDER BY created_at LIMIT %s FOR UPDATE SKIP LOCKED
"""
MARK = "UPDATE outbox SET status = %s, delivered_at = CASE WHEN %s THEN now() END WHERE message_id = %s"


class OutboxMessage(BaseModel):
    """A row of ``outbox``."""

    message_id: uuid.UUID
    tenant_id: str
    channel: str
    subject: str
    body: dict[str, Any]
    status: str
    created_at: datetime
    delivered_at: datetime | None = None


class Notifier(Protocol):
    """Delivers one message (email, chat, webhook...); raising marks it ``failed`` (kept, not retried)."""

    async def deliver(self, message: OutboxMessage) -> None: ...


class RecordingNotifier:
    """The default: delivery is the record itself (the row turns ``delivered``)."""

    async def deliver(self, message: OutboxMessage) -> None:
        return None


def load_notifier(reference: str | None) -> Notifier:
    """The notifier ``module:attribute`` names (an instance, or a class/factory called without
    arguments); the recording one when ``reference`` is None."""
    if reference is None:
        return RecordingNotifier()
    module_name, _, attribute = reference.partition(":")
    try:
        target = getattr(importlib.import_module(module_name), attribute)
    except (ImportError, AttributeError) as error:
        raise ConfigError(f"MASTER_AGENT_NOTIFIER: cannot load {reference!r}: {error}") from None
    factory = isinstance(target, type) or (callable(target) and not hasattr(target, "deliver"))
    notifier = target() if factory else target
    if not callable(getattr(notifier, "deliver", None)):
        raise ConfigError(f"MASTER_AGENT_NOTIFIER: {reference!r} has no deliver(message) method")
    return cast(Notifier, notifier)


async def enqueue(
    conn: AsyncConnection[Any], tenant_id: str, channel: str, subject: str, body: dict[str, Any]
) -> uuid.UUID:
    """Add a message in the caller's transaction (it is sent only if that transaction commits)."""
    message_id = uuid.uuid4()
    await conn.execute(
        INSERT_MESSAGE, (message_id, tenant_id, channel, subject, json.dumps(body, default=str))
    )
    return message_id


async def deliver_pending(
    pool: AsyncConnectionPool[Any], notifier: Notifier, *, batch: int = 100
) -> tuple[int, int]:
    """Hand pending messages to ``notifier``; returns (delivered, failed)."""
    delivered = failed = 0
    async with pool.connection() as conn, conn.transaction():
        rows = await (await conn.execute(CLAIM_PENDING, (batch,))).fetchall()
        for row in rows:
            message = OutboxMessage.model_validate(row)
            try:
                await notifier.deliver(message)
            except Exception:
                await conn.execute(MARK, ("failed", False, message.message_id))
                failed += 1
            else:
                await conn.execute(MARK, ("delivered", True, message.message_id))
                delivered += 1
    return delivered, failed
