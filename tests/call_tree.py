"""Reading the solution's step tree in tests."""

from __future__ import annotations

from typing import Any


def flatten_steps(steps: list[dict[str, Any]]) -> list[tuple[int, str, str]]:
    """Every call in the tree as (depth, calling agent, tool or sub-agent), depth first."""
    out: list[tuple[int, str, str]] = []
    for step in steps:
        out.append((step["depth"], step["agent"], step["tool"]))
        out.extend(flatten_steps(step["children"]))
    return out
