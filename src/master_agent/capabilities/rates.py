"""Amounts written per a period of time ("$8,500/mo", "95k per year", "£400 a week", "€30 daily") read
per another period: a rule on an "annual value" compares a monthly price times 12.

The periods are the calendar's: a year is 12 months, 4 quarters, 26 fortnights, 52 weeks or 365 days.
An amount the input writes with no period is taken as per the rule's own.
"""

from __future__ import annotations

import re
from decimal import Decimal

#: How many of each period a year holds.
PER_YEAR: dict[str, int] = {"year": 1, "quarter": 4, "month": 12, "fortnight": 26, "week": 52, "day": 365}

#: The words a period is written in after "/", "per", "a" or "every" ("/mo", "per annum", "a month").
_NOUNS = {
    "year": r"years?|yrs?|annum",
    "quarter": r"quarters?|qtrs?",
    "month": r"months?|mos?|mths?",
    "fortnight": r"fortnights?",
    "week": r"weeks?|wks?",
    "day": r"days?",
}
#: The words a period is written in straight after an amount ("30 daily", "£1,200 pcm", "40k p.a.").
_ADVERBS = {
    "year": r"annually|yearly|p\.a\.|pa",
    "quarter": r"quarterly",
    "month": r"monthly|pcm",
    "fortnight": r"fortnightly",
    "week": r"weekly",
    "day": r"daily",
}
#: The adjective a request names a rate by ("the annual value", "a monthly budget").
_ADJECTIVES = {
    "year": r"annual|yearly|annualised|annualized",
    "quarter": r"quarterly",
    "month": r"monthly",
    "fortnight": r"fortnightly",
    "week": r"weekly",
    "day": r"daily",
}


def _either(words: dict[str, str], suffix: str = "") -> str:
    return "|".join(f"(?P<{name}{suffix}>{said})" for name, said in words.items())


_SPLIT = r"(?:\s*/\s*|\s+(?:per|a|an|each|every)\s+)"
#: An amount and the period after it: "$8,500/mo", "95000 per year", "$400 a week", "30 daily".
_RATE = re.compile(
    r"(?P<amount>[0-9][0-9,]*(?:\.[0-9]+)?)(?P<tail>\s*(?:(?-i:[A-Z]{3})\b|dollars?|euros?|pounds?)?)"
    rf"(?:{_SPLIT}(?:{_either(_NOUNS)})|\s+(?:{_either(_ADVERBS, '_')}))(?![A-Za-z])",
    re.I,
)
_NAMED = re.compile(rf"\b(?:{_either(_ADJECTIVES)})\b", re.I)
_AFTER = re.compile(rf"\s*(?:or\s+\w+)?{_SPLIT}(?:{_either(_NOUNS)})(?![A-Za-z])", re.I)


def period_named(before: str, after: str) -> str | None:
    """The period a request says an amount is per: by the words after it ("$3,000 a month or more",
    "over 100k per year"), else by its quantity's adjective before it ("the annual value is ...")."""
    found = _AFTER.match(after) or _NAMED.search(before)
    return found.lastgroup if found is not None else None


def names_a_period(text: str) -> bool:
    """Whether ``text`` says an amount per a period ("a monthly price times 12", "quoted per month")."""
    return bool(_NAMED.search(text) or re.search(rf"{_SPLIT}(?:{_either(_NOUNS)})(?![A-Za-z])", text, re.I))


def per_period(text: str, period: str) -> str:
    """``text`` (numbers already in digits) with each amount written per a period rewritten as its
    amount per ``period`` ("$8500/mo" per year is "$102000"), to the cent."""
    target = PER_YEAR[period]

    def converted(found: re.Match[str]) -> str:
        written = PER_YEAR[(found.lastgroup or period).rstrip("_")]
        amount = Decimal(found.group("amount").replace(",", "")) * written / target
        plain = format(amount.quantize(Decimal("0.01")).normalize(), "f")
        return f"{plain}{found.group('tail')}"

    return _RATE.sub(converted, text)


#: A query parameter's name for its text read per a period (``per_parameter``): "ticket_per_year".
PER_PARAMETER = re.compile(r"^(?P<name>\w+?)_per_(?P<period>" + "|".join(PER_YEAR) + r")$")


def per_parameter(name: str, period: str) -> str:
    """The name a saved query binds ``name``'s text under with its amounts per ``period``."""
    return f"{name}_per_{period}"
