"""What one service process holds for its whole life."""

from __future__ import annotations

from dataclasses import dataclass

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
