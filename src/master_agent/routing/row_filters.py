"""The rows a data question narrows its figure to by what the tenant's own columns hold: "the attach
rate of the people who finished their training" (a yes/no column of the staff the sales are by),
"phones over 1,000" (an amount column against a number), "Saturdays only" (the day of the week of the
time column), "after 6pm", "Saturday mornings" (the hours of every day, read by Duckling in
``capabilities.terms.hours_of_day``, on the data's clock). A figure over all the rows would answer
another question; two populations of one yes/no column said together ("trained vs untrained") are
compared, each its own figure (``populations_compared``).

What a column is called is read from the column's own name (its words, by their WordNet base forms),
never from a list of phrases: ``training_completed`` is said as "trained", "finished their training";
``refunded`` as "refunded", "sales we refunded"; a word with "un"/"non" before it, or a "not",
"without" or "haven't" just before it, asks for the rows where it does not hold. Columns whose words
name the figure itself ("refund rate" is of ``refunded``) narrow nothing.
"""

from __future__ import annotations

import calendar
import functools
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import Any

from babel.dates import get_day_names

from master_agent.capabilities.numerals import in_digits
from master_agent.capabilities.spec import DataMetric
from master_agent.capabilities.terms import HoursOfDay, MetricMention, hours_of_day
from master_agent.capabilities.tools.sql import ReadOnlySql
from master_agent.errors import ToolInputError
from master_agent.routing.answer_shapes import one_sense
from master_agent.routing.described import lemmas


@dataclass(frozen=True)
class RowFilter:
    """One condition on the rows, its parameters and how the answer says it."""

    condition: str
    said: str
    params: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class _Column:
    table: str
    name: str
    kind: str  # "flag" or "amount"
    through: str | None  # the metric's column that leads to ``table`` (``staff_id``), None: its own


_WORD = re.compile(r"[a-z][a-z'-]*")
_NEGATIONS = frozenset(
    {"not", "no", "never", "without", "non", "haven't", "hasn't", "didn't", "don't", "isn't"}
)
_NEGATING_PREFIXES = ("non-", "non", "un")
#: Column parts that say nothing of what a column holds.
_CARRIERS = frozenset({"id", "at", "on", "is", "has", "of"})
#: "over 1,000", "less than 12", "über 1.000": a bound, its side, and the number.
_BOUND = re.compile(
    r"\b(?P<side>under|below|less\s+than|fewer\s+than|over|above|more\s+than|greater\s+than|at\s+least|"
    r"at\s+most|up\s+to|unter|über|ueber)\s+[$£€]?\s*(?P<number>\d[\d,]*(?:\.\d+)?)",
    re.I,
)
_LOWER_SIDES = ("under", "below", "less", "fewer", "at most", "up to", "unter")
_DAYS = {name.lower(): number for number, name in enumerate(calendar.day_name, start=1)}
#: "Saturdays", "on Saturdays only", "every Sunday", "Saturday mornings": a day of every week, not one date.
_EVERY_DAY = re.compile(
    r"\b(?:every\s+(?P<one>[a-z]+day)\b|(?P<many>[a-z]+day)s\b|"
    r"(?P<parted>[a-z]+day)(?=\s+(?:morning|afternoon|evening|night|lunch\s?time)s\b))",
    re.I,
)
#: "Mon-Fri", "Monday to Friday": a run of days of the week.
_DAY_RUN = re.compile(r"\b(?P<first>[a-z]{3,9})\s*(?:-|–|to|through|thru)\s*(?P<last>[a-z]{3,9})\b", re.I)
_WEEK_PARTS = {"weekday": (1, 2, 3, 4, 5), "weekend": (6, 7)}


def _stems(word: str) -> set[str]:
    """``word``'s base forms, and a short stem of each ("trained" and "training" share "train")."""
    return {form[:5] if len(form) > 5 else form for form in lemmas(word.strip("'"))}


