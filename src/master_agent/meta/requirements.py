"""Requirements as data: the constraints a system request states, read from its words into
``Requirement`` records, each traced to the words it came from.

What is read, and how:

- **Output fields** from the sentence declaring the answer ("returns a JSON object with decision
  (approve or deny), route (agent or manager) and order_id"): each field, with its allowed values.
- **Numbers and amounts** by Duckling (the rule-based parser the project already reads time with):
  money with its currency, plain numbers; the comparison around a number by a small grammar over the
  tokens next to it ("over", "more than", "below", "at least" before it; "or more", "or less" after
  it) and the quantity's unit from the word after it ("20 units", "5%", "48 hours").
- **Assignments**: a quoted value, ``true``/``false``/``null`` or a number, given to the output field
  named nearest before it in the clause (or the field whose allowed values hold it).
- **Conditions** of an assignment: the comparisons in the words before it, else the things those
  words list ("mentions a lawyer, legal action or a chargeback").
- **Defaults**: an assignment in a clause saying "all others", "everything else", "otherwise"...
- What none of this can turn into a rule (a tone, a copied value, a negated list, a date difference)
  is still a requirement, marked ``buildable=False`` with the reason: offline, a model is needed.
"""

from __future__ import annotations

import ast
import itertools
import json
import re
import unicodedata
from collections.abc import Callable
from typing import Any, Literal

from master_agent.capabilities.numerals import in_digits, number_start, written_span
from master_agent.capabilities.rates import names_a_period, period_named
from master_agent.capabilities.terms import duckling_parse
from master_agent.capabilities.tools import lexicon
from master_agent.capabilities.tools.lexicon import verb_base
from master_agent.meta.artifacts import (
    Comparison,
    Computation,
    Operand,
    Requirement,
    RequirementKind,
    Rule,
    RuleValue,
)
from master_agent.meta.code_rules import code_as_prose

#: Characters of a request read (the request's own limit).
MAX_CHARS = 5000
_FIELD_DECL = re.compile(
    r"(?:\b(?:returns?|answers?|outputs?|responds?|produces?|emits?)\b[^.]*?\b(?:json object|object|fields?|answer|json(?=\s*:))\b"
    # Notes and chat say it without a verb: "a JSON object back with ...", "JSON back: ...",
    # "output JSON w/ ...".
    r"|\bjson(?:\s+object)?(?:\s+back\b|(?=\s*(?:w/|with\b))))"
    r"(?:\s+with|\s+w/)?(?:\s+(?:the|two|three|four|five)\s+fields?,?)?:?\s*(?P<body>(?:\([^()]*\)|[^.(\n])*)",
    re.I,
)
#: One declared field: its name, then its allowed values in brackets ("decision (approve or deny)",
#: "status (current | due_soon | overdue)") or quoted after a colon ("decision: "approve", "reject" or
#: "review""); a bracket or a quoted value standing alone is a description, no field.
_DECL_ITEM = re.compile(
    r"(?P<name>[a-z][a-z0-9]*(?:_[a-z0-9]+)*)"
    r"(?:\s*\((?P<paren>[^)]*)\)|\s*:\s*(?P<listed>\"[^\"]*\"(?:\s*(?:,|\bor\b|\|)\s*\"[^\"]*\")*))?"
    r"|\([^)]*\)|\"[^\"]*\"",
    re.I,
)
_IDENT = re.compile(r"\b([a-z][a-z0-9]*(?:_[a-z0-9]+)*)\b")
_VALUE = re.compile(
    r'"(?P<quoted>[^"]{1,60})"|\b(?P<word>true|false|null)\b|(?<![\w$.,])(?P<num>\d+)(?![\w%$.,])'
)
_BEFORE = [
    (re.compile(r"(?:at least|no less than|not less than|minimum of|from)\s*$", re.I), ">="),
    (
        re.compile(r"(?:at most|no more than|not more than|up to(?: and including)?|maximum of)\s*$", re.I),
        "<=",
    ),
    (re.compile(r"(?:more than|greater than|over|above|exceeding|exceeds?|higher than)\s*$", re.I), ">"),
    (re.compile(r"(?:less than|fewer than|below|under|lower than)\s*$", re.I), "<"),
    # "within the last 90 days": a time up to the number.
    (re.compile(r"(?:within|in)(?: the (?:last|past|first))?\s*$", re.I), "<="),
]
#: A range: "between $100 and $500" (inclusive unless "strictly"); its upper end's words before it.
_BETWEEN_LOW = re.compile(r"\b(strictly\s+)?between\s*$", re.I)
#: "1 to 30 days": a range written by its ends, the lower one's words after it.
_RANGE_TO = re.compile(r"^\s*(?:[a-z%]+\s+)?(?:to|through|-)\s*[$€£]?\s*\d", re.I)
_BETWEEN_HIGH = re.compile(
    r"\b(strictly\s+)?between\s+[$€£]?\s*\d[\d,.]*\s*(?:[a-z%]+\s+)?(?:and|to)\s*$", re.I
)
#: Words that make what follows them a condition that must be absent ("a vendor not on the list (A,
#: B)", "unless it mentions X", "any currency other than US dollars"); "never" is the rule's modal.
_CUE = re.compile(
    # "not yet past due" negates a time, "are not decided" a verb: neither says something is absent.
    # "no more than 3 parcels" bounds a number: no absence either.
    r"\b(?:not(?! yet\b)(?!\s+\w+ed\b)(?!\s+(?:more|less|fewer)\s+than\b)"
    r"|no(?!\s+(?:more|less|fewer)\s+than\b)|without|other than|unless|except(?: for)?|none of)\b",
    re.I,
)
#: "overtime_hours is the week's total hours above 40 ...": a field defined by arithmetic.
_EXPRESSION = re.compile(
    r"^\s*[a-z][a-z0-9_]*\s+is\s+the\b[^;]*\b(?:minus|plus|times|sum|total|difference|above|number of)\b"
    r"|\b[a-z][a-z0-9_]*\s+is\s+(?:the\s+)?[\w-]+(?:\s+[\w-]+){0,4}?\s+(?:minus|plus|times|divided by)\b",
    re.I,
)
_ARITHMETIC = "a value computed from the input's numbers needs arithmetic no rule here states"
_NOT_YET = re.compile(r"\bnot yet (?:past|after|beyond) (?:its|the|their) (\w+)", re.I)
#: Words after a value that start its condition: "risk is "high" when the change ...".
_POSTPOSED = re.compile(
    r"^\W*(?:when|if|whenever|where|unless|except|provided|(?:on|for) (?:a|an|any|each|every))\b", re.I
)
#: A cue after what must be absent: "whose rollback plan is missing or says none".
_POST_CUE = re.compile(r"\b(?:is|are)\s+(?:missing|absent|empty|blank)\b", re.I)
#: Verbs that lead to what the input must mention: the words before them are its subject.
_MENTION_VERB = re.compile(
    r"\b(?:mentions?|mentioned|mentioning|reports?|reported|reporting|contains?|contained|containing|"
    r"includes?|included|including|says?|said|names?|named)\b",
    re.I,
)
#: "The reply never uses the words "unfortunately" or "policy"": words a free text avoids or uses.
_WORDING = re.compile(
    r"\b(?:uses?|contains?|says?|include|includes)\s+(?:the\s+)?(?:words?|phrases?|terms?)\b", re.I
)
#: Time units a comparison of days between two dates is written in, in days.
_DAYS = {"day": 1, "week": 7, "month": 30, "year": 365}
_AFTER = [
    (re.compile(r"^\s*(?:or more|or above|or higher|and above|and over|or greater|or later)\b", re.I), ">="),
    (re.compile(r"^\s*(?:or less|or fewer|or below|or lower|and below|and under|or earlier)\b", re.I), "<="),
]
_DEFAULT = re.compile(
    r"\b(all others?|others|all other|everything else|otherwise|every other|any other|other \w+s|the rest"
    r"|everyone else|everybody else|anyone else|anything else"
    r"|none of (?:these|those|the above|them)|no (?:other )?rules? (?:catch|appl|match)\w*"
    # ", else procurement_lead": the other value of a rule said before it.
    r"|(?<=[,;]\s)else|(?<=[,;])else|^\s*else)\b",
    re.I,
)
_NEGATED = re.compile(r"\b(not|no|without|other than|none)\b", re.I)
_TONE = re.compile(
    r"\b(tone|greet|polite|friendly|formal|apolog\w*|exclamation|empathetic|courteous)\b", re.I
)
_COPY = re.compile(r"\b(repeats?|copies|copy|as written|exactly|quotes?)\b", re.I)
_DATE_MATH = re.compile(r"\b(days? (?:before|after)|since|ago|within the last)\b", re.I)
_MODAL = re.compile(r"\b(never|must|only|always|whatever|at all times)\b", re.I)
_TOTAL = re.compile(r"\b(total|in total|sum|combined|altogether)\b", re.I)
_LIST_SPLIT = re.compile(
    # "dangerous goods such as power banks": the category and its members are items apart.
    r",|\(|\)|\bor\b|\band\b|:|\bsuch as\b|\be\.g\.|\bfor (?:example|instance)\b|\bincluding\b|\bnamely\b",
    re.I,
)
_WORD = re.compile(r"[a-z][a-z0-9/_-]*", re.I)
#: Words that never name a condition: function words and the verbs that lead to one.
_FUNCTION = frozenset(
    [
        "a",
        "an",
        "the",
        "any",
        "another",
        "every",
        "each",
        "all",
        "its",
        "it",
        "their",
        "them",
        "this",
        "that",
        "these",
        "those",
        "is",
        "are",
        "be",
        "been",
        "was",
        "were",
        "which",
        "who",
        "whose",
        "with",
        "by",
        "of",
        "to",
        "for",
        "in",
        "on",
        "at",
        "from",
        "as",
        "than",
        "then",
        "so",
        "if",
        "when",
        "while",
        "whatever",
        "mentions",
        "mention",
        "mentioning",
        "reports",
        "report",
        "reporting",
        "contains",
        "contain",
        "containing",
        "includes",
        "include",
        "including",
        "marked",
        "carrying",
        "touches",
        "touch",
        "modifies",
        "modify",
        "touching",
        "other",
        "carries",
        "carry",
        "changes",
        "under",
        "named",
        "called",
        "file",
        "files",
        "adds",
        "add",
        "about",
        "has",
        "have",
        "had",
        "gets",
        "get",
        "go",
        "goes",
        "route",
        "routes",
        "routed",
        "need",
        "needs",
        "needed",
        "must",
        "should",
        "will",
        "can",
        "may",
        "stay",
        "stays",
        "is",
        "put",
        "are",
        "ticket",
        "tickets",
        "message",
        "messages",
        "claim",
        "claims",
        "diff",
        "diffs",
        "alert",
        "alerts",
        "request",
        "requests",
        "item",
        "items",
        "question",
        "questions",
        "problem",
        "problems",
        "issue",
        "issues",
        "case",
        "cases",
    ]
)
_COPULA = frozenset(
    [
        "is",
        "are",
        "was",
        "were",
        "be",
        "go",
        "goes",
        "get",
        "gets",
        "need",
        "needs",
        "stay",
        "stays",
        "trigger",
        "triggers",
        "must",
    ]
)
_ONES = {
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
}


#: Digit runs Duckling reads in an amount: longer ones are blanked (its number rules are slow on them),
#: and no amount a request states has more.
_AMOUNT_DIGITS = 16


def _numbers(clause: str) -> list[dict[str, Any]]:
    """Duckling's numbers and amounts of money in ``clause``, through the process's one runtime."""
    return duckling_parse(clause, ("amount-of-money", "number"), long_digits=_AMOUNT_DIGITS)


def _cued(clause: str, start: int, end: int) -> bool:
    """Whether words of a comparison stand right before a number ("fewer than ninety") or after it and
    its noun ("ninety days or fewer")."""
    after = re.sub(r"^\s*[a-z-]+(?=\s+(?:or|and)\b)", "", clause[end:], flags=re.I)
    return any(p.search(clause[:start].rstrip()) for p, _ in _BEFORE) or any(
        p.search(after) for p, _ in _AFTER
    )


def _amounts(clause: str) -> list[tuple[int, int, float, str]]:
    """(start, end, value, unit) of each number or amount in ``clause`` as the built systems read their
    inputs (``in_digits``: "under a grand", "€1.500,00", "two and a half grand"), each span where the
    clause writes it."""
    read = in_digits(clause)
    if read == clause:
        return _amounts_read(clause)
    out: list[tuple[int, int, float, str]] = []
    for start, end, value, unit in _amounts_read(read):
        first, last = written_span(clause, read, start, end)
        if not re.search(r"\d", clause[first:last]) and unit not in _MONEY and not _cued(clause, first, last):
            continue  # a number word ("two teams") is no quantity compared, as in ``_amounts_read``
        out.append((first, last, value, unit))
    return out


def _amounts_read(clause: str) -> list[tuple[int, int, float, str]]:
    """(start, end, value, unit) of each number or amount in ``clause``, the longest reading of a span
    (both ends of a range Duckling reads as one: "between $200 and $1,000")."""
    # Clock times ("before 14:00", "at 2pm"): minutes after midnight, never two numbers.
    out: list[tuple[int, int, float, str]] = [
        (m.start(), m.end(), float(_clock_minutes(m)), "clock") for m in _CLOCK_SAID.finditer(clause)
    ]
    for found in _numbers(clause):
        value = found["value"]
        ends = [value]
        if value.get("type") == "interval":
            ends = [end for end in (value.get("from"), value.get("to")) if end]
        span_start, span_end = int(found["start"]), int(found["end"])
        # Duckling's interval span includes the comparison words: keep each number's own span.
        written = list(re.finditer(r"[$€£]?\s*\d[\d,]*(?:\.\d+)?", clause[span_start:span_end]))
        for index, end_value in enumerate(ends):
            number = end_value.get("value")
            if not isinstance(number, int | float):
                continue
            start, end = span_start, span_end
            if index < len(written):
                start, end = span_start + written[index].start(), span_start + written[index].end()
            elif index or (found["dim"] == "number" and not _cued(clause, span_start, span_end)):
                continue  # a number word ("two") is a value, not a quantity compared, unless a
                # comparison says so ("ninety days or fewer", "more than fifteen thousand")
            else:
                start = number_start(clause, span_start, span_end)  # its comparison words before it
            unit = str(end_value.get("unit") or "") if found["dim"] == "amount-of-money" else ""
            if unit == "unknown":
                unit = ""
            if not unit:
                # The noun after the number ("20 units", "60 total hours": its noun, not "total").
                after = re.match(
                    r"\s*(?:(?:total|in|more)\s+)?(%|(?:working|business)\s+days?|[a-z][a-z-]*)",
                    clause[end:],
                    re.I,
                )
                noun = after.group(1).lower() if after else ""
                unit = noun if noun not in _FUNCTION and noun not in ("or", "and", "nor") else ""
            if any(s <= start < e or (u == "clock" and start <= s < end) for s, e, _, u in out):
                continue
            out.append((start, end, float(number), unit))
    return sorted(out)


#: "14:00", "2pm", "2:30 p.m.": a clock time a rule compares with.
_CLOCK_SAID = re.compile(
    r"\b(?P<h>[01]?\d|2[0-3]):(?P<m>[0-5]\d)\b(?!\s*[ap]\.?m\b)"
    r"|\b(?P<h12>1[0-2]|0?[1-9])(?::(?P<m12>[0-5]\d))?\s*(?P<half>[ap])\.?m\b\.?",
    re.I,
)


def _clock_minutes(found: re.Match[str]) -> int:
    if found.group("h") is not None:
        return int(found.group("h")) * 60 + int(found.group("m"))
    hour = int(found.group("h12")) % 12 + (12 if found.group("half").lower() == "p" else 0)
    return hour * 60 + int(found.group("m12") or 0)


_DAY_NAMES = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
#: A day's name ("Monday", "Saturdays"); in a range also its short form ("Mon-Fri"), never a word
#: that only starts like one ("months", "sat", "the sun").
_DAY_NAME = r"(?:mon|tues|wednes|thurs|fri|satur|sun)days?"
_DAY_SHORT = r"(?:mon|tue|wed|thu|fri|sat|sun)\.?"
#: "Monday to Friday", "Mon-Fri", "on a Saturday or Sunday", "weekdays", "at the weekend".
_DAY_RANGE = re.compile(
    rf"\b({_DAY_NAME}|{_DAY_SHORT})\s*(?:to|through|thru|-|–|until)\s*({_DAY_NAME}|{_DAY_SHORT})(?![a-z])",
    re.I,
)
_DAY_SAID = re.compile(rf"\b{_DAY_NAME}\b|\b(?:on\s+)?(?:a\s+|the\s+)?(?:weekdays?|week-?ends?)\b", re.I)


def _day_number(word: str) -> int | None:
    word = word.lower()
    return next((i + 1 for i, name in enumerate(_DAY_NAMES) if name.startswith(word[:3])), None)


_WORKING_DAYS = re.compile(r"\b(?:working|business)\s+days?\b", re.I)


def _weekdays(segment: str) -> tuple[list[int], int] | None:
    """The days of the week a condition names ("booked Monday to Friday": 1-5; "on a Saturday or
    Sunday": 6, 7; "weekdays", "weekends") and where it first names one; None when it names none."""
    days: list[int] = []
    first = len(segment)
    for found in _DAY_RANGE.finditer(segment):
        start, end = _day_number(found.group(1)), _day_number(found.group(2))
        if start is None or end is None:
            continue
        days += [((start - 1 + i) % 7) + 1 for i in range((end - start) % 7 + 1)]
        first = min(first, found.start())
    rest = _DAY_RANGE.sub(lambda m: " " * len(m.group(0)), segment)
    for found in _DAY_SAID.finditer(rest):
        word = found.group(0).lower()
        if "week" in word:
            days += [6, 7] if "end" in word else [1, 2, 3, 4, 5]
        elif (number := _day_number(word)) is not None:
            days.append(number)
        first = min(first, found.start())
    return (sorted(set(days)), first) if days else None


