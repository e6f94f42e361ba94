"""What the evolution loop works with: the pool, knowledge, scheduler, clock and notifier."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from psycopg_pool import AsyncConnectionPool

from master_agent.capabilities import load_tenant
from master_agent.capabilities.tools import ToolContext
from master_agent.evolution.clock import Clock, SystemClock
from master_agent.evolution.knowledge import KnowledgeStore
from master_agent.evolution.outbox import Notifier, RecordingNotifier
from master_agent.evolution.scheduler import EvolutionScheduler
from master_agent.settings import Settings


@dataclass(kw_only=True)
class EvolutionContext:
    pool: AsyncConnectionPool[Any]
    database_uri: str
    settings: Settings
    knowledge: KnowledgeStore
    scheduler: EvolutionScheduler | None = None
    """None where jobs are neither added nor run (the checks still land in their tables)."""
    clock: Clock = field(default_factory=SystemClock)
    notifier: Notifier = field(default_factory=RecordingNotifier)
    checkpoints_swept_at: datetime | None = None
    """When this process (as the scheduler leader) last swept checkpoints by the retention policy."""
    thread_ttls_swept_at: datetime | None = None
    """When this process (as the scheduler leader) last swept threads whose own TTL ran out."""

    async def tool_context(self, tenant_id: str) -> ToolContext:
        tenant = await load_tenant(self.pool, tenant_id)
        return ToolContext(
            pool=self.pool,
            database_uri=self.database_uri,
            tenant_id=tenant_id,
            data_schema=tenant.data_schema,
            settings=self.settings,
            now=lambda: self.clock.now(),
            embedder=self.knowledge.embedder,
        )
