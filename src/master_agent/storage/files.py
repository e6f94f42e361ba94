"""Files a tenant's flows produce or receive (a sanction letter, an uploaded salary slip), under the
data directory, one folder per tenant: a tenant's link can only reach its own files."""

from __future__ import annotations

import uuid
from pathlib import Path

MEDIA_TYPES = {".pdf": "application/pdf", ".txt": "text/plain", ".json": "application/json"}


def documents_dir(data_dir: Path, tenant_id: str) -> Path:
    return data_dir / "documents" / tenant_id


def document_path(data_dir: Path, tenant_id: str, document_id: uuid.UUID) -> Path | None:
    """The tenant's document ``document_id`` (any extension), or None."""
    folder = documents_dir(data_dir, tenant_id)
    found = sorted(folder.glob(f"{document_id}.*")) if folder.exists() else []
    return found[0] if found else None
