"""The operations of langgraph-api's OpenAPI document this service does not serve, and why.

``python -m master_agent.service.api_parity`` (``make api-diff``) prints the diff against the
langgraph-api installed beside us (it ships its ``openapi.json``); the test suite fails when an
operation is missing that is not listed in ``LEFT_OUT``.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

#: Operations of langgraph-api left out on purpose; no method of the Python or JS SDK calls them.
LEFT_OUT: dict[tuple[str, str], str] = {
    ("GET", "/docs"): "served (Swagger UI) but, as FastAPI does, not listed in the OpenAPI document",
}

_METHODS = ("get", "put", "post", "patch", "delete")


def operations(document: dict[str, Any]) -> set[tuple[str, str]]:
    """(METHOD, path with every parameter written ``{}``) of each operation of an OpenAPI document."""
    return {
        (method.upper(), re.sub(r"\{[^}]+\}", "{}", path))
        for path, item in document.get("paths", {}).items()
        for method in item
        if method in _METHODS
    }


def langgraph_api_document() -> dict[str, Any]:
    """The OpenAPI document langgraph-api ships (installed at the root of its site-packages)."""
    import langgraph_api  # type: ignore[import-untyped]

    path = Path(langgraph_api.__file__).resolve().parent.parent / "openapi.json"
    document: dict[str, Any] = json.loads(path.read_text())
    return document


def missing_operations(ours: dict[str, Any], theirs: dict[str, Any]) -> dict[tuple[str, str], str | None]:
    """langgraph-api's operations we do not serve, each with why (None: not known to be left out)."""
    return {operation: LEFT_OUT.get(operation) for operation in sorted(operations(theirs) - operations(ours))}


def main() -> int:
    from master_agent.service.app import create_app
    from master_agent.settings import Settings

    theirs = langgraph_api_document()
    ours = create_app(Settings()).openapi()
    missing = missing_operations(ours, theirs)
    print(
        f"langgraph-api operations: {len(operations(theirs))}; served here: {len(operations(theirs)) - len(missing)}"
    )
    for (method, path), why in missing.items():
        print(f"  not served  {method:6} {path:32} {why or 'NOT KNOWN TO BE LEFT OUT'}")
    return 1 if any(why is None for why in missing.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
