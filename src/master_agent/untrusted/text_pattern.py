"""A tenant's text pattern (a JSON Schema ``pattern``) checked without letting it stall the service.

Output schemas of tenant agents and compiled systems may carry a ``pattern`` written with look-aheads
("a text holding none of these words"), which pydantic's linear-time engine does not read and Python's
``re`` reads with unbounded backtracking: ``^(a|aa)+$`` against a long answer would hold a worker for
hours. The ``regex`` package reads the same syntax and stops a match after a time limit.
"""

from __future__ import annotations

from collections.abc import Callable

import regex

#: Longest a pattern may take on one text; a text the check cannot finish in time is refused.
PATTERN_SECONDS = 0.05


def text_matching(pattern: str) -> Callable[[str | None], str | None]:
    """A pydantic after-validator: the text matches ``pattern`` somewhere (JSON Schema's reading), in
    time; ``None`` passes (an optional field left out)."""
    compiled = regex.compile(pattern)

    def check(value: str | None) -> str | None:
        if value is None:
            return None
        try:
            found = compiled.search(value, timeout=PATTERN_SECONDS)
        except TimeoutError:
            raise ValueError(f"could not be checked against the pattern {pattern!r} in time") from None
        if found is None:
            raise ValueError(f"does not match the pattern {pattern!r}")
        return value

    return check
