"""Calendar arithmetic of the assistant: the days and times people say, and free slots between events.

Phrases are read against a reference day (the tool's clock), in the user's time zone:

- ``today``, ``tomorrow``, a weekday (``tuesday``, ``this tuesday``: the next one after today),
  ``next tuesday`` (the Tuesday of next week, Monday to Sunday), an ISO date (``2026-12-01``), a day of
  a month (``December 15``, ``15 Dec``, ``the 15th``: the next such day from today on);
- periods: ``this week``, ``next week``, ``this month``, ``next month``;
- times (Duckling's time dimension, see ``resolve_time``): ``2pm``, ``2:30 pm``, ``14:00``, ``noon``,
  ``half past 3``, ``at 3`` (15:00: read in working hours); durations: ``60 minutes``, ``1 hour``, ``90 min``,
  ``an hour``, ``half an hour``, ``1.5 hours``.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable
from datetime import date, datetime, time, timedelta
from zoneinfo import ZoneInfo

from pydantic import BaseModel

from master_agent.capabilities.terms import duckling_parse, duckling_parse_time

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
#: A month's name, whole or short ("december", "Dec").
MONTH_NAME = re.compile(rf"\b{_MONTH}(?!\w)", re.I)
_MONTH_DAY = re.compile(rf"\b{_MONTH}\s+{_ORDINAL}\b|\b{_ORDINAL}(?:\s+of)?\s+{_MONTH}\b", re.I)
_NTH = re.compile(r"\b(?:the\s+)(\d{1,2})(?:st|nd|rd|th)\b", re.I)
_WEEKDAY = re.compile(r"\b(?:(next|this|on)\s+)?(" + "|".join(WEEKDAYS) + r")\b", re.I)
PERIOD_PHRASE = re.compile(r"\b(this|next)\s+(week|month)\b", re.I)
#: A clock time said with its half of the day (or on the 24-hour clock): read as said.
_MERIDIEM = re.compile(
    r"\b(?:[ap]\.?m\b\.?|noon|midday|midnight|morning|afternoon|evening|night|tonight)|\d\s*[ap]\.?m\b|\b0\d?:\d{2}\b",
    re.I,
)
_SPAN_PARTS = re.compile(r"\s+(?:to|until|till|and|through)\s+|\s*-\s*", re.I)
#: A time counted from now ("in 2 hours"), or a length said short ("1h", "30m"), not a clock time.
_COUNTED = re.compile(r"\b(?:hours?|hrs?|minutes?|mins?|seconds?|secs?)\b|^\s*\d+(?:\.\d+)?\s*[hm]\s*$", re.I)
#: What makes words a clock time rather than a number: a digit, "at", "o'clock", a half of the day.
_CLOCK_SAID = re.compile(r"\d|\b(?:at|o'?clock|noon|midday|midnight|half|quarter|past)\b|[ap]\.?m\b", re.I)
#: Parts of a working day a request may name instead of hours.
DAY_PARTS = {"morning": (time(9, 0), time(12, 0)), "afternoon": (time(12, 0), time(17, 0))}
_DAY_PART = re.compile(r"\b(morning|afternoon)s?\b", re.I)
#: Two days a span runs between ("between Wednesday and Friday", "from Tuesday to Thursday").
_DAY_SPAN = re.compile(
    r"\b(?:between|from)\s+(\S+(?:\s+\S+)?)\s+(?:and|to|until|till|through|-)\s+(\S+(?:\s+\S+)?)", re.I
)
#: Two weekdays joined as a span with no "from" before them: "sometime Tuesday to Thursday".
_WEEKDAY_SPAN = re.compile(
    r"\b((?:mon|tues?|wed(?:nes)?|thu(?:rs?)?|fri|sat(?:ur)?|sun)(?:day)?)\s+(?:to|until|till|through|thru|-)\s+"
    r"((?:mon|tues?|wed(?:nes)?|thu(?:rs?)?|fri|sat(?:ur)?|sun)(?:day)?)\b",
    re.I,
)
_BETWEEN = re.compile(
    r"\b(?:between|from)\s+(\d{1,2}(?::\d{2})?\s*(?:am|pm)?)\s+(?:and|to|-|until|till)\s+(\d{1,2}(?::\d{2})?\s*(?:am|pm)?)",
    re.I,
)
#: The hyphen of a compound length ("45-min", "two-hour"): a space to the duration reader.
_HYPHENATED = re.compile(r"(?<=[\w.])-(?=(?:minutes?|mins?|hours?|hrs?|h)\b)", re.I)
_DURATION = re.compile(
    r"\b(?:(\d+(?:\.\d+)?)\s*(?:[a-z]+\s+)?(minutes?|mins?|hours?|hrs?|h)\b|(half an hour)|(an hour|one hour))",
    re.I,
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


#: Day words a misspelling is read as ("thursdy", "tomorow"), at this similarity or more (difflib's ratio).
DAY_WORDS = (*WEEKDAYS, "tomorrow", "today")
SPELLING_CUTOFF = 0.85
_LETTERS = re.compile(r"[a-z]{5,}")


def respelled_days(text: str) -> str:
    """``text`` (lower case) with each word close to a day word written as that word."""

    def nearest(found: re.Match[str]) -> str:
        word = found.group(0)
        if word in DAY_WORDS:
            return word
        close = difflib.get_close_matches(word, DAY_WORDS, n=1, cutoff=SPELLING_CUTOFF)
        return close[0] if close else word

    return _LETTERS.sub(nearest, text)


def resolve_day(text: str, today: date) -> date | None:
    """The one day ``text`` names (a day word misspelt by a letter or so too), or None."""
    lowered = respelled_days(text.lower())
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
    span = _DAY_SPAN.search(text) or _WEEKDAY_SPAN.search(text)
    if found is None and span is not None:
        # "between Wednesday and Friday", "from Tuesday to Thursday": both days and those between.
        first, last = resolve_day(span.group(1), today), resolve_day(span.group(2), today)
        if first is not None and last is not None and first <= last:
            return Period(first=first, last=last)
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


def _in_working_hours(said: time) -> time:
    """An hour said on the 12-hour clock without its half of the day ("at 3", "quarter to 4", "8:30"):
    of its two readings, the one nearest the working day (``WORKDAY_START`` to ``WORKDAY_END``; a tie
    goes to the evening). "at 3" is 15:00, "at 9" 09:00, "at 8" 08:00, "at 6" 18:00, "at 12" noon."""

    def distance(hour: int) -> int:
        minutes = hour * 60 + said.minute
        start = WORKDAY_START.hour * 60 + WORKDAY_START.minute
        end = WORKDAY_END.hour * 60 + WORKDAY_END.minute
        return max(start - minutes, minutes - end, 0)

    morning = said.hour % 12
    best = min((morning + 12, morning), key=distance)  # min keeps the first of a tie: the evening
    return said.replace(hour=best)


def resolve_time(text: str) -> time | None:
    """The clock time ``text`` states, or None. Duckling's time dimension finds it ("2pm", "14:00",
    "tomorrow at 3", "half past 3", "quarter to 4", "noon"), read against a midnight so that its value
    is the hour as said; an hour said without am or pm and not on the 24-hour clock is then read in
    working hours (``_in_working_hours``). A time counted from now ("in 2 hours") or one Duckling only
    guesses (a bare number, ``latent``) is none."""
    span = clock_span(text)
    if span is not None:
        # "from 11 to 12" is 11 minutes to 12 to Duckling: a span's start is its first hour.
        return span[0]
    found = duckling_parse_time(text)
    # "set up one on friday at 11": Duckling reads the pronoun "one" as 1 o'clock; an hour said as a
    # word with nothing of a clock about it gives way to a time said as one.
    for item in sorted(
        found, key=lambda entry: (_CLOCK_SAID.search(str(entry["body"])) is None, entry["start"])
    ):
        value = item["value"]
        if value.get("type") == "interval":
            # "this Thursday to 4pm" is one span to Duckling: its parts are read one by one.
            for part in _SPAN_PARTS.split(str(item["body"])):
                said_in_part = resolve_time(part) if part.strip() != str(item["body"]).strip() else None
                if said_in_part is not None:
                    return said_in_part
            continue
        if item.get("latent") or value.get("type") != "value" or value.get("grain") not in ("hour", "minute"):
            continue
        body = str(item["body"])
        if _COUNTED.search(body):
            continue
        said = datetime.fromisoformat(str(value["value"])).time().replace(tzinfo=None)
        if _MERIDIEM.search(body) or said.hour > 12:
            return said
        return _in_working_hours(said)
    return None


def clock_span(text: str) -> tuple[time, time] | None:
    """The two clock times of "between 1 and 6pm", "from 11 to 12", "from 10 to 4", or None."""
    between = _BETWEEN.search(text)
    if between is None:
        return None
    first, last = (resolve_time(part) or resolve_time(f"at {part}") for part in between.groups())
    return (first, last) if first is not None and last is not None and first < last else None


def resolve_hours(text: str) -> tuple[time, time] | None:
    """The hours of a day a request limits itself to: "between 1 and 6pm", "from 10 to 4", "morning"."""
    span = clock_span(text)
    if span is not None:
        return span
    part = _DAY_PART.search(text)
    return DAY_PARTS[part.group(1).lower()] if part is not None else None


#: The longest length an event or a free slot is read as (a "three days" said of a span is no length).
LONGEST_MINUTES = 12 * 60


def resolve_minutes(text: str) -> int | None:
    """The length ``text`` states, in minutes: Duckling's duration dimension ("45 minute", "two hour",
    "an hour and a half", "a quarter of an hour"), in minutes or hours and up to ``LONGEST_MINUTES``;
    else a number and its unit with one word between them ("90 free minutes", "a 2 hr block"). A length
    said as a compound adjective ("a 45-min session", "a 1.5-hour block") is read as its words: Duckling
    reads no duration across the hyphen."""
    text = _HYPHENATED.sub(" ", text)
    for item in sorted(duckling_parse(text, ("duration",)), key=lambda entry: entry["start"]):
        value = item["value"]
        seconds = float((value.get("normalized") or {}).get("value") or 0)
        if value.get("unit") in ("minute", "hour") and 0 < seconds <= LONGEST_MINUTES * 60:
            return round(seconds / 60)
    found = _DURATION.search(text)
    if found is None:
        return None
    if found.group(3):
        return 30
    if found.group(4):
        return 60
    amount = float(found.group(1))
    minutes = round(amount * 60) if found.group(2).lower().startswith("h") else round(amount)
    return minutes if 0 < minutes <= LONGEST_MINUTES else None


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
