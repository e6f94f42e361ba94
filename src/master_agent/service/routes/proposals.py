"""Previews of high-risk calls (``runtime.proposals``) of the caller's tenant: what waits for the
user's acceptance, and what was accepted, revised, cancelled or run."""

from __future__ import annotations

import uuid
from typing import Annotated

from fastapi import APIRouter, Query

from master_agent.runtime.proposals import Proposal, ProposalBook, ProposalStatus
from master_agent.service.deps import ResourcesDep, TenantDep
from master_agent.service.limits import StrictJsonRoute

router = APIRouter(tags=["proposals"], route_class=StrictJsonRoute)


@router.get("/proposals", response_model=list[Proposal])
async def list_proposals(
    tenant: TenantDep,
    resources: ResourcesDep,
    thread_id: uuid.UUID | None = None,
    status: ProposalStatus | None = None,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
    offset: Annotated[int, Query(ge=0, le=1_000_000)] = 0,
) -> list[Proposal]:
    """Newest first; of one thread with ``thread_id``, in one ``status`` (``pending``: waiting for
    the user). They are answered in the thread: "please execute the proposed plan", "change X to Y in
    the proposal" or "cancel"."""
    return await ProposalBook(resources.database.pool).list(
        tenant,
        thread_id=str(thread_id) if thread_id else None,
        status=status,
        limit=limit,
        offset=offset,
    )