async def _columns(sql: ReadOnlySql, metric: DataMetric) -> list[_Column]:
    """The yes/no and amount columns of the figure's table and of the tables its filters lead to."""
    tables: list[tuple[str, str | None]] = [(metric.table, None)]
    tables += [(entity.removesuffix("_id"), column) for entity, column in metric.filters.items()]
    found: list[_Column] = []
    for table, through in tables:
        try:
            rows = (await sql.query(f"SELECT * FROM {table} LIMIT 1")).rows
        except ToolInputError:
            continue  # no such table, or one the reader may not read
        if not rows or (through is not None and through not in rows[0]):
            continue  # no rows to tell its columns' kinds, or a table the filter's column does not key
        for name, value in rows[0].items():
            if name.endswith("_id") or name == through:
                continue
            if isinstance(value, bool):
                found.append(_Column(table, name, "flag", through))
            elif isinstance(value, int | float):
                found.append(_Column(table, name, "amount", through))
    return found


def _parts(column: str) -> list[str]:
    return [part for part in column.lower().split("_") if part not in _CARRIERS]


def _figure_stems(metric: DataMetric) -> set[str]:
    """The stems of the figure's own words and of the columns it is computed from: they name the figure."""
    words = [word for name in (metric.name, *metric.aliases) for word in _WORD.findall(name.lower())]
    words += [part for part in re.findall(r"[a-z_]+", metric.expression.lower()) for part in part.split("_")]
    return {stem for word in words for stem in _stems(word)}


def _synonyms(metrics: Sequence[DataMetric]) -> dict[str, set[str]]:
    """Words the data's figure names use for one another: two names alike but for one word ("device
    sales", "phone sales") make those words one ("device" is said "phone", "handset")."""
    said: dict[str, set[str]] = {}
    for metric in metrics:
        names = [_WORD.findall(name.lower()) for name in (metric.name, *metric.aliases)]
        for one in names:
            for other in names:
                differ = [at for at in range(len(one)) if len(one) == len(other) and one[at] != other[at]]
                if len(differ) == 1:
                    said.setdefault(one[differ[0]], set()).add(other[differ[0]])
    return said


#: Units a count of time is said in: "12 months" is no column's word however a column ends.
_UNITS = re.compile(r"(?:second|minute|hour|day|week|month|quarter|year)s?")


def _said(
    column: _Column, tokens: Sequence[str], figure: set[str], synonyms: dict[str, set[str]]
) -> tuple[int, bool, int] | None:
    """Where the column's first word (what it is of: "training" of ``training_completed``, "device" of
    ``device_amount``, said "phones") is said in ``tokens``, whether its rows are wanted where it does
    not hold, and how many of its words are said (``training_hours`` over ``training_completed`` when
    "hours" is said too). A flag whose words name the figure ("refunded" of the refund rate) is not said."""
    parts = _parts(column.name)
    if not parts or (column.kind == "flag" and any(_stems(part) & figure for part in parts)):
        return None
    first = {stem for word in (parts[0], *synonyms.get(parts[0], ())) for stem in _stems(word)}
    said = {stem for token in tokens for stem in _stems(token)}
    score = sum(1 for part in parts if _stems(part) & said)
    for at, token in enumerate(tokens):
        negated = False
        if not _stems(token) & first:
            prefix = next(
                (p for p in _NEGATING_PREFIXES if token.startswith(p) and len(token) > len(p) + 3), None
            )
            if prefix is None or not _stems(token[len(prefix) :]) & first:
                continue
            negated = True
        negated = negated or any(word in _NEGATIONS for word in tokens[max(0, at - 3) : at])
        return at, negated, score
    return None


def week_parts(text: str) -> list[str]:
    """The parts of the week (weekdays, weekends) ``text`` names, in the order said."""
    said = re.finditer(rf"\b({'|'.join(_WEEK_PARTS)})s?\b", text.lower())
    return list(dict.fromkeys(found.group(1) for found in said))


def _days_of_week(text: str) -> tuple[tuple[int, ...], str, tuple[int, int]] | None:
    """The days of every week a question keeps ("Saturdays", "Mon-Fri", "weekends"), their words and
    where they stand."""
    lowered = text.lower()
    for part, days in _WEEK_PARTS.items():
        if found := re.search(rf"\b{part}s\b|\b(?:on|at|over)\s+(?:the\s+)?{part}\b", lowered):
            return days, f"{part}s", found.span()
        # "weekend attach", "store 3's weekday refunds": said of a figure, every such day. A word that
        # picks out one weekend before it ("this weekend", "the Easter long weekend") makes it one.
        for found in re.finditer(rf"\b({part})\b(?=\s+(?:\(|(?!of\b|before\b|after\b)[a-z]))", lowered):
            if not _one_week_part(text[: found.start(1)]):
                return days, f"{part}s", found.span(1)
    for run in _DAY_RUN.finditer(lowered):
        first, last = _day(run.group("first")), _day(run.group("last"))
        if first is not None and last is not None and first < last:
            return tuple(range(first, last + 1)), run.group(0), run.span()
    for every in _EVERY_DAY.finditer(lowered):
        day = _day(every.group("one") or every.group("many") or every.group("parted"))
        if day is not None:
            return (day,), every.group(0), every.span()
    for plural in re.finditer(r"\b[^\W\d_]{5,}s\b", lowered):
        # "los sábados", "les samedis", "samstags": a weekday said in the plural in another language.
        if (day := _days_abroad().get(_unaccented(plural.group(0))[:-1])) is not None:
            return (day,), plural.group(0), plural.span()
    return None


