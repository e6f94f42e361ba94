"""Calendar arithmetic of the assistant: the days and times people say, and free slots between events.

Phrases are read against a reference day (the tool's clock), in the user's time zone:

- ``today``, ``tomorrow``, a weekday (``tuesday``, ``this tuesday``: the next one after today),
  ``next tuesday`` (the Tuesday of next week, Monday to Sunday), an ISO date (``2026-12-01``), a day of
  a month (``December 15``, ``15 Dec``, ``the 15th``: the next such day from today on);
- periods: ``this week``, ``next week``, ``this month``, ``next month``;
- times: ``2pm``, ``2:30 pm``, ``14:00``, ``noon``; durations: ``60 minutes``, ``1 hour``, ``90 min``,
  ``an hour``, ``half an hour``, ``1.5 hours``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import date, datetime, time, timedelta
from zoneinfo import ZoneInfo

from pydantic import BaseModel

WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
WORKDAY_START = time(9, 0)
WORKDAY_END = time(17, 0)

_ISO_DATE = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b")
MONTHS = (
    "january", "february", "march", "april", "may", "june",
    "july", "august", "september", "october", "november", "december",
)  # fmt: skip
_MONTH = r"(" + "|".join(m[:3] + r"(?:" + m[3:] + r")?" for m in MONTHS) + r")\.?"
_ORDINAL = r"(\d{1,2})(?:st|nd|rd|th)?"
_MONTH_DAY = re.compile(rf"\b{_MONTH}\s+{_ORDINAL}\b|\b{_ORDINAL}(?:\s+of)?\s+{_MONTH}\b", re.I)
_NTH = re.compile(r"\b(?:the\s+)(\d{1,2})(?:st|nd|rd|th)\b", re.I)
_WEEKDAY = re.compile(r"\b(?:(next|this|on)\s+)?(" + "|".join(WEEKDAYS) + r")\b", re.I)
PERIOD_PHRASE = re.compile(r"\b(this|next)\s+(week|month)\b", re.I)
_TIME = re.compile(
    r"\b(\d{1,2})(?::(\d{2}))?\s*(am|pm)\b|\b([01]?\d|2[0-3]):([0-5]\d)\b|\b(noon|midday)\b"
    r"|\b(?:at|by|from|until|till)\s+(\d{1,2})\b(?!\s*(?:%|:\d|\.\d|[ap]\.?m\b|minutes?|mins?|hours?|hrs?|people|of\b|st\b|nd\b|rd\b|th\b))",
    re.I,
)
#: Parts of a working day a request may name instead of hours.
DAY_PARTS = {"morning": (time(9, 0), time(12, 0)), "afternoon": (time(12, 0), time(17, 0))}
_DAY_PART = re.compile(r"\b(morning|afternoon)\b", re.I)
_BETWEEN = re.compile(
    r"\b(?:between|from)\s+(\d{1,2}(?::\d{2})?\s*(?:am|pm)?)\s+(?:and|to|-|until|till)\s+(\d{1,2}(?::\d{2})?\s*(?:am|pm)?)",
    re.I,
)
_DURATION = re.compile(
    r"\b(?:(\d+(?:\.\d+)?)\s*(minutes?|mins?|hours?|hrs?|h)\b|(half an hour)|(an hour|one hour))", re.I
)


class Period(BaseModel):
    """Whole days, ``first`` to ``last`` inclusive."""

    first: date
    last: date


class Slot(BaseModel):
    start: datetime
    end: datetime

    @property
    def minutes(self) -> int:
        return int((self.end - self.start).total_seconds() // 60)


def resolve_day(text: str, today: date) -> date | None:
    """The one day ``text`` names, or None."""
    lowered = text.lower()
    iso = _ISO_DATE.search(lowered)
    if iso:
        return date(int(iso.group(1)), int(iso.group(2)), int(iso.group(3)))
    month_day = _MONTH_DAY.search(lowered)
    if month_day:
        month_name = month_day.group(1) or month_day.group(4)
        month = next(i for i, m in enumerate(MONTHS, 1) if m.startswith(month_name[:3]))
        return _next_date(today, int(month_day.group(2) or month_day.group(3)), month)
    nth = _NTH.search(lowered)
    if nth:
        return _next_date(today, int(nth.group(1)), None)
    if re.search(r"\bday after tomorrow\b", lowered):
        return today + timedelta(days=2)
    if re.search(r"\btomorrow\b", lowered):
        return today + timedelta(days=1)
    if re.search(r"\btoday\b", lowered):
        return today
    weekday = _WEEKDAY.search(lowered)
    if weekday:
        target = WEEKDAYS.index(weekday.group(2))
        if (weekday.group(1) or "").lower() == "next":
            monday = today - timedelta(days=today.weekday()) + timedelta(weeks=1)
            return monday + timedelta(days=target)
        ahead = (target - today.weekday()) % 7 or 7
        return today + timedelta(days=ahead)
    return None


def _next_date(today: date, day: int, month: int | None) -> date | None:
    """The first date on or after ``today`` with that day of the month (and month), or None."""
    for ahead in range(0, 25):
        year, index = divmod(today.month - 1 + ahead, 12)
        candidate_month = index + 1
        if month is not None and candidate_month != month:
            continue
        try:
            candidate = date(today.year + year, candidate_month, day)
        except ValueError:
            continue
        if candidate >= today:
            return candidate
    return None


def resolve_period(text: str, today: date) -> Period | None:
    """The week or month ``text`` names, or the one day it names, or None."""
    found = PERIOD_PHRASE.search(text.lower())
    if found is None:
        day = resolve_day(text, today)
        return Period(first=day, last=day) if day else None
    which, unit = found.group(1).lower(), found.group(2).lower()
    if unit == "week":
        monday = today - timedelta(days=today.weekday()) + timedelta(weeks=1 if which == "next" else 0)
        return Period(first=monday, last=monday + timedelta(days=6))
    first = today.replace(day=1)
    if which == "next":
        first = (first + timedelta(days=32)).replace(day=1)
    return Period(first=first, last=(first + timedelta(days=32)).replace(day=1) - timedelta(days=1))


def _working_hour(hour: int) -> int:
    """An hour said without am or pm, read in working hours: "at 3" and "3:30" are afternoon times."""
    return hour + 12 if 1 <= hour <= 7 else hour


def resolve_time(text: str) -> time | None:
    found = _TIME.search(text)
    if found is None:
        return None
    if found.group(6):
        return time(12, 0)
    if found.group(3):
        hour = int(found.group(1)) % 12 + (12 if found.group(3).lower() == "pm" else 0)
        return time(hour, int(found.group(2) or 0)) if hour < 24 else None
    if found.group(7):
        hour = _working_hour(int(found.group(7)))
        return time(hour, 0) if hour < 24 else None
    return time(_working_hour(int(found.group(4))), int(found.group(5)))


def resolve_hours(text: str) -> tuple[time, time] | None:
    """The hours of a day a request limits itself to: "between 1 and 6pm", "from 10 to 4", "morning"."""
    between = _BETWEEN.search(text)
    if between is not None:
        first, last = (resolve_time(part) or resolve_time(f"at {part}") for part in between.groups())
        if first is not None and last is not None and first < last:
            return first, last
    part = _DAY_PART.search(text)
    return DAY_PARTS[part.group(1).lower()] if part is not None else None


def resolve_minutes(text: str) -> int | None:
    found = _DURATION.search(text)
    if found is None:
        return None
    if found.group(3):
        return 30
    if found.group(4):
        return 60
    amount = float(found.group(1))
    return round(amount * 60) if found.group(2).lower().startswith("h") else round(amount)


def free_slots(
    busy: Iterable[tuple[datetime, datetime]],
    day: date,
    minutes: int,
    zone: ZoneInfo,
    workday: tuple[time, time] = (WORKDAY_START, WORKDAY_END),
) -> list[Slot]:
    """The gaps of at least ``minutes`` between busy intervals in ``day``'s working hours (in ``zone``);
    overlapping events (a conflict) count once."""
    opens = datetime.combine(day, workday[0], tzinfo=zone)
    closes = datetime.combine(day, workday[1], tzinfo=zone)
    cursor = opens
    slots: list[Slot] = []
    inside = (
        (max(s, opens).astimezone(zone), min(e, closes).astimezone(zone))
        for s, e in busy
        if s < closes and e > opens
    )
    for start, end in sorted(inside):
        if (start - cursor) >= timedelta(minutes=minutes):
            slots.append(Slot(start=cursor, end=start))
        cursor = max(cursor, end)
    if (closes - cursor) >= timedelta(minutes=minutes):
        slots.append(Slot(start=cursor, end=closes))
    return slots


def conflicts(intervals: Iterable[tuple[str, datetime, datetime]]) -> list[tuple[str, str]]:
    """Pairs of named intervals that overlap."""
    ordered = sorted(intervals, key=lambda item: item[1])
    pairs = []
    for index, (name, _start, end) in enumerate(ordered):
        for other, other_start, _ in ordered[index + 1 :]:
            if other_start >= end:
                break
            pairs.append((name, other))
    return pairs
