"""Strategic goals: submit one (queued for the workers), follow it, list them."""

from __future__ import annotations

import uuid
from typing import Annotated, Any

from fastapi import APIRouter, HTTPException, Query, Response
from pydantic import BaseModel, ConfigDict, Field

from master_agent.runtime import RuntimeResources, Solution, SolveRequest, run_solution, submit
from master_agent.runtime.factory import Complexity, Variant
from master_agent.runtime.runs import RunQueue
from master_agent.runtime.solve import MAX_GOAL_CHARS
from master_agent.service.deps import QueueDep, ResourcesDep, RunTenantDep, TenantDep
from master_agent.service.limits import StrictJsonRoute
from master_agent.service.solutions import (
    StrategicGoalPage,
    StrategicGoalPublic,
    get_solution,
    list_solutions,
)

router = APIRouter(prefix="/api/cs/strategic-goals", tags=["strategic goals"], route_class=StrictJsonRoute)

#: Longest a ``?wait=true`` request waits before answering 202 with the links to follow.
WAIT_LIMIT_S = 600.0


class StrategicGoalCreate(BaseModel):
    """A business goal to solve."""

    model_config = ConfigDict(extra="forbid")

    goal: str = Field(min_length=1, max_length=MAX_GOAL_CHARS)
    client_id: str | None = Field(default=None, description="Must equal the API key's tenant when given.")
    timeline_days: int | None = Field(default=None, ge=7, le=730)
    complexity: Complexity | None = None
    ab_test_variant: Variant = "control"
    deploy_playbook: bool = Field(
        default=False, description="Deploy the solution's playbook as part of the goal."
    )


class GoalLinks(BaseModel):
    self: str
    stream: str
    thread: str


class StrategicGoalAccepted(BaseModel):
    solution_id: uuid.UUID
    thread_id: str
    run_id: uuid.UUID
    status: str
    links: GoalLinks


class StrategicGoalInterrupted(BaseModel):
    status: str = "interrupted"
    solution_id: uuid.UUID
    thread_id: str
    interrupt: dict[str, Any]


async def start_goal(
    body: StrategicGoalCreate, tenant: str, resources: RuntimeResources, queue: RunQueue
) -> StrategicGoalAccepted:
    """Store the goal and queue its run for the workers."""
    if body.client_id is not None and body.client_id != tenant:
        raise HTTPException(403, detail="client_id: differs from the tenant of the API key")
    request = SolveRequest.parse(
        tenant_id=tenant,
        goal=body.goal,
        complexity=body.complexity,
        ab_test_variant=body.ab_test_variant,
        timeline_days=body.timeline_days,
        deploy_playbook=body.deploy_playbook,
    )
    # The goal's thread is a thread of the API too (submit stores it), so its stream and state links work.
    submitted = await submit(resources, request)
    run_id = await queue.enqueue_solution(
        tenant_id=tenant, thread_id=submitted.thread_id, solution_id=submitted.solution_id
    )
    return StrategicGoalAccepted(
        solution_id=uuid.UUID(submitted.solution_id),
        thread_id=submitted.thread_id,
        run_id=uuid.UUID(run_id),
        status="pending",
        links=GoalLinks(
            self=f"/api/cs/strategic-goals/{submitted.solution_id}",
            stream=f"/threads/{submitted.thread_id}/runs/{run_id}/stream",
            thread=f"/threads/{submitted.thread_id}",
        ),
    )


@router.post(
    "",
    status_code=202,
    response_model=StrategicGoalAccepted | Solution | StrategicGoalInterrupted | StrategicGoalPublic,
    responses={200: {"model": Solution, "description": "With ?wait=true: the solution."}},
)
async def create_strategic_goal(
    body: StrategicGoalCreate,
    tenant: RunTenantDep,
    resources: ResourcesDep,
    queue: QueueDep,
    response: Response,
    wait: Annotated[bool, Query(description="Answer with the solution once it is ready.")] = False,
) -> StrategicGoalAccepted | Solution | StrategicGoalInterrupted | StrategicGoalPublic:
    accepted = await start_goal(body, tenant, resources, queue)
    if not wait:
        return accepted
    run = await queue.wait(str(accepted.run_id), within_s=WAIT_LIMIT_S)
    if run is None or run.status in ("pending", "running"):
        return accepted
    response.status_code = 200
    stored = await get_solution(resources.database.pool, tenant, accepted.solution_id)
    if stored is not None and stored.solution is not None:
        return stored.solution
    if run.status == "interrupted":
        outcome = await run_solution(resources, str(accepted.solution_id))  # reads the pending question
        return StrategicGoalInterrupted(
            solution_id=accepted.solution_id, thread_id=outcome.thread_id, interrupt=outcome.interrupt or {}
        )
    assert stored is not None
    return stored


@router.get("/{solution_id}", response_model=StrategicGoalPublic)
async def read_strategic_goal(
    solution_id: uuid.UUID, tenant: TenantDep, resources: ResourcesDep
) -> StrategicGoalPublic:
    found = await get_solution(resources.database.pool, tenant, solution_id)
    if found is None:
        raise HTTPException(404, detail=f"solution_id: no strategic goal {solution_id}")
    return found


@router.get("", response_model=StrategicGoalPage)
async def list_strategic_goals(
    tenant: TenantDep,
    resources: ResourcesDep,
    limit: Annotated[int, Query(ge=1, le=100)] = 20,
    offset: Annotated[int, Query(ge=0, le=1_000_000)] = 0,
) -> StrategicGoalPage:
    return await list_solutions(resources.database.pool, tenant, limit, offset)
