"""What stage-driven conversations leave behind, for the caller's tenant: the audit trail (seed 001
section 9.2) and the documents generated (``document_links``)."""

from __future__ import annotations

import uuid
from typing import Annotated, Any

from fastapi import APIRouter, File, Form, HTTPException, Query, UploadFile
from fastapi.responses import FileResponse

from master_agent.capabilities import FileUpload, domain_pack, load_tenant
from master_agent.service.deps import ResourcesDep, TenantDep
from master_agent.service.limits import StrictJsonRoute
from master_agent.service.routes.threads import existing_thread
from master_agent.storage.files import MEDIA_TYPES, document_path
from master_agent.workflows.audit import AuditEvent, AuditKind, audit_events
from master_agent.workflows.metrics import WorkflowSummary, workflow_summaries
from master_agent.workflows.uploads import UploadRefused, accept_upload

router = APIRouter(tags=["audit"], route_class=StrictJsonRoute)


@router.post("/threads/{thread_id}/files", status_code=201, tags=["threads"])
async def upload_file(
    thread_id: uuid.UUID,
    tenant: TenantDep,
    resources: ResourcesDep,
    kind: Annotated[str, Form(max_length=100, description="What the file is (a pack's upload kind).")],
    file: Annotated[UploadFile, File(description="The file.")],
) -> dict[str, Any]:
    """A file for one of the caller's threads (a salary slip for a loan conversation), of a kind the
    tenant's pack takes: size and type checked before anything is kept; the upload is audited."""
    await existing_thread(resources, tenant, thread_id)
    pack = domain_pack((await load_tenant(resources.database.pool, tenant)).domain or "retail")
    limit = max((taken.max_bytes for taken in pack.uploads.values()), default=0)
    content = await file.read(limit + 1)
    upload = FileUpload(
        data_dir=resources.settings.data_dir,
        tenant_id=tenant,
        thread_id=str(thread_id),
        filename=(file.filename or kind)[:255],
        media_type=(file.content_type or "").split(";")[0].strip().lower(),
        content=content,
    )
    try:
        kept = await accept_upload(
            pack.uploads, kind, upload, resources.database.pool, resources.evolution.clock.now
        )
    except UploadRefused as refused:
        raise HTTPException(refused.status, detail=refused.detail) from None
    return {"thread_id": str(thread_id), **kept}


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


@router.get("/workflows/summary", response_model=list[WorkflowSummary])
async def workflow_summary(tenant: TenantDep, resources: ResourcesDep) -> list[WorkflowSummary]:
    """The caller's stage-driven conversations measured, per workflow: conversations, completion
    rate, turns, time per stage, worker utilisation (from the audit trail)."""
    return await workflow_summaries(resources.database.pool, tenant)


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
