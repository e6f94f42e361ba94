"""The row of a thread begun outside the API (a goal solved from the CLI, a CLI conversation or system
request): owned by its tenant from the start like every API thread, so the API and the console find it."""

from __future__ import annotations

import json
from typing import Any

RECORD_THREAD = """
INSERT INTO threads (thread_id, tenant_id, metadata, config) VALUES (%s, %s, %s, %s)
ON CONFLICT (thread_id) DO NOTHING
"""


async def record_thread(
    conn: Any, tenant_id: str, thread_id: str, metadata: dict[str, Any], config: dict[str, Any] | None = None
) -> None:
    """Store the thread's row (kept as it is when the thread has one already)."""
    await conn.execute(RECORD_THREAD, (thread_id, tenant_id, json.dumps(metadata), json.dumps(config or {})))
