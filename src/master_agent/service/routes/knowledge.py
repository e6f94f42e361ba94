"""Village knowledge, tenant-scoped by row-level security: semantic search and one pattern."""

from __future__ import annotations

import uuid
from typing import Annotated

from fastapi import APIRouter, HTTPException, Query

from master_agent.evolution import PatternMatch
from master_agent.service.deps import ServiceDep, TenantDep
from master_agent.service.limits import StrictJsonRoute

router = APIRouter(prefix="/knowledge", tags=["knowledge"], route_class=StrictJsonRoute)


@router.get("", response_model=list[PatternMatch])
async def search_knowledge(
    service: ServiceDep,
    tenant: TenantDep,
    q: Annotated[str, Query(min_length=1, max_length=2000, description="What the pattern should be about.")],
    limit: Annotated[int, Query(ge=1, le=50)] = 5,
) -> list[PatternMatch]:
    """Patterns nearest in meaning to ``q`` among the tenant's private and the shared ones."""
    return await service.resources.evolution.knowledge.search(tenant, q, limit=limit)


@router.get("/{pattern_id}", response_model=PatternMatch)
async def read_pattern(pattern_id: uuid.UUID, service: ServiceDep, tenant: TenantDep) -> PatternMatch:
    found = await service.resources.evolution.knowledge.get(tenant, pattern_id)
    if found is None:
        raise HTTPException(404, detail=f"pattern_id: no pattern {pattern_id}")
    return found
