"""What a tenant's tools are bound to."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from psycopg_pool import AsyncConnectionPool

from master_agent.settings import Settings

if TYPE_CHECKING:
    from master_agent.models.embeddings import Embedder


@dataclass(frozen=True, kw_only=True)
class ToolContext:
    """One tenant's view of the process resources."""

    pool: AsyncConnectionPool[Any]
    """The shared pool (app role)."""
    database_uri: str
    """Server URI; the read-only SQL tool derives its reader login from it."""
    tenant_id: str
    data_schema: str | None
    """The tenant's business-data schema, if its pack has one."""
    settings: Settings
    now: Callable[[], datetime] = field(default=lambda: datetime.now(UTC))
    """The clock tools read "today" from (the evolution loop's clock seam: tests and demos fix it)."""
    embedder: Embedder | None = None
    """What reads a text's meaning (village knowledge's embedder); None where nothing is embedded."""
