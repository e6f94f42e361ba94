"""Numbers as customers write them, read as digits: "fifteen thousand dollars" is "$15000", "thirty-six"
is "36", "1.5k" is "1500", "two and a half grand" is "$2500", "€2.000,50" is "€2000.50".

A built system's SQL reads amounts with regular expressions over digits. A saved query that writes
``%(<parameter>_in_digits)s`` (``digits_parameter``) gets, at each call, that parameter's text with
every number spelled in words or with a scale suffix rewritten in digits, and every day and clock
time in ISO (``input_digits``); the other
parameters are bound as written, so what the input says stays quoted as it was.

The reading is Duckling's ("number" and "amount-of-money" dimensions), with what it leaves unread
written the way it reads it first: decimals in the European style (by Babel's German-locale parser),
a fraction joined to a number ("two and a half", "half a million") and the slang scale "grand".
A span Duckling reads is rewritten only when its digits, read plainly, do not already say its value
("15K", "fifteen"): digits as written are never touched, nor an identifier ("L5", "BA0287").
"""

from __future__ import annotations

import difflib
import functools
import re
from collections.abc import Mapping
from decimal import Decimal, InvalidOperation
from typing import Any

from master_agent.capabilities.rates import PER_PARAMETER, per_period
from master_agent.capabilities.terms import duckling_parse

#: The bound parameter's name for the digits reading of the query parameter ``name``.
DIGITS_SUFFIX = "_in_digits"
_DIGITS_PARAMETER = re.compile(r"%\((\w+)" + DIGITS_SUFFIX + r"\)s")
#: Characters read at most (Duckling's cost grows with the text).
MAX_CHARS = 5000

#: "2.000,50", "1.250.000": dots grouping thousands with a comma before the decimals, or grouping
#: twice (unambiguous: a US-style number never groups with dots; "2.000" alone may be two). "12,50 €", "€25,00": a comma before two decimals, by the euro.
_EUROPEAN = re.compile(
    r"(?<![\d.,])\d{1,3}(?:(?:\.\d{3}){2,}(?:,\d+)?|\.\d{3},\d+)(?![\d.,]*\d)"
    r"|(?<![\d.,])\d+,\d{1,2}(?=\s*(?:€|EUR\b|euros?\b))"
    r"|(?:(?<=€)|(?<=€ )|(?<=EUR ))\d+,\d{1,2}(?![\d,])"
)
#: A fraction joined to the number before it ("two and a half", "3 and a quarter") or leading one
#: ("half a million", "a quarter of a million").
_JOINED = re.compile(r"^\s+and\s+(?:a|one)\s+(half|quarter)\b|^\s+and\s+three\s+quarters\b", re.I)
_LEADING = re.compile(
    r"\b(?:a\s+|one\s+)?(half|quarter)\s+(?:of\s+)?an?\s+(?=(?:thousand|million|billion)\b)", re.I
)
_FRACTIONS = {"half": Decimal("0.5"), "quarter": Decimal("0.25")}
#: "two grand", "2.5 grand": a thousand of the text's money (dollars when it names none), the slang
#: Duckling does not know (after a number, never a "grand total").
_GRAND = re.compile(r"^\s+grand\b(?!\s+total)", re.I)
#: "under a grand": one thousand, where a comparison or a price stands before it or no noun follows it
#: ("a grand total", "a grand piano" are no money).
_A_GRAND = re.compile(
    r"(?P<before>\b(?:over|under|above|below|than|about|around|nearly|almost|least|most|exceeds|exceeding"
    r"|costs|costing|cost|pays|paid|for|of|to)\s+)a\s+grand\b(?!\s+total)"
    r"|\ba\s+grand\b(?=\s*(?:[^\w\s]|$)|\s+(?:or|and|in|per|each|is|are|was|to|for|on|at|then)\b)",
    re.I,
)
#: "fifty percent", "12 per cent": the sign the readers look for.
_PERCENT = re.compile(r"(?<=[0-9])\s*(?:per\s*cent|pct)\b", re.I)
#: A number with a one-letter suffix other than "k": "05m" is minutes (or metres) more often than millions,
#: "5G" a network; a sum of money says "£3.4m" with its currency.
_UNIT_LETTER = re.compile(r"[0-9]\s*[A-JL-Za-jl-z]$")
#: A letter run straight into a digit: an identifier ("L5", "BA0287"), never a number to rewrite.
_IDENTIFIER = re.compile(r"[A-Za-z][0-9]")
_SYMBOLS = (("GBP", "£"), ("£", "£"), ("EUR", "€"), ("€", "€"), ("USD", "$"), ("$", "$"))


