"""Playbooks of the caller's tenant: list, read, deploy, disable, roll back."""

from __future__ import annotations

import uuid
from typing import Annotated, Any, Literal

from fastapi import APIRouter, HTTPException, Query
from pydantic import BaseModel, ConfigDict, Field

from master_agent.evolution import playbooks
from master_agent.evolution.playbooks import Playbook
from master_agent.service.deps import ResourcesDep, TenantDep
from master_agent.service.limits import StrictJsonRoute

router = APIRouter(prefix="/playbooks", tags=["playbooks"], route_class=StrictJsonRoute)


class PlaybookDeploy(BaseModel):
    """A playbook to deploy: its spec, or the playbook of one of the tenant's solutions."""

    model_config = ConfigDict(extra="forbid")

    spec: dict[str, Any] | None = Field(default=None, description="The playbook (trigger, steps, ...).")
    solution_id: uuid.UUID | None = Field(default=None, description="Deploy this solution's playbook.")


class StatusChange(BaseModel):
    model_config = ConfigDict(extra="forbid")

    reason: str | None = Field(default=None, max_length=2000)


class PlaybookDetail(Playbook):
    runs: list[dict[str, Any]]
    events: list[dict[str, Any]]


@router.get("", response_model=list[Playbook])
async def list_playbooks(
    tenant: TenantDep,
    resources: ResourcesDep,
    status: Literal["active", "disabled", "rolled_back"] | None = None,
    limit: Annotated[int, Query(ge=1, le=100)] = 20,
    offset: Annotated[int, Query(ge=0, le=1_000_000)] = 0,
) -> list[Playbook]:
    return await playbooks.list_playbooks(
        resources.evolution, tenant, status=status, limit=limit, offset=offset
    )


@router.get("/{playbook_id}", response_model=PlaybookDetail)
async def read_playbook(playbook_id: uuid.UUID, tenant: TenantDep, resources: ResourcesDep) -> PlaybookDetail:
    found = await playbooks.get_playbook(resources.evolution, tenant, playbook_id)
    if found is None:
        raise HTTPException(404, detail=f"playbook_id: no playbook {playbook_id}")
    history = await playbooks.playbook_history(resources.evolution, playbook_id)
    return PlaybookDetail(**found.model_dump(), **history)


@router.post("", response_model=Playbook, status_code=201)
async def deploy_playbook(body: PlaybookDeploy, tenant: TenantDep, resources: ResourcesDep) -> Playbook:
    """Validate (every problem is reported, nothing stored when invalid), store and schedule."""
    if (body.spec is None) == (body.solution_id is None):
        raise HTTPException(422, detail="body: give exactly one of 'spec' or 'solution_id'")
    solution_id = str(body.solution_id) if body.solution_id else None
    spec = body.spec or await playbooks.solution_playbook(resources.evolution, tenant, str(solution_id))
    return await playbooks.deploy_playbook(resources.evolution, tenant, spec, solution_id=solution_id)


@router.post("/{playbook_id}/disable", response_model=Playbook)
async def disable_playbook(
    playbook_id: uuid.UUID, tenant: TenantDep, resources: ResourcesDep, body: StatusChange | None = None
) -> Playbook:
    reason = body.reason if body else None
    return await playbooks.change_status(resources.evolution, tenant, playbook_id, "disable", reason)


@router.post("/{playbook_id}/rollback", response_model=Playbook)
async def rollback_playbook(
    playbook_id: uuid.UUID, tenant: TenantDep, resources: ResourcesDep, body: StatusChange | None = None
) -> Playbook:
    """Stop the playbook and send its rollback plan to the outbox."""
    reason = body.reason if body else None
    return await playbooks.change_status(resources.evolution, tenant, playbook_id, "rollback", reason)
