"""What stage-driven conversations leave behind, for the caller's tenant: the audit trail (seed 001
section 9.2) and the documents generated (``document_links``)."""

from __future__ import annotations

import uuid
from typing import Annotated

from fastapi import APIRouter, HTTPException, Query
from fastapi.responses import FileResponse

from master_agent.service.deps import ResourcesDep, TenantDep
from master_agent.service.limits import StrictJsonRoute
from master_agent.storage.files import MEDIA_TYPES, document_path
from master_agent.workflows.audit import AuditEvent, AuditKind, audit_events

router = APIRouter(tags=["audit"], route_class=StrictJsonRoute)


@router.get("/audit", response_model=list[AuditEvent])
async def list_audit_events(
    tenant: TenantDep,
    resources: ResourcesDep,
    thread_id: uuid.UUID | None = None,
    kind: AuditKind | None = None,
    limit: Annotated[int, Query(ge=1, le=5000)] = 1000,
    offset: Annotated[int, Query(ge=0, le=10_000_000)] = 0,
) -> list[AuditEvent]:
    """Oldest first: every decision and stage transition, customer field read, tool call and document
    generated (append-only)."""
    return await audit_events(
        resources.database.pool,
        tenant,
        thread_id=str(thread_id) if thread_id else None,
        kind=kind,
        limit=limit,
        offset=offset,
    )


@router.get("/documents/{document_id}", response_class=FileResponse)
async def download_document(
    document_id: uuid.UUID, tenant: TenantDep, resources: ResourcesDep
) -> FileResponse:
    """A document a flow of the caller's tenant generated (a sanction letter); another tenant's is
    not found."""
    path = document_path(resources.settings.data_dir, tenant, document_id)
    if path is None:
        raise HTTPException(status_code=404, detail=f"no document {document_id} of this tenant")
    return FileResponse(
        path, media_type=MEDIA_TYPES.get(path.suffix, "application/octet-stream"), filename=path.name
    )
