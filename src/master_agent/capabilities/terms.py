"""The time window a request names, read with Duckling against the runtime clock.

Duckling (``pyduckling-native-phihos``: Facebook's Duckling, the rule-based time parser Rasa and
wit.ai use, compiled in) reads what people write about time: "June 2026", "last month", "this
quarter", "between 1 May and 15 June", "the week of 7 September", "last 30 days", "in 2025". It
returns an instant with a grain (a month, a quarter) or an interval, relative to a reference time:
here the runtime clock, never the data's last row (a simulated future never moves the present).

Around it, only what Duckling does not read: entity mentions ("Store 4") are masked first (it reads
"4 in June 2026" as the 4th of June), calendar quarters ("Q2", "fiscal Q3" on a calendar fiscal
year), halves of a month, and the direction of time. A question about data looks back: "in July"
asked in November means this July, where Duckling, built for scheduling, answers next July; a plan's
deadline looks forward.
"""

from __future__ import annotations

import calendar
import re
import threading
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Literal

Direction = Literal["past", "future"]

#: "Store 4", "branch #12": a noun and its number, which Duckling would read as a day or an hour.
_ENTITY = re.compile(
    r"\b(store|shop|branch|outlet|location|region|staff|employee|team|id)\s*#?\s*\d+\b", re.I
)
_QUARTER = re.compile(
    r"\b(?:(?:fiscal|fy|calendar)\s+)?(?:q([1-4])|(first|second|third|fourth|1st|2nd|3rd|4th)\s+quarter)"
    r"(?:\s+(?:of\s+)?(?:fy\s*)?'?(\d{4}|\d{2}))?\b",
    re.I,
)
_ORDINAL = {"first": 1, "second": 2, "third": 3, "fourth": 4, "1st": 1, "2nd": 2, "3rd": 3, "4th": 4}
_HALF_OF_MONTH = re.compile(
    r"\b(first|second|1st|2nd|last)\s+half\s+of\s+("
    + "|".join(calendar.month_name[1:])
    + r")(?:\s+(\d{4}))?\b",
    re.I,
)
_MONTHS = {name.lower(): number for number, name in enumerate(calendar.month_name) if name}
_YEAR = re.compile(r"\b(19|20)\d{2}\b")
_GRAIN_DAYS = {"second": 0, "minute": 0, "hour": 0, "day": 1, "week": 7}


@dataclass(frozen=True, kw_only=True)
class Window:
    """A span of time a request names: ``start`` inclusive, ``end`` exclusive (UTC)."""

    start: datetime
    end: datetime
    label: str
    """The words it was read from ("June 2026", "last quarter")."""

    def last_day(self) -> datetime:
        return self.end - timedelta(microseconds=1)

    def describe(self) -> str:
        return f"{self.label} ({self.start:%Y-%m-%d} to {self.last_day():%Y-%m-%d})"