#: Languages whose weekday names are read (the date readers' own: ``capabilities.terms``).
_DAY_LOCALES = ("es", "fr", "de", "it", "pt", "nl")


@functools.cache
def _days_abroad() -> dict[str, int]:
    """Weekday names in ``_DAY_LOCALES`` (by Babel's CLDR data, accents dropped) -> ISO day number."""
    return {
        _unaccented(str(name)): number + 1
        for locale in _DAY_LOCALES
        for number, name in get_day_names("wide", locale=locale).items()
    }


def _unaccented(word: str) -> str:
    return "".join(ch for ch in unicodedata.normalize("NFKD", word.lower()) if not unicodedata.combining(ch))


def days_of_week_blanked(text: str) -> str:
    """``text`` with the days of every week it keeps blanked ("on Saturdays in July" is July, each
    Saturday of it; a date reader would read the first Saturday)."""
    for _ in range(len(_WEEK_PARTS) + 1):  # "weekday ... against weekend ...": each of them
        days = _days_of_week(text)
        if days is None:
            break
        start, end = days[2]
        text = text[:start] + " " * (end - start) + text[end:]
    return text


#: Words before "weekend" / "weekday" that pick out one of them ("last weekend", "a weekend in May").
_ONE_OF_THEM = frozenset(
    [
        "this",
        "last",
        "next",
        "that",
        "coming",
        "past",
        "previous",
        "upcoming",
        "following",
        "same",
        "long",
        "the",
        "a",
        "an",
        "one",
        "first",
        "second",
        "third",
        "fourth",
        "final",
        "holiday",
        "bank",
    ]
)


def _one_week_part(before: str) -> bool:
    """Whether the word just before a "weekend" / "weekday" picks out one of them: a determiner, or a
    name ("Easter weekend", "Labor Day weekend"); a possessive or a store number does not ("store 3's")."""
    words = re.findall(r"[^\W_]+(?:'s)?", before)
    if not words:
        return False
    last = words[-1]
    return last.lower() in _ONE_OF_THEM or (last[0].isupper() and last.isalpha() and len(words) > 1)


def _day(word: str) -> int | None:
    """The day of the week ``word`` names, in full or shortened ("Sat", "Thurs"); None for any other word."""
    word = word.lower()
    return next((number for name, number in _DAYS.items() if len(word) >= 3 and name.startswith(word)), None)


def _bound(text: str, at: int, column: str) -> tuple[str, Decimal] | None:
    """The bound on the column said after its words ("phones over 1,000", "anything under 400") or in
    its own unit ("less than 12 months" of ``tenure_months``), nearest them within a few words, as an
    operator and a number. "more than 500 phones" counts phones: no bound on their amount."""
    units = {part for part in column.lower().split("_") if _UNITS.fullmatch(part)}
    near: list[tuple[int, re.Match[str]]] = []
    for match in _BOUND.finditer(text):
        place = len(_WORD.findall(text[: match.start()].lower()))
        following = _WORD.findall(text[match.end() :].lower())[:1]
        in_unit = bool(following) and bool(_stems(following[0]) & {s for unit in units for s in _stems(unit)})
        if (place > at or in_unit) and abs(place - at) <= 6:
            near.append((abs(place - at), match))
    if not near:
        return None
    match = min(near, key=lambda pair: pair[0])[1]
    try:
        number = Decimal(match.group("number").replace(",", ""))
    except InvalidOperation:
        return None
    side = match.group("side").lower()
    lower = any(side.startswith(word) for word in _LOWER_SIDES)
    inclusive = side.startswith(("at ", "up"))
    return ("<=" if inclusive else "<") if lower else (">=" if inclusive else ">"), number


