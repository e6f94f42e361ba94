"""Thread search's ``extract``: named values picked out of each thread found by a path such as
``values.messages[-1].content`` (langgraph-api's, SDK 0.4.14), answered under ``extracted``."""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import AfterValidator, Field

#: The thread fields a path may start from.
ROOTS = frozenset({"values", "metadata", "config", "interrupts"})
#: One step of a path: ``.key`` or ``[index]`` (negative counts from the end).
_STEP = re.compile(r"\.([^.\[\]]+)|\[(-?\d+)\]")
_ALIAS = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
#: Aliases that would shadow a thread's own fields.
_RESERVED = frozenset({"thread_id", "created_at", "updated_at", "status", "extracted"}) | ROOTS


def _steps(path: str) -> list[str | int]:
    """The keys and indexes after the root of ``path``; ValueError naming what is wrong."""
    root = re.match(r"^[A-Za-z_]+", path)
    if root is None or root.group(0) not in ROOTS:
        raise ValueError(f"{path!r} must start with one of {sorted(ROOTS)}")
    steps: list[str | int] = [root.group(0)]
    rest = path[root.end() :]
    while rest:
        step = _STEP.match(rest)
        if step is None:
            raise ValueError(f"{path!r}: cannot read {rest!r} (use .key or [index])")
        steps.append(step.group(1) if step.group(1) is not None else int(step.group(2)))
        rest = rest[step.end() :]
    return steps


def _check(extract: dict[str, str]) -> dict[str, str]:
    for alias, path in extract.items():
        if not _ALIAS.match(alias) or alias in _RESERVED:
            raise ValueError(
                f"{alias!r} is not a usable name (an identifier, not one of {sorted(_RESERVED)})"
            )
        _steps(path)
    return extract


Extract = Annotated[dict[str, str], Field(max_length=10), AfterValidator(_check)]
"""alias -> path, at most 10, as langgraph-api allows."""


def extract_value(thread: dict[str, Any], path: str) -> Any:
    """The value at ``path`` in a thread's JSON; None where the path leads nowhere."""
    found: Any = thread
    for step in _steps(path):
        by_index = isinstance(step, int) and isinstance(found, list) and -len(found) <= step < len(found)
        by_key = isinstance(step, str) and isinstance(found, dict) and step in found
        if not (by_index or by_key):
            return None
        found = found[step]
    return found


def extracted(thread: dict[str, Any], extract: dict[str, str]) -> dict[str, Any]:
    return {alias: extract_value(thread, path) for alias, path in extract.items()}