class _Duckling:
    """One Duckling runtime per process, started on first use (its Haskell runtime starts once)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._ready: tuple[Any, Any, Any, Any] | None = None

    def parse(self, text: str, now: datetime) -> list[dict[str, Any]]:
        import duckling  # the native library loads only where time is read

        with self._lock:
            if self._ready is None:
                duckling.init()
                zones = duckling.load_time_zones(str(_zoneinfo()))
                locale = duckling.default_locale_lang(duckling.parse_lang("EN"))
                self._ready = (duckling, zones, locale, duckling.parse_dimensions(["time"]))
            module, zones, locale, dimensions = self._ready
            reference = module.parse_ref_time(zones, "UTC", int(now.timestamp()))
            found: list[dict[str, Any]] = module.parse(
                text, module.Context(reference, locale), dimensions, False
            )
        return found


def _zoneinfo() -> Path:
    system = Path("/usr/share/zoneinfo")
    if (system / "UTC").exists():
        return system
    import tzdata  # the Python package's copy where the system has none

    return Path(tzdata.__file__).parent / "zoneinfo"


_DUCKLING = _Duckling()


def time_window(text: str, now: datetime, *, direction: Direction = "past") -> Window | None:
    """The one window ``text`` names, relative to ``now``; None when it names none. A window that
    reaches past ``now`` in a backward-looking question ends at ``now`` ("this year" so far)."""
    now = now.astimezone(UTC)
    masked = _ENTITY.sub(lambda match: " " * len(match.group(0)), text)
    window = _quarter(masked, now, direction) or _half_of_month(masked, now, direction)
    if window is None:
        window = _from_duckling(masked, now, direction)
    if window is not None and direction == "past" and window.end > now and window.start < now:
        window = Window(start=window.start, end=now, label=window.label)
    return window


def _from_duckling(text: str, now: datetime, direction: Direction) -> Window | None:
    window, explicit_year = _read(text, now)
    if window is not None and direction == "past" and window.start > now and not explicit_year:
        # Scheduling reads "in July" as the next July; a question about data means the last one:
        # read it again as if asked a year earlier (weeks then fall on that year's weekdays).
        earlier, _ = _read(text, _year_earlier(now))
        if earlier is not None and earlier.start <= now:
            window = earlier
    return window


def _read(text: str, now: datetime) -> tuple[Window | None, bool]:
    found = [item for item in _DUCKLING.parse(text, now) if item.get("dim") == "time"]
    if not found:
        return None, False
    # The longest mention is the one meant ("between 1 May and 15 June", not "15 June").
    item = max(found, key=lambda entry: len(entry.get("body", "")))
    value, body = item["value"], str(item.get("body", ""))
    if value.get("type") == "interval":
        start = _instant(value.get("from")) or now
        end = _instant(value.get("to")) or now
    else:
        instant = _instant(value)
        if instant is None:
            return None, False
        start, end = instant, _after(instant, str(value.get("grain") or "day"))
    return Window(start=start, end=end, label=body.strip()), bool(_YEAR.search(body))


def _instant(value: dict[str, Any] | None) -> datetime | None:
    if not value or not value.get("value"):
        return None
    return datetime.fromisoformat(str(value["value"])).astimezone(UTC)


def _after(start: datetime, grain: str) -> datetime:
    if grain in _GRAIN_DAYS:
        return start + timedelta(days=max(_GRAIN_DAYS[grain], 1))
    months = {"month": 1, "quarter": 3, "year": 12}.get(grain, 1)
    month = start.month - 1 + months
    return start.replace(year=start.year + month // 12, month=month % 12 + 1, day=1)


def _year_earlier(moment: datetime) -> datetime:
    try:
        return moment.replace(year=moment.year - 1)
    except ValueError:  # 29 February
        return moment.replace(year=moment.year - 1, day=28)


def _year_of(text: str | None, now: datetime) -> int | None:
    if not text:
        return None
    year = int(text)
    return year + 2000 if year < 100 else year


def _quarter(text: str, now: datetime, direction: Direction) -> Window | None:
    match = _QUARTER.search(text)
    if match is None:
        return None
    number = int(match.group(1)) if match.group(1) else _ORDINAL[match.group(2).lower()]
    year = _year_of(match.group(3), now)
    if year is None:
        year = now.year
        start = datetime(year, 3 * number - 2, 1, tzinfo=UTC)
        if direction == "past" and start > now:
            year -= 1
        elif direction == "future" and _after(start, "quarter") <= now:
            year += 1
    start = datetime(year, 3 * number - 2, 1, tzinfo=UTC)
    return Window(start=start, end=_after(start, "quarter"), label=match.group(0).strip())


def _half_of_month(text: str, now: datetime, direction: Direction) -> Window | None:
    match = _HALF_OF_MONTH.search(text)
    if match is None:
        return None
    month = _MONTHS[match.group(2).lower()]
    year = _year_of(match.group(3), now) or now.year
    start = datetime(year, month, 1, tzinfo=UTC)
    if match.group(3) is None and direction == "past" and start > now:
        start = _year_earlier(start)
    elif match.group(3) is None and direction == "future" and _after(start, "month") <= now:
        start = start.replace(year=start.year + 1)
    middle = start + timedelta(days=15)
    if match.group(1).lower() in ("first", "1st"):
        return Window(start=start, end=middle, label=match.group(0).strip())
    return Window(start=middle, end=_after(start, "month"), label=match.group(0).strip())