async def row_filters(
    sql: ReadOnlySql, metric: DataMetric, metrics: Sequence[DataMetric], message: str
) -> list[RowFilter]:
    """The conditions narrowing ``metric`` to the rows ``message`` keeps, by the tenant's columns."""
    text = in_digits(re.sub(r"(?<=\d)\.(?=\d{3}\b)", ",", message))  # "über 1.000" is a thousand
    tokens = _WORD.findall(text.lower())
    figure, synonyms = _figure_stems(metric), _synonyms(metrics)
    filters: list[RowFilter] = []
    found = [
        (column, said)
        for column in await _columns(sql, metric)
        if (said := _said(column, tokens, figure, synonyms))
    ]
    for column, (at, negated, score) in found:
        if any(other_at == at and other_score > score for _, (other_at, _, other_score) in found):
            continue  # another column's words are said more fully there
        if column.kind == "flag" and len(set(_polarities(column, tokens, figure, synonyms))) == 2:
            continue  # "trained vs untrained": two populations compared (``populations_compared``)
        if column.kind == "flag":
            filters.append(_flag_filter(column, negated))
            continue
        bound = _bound(text, at, column.name)
        if bound is None:
            continue
        operator, number = bound
        condition = f"{column.name} {operator} {number}"
        words = f"{column.name.replace('_', ' ')} {operator} {number}"
        if column.through is not None:
            condition = f"{column.through} IN (SELECT {column.through} FROM {column.table} WHERE {condition})"
            words = f"{column.table} with {words}"  # "staff with training completed: no"
        filters.append(RowFilter(condition=condition, said=words))
    return filters + time_slices(metric, message)


def time_slices(metric: DataMetric, message: str) -> list[RowFilter]:
    """The parts of every week and of every day ``message`` keeps of ``metric``'s rows ("weekend
    attach", "Saturday mornings", "after 6pm"); none for a figure without a time column."""
    if not metric.time_column:
        return []
    slices: list[RowFilter] = []
    if len(week_parts(message)) < 2 and (days := _days_of_week(message)) is not None:
        numbers, words, _ = days
        slices.append(
            RowFilter(
                condition=f"extract(isodow FROM {metric.time_column} AT TIME ZONE 'UTC') = ANY(%(days_of_week)s)",
                said=words,
                params={"days_of_week": list(numbers)},
            )
        )
    if (hours := hours_of_day(message)) is not None:
        slices.append(hours_filter(metric.time_column, hours))
    return slices


def _polarities(
    column: _Column, tokens: Sequence[str], figure: set[str], synonyms: dict[str, set[str]]
) -> list[bool]:
    """Whether each place ``column`` is said in ``tokens`` asks for the rows where it does not hold."""
    said: list[bool] = []
    start = 0
    while start < len(tokens) and (found := _said(column, tokens[start:], figure, synonyms)) is not None:
        said.append(found[1])
        start += found[0] + 1
    return said


def _flag_filter(column: _Column, negated: bool) -> RowFilter:
    condition = f"NOT {column.name}" if negated else column.name
    words = f"{column.name.replace('_', ' ')}: {'no' if negated else 'yes'}"
    if column.through is not None:
        condition = f"{column.through} IN (SELECT {column.through} FROM {column.table} WHERE {condition})"
        words = f"{column.table} with {words}"
    return RowFilter(condition=condition, said=words)


async def populations_compared(
    sql: ReadOnlySql, metric: DataMetric, metrics: Sequence[DataMetric], message: str
) -> tuple[RowFilter, RowFilter] | None:
    """The two populations of one yes/no column a question sets side by side ("did the trained staff
    beat the untrained ones", "refunded vs not refunded"), in the order said; None when it says one."""
    if metric.time_column and len(parts := week_parts(message)) == 2:
        # "weekend attach vs weekday attach": the days of every week, each part its own rows.
        first, second = (
            RowFilter(
                condition=f"extract(isodow FROM {metric.time_column} AT TIME ZONE 'UTC') = ANY(%(days_{part})s)",
                said=f"{part}s",
                params={f"days_{part}": list(_WEEK_PARTS[part])},
            )
            for part in parts
        )
        return first, second
    tokens = _WORD.findall(message.lower())
    figure, synonyms = _figure_stems(metric), _synonyms(metrics)
    for column in await _columns(sql, metric):
        if column.kind != "flag":
            continue
        said = list(dict.fromkeys(_polarities(column, tokens, figure, synonyms)))
        if len(said) == 2:
            return _flag_filter(column, said[0]), _flag_filter(column, said[1])
    return None