def _comparison(
    clause: str, start: int, end: int, value: float, unit: str, total: bool, text: str = ""
) -> Comparison | None:
    before, after = re.sub(r"(?:[$€£]|\b[A-Z]{3})\s*$", "", clause[:start].rstrip()), clause[end:]
    after = (
        re.sub(r"^\s*(%|(?:working|business)\s+days?|[a-z-]+)(?=\s+or\b|\s+and\b)", "", after, flags=re.I)
        if unit
        else after
    )
    op: str | None = None
    if (low := _BETWEEN_LOW.search(before)) is not None:
        op = ">" if low.group(1) else ">="
    elif (high := _BETWEEN_HIGH.search(before)) is not None:
        op = "<" if high.group(1) else "<="
    elif _RANGE_TO.match(after):
        op = ">="
    elif re.search(r"\d[\d,.]*\s*(?:[a-z%]+\s+)?(?:to|through)\s*[$€£]?\s*$", before, re.I):
        op = "<="
    for pattern, candidate in _AFTER:
        if op is None and pattern.search(after):
            op = candidate
    for pattern, candidate in _BEFORE:
        if op is None and pattern.search(before):
            op = candidate
    if op is None and unit == "clock":
        # "before 14:00", "after 6pm", "by noon": a time of day.
        said = re.search(r"\b(before|after|past|by|until|till)\s*(?:at\s+)?$", before, re.I)
        op = {"before": "<", "after": ">", "past": ">"}.get(said.group(1).lower(), "<=") if said else None
    if op is None:
        return None
    if unit == "clock":
        return Comparison(op=op, value=value, unit="clock")
    days = _DAYS.get(singular_unit(unit))
    window = re.search(r"\b(?:within|in)\s+the\s+(?:last|past)\s*$", before, re.I)
    if window is not None and days is not None:
        # "any late payment in the last 12 months": a window naming what is counted, no threshold on
        # time; the input writes the count after those words ("Late payments in the last 12 months: 0").
        named, anything = _named_by(before[: window.start()])
        if named is not None and (
            anything
            or re.search(
                r"\b(?:any|a|an)\s+" + re.escape(named) + r"\s*$", before[: window.start()].strip(), re.I
            )
        ):
            return Comparison(op=">", value=0, unit=singular_unit(named.split()[-1]), label=named)
    if _WORKING_DAYS.match(unit or ""):
        # "more than 5 working days after delivery": Monday to Friday days between the two dates.
        since, until = _dates(before, clause[end:], text or clause)
        if since is not None:
            return Comparison(op=op, value=value, unit="working days", since=since, until=until)
    if days is not None:
        since, until = _dates(before, clause[end:], text or clause)
        if since is not None and days >= _DAYS["month"]:
            # "less than 6 months before", "12 months or more", "one full year": calendar months,
            # counted as whole months from the day (29 February + 12 months is 28 February).
            months = value * (12 if days == _DAYS["year"] else 1)
            return Comparison(op=op, value=months, unit="months", since=since, until=until)
        if since is not None:
            return Comparison(op=op, value=value * days, unit="days", since=since, until=until)
    changed = _CHANGE.search(before)
    if changed is not None:
        # "whose coverage falls by more than 2.0 percentage points": the change between two values.
        named, _ = _named_by(before[: changed.start()] + " over")
        direction = "fall" if changed.group("dir").lower().startswith(_FALLS) else "rise"
        if named is not None:
            return Comparison(op=op, value=value, unit=unit, label=named, change=direction)
    label, each = _named_by(before)
    of = _percent_of(clause, end) if unit == "%" else None
    if of is not None and label == of:
        label = None  # "from 80% of the budget up to 100% of it": the quantity named elsewhere
    quantifier = _quantifier(before, text or clause)
    every = quantifier == "every"
    each = (each or quantifier == "some") and not every
    if unit and unit not in _MONEY and _PARTS.search(clause):
        total = True  # "at least 60 total hours", "counting added plus deleted lines"
    subtotal = unit in _MONEY and _PRE_TAX.search(clause) is not None
    if unit in _MONEY and _WITH_TAX.search(clause):
        total = True
    return Comparison(
        op=op,
        value=value,
        unit=unit,
        total=total and not (each or every or subtotal),
        subtotal=subtotal,
        label=label,
        each=each,
        every=every,
        of=of,
        # "the annual value is $100,000 or more", "rent over $2,000 a month": money per a period.
        per=period_named(label or "", after) if unit in _MONEY else None,
    )


#: "falls by more than", "rises by at least": a change between two values the input writes.
_FALLS = ("fall", "drop", "decrease", "decline", "go down", "goes down", "sink")
_CHANGE = re.compile(
    r"\s(?P<dir>(?:falls?|drops?|decreases?|declines?|goes\s+down|sinks?|rises?|increases?|grows?|goes\s+up|"
    r"climbs?))\s+by\s+(?:(?:more|less|fewer)\s+than|at\s+(?:least|most)|over|under|no\s+more\s+than)\s*$",
    re.I,
)


#: "80% of the budget", "100% of it": the amount a percentage is of.
_OF = re.compile(
    r"\s*%?\s*of\s+(?:(?:the|its|their|this|that)\s+)?(?P<base>it\b|[a-z][a-z-]*(?:\s+[a-z][a-z-]*){0,2}?)"
    r"(?=\s*(?:[,;.)(]|$)|\s+(?:up|and|or|is|are|was|stays?|goes|gets?|nothing|then|when|while)\b)",
    re.I,
)


def _percent_of(clause: str, end: int) -> str | None:
    """The label of the amount a percentage written at ``clause[:end]`` is of ("below 80% of the
    budget": budget; "100% of it": the one named before it)."""
    found = _OF.match(clause[end:])
    if found is None:
        return None
    # Its first word ("the monthly budget" is read after "monthly"; "of it the team": it).
    base = found.group("base").lower().split()[0]
    if base != "it":
        return base
    named = [m.group("base").lower().split()[0] for m in _OF.finditer(clause[:end])]
    named = [n for n in named if n != "it"]
    earlier = [
        m for m in re.finditer(r"%\s*of\s+(?:(?:the|its|their)\s+)?([a-z][a-z-]*)", clause[:end], re.I)
    ]
    return named[-1] if named else (earlier[-1].group(1).lower() if earlier else None)


#: An amount of money said before tax: the input's subtotal, not its total.
_PRE_TAX = re.compile(
    r"\b(?:sub-?totals?|before (?:sales )?tax(?:es)?|excluding (?:sales )?tax(?:es)?|pre-tax|net of tax"
    r"|without (?:sales )?tax(?:es)?)\b",
    re.I,
)
#: An amount of money said with its tax: the input's total.
_WITH_TAX = re.compile(
    r"\b(?:including|with|plus|after) (?:its |their |the |sales )?(?:tax|taxes|vat)\b", re.I
)


#: "every table it alters", "each line it lists", "one or more receipts": a noun the request counts
#: several of in one input (said with a relative clause of its own, or "one or more").
_SEVERAL = re.compile(
    r"\b(?:(?:every|each|all(?:\s+the)?)\s+([a-z][a-z-]*)\s+(?:it|they|he|she|we|you)\s+([a-z]+)"
    r"|one\s+or\s+more\s+([a-z][a-z-]*))",
    re.I,
)
#: The verbs of an answer ("for each change it returns a JSON object"): said of one input, not several.
_ANSWERS = re.compile(r"(?:return|answer|output|respond|produce|emit|give|send)s?", re.I)
#: A determiner and the noun it quantifies ("a table", "every table"), or the word after it ("a big table").
_QUANTIFIED = re.compile(r"\b(every|each|all|any|a|an|one|some)\s+([a-z][a-z-]*)(?:\s+([a-z][a-z-]*))?", re.I)


def collections(text: str) -> frozenset[str]:
    """The nouns (singular) a request speaks of as several in one input ("the estimated row count of
    every table it alters"): not the input the answer is given for ("for each change it returns a
    JSON object"), not "every other"."""
    out = set()
    for found in _SEVERAL.finditer(text):
        noun = singular_unit(found.group(1) or found.group(3))
        if (
            noun in _FUNCTION
            or noun in _PREPOSITIONS
            or (found.group(2) and _ANSWERS.fullmatch(found.group(2)))
        ):
            continue
        out.add(noun)
    return frozenset(out)


def _quantifier(before: str, text: str) -> str | None:
    """How a comparison's quantity is quantified over a noun the request counts several of: "every"
    ("when every table it alters has fewer than"), "some" ("alters a table of at least", "any line
    over"), none when the words before it quantify no such noun."""
    several = collections(text)
    if not several:
        return None
    phrase = re.split(r"[\";:()]|,\s", before)[-1]
    for found in reversed(list(_QUANTIFIED.finditer(phrase))):
        if any(singular_unit(noun) in several for noun in found.groups()[1:] if noun):
            return "every" if found.group(1).lower() in ("every", "each", "all") else "some"
    return None


#: Currencies as Duckling writes them (a total of these sums amounts of money).
_MONEY = ("$", "EUR", "GBP", "€", "£")
#: A quantity the request counts as the sum of its parts.
_PARTS = re.compile(r"\b(?:total|sum|combined|altogether|plus)\b", re.I)


def _named_by(before: str) -> tuple[str | None, bool]:
    """The words naming the compared quantity: the content words right before its comparison
    ("on-hand stock is below 20": "on-hand stock"; "an error rate of 5%": "error rate"), and whether
    "any" picks one of several ("any single day of more than 12 hours")."""
    cues = [
        m.start() for p in (*(p for p, _ in _BEFORE), _BETWEEN_LOW, _BETWEEN_HIGH) if (m := p.search(before))
    ]
    # Within its own phrase: not across a quoted value, a parenthesis or a comma before it.
    # Nor across "=" ("- too_long = freeze end more than 2 months ...": the value the line defines).
    phrase = re.split(r"[\"(),;:=]", before[: min(cues, default=len(before))])[-1]
    # Nor across another comparison joined before it ("10 kg or less and there are no more than 3").
    phrase = re.split(r"\b(?:or|and)\s+(?:more|less|fewer|above|below|over|under)\b", phrase, flags=re.I)[-1]
    words = [w.lower() for w in _WORD.findall(phrase)]
    while words and (words[-1] in _FUNCTION or words[-1] in ("strictly", "there", "and", "or")):
        words.pop()
    named: list[str] = []
    while words and words[-1] not in _FUNCTION and len(named) < 3:
        named.insert(0, words.pop())
    return (" ".join(named) or None), bool(named) and bool(words) and words[-1] == "any"


def singular_unit(unit: str) -> str:
    return unit.lower()[:-1] if unit.lower().endswith("s") else unit.lower()


def _dates(before: str, after: str, text: str) -> tuple[str | None, str | None]:
    """For a time between dates, the labels of its earlier and later date in the input. The event is
    the participle before the comparison ("delivered more than 90 days"; "a message dated": its
    noun), the reference the date named after it ("before the ticket date", "after the subscription
    start date"; else one the request names elsewhere; else none: the runtime clock, as "within the
    last 90 days" says). "before" makes the event the earlier date, "after" the later one."""
    past = re.match(r"\s*(?:[a-z]+\s+)?past\s+(?:its\s+|the\s+|their\s+)?(\w+)", after, re.I)
    if past is not None:
        return past.group(1).lower(), None  # "30 days past due": from the due date to today
    line = _FIELD_LINE.match(before)
    other = re.match(
        r"\s*(?:[a-z]+\s+){0,3}?(?P<dir>before|after|since|from)\s+(?:the\s+)?(?P<label>[a-z][a-z0-9_]*)\b",
        after,
        re.I,
    )
    if (
        line is not None
        and other is not None
        and len(re.findall(rf"\b{line.group('field')}\b", text, re.I)) > 1
    ):
        # "end: at most 30 days after start", on the line of an input the request lists ("... start,
        # end, source"): the line's input is one date, the label after the comparison the other.
        key, label = line.group("field").lower(), other.group("label").lower()
        return (label, key) if other.group("dir").lower() != "before" else (key, label)
    # The comparison's own clause ("... is accepted unless it arrives more than 30 days after"): not a
    # participle of the clause before it.
    # Nor the value a line defines ("- lapsed = drill date more than 6 months before ...").
    words = _WORD.findall(re.split(r"\b(?:unless|if|when|whenever|where|once|but)\b|[,;()=]", before)[-1])
    at = next(
        (i for i in range(len(words) - 1, -1, -1) if words[i].lower().endswith("ed") and len(words[i]) > 4),
        None,
    )
    named = r"(before|after|prior to|since|from)\s+(?:the\s+)?((?:\w+\s+){0,2}?date)\b"
    if at is None:
        # "the delivery deadline is fewer than 3 days after the ship date": the quantity's own name
        # is the event, when the words after the comparison name the date it counts from.
        label, _ = _named_by(before)
        said = re.search(r"\b([a-z]+)\s+date\b[^,;]*$", before, re.I)
        if label == "date" and said is not None:
            label = f"{said.group(1).lower()} date"  # "the claim date is at most ...": a date by its kind
        # "12 months or more before the report date": the unit and its comparison words first.
        if label is None or not re.match(_LEAD + named, after, re.I):
            return None, None
        words, at = label.split(), len(label.split()) - 1
        event = label
    else:
        event = words[at].lower()
    if at > 0 and (
        (event == "dated" and words[at - 1].lower() not in _FUNCTION)
        or (not _dates_by(event, text) and _dates_by(words[at - 1].lower(), text))
    ):
        # "a message dated ...": the message's date; "a claim filed ..." of a request naming no date
        # by filing: the claim date.
        event = words[at - 1].lower()
    reference = re.match(_LEAD + named, after, re.I) or re.search(r"\b" + named, text, re.I)
    happened = next((m for p in _EVENT_AFTER if (m := p.match(after)) is not None), None)
    if happened is not None and not re.match(_LEAD + named, after, re.I):
        # "more than 21 days after the bag was delivered", "21 days or fewer after delivery": the date
        # of that event, by its verb ("delivery": deliver), is the earlier one.
        word = happened.group("event").lower()
        verb = word if word.endswith("ed") else _verb_of(word)
        if verb is not None:
            return (
                (verb, event)
                if happened.group("dir").lower() in ("after", "since", "from")
                else (event, verb)
            )
    if reference is None:
        if re.match(r"\s*(?:[a-z]+\s+)?(?:before|after|prior to|since|from)\b", after, re.I):
            return None, None  # "after the last day of its week": a date the input does not write
        return event, None
    label = re.sub(r"^(?:its|their|his|her)\s+", "", reference.group(2).lower())
    if reference.group(1).lower() == "after":
        return label, event
    return event, label


#: The words between a number of days and the date it counts from: its unit and comparison ("10
#: working days or fewer after the report date").
_LEAD = r"\s*(?:[a-z]+\s+){0,4}?"


#: "after the bag was delivered" (a participle), "or fewer after delivery" (an event noun): the event a
#: time is counted from or to.
_EVENT_AFTER = (
    re.compile(
        r"\s*(?:[a-z]+\s+){0,3}?(?P<dir>before|after|since|from|prior\s+to)\s+(?:[a-z-]+\s+){0,3}?"
        r"(?:was|were|is|are|got|been|being)\s+(?P<event>[a-z]{3,}ed)\b",
        re.I,
    ),
    re.compile(
        r"\s*(?:[a-z]+\s+){0,3}?(?P<dir>before|after|since|from|prior\s+to)\s+(?:(?:the|its|their)\s+)?"
        r"(?P<event>[a-z]{4,})\b(?!\s+date)",
        re.I,
    ),
)


def _dates_by(event: str, text: str) -> bool:
    """Whether the request speaks of a date by this event ("the date the bag was delivered",
    "delivered date")."""
    return (
        re.search(rf"\bdate\b[^.;,]{{0,30}}\b{event}\b|\b{event}\s+(?:on\s+)?date\b", text, re.I) is not None
    )


def _verb_of(noun: str) -> str | None:
    """The verb an event noun is made from, by WordNet's derivations ("delivery": deliver, "arrival":
    arrive); None for a word naming no event."""
    from master_agent.capabilities.tools.lexicon import WordNetMissing, wordnet

    try:
        reader = wordnet()
    except WordNetMissing:
        return None
    for synset in reader.synsets(noun, "n"):
        for lemma in synset.lemmas():
            if lemma.name() == noun:
                verbs = [d.name() for d in lemma.derivationally_related_forms() if d.synset().pos() == "v"]
                if verbs:
                    return str(verbs[0])
    return None


def declared_fields(text: str) -> dict[str, list[str]]:
    """The output fields a request declares, with their allowed values (empty: any)."""
    match = _FIELD_DECL.search(text)
    if match is None:
        return {}
    fields: dict[str, list[str]] = {}
    body = match.group("body")
    for item in _DECL_ITEM.finditer(body):
        name, allowed = item.group("name"), item.group("paren") or item.group("listed")
        if name is None or name in {"and", "or", "the", "with", "fields", "field", "a", "an"}:
            continue
        values = [v.strip().strip('"') for v in re.split(r",|\bor\b|\|", allowed or "") if v.strip()]
        # "(a number)", "(the text sent to the customer)", "(YYYY-MM-DD)": a description, not values
        # to choose from.
        choices = len(values) >= 2 and all(re.fullmatch(r"[\w.+/-]+", v) for v in values)
        fields[name] = values if choices else []
    return fields


#: "Each ticket arrives with the customer's plan (free, pro or enterprise), how long it has waited, ...":
#: the sentence declaring what each input carries.
_INPUT_DECL = re.compile(
    r"\beach\s+[\w -]{1,40}?\s+(?:gives|states|lists|arrives with|comes with|carries|contains|includes|has)\b"
    r"(?P<body>[^.;]*)",
    re.I,
)


def declared_inputs(text: str) -> dict[str, list[str]]:
    """The input fields a request declares with the values they take ("plan (free, pro or
    enterprise)": plan -> free, pro, enterprise), by label."""
    out: dict[str, list[str]] = {}
    for declaration in _INPUT_DECL.finditer(text):
        for found in re.finditer(r"([a-z][a-z-]*)\s*\(([^)]*)\)", declaration.group("body"), re.I):
            values = [v.strip().lower() for v in re.split(r",|\bor\b|\band\b", found.group(2)) if v.strip()]
            # "(one or more lines)": a description, not values to choose from.
            if len(values) >= 2 and all(re.fullmatch(r"[a-z][a-z0-9_-]*", v) for v in values):
                out[found.group(1).lower()] = values
    return out


