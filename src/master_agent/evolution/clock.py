"""The clock seam: everything in the evolution loop asks a ``Clock`` for "now", never the OS.

Tests and the demo move time by passing ``FixedClock`` (``master-agent outcomes run-due --as-of``).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
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


class ShiftedClock:
    """The system clock moved to read ``start`` now; it runs on from there (``MASTER_AGENT_NOW``)."""

    def __init__(self, start: datetime) -> None:
        start = start if start.tzinfo else start.replace(tzinfo=UTC)
        self.offset: timedelta = start - datetime.now(UTC)

    def now(self) -> datetime:
        return datetime.now(UTC) + self.offset


def runtime_clock(start: datetime | None) -> Clock:
    """The process's clock: the system's, or shifted to read ``start`` now."""
    return SystemClock() if start is None else ShiftedClock(start)
