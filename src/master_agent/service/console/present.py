"""Values as the console shows them to people: rates as percentages, money with its currency, dates and
cron schedules in words, ids shortened, counts with their nouns agreeing. Jinja filters (registered in
``pages``) and the helpers the answer views use."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from datetime import UTC, date, datetime, timedelta
from typing import Any

from master_agent.capabilities.money import money

#: A key or metric name ending in one of these holds a share of 1 (0.0326 reads "3.3%").
_RATIO_NAME = re.compile(r"(?:^|_|\s)(rate|ratio|share|likelihood|probability|confidence|threshold)$")
#: A key ending in one of these holds an amount of money.
_MONEY_NAME = re.compile(r"(?:^|_|\s)(cost|budget|revenue|amount|price|spend|value_eur|value_usd)$")
_DAYS = ["Mondays", "Tuesdays", "Wednesdays", "Thursdays", "Fridays", "Saturdays", "Sundays"]
_DAY_NUMBERS = {"MON": 0, "TUE": 1, "WED": 2, "THU": 3, "FRI": 4, "SAT": 5, "SUN": 6}


def number(value: float) -> str:
    """A plain figure: thousands separated, no trailing zeros (16,856.35; 0.0326; 4)."""
    if value != value or value in (float("inf"), float("-inf")):
        return str(value)
    if float(value).is_integer():
        return f"{int(value):,}"
    if abs(value) >= 1000:
        return f"{value:,.2f}".rstrip("0").rstrip(".")
    return f"{value:.4g}"


def percent(value: float | None) -> str:
    """A share of 1 as a percentage with one decimal (0.0326 -> 3.3%)."""
    if value is None:
        return "—"
    points = float(value) * 100
    return f"{points:.0f}%" if abs(points - round(points)) < 1e-9 else f"{points:.1f}%"


def is_ratio_name(name: str) -> bool:
    return bool(_RATIO_NAME.search(name.lower()))


def is_money_name(name: str) -> bool:
    return bool(_MONEY_NAME.search(name.lower()))


def figure(value: Any, name: str = "", currency: str = "USD") -> str:
    """A number read by what it measures: its key or metric ``name`` says a rate or money."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return "—" if value is None else str(value)
    if name and is_ratio_name(name) and -1.5 <= value <= 1.5:
        return percent(value)
    if name and is_money_name(name):
        return money(value, currency)
    return number(value)