#: A declared input's words ending in one of these name no label ("the access level asked for").
_PREPOSITIONS = frozenset(
    ["for", "to", "with", "from", "into", "onto", "about", "over", "under", "after", "before", "since"]
)


def input_labels(text: str) -> list[str]:
    """The labels of the inputs a request declares, by their head noun ("Each shipment gives its id,
    ship date, ..., recipient and contents": id, date, ..., recipient, contents)."""
    out: list[str] = []
    for declaration in _INPUT_DECL.finditer(text):
        for part in re.split(r",|\band\b", re.sub(r"\([^)]*\)", "", declaration.group("body"))):
            words = [w.lower() for w in _WORD.findall(part.split(" of ")[0])]
            if (
                words
                and words[0] not in ("if", "whether")
                and len(words[-1]) >= 3
                and words[-1] not in _FUNCTION | _PREPOSITIONS
            ):
                out.append(words[-1])
    return list(dict.fromkeys(out))


def _said_of_labels(text: str, requirement: Requirement) -> dict[str, str]:
    """The items of a requirement's conditions that it says an input's value is, by that input's label:
    "unless the recipient is one of ... Contoso Retail or Fabrikam Stores" (recipient), "its author is
    dependabot" (author), "it carries the hotfix label" and "the label "approved-destructive"" (labels)."""
    out: dict[str, str] = {}
    # An item the declaration names ("the rollback plan") is an input itself, not one's value.
    declared = " ".join(d.group("body").lower() for d in _INPUT_DECL.finditer(text))
    items = [
        i
        for rule in requirement.rules
        for i in [*rule.mentions, *rule.absent]
        if i not in rule.within and not re.search(rf"\b{re.escape(i)}\b", declared)
    ]
    for label in input_labels(text):
        noun = re.escape(_stem(label))
        for said in re.finditer(
            rf"\b(?:the|its|their)\s+{noun}\w*\s+(?:is|are)\s+(?P<rest>[^;:]*)", requirement.text, re.I
        ):
            rest = re.split(r"\bor\s+(?:it|its|they|their|the)\b", said.group("rest"), maxsplit=1)[0].lower()
            out.update({item: label for item in items if re.search(rf"\b{re.escape(item)}\b", rest)})
        # "the hotfix label"; "the label "approved-destructive"" (read as "label approved-destructive").
        out.update(
            {
                item: label
                for item in items
                if re.search(rf"\b{re.escape(item)}\s+{noun}\b", requirement.text, re.I)
                or (
                    len(item.split()) > 1
                    and _stem(label) in (_stem(item.split()[0]), _stem(item.split()[-1]))
                )
            }
        )
    return out


def _within_labels(
    text: str, fields: dict[str, list[str]], requirements: list[Requirement]
) -> list[Requirement]:
    """Mentions of an input field's declared value are read after that field's label: "the enterprise
    plan" in "Plan: pro ... we count as an enterprise customer" is no enterprise plan. A value the
    conditions of a requirement name ("Enterprise tickets that have waited more than 4 hours are P1")
    becomes a condition of its rules that have one already (a value an output field takes is none)."""
    inputs = declared_inputs(text)
    answers = {v.lower() for values in fields.values() for v in values}
    value_of = {v: label for label, values in inputs.items() for v in values if v not in answers}
    out = []
    for requirement in requirements:
        of_label = _said_of_labels(text, requirement)
        named = [
            v
            for v in value_of
            if re.search(rf"\b{re.escape(v)}\b", requirement.text, re.I)
            and not re.search(rf'"{re.escape(v)}"', requirement.text, re.I)
        ]
        rules = []
        for rule in requirement.rules:
            items = [*rule.mentions, *rule.absent]
            said = {w for item in items for w in item.split()}
            mentions = list(rule.mentions)
            if not rule.default and (rule.when or rule.given) and not items:
                mentions += [v for v in named if v not in said]
            within = {
                item: value_of[word]
                for item in [*mentions, *rule.absent]
                for word in item.split()
                if word in value_of
            } | {item: label for item, label in of_label.items() if item in [*mentions, *rule.absent]}
            rules.append(rule.model_copy(update={"mentions": mentions, "within": within}) if within else rule)
        out.append(
            requirement.model_copy(update={"rules": rules}) if rules != requirement.rules else requirement
        )
    return out


def _clauses(text: str) -> list[tuple[int, str]]:
    """Sentences and ;-separated clauses, with their offsets (a point inside a word splits nothing:
    "$1.50", ".github/workflows/")."""
    out = []
    for line_start, line in _lines(text):
        # "i.e." and "e.g." end no clause.
        for match in re.finditer(
            r"(?:\b(?:i\.e|e\.g)\.|[^.;])+(?:\.(?=\S)(?:\b(?:i\.e|e\.g)\.|[^.;])*)*[.;]?", line
        ):
            clause = match.group(0)
            stripped = clause.strip()
            if stripped:
                out.append((line_start + match.start() + clause.index(stripped[0]), stripped.rstrip(".;")))
    return out


#: Where a line opens an item of its own: a bullet, a numbered item, a table row, a "field: rule" line,
#: or the line after a blank one.
_ITEM_START = re.compile(r"\n(?=[ \t]*(?:[-*•][ \t]|\d+[.)][ \t]|\||[a-z][a-z0-9_]*[ \t]*:(?!\S)|\n))", re.I)


def _lines(text: str) -> list[tuple[int, str]]:
    """The text cut where a line opens an item of its own (rules written as bullets, numbered lines,
    table rows or field lines end at their line, whether or not they end with a period)."""
    cuts = [0, *(found.start() for found in _ITEM_START.finditer(text)), len(text)]
    return [(start, text[start:end]) for start, end in itertools.pairwise(cuts) if text[start:end].strip()]


def _value(match: re.Match[str]) -> RuleValue:
    if match.group("quoted") is not None:
        return match.group("quoted")
    if "bare" in match.groupdict() and match.group("bare") is not None:
        return match.group("bare")
    word = match.group("word")
    if word is not None:
        return {"true": True, "false": False, "null": None}[word.lower()]
    return int(match.group("num"))


def _field_for(
    head: str,
    value: RuleValue,
    fields: dict[str, list[str]],
    carried: list[str] | None = None,
    quoted: bool = False,
) -> str | None:
    """The output field a value is given to: the one named nearest before it that may hold it (a
    verb of the field's name counts: "routed to"), else the field the sentence's previous clause
    decided (``carried``: "...; every other diff needs 1", "...; all others get false"), else the
    one whose allowed values hold it."""
    named: list[tuple[int, str]] = []
    for name in fields:
        for match in re.finditer(
            rf"\b{re.escape(name)}|\b{re.escape(name.rstrip('e'))}(?:e[sd]|ing)\b", head, re.I
        ):
            named.append((match.start(), name))
    said = json.dumps(value) if value is None or isinstance(value, bool) else str(value)
    # "(credit still filled in); otherwise "refund_difference"": a value another field declares is
    # that field's, not a free field's named nearer.
    declared = quoted and any(said.lower() in {a.lower() for a in allowed} for allowed in fields.values())
    for _, name in sorted(named, reverse=True):
        allowed = fields[name]
        if (not allowed and not declared) or said.lower() in {a.lower() for a in allowed}:
            return name
    for name in reversed(carried or []):
        allowed = fields.get(name, [])
        if (not allowed and not declared) or said.lower() in {a.lower() for a in allowed}:
            return name
    return next(
        (
            f
            for f, allowed in fields.items()
            if isinstance(value, str) and said.lower() in {a.lower() for a in allowed}
        ),
        None,
    )


def _keywords(words: str, fields: dict[str, list[str]], subject: frozenset[str] = frozenset()) -> list[str]:
    """What a condition lists ("mentions a lawyer, legal action or a chargeback"): its items, each
    without function words; an item naming a category ("billing questions") by its modifier."""
    items = []
    verb = [v for v in _MENTION_VERB.finditer(words) if _WORD.search(words[v.end() :])]
    if verb:
        # "any parcel whose contents mention X": X, not the parcel ("a police report": a noun, with
        # nothing after it to mention).
        words = words[verb[0].end() :]
    for part in _LIST_SPLIT.split(words):
        tokens = []
        for position, said in enumerate(_WORD.findall(part)):
            word = said.lower()
            # The condition ends where the clause turns to what happens ("... is escalated", "...
            # pages the on-call engineer": a form of a field's own name, unless it opens the
            # sentence as its verb: "Route billing questions ... to").
            if word in _COPULA or (
                (position or said.islower()) and any(_stem(word) == _stem(f.split("_")[0]) for f in fields)
            ):
                break
            tokens.append(word)
        tokens = [
            w
            for index, w in enumerate(tokens)
            if (
                w not in _FUNCTION
                # "a police report": a mention verb closing the item after a noun is its noun.
                or (
                    index == len(tokens) - 1
                    and index > 0
                    and tokens[index - 1] not in _FUNCTION
                    and _MENTION_VERB.fullmatch(w) is not None
                )
            )
            and w not in subject
            # "any application" of a system that "screens job applications": the subject, singular.
            and _stem(w) not in {_stem(x) for x in subject}
            and not w.isdigit()
            # A form of a field's own name ("escalated" for escalate) says what happens, not when.
            and not any(w.startswith(f.split("_")[0].rstrip("e")) for f in fields)
        ]
        if tokens and 1 <= len(tokens) <= 4:
            items.append(" ".join(tokens))
    return list(dict.fromkeys(items))


#: Two lists of alternatives joined by the noun they qualify and a preposition: "write or admin
#: access to the production database or the payments ledger".
_TWO_LISTS = re.compile(
    r"(?<![a-z])(?P<first>[a-z][\w-]*(?:\s*,\s*[a-z][\w-]*)*\s+or\s+[a-z][\w-]*)\s+(?P<noun>[a-z][\w-]*)\s+"
    r"(?:to|on|in|into|for|of|over)\s+(?P<second>[^,;]+?\bor\b[^,;]+)$",
    re.I,
)


#: Who is never given what: "Contractors are never given admin access" (both must be mentioned).
_GIVEN_TO = re.compile(
    r"^\s*(?P<first>[a-z][\w\s,-]*?)\s+(?:are|is)\s+(?:never\s+|not\s+|always\s+|only\s+)?"
    r"(?:given|granted|allowed|offered|sent|assigned|issued)\s+(?P<second>[^,;:]+)",
    re.I,
)


def _two_lists(
    segment: str, fields: dict[str, list[str]], subject: frozenset[str]
) -> tuple[list[str], list[str]] | None:
    """A condition naming two lists that must each be mentioned: the first list's items with the
    noun they qualify ("write access", "admin access") and the second list's ("production database",
    "payments ledger"), or who and what is given them ("Contractors are never given admin access");
    None for any other condition."""
    given = _GIVEN_TO.search(segment)
    if given is not None:
        who = _keywords(given.group("first"), fields, subject)
        what = _keywords(given.group("second"), fields, subject)
        return (who, what) if who and what else None
    found = _TWO_LISTS.search(segment.strip().rstrip(".,;"))
    if found is None:
        return None
    noun = found.group("noun").lower()
    first = [f"{item} {noun}" for item in _keywords(found.group("first"), fields, subject)]
    second = _keywords(found.group("second"), fields, subject)
    if len(first) < 2 or len(second) < 2:
        return None
    return first, second


def _given(match: re.Match[str], inflected: dict[str, str]) -> RuleValue:
    said = match.groupdict().get("inflected")
    if match.groupdict().get("imperative"):
        return match.group("imperative").lower()
    return inflected[said.lower()] if said else _value(match)


#: A condition opening a clause before its verb: "When on-hand stock is below 20 units, reorder ...".
_OPENING_CONDITION = re.compile(r"^\s*(?:when|if|whenever|once|where)\b[^,;]{1,160},\s*$", re.I)


def _imperative(clause: str, match: re.Match[str]) -> bool:
    """Whether an allowed value is the clause's verb: it opens the clause ("Deny any claim ...") or
    follows an opening condition, and no copula follows it closely ("Standard changes are approved"
    names a kind of change, it orders nothing)."""
    before = clause[: match.start()]
    if before.strip() and not _OPENING_CONDITION.match(before):
        return False
    following = [w.lower() for w in _WORD.findall(clause[match.end() :])[:3]]
    return not any(w in _COPULA or w in ("was", "were", "has", "have") for w in following)


def _postposed(match: re.Match[str], clause: str) -> bool:
    """Whether the value's condition follows it: an imperative opening its clause ("Refer claims that
    mention fraud": the claims it is said of come after the verb)."""
    return bool(match.groupdict().get("imperative")) and not clause[: match.start()].strip()