def digits_parameter(name: str) -> str:
    """The SQL placeholder of ``name``'s text with its numbers in digits (bound at each call)."""
    return f"%({name}{DIGITS_SUFFIX})s"


def digits_read(sql: str) -> list[str]:
    """The parameters whose digits reading ``sql`` asks for."""
    return sorted(set(_DIGITS_PARAMETER.findall(sql)))


def with_digits(sql: str, parameters: Mapping[str, Any]) -> dict[str, Any]:
    """``parameters`` with the digits reading of each one ``sql`` asks for bound beside it."""
    read = {}
    for name in digits_read(sql):
        # "ticket_per_year": the parameter "ticket" with its amounts per a period read per year.
        per = PER_PARAMETER.match(name) if name not in parameters else None
        text = input_digits(str(parameters.get(per.group("name") if per else name) or ""))
        read[f"{name}{DIGITS_SUFFIX}"] = per_period(text, per.group("period")) if per else text
    return {**parameters, **read}


def input_digits(text: str) -> str:
    """An input as a built system's SQL reads it: its days and clock times in ISO ("5th Nov 2024" is
    "2024-11-05", ``dates.in_iso_dates``), then its numbers in digits (``in_digits``)."""
    from master_agent.capabilities.dates import in_iso_dates

    return in_digits(in_iso_dates(text))


def plain(value: Decimal | float) -> str:
    """A number in plain digits: no grouping, no exponent, no trailing zeros ("2500", "2000.5")."""
    number = Decimal(str(value)).normalize()
    text = format(number, "f")
    return "0" if text in ("-0", "") else text


def _european(text: str) -> str:
    from babel.numbers import NumberFormatError, parse_decimal

    def read(match: re.Match[str]) -> str:
        try:
            return plain(parse_decimal(match.group(0), locale="de_DE", strict=True))
        except (NumberFormatError, InvalidOperation):
            return match.group(0)

    return _EUROPEAN.sub(read, text)


def _spans(text: str, dimensions: tuple[str, ...]) -> list[tuple[int, int, Decimal, str, str]]:
    """(start, end, value, dimension, unit) of what Duckling reads, the longest of overlapping ones."""
    out: list[tuple[int, int, Decimal, str, str]] = []
    found = duckling_parse(text, dimensions)
    for item in sorted(found, key=lambda f: (int(f["start"]), -int(f["end"]))):
        said = item["value"]
        ends = [end for end in (said.get("from"), said.get("to")) if end]
        if said.get("type") == "interval" and len(ends) == 1 and ends[0].get("unit") not in (None, "unknown"):
            # "over two hundred and fifty pounds": one bound of money, the amount said. Without a
            # currency Duckling's bounds are unreliable ("at least fifteen thousand" also reads 25).
            said = ends[0]
        value = said.get("value")
        if not isinstance(value, int | float) or isinstance(value, bool):
            continue
        start, end = int(item["start"]), int(item["end"])
        if out and start < out[-1][1]:
            continue
        out.append((start, end, Decimal(str(value)), str(item["dim"]), str(said.get("unit") or "")))
    return out


def _fractions(text: str) -> str:
    text = _LEADING.sub(lambda m: f"{plain(_FRACTIONS[m.group(1).lower()])} ", text)
    for start, end, value, _, _ in reversed(_spans(text, ("number",))):
        joined = _JOINED.match(text[end:])
        if joined is None or _IDENTIFIER.search(text[start:end]):
            continue
        part = _FRACTIONS[joined.group(1).lower()] if joined.group(1) else Decimal("0.75")
        text = text[:start] + plain(value + part) + text[end + joined.end() :]
    return text


#: The money a text talks in, by the signs and names it writes ("grand" is a thousand of it).
_MONEY_SAID = (
    ("euros", re.compile(r"€|\bEUR\b|\beuros?\b", re.I)),
    ("pounds", re.compile(r"£|\bGBP\b|\bpounds?\b", re.I)),
    ("dollars", re.compile(r"\$|\bUSD\b|\bdollars?\b", re.I)),
)


def _grand(text: str) -> str:
    said = [(len(pattern.findall(text)), -rank, name) for rank, (name, pattern) in enumerate(_MONEY_SAID)]
    count, _, money = max(said)
    money = money if count else "dollars"
    for _, end, _, _, _ in reversed(_spans(text, ("number",))):
        if (found := _GRAND.match(text[end:])) is not None:
            text = text[:end] + f" thousand {money}" + text[end + found.end() :]
    return _A_GRAND.sub(lambda found: f"{found.group('before') or ''}1 thousand {money}", text)