def difference(value: Any, name: str = "", currency: str = "USD") -> str:
    """A signed gap between two values of the metric ``name``: a rate's in percentage points (-0.000365
    of an attach rate -> "-0.04 percentage points"), money's with its currency."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return "—" if value is None else str(value)
    sign = "-" if value < 0 else "+"
    if name and is_ratio_name(name) and -1.5 <= value <= 1.5:
        return f"{sign}{abs(value) * 100:.2f} percentage points"
    if name and is_money_name(name):
        return sign + money(abs(value), currency)
    return sign + number(abs(value))


def _as_datetime(value: Any) -> datetime | date | None:
    if isinstance(value, datetime | date):
        return value
    if isinstance(value, str):
        try:
            return datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return None
    return None


def when(value: Any) -> str:
    """A moment in words, in UTC: "Mon 30 Nov 2026, 09:00 UTC"; a date alone: "Mon 30 Nov 2026"."""
    moment = _as_datetime(value)
    if moment is None:
        return "—" if value is None else str(value)
    if isinstance(moment, datetime):
        if moment.tzinfo is not None:
            moment = moment.astimezone(UTC)
        if (
            (moment.hour, moment.minute, moment.second) == (0, 0, 0)
            and isinstance(value, str)
            and "T" not in value
        ):
            return moment.strftime("%a %-d %b %Y")
        return moment.strftime("%a %-d %b %Y, %H:%M") + " UTC"
    return moment.strftime("%a %-d %b %Y")


def day(value: Any) -> str:
    """A date in words: "30 Nov 2026"."""
    moment = _as_datetime(value)
    if moment is None:
        return "—" if value is None else str(value)
    return moment.strftime("%-d %b %Y")


def day_before(value: Any) -> str:
    """The last day of a window that ends before ``value`` (windows are stored with their end excluded)."""
    moment = _as_datetime(value)
    if moment is None:
        return "—" if value is None else str(value)
    return day(moment - timedelta(days=1))


def _days_of_week(field: str) -> list[int] | None:
    """The days a cron day-of-week field names (Monday 0), or None when it is not a plain list/range."""
    found: set[int] = set()
    for part in field.upper().split(","):
        ends = part.split("-")
        if len(ends) > 2:
            return None
        numbers: list[int] = []
        for end in ends:
            if end in _DAY_NUMBERS:
                numbers.append(_DAY_NUMBERS[end])
            elif end.isdigit() and int(end) <= 7:
                numbers.append((int(end) - 1) % 7)  # cron counts Sunday as 0 (and 7)
            else:
                return None
        first, last = numbers[0], numbers[-1]
        found.update(range(first, last + 1) if last >= first else [*range(first, 7), *range(0, last + 1)])
    return sorted(found)


def schedule(cron: str | None) -> str:
    """A five-field cron schedule in words ("0 9 * * MON" -> "Mondays at 09:00"); what it cannot say
    plainly it gives back as it is."""
    if not cron:
        return "not scheduled"
    fields = cron.split()
    if len(fields) != 5:
        return cron
    minute, hour, day_of_month, month, day_of_week = fields
    if month != "*":
        return cron
    if minute.isdigit() and hour.isdigit():
        at = f"at {int(hour):02d}:{int(minute):02d} UTC"
    elif minute.isdigit() and hour == "*":
        at = f"every hour at minute {int(minute)}"
    elif minute.startswith("*/") and hour == "*" and minute[2:].isdigit():
        at = f"every {int(minute[2:])} minutes"
    else:
        return cron
    if day_of_month == "*" and day_of_week in ("*", "?"):
        return f"Every day {at}" if at.startswith("at") else at[0].upper() + at[1:]
    if day_of_month == "*":
        days = _days_of_week(day_of_week)
        if days is None:
            return cron
        if days == [0, 1, 2, 3, 4]:
            named = "Weekdays"
        elif len(days) == 7:
            named = "Every day"
        else:
            names = [_DAYS[d] for d in days]
            named = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
        return f"{named} {at}"
    if day_of_week in ("*", "?") and day_of_month.isdigit():
        return f"Monthly on day {int(day_of_month)} {at}"
    return cron


def short_id(value: Any, length: int = 8) -> str:
    """The first characters of an id: enough to tell ids apart on a page."""
    text = str(value or "")
    return text[:length] if len(text) > length + 4 else text


def plural(count: int, noun: str, nouns: str | None = None) -> str:
    """``count`` with its noun agreeing: "1 judged solution", "2 judged solutions"."""
    return f"{count:,} {noun if count == 1 else (nouns or noun + 's')}"


def raw_json(value: Any) -> str:
    """The raw value, indented, for the one-click ``<details>``."""
    return json.dumps(value, indent=2, default=str, ensure_ascii=False)


_INITIALISMS = re.compile(
    r"\b(?:roi|kpi|sla|url|api|id|sql|emi|pan|kyc|aov|asp|p95|p50|p99)\b", re.IGNORECASE
)


def label(key: str) -> str:
    """A key as a heading: "expected_lift_points" -> "Expected lift points"."""
    text = str(key).replace("_", " ").strip()
    # Initialisms people know by their letters ("roi_ratio" -> "ROI ratio").
    text = _INITIALISMS.sub(lambda found: found.group(0).upper(), text)
    return text[:1].upper() + text[1:]


def answer_lines(text: str) -> tuple[list[str], list[str]]:
    """A reply's sentences, and its technical lines (the query, its parameters, any JSON), which a page
    keeps behind a click."""
    said: list[str] = []
    technical: list[str] = []
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped:
            continue
        if stripped.startswith(("Query:", "Parameters:")) or re.search(r"[{\[]\s*\"[^\"]+\"\s*:", stripped):
            technical.append(stripped)
        else:
            said.append(stripped)
    return said, technical


def status_words(status: str | None) -> str:
    """The status header's words: what happened, said once (the band is the confidence's, shown by it)."""
    named = {
        "success": "Answered",
        "partial": "Partly answered",
        "error": "Failed",
        "interrupted": "Waiting for you",
        "out_of_scope": "Out of scope",
    }
    return named.get(str(status or ""), label(str(status or "unknown")))


def confidence_words(confidence: float | None) -> str:
    """The confidence as a percentage (its band is not repeated beside it: the status says what was done)."""
    return "—" if confidence is None else percent(confidence)


def table_keys(rows: list[Mapping[str, Any]]) -> list[str]:
    """The columns of a list of records: every key any row has, in first-seen order."""
    keys: list[str] = []
    for row in rows:
        for key in row:
            if key not in keys:
                keys.append(key)
    return keys


def _names(values: Any) -> str:
    items = [str(v).replace("_", " ") for v in (values or [])]
    return ", ".join(items) if items else "nothing"


def audit_sentence(kind: str, detail: Mapping[str, Any]) -> str:
    """One audit event in words ("Stage SALES_EXPLORATION -> VERIFICATION (amount stated)"); the event's
    whole detail stays one click away."""
    said = {
        "message": lambda d: (
            f"Customer wrote “{d.get('text', '')}”"
            + (f" (stated {_names(d.get('stated'))})" if d.get("stated") else "")
        ),
        "decision": lambda d: (
            f"Decided: {label(str(d.get('decision', '')))}"
            + (f": {d['reason']}" if d.get("reason") else "")
            + (f" ({_names(d.get('fields'))})" if d.get("fields") else "")
            + (f" to {label(str(d['worker']))}" if d.get("worker") else "")
        ),
        "transition": lambda d: (
            f"Stage {d.get('from_stage')} → {d.get('to_stage')}"
            + (f" ({d['guard']})" if d.get("guard") else "")
            + (" — final" if d.get("final") else "")
        ),
        "read": lambda d: f"Read {_names(d.get('fields'))} from {d.get('source', 'a record')}",
        "tool": lambda d: f"Called {label(str(d.get('tool', 'a tool')))}",
        "document": lambda d: f"Generated the {label(str(d.get('document', 'document'))).lower()}",
        "task": lambda d: (
            f"Task {label(str(d.get('task_type', '')))}: {d.get('status', '')}"
            + (f", recorded {_names(d.get('applied'))}" if d.get("applied") else "")
        ),
        "refused": lambda d: (
            f"Refused by {d.get('by', 'a check')}: "
            + (str(d["reason"]) if d.get("reason") else _names(d.get("fields")))
        ),
        "override": lambda d: f"Overridden by {d.get('by', 'a person')}: {d.get('reason', '')}",
    }
    words = said.get(kind)
    return words(detail) if words else label(kind)


def artifact_gist(summary: str, payload: Mapping[str, Any]) -> str:
    """An artifact's summary for people: its own when it writes one in words, else its fields counted
    ("12 cases; pass threshold 80%; 3 metrics") rather than its JSON (which stays one click away)."""
    if not summary.lstrip().startswith(("{", "[")):
        return summary
    parts = []
    for key, value in payload.items():
        if key == "version" or value in (None, "", [], {}):
            continue
        if isinstance(value, list):
            parts.append(plural(len(value), label(key).lower().removesuffix("s")))
        elif isinstance(value, Mapping):
            parts.append(f"{label(key).lower()}: {plural(len(value), 'entry', 'entries')}")
        elif isinstance(value, bool):
            parts.append(f"{label(key).lower()}: {'yes' if value else 'no'}")
        elif isinstance(value, int | float):
            parts.append(f"{label(key).lower()} {figure(value, key)}")
        elif len(str(value)) <= 80:
            parts.append(f"{label(key).lower()}: {value}")
    return "; ".join(parts) or "no fields set"


FILTERS = {
    "num": number,
    "percent": percent,
    "money": money,
    "figure": figure,
    "difference": difference,
    "when": when,
    "day": day,
    "day_before": day_before,
    "answer_lines": answer_lines,
    "schedule": schedule,
    "short_id": short_id,
    "plural": plural,
    "raw_json": raw_json,
    "label": label,
    "confidence_words": confidence_words,
    "status_words": status_words,
    "table_keys": table_keys,
    "audit_sentence": audit_sentence,
    "artifact_gist": artifact_gist,
}