def _stem(word: str) -> str:
    for suffix in ("ations", "ation", "ing", "ies", "es", "ed", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 4:
            return word[: -len(suffix)]
    return word.lower()


#: An exact text a condition restates in parentheses: words in capitals ("DROP TABLE", "rm -rf" in
#: backticks), each alternative of the list.
_EXACT = re.compile(
    r"\(((?:`[^`]+`|[A-Z][A-Z0-9_]*(?:\s+[A-Z0-9_*-]+)*)(?:\s*(?:,|\bor\b)\s*(?:`[^`]+`|[A-Z][A-Z0-9_]*(?:\s+[A-Z0-9_*-]+)*))*)\)"
)


def exact_phrases(text: str) -> list[str]:
    """The exact texts a condition restates in parentheses, each quoted (``"drop table"``): an
    input mentions one only where it writes those words together and in that order ("ALTER TABLE
    coupons DROP COLUMN x" mentions "drop column"; "DROP INDEX idx; Tables altered" no "drop
    table"). Lower case: the input may write them either way."""
    found = _EXACT.search(text)
    if found is None:
        return []
    said = re.split(r"\s*(?:,|\bor\b)\s*", found.group(1))
    return [f'"{" ".join(p.strip("`").lower().split())}"' for p in said if p.strip("` ")]


#: A category the request defines by its members: "dangerous goods such as power banks, aerosols or
#: lighters", "lithium batteries (power banks, e-bike packs)", "power banks (lithium)", "(e.g. X, Y)".
_MEMBERS = re.compile(
    r"\((?:e\.g\.|i\.e\.|such as|including|like|for example)?,?\s*(?P<listed>[^()]{2,160})\)"
    r"|\b(?:such as|e\.g\.|for example|for instance|including|namely)\s*,?\s*(?P<follows>[^.;:()]{2,160})",
    re.I,
)


def listed_members(text: str, fields: dict[str, list[str]]) -> list[str]:
    """The members a requirement's own words list for a category (in the order written): the source
    of the cases its built system must read. A parenthesis that gives a value ("(decision "reject")"),
    defines something ("(without a finding, pii_kinds is an empty list)") or holds numbers is none."""
    members: list[str] = []
    for found in _MEMBERS.finditer(text):
        said = found.group("listed") or found.group("follows")
        if re.search(r"[\"=\d]|\b(?:is|are|was|were)\b", said):
            continue
        members += _keywords(said, fields)
    return list(dict.fromkeys(members))


def _negation(
    segment: str, fields: dict[str, list[str]], subject: frozenset[str]
) -> tuple[list[str], list[str], set[str]] | None:
    """A condition with a negation ("a claim with no receipt attached", "a vendor that is not on the
    approved vendor list (A, B, C)", "tests without adding any", "whose rollback plan is missing"):
    what must be mentioned (the words before the cue; none for "X other than Y", where X is Y's
    category), what must not be (the listed items in parentheses, else the names written in
    capitals, else the words after the cue), and the stems of the words naming the list (for a later
    rule that names it back: "listed vendors")."""
    # The rule's own verb ("never approve a diff that deletes tests") is no condition.
    verbs = {v.lower() for values in fields.values() for v in values} | {"never", "always", "only"}

    def said(text: str) -> list[str]:
        return _keywords(
            re.sub(r"[a-z_]+", lambda w: "" if w.group(0).lower() in verbs else w.group(0), text, flags=re.I),
            fields,
            subject,
        )

    for part in reversed(segment.split(":")):
        post = _POST_CUE.search(part)
        if post is not None and (
            missing := said(re.split(r"\b(?:whose|with|that|which)\b", part[: post.start()])[-1])
        ):
            return [], missing, set()
    negated = next((p for p in reversed(segment.split(":")) if _CUE.search(p)), None)
    if negated is None:
        return None
    cues = list(_CUE.finditer(negated))
    head = negated[: cues[0].start()]
    absent: list[str] = []
    naming: set[str] = set()
    # "modifies files under src/ without touching tests/, unless its author is dependabot": each
    # cue's words are absent too.
    for index, cue in enumerate(cues):
        tail = negated[cue.end() : cues[index + 1].start() if index + 1 < len(cues) else len(negated)]
        listed = re.search(r"\(([^)]*)\)", tail)
        names = re.findall(r"\b[A-Z][\w&.-]*(?:\s+[A-Z][\w&.-]*)+", tail)
        if names:
            # "Parcelforce or DHL Express": a one-word name listed beside the others (a proper noun's
            # shape, not the tail's first word: "US dollars" stays words).
            names = re.findall(
                r"(?<!^)(?<![.!?]\s)\b(?:[A-Z][\w&.-]*(?:\s+[A-Z][\w&.-]*)+|[A-Z][a-z][\w&.-]{2,})",
                tail.strip(),
            )
        if listed is not None:
            absent += _keywords(listed.group(1), fields, subject)
            naming |= {_stem(w.lower()) for w in _WORD.findall(tail[: listed.start()])}
        elif names:
            absent += [" ".join(w.lower() for w in _WORD.findall(name)) for name in names]
        elif re.match(r"unless|except", cue.group(0), re.I):
            # "unless the customer is on the enterprise plan": what is said of it, not who.
            predicates = [
                re.split(r"\b(?:is|are|was|were|has|have)\b", p)[-1] for p in _LIST_SPLIT.split(tail)
            ]
            absent += _keywords(",".join(predicates), fields, subject)
        else:
            absent += _keywords(tail, fields, subject)  # "no receipt attached is put on hold"
    if not absent:
        return None
    # "X other than Y": X is Y's category; "<rule> unless Y": the words before are the rule itself.
    category = re.match(r"other than|except|unless", cues[0].group(0), re.I) is not None
    mentions = [] if category else said(head)
    relative = re.split(r"\b(?:that|which|whose|who)\b", head, maxsplit=1)
    if re.match(r"unless", cues[0].group(0), re.I) and len(relative) == 2:
        # "Hold any merge request that touches migrations/ unless ...": the rule is said of the inputs
        # its relative clause describes; restated as the exact text the input writes, it is that text
        # ("drops a table or a column (DROP TABLE or DROP COLUMN)": ``exact_phrases``).
        mentions = exact_phrases(relative[1]) or ([] if "(" in relative[1] else said(relative[1]))
    return mentions, list(dict.fromkeys(absent)), naming - _FUNCTION


def _alternatives(
    clause: str,
    compared: list[tuple[int, int, Comparison]],
    end: int,
    fields: dict[str, list[str]],
    subject: frozenset[str],
) -> list[dict[str, Any]]:
    """The conditions comparisons write, each alternative one rule: comparisons joined by "and" (or
    a range's two ends) hold together, "or" starts another alternative; a condition on what the input
    mentions joined after the last comparison ("over $5,000 and from a new vendor") holds with it
    ("and") or instead of it ("or"). Comparisons not joined to the next: the last one decides."""
    if not compared:
        return []
    groups: list[list[Comparison]] = [[compared[0][2]]]
    for (_, previous_end, _), (start, _, comparison) in itertools.pairwise(compared):
        # "10 kg or less and no more than 3 parcels": the first comparison's own "or less" joins nothing.
        joint = re.sub(
            r"^\s*(?:[a-z%]+\s+)?(?:or|and)\s+(?:more|less|fewer|above|below|higher|lower|greater|over|under)\b",
            "",
            clause[previous_end:start],
            flags=re.I,
        )
        if len(_WORD.findall(joint)) > 10 or re.search(r"[;:]", joint):
            groups = [[comparison]]  # far apart: the last one decides
        elif re.search(r"\bor\b", joint, re.I):
            groups.append([comparison])
        else:
            groups[-1].append(comparison)
    for group in groups:
        # "1 to 30 days past due": the lower end is in the unit (and dates) of the upper one.
        for position, comparison in enumerate(group[:-1]):
            if not comparison.unit and group[-1].unit:
                update = group[-1].model_dump(include={"unit", "since", "until", "total"})
                group[position] = comparison.model_copy(update=update)
    alternatives: list[dict[str, Any]] = [{"when": g[0], "also": g[1:]} for g in groups]
    rest = re.sub(
        r"^\s*(?:(?:working|business)\s+days?\s+|[a-z%]+\s+)?(?:(?:or|and) (?:more|less|fewer|above|below|higher|lower|greater|over|under)"
        r"|inclusive|exclusive|both included)\b",
        "",
        clause[compared[-1][1] : end],
        flags=re.I,
    )
    # "more than 7 days before the report date, or that mention a gas leak": a few words may finish
    # the comparison before the join.
    tail = re.match(r"\s*(?:[\w%-]+,?\s+){0,5}?,?\s*\b(and|or)\b(.*)", rest, re.I | re.S)
    if tail is not None:
        said = _keywords(tail.group(2), fields, subject)
        if said and tail.group(1).lower() == "and":
            alternatives = [{**a, "mentions": said} for a in alternatives]
        elif said:
            alternatives.append({"mentions": said})
    return alternatives


#: A line opened by a field's name and a colon ("vehicle: bike when ...", "- country: EU only").
_FIELD_LINE = re.compile(r"\s*(?:[-*•]\s*|\d+[.)]\s*)?(?P<field>[a-z][a-z0-9_]*)\s*:(?!\S)", re.I)


def _on_input_line(text: str, offset: int, fields: dict[str, list[str]], rules: list[Rule]) -> list[Rule]:
    """On the line of an input the request lists ("environment: "test" or "debug" -> "approve"" of a
    request whose inputs are "... port, environment, justification"), what a rule mentions is that
    input's value: read after its label, the label itself no mention."""
    key = _line_field(text, offset)
    if key is None or key in fields or len(re.findall(rf"\b{re.escape(key)}\b", text, re.I)) < 2:
        return rules
    out = []
    for rule in rules:
        items = [m for m in rule.mentions if m.lower() != key]
        if not items or (items == rule.mentions and rule.within):
            out.append(rule)
            continue
        out.append(
            rule.model_copy(
                update={"mentions": items, "within": {**rule.within, **dict.fromkeys(items, key)}}
            )
        )
    return out


def _line_value(text: str, offset: int, fields: dict[str, list[str]]) -> str | None:
    """The value a line opens by defining it ("- overdue = last completion more than 12 months ...",
    of a field declared with "overdue" among its values)."""
    line = re.compile(r"\s*(?:[-*•]\s*|\d+[.)]\s*)?(?P<value>[a-z][a-z0-9_-]*)\s*=(?!=)", re.I).match(
        text, text.rfind("\n", 0, offset) + 1
    )
    if line is None or not any(line.group("value") in allowed for allowed in fields.values()):
        return None
    return line.group("value")


def _line_field(text: str, offset: int) -> str | None:
    """The field named at the start of the line holding ``offset``, when the line opens "field: ..."."""
    line = _FIELD_LINE.match(text, text.rfind("\n", 0, offset) + 1)
    return line.group("field").lower() if line is not None else None


def _line_opened_by(text: str, offset: int, fields: dict[str, list[str]]) -> str | None:
    """The field a line holding ``offset`` opens with, said with one of its values ("* approver cfo if
    ...", "status ok when ...")."""
    line = re.match(
        r"\s*(?:[-*•]\s*|\d+[.)]\s*)?(?P<field>[a-z][a-z0-9_]*)\s+[\"']?(?P<value>[\w-]+)",
        text[text.rfind("\n", 0, offset) + 1 :],
        re.I,
    )
    if line is None:
        return None
    field = line.group("field").lower()
    return field if line.group("value").lower() in [v.lower() for v in fields.get(field, [])] else None


def extract_requirements(text: str) -> tuple[dict[str, list[str]], list[Requirement]]:
    """The output fields a request declares and the requirements it states (rules given as code read
    as the prose they say, traced to the code as written)."""
    text = text[:MAX_CHARS]
    prose = code_as_prose(text, declared_fields(text))
    fields, requirements = _extract(prose)
    if prose == text:
        return fields, requirements
    traced: list[Requirement] = []
    for requirement in requirements:
        start, end = written_span(text, prose, requirement.start, requirement.end)
        written = text[start:end].strip()
        traced.append(
            requirement.model_copy(update={"start": start, "end": end, "text": written or requirement.text})
            if written and len(written) <= 2000
            else requirement
        )
    return fields, traced


def _extract(text: str) -> tuple[dict[str, list[str]], list[Requirement]]:
    """The output fields ``text`` declares and the requirements it states."""
    fields = declared_fields(text)
    declaration = _FIELD_DECL.search(text)
    total = bool(_TOTAL.search(text))
    # What the system handles ("purchase orders") is no condition: every input is one.
    first = _clauses(text)[0][1] if _clauses(text) else ""
    subject = frozenset(w.lower() for w in _WORD.findall(first.split(" that ", 1)[-1])) - _FUNCTION
    inflected = {
        (v[:-1] if v.endswith("e") else v) + "ed": v
        for values in fields.values()
        for v in values
        if re.fullmatch(r"[a-z]{3,}", v)
    }
    verbs = {
        v.lower(): v
        for values in fields.values()
        for v in values
        if re.fullmatch(r"[a-z]{3,}", v, re.I) and v.lower() not in _FUNCTION and v.lower() != "none"
    }
    requirements: list[Requirement] = []
    lists: list[tuple[str, list[str], set[str]]] = []
    for offset, clause in _defined_apart(_clauses(text), fields):
        if (
            declaration is not None
            and offset < declaration.end()
            and declaration.start() < offset + len(clause)
        ):
            continue
        if (computed := _computed(clause, fields, subject)) is not None:
            requirements.append(
                Requirement(
                    id=f"r{len(requirements) + 1}",
                    kind="output_field",
                    text=clause,
                    start=offset,
                    end=offset + len(clause),
                    fields=[computed[0].field],
                    rules=computed,
                )
            )
            continue
        named = [f for f in fields if re.search(rf"\b{re.escape(f)}\b", clause)]
        # A clause after ";" naming no field goes on deciding the previous clause's fields.
        carried = (
            requirements[-1].fields
            if not named and requirements and text[:offset].rstrip().endswith(";")
            else []
        )
        amounts = _amounts(clause)
        rules: list[Rule] = []
        cursor = 0
        bare = sorted(
            {v for values in fields.values() for v in values if re.search(r"[\d_]", v)}
            # "vehicle: bike when ...; otherwise van": on a line a field opens, its values said bare.
            | set(fields.get(_line_field(text, offset) or "", []))
            # "* approver cfo if ..., else procurement_lead": a line opening with a field and its value.
            | set(fields.get(_line_opened_by(text, offset, fields) or "", []))
            # "- overdue = last completion more than 12 months before ...": a line defining a value.
            | ({defined} if (defined := _line_value(text, offset, fields)) else set()),
            key=len,
        )
        pattern = _VALUE
        if bare:
            alternatives = "|".join(re.escape(v) for v in reversed(bare))
            pattern = re.compile(pattern.pattern + rf'|(?<!["\w])(?P<bare>{alternatives})(?!["\w])')
        if inflected:
            # "... are approved": an allowed value said by its participle after a copula.
            forms = "|".join(re.escape(form) for form in sorted(inflected, key=len, reverse=True))
            pattern = re.compile(
                pattern.pattern + rf"|\b(?:is|are|be|gets?)\s+(?P<inflected>{forms})\b", re.I
            )
        if verbs:
            # "Deny any claim over $5,000", "When stock is low, reorder ...": an allowed value said as
            # the clause's verb (``_imperative`` keeps those that open it).
            forms = "|".join(re.escape(form) for form in sorted(verbs, key=len, reverse=True))
            pattern = re.compile(pattern.pattern + rf"|\b(?P<imperative>{forms})\b", re.I)
        given = [
            (value_match, field)
            for value_match in (
                [] if _WORDING.search(clause) or avoided(clause) else pattern.finditer(clause)
            )
            if (not value_match.groupdict().get("imperative") or _imperative(clause, value_match))
            and not any(
                s <= value_match.start() < e and _comparison(clause, s, e, v, u, False) is not None
                for s, e, v, u in amounts
            )  # a compared quantity ("over 400 lines") is not a value given
            # "gets "needs_approval" instead of "reorder"": the value it does not get.
            and not re.search(r"\b(?:instead of|rather than)\s*$", clause[: value_match.start()], re.I)
            and (
                field := _field_for(
                    clause[: value_match.start()],
                    _given(value_match, inflected),
                    fields,
                    carried,
                    quoted=value_match.group("quoted") is not None,
                )
            )
        ]
        for index, (value_match, field) in enumerate(given):
            value = _given(value_match, inflected)
            if value_match.start() < cursor:
                continue
            segment = before = clause[cursor : value_match.start()]
            seg_start, seg_end = cursor, value_match.start()
            cursor = value_match.end()
            after_end = given[index + 1][0].start() if index + 1 < len(given) else len(clause)
            after = clause[value_match.end() : after_end]
            default = bool(_DEFAULT.search(segment))
            defines = re.match(r"\s*=(?!=)", after) is not None and value_match.group("bare") is not None
            if (_postposed(value_match, clause) or defines) and _DEFAULT.match(re.sub(r"^\W+", "", after)):
                default = True  # "Approve all other claims", "- current = everything else"
            elif (
                _POSTPOSED.match(after)
                or _postposed(value_match, clause)
                or defines
                # "desk: secure for valuables such as ...": on a field's line, "for" opens its condition.
                or (field == _line_field(text, offset) and re.match(r"\W*for\b", after, re.I) is not None)
            ):
                # "risk is "high" when the change includes ...": the condition follows the value; up to
                # ", else" (", else procurement_lead": the next value's own default).
                ends = re.search(r"[,;]\s*(?:else|otherwise)\s*$", after, re.I)
                if ends is not None and index + 1 < len(given):
                    after_end = value_match.end() + ends.start()
                    after = clause[value_match.end() : after_end]
                segment, seg_end, cursor = after, after_end, after_end
            elif index == len(given) - 1 and _DEFAULT.match(re.sub(r"^\W+", "", after)):
                default = True  # "... and "standard" otherwise"
            compared = [
                (s, e, c)
                for s, e, v, u in amounts
                if (seg_start <= s < seg_end or (segment is after and value_match.end() <= s < after_end))
                and (c := _comparison(clause, s, e, v, u, total and u in ("$", "EUR", "GBP", "€", "£"), text))
                is not None
            ]
            otherwise = _DEFAULT.search(segment) if default and segment is before else None
            if (
                otherwise is not None
                and len(compared) == 1
                and compared[0][1] <= seg_start + otherwise.start()
            ):
                # "end: at most 30 days after start, otherwise "reject"": the comparison is what is
                # allowed, and the value goes to its other side.
                low, high, allowed_side = compared[0]
                compared = [(low, high, allowed_side.model_copy(update={"op": _OTHER_SIDE[allowed_side.op]}))]
                default = False
            if not compared and (due := _NOT_YET.search(segment)) is not None:
                # "not yet past its due date": no day past it yet.
                since = due.group(1).lower()
                compared = [(seg_start, seg_end, Comparison(op="<=", value=0, unit="days", since=since))]
            mentions: list[str] = []
            mentions_too: list[str] = []
            absent: list[str] = []
            days = _weekdays(segment)
            if days is not None and days[0] == [1, 2, 3, 4, 5] and _WORKING_DAYS.search(clause):
                days = None  # "working days (Mon-Fri, no holidays)": what a working day is, no condition
            if days is not None:
                # Days of the week: by "or" after a comparison, a condition of its own ("at 14:00 or
                # later, or on a Saturday"); else one with it ("Monday to Friday before 14:00").
                at = (value_match.end() if segment is after else seg_start) + days[1]
                apart = bool(compared) and any(
                    re.search(r"\bor\b", clause[e:at]) for _, e, _ in compared if e <= at
                )
                weekdays = {"weekdays": days[0]}
            if segment is after and _CUE.search(after):
                # After the amounts it compares: their words ("any claim over $5,000") are no mention.
                rest = clause[max(e for _, e, _ in compared) : after_end] if compared else after
                negation = _negation(rest if _CUE.search(rest) else after, fields, subject)
                if negation is not None:
                    mentions, absent, listed_as = negation
                    lists.append((field, absent, listed_as))
                default = False
            elif not compared and not default and days is None:
                negation = _negation(segment, fields, subject)
                if negation is not None:
                    mentions, absent, listed_as = negation
                    lists.append((field, absent, listed_as))
                else:
                    mentions, mentions_too = _two_lists(segment, fields, subject) or (
                        _keywords(segment, fields, subject),
                        [],
                    )
            if (
                rules
                and rules[-1].field == field
                and rules[-1].value == value
                and segment is after
                and not compared
                and not _keywords(before, fields, subject)
            ):
                # "are escalated (decision "escalate") unless ...": the value said again, and the
                # condition after it holds with the first saying's.
                first_said = rules[-1]
                rules[-1] = first_said.model_copy(
                    update={
                        "mentions": [*first_said.mentions, *mentions],
                        "absent": [*first_said.absent, *absent],
                    }
                )
                continue
            if rules and not compared and not default and not mentions and not absent:
                if rules[-1].field == field and rules[-1].value == value:
                    continue  # "is blocked (decision "block")": the same value said twice
                if rules[-1].field != field:
                    # "(decision "block", flag "secret")": assigned together, under the same condition.
                    rules.append(rules[-1].model_copy(update={"field": field, "value": value}))
                    continue
            ways: list[dict[str, Any]] = _alternatives(clause, compared, seg_end, fields, subject) or [{}]
            if days is not None:
                # The day names are read as days, never as things mentioned.
                ways = [a for a in ways if a.get("when") or a.get("also")] or [{}]
            for alternative in ways:
                with_days = weekdays if days is not None and not apart else {}
                rules.append(
                    Rule(
                        field=field,
                        value=value,
                        mentions=mentions,
                        mentions_too=mentions_too,
                        absent=absent,
                        default=default,
                    ).model_copy(update={**alternative, **with_days})
                )
            if days is not None and apart:
                rules.append(Rule(field=field, value=value, **weekdays))
        for field in named:
            said = re.search(
                rf"\b{re.escape(field)}\s+(?:says|states|explains|reads)\s+(?:that\s+)?(?P<text>[^,;()]+)",
                clause,
            )
            if said is not None and rules and not any(r.field == field for r in rules):
                # "(decision "hold"), and its reason says that the receipt is missing": that text,
                # under the condition of the value it goes with.
                rules.append(
                    rules[-1].model_copy(update={"field": field, "value": said.group("text").strip()})
                )
        copied = re.search(r"\b([a-z]+)\s+(?:number|id|code|reference|no\.?)\b", clause, re.I)
        if named and _COPY.search(clause) and copied is not None and copied.group(1).lower() not in named[1:]:
            # "order_id repeats the order number written in the ticket, or is null": the identifier
            # written after the label's word, else null; the field may be named as its label ("ticket
            # repeats the ticket number exactly as written"), never as another field.
            rules = [
                Rule(field=named[0], copy_of=copied.group(1).lower()),
                Rule(field=named[0], default=True),
            ]
        # A clause that compares but assigns through its own words ("below $10,000 they need one").
        for s, e, v, u in amounts:
            comparison = _comparison(clause, s, e, v, u, total and u in ("$", "EUR", "GBP", "€", "£"))
            if comparison is None or any(r.when == comparison for r in rules):
                continue
            number = next((n for w, n in _ONES.items() if re.search(rf"\b{w}\b", clause[e:], re.I)), None)
            field = named[-1] if named else (rules[-1].field if rules else None)
            if field is None and requirements and text[requirements[-1].end : offset].strip() == ";":
                field = requirements[-1].fields[-1] if requirements[-1].fields else None
            if number is not None and field is not None:
                rules.append(Rule(field=field, value=number, when=comparison))
        rules = _on_input_line(text, offset, fields, rules)
        targets = list(dict.fromkeys([*(r.field for r in rules), *named]))
        if not rules and not (
            (named and _COPY.search(clause))
            or _TONE.search(clause)
            or _WORDING.search(clause)
            or (named and avoided(clause))
        ):
            if offset > 0 and (named or _MODAL.search(clause)) and not _heading(clause):
                # It constrains the answer, yet no rule could be read from it: said, never dropped.
                requirements.append(
                    Requirement(
                        id=f"r{len(requirements) + 1}",
                        kind="forbidden" if re.search(r"\bnever\b", clause, re.I) else "output_field",
                        text=clause,
                        start=offset,
                        end=offset + len(clause),
                        fields=named,
                        buildable=False,
                        why_not=(
                            _ARITHMETIC
                            if _EXPRESSION.search(clause)
                            else "no rule could be read from its words: it needs a model"
                        ),
                    )
                )
            continue  # names no rule: a description, not a constraint
        previous = requirements[-1] if requirements else None
        if (
            previous is not None
            and rules
            and previous.rules
            # A clause that can be built is not joined to one that cannot: it would be lost with it.
            and (previous.buildable or not _kind_of(clause, rules, fields)[1])
            and text[previous.end : offset].strip() == ";"
            and {r.field for r in rules} <= set(previous.fields)
        ):
            # "...over $500 go to a manager; $500 or less stay with an agent": one rule, two sides.
            text_span = text[previous.start : offset + len(clause)]
            merged_rules = [*previous.rules, *rules]
            kind, buildable, why = _kind_of(text_span, merged_rules, fields)
            requirements[-1] = previous.model_copy(
                update={
                    "text": text_span,
                    "end": offset + len(clause),
                    "rules": merged_rules,
                    "kind": kind,
                    "buildable": buildable,
                    "why_not": why,
                }
            )
            continue
        kind, buildable, why = _kind_of(clause, rules, fields)
        avoid = avoided(clause) if not rules and named else []
        requirements.append(
            Requirement(
                id=f"r{len(requirements) + 1}",
                kind="tone" if avoid else kind,
                text=clause,
                start=offset,
                end=offset + len(clause),
                fields=targets,
                rules=rules,
                # A text's words it never uses are built: the answer's schema refuses them.
                buildable=buildable or bool(avoid),
                why_not=None if avoid else why,
                avoid=avoid,
            )
        )
    for field, listed, words in lists:
        # "... not on the approved vendor list (A, B); invoices from listed vendors ...": the other
        # side of a negated list names it back, and means its items.
        for position, requirement in enumerate(requirements):
            # "...; those customers are cancelled at once": a value with no condition of its own there.
            rules = [
                rule.model_copy(update={"mentions": listed})
                if rule.field == field
                and not rule.absent
                and (
                    {_stem(w) for item in rule.mentions for w in item.split()} & words
                    or not (rule.mentions or rule.when or rule.default or rule.copy_of)
                )
                else rule
                for rule in requirement.rules
            ]
            if rules != requirement.rules:
                kind, buildable, why = _kind_of(requirement.text, rules, fields)
                requirements[position] = requirement.model_copy(
                    update={"rules": rules, "kind": kind, "buildable": buildable, "why_not": why}
                )
    if not fields:
        requirements = _verb_rules(text)
        fields = {field: [] for r in requirements for field in r.fields}
    chained = _chained([_in_which_case(_said_of_another(r, fields), fields) for r in requirements], fields)
    chained = _instead(
        fields, _of_fields(fields, _summed(text, _worth_of_units(_declared_dates(text, chained))))
    )
    chained = [_precedence(r, fields) for r in _not_yet(chained)]
    chained = _beyond(text, fields, chained)
    built = _within_labels(
        text, fields, _loosened(text, _complemented(_same_quantities(_date_orders(chained, fields))))
    )
    read = _two_defaults(
        [
            _open_category(_unread(_different(_of_a_field(requirement, fields), fields), fields, subject))
            for requirement in built
        ]
    )
    read = _boundary_notes(text, _further_out([_below_that(r, fields) for r in read], fields))
    return fields, [*read, *_unaccounted(text, fields, declaration, read)]


_THAT_SIDE = re.compile(r"[;,]\s*(?P<way>below|under|above|over|beyond)\s+that\b", re.I)


def _below_that(requirement: Requirement, fields: dict[str, list[str]]) -> Requirement:
    """ "max_recovery of $1,000.00 or more | decision "escalate"; below that, "file"": the value after
    "below that" holds on the other side of the requirement's one comparison."""
    found = _THAT_SIDE.search(requirement.text)
    stated = [r for r in requirement.rules if r.when is not None and not r.default and not r.also]
    if found is None or len({(r.when.op, r.when.value) for r in stated if r.when}) != 1:
        return requirement
    when = stated[0].when
    assert when is not None
    way = found.group("way").lower()
    if (way in ("below", "under")) != (when.op in (">", ">=")):
        return requirement
    other = when.model_copy(update={"op": _OTHER_SIDE[when.op]})
    rules = [
        r.model_copy(update={"mentions": [], "when": other})
        if r.mentions == [way] and r.when is None and not r.default
        else r
        for r in requirement.rules
    ]
    return _with_rules(requirement, rules, fields)


#: "; ok when it is further out", "; "long" if it is more": a value on the other side of the comparison
#: before it, said of it by a pronoun and a word of direction.
_THE_OTHER_SIDE = re.compile(
    r"(?:^|[;,])\W*[\"']?(?P<value>[\w-]+)[\"']?\s+(?:when|if|once|where)\s+(?:it|that|they|this)\s+(?:is|are|gets?|comes?)\s+"
    r"(?:any\s+|even\s+|still\s+)?(?:further|farther|later|longer|more|higher|greater|larger|bigger|beyond|past|above|"
    r"over|sooner|earlier|less|lower|smaller|shorter|fewer|below|under|closer|nearer)\b",
    re.I,
)


def _further_out(requirements: list[Requirement], fields: dict[str, list[str]]) -> list[Requirement]:
    """ "status act_now when ... 10 working days or fewer ...; ok when it is further out": the value
    holds on the other side of the one comparison of the requirement before it, for the field whose
    value it is."""
    out: list[Requirement] = []
    for requirement in requirements:
        found = _THE_OTHER_SIDE.search(requirement.text)
        if found is not None and found.start() > 0:
            # In the comparison's own requirement: its value said there with no condition.
            out.append(_other_side_here(requirement, found.group("value").lower(), fields))
            continue
        found = _THE_OTHER_SIDE.match(requirement.text)
        before = out[-1] if out else None
        stated = [r for r in before.rules if r.when is not None and not r.also] if before else []
        value = found.group("value").lower() if found else ""
        owner = [f for f, allowed in fields.items() if value in [v.lower() for v in allowed]]
        if found is None or len(stated) != 1 or len(owner) != 1 or stated[0].field != owner[0]:
            out.append(requirement)
            continue
        when = stated[0].when
        assert when is not None
        other = when.model_copy(update={"op": _OTHER_SIDE[when.op]})
        rule = Rule(field=owner[0], value=next(v for v in fields[owner[0]] if v.lower() == value), when=other)
        out.append(_with_rules(requirement.model_copy(update={"fields": owner}), [rule], fields))
    return out


def _other_side_here(requirement: Requirement, value: str, fields: dict[str, list[str]]) -> Requirement:
    stated = [r for r in requirement.rules if r.when is not None and not r.also]
    if len(stated) != 1 or stated[0].when is None:
        return requirement
    other = stated[0].when.model_copy(update={"op": _OTHER_SIDE[stated[0].when.op]})
    rules = [
        r.model_copy(update={"when": other})
        if str(r.value).lower() == value
        and r.field == stated[0].field
        and not (r.when or r.also or r.mentions or r.absent or r.default or r.computed or r.given)
        else r
        for r in requirement.rules
    ]
    return _with_rules(requirement, rules, fields)


def _with_rules(requirement: Requirement, rules: list[Rule], fields: dict[str, list[str]]) -> Requirement:
    """The requirement with these rules, its kind and whether it can be built judged again."""
    if rules == requirement.rules:
        return requirement
    kind, buildable, why = _kind_of(requirement.text, rules, fields)
    return requirement.model_copy(
        update={"rules": rules, "kind": kind, "buildable": buildable, "why_not": why}
    )


_EXACTLY = re.compile(r"\bexactly\s+(?:\d+(?:\.\d+)?)\b", re.I)


def _boundary_notes(text: str, requirements: list[Requirement]) -> list[Requirement]:
    """A note on the boundary of the comparison before it, on its line ("... more than 12 months
    before the report date. calendar months, exactly 12 months is NOT overdue"): the comparison says
    it already, so the note is part of that requirement, no rule of its own."""
    out: list[Requirement] = []
    for requirement in requirements:
        previous = out[-1] if out else None
        said = _EXACTLY.search(requirement.text)
        if (
            previous is not None
            and said is not None
            and "\n" not in text[previous.end : requirement.start]
            and any(
                c.value == float(said.group(0).split()[-1])
                for r in previous.rules
                for c in [*([r.when] if r.when else []), *r.also]
            )
        ):
            out[-1] = previous.model_copy(
                update={"end": requirement.end, "text": text[previous.start : requirement.end]}
            )
            continue
        out.append(requirement)
    return out


#: "the report date is after the notice_deadline", "the ship date falls on or before the promise
#: date": two dates in order, with no number of days between them.
_DATE_ORDER = re.compile(
    r"\b(?:(?:the|its|their)\s+)?(?P<a>[a-z][a-z0-9_]*(?:\s+[a-z][a-z0-9_]*){0,2}?)\s+"
    r"(?:is|are|was|falls?|comes?|lands?)\s+(?P<cmp>(?:on\s+or\s+)?(?:after|later\s+than|past|before|earlier\s+than))\s+"
    r"(?:(?:the|its|their)\s+)?(?P<b>[a-z][a-z0-9_]*(?:\s+[a-z][a-z0-9_]*){0,2}?)"
    r"(?=\s*(?:[,;.:)(]|$)|\s+(?:and|or|then|but|so)\b)",
    re.I,
)


def _date_orders(requirements: list[Requirement], fields: dict[str, list[str]]) -> list[Requirement]:
    """A rule said of two dates in order and no number ("status too_late when the report date is
    after the notice_deadline") compares the days between them with 0: a date the input writes, or
    one the answer computes (a field given by a date computation), on either side."""
    dated = {
        rule.field
        for requirement in requirements
        for rule in requirement.rules
        if rule.computed is not None
        and rule.computed.op in ("days_after", "months_after", "date_minus", "date_plus")
    }

    def a_date(words: str) -> bool:
        return words in dated or words.split()[-1] in ("date", "deadline") or words.endswith("_date")

    out = []
    for requirement in requirements:
        requirement = _counted_dates(requirement)
        found = [
            m
            for m in _DATE_ORDER.finditer(requirement.text)
            if a_date(m.group("a").lower()) and a_date(m.group("b").lower())
        ]
        if len(found) != 1:
            out.append(requirement)
            continue
        first, second = found[0].group("a").lower(), found[0].group("b").lower()
        said = found[0].group("cmp").lower()
        later = "after" in said or "later" in said or "past" in said
        since, until = (second, first) if later else (first, second)
        when = Comparison(
            op=">=" if said.startswith("on") else ">", value=0, unit="days", since=since, until=until
        )
        words = set(_WORD.findall(f"{first} {second}"))
        rules = [
            rule.model_copy(
                update={
                    "when": when,
                    "mentions": [m for m in rule.mentions if not set(_WORD.findall(m)) <= words],
                }
            )
            if not (rule.when or rule.also or rule.computed or rule.default or rule.copy_of or rule.given)
            and rule.field not in (first, second)
            else rule
            for rule in requirement.rules
        ]
        # Its kind and whether it can be built judged again: the mentions read before are gone.
        out.append(_with_rules(requirement, rules, fields))
    return out


#: The words a time between dates is said in ("3 working days or fewer after"), none a thing mentioned.
_COUNTING = frozenset(
    [
        "working",
        "business",
        "calendar",
        "day",
        "days",
        "week",
        "weeks",
        "month",
        "months",
        "or",
        "and",
        "fewer",
        "less",
        "more",
        "than",
        "after",
        "before",
        "at",
        "most",
        "least",
        "within",
        "the",
        "its",
    ]
)


def _counted_dates(requirement: Requirement) -> Requirement:
    """A time between two dates says how it counts ("10 working days or fewer after the report date
    (Mon-Fri, no holidays; the report date itself doesn't count)"): its labels' words, the days of
    the week a working day is and the holidays it keeps are no things the input mentions."""

    def counted(rule: Rule) -> Rule:
        when = rule.when
        if when is None or when.since is None:
            return rule
        words = set(_WORD.findall(f"{when.since} {when.until or ''}".lower())) | _COUNTING
        working = when.unit == "working days"
        mentions = [
            m
            for m in rule.mentions
            if not set(_WORD.findall(m.lower())) <= words and not (working and _weekdays(m) is not None)
        ]
        absent = [a for a in rule.absent if not (working and _stem(a) == _stem("holidays"))]
        return rule.model_copy(update={"mentions": mentions, "absent": absent})

    rules = [counted(rule) for rule in requirement.rules]
    return requirement if rules == requirement.rules else requirement.model_copy(update={"rules": rules})


def _of_a_field(requirement: Requirement, fields: dict[str, list[str]]) -> Requirement:
    """A comparison whose words name a field the answer gives ("If the credit comes to more than fifty
    dollars", "| R4 | max_recovery of $1,000.00 or more |") compares that field's value, as its own
    rules decide it, not a number the input writes."""
    free = {f for f, allowed in fields.items() if not allowed}

    def named(comparison: Comparison | None) -> Comparison | None:
        if comparison is None or comparison.label is None or comparison.since or comparison.label in fields:
            return comparison
        said = [w for w in comparison.label.lower().split() if w in free]
        return comparison.model_copy(update={"label": said[-1]}) if len(said) == 1 else comparison

    rules = [
        r.model_copy(update={"when": named(r.when), "also": [named(c) or c for c in r.also]})
        for r in requirement.rules
    ]
    return requirement if rules == requirement.rules else requirement.model_copy(update={"rules": rules})


#: "a swap between nurses on different bands": values written after a noun that differ.
_DIFFERENT = re.compile(r"\b(?:on|in|with|of|at|from|in\s+two)\s+different\s+(?P<noun>[a-z]{3,})\b", re.I)


def _different(requirement: Requirement, fields: dict[str, list[str]]) -> Requirement:
    """A value said of things "on different bands" holds where the input writes different values
    after that noun (not where it mentions the words "different bands")."""
    found = _DIFFERENT.search(requirement.text)
    if found is None:
        return requirement
    end = requirement.text.find(";", found.end())
    clause = requirement.text[requirement.text.rfind(";", 0, found.start()) + 1 : end if end >= 0 else None]
    noun = singular_unit(found.group("noun").lower())
    rules = [
        r.model_copy(update={"default": False, "mentions": [], "within": {}, "differ": [noun]})
        if f'"{r.value}"' in clause
        and not (r.when or r.computed or r.absent or r.given)
        and all(_stem(noun)[:4] in item for item in r.mentions)
        else r
        for r in requirement.rules
    ]
    return _with_rules(requirement, rules, fields)


def _two_defaults(requirements: list[Requirement]) -> list[Requirement]:
    """A requirement giving a field one value with no condition, before another requirement giving it
    another with none ("a swap between nurses on different bands is referred ...; every other swap is
    approved"): its condition was not read, so it is not built (the gate fails it)."""
    out = []
    for position, requirement in enumerate(requirements):
        rules = requirement.rules
        later = {
            r.value
            for other in requirements[position + 1 :]
            for r in other.rules
            if r.default and len(rules) == 1 and r.field == rules[0].field
        }
        if (
            len(rules) == 1
            and rules[0].default
            and not rules[0].computed
            and later - {rules[0].value}
            and requirement.buildable
        ):
            requirement = requirement.model_copy(update={"buildable": False, "why_not": _UNREAD_RULE})
        out.append(requirement)
    return out


#: A value a request gives in quotes ("(action "freeze")"): a clause holding one states a rule.
_QUOTED = re.compile(r'"[^"]{1,60}"')
_UNREAD_RULE = "no rule could be read from its words: it needs a model"
#: "Input per request: ...", "Inputs: ...": a clause declaring what an input gives.
_INPUT_LEAD = re.compile(r"\s*inputs?\b", re.I)


def _written_forms(clause: str, fields: dict[str, list[str]]) -> bool:
    """Whether each quote of a clause is a way an input writes a number ("in months like "3 months"",
    "in words / "120k""), none a value of the answer: forms of an input, no rule."""
    values = {v.lower() for allowed in fields.values() for v in allowed}
    quoted = [m.group(0).strip("\"'“”").lower() for m in _QUOTED.finditer(clause)]
    return bool(quoted) and all(re.search(r"[0-9]", q) and q not in values for q in quoted)


def _heading(clause: str) -> bool:
    """A heading of the lines after it ("Rules for action, first match wins:"): it states no rule."""
    return clause.endswith(":") and not _QUOTED.search(clause)


def _unaccounted(
    text: str, fields: dict[str, list[str]], declaration: re.Match[str] | None, read: list[Requirement]
) -> list[Requirement]:
    """Clauses stating a rule that no requirement was read from: a clause giving a value in quotes or
    naming a declared field, outside the answer's declaration and every requirement's words. Each is
    a requirement that is not built, so the gate cannot pass a system that never read it."""
    out: list[Requirement] = []
    for index, (offset, clause) in enumerate(_clauses(text)):
        end = offset + len(clause)
        if index == 0 and not _QUOTED.search(clause) and not re.search(r"[0-9]", clause):
            continue  # what the system does ("... triages tickets and drafts a first reply"), no rule
        if declaration is not None and offset < declaration.end() and declaration.start() < end:
            continue
        if _heading(clause):
            continue
        if any(offset < r.end and r.start < end for r in read):
            continue
        named = [f for f in fields if re.search(rf"\b{re.escape(f)}\b", clause)]
        if not named and (
            not _QUOTED.search(clause)
            or _INPUT_DECL.search(clause)
            or _INPUT_LEAD.match(clause)
            or _written_forms(clause, fields)
        ):
            continue  # quotes in what an input gives ("(or "not yet delivered")") state no rule
        out.append(
            Requirement(
                id=f"r{len(read) + len(out) + 1}",
                kind="output_field" if named else "route",
                text=clause,
                start=offset,
                end=end,
                fields=named,
                buildable=False,
                why_not=_UNREAD_RULE,
            )
        )
    return out


#: "never uses", "must not contain", "no ... includes": a text's wording denied (the words follow).
_NEVER_SAYS = re.compile(
    r"\b(?:never|not|no)\s+(?:\w+\s+){0,2}?(?:uses?|contains?|includes?|says?|writes?|has|have)\b\s*",
    re.I,
)


#: "must never mention refunds", "does not discuss pricing or discounts": a subject the text keeps off.
_NEVER_MENTIONS = re.compile(
    r"\b(?:never|not|no|without)\s+(?:\w+\s+){0,2}?(?:mention(?:s|ing)?|discuss(?:es|ing)?|talks?\s+about|"
    r"brings?\s+up|refers?\s+to)\s+(?P<rest>[a-z][a-z ,-]{1,80})",
    re.I,
)


def _kept_off(clause: str) -> list[str]:
    """The subjects a clause says a text never mentions, each by its base word ("refunds": refund, so
    "refunded" is refused too), never a value of another rule."""
    found = _NEVER_MENTIONS.search(clause)
    if found is None:
        return []
    from master_agent.capabilities.tools.lexicon import WordNetMissing, wordnet

    out: list[str] = []
    for item in re.split(r"\s*(?:,|\bor\b|\band\b|\bnor\b)\s*", found.group("rest")):
        words = [w for w in item.lower().split() if w not in _FUNCTION]
        if not words:
            continue
        try:
            base = wordnet().morphy(words[-1], "n") or words[-1]
        except WordNetMissing:
            base = words[-1]
        out.append(" ".join([*words[:-1], base]))
    return list(dict.fromkeys(out))


def avoided(clause: str) -> list[str]:
    """The words or characters a clause says a text never contains: the quoted ones after the denied
    verb ("never uses the words "unfortunately" or "policy""), else a character named by its Unicode
    name, a punctuation mark or sign ("must never contain an exclamation mark": "!"), else the subjects
    it never mentions ("must never mention refunds")."""
    denied = _NEVER_SAYS.search(clause)
    if denied is None:
        return _kept_off(clause)
    rest = clause[denied.end() :]
    # The words right after the verb ("the words "x" or "y"", "any of "x", "y""), not a value the
    # clause gives later ("does not include a receipt gets "hold"").
    listed = re.match(
        r"(?:(?:the|any)\s+)?(?:of\s+(?:the\s+)?)?(?:(?:words?|phrases?|terms?|expressions?)\s+)?"
        r'(?:(?:like|such as)\s+)?(?P<list>"[^"]{1,60}"(?:\s*(?:,|or|and|nor)\s*(?:or\s+|and\s+)?"[^"]{1,60}")*)',
        rest,
        re.I,
    )
    quoted = re.findall(r'"([^"]{1,60})"', listed.group("list")) if listed else []
    if quoted:
        return list(dict.fromkeys(q.strip() for q in quoted if q.strip()))
    words = _WORD.findall(re.sub(r"^(?:an?|any|the|single)\s+", "", rest.strip(), flags=re.I))
    for size in range(min(len(words), 4), 0, -1):
        name = " ".join(words[:size]).upper()
        for candidate in (name, name[:-1] if name.endswith("S") else name):
            try:
                character = unicodedata.lookup(candidate)
            except KeyError:
                continue
            # Punctuation and signs ("!", ";", "$"), not a pictograph named like a noun ("receipt").
            if unicodedata.category(character)[0] == "P" or unicodedata.category(character) in ("Sm", "Sc"):
                return [character]
    return []


#: "(quantity is 100 minus on-hand)": a field defined in parentheses inside another clause.
_DEFINED = re.compile(r"\((?P<definition>[a-z][a-z0-9_]*\s+is\s+[^()]+)\)")


def _defined_apart(clauses: list[tuple[int, str]], fields: dict[str, list[str]]) -> list[tuple[int, str]]:
    """Each clause with the definitions of free fields it holds in parentheses read as clauses of
    their own (blanked in it, so its offsets stay): "When stock is below 20 units, reorder up to 100
    units (quantity is 100 minus on-hand)" is a rule on the action, and quantity's arithmetic."""
    out: list[tuple[int, str]] = []
    for offset, clause in clauses:
        apart = [
            found
            for found in _DEFINED.finditer(clause)
            if (name := found.group("definition").split()[0]) in fields and not fields[name]
        ]
        for found in apart:
            clause = clause[: found.start()] + " " * (found.end() - found.start()) + clause[found.end() :]
        out.append((offset, clause.rstrip()))
        out.extend((offset + found.start(1), found.group(1)) for found in apart)
    return out


def _declared_dates(text: str, requirements: list[Requirement]) -> list[Requirement]:
    """A date named by its event's verb ("a device bought more than 365 days before the request date")
    is the one date the request declares each input to give ("Each request gives the request date, the
    purchase date, ...") besides the other date of its comparison: "purchase date"."""
    declared = [
        re.sub(r"^(?:the|its|their)\s+", "", found.group(0).lower())
        for declaration in _INPUT_DECL.finditer(text)
        for found in re.finditer(r"(?:\b[a-z]+\s+){1,2}?date\b", declaration.group("body"), re.I)
    ]
    # A label of its own ("purchase date"), not "the date the payee was added" (a date by its clause).
    declared = [label for label in dict.fromkeys(declared) if len(label.split()) > 1]

    def named(label: str | None) -> bool:
        return label is None or any(label in d or d.startswith(label) for d in declared)

    def dated(c: Comparison | None) -> Comparison | None:
        if c is None or not c.since or named(c.since):
            return c
        other = [d for d in declared if c.until is None or c.until not in d]
        return c.model_copy(update={"since": other[0]}) if len(other) == 1 else c

    return _each_comparison(requirements, dated) if len(declared) >= 2 else requirements


#: The words naming a money quantity as what something is worth ("an order worth more than $25,000",
#: "stock whose value is over $10,000").
_WORTH = frozenset({"worth", "value", "valued", "priced"})
#: Output fields that count units ("quantity is 100 minus on-hand").
_COUNTS = re.compile(r"^(?:[a-z0-9]+_)?(?:quantity|qty|units|count)$")


def _worth_of_units(requirements: list[Requirement]) -> list[Requirement]:
    """A money comparison said of what something is worth, where one numeric output field counts
    units, multiplies an amount the input writes per unit by that count (``Comparison.times``): an
    order of 100 units at "unit cost: $260.00" is worth $26,000."""
    counted = {
        rule.field
        for r in requirements
        for rule in r.rules
        if _COUNTS.match(rule.field) and (rule.computed or isinstance(rule.value, int | float))
    }
    if len(counted) != 1:
        return requirements
    field = next(iter(counted))

    def times(c: Comparison | None) -> Comparison | None:
        if c is None or c.unit not in _MONEY or c.since or c.label is None:
            return c
        if not _WORTH & set(c.label.lower().split()):
            return c
        return c.model_copy(update={"times": field})

    return _each_comparison(requirements, times)


def _bare(rule: Rule) -> bool:
    """A value said with no condition of its own."""
    return not (
        rule.when
        or rule.also
        or rule.mentions
        or rule.absent
        or rule.default
        or rule.copy_of
        or rule.computed
        or rule.weekdays
    )


def _said_of_another(requirement: Requirement, fields: dict[str, list[str]]) -> Requirement:
    """A value of another field said as a condition of this one's ("it is 0 when the claim is
    rejected": interim_payment 0 given status "reject"), not as a value of this field."""
    rules = list(requirement.rules)
    condition = re.search(r"\b(?:when|if|where|once|whenever)\b(?P<words>[^;:]*)$", requirement.text, re.I)
    if condition is not None and not any(r.given for r in rules):
        # "it is 0 when the claim is refused": a value of another field, as written or inflected.
        words = condition.group("words").lower()
        said = {
            (f, v)
            for f, values in fields.items()
            for v in values
            if isinstance(v, str)
            and re.fullmatch(r"[a-z]{3,}", v)
            and re.search(rf"\b(?:{re.escape(v)}|{re.escape(v.removesuffix('e'))}e?d)\b", words)
        }
        bare = [r for r in rules if _bare(r) and not fields.get(r.field)]
        if len(said) == 1 and bare and all(f not in {r.field for r in bare} for f, _ in said):
            ((owner, value),) = said
            rules = [r.model_copy(update={"given": {owner: value}}) if r in bare else r for r in rules]
            rules = [r for r in rules if not (_bare(r) and r.value == value and r.field != owner)]
    for position, rule in enumerate(rules):
        # "overdue people get assign "course"": the people another field gives "overdue".
        said_first = [
            (f, m.split()[0])
            for m in rule.mentions
            for f, values in fields.items()
            if f != rule.field and len(m.split()) > 1 and m.split()[0] in values
        ]
        if len(rule.mentions) == 1 and len(said_first) == 1 and not rule.given:
            ((owner, value),) = said_first
            rules[position] = rule.model_copy(update={"mentions": [], "given": {owner: value}})
    for rule in list(rules):
        owners = [f for f, values in fields.items() if rule.value in values and f != rule.field]
        if not _bare(rule) or rule.value in fields.get(rule.field, []) or len(owners) != 1:
            continue
        given = [r for r in rules if r.field == rule.field and _bare(r) and r is not rule and not r.given]
        if not given:
            continue
        rules = [
            r.model_copy(update={"given": {owners[0]: rule.value}}) if r in given else r
            for r in rules
            if r is not rule
        ]
    return _with_rules(requirement, rules, fields)


def _in_which_case(requirement: Requirement, fields: dict[str, list[str]]) -> Requirement:
    """ "X unless <comparison>, in which case Y": the comparison is Y's condition, and X what the
    field is when it does not hold."""
    if not re.search(r"\bunless\b.*\bin which case\b", requirement.text, re.I | re.S):
        return requirement
    rules = list(requirement.rules)
    for index, (first, then) in enumerate(itertools.pairwise(rules)):
        if first.field == then.field and _bare(first) and then.when is not None and then.value != first.value:
            # "accepted unless it arrives more than 30 days after ..., in which case it is rejected":
            # the comparison already with its value, the first value what the field is otherwise.
            default = first.model_copy(update={"default": True})
            rules = [r for r in rules if r is not first and not (r.default and r.field == first.field)]
            rules.append(default)
            kind, buildable, why = _kind_of(requirement.text, rules, fields)
            return requirement.model_copy(
                update={"rules": rules, "kind": kind, "buildable": buildable, "why_not": why}
            )
        if first.field == then.field and first.when is not None and then.when is None and not then.default:
            rules[index] = first.model_copy(
                update={"when": None, "also": [], "absent": [], "mentions": [], "default": True}
            )
            rules[index + 1] = then.model_copy(
                update={"when": first.when, "also": first.also, "mentions": [], "absent": []}
            )
            rules.append(rules.pop(index))  # the default last
            # "accepted (decision "accept") unless ...": the value said before it is that default.
            rules = [r for r in rules if not (_bare(r) and r.field == first.field and r.value == first.value)]
            kind, buildable, why = _kind_of(requirement.text, rules, fields)
            return requirement.model_copy(
                update={"rules": rules, "kind": kind, "buildable": buildable, "why_not": why}
            )
    return requirement


def _chained(requirements: list[Requirement], fields: dict[str, list[str]]) -> list[Requirement]:
    """A value of one field said with no condition of its own, before another field's value in the
    same requirement, is that value's condition ("Every sev1 pages the on-call engineer (page
    true)": page true given severity "sev1"), decided by its own field's rules."""
    out = []
    for requirement in requirements:
        rules: list[Rule] = []
        given: dict[str, RuleValue] = {}
        conditioned: set[str] = set()
        conditions_on: set[str] = set()
        for position, rule in enumerate(requirement.rules):
            bare = not (
                rule.when or rule.also or rule.mentions or rule.absent or rule.default or rule.copy_of
            )
            later = [r for r in requirement.rules[position + 1 :] if r.field != rule.field and not r.default]
            if bare and not rule.given and later and rule.value in fields.get(rule.field, []):
                given[rule.field] = rule.value
                conditions_on.add(rule.field)
                continue
            if given and rule.field in conditioned:
                given = {}  # the field decided again: another clause ("...; internal-only ... page false")
            if given and rule.field not in given and not rule.default:
                rule = rule.model_copy(update={"given": {**rule.given, **given}})
                conditioned.add(rule.field)
            rules.append(rule)
        if not conditions_on:
            out.append(requirement)
            continue
        kind, buildable, why = _kind_of(requirement.text, rules, fields)
        fields_of = [f for f in requirement.fields if f not in conditions_on] or requirement.fields
        out.append(
            requirement.model_copy(
                update={
                    "rules": rules,
                    "kind": kind,
                    "buildable": buildable,
                    "why_not": why,
                    "fields": fields_of,
                }
            )
        )
    return out


def _same_quantities(requirements: list[Requirement]) -> list[Requirement]:
    """Comparisons in the same unit speak of the same quantity ("below 20 units ...; at 20 units or
    more"): one that names it gives its label to those that do not, and one counted as a total
    makes them all totals."""
    compared = [
        c for r in requirements for rule in r.rules for c in [rule.when, *rule.also] if c and not c.since
    ]
    labels: dict[str, str] = {}
    for c in compared:
        if c.label and c.unit:
            labels.setdefault(c.unit, c.label)  # the first naming: later ones may name the action
    totals = {c.unit for c in compared if c.total and c.unit}

    def same(c: Comparison | None) -> Comparison | None:
        if c is None or c.since or not c.unit:
            return c
        return c.model_copy(
            update={
                "label": c.label or labels.get(c.unit),
                "total": (c.total or c.unit in totals) and not (c.each or c.every or c.subtotal),
            }
        )

    return _each_comparison(requirements, same)


#: A name written as one token with a joiner or a digit ("sre-oncall", "payments_core", "team7").
_NAME = re.compile(r"^[a-z0-9]+(?:[-_][a-z0-9]+)+$|^[a-z]+[0-9]+$", re.I)


def _instead(fields: dict[str, list[str]], requirements: list[Requirement]) -> list[Requirement]:
    """ "... never frozen: where the spend rule would freeze them they get action "notify" instead":
    the rule replaces another value of its field for the things it names, so it holds where a rule
    giving that value holds (its comparisons), for those names only (a list of names keeps its names,
    not the prose around them; names written as one token, "backup-core", where it read none)."""
    out = []
    for requirement in requirements:
        if not re.search(r"\binstead\b(?!\s+of\b)", requirement.text, re.I):
            out.append(requirement)
            continue
        unquoted = re.sub(r'"[^"]*"', " ", requirement.text)
        quoted = {r.value for r in requirement.rules if f'"{r.value}"' in requirement.text}
        # "must never be blocked": a value said only to be replaced has no rule of its own here.
        gone = {r.value for r in requirement.rules if _bare(r) and quoted and r.value not in quoted}
        written = [m for m in re.findall(r"[a-z0-9][a-z0-9_-]*[a-z0-9]", unquoted, re.I) if _NAME.match(m)]
        rules: list[Rule] = []
        for rule in requirement.rules:
            if rule.value in gone:
                continue
            replaced = [
                v
                for v in fields.get(rule.field, [])
                if v != rule.value and re.search(rf"\b{re.escape(str(v))}\b", unquoted, re.I)
            ]
            if rule.default or rule.when or len(replaced) != 1 or not (rule.mentions or written):
                rules.append(rule)
                continue
            names = [f'"{m}"' for m in (rule.mentions or written) if _NAME.match(m)]
            mentions = names or rule.mentions
            conditions = [
                r
                for other in requirements
                if other is not requirement
                for r in other.rules
                if r.field == rule.field and r.value == replaced[0] and (r.when or r.also) and not r.mentions
            ]
            if not conditions:
                rules.append(rule.model_copy(update={"mentions": mentions}))
                continue
            rules += [
                rule.model_copy(update={"mentions": mentions, "when": r.when, "also": r.also})
                for r in conditions
            ]
        if rules != requirement.rules:
            kind, buildable, why = _kind_of(requirement.text, rules, fields)
            requirement = requirement.model_copy(
                update={"rules": rules, "kind": kind, "buildable": buildable, "why_not": why}
            )
        out.append(requirement)
    return out


#: "fix_logging wins over coverage_drop": which of two values of a field is decided first.
PRECEDES = re.compile(
    r"(?:^|[\s\"(])(?P<first>[a-z][a-z0-9_-]*)\"?\s+(?P<rule>(?:lines?|rules?)\s+)?(?:wins?\s+over|"
    r"takes?\s+(?:precedence|priority)\s+over|overrides?|beats?|comes?\s+before|(?:is|are)\s+(?:decided|checked)\s+before)"
    r"\s+(?:the\s+)?\"?(?P<then>[a-z][a-z0-9_-]*)\b",
    re.I,
)


def _precedence(requirement: Requirement, fields: dict[str, list[str]]) -> Requirement:
    """A sentence saying which of two values of a field wins states no rule of its own: the field's
    rules are ordered by it (``field_rules``)."""
    found = PRECEDES.search(requirement.text)
    if found is None or any(r.when or r.also for r in requirement.rules):
        return requirement
    first, then = found.group("first"), found.group("then")
    # "fix_logging wins over coverage_drop", or a value's lines over another line ("The two "reject"
    # lines win over the environment line").
    if not any(first in values and (then in values or found.group("rule")) for values in fields.values()):
        return requirement
    return requirement.model_copy(update={"rules": [], "kind": "route", "buildable": True, "why_not": None})


#: "a bag that is not yet delivered": an event the input says has not happened.
_NOT_YET_EVENT = re.compile(r"\bnot\s+yet\s+(?P<event>[a-z]{3,}ed)\b", re.I)


def _not_yet(requirements: list[Requirement]) -> list[Requirement]:
    """ "paid when filed 21 days or fewer after delivery, or for a bag that is not yet delivered": a
    time counted from an event holds too where the input says the event has not happened yet (the
    words written as they are: "Bag delivered: not yet delivered")."""
    out = []
    for requirement in requirements:
        rules = list(requirement.rules)
        for found in _NOT_YET_EVENT.finditer(requirement.text):
            event = found.group("event").lower()
            # The clause (";"-separated) saying it, and the rule of a time since that event said there.
            start = requirement.text.rfind(";", 0, found.start()) + 1
            end = requirement.text.find(";", found.end())
            clause = requirement.text[start : end if end >= 0 else None]
            timed = [
                r
                for r in rules
                if r.when is not None
                and r.when.since
                and _stem(r.when.since.split()[-1])[:5] == _stem(event)[:5]
                and f'"{r.value}"' in clause
            ]
            if len(timed) == 1:
                phrase = f'"{found.group(0).lower()}"'
                # The alternative's other words ("or for a bag that is not yet ...") are no condition.
                said = re.split(r"\bor\b|,", requirement.text[start : found.start()])[-1].lower()
                rules = [
                    r
                    for r in rules
                    if not (
                        r.field == timed[0].field
                        and r.value == timed[0].value
                        and r.mentions
                        and not r.when
                        and all(re.search(rf"\b{re.escape(m)}\b", said) for m in r.mentions)
                    )
                ]
                rules.insert(
                    rules.index(timed[0]) + 1,
                    timed[0].model_copy(update={"when": None, "also": [], "mentions": [phrase]}),
                )
        out.append(
            requirement.model_copy(update={"rules": rules}) if rules != requirement.rules else requirement
        )
    return out


def _of_fields(fields: dict[str, list[str]], requirements: list[Requirement]) -> list[Requirement]:
    """A comparison naming a field the answer computes ("an increase of 50% or less" of
    ``increase_pct``, "hours_after is more than 48") compares that field's value."""
    computed = {r.field for q in requirements for r in q.rules if r.computed and not fields.get(r.field)}

    def named(c: Comparison | None) -> Comparison | None:
        if c is None or not c.label or c.since or c.of:
            return c
        words = c.label.lower().replace("-", " ").split()
        for field in computed:
            if field == c.label or field.split("_")[: len(words)] == words:
                return c.model_copy(update={"label": field, "total": False})
        return c

    return _each_comparison(requirements, named) if computed else requirements


#: "(the spend is then the sum of the lines)": a quantity the request says is a sum.
_SUM_OF = re.compile(r"\b([a-z][a-z-]*)\s+is\s+(?:then\s+|always\s+)?the\s+(?:sum|total)\s+of\b", re.I)


def _summed(text: str, requirements: list[Requirement]) -> list[Requirement]:
    """A quantity the request says is the sum of its lines is read as a total wherever it is named
    ("the month-to-date spend", "how far the spend is above the budget")."""
    nouns = {m.group(1).lower() for m in _SUM_OF.finditer(text)} - _FUNCTION

    def names(label: str | None) -> bool:
        return bool(label) and (label or "").split()[-1] in nouns

    def operand(o: Operand) -> Operand:
        if o.computed is not None:
            return o.model_copy(update={"computed": computation(o.computed)})
        return o.model_copy(update={"total": True}) if names(o.label) else o

    def computation(c: Computation) -> Computation:
        return c.model_copy(update={"left": operand(c.left), "right": operand(c.right)})

    if not nouns:
        return requirements
    out = _each_comparison(
        requirements, lambda c: c.model_copy(update={"total": True}) if c and names(c.label) else c
    )
    return [
        r.model_copy(
            update={
                "rules": [
                    x.model_copy(update={"computed": computation(x.computed)}) if x.computed else x
                    for x in r.rules
                ]
            }
        )
        for r in out
    ]


def _each_comparison(
    requirements: list[Requirement], change: Callable[[Comparison | None], Comparison | None]
) -> list[Requirement]:
    """The requirements with ``change`` applied to every comparison of their rules."""
    return [
        r.model_copy(
            update={
                "rules": [
                    x.model_copy(update={"when": change(x.when), "also": [change(a) for a in x.also]})
                    for x in r.rules
                ]
            }
        )
        for r in requirements
    ]


#: "F is [the] A minus B", "F is [the] A above 40 for X, and 0 for Y", "F = (A - B) / B x 100": a value
#: computed from numbers (a list's bullet before it).
_COMPUTED = re.compile(
    r"^\s*(?:[-*•]\s+)?(?P<field>[a-z][a-z0-9_]*)\s+(?:is|=|equals|counts)\s+(?P<expr>.+)$", re.I | re.S
)
_OPERATION = re.compile(
    r"^(?P<left>.+?)\s+(?P<op>minus|plus|above|times|multiplied by|divided by)\s+(?P<right>.+)$", re.I | re.S
)
_OPS = {"minus": "-", "plus": "+", "above": "above", "times": "*", "multiplied by": "*", "divided by": "/"}
_TARGET = re.compile(r"^(?P<what>.+?)\s+for\s+(?P<who>.+)$", re.I | re.S)
#: "90 days after the start date", "2 weeks before its due date", "the same day one year after the last
#: service (28 February when ...)": a date moved by a number of days or calendar months (an example in
#: brackets after it says what the clipping to a month's end gives, nothing more).
_DATE_OFFSET = re.compile(
    r"^\s*(?:(?:the|its)\s+same\s+(?:day|date)\s+)?(?P<n>\d+|[a-z]+)\s+(?P<unit>days?|weeks?|months?|years?)\s+"
    r"(?P<dir>after|before|from)\s+(?:(?:the|its|their)\s+)?(?P<label>(?:[a-z-]+\s+){0,3}?[a-z-]+)"
    r"\s*(?:\([^()]*\))?\s*\.?\s*$",
    re.I,
)
#: "the calendar days from the first to the last day of the freeze": the days between two dates.
_DAYS_BETWEEN = re.compile(
    r"^\s*(?:the\s+)?(?:number\s+of\s+)?(?:calendar\s+)?days\s+(?:from|between)\s+(?:the\s+)?(?P<a>.+?)\s+"
    r"(?:to|and|until|through)\s+(?:the\s+)?(?P<b>.+?)(?P<both>,?\s*(?:both\s+(?:ends?\s+|days?\s+|dates?\s+)?"
    r"(?:included|inclusive|counted)|inclusive))?\s*\.?\s*$",
    re.I,
)
#: "both included", "inclusive": a day count with both its ends.
_BOTH_ENDS = re.compile(
    r"^\s*(?:with\s+)?(?:both\s+(?:ends?\s+|days?\s+|dates?\s+)?(?:included|inclusive|counted)|inclusive(?:ly)?)\b",
    re.I,
)
#: Where a computed field's alternatives part: a comma, or "and"/"or" before the next one's "<value>
#: for ..." ("90 days after the start date for contractors and null for employees").
_ALTERNATIVE = re.compile(
    r",\s*(?:and\s+|or\s+)?|\s+(?:and|or)\s+(?=(?:null|none|-?\d[\d,.]*|\"[^\"]*\")\s+for\b)", re.I
)
#: How a computed number is bounded and written: "capped at $300", "at most 40", "rounded to one
#: decimal place", "as a plain number".
_CAP = re.compile(
    r"^\s*(?:(?:but\s+)?(?:capped|limited)\s+at|at\s+most|no\s+more\s+than|never\s+more\s+than|up\s+to)\s+"
    r"(?:[$€£]\s*)?(?P<n>\d[\d,]*(?:\.\d+)?)\b",
    re.I,
)
_ROUNDED = re.compile(
    r"^\s*rounded\s+to\s+(?:(?:the\s+nearest\s+)?(?P<whole>whole\s+number|integer|cent)|"
    r"(?P<n>[a-z]+|\d)\s+decimals?(?:\s+places?)?)",
    re.I,
)
_WRITTEN = re.compile(
    r"^\s*(?:as\s+an?\s+(?:plain\s+)?(?:number|amount|figure)|in\s+[a-z ]*dollars)\s*$", re.I
)
#: Where an operand's words stop: a participle phrase ("receipt lines including their tax").
_QUALIFIER = re.compile(r"\s+(?:including|excluding|without)\b.*$", re.I | re.S)
#: An operator of a formula written with symbols (a "-" or "x" between spaces, never inside a word).
_SYMBOL = re.compile(r"\s*(\(|\)|[+*/×÷]|(?<=\s)[-x](?=\s))\s*")


def _operand(words: str) -> Operand | None:
    """A number written ("40", "100"), or the words naming one in the input: its content words up to
    where a participle phrase starts ("the payments listed on the Payments line": "payments")."""
    found = re.fullmatch(r"\s*(?:the\s+)?[$€£]?\s*(\d[\d,]*(?:\.\d+)?)\s*", words)
    if found is not None:
        return Operand(number=float(found.group(1).replace(",", "")))
    named: list[str] = []
    # "the sum of the amounts", "the total of the lines": the numbers after that label, summed.
    summed = re.match(r"\s*(?:the\s+)?(?:sum|total)\s+of\s+(?P<rest>.+)$", words, re.I | re.S)
    words = _QUALIFIER.sub("", summed.group("rest") if summed else words)
    # "how far the spend is [above the budget]": the spend.
    words = re.sub(r"^\s*how\s+(?:far|much|many)\s+|\s+(?:is|are)\s*$", " ", words, flags=re.I)
    for word in (w.lower() for w in _WORD.findall(words)):
        if len(word) < 2:
            continue  # the "s" of "week's"
        if word in _FUNCTION:
            if named:
                break
            continue
        named.append(word)
    # "the payments listed", "the week's total hours": every number listed, summed.
    total = bool(summed) or any(w == "total" or (w.endswith("s") and not w.endswith("ss")) for w in named)
    named = [w for w in named if w != "total"]
    return Operand(label=" ".join(named), total=total) if named else None


def _shifted_date(computation: Computation) -> Computation:
    """ "renewal date minus the notice period": a date moved by a time the input writes after the
    other label, not a difference of two numbers."""
    left, right = computation.left.label or "", computation.right.label or ""
    if computation.op not in ("-", "+") or not re.search(r"\bdate$", left) or not right or "date" in right:
        return computation
    return computation.model_copy(update={"op": "date_minus" if computation.op == "-" else "date_plus"})


def _formula(words: str) -> Computation | None:
    """A formula written with symbols ("(requested limit - current limit) / current limit x 100"),
    parsed by Python's own expression grammar once each run of words is a name."""
    pieces = _SYMBOL.split(words.strip())
    if len(pieces) < 3:
        return None
    names: dict[str, Operand] = {}
    source: list[str] = []
    for index, piece in enumerate(pieces):
        if index % 2:
            source.append({"x": "*", "×": "*", "÷": "/"}.get(piece, piece))
        elif piece.strip():
            read = _operand(piece)
            if read is None:
                return None
            if read.number is not None:
                source.append(repr(read.number))
            else:
                names[f"v{len(names)}"] = read
                source.append(f"v{len(names) - 1}")
    try:
        tree = ast.parse(" ".join(source), mode="eval").body
    except SyntaxError:
        return None

    def operand(node: ast.expr) -> Operand | None:
        if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
            return Operand(number=float(node.value))
        if isinstance(node, ast.Name):
            return names.get(node.id)
        inner = computation(node)
        return Operand(computed=inner) if inner is not None else None

    def computation(node: ast.expr) -> Computation | None:
        ops: dict[type, Literal["+", "-", "*", "/"]] = {
            ast.Add: "+",
            ast.Sub: "-",
            ast.Mult: "*",
            ast.Div: "/",
        }
        if not isinstance(node, ast.BinOp) or type(node.op) not in ops:
            return None
        left, right = operand(node.left), operand(node.right)
        if left is None or right is None:
            return None
        return Computation(op=ops[type(node.op)], left=left, right=right)

    return computation(tree)


def _days_between(words: str) -> Computation | None:
    """ "the calendar days from the first to the last day of the freeze[, both included]": the days
    between two dates, each named by its words (the shared noun given to both: "first day", "last
    day")."""
    found = _DAYS_BETWEEN.match(words)
    if found is None:
        return None
    first, last = found.group("a").lower().split(), found.group("b").lower().split()
    if len(first) == 1 and len(last) > 1:
        first = [first[0], *last[1:]]  # "the first to the last day of the freeze"

    def label(said: list[str]) -> str:
        return " ".join(re.split(r"\s+of\s+", " ".join(said))[0].split())

    return Computation(
        op="days_between",
        left=Operand(label=label(first)),
        right=Operand(label=label(last)),
        inclusive=bool(found.group("both")),
    )


def _date_offset(what: str) -> Computation | None:
    """ "90 days after the start date", "the same day one year after the last service": the date
    after the label moved by days (``days_after``) or calendar months (``months_after``)."""
    offset = _DATE_OFFSET.match(what)
    if offset is None:
        return None
    said = offset.group("n").lower()
    n = int(said) if said.isdigit() else _ONES.get(said)
    if n is None:
        return None
    unit = offset.group("unit").lower()
    n = -n if offset.group("dir").lower() == "before" else n
    label = Operand(label=offset.group("label").lower())
    if unit.startswith(("month", "year")):
        months = n * (12 if unit.startswith("year") else 1)
        return Computation(op="months_after", left=label, right=Operand(number=months))
    return Computation(
        op="days_after", left=label, right=Operand(number=n * (7 if unit.startswith("week") else 1))
    )


def _bounded(computation: Computation, part: str) -> Computation | None:
    """The computation bounded or rounded as the part says ("capped at $300"); None when it says
    neither."""
    if computation.op == "days_between" and _BOTH_ENDS.match(part):
        return computation.model_copy(update={"inclusive": True})
    if (cap := _CAP.match(part)) is not None:
        return computation.model_copy(update={"cap": float(cap.group("n").replace(",", ""))})
    if (rounded := _ROUNDED.match(part)) is not None:
        said = (rounded.group("n") or "").lower()
        whole = (rounded.group("whole") or "").lower()
        digits = 2 if whole == "cent" else 0 if whole else (int(said) if said.isdigit() else _ONES.get(said))
        if digits is None:
            return None
        return computation.model_copy(update={"digits": digits})
    return None


def _computed(clause: str, fields: dict[str, list[str]], subject: frozenset[str]) -> list[Rule] | None:
    """The rules of a field the clause defines by arithmetic: each alternative ("..., and 0 for
    salaried employees") a value or a computation, for the inputs its "for ..." names; a part
    bounding or rounding the number ("capped at $300", "rounded to one decimal place") applies to
    the computation before it."""
    found = _COMPUTED.match(clause)
    if found is None or found.group("field") not in fields or fields[found.group("field")]:
        return None
    field = found.group("field")
    rules: list[Rule] = []
    for part in _ALTERNATIVE.split(found.group("expr")):
        last = next((r for r in reversed(rules) if r.computed), None)
        if last is not None and last.computed is not None:
            if (bounded := _bounded(last.computed, part)) is not None:
                rules[rules.index(last)] = last.model_copy(update={"computed": bounded})
                continue
            if _WRITTEN.match(part):
                continue
        target = _TARGET.match(part)
        if target is not None and _OPERATION.match(target.group("what")) is None and _OPERATION.match(part):
            target = None  # "the nurse's hours for that week plus the shift": "for" inside an operand
        what, who = (target.group("what"), target.group("who")) if target else (part, "")
        # "for hourly employees": the kind of input, by its first word.
        mentions = [item.split()[0] for item in _keywords(who, fields, subject)[:1]] if who else []
        operation = _OPERATION.match(what)
        if (dated := _date_offset(what) or _days_between(what)) is not None:
            rules.append(Rule(field=field, computed=dated, mentions=mentions, default=not mentions))
        elif what.strip().lower() in ("null", "none") and mentions:
            rules.append(Rule(field=field, value=None, mentions=mentions))
        elif (formula := _formula(what)) is not None:
            rules.append(Rule(field=field, computed=formula, mentions=mentions, default=not mentions))
        elif operation is not None:
            left, right = _operand(operation.group("left")), _operand(operation.group("right"))
            if left is None or right is None:
                return None
            computation = _shifted_date(
                Computation(op=_OPS[operation.group("op").lower()], left=left, right=right)
            )
            rules.append(Rule(field=field, computed=computation, mentions=mentions, default=not mentions))
        elif (number := _operand(what)) is not None and number.number is not None and mentions:
            value = int(number.number) if number.number.is_integer() else number.number
            rules.append(Rule(field=field, value=value, mentions=mentions))
        elif number is not None and not rules and re.match(r"\s*(?:the\s+)?(?:sum|total)\s+of\b", what, re.I):
            # "the total of all receipt lines": every number listed after that label, summed.
            computation = Computation(op="+", left=number, right=Operand(number=0))
            rules.append(Rule(field=field, computed=computation, mentions=mentions, default=not mentions))
    computed = [r for r in rules if r.computed]
    if not computed:
        return None
    # The computation for the inputs it names first, the plain values after; one with no "for" last.
    return sorted(rules, key=lambda r: (r.default, r.computed is None))


_SHARED_NOUN = re.compile(
    r"\b(?P<items>[a-z][\w-]*(?:\s*,\s*[a-z][\w-]*)*\s+(?:or|and)\s+[a-z][\w-]*)\s+(?P<noun>[a-z][\w-]*)",
    re.I,
)


#: "whether the customer has signed a multi-year contract": a yes-or-no input a request declares.
_WHETHER = re.compile(r"\bwhether\s+([^,.;()]+)", re.I)


def _loosened(text: str, requirements: list[Requirement]) -> list[Requirement]:
    """Each built requirement with the conditions whose words are not one run of words of the
    request (a phrase read with its own words left out between them: "dependency licensed gpl" from
    "a dependency licensed under GPL"), kept in ``loose``."""
    words = [w.lower() for w in _WORD.findall(text)]
    runs = {" ".join(words[i : i + n]) for n in range(1, 7) for i in range(len(words) - n + 1)}
    # A list sharing the noun after it ("write or delete rights"): each item with that noun is a run.
    for shared in _SHARED_NOUN.finditer(text):
        listed = re.split(r"\s*(?:,|\bor\b|\band\b)\s*", shared.group("items"))
        runs |= {f"{item.lower()} {shared.group('noun').lower()}" for item in listed if item}
    # A yes-or-no input the request declares ("and whether the customer has signed a multi-year
    # contract"): the input answers it after its label ("Multi-year contract signed: no"), so a
    # condition made of its words is no loose reading.
    asked = [{w.lower() for w in _WORD.findall(found.group(1))} for found in _WHETHER.finditer(text)]
    out = []
    for requirement in requirements:
        items = [
            item for rule in requirement.rules for item in [*rule.mentions, *rule.mentions_too, *rule.absent]
        ]
        loose = [
            item
            for item in dict.fromkeys(items)
            if " ".join(_WORD.findall(item.lower())) not in runs
            and not any({w.lower() for w in _WORD.findall(item)} <= words for words in asked)
        ]
        out.append(requirement.model_copy(update={"loose": loose}) if loose else requirement)
    return out


#: What opens a condition inside a requirement ("... unless the customer is on the enterprise plan or
#: already received a discount ...", "Block any migration that drops a table ..."); "even if" concedes.
_CONDITION_CUE = re.compile(r"(?<!\beven )\b(?:unless|except|that|which|whose|if|when|whenever)\b", re.I)
#: Where a condition stops: a clause break, or the verb giving the rule's value.
_CONDITION_END = re.compile(r"[;:]|\b(?:gets?|goes|go|needs?|routes?)\b", re.I)
#: Words of comparisons, computations and negation: a comparison or a negated list reads them.
_STRUCTURE = frozenset(
    [
        "more",
        "less",
        "fewer",
        "least",
        "most",
        "over",
        "under",
        "above",
        "below",
        "strictly",
        "between",
        "inclusive",
        "exclusive",
        "up",
        "than",
        "day",
        "days",
        "hour",
        "hours",
        "minute",
        "minutes",
        "week",
        "weeks",
        "before",
        "after",
        "since",
        "within",
        "lines",
        "plus",
        "minus",
        "counting",
        "sum",
        "total",
        "combined",
        "not",
        "no",
        "never",
        "yet",
    ]
)
#: Least content words of an alternative no rule reads for it to count as left out: two-word asides
#: ("a comment says", "the payee's account") are read by the rule's other words on the tuning requests.
UNREAD_MIN_WORDS = 3


def _unread(requirement: Requirement, fields: dict[str, list[str]], subject: frozenset[str]) -> Requirement:
    """The requirement with the alternatives of its conditions that no built rule reads, kept in
    ``unread``: an alternative (split at "or" and commas) of ``UNREAD_MIN_WORDS`` content words or more,
    none of which is a word of a rule's items, labels, dates or units ("already received a discount in
    the same calendar year as the message" beside "the enterprise plan"; "drops a table or a column"
    before "unless ..."). Its rules were built without it, and its cases were written from them, so
    passing them proves nothing about it: the gate reports it not met."""
    if not requirement.buildable or requirement.avoid or not requirement.rules:
        return requirement

    def stem(word: str) -> str:
        return _stem(word.lower())[:5]

    read: set[str] = set()
    for rule in requirement.rules:
        said = [*rule.mentions, *rule.absent, *rule.within, *rule.within.values(), rule.copy_of or ""]
        for comparison in (c for c in (rule.when, *rule.also) if c is not None):
            said += [comparison.label or "", comparison.since or "", comparison.until or "", comparison.unit]
            said += [comparison.change or "", comparison.of or ""]
        for operand in (rule.computed.left, rule.computed.right) if rule.computed else ():
            said.append(operand.label or "")
        # The days of the week a rule reads, by name ("on a Saturday or Sunday").
        said += [_DAY_NAMES[day - 1] for day in rule.weekdays]
        read |= {stem(w) for item in said for w in _WORD.findall(item)}
    named = {stem(w) for w in subject}
    named |= {
        stem(w)
        for field, values in fields.items()
        for v in [field, *values]
        for w in re.split(r"[_\s-]+", v)
        if w
    }
    body = re.sub(r'"[^"]*"|\([^)]*"[^)]*\)', " ; ", requirement.text)  # a value said ends a condition
    if any(c.per for r in requirement.rules for c in (r.when, *r.also) if c is not None):
        # A rate reads an amount per any period: its brackets saying so ("(a monthly price times 12)")
        # are read, the rest of the clause is judged as any other.
        body = re.sub(r"\([^)]*\)", lambda m: " " if names_a_period(m.group(0)) else m.group(0), body)
    unread: list[str] = []
    for cue in _CONDITION_CUE.finditer(body):
        span = _CONDITION_END.split(body[cue.end() :], maxsplit=1)[0]
        for alternative in re.split(r"\bor\b|,", span, flags=re.I):
            words = [
                w.lower()
                for w in _WORD.findall(alternative)
                if len(w) >= 3 and w.lower() not in _FUNCTION | _COPULA | _STRUCTURE and stem(w) not in named
            ]
            if len(words) >= UNREAD_MIN_WORDS and not any(stem(w) in read for w in words):
                unread.append(" ".join(words))
    return requirement.model_copy(update={"unread": list(dict.fromkeys(unread))}) if unread else requirement


#: "a wheelchair, a mobility scooter or another mobility aid": a category named open, beyond its examples.
_OPEN = r"\b(?:an?other|any\s+other|some\s+other|other|similar)\s+(?:kinds?\s+of\s+|types?\s+of\s+)?"


def _open_category(requirement: Requirement) -> Requirement:
    """The requirement with each category it names open ("or another mobility aid") that WordNet knows
    no kinds of kept in ``unread``: the built rule reads the category's own words and the examples
    listed, and the embedder (measured: "walking frame" is no nearer "mobility aid" than "stroller")
    cannot tell its other members, so the gate reports it not met (judging it needs a model)."""
    if not requirement.buildable:
        return requirement
    items = dict.fromkeys(
        item for rule in requirement.rules for item in rule.mentions if not item.startswith('"')
    )
    opened = [
        f"another {item}"
        for item in items
        if re.search(_OPEN + re.escape(item) + r"\b", requirement.text, re.I)
        and not lexicon.knows_kinds(item)
    ]
    if not opened:
        return requirement
    return requirement.model_copy(update={"unread": list(dict.fromkeys([*requirement.unread, *opened]))})


#: "...; anything longer is denied", "everything above that goes to review": the other side of the
#: comparison just stated, by a comparative word.
_BEYOND = re.compile(
    r"[;,.]\s*(?:and\s+|but\s+)?(?:anything|everything|any\s+\w+|all|those|ones?)\s+(?:\w+\s+)?"
    r"(?P<way>longer|more|higher|larger|bigger|greater|above|over|beyond|later|older|heavier"
    r"|shorter|less|fewer|lower|smaller|below|under|earlier|younger|lighter)\b(?:\s+than\s+that)?"
    r"(?P<rest>[^;.]*)",
    re.I,
)
_BELOW_WAYS = frozenset(
    {"shorter", "less", "fewer", "lower", "smaller", "below", "under", "earlier", "younger", "lighter"}
)
_OTHER_SIDE: dict[str, Literal[">", ">=", "<", "<="]] = {"<=": ">", "<": ">=", ">=": "<", ">": "<="}


def _beyond(text: str, fields: dict[str, list[str]], requirements: list[Requirement]) -> list[Requirement]:
    """A clause naming the other side of the comparison before it by a comparative ("A freeze of 90
    days or fewer is approved; anything longer is denied"): a rule of the same field with the opposite
    comparison, its value the one the clause gives (quoted, or an allowed value's participle)."""
    out = _beyond_a_limit(text, fields, list(requirements))
    for found in _BEYOND.finditer(text):
        before = [i for i, r in enumerate(out) if r.end <= found.start() + 1 and r.rules]
        if not before:
            continue
        position = before[-1]
        requirement = out[position]
        if text[requirement.end : found.start()].strip():
            continue  # only right after the comparison it turns around
        stated = [r for r in requirement.rules if r.when is not None and not r.default]
        if len(stated) != 1 or stated[0].also:
            continue
        rule, when = stated[0], stated[0].when
        assert when is not None
        below = found.group("way").lower() in _BELOW_WAYS
        if below != (when.op in (">", ">=")):
            continue  # "anything longer" after "90 days or more" is the same side, said again
        allowed = fields.get(rule.field, [])
        quoted = re.search(r'"([^"]+)"', found.group("rest"))
        said = quoted.group(1) if quoted else None
        if said is None:
            # Its participle ("denied" for deny, "referred" for refer): the value's word less its last letter.
            said = next(
                (
                    v
                    for v in allowed
                    if re.search(rf"\b{re.escape(v[:-1] if len(v) > 3 else v)}\w*", found.group("rest"), re.I)
                ),
                None,
            )
        if said is None or said not in allowed or said == rule.value:
            continue
        other = rule.model_copy(
            update={"value": said, "when": when.model_copy(update={"op": _OTHER_SIDE[when.op]})}
        )
        end = found.end()
        out[position] = requirement.model_copy(
            update={"rules": [*requirement.rules, other], "end": end, "text": text[requirement.start : end]}
        )
    return out


def _beyond_a_limit(
    text: str, fields: dict[str, list[str]], requirements: list[Requirement]
) -> list[Requirement]:
    """A limit said alone, then what goes beyond it ("... the claim date is at most 14 days after the
    purchase date. Anything later is declined with credit 0."): the second sentence's values hold on
    the other side of the first's one comparison, and the two are one requirement."""
    out = list(requirements)
    for found in _BEYOND.finditer(text):
        said_at = found.start() + len(found.group(0)) - len(found.group(0).lstrip(";,. \n\t"))
        at = next((i for i, r in enumerate(out) if r.start == said_at), None)
        said_before = [(o, c) for o, c in _clauses(text) if o + len(c) <= found.start() + 1]
        if at is None or not said_before:
            continue
        offset, clause = said_before[-1]
        if text[offset + len(clause) : said_at].strip(" .;,\n") or any(
            r.rules and r.start < offset + len(clause) and offset < r.end for r in out
        ):
            continue
        # The limit's own sentence: a requirement of no rule read from it, or none (a sentence that
        # states a limit and no value: "We take returns within 10 days of delivery").
        held = next((i for i, r in enumerate(out) if r.start == offset), None)
        limit = (
            out[held]
            if held is not None
            else Requirement(
                id=out[at].id, kind="threshold", text=clause, start=offset, end=offset + len(clause)
            )
        )
        beyond = out[at]
        comparisons = [
            c
            for s, e, v, u in _amounts(limit.text)
            if (c := _comparison(limit.text, s, e, v, u, False, text)) is not None
        ]
        below = found.group("way").lower() in _BELOW_WAYS
        # "within 14 days of purchase, i.e. the claim date is at most 14 days after ...": one limit
        # said twice, the saying that names its dates read.
        if len({(c.op, c.value) for c in comparisons}) != 1 or below != (comparisons[0].op in (">", ">=")):
            continue
        limit_said = next((c for c in reversed(comparisons) if c.since), comparisons[-1])
        other_side = limit_said.model_copy(update={"op": _OTHER_SIDE[limit_said.op]})
        said = {_stem(w.lower()) for w in _WORD.findall(found.group(0))}
        rules = [
            r.model_copy(
                update={
                    "when": other_side,
                    "mentions": [m for m in r.mentions if not {_stem(w.lower()) for w in m.split()} <= said],
                }
            )
            for r in beyond.rules
            if not r.default and not r.when
        ]
        if not rules or len(rules) != len(beyond.rules):
            continue
        span = text[limit.start : beyond.end]
        kind, buildable, why = _kind_of(span, rules, fields)
        merged = limit.model_copy(
            update={
                "rules": rules,
                "end": beyond.end,
                "text": span,
                "fields": beyond.fields,
                "kind": kind,
                "buildable": buildable,
                "why_not": why,
            }
        )
        out[at] = merged
        if held is not None:
            del out[held]
    return out


def _complemented(requirements: list[Requirement]) -> list[Requirement]:
    """A yes/no field the rules only ever set one way ("trigger a customer notification
    (notify_customer true); delays of 48 hours or less do not") is the other way when none applies:
    its default, added to the requirement that sets it last."""
    values: dict[str, set[RuleValue]] = {}
    defaulted: set[str] = set()
    last: dict[str, int] = {}
    for position, requirement in enumerate(requirements):
        for rule in requirement.rules:
            values.setdefault(rule.field, set()).add(rule.value)
            last[rule.field] = position
            if rule.default or rule.copy_of:
                defaulted.add(rule.field)
    out = list(requirements)
    for field, said in values.items():
        if field in defaulted or len(said) != 1 or not isinstance(value := next(iter(said)), bool):
            continue
        requirement = out[last[field]]
        complement = Rule(field=field, value=not value, default=True)
        out[last[field]] = requirement.model_copy(update={"rules": [*requirement.rules, complement]})
    return out


#: A condition opening a clause's comparison ("if the damage estimate is over £250").
_CONDITION_OPENER = re.compile(r"\b(?:if|when|whenever|where)\b", re.I)
#: The clause right after a condition: its verb and whom it hands to ("route the case to the duty manager").
_THEN = re.compile(
    r"\s*,\s*(?:then\s+)?(?P<verb>[a-z]{3,})\b[^,;.]*?"
    r"(?:\bto\s+(?:a\s+|an\s+|the\s+)?(?P<to>[a-z]+(?:\s+[a-z]+)?))?(?=\s*[,;.]|\s*$)",
    re.I,
)


def _consequence(before: str, rest: str) -> tuple[str, str | None, str] | None:
    """After a condition that compares ("if the damage estimate is over £250"), the imperative that
    follows it ("route the case to the duty manager"): its verb (WordNet's, said in its base form), whom
    it hands to, and its words; None when no condition opens ``before`` or no such verb follows."""
    if _CONDITION_OPENER.search(before) is None:
        return None
    then = _THEN.match(rest)
    if then is None or verb_base(then.group("verb")) != then.group("verb").lower():
        return None
    to = then.group("to")
    return then.group("verb").lower(), to.lower().replace(" ", "_") if to else None, then.group(0)


def _verb_rules(text: str) -> list[Requirement]:
    """A request naming no answer fields ("... escalates refunds over $500 to a manager"): each
    clause comparing an amount decides a field named by its verb, its value the one it hands to."""
    requirements: list[Requirement] = []
    total = bool(_TOTAL.search(text))
    for match in re.finditer(r"[^,;.]+(?:\.(?=\d)[^,;.]*)*", text):
        clause = match.group(0)
        for start, end, value, unit in _amounts(clause):
            comparison = _comparison(
                clause, start, end, value, unit, total and unit in ("$", "EUR", "GBP", "€", "£")
            )
            if comparison is None:
                continue
            then = _consequence(clause[:start], text[match.end() :])
            if then is not None:
                # "if the estimate is over £250, route the case to the duty manager": the verb after
                # the condition decides, not the system's own verb before it ("screens deposits").
                verb, to, words = then
                opener = list(_CONDITION_OPENER.finditer(clause[:start]))[-1].start()
                said = (clause[opener:] + words).strip()
                offset = match.start() + opener + (len(clause[opener:]) - len(clause[opener:].lstrip()))
            else:
                words_before = [w.lower() for w in _WORD.findall(clause[:start])]
                verbs = [w for w in words_before if w.endswith("s") and w not in _FUNCTION and len(w) > 3]
                target = re.match(r"\s*to\s+(?:a\s+|an\s+|the\s+)?([a-z]+)", clause[end:], re.I)
                said = clause[: end + target.end()] if target else clause[:end]
                if not verbs:
                    continue
                verb_at = re.search(rf"\b{re.escape(verbs[0])}\b", said, re.I)
                said = (said[verb_at.start() :] if verb_at else said).strip()
                verb = verbs[0][:-2] if verbs[0].endswith("es") and verbs[0][-3] in "sxz" else verbs[0][:-1]
                to = target.group(1).lower() if target else None
                offset = match.start() + clause.find(said)
            field = f"{verb}_to" if to else verb
            value_given: RuleValue = to if to else True
            requirements.append(
                Requirement(
                    id=f"r{len(requirements) + 1}",
                    kind="escalation" if verb.startswith("escalat") else "threshold",
                    text=said,
                    start=offset,
                    end=offset + len(said),
                    fields=[field],
                    rules=[
                        Rule(field=field, value=value_given, when=comparison),
                        Rule(field=field, value=None if to else False, default=True),
                    ],
                )
            )
    return requirements


def _kind_of(
    clause: str, rules: list[Rule], fields: dict[str, list[str]] | None = None
) -> tuple[RequirementKind, bool, str | None]:
    if (_TONE.search(clause) or _WORDING.search(clause)) and not rules:
        return "tone", False, "a tone or wording of free text needs a model to write it"
    if _COPY.search(clause) and not rules:
        return "output_field", False, "copying a value out of free text needs a model to read it"
    if not rules:
        return "output_field", False, "states no rule to compile (no value assigned)"
    compared = any(r.when is not None for r in rules)
    kind: RequirementKind = (
        "threshold" if compared else ("forbidden" if re.search(r"\bnever\b", clause, re.I) else "route")
    )
    if re.search(r"\bescalat", clause, re.I) and not compared:
        kind = "escalation"
    dated = any(c.since for r in rules for c in [*([r.when] if r.when else []), *r.also])
    if _DATE_MATH.search(clause) and not dated:
        return (
            kind,
            False,
            "a rule on the time between dates needs a model (or a date tool) to read the dates",
        )
    if _EXPRESSION.search(clause):
        return kind, False, _ARITHMETIC
    conditional = [r for r in rules if not r.default]
    if not conditional and rules:
        return kind, True, None  # "a diff with none of these problems is approved": a default
    if not conditional or not all(
        r.when is not None or r.mentions or r.absent or r.copy_of or r.given or r.differ or r.weekdays
        for r in conditional
    ):
        return kind, False, "no condition could be read for each of its values"
    decided = {v.lower() for values in (fields or {}).values() for v in values}
    for rule in conditional:
        words = {w for item in rule.mentions for w in item.split()}
        if words & decided:
            return kind, False, "a condition on another decision of the answer needs a model"
        if words & {"never", "not", "no", "without", "none"}:
            return kind, False, "a negated condition needs a model to judge"
    negated = [
        r for r in conditional if r.when is None and not r.absent and not r.copy_of and _CUE.search(clause)
    ]
    if negated and len(negated) == len(conditional):
        return kind, False, "a negated condition needs a model to judge"
    return kind, True, None
