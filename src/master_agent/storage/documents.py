"""JSON documents as stored (metadata of threads, runs, assistants)."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BeforeValidator

#: Deepest nesting a JSON document may have (requests are refused beyond it; stored ones are cut).
MAX_JSON_DEPTH = 64


def _readable(value: Any, depth: int = 1) -> Any:
    if not isinstance(value, dict | list):
        return value
    if depth > MAX_JSON_DEPTH:
        return f"<nested deeper than {MAX_JSON_DEPTH} levels>"
    if isinstance(value, dict):
        return {key: _readable(child, depth + 1) for key, child in value.items()}
    return [_readable(child, depth + 1) for child in value]


StoredMetadata = Annotated[dict[str, Any], BeforeValidator(_readable)]
"""A metadata document as stored: one written before the bounds existed is cut at ``MAX_JSON_DEPTH``
levels, so reading it never fails."""
