"""The clock seam: everything in the evolution loop asks a ``Clock`` for "now", never the OS.

Tests and the demo move time by passing ``FixedClock`` (``master-agent outcomes run-due --as-of``).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Protocol


class Clock(Protocol):
    def now(self) -> datetime: ...


class SystemClock:
    def now(self) -> datetime:
        return datetime.now(UTC)


class FixedClock:
    """A clock stopped at one instant (naive datetimes are taken as UTC)."""

    def __init__(self, instant: datetime) -> None:
        self.instant = instant if instant.tzinfo else instant.replace(tzinfo=UTC)

    def now(self) -> datetime:
        return self.instant
