"""NOTIFYs sent after the commits they announce, coalesced, in transactions that skip the WAL flush.

PostgreSQL lets one committing transaction that issued a NOTIFY through at a time: it takes a lock on
the notification queue before its commit and holds it through the commit's WAL flush. A run's end and
each batch of stored events used to notify in their own transaction, so under load every one of them
queued behind the others' disk flushes (issue 46). Those writes now commit alone, durable as before and
without the lock, and their notifications follow from here: whatever is asked for while a batch is being
sent goes out together in the next one, in one statement whose transaction commits without waiting for
the flush. A notification is no more durable than that anyway: a listener that misses one reads again
when it reconnects, and waiters and the claim loop poll as a safety net.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

from psycopg_pool import AsyncConnectionPool

logger = logging.getLogger(__name__)

#: Every (channel, payload) of a batch; ``synchronous_commit`` off for this transaction only.
NOTIFY_BATCH = """
SELECT set_config('synchronous_commit', 'off', true) AS commit_mode,
       (SELECT count(*) FROM (
            SELECT pg_notify(channel, payload)
            FROM unnest(%(channels)s::text[], %(payloads)s::text[]) AS sent(channel, payload)
       ) AS notified) AS notified
"""


class Notifier:
    """Sends notifications in the background, in order, those asked for meanwhile coalesced."""

    def __init__(self, pool: AsyncConnectionPool[Any]) -> None:
        self._pool = pool
        self._pending: list[tuple[str, str]] = []
        self._sender: asyncio.Task[None] | None = None

    def send(self, channel: str, payload: str = "") -> None:
        """Notify ``channel`` with ``payload`` soon (call it once what it announces is committed)."""
        self._pending.append((channel, payload))
        if self._sender is None or self._sender.done():
            self._sender = asyncio.create_task(self._send_pending())

    async def _send_pending(self) -> None:
        while self._pending:
            # A repeated notification is sent once (PostgreSQL folds them within a transaction too).
            batch, self._pending = list(dict.fromkeys(self._pending)), []
            try:
                async with self._pool.connection() as conn:
                    await conn.execute(
                        NOTIFY_BATCH,
                        {
                            "channels": [channel for channel, _ in batch],
                            "payloads": [payload for _, payload in batch],
                        },
                    )
            except Exception as error:
                logger.warning("%d notifications not sent; listeners poll for them: %s", len(batch), error)

    async def sent(self) -> None:
        """Return once what was asked for so far is sent (or failed)."""
        if self._sender is not None:
            with contextlib.suppress(Exception):
                await asyncio.shield(self._sender)

    async def aclose(self) -> None:
        """Until what was asked for is sent (or failed)."""
        await self.sent()
