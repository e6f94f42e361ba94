"""What a tenant's tools are bound to."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from psycopg_pool import AsyncConnectionPool

from master_agent.settings import Settings


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
