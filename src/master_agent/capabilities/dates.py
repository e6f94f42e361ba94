"""Dates and clock times as people write them, read as ISO: "5th Nov 2024" is "2024-11-05", "03/12/2024
(DD/MM/YYYY)" is "2024-12-03", "thurs 6 march 2025, quarter to two in the afternoon" is
"2025-03-06 13:45", "from 20th dec til 5th jan" in a message sent on 3 December 2024 is
"from 2024-12-20 to 2025-01-05".

A built system's SQL reads dates with regular expressions over ISO text and computes with them as
dates (``date - date``, calendar months, weekdays). The reading is Duckling's time dimension, read
against the first date the text writes with its year (a date without one is its next occurrence from
there: a message sent in December asking "til 5th jan" means the next January). What it reads is kept
only where it is a day or a clock time said with digits or a month name: a month, a year, a weekday
alone or "now" stay as written, and so does a number Duckling takes for an hour without a clock word
("2024-11-20 at 20,000 miles" is no 8 pm). Numeric dates are read month first unless the text says it
writes them day first ("DD/MM/YYYY") or the numbers allow only one reading ("25/12/2024").
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, timedelta
from typing import Any

from master_agent.capabilities.terms import _DUCKLING

#: Characters of a text read (Duckling reads the first ``PARSED_CHARS`` of what it is given).
MAX_CHARS = 5000
_MONTH = r"(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.?"
#: A date said with its year: ISO, numeric with a four-digit year, or a month name beside a year.
_DATED = re.compile(
    r"\b\d{4}-\d{2}-\d{2}\b|\b\d{1,2}[/.]\d{1,2}[/.]\d{4}\b"
    rf"|\b\d{{1,2}}(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTH}\s*,?\s*\d{{4}}\b"
    rf"|\b{_MONTH}\s+\d{{1,2}}(?:st|nd|rd|th)?\s*,?\s*\d{{4}}\b",
    re.I,
)
_NUMERIC = re.compile(r"\b(\d{1,2})[/.](\d{1,2})[/.](\d{4})\b")
_DAY_FIRST = re.compile(r"\bDD[/.-]MM\b|\bday[- ]first\b|\bday/month\b", re.I)
#: What makes a span a day: digits with a month name, or a numeric date.
_A_DAY = re.compile(
    rf"\d{{4}}-\d{{2}}-\d{{2}}|\d[/.]\d|\b\d{{1,2}}(?:st|nd|rd|th)?\b.*{_MONTH}|{_MONTH}.*\d", re.I
)
#: What makes a span a clock time: "13:59", "2pm", "noon", "quarter to two in the afternoon".
_CLOCK = re.compile(
    r"\d{1,2}[:h]\d{2}\b|\d\s*(?:am|pm|a\.m\.|p\.m\.)|\b(?:noon|midday|midnight|o'?clock)\b"
    r"|\b(?:quarter|half)\b|\bin the (?:morning|afternoon|evening)\b|\bat night\b",
    re.I,
)
_ISO_DAY = re.compile(r"^\s*\d{4}-\d{2}-\d{2}\s*$")
#: Words before a date that stay as written ("Freeze from ...", "paid on ...").
_LEAD = re.compile(r"^(?:(?:from|between|on|at|the|since|until|till|til|by)\s+)+", re.I)
_TRAILING = re.compile(r"\s*(?:\S+)\s*$")


def _reference(text: str) -> datetime:
    """The first date the text writes with its year (midnight, UTC): year-less dates follow it."""
    for found in _DATED.finditer(text):
        read = _day_values(found.group(0), datetime(2000, 1, 1, tzinfo=UTC))
        if read is not None:
            return datetime.combine(read, datetime.min.time(), tzinfo=UTC)
    return datetime(2000, 1, 1, tzinfo=UTC)


def _numeric(found: re.Match[str], day_first: bool) -> str | None:
    """A numeric date as ISO: day first where the text says so or the first number is no month."""
    first, second, year = (int(g) for g in found.groups())
    day, month = (first, second) if day_first or first > 12 else (second, first)
    try:
        return date(year, month, day).isoformat()
    except ValueError:
        return None


def _day_values(span: str, reference: datetime) -> date | None:
    for item in _DUCKLING.parse(span, reference, ("time",)):
        value = item["value"]
        if value.get("type") == "value" and value.get("grain") == "day":
            return datetime.fromisoformat(value["value"]).date()
    return None


def _instant(value: dict[str, Any]) -> tuple[datetime, str] | None:
    said = value.get("value")
    return (datetime.fromisoformat(said), str(value.get("grain"))) if isinstance(said, str) else None


def _written(span: str, moment: datetime, grain: str) -> str | None:
    """The span as ISO: a day, a day and a clock time, or a clock time alone; None to keep it."""
    if grain == "day":
        if not _A_DAY.search(span) or _ISO_DAY.match(span):
            return None
        return moment.date().isoformat()
    if grain in ("hour", "minute") and _CLOCK.search(span):
        clock = f"{moment:%H:%M}"
        return f"{moment:%Y-%m-%d} {clock}" if _A_DAY.search(span) else clock
    return None


def _read(span: str, reference: datetime) -> tuple[str, int] | None:
    """The span's ISO reading and the characters of it read; a span read as an hour without a clock
    word is read again without its last word ("5th Nov 2024 at 10,000 km": the day alone)."""
    while span.strip():
        found = _DUCKLING.parse(span, reference, ("time",))
        whole = [f for f in found if int(f["start"]) == 0 and int(f["end"]) >= len(span.rstrip(" .,"))]
        if whole:
            value = whole[0]["value"]
            length = len(span.rstrip(" .,"))
            if value.get("type") == "interval" and (said := _interval(span, value)) is not None:
                return said, length
            instant = _instant(value)
            if instant is not None and (written := _written(span, *instant)) is not None:
                return written, length
            if instant is not None and instant[1] == "day":
                return None
        shorter = _TRAILING.sub("", span)
        if shorter == span:
            return None
        span = shorter
    return None


def _interval(span: str, value: dict[str, Any]) -> str | None:
    """ "from 20th dec til 5th jan": both days, the end Duckling gives (the day after) moved back."""
    start, end = _instant(value.get("from") or {}), _instant(value.get("to") or {})
    if start is None or end is None or start[1] != "day" or end[1] != "day" or not _A_DAY.search(span):
        return None
    last = (end[0] - timedelta(days=1)).date()
    return f"{start[0].date().isoformat()} to {last.isoformat()}"


def in_iso_dates(text: str) -> str:
    """``text`` with each day and clock time it writes rewritten as ISO ("2024-11-05",
    "2025-03-06 13:45", "13:45"); the rest of the text as it was."""
    text = text[:MAX_CHARS]
    # Numeric dates first, by the text's own order of day and month (Duckling reads them month first
    # and reads none whose month would be over 12: "25/12/2024").
    day_first = _DAY_FIRST.search(text) is not None
    text = _NUMERIC.sub(lambda found: _numeric(found, day_first) or found.group(0), text)
    reference = _reference(text)
    found = _DUCKLING.parse(text, reference, ("time",))
    out: list[str] = []
    at = 0
    for item in sorted(found, key=lambda f: (int(f["start"]), -int(f["end"]))):
        start, end = int(item["start"]), int(item["end"])
        if start < at:
            continue
        span = text[start:end]
        read = _read(span, reference)
        if read is None:
            continue
        written, length = read
        lead = _LEAD.match(span)
        out.append(text[at:start] + (lead.group(0) if lead else "") + written)
        at = start + length
    out.append(text[at:])
    return "".join(out)
