"""The meta-orchestrator's figures (its runs are the ``meta`` graph's, over the runs API)."""

from __future__ import annotations

from fastapi import APIRouter

from master_agent.meta.evaluation import MetaEvaluation, meta_evaluation
from master_agent.service.deps import ServiceDep, TenantDep
from master_agent.service.limits import StrictJsonRoute

router = APIRouter(prefix="/meta", tags=["meta"], route_class=StrictJsonRoute)


@router.get("/eval", response_model=MetaEvaluation)
async def read_meta_evaluation(service: ServiceDep, tenant: TenantDep) -> MetaEvaluation:
    """The tenant's meta-evaluation (seed 004 section 15): requests by status, each tracked metric per
    playbook (mean, least, most) and the promotions' acceptance rate."""
    return await meta_evaluation(service.resources.database.pool, tenant)
