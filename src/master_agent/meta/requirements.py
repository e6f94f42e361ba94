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

import re
import threading
import time
from typing import Any

from master_agent.meta.artifacts import Comparison, Requirement, RequirementKind, Rule, RuleValue

#: Characters of a request read (the request's own limit).
MAX_CHARS = 5000
_FIELD_DECL = re.compile(
    r"\b(?:returns?|answers?|outputs?|responds?)\b[^.]*?\b(?:json object|object|fields?|answer)\b"
    r"(?:\s+with)?(?:\s+the\s+fields?)?\s*(?P<body>[^.]*)",
    re.I,
)
_IDENT = re.compile(r"\b([a-z][a-z0-9]*(?:_[a-z0-9]+)*)\b")
_VALUE = re.compile(
    r'"(?P<quoted>[^"]{1,60})"|\b(?P<word>true|false|null)\b|(?<![\w$.,])(?P<num>\d+)(?![\w%$.,])'
)
_BEFORE = [
    (re.compile(r"(?:more than|greater than|over|above|exceeding|exceeds?|higher than)\s*$", re.I), ">"),
    (re.compile(r"(?:at least|no less than|minimum of)\s*$", re.I), ">="),
    (re.compile(r"(?:less than|fewer than|below|under|lower than)\s*$", re.I), "<"),
    (re.compile(r"(?:at most|no more than|up to|maximum of)\s*$", re.I), "<="),
]
_AFTER = [
    (re.compile(r"^\s*(?:or more|or above|or higher|and above|and over|or greater)\b", re.I), ">="),
    (re.compile(r"^\s*(?:or less|or fewer|or below|or lower|and below|and under)\b", re.I), "<="),
]
_DEFAULT = re.compile(
    r"\b(all others?|others|all other|everything else|otherwise|every other|any other|other \w+s|the rest)\b",
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
_LIST_SPLIT = re.compile(r",|\(|\)|\bor\b|\band\b|:", re.I)
_WORD = re.compile(r"[a-z][a-z0-9/-]*", re.I)
#: Words that never name a condition: function words and the verbs that lead to one.
_FUNCTION = frozenset(
    [
        "a",
        "an",
        "the",
        "any",
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


class _Numbers:
    """Duckling's numbers and amounts of money (one runtime per process, started on first use)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._ready: tuple[Any, Any, Any, Any] | None = None

    def parse(self, text: str) -> list[dict[str, Any]]:
        import duckling

        from master_agent.capabilities.terms import _zoneinfo

        with self._lock:
            if self._ready is None:
                duckling.init()
                zones = duckling.load_time_zones(str(_zoneinfo()))
                locale = duckling.default_locale_lang(duckling.parse_lang("EN"))
                self._ready = (
                    duckling,
                    zones,
                    locale,
                    duckling.parse_dimensions(["amount-of-money", "number"]),
                )
            module, zones, locale, dimensions = self._ready
            reference = module.parse_ref_time(zones, "UTC", int(time.time()))
            found: list[dict[str, Any]] = module.parse(
                text, module.Context(reference, locale), dimensions, False
            )
        return found


_NUMBERS = _Numbers()


def _amounts(clause: str) -> list[tuple[int, int, float, str]]:
    """(start, end, value, unit) of each number or amount in ``clause``, the longest reading of a span."""
    out: list[tuple[int, int, float, str]] = []
    for found in _NUMBERS.parse(clause):
        value = found["value"]
        if value.get("type") == "interval":
            value = value.get("from") or value.get("to") or {}
        number = value.get("value")
        if not isinstance(number, int | float):
            continue
        start, end = int(found["start"]), int(found["end"])
        # Duckling's interval span includes the comparison words: keep the number's own span.
        digits = re.search(r"[$€£]?\s*\d[\d,]*(?:\.\d+)?", clause[start:end])
        if digits is not None:
            start, end = start + digits.start(), start + digits.end()
        elif found["dim"] == "number":
            continue  # a number word ("two") is a value, not a quantity compared
        unit = str(value.get("unit") or "") if found["dim"] == "amount-of-money" else ""
        if unit == "unknown":
            unit = ""
        if not unit:
            after = re.match(r"\s*(%|[a-z][a-z-]*)", clause[end:], re.I)
            unit = after.group(1).lower() if after else ""
        if any(s <= start < e for s, e, _, _ in out):
            continue
        out.append((start, end, float(number), unit))
    return sorted(out)


def _comparison(clause: str, start: int, end: int, value: float, unit: str, total: bool) -> Comparison | None:
    before, after = re.sub(r"(?:[$€£]|\b[A-Z]{3})\s*$", "", clause[:start].rstrip()), clause[end:]
    after = re.sub(r"^\s*(%|[a-z-]+)(?=\s+or\b|\s+and\b)", "", after, flags=re.I) if unit else after
    for pattern, op in _AFTER:
        if pattern.search(after):
            return Comparison(op=op, value=value, unit=unit, total=total)
    for pattern, op in _BEFORE:
        if pattern.search(before):
            return Comparison(op=op, value=value, unit=unit, total=total)
    return None


def declared_fields(text: str) -> dict[str, list[str]]:
    """The output fields a request declares, with their allowed values (empty: any)."""
    match = _FIELD_DECL.search(text)
    if match is None:
        return {}
    fields: dict[str, list[str]] = {}
    body = match.group("body")
    for item in re.finditer(r"([a-z][a-z0-9]*(?:_[a-z0-9]+)*)(?:\s*\(([^)]*)\))?", body):
        name, allowed = item.group(1), item.group(2)
        if name in {"and", "or", "the", "with", "fields", "field", "a", "an"}:
            continue
        values = [v.strip().strip('"') for v in re.split(r",|\bor\b", allowed or "") if v.strip()]
        fields[name] = values
    return fields


def _clauses(text: str) -> list[tuple[int, str]]:
    """Sentences and ;-separated clauses, with their offsets (a decimal point splits nothing)."""
    out = []
    for match in re.finditer(r"[^.;]+(?:\.(?=\d)[^.;]*)*[.;]?", text):
        clause = match.group(0)
        stripped = clause.strip()
        if stripped:
            out.append((match.start() + clause.index(stripped[0]), stripped.rstrip(".;")))
    return out


def _value(match: re.Match[str]) -> RuleValue:
    if match.group("quoted") is not None:
        return match.group("quoted")
    if "bare" in match.groupdict() and match.group("bare") is not None:
        return match.group("bare")
    word = match.group("word")
    if word is not None:
        return {"true": True, "false": False, "null": None}[word.lower()]
    return int(match.group("num"))


def _field_for(head: str, value: RuleValue, fields: dict[str, list[str]]) -> str | None:
    """The output field a value is given to: the one named nearest before it that may hold it (a
    verb of the field's name counts: "routed to"), else the one whose allowed values hold it."""
    named: list[tuple[int, str]] = []
    for name in fields:
        for match in re.finditer(
            rf"\b{re.escape(name)}|\b{re.escape(name.rstrip('e'))}(?:e[sd]|ing)\b", head, re.I
        ):
            named.append((match.start(), name))
    for _, name in sorted(named, reverse=True):
        allowed = fields[name]
        if not allowed or (isinstance(value, str) and value.lower() in {a.lower() for a in allowed}):
            return name
    return next(
        (
            f
            for f, allowed in fields.items()
            if isinstance(value, str) and value.lower() in {a.lower() for a in allowed}
        ),
        None,
    )


def _keywords(words: str, fields: dict[str, list[str]], subject: frozenset[str] = frozenset()) -> list[str]:
    """What a condition lists ("mentions a lawyer, legal action or a chargeback"): its items, each
    without function words; an item naming a category ("billing questions") by its modifier."""
    items = []
    for part in _LIST_SPLIT.split(words):
        tokens = []
        for word in (w.lower() for w in _WORD.findall(part)):
            # The condition ends where the clause turns to what happens ("... is escalated").
            if word in _COPULA:
                break
            tokens.append(word)
        tokens = [
            w
            for w in tokens
            if w not in _FUNCTION
            and w not in subject
            and not w.isdigit()
            # A form of a field's own name ("escalated" for escalate) says what happens, not when.
            and not any(w.startswith(f.split("_")[0].rstrip("e")) for f in fields)
        ]
        if tokens and 1 <= len(tokens) <= 4:
            items.append(" ".join(tokens))
    return list(dict.fromkeys(items))


def extract_requirements(text: str) -> tuple[dict[str, list[str]], list[Requirement]]:
    """The output fields a request declares and the requirements it states."""
    text = text[:MAX_CHARS]
    fields = declared_fields(text)
    declaration = _FIELD_DECL.search(text)
    total = bool(_TOTAL.search(text))
    # What the system handles ("purchase orders") is no condition: every input is one.
    first = _clauses(text)[0][1] if _clauses(text) else ""
    subject = frozenset(w.lower() for w in _WORD.findall(first.split(" that ", 1)[-1])) - _FUNCTION
    requirements: list[Requirement] = []
    for offset, clause in _clauses(text):
        if (
            declaration is not None
            and offset < declaration.end()
            and declaration.start() < offset + len(clause)
        ):
            continue
        named = [f for f in fields if re.search(rf"\b{re.escape(f)}\b", clause)]
        amounts = _amounts(clause)
        rules: list[Rule] = []
        cursor = 0
        bare = sorted({v for values in fields.values() for v in values if re.search(r"[\d_]", v)}, key=len)
        pattern = _VALUE
        if bare:
            alternatives = "|".join(re.escape(v) for v in reversed(bare))
            pattern = re.compile(_VALUE.pattern + rf'|(?<!["\w])(?P<bare>{alternatives})(?!["\w])')
        for value_match in pattern.finditer(clause):
            if any(s <= value_match.start() < e for s, e, _, _ in amounts):
                continue
            value = _value(value_match)
            field = _field_for(clause[: value_match.start()], value, fields)
            if field is None:
                continue
            segment = clause[cursor : value_match.start()]
            seg_start = cursor
            cursor = value_match.end()
            comparisons = [
                c
                for s, e, v, u in amounts
                if seg_start <= s < value_match.start()
                and (c := _comparison(clause, s, e, v, u, total and u in ("$", "EUR", "GBP", "€", "£")))
                is not None
            ]
            default = bool(_DEFAULT.search(segment))
            mentions = [] if comparisons or default else _keywords(segment, fields, subject)
            if rules and rules[-1].field != field and not comparisons and not default and not mentions:
                # "(decision "block", flag "secret")": assigned together, under the same condition.
                rules.append(rules[-1].model_copy(update={"field": field, "value": value}))
                continue
            rules.append(
                Rule(
                    field=field,
                    value=value,
                    when=comparisons[-1] if comparisons else None,
                    mentions=mentions,
                    default=default,
                )
            )
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
        targets = list(dict.fromkeys([*(r.field for r in rules), *named]))
        if not rules and not ((named and _COPY.search(clause)) or _TONE.search(clause)):
            if offset > 0 and (named or _MODAL.search(clause)):
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
                        why_not="no rule could be read from its words: it needs a model",
                    )
                )
            continue  # names no rule: a description, not a constraint
        previous = requirements[-1] if requirements else None
        if (
            previous is not None
            and rules
            and previous.rules
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
        requirements.append(
            Requirement(
                id=f"r{len(requirements) + 1}",
                kind=kind,
                text=clause,
                start=offset,
                end=offset + len(clause),
                fields=targets,
                rules=rules,
                buildable=buildable,
                why_not=why,
            )
        )
    if not fields:
        requirements = _verb_rules(text)
        fields = {field: [] for r in requirements for field in r.fields}
    return fields, requirements


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
            words = [w.lower() for w in _WORD.findall(clause[:start])]
            verbs = [w for w in words if w.endswith("s") and w not in _FUNCTION and len(w) > 3]
            target = re.match(r"\s*to\s+(?:a\s+|an\s+|the\s+)?([a-z]+)", clause[end:], re.I)
            said = clause[: end + target.end()] if target else clause[:end]
            if not verbs:
                continue
            verb_at = re.search(rf"\b{re.escape(verbs[0])}\b", said, re.I)
            said = said[verb_at.start() :] if verb_at else said
            verb = verbs[0][:-2] if verbs[0].endswith("es") and verbs[0][-3] in "sxz" else verbs[0][:-1]
            field = f"{verb}_to" if target else verb
            value_given: RuleValue = target.group(1).lower().replace(" ", "_") if target else True
            offset = match.start() + clause.find(said.strip())
            requirements.append(
                Requirement(
                    id=f"r{len(requirements) + 1}",
                    kind="escalation" if verb.startswith("escalat") else "threshold",
                    text=said.strip(),
                    start=offset,
                    end=offset + len(said.strip()),
                    fields=[field],
                    rules=[
                        Rule(field=field, value=value_given, when=comparison),
                        Rule(field=field, value=None if target else False, default=True),
                    ],
                )
            )
    return requirements


def _kind_of(
    clause: str, rules: list[Rule], fields: dict[str, list[str]] | None = None
) -> tuple[RequirementKind, bool, str | None]:
    if _TONE.search(clause) and not rules:
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
    if _DATE_MATH.search(clause):
        return (
            kind,
            False,
            "a rule on the time between dates needs a model (or a date tool) to read the dates",
        )
    conditional = [r for r in rules if not r.default]
    if not conditional or not all(r.when is not None or r.mentions for r in conditional):
        return kind, False, "no condition could be read for each of its values"
    decided = {v.lower() for values in (fields or {}).values() for v in values}
    for rule in conditional:
        words = {w for item in rule.mentions for w in item.split()}
        if words & decided:
            return kind, False, "a condition on another decision of the answer needs a model"
        if words & {"never", "not", "no", "without", "none"}:
            return kind, False, "a negated condition needs a model to judge"
    negated = [r for r in conditional if r.when is None and _NEGATED.search(clause)]
    if negated and len(negated) == len(conditional):
        return kind, False, "a negated condition needs a model to judge"
    return kind, True, None
