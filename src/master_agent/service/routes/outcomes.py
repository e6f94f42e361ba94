"""Outcome checks and learnings of the caller's tenant."""

from __future__ import annotations

import uuid
from typing import Annotated

from fastapi import APIRouter, Query

from master_agent.evolution.learning import Learning, list_learnings
from master_agent.evolution.outcomes import OutcomeCheck, list_checks
from master_agent.service.deps import ResourcesDep, TenantDep
from master_agent.service.limits import StrictJsonRoute

router = APIRouter(tags=["outcomes"], route_class=StrictJsonRoute)


@router.get("/outcomes", response_model=list[OutcomeCheck])
async def list_outcomes(
    tenant: TenantDep,
    resources: ResourcesDep,
    solution_id: uuid.UUID | None = None,
    limit: Annotated[int, Query(ge=1, le=500)] = 100,
    offset: Annotated[int, Query(ge=0, le=1_000_000)] = 0,
) -> list[OutcomeCheck]:
    """Scheduled and measured checks, oldest due first (of one solution with ``solution_id``)."""
    solution = str(solution_id) if solution_id else None
    return await list_checks(resources.evolution, tenant, solution, limit=limit, offset=offset)


@router.get("/learnings", response_model=list[Learning])
async def read_learnings(
    tenant: TenantDep,
    resources: ResourcesDep,
    solution_id: uuid.UUID | None = None,
    limit: Annotated[int, Query(ge=1, le=100)] = 20,
    offset: Annotated[int, Query(ge=0, le=1_000_000)] = 0,
) -> list[Learning]:
    """What the tenant's measured outcomes taught, newest first (of one solution with ``solution_id``)."""
    solution = str(solution_id) if solution_id else None
    return await list_learnings(resources.evolution, tenant, limit=limit, offset=offset, solution_id=solution)
