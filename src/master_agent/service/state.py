"""What one service process holds for its whole life."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from master_agent.runtime import RuntimeResources
from master_agent.runtime.runs import RunQueue
from master_agent.service.metrics import ServiceMetrics
from master_agent.storage.rate_limits import Quotas


@dataclass(frozen=True, kw_only=True)
class ServiceState:
    resources: RuntimeResources
    queue: RunQueue
    metrics: ServiceMetrics
    quotas: Quotas
    ready: asyncio.Event = field(default_factory=asyncio.Event)
    """Set once what routing needs is loaded (``routing.warm``): ``/ok`` answers 503 until then."""