_LEAD = re.compile(r"([A-Za-z]{2,})\s+")


def number_start(text: str, start: int, end: int) -> int:
    """Where a span's number starts: after the words Duckling takes in with it that are no number
    ("about 2.5 thousand dollars", "over fifteen thousand dollars"); they stay written."""
    while (lead := _LEAD.match(text, start, end)) is not None and not duckling_parse(
        lead.group(1), ("number",)
    ):
        start = lead.end()
    return start


def _written_plainly(span: str, value: Decimal) -> bool:
    """The span's own digits already say its value ("$1,250.75", "12000", "USD 300")."""
    runs = re.findall(r"[0-9][0-9,]*(?:\.[0-9]+)?", span)
    if len(runs) != 1:
        return False
    try:
        return Decimal(runs[0].replace(",", "")) == value
    except InvalidOperation:
        return False


def _symbol(unit: str) -> str | None:
    return next((symbol for code, symbol in _SYMBOLS if code in unit), None)


@functools.lru_cache(maxsize=4096)
def in_digits(text: str) -> str:
    """``text`` with each number written in words, with a scale suffix or in the European style
    rewritten in plain digits (an amount of money with its currency sign first: "$15000"); the rest
    of the text as it was."""
    text = text[:MAX_CHARS]
    text = _european(text)
    text = _fractions(text)
    text = _grand(text)
    for first, end, value, dimension, unit in reversed(_spans(text, ("amount-of-money", "number"))):
        start = number_start(text, first, end)
        span = text[start:end]
        # Digits and signs alone are as written ("2025-03-24" holds no "-3").
        if not re.search(r"[A-Za-z]", span) or _IDENTIFIER.search(span) or _written_plainly(span, value):
            continue
        if dimension == "number" and _UNIT_LETTER.search(span):
            continue
        if dimension == "amount-of-money":
            symbol = _symbol(unit)
            if symbol is None:
                # A currency Duckling names no code for ("750 bucks"): its number, its own last word.
                last = re.search(r"([A-Za-z]+)\s*$", span)
                said = f"{plain(value)} {last.group(1)}" if last else plain(value)
            else:
                said = f"{symbol}{plain(value)}"
        else:
            said = plain(value)
        text = text[:start] + said + text[end:]
    return _PERCENT.sub("%", text)


def written_span(text: str, read: str, start: int, end: int) -> tuple[int, int]:
    """Where the span ``start:end`` of ``read`` (``in_digits(text)``) stands in ``text`` as written:
    "£250" in "over £250" is "two hundred and fifty pounds" in the request, so a rule's trace and the
    words around its number stay the request's own."""
    opcodes = difflib.SequenceMatcher(None, text, read, autojunk=False).get_opcodes()

    def at(position: int, closing: bool) -> int:
        for tag, i1, i2, j1, j2 in opcodes:
            inside = j1 < position <= j2 if closing else j1 <= position < j2
            if inside:
                # Inside a rewritten stretch its whole words as written; else the same character.
                return (i2 if closing else i1) if tag != "equal" else i1 + position - j1
        return len(text) if closing else 0

    first, last = at(start, False), at(end, True)
    # Characters the two writings share inside a number ("1.5k" and "1500" share "1" and "5") leave
    # its ends mid-word: the span is the whole words.
    while first < last and text[first].isspace():
        first += 1
    while first > 0 and (
        text[first - 1].isalnum() or (text[first - 1] in ".," and text[first - 2 : first - 1].isdigit())
    ):
        first -= 1
    while last < len(text) and text[last].isalnum():
        last += 1
    return first, last


_ONES = [
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
    "fifteen",
    "sixteen",
    "seventeen",
    "eighteen",
    "nineteen",
]
_TENS = ["_", "_", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"]
_SCALES = ((10**9, "billion"), (10**6, "million"), (10**3, "thousand"), (100, "hundred"))


def number_words(number: int) -> str:
    """A whole number in English words ("thirty-six", "fifteen thousand two hundred"): what an
    evaluation case writes to test that a system reads numbers so written."""
    if number < 0:
        return f"minus {number_words(-number)}"
    if number < 20:
        return _ONES[number]
    if number < 100:
        tens, ones = divmod(number, 10)
        return _TENS[tens] + (f"-{_ONES[ones]}" if ones else "")
    for scale, name in _SCALES:
        if number >= scale:
            high, rest = divmod(number, scale)
            said = f"{number_words(high)} {name}"
            return f"{said} {number_words(rest)}" if rest else said
    raise AssertionError("unreachable")  # pragma: no cover