def hours_filter(column: str, hours: HoursOfDay) -> RowFilter:
    """The rows whose time falls in ``hours`` of its day, on the data's clock (UTC, as every window)."""
    minute = f"(extract(hour FROM {column} AT TIME ZONE 'UTC') * 60 + extract(minute FROM {column} AT TIME ZONE 'UTC'))"
    joined = "AND" if hours.start < hours.end else "OR"  # "10pm to 2am" runs over midnight
    return RowFilter(
        condition=f"({minute} >= %(from_minute)s {joined} {minute} < %(to_minute)s)",
        said=f"{hours.said} ({hours.start // 60:02d}:{hours.start % 60:02d}-{hours.end // 60:02d}:{hours.end % 60:02d} UTC)",
        params={"from_minute": hours.start, "to_minute": hours.end},
    )


#: "how many accessories", "the number of refunds": the thing a question counts.
_HOW_MANY = re.compile(r"\b(?:how\s+many|number\s+of|count\s+of)\s+(?P<thing>[a-z][a-z'-]*)", re.I)
#: "what fraction had ...", "what % of ...": a share of the rows, said before what they had.
_SHARE = re.compile(
    r"\b(?:what|which)\s+(?:\w+\s+)?(?:share|proportion|percentage|percent|fraction|portion|ratio)\b|\bwhat\s*%",
    re.I,
)


async def figure_of_flag(
    sql: ReadOnlySql, metrics: Sequence[DataMetric], message: str
) -> MetricMention | None:
    """The figure a question about a yes/no column of the rows asks by its words: "how many accessories
    did store 3 sell" counts the sales that had one (``accessory_attached``), never their money; "of
    the refunded sales, what fraction had an accessory" is the share with one (the figure averaging
    that column), over the rows the rest narrows to. None when no such column is said so."""
    counts = [metric for metric in metrics if metric.expression.replace(" ", "").lower() == "count(*)"]
    for counting in counts:
        flags = [
            column
            for column in await _columns(sql, counting)
            if column.kind == "flag" and column.through is None
        ]
        if not flags:
            continue
        if (counted := _HOW_MANY.search(message)) is not None:
            thing = _stems(counted.group("thing").lower())
            flag = next((f for f in flags if _parts(f.name) and thing & _stems(_parts(f.name)[0])), None)
            if flag is not None:
                # The data's own count of the rows with it ("refunds") when it has one.
                own = re.compile(rf"^count\(\*\)\s+FILTER\s+\(WHERE\s+{flag.name}\)$", re.I)
                kept = next(
                    (m for m in metrics if m.table == counting.table and own.match(m.expression.strip())),
                    None,
                )
                return MetricMention(metric=kept or counting)
        if (share := _SHARE.search(message)) is not None:
            after = _WORD.findall(message[share.end() :].lower())
            for token in after:
                # "what share came with an add-on": the flag's word, or a noun of one sense with it.
                flag = next(
                    (
                        f
                        for f in flags
                        if _parts(f.name)
                        and (_stems(token) & _stems(_parts(f.name)[0]) or one_sense(token, _parts(f.name)[0]))
                    ),
                    None,
                )
                if flag is None:
                    continue
                rate = re.compile(rf"^avg\(\s*{flag.name}\s*::\s*int\s*\)")
                found = next(
                    (m for m in metrics if m.table == counting.table and rate.match(m.expression)), None
                )
                return MetricMention(metric=found) if found is not None else None
    return None


def names_a_column(word: str, columns: Sequence[str]) -> bool:
    """Whether ``word`` (or it without "un"/"non") is a word of one of ``columns`` by its base form
    ("untrained" of ``training_completed``): rows the data can narrow to by that column."""
    prefix = next((p for p in _NEGATING_PREFIXES if word.startswith(p) and len(word) > len(p) + 3), "")
    said = _stems(word) | (_stems(word[len(prefix) :]) if prefix else set())
    return any(
        said & _stems(part) for column in columns for part in _parts(column) if not _UNITS.fullmatch(part)
    )
