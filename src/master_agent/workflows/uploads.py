"""Files a conversation takes from its user (a salary slip): checked against the pack's upload kind,
kept by the pack, and written to the audit trail. ``POST /threads/{thread_id}/files`` and in-process
callers (the demo) go through the same checks."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

from psycopg_pool import AsyncConnectionPool

from master_agent.capabilities import FileUpload, UploadKind
from master_agent.workflows.audit import AuditTrail


class UploadRefused(ValueError):
    """Nothing was kept: ``status`` is the HTTP status that says why (413, 415, 422)."""

    def __init__(self, status: int, detail: str) -> None:
        super().__init__(detail)
        self.status = status
        self.detail = detail


async def accept_upload(
    kinds: Mapping[str, UploadKind],
    kind: str,
    upload: FileUpload,
    pool: AsyncConnectionPool[Any],
    now: Callable[[], datetime],
) -> dict[str, Any]:
    """Keeps ``upload`` as a ``kind`` file of its thread; what the pack read from it, with its
    ``document_id``."""
    upload_kind = kinds.get(kind)
    if upload_kind is None:
        raise UploadRefused(
            422, f"kind: this tenant's threads take no {kind!r} files; they take {sorted(kinds)}"
        )
    if len(upload.content) > upload_kind.max_bytes:
        raise UploadRefused(413, f"file: larger than {upload_kind.max_bytes} bytes")
    if not upload.content:
        raise UploadRefused(422, "file: empty")
    if upload.media_type not in upload_kind.media_types:
        raise UploadRefused(
            415, f"file: a {kind} must be {' or '.join(upload_kind.media_types)}, not {upload.media_type!r}"
        )
    try:
        stored = await upload_kind.store(upload)
    except ValueError as error:
        raise UploadRefused(422, str(error)) from None
    trail = AuditTrail(pool, upload.tenant_id, upload.thread_id, upload_kind.workflow, now)
    read = {key: value for key, value in stored.items() if key != "document_id"}
    trail.document(
        kind,
        str(stored["document_id"]),
        direction="uploaded",
        filename=upload.filename,
        bytes=len(upload.content),
        **read,
    )
    await trail.flush()
    return {"kind": kind, "filename": upload.filename, "bytes": len(upload.content), **stored}
