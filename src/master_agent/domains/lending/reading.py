"""What a customer's message states, read as the answer to what the stage asked.

Formats are read by rules (a mobile number, a PAN, a date of birth); sums and tenures by Duckling
(the rule-based parser ``capabilities.terms`` uses for time, here its number, money and duration
dimensions: "4.5 lakh", "1.2 crore", "50k", "Rs 85,000", "two lakh", "2 years and 6 months").
Indian digit grouping ("2,50,000") is joined first: Duckling reads only groups of three.

A sum goes where the words put it ("my salary is 70,000 a month" is a salary, whatever the stage),
else to the field the stage asks for (``StageSpec.asks``): a salary at verification, the
amount at sales. Loan terms stated where none were asked, differing from the terms already offered,
are read as the new terms when their own words say so (a tenure, the loan named, a change said: "make
it 4.5 lakh", "2 lakh over 2 years"); a bare sum is kept aside (``pending_change``) and confirmed
before it replaces the offered amount.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from datetime import date
from typing import Any, Literal

from master_agent.capabilities.terms import duckling_parse, duckling_parse_time, verb_direction
from master_agent.domains.lending.history import (
    Difference,
    asked_before,
    difference,
    directions,
    names_an_existing_loan,
)
from master_agent.domains.lending.letters import rupees
from master_agent.domains.lending.records import LoanConversation
from master_agent.domains.lending.rules import (
    AMOUNT_RANGE,
    TENURE_MONTHS,
    Application,
    emi,
    largest_principal,
)
from master_agent.domains.lending.tense import (
    adjective_only,
    past_form,
    past_times,
    said_of_the_past,
    written_years,
)
from master_agent.workflows import MessageReading

#: A mobile number, written whole or in the groups people say it in ("90000 00001", "900-000-0001").
_PHONE = re.compile(
    r"(?<![\d₹.,])(?:\+?91[\s-]?|0)?([6-9]\d{9}|[6-9]\d{4}[\s-]\d{5}|[6-9]\d{2}[\s-]\d{3}[\s-]\d{4})(?![\d,.]\d|\d)"
)
_PAN = re.compile(r"\b([A-Za-z]{5}\d{4}[A-Za-z])\b")
_ISO_DATE = re.compile(r"\b(19\d{2}|20\d{2})[-/.](\d{1,2})[-/.](\d{1,2})\b")
_DMY_DATE = re.compile(r"\b(\d{1,2})[/.-](\d{1,2})[/.-](19\d{2}|20\d{2})\b")
#: "2,50,000" and "12,00,000" (lakh grouping) and "250,000": one number.
_GROUPED = re.compile(r"\b\d{1,3}(?:,\d{2})*,\d{3}\b")
#: "instead of 5 lakh", "not 60 months": the value being replaced, not the one asked.
_REPLACED = re.compile(r"\b(?:instead\s+of|rather\s+than|not|from|than)\s*(?:₹|rs\.?|inr)?\s*$", re.I)
#: A year as written in a date of birth: the body of a written date must have one ("November 15,
#: 1976"; "March 9th" alone is no date of birth).
_YEAR = re.compile(r"\b(?:19|20)\d{2}\b")
_SCALE_THEN_TENURE = re.compile(
    r"\b(lakhs?|lacs?|crores?|cr|thousand|hundred|\d+k)\s(?=(?:\d+(?:\.\d+)?|(?:[a-z]+[\s-]+){0,2})\s*"
    r"(?:years?|yrs?|months?|mos?)\b)",
    re.I,
)
_FRACTION_OF_YEARS = re.compile(r"\b(\d+\.\d+)\s*(?:years?|yrs?)\b", re.I)
_AFTER_A_SUM = re.compile(
    r"(?:\d\s*k|\d|\blakhs?|\blacs?|\bcrores?|\bcr|\bthousand|\brupees|\brs\.?|\binr)\W*$|\b(?:per|every|each)\s*$",
    re.I,
)
#: A sum said to be the EMI: "EMI under 10k", "an instalment of at most Rs 9,000", "a 10k EMI" (not
#: "what EMI would I pay on 4 lakh": there the sum is the loan).
_EMI_BEFORE = re.compile(
    r"\b(?:emis?|instal+ments?)\s+(?:(?:of|under|below|around|about|max(?:imum)?|up\s*to|upto|within|less|"
    r"than|is|be|at|most|should|must|not|more|exceed(?:ing)?|only|approx\w*|roughly|near|rs\.?|inr|₹)\s*){0,4}$",
    re.I,
)
_EMI_AFTER = re.compile(
    r"\s*(?:a\s+month\s+)?(?:(?!(?:for|over|with|and|or|in|at|to)\b)[a-z]+\s+){0,2}(?:emis?|instal+ments?)\b",
    re.I,
)
#: A tenure said without a number ("for a year", "over a couple of years", "paid off in a year").
_TENURE_WORDS = re.compile(
    r"\b(?:for|over|within|tenure(?:\s+of)?|period(?:\s+of)?|repay\w*\s+(?:in|over)|"
    r"(?:pa(?:y|id)|clear(?:ed)?|clos(?:e|ed))\s+(?:it\s+)?(?:off\s+|back\s+)?(?:in|within|over))\s*$",
    re.I,
)
#: A clause in the present perfect ("I've banked with you for", "I have worked there for", "been a
#: customer for"): a length after it is how long something has lasted, not a tenure asked for.
_PAST_STATE = re.compile(
    r"\b(?:i'?ve|i\s+have|we'?ve|we\s+have|has|have)\s+(?:been|known|had|held|\w+ed)\b", re.I
)
#: A quantity said with a fraction of its unit, which Duckling reads as the unit alone or the fraction
#: alone ("a lakh and a half" is 1,00,000 to it, "two and a half lakh" a count and a lakh, "one and a
#: half years" half a year): the whole, the fraction and the unit, said in any of three orders ("two
#: and a half years", "a year and a half", "1 1/2 years", "2½ lakh").
_UNITS = r"lakhs?|lacs?|crores?|thousand|years?|yrs?|months?|mos?"
_FRACTION_WORD = r"half|quarter|three[\s-]quarters?"
_SPOKEN_FRACTION = re.compile(
    rf"\b(?:(?P<whole>an?|\d+(?:\.\d+)?|[a-z]+)\s+and\s+(?:an?\s+)?(?P<fraction>{_FRACTION_WORD})\s+(?P<unit>{_UNITS})"
    rf"|(?P<one>an?|one|\d+|[a-z]+)\s+(?P<unit_first>{_UNITS})\s+and\s+(?:an?\s+)?(?P<fraction_last>{_FRACTION_WORD})"
    rf"|(?P<digits>\d+)\s*(?P<vulgar>½|¼|¾|\s1/2|\s1/4|\s3/4)\s*(?P<unit_vulgar>{_UNITS}))\b",
    re.I,
)
_SCALES = {"lakh": 1e5, "lac": 1e5, "crore": 1e7, "cr": 1e7, "thousand": 1e3}
#: Units of a tenure, in months.
_TENURE_UNITS = {"year": 12, "yr": 12, "month": 1, "mo": 1}
_FRACTIONS = {"half": 0.5, "quarter": 0.25, "three quarter": 0.75, "½": 0.5, "¼": 0.25, "¾": 0.75}
_FRACTIONS.update({"1/2": 0.5, "1/4": 0.25, "3/4": 0.75})
#: Words besides the sum that a short answer to "what is your salary?" has at most ("about 60,000",
#: "around 45k I think"); a longer message stating a bare sum tells of something else ("I paid 2000
#: for dinner yesterday"), so the sum is confirmed before it is taken as the salary.
ANSWER_WORDS = 3
#: Matched at the sum's end (``Pattern.match(text, pos)``: no "^", which would hold only at the text's start).
_PERCENT = re.compile(r"\s*(?:%|percent\b|per\s*cent\b|pc\b)", re.I)
#: Words that make a sum a monthly income rather than a principal.
_INCOME = re.compile(
    r"\b(salary|salaried|earn\w*|income|take[\s-]?home|in[\s-]?hand|net(?:\s+pay)?|gross|ctc|package|draws?|drawing)\b",
    re.I,
)
_PER_YEAR = re.compile(
    r"^\W*(?:a|per|each|every)\s+(?:year|annum)\b|^\W*(?:yearly|annually|p\.?a\.?)(?!\w)|^\s*/\s*year", re.I
)
#: The lower bound of a range said before a sum ("3 to", "3-", "3 or", "between 3 and").
_RANGE_FROM = re.compile(r"(?<![\d.])(\d+(?:\.\d+)?)\s*(?:-|–|to|or)\s*(?:₹|rs\.?|inr)?\s*$", re.I)
#: "one more change", "one thing": a count said as the word one is no tenure or amount.
_ONE_WORD = re.compile(r"(?i:one|a|an)")
_PER_MONTH = re.compile(r"^\W*(?:a|per|each|every)\s+month\b|^\W*(?:monthly|pm|p\.m\.)\b|^\s*/\s*month", re.I)
#: A loan named, or a sum asked for with a verb of wanting: a personal-loan request.
_LOAN = re.compile(r"\b(loan|borrow\w*|financ\w*|funds?|money|credit|emi)\b", re.I)
_WANT = re.compile(r"\b(want|need|like|looking|require|get|apply|take)\b", re.I)
#: The customer says the new terms replace the ones offered.
_CHANGE = re.compile(
    r"\b(make it|change|changed|instead|rather|revise|increase|reduce|lower|raise|update|modify|switch|"
    r"actually|can it be|how about|what about)\b",
    re.I,
)
#: A message that asks whether something is so ("... right?", "is it for 5 lakh", "just to check").
_ASKING = re.compile(
    r"\?|\b(?:right|correct|isn'?t\s+it|no)\W*$|^\W*(?:just\s+)?(?:to\s+)?(?:check|confirm)(?:ing)?\b|"
    r"^\W*(?:is|are|was|does|do|did|will|would|what|which|how)\b",
    re.I,
)
#: The customer keeps the terms offered ("Keep 60", "stick with 5 lakh").
_KEEP = re.compile(r"\b(?:keep|stick\s+(?:to|with)|stay\s+(?:with|at)|retain|leave\s+it\s+at)\b", re.I)
#: A question about terms other than the offer's, asked to compare, not to change them ("what would
#: the EMI be if I did 36 months?", "suppose I took 5 years").
_WHAT_IF = re.compile(r"\bwhat\s+(?:would|will|if)\b|\bif\s+i\b|\bsuppose\b|\bhow\s+much\s+would\b", re.I)
#: The customer corrects what they said ("sorry, typo - I meant 4.5 lakh, not 3.5"): a change, unless the
#: message asks ("I mean, is 7.5 lakh possible?").
_CORRECTION = re.compile(r"\b(?:i\s+meant|i\s+mean|typo|mistake|correction)\b", re.I)
_YES = re.compile(
    r"^\W*(yes|yeah|yep|yup|sure|ok|okay|please|go ahead|proceed|confirm\w*|correct|right|i do|"
    r"i would|absolutely|definitely|of course|y)\b",
    re.I,
)
_NO = re.compile(r"^\W*(no|nope|nah|not now|cancel|keep|don'?t)\b", re.I)
#: Words of a loan conversation: a message with none of them (and stating nothing) is out of scope.
_DOMAIN = re.compile(
    r"\b(loans?|emi|interest|rate|amount|tenure|months?|years?|pan|dob|birth|salary|slip|documents?|"
    r"verif\w*|sanction\w*|apply|applying|application|eligib\w*|limit|offer|yes|yeah|no|ok|okay|sure|hi|"
    r"hello|hey|thanks?|thank you|proceed|continue|go ahead|help|borrow|mobile|number|phone|details?|"
    r"letter|approved?|status|lakhs?|rupees|pay|pay\s*slips?|repay\w*|upload\w*|attached|sent|done)\b",
    re.I,
)
#: The smallest sum read as money (a loan starts at 10,000; "3" is a count, not rupees).
MIN_SUM = 1000.0
TERMS = ("loan_details.amount", "loan_details.tenure_months")
#: A tenure longer than this (100 years) is a misreading, not a loan term.
MAX_TENURE_READ = 1200


#: What a sum is in its sentence: the loan asked for (the object of a request: "I need 3 lakh", "make
#: it 3.5 lacs", "the amount is 4 lakh"), a bare figure with nothing said of it ("about 3 lakh", the
#: answer to what the stage asks), an income, or a figure said of something else (a rent, a price, a
#: pension, a flat's worth, a pincode): never a loan term.
Role = Literal["loan", "bare", "income", "other", "past", "past_ask", "emi"]


@dataclass(frozen=True)
class Sum:
    value: float
    start: int
    end: int
    role: Role

    @property
    def income(self) -> bool:
        return self.role == "income"

    @property
    def principal(self) -> bool:
        """The loan, or a bare figure the stage's question may make the loan."""
        return self.role in ("loan", "bare")


@dataclass(frozen=True)
class Range:
    """Two bounds said for one amount ("between 3 and 4 lakh", "10-12 lakh"): not a request to guess
    from, the customer is asked which."""

    low: float
    high: float
    start: int
    end: int


#: Digits Duckling reads in one run: a crore written out is 8 (its rules slow on long runs).
_LONG_DIGITS = 10
_DIMENSIONS = ("number", "amount-of-money", "duration")


#: Units of a tenure in Hindi (and Hinglish spellings) after a number, as English words of the same
#: length, so every position read stays where the customer said it.
_HINDI_UNIT_WORDS = {
    "saal": "year",
    "sal": "yrs",
    "varsh": "years",
    "baras": "years",
    "mahine": "months",
    "mahina": "month ",
    "mahino": "months",
    "mahinon": "months ",
}
_HINDI_UNITS = re.compile(r"(?<=\d )(?:" + "|".join(_HINDI_UNIT_WORDS) + r")\b", re.I)


def _mask(text: str, *patterns: re.Pattern[str]) -> str:
    for pattern in patterns:
        text = pattern.sub(lambda match: " " * len(match.group(0)), text)
    return text


def _mask_spans(text: str, spans: list[tuple[int, int]]) -> str:
    for start, end in spans:
        text = text[:start] + " " * (end - start) + text[end:]
    return text


def _written_dates(text: str) -> list[tuple[int, int, date]]:
    """Days written with their month named, in any order ("November 15, 1976", "15th of Nov 1976",
    "on 3rd March, 1985"), read by Duckling's time dimension: each one's span and day. Numeric dates
    are read by ``_ISO_DATE`` and ``_DMY_DATE`` (day first, as customers here write them; Duckling
    reads "09/03/1991" month first)."""
    found = []
    for item in duckling_parse_time(text):
        value = item.get("value") or {}
        body = str(item.get("body", ""))
        if value.get("grain") != "day" or not _YEAR.search(body) or not re.search(r"[A-Za-z]{3}", body):
            continue
        try:
            day = date.fromisoformat(str(value.get("value", ""))[:10])
        except ValueError:
            continue
        found.append((int(item["start"]), int(item["end"]), day))
    return found


def _join_groups(text: str) -> str:
    # Same length, so spans still point into the text: the commas become leading zeros' room.
    return _GROUPED.sub(lambda match: match.group(0).replace(",", "").rjust(len(match.group(0))), text)


def _spoken_fractions(text: str) -> list[dict[str, Any]]:
    """Quantities said with a fraction of their unit, as Duckling's items: a sum ("a lakh and a half")
    as a number, a tenure ("two and a half years", "a year and a half") as a duration in months."""
    found = []
    for match in _SPOKEN_FRACTION.finditer(text):
        unit = (match.group("unit") or match.group("unit_first") or match.group("unit_vulgar")).lower()
        fraction_text = match.group("fraction") or match.group("fraction_last") or match.group("vulgar")
        fraction = _FRACTIONS[re.sub(r"[\s-]+", " ", fraction_text.strip().lower()).removesuffix("s")]
        whole_text = (match.group("whole") or match.group("one") or match.group("digits")).lower()
        if whole_text in ("a", "an", "one"):
            whole = 1.0
        elif re.fullmatch(r"\d+(?:\.\d+)?", whole_text):
            whole = float(whole_text)
        else:
            numbers = [item for item in duckling_parse(whole_text, ("number",)) if item["body"] == whole_text]
            if not numbers:
                continue
            whole = float(numbers[0]["value"]["value"])
        item: dict[str, Any] = {"body": match.group(0), "start": match.start(), "end": match.end()}
        months = next((size for name, size in _TENURE_UNITS.items() if unit.startswith(name)), None)
        if months is not None:
            total = round((whole + fraction) * months)
            value = {"type": "value", "value": total, "unit": "month", "month": total}
            found.append({**item, "dim": "duration", "value": value})
        else:
            scale = _SCALES[unit.rstrip("s")]
            found.append(
                {**item, "dim": "number", "value": {"type": "value", "value": (whole + fraction) * scale}}
            )
    return found


def read_terms(text: str) -> tuple[list[Sum], int | None, list[float], list[Range]]:
    """The sums ``text`` states (each with its role in its sentence, the last stated first), the
    tenure in months it states, any bare small counts (a tenure said without its unit: "36") and the
    ranges said for one amount."""
    masked = _join_groups(
        _mask_spans(
            _mask(text[:600], _PHONE, _PAN, _ISO_DATE, _DMY_DATE, re.compile(r"\d{9,}")),
            [(start, end) for start, end, _ in _written_dates(text[:600])],
        )
    )
    # Past times ("last year", "in 2023") mark clauses of history; a year said is a time, not a sum.
    times = past_times(masked)
    masked = _mask_spans(masked, written_years(masked))
    # Hindi units of a tenure ("3 saal", "24 mahine") as Duckling's English ones, of the same length.
    masked = _HINDI_UNITS.sub(lambda match: _HINDI_UNIT_WORDS[match.group(0).lower()], masked)
    # Duckling adds a count to the sum before it ("4 lakh 36 months" is 400,036 months): a break.
    masked = _SCALE_THEN_TENURE.sub(lambda match: match.group(1) + ";", masked)
    # Duckling reads "1.5 years" as "5 years": a fraction of a year is read here, in months.
    fractions = list(_FRACTION_OF_YEARS.finditer(masked))
    masked = _mask(masked, _FRACTION_OF_YEARS)
    spoken = _spoken_fractions(masked)
    masked_spoken = masked
    for item in spoken:
        masked_spoken = (
            masked_spoken[: item["start"]]
            + " " * (item["end"] - item["start"])
            + masked_spoken[item["end"] :]
        )
    found = [*duckling_parse(masked_spoken, _DIMENSIONS, long_digits=_LONG_DIGITS), *spoken]
    tenure: int | None = None
    said_before: int | None = None
    tenure_at = -1
    taken: list[tuple[int, int]] = []
    # The longest mention first (so "2 years and 6 months" is one), then the last stated wins: the
    # customer's final word ("not five years, make it 36 months"), unless it is the value replaced.
    for item in sorted(found, key=lambda entry: -(entry["end"] - entry["start"])):
        if item["dim"] != "duration" or item["value"].get("type") != "value":
            continue
        if any(item["start"] < stop and item["end"] > begin for begin, stop in taken):
            continue
        body = str(item["body"]).lower()
        # "a month" right after a sum is a rate ("70,000 a month"), not a tenure ("for a year" is one).
        if not re.search(
            r"\d|one|two|three|four|five|six|seven|eight|nine|ten|twelve|half|quarter", body
        ) and (
            _AFTER_A_SUM.search(masked[: item["start"]]) or not _TENURE_WORDS.search(masked[: item["start"]])
        ):
            continue
        months = _months(item)
        if months is None or months > MAX_TENURE_READ:
            continue
        clause_start = max([0, *(found.end() for found in _BREAK.finditer(masked, 0, item["start"]))])
        past = _past_kind(masked, (clause_start, item["start"], item["end"]), times)
        if _PAST_STATE.search(re.split(r"[.;,!?]", masked[: item["start"]])[-1]) or past is not None:
            # "I've banked with you for ten years", "paid 14,500 EMI for 24 months last year": how long
            # something has lasted, not the loan's term (nor a count said without its unit); "I wanted
            # 2 lakh for 2 years" is the ask when no other tenure is said.
            taken.append((item["start"], item["end"]))
            said_before = said_before if said_before is not None or past != "past_ask" else months
            continue
        taken.append((item["start"], item["end"]))
        if _REPLACED.search(masked[: item["start"]]) or (tenure is not None and tenure_at > item["start"]):
            continue
        tenure, tenure_at = int(months), item["start"]
    if tenure is None and said_before is not None:
        tenure = said_before
    for fraction in fractions:
        if tenure is None or tenure_at < fraction.start():
            tenure, tenure_at = round(float(fraction.group(1)) * 12), fraction.start()
    counts: list[float] = []
    ranges: list[Range] = []
    # Of Duckling's readings of one range ("between 3 and 4 lakh" is also 3 to 1,004) the widest.
    for item in sorted(found, key=lambda entry: -float((entry["value"].get("to") or {}).get("value") or 0)):
        said = item["value"]
        if item["dim"] in ("number", "amount-of-money") and said.get("type") == "interval":
            bounds = [said.get(end, {}).get("value") for end in ("from", "to")]
            if None in bounds or any(item["start"] < stop and item["end"] > begin for begin, stop in taken):
                continue
            low, high = (float(bound) for bound in bounds)
            # Duckling gives "between 3 and 4 lakh" the bounds 3 and 4,00,000: the scale is said once.
            ranges.append(Range(_scaled(low, high, str(item["body"])), high, item["start"], item["end"]))
            taken.append((item["start"], item["end"]))
    candidates = [
        item
        for item in found
        if item["dim"] in ("number", "amount-of-money") and item["value"].get("type") == "value"
    ]
    read: list[tuple[float, int, int, bool]] = []
    for item in sorted(candidates, key=lambda entry: -(entry["end"] - entry["start"])):
        start, end = item["start"], item["end"]
        if any(start < stop and end > begin for begin, stop in taken):
            continue
        taken.append((start, end))
        value = round(float(item["value"]["value"]), 2)  # "1.1 lakh" is 110000.00000000001 in floats
        if _PERCENT.match(masked, end):
            continue
        if value < MIN_SUM:
            if item["dim"] == "number" and not _ONE_WORD.fullmatch(str(item["body"])):
                counts.append(int(value) if value == int(value) else value)
            continue
        joined = _RANGE_FROM.search(masked[:start])
        if joined is not None and float(joined.group(1)) < value:
            # "3 to 4 lakh", "3-4 lakh", "3 or 4 lakh": two bounds of one amount, the scale said once.
            low = _scaled(float(joined.group(1)), value, str(item["body"]))
            ranges.append(Range(low, value, joined.start(1), end))
            taken.append((joined.start(1), end))
            continue
        if _REPLACED.search(masked[:start]):
            continue
        # An EMI the customer can afford ("EMI under 10k") is neither the loan nor a salary.
        read.append(
            (value, start, end, bool(_EMI_BEFORE.search(masked[:start]) or _EMI_AFTER.match(masked, end)))
        )
    sums: list[Sum] = []
    previous_end = 0
    for value, start, end, instalment in sorted(read, key=lambda entry: entry[1]):
        role = "emi" if instalment else _role(masked, start, end, previous_end, times)
        previous_end = end
        # A sum "a month" is a monthly figure, never a principal ("I make 60k a month"). The pattern
        # opens with "^": it is matched on the text after the sum.
        if role not in ("other", "emi") and _PER_MONTH.match(masked[end:]):
            role = "income"
        sums.append(Sum(value, start, end, role))
    # An income word belongs to the nearest sum of its clause ("my salary is 60,000 so I need 3 lakh":
    # the salary is 60,000, the loan 3 lakh); a yearly income ("CTC 16.8 lakh a year") is read per month.
    for cue in _INCOME.finditer(masked):
        near = [
            found_sum
            for found_sum in sums
            if found_sum.role != "emi"
            and not _BREAK.search(masked[min(cue.end(), found_sum.end) : max(cue.start(), found_sum.start)])
        ]
        if near:
            nearest = min(near, key=lambda found_sum: _distance(cue, found_sum))
            sums[sums.index(nearest)] = Sum(nearest.value, nearest.start, nearest.end, "income")
    sums = [
        Sum(round(found.value / 12, 2), found.start, found.end, "income")
        if found.income and _PER_YEAR.match(masked[found.end :])
        else found
        for found in sums
    ]
    # The last stated first: "6 lakh, no, 5 lakh" asks 5 lakh.
    sums.sort(key=lambda found_sum: -found_sum.start)
    return sums, tenure, counts, ranges


def _months(item: dict[str, Any]) -> int | None:
    """A Duckling duration's length in months."""
    value = item["value"]
    months = value.get("month")
    if months is None and value.get("year") is not None:
        months = value["year"] * 12
    if months is None and str(value.get("unit")) in ("year", "month"):
        months = value["value"] * (12 if value["unit"] == "year" else 1)
    return None if months is None else int(months)


def _scaled(low: float, high: float, body: str) -> float:
    """A range's lower bound with the scale said only after the upper one ("3 to 4 lakh")."""
    scale = next((size for name, size in _SCALES.items() if re.search(rf"\b{name}", body, re.I)), None)
    if scale is None and re.search(r"\dk\b|\bk\b", body, re.I):
        scale = 1e3
    if scale is not None and low * scale <= high:
        return low * scale
    return low


_WORDS = re.compile(r"[A-Za-z]+")
#: A clause that revises the one before it opens with a contrast (closed grammar words).
_REVISION = re.compile(r"\W*(?:no|nahi|actually|instead)\b", re.I)
_REVISION_BEFORE = re.compile(r"\bbut$", re.I)
_TENURE_UNIT = re.compile(r"years?|yrs?|months?|mos?|year|month", re.I)
_BREAK = re.compile(r"[,;:!?]|\.(?!\d)|\band\b|\bbut\b|\bso\b", re.I)

#: The head of a request, what governs the sum a customer asks for: a verb of wanting, needing,
#: getting or taking ("I'd like", "looking for", "can I get", "I'll take"), a change of the terms ("make
#: it", "settle on", "round ... up to", "go for", "how about"), or the loan and its terms named as what
#: the sum is ("a loan of", "the amount", "the EMI you gave me is for"). Verbs that raise or lower a thing
#: ("bump it to", "drop it to") are read by WordNet (``terms.verb_direction``).
_REQUEST_HEAD = re.compile(
    r"\b(?:wants?|wanting|wanted|needs?|needing|needed|like|looking|look|requir\w*|borrow|borrowing|take|taking|get|"
    r"getting|avail\w*|"
    r"apply\w*|request\w*|seek\w*|lend|give|grant|disburse|sanction|loan|amount|principal|emis?|instal+ments?|"
    r"make|settle\w*|go|going|"
    r"round\w*|instead|switch\w*|change\w*|revise\w*|meant|mean|after)\b",
    re.I,
)
#: Words that say nothing of what a sum is: between a request's head and its sum ("I'd like to borrow
#: about Rs", "round the amount up to"), or all a bare figure is said with ("ok, maybe 3 lakh then").
#: A sum after any other word ("my rent is", "a car priced at", "I have already paid", "Lucknow") is
#: said of something else.
_FILLER = frozenset(
    re.findall(
        r"\S+",
        """a an the of for on at to up upto around about approx approximately roughly nearly almost just only
    some somewhere exactly total maybe perhaps it me you us i we my our from personal loan amount sum rs
    inr rupees rupee borrow take get please with as another more extra additional further be is
    was would will can could may should shall let lets s d ll m re ve ok okay yes yeah yep so then hi
    hello hey well hmm now actually sorry like want need looking go in all full whole new this that same
    still kindly sir madam maam dear thanks thank urgently urgent immediately quickly quick right
    really exact fine sure do are am gave give given quoted quote offered offer told said
    mentioned showed shown emi if remaining rest entire leftover difference mujhe muje mere hume humein ko""",
    )
)
#: A verb of taking in the past heads a request only in a supposition ("if I took 3.5 lakh"); else it
#: tells of another loan ("I took 2 lakh from a friend last year").
_PAST_TAKING = frozenset(("took", "got", "borrowed", "did"))
_SUPPOSING = frozenset(("if", "suppose", "supposing"))
#: Between a head and its sum, words of paying it back ("what EMI would I pay on 4 lakh"); without a
#: head they say what the sum was spent on ("I pay 25k").
_PAYING = frozenset(("pay", "paying", "repay", "repaying"))
#: A request said after its sum ("4 lakh chahiye", "4 lakh needed").
_HEAD_AFTER = re.compile(
    r"\s*(?:/-)?\s*(?:rupees\s+)?(?:ka\s+loan\s+)?(?:hi\s+)?(?:chahiye|chahie|chaiye|needed|required|wanted|kar\s*do|kardo|"
    r"kar\s+dijiye|karo)\b",
    re.I,
)
#: After a sum, what makes it a figure of another thing: "as the booking amount", "as a deposit".
_SAID_AS = re.compile(
    r"\s*(?:/-)?\s*as\s+(?!(?:an?\s+|the\s+|my\s+)?(?:personal\s+)?loans?\b)(?:an?\s+|the\s+|my\s+)?[a-z]+",
    re.I,
)


def _role(masked: str, start: int, end: int, after_previous: int, times: list[tuple[int, int]]) -> Role:
    """What the sum at ``start:end`` is by the words of its clause (from the last clause break or the
    sum before it): governed by a request, bare, said of something else, or said of the past (an
    earlier loan, an ask given up: ``tense``)."""
    breaks = [found.end() for found in _BREAK.finditer(masked, 0, start)]
    sentence_start = max([0, *breaks])
    clause_start = max([after_previous, sentence_start])
    words = [word.lower() for word in re.findall(r"[A-Za-z]+", masked[clause_start:start])]
    if _SAID_AS.match(masked, end):
        return "other"
    supposed = bool(_SUPPOSING.intersection(words))
    heads = [
        index
        for index, word in enumerate(words)
        if _REQUEST_HEAD.fullmatch(word) or _moves(word) or (supposed and word in _PAST_TAKING)
    ]
    tail = words[heads[-1] + 1 :] if heads else words
    if not all(word in _FILLER or (heads and word in _PAYING) for word in tail):
        role: Role = "loan" if _HEAD_AFTER.match(masked, end) else "other"
    else:
        role = "loan" if heads else "bare"
    if role == "bare" and _described_after(masked, end):
        return "other"
    if role == "other":
        return role
    past = _past_kind(masked, (sentence_start, start, end), times)
    if past is not None:
        return past
    if role == "bare" and _revises(masked, sentence_start):
        return "loan"  # "5 lakh, but 4 is fine": the sum after the contrast is the one asked
    return role


def _participle_of_a_request(masked: str, clause_start: int, words: list[str]) -> bool:
    """Whether a clause is a participle with no subject that goes with the request said before it
    ("I'll take 4.5 lakh from you, repaid over 5 years"): it opens with its past form right after a
    comma, and the clause before the comma asks in the present."""
    if not words or not past_form(words[0]) or not masked[:clause_start].rstrip().endswith(","):
        return False
    if names_an_existing_loan(masked[clause_start : _clause_end(masked, clause_start + 1)]):
        return False  # "I need 3 lakh, paid off my old loan in 24 months": of the other loan
    comma = masked.rstrip().rfind(",", 0, clause_start)
    before = max([0, *(found.end() for found in _BREAK.finditer(masked, 0, comma))])
    previous = [word.lower() for word in _WORDS.findall(masked[before:comma])]
    return any(_REQUEST_HEAD.fullmatch(word) and not past_form(word) for word in previous)


def _clause_end(masked: str, end: int) -> int:
    found = _BREAK.search(masked, end)
    return found.start() if found else len(masked)


def _past_time_near(masked: str, clause_start: int, end: int, times: list[tuple[int, int]]) -> bool:
    clause_end = _clause_end(masked, end)
    return any(begin < clause_end and stop > clause_start for begin, stop in times)


def _past_kind(
    masked: str, where: tuple[int, int, int], times: list[tuple[int, int]]
) -> Literal["past", "past_ask"] | None:
    """Whether the figure at ``start:end`` is said in a clause of the past (``tense.said_of_the_past``):
    history ("I took a loan of 2 lakh last year"), or an ask said in the past ("I wanted 5L"), which is
    the ask when nothing else is asked now; None when it is said in the present."""
    clause_start, start, end = where
    words = [word.lower() for word in re.findall(r"[A-Za-z]+", masked[clause_start:start])]
    heads = [index for index, word in enumerate(words) if _REQUEST_HEAD.fullmatch(word) or _moves(word)]
    clause = masked[clause_start : _clause_end(masked, end)]
    in_past_time = _past_time_near(masked, clause_start, end, times)
    if not said_of_the_past(words, clause, in_past_time, heads):
        return None
    if not in_past_time and _participle_of_a_request(masked, clause_start, words):
        return None
    wanting = any(_REQUEST_HEAD.fullmatch(word) and past_form(word) for word in words)
    return "past_ask" if wanting and not in_past_time else "past"


def _revises(masked: str, clause_start: int) -> bool:
    """Whether the clause at ``clause_start`` revises the one before it: it opens with a contrast ("...
    but 4L is fine", "no, 4 lakh", "actually 3")."""
    return bool(_REVISION_BEFORE.search(masked[:clause_start]) or _REVISION.match(masked[clause_start:]))


def _described_after(masked: str, end: int) -> bool:
    """Whether the word right after a sum says what it is, as an adjective or a participle: "1.2 lakh
    outstanding", "80k owed", "2 lakh left" (by WordNet: a word with an adjective sense and no noun
    sense, or a verb's past form); "4 lakh, 2 years", "3 lakh please" are bare."""
    following = re.match(r"\s*([A-Za-z]+)", masked[end:])
    if following is None:
        return False
    word = following.group(1).lower()
    if word in _FILLER or _TENURE_UNIT.fullmatch(word) or _HEAD_AFTER.match(masked, end):
        return False
    return past_form(word) or adjective_only(word)


def _moves(word: str) -> bool:
    """A verb that raises or lowers a thing ("bump", "drop", "cut", "raise"), by WordNet."""
    return len(word) > 2 and word not in _FILLER and verb_direction(word) is not None


def _said_with(words: re.Pattern[str], text: str, sums: list[Sum]) -> bool:
    """Whether ``words`` occur in the clause of one of the sums ``text`` states (no clause break
    between them); with no sum, anywhere in it."""
    if not sums:
        return words.search(text) is not None
    return any(
        not _BREAK.search(text[min(cue.end(), item.end) : max(cue.start(), item.start)])
        for cue in words.finditer(text)
        for item in sums
    )


def _distance(cue: re.Match[str], found: Sum) -> int:
    return found.start - cue.end() if found.start >= cue.end() else cue.start() - found.end


def read_message(text: str, record: Any = None, asks: tuple[str, ...] = ()) -> MessageReading:
    """What ``text`` states, as updates of the typed state, given the fields the stage asks for; a
    reply said before the stage goes on (an answer to a product question, a confirmation asked)."""
    loan = record if isinstance(record, LoanConversation) else LoanConversation()
    asked = set(asks)
    updates: dict[str, Any] = {}
    phones = _PHONE.findall(text)
    # Once the customer is found by their number, another number said ("my brother's is ...") is a
    # contact, not who they are.
    if phones and ("stated.phone" in asked or loan.customer_id is None):
        updates["stated.phone"] = re.sub(r"\D", "", phones[0])
    pan = _PAN.search(text)
    if pan:
        updates["stated.pan"] = pan.group(1).upper()
    born = _date_of_birth(text)
    if born is not None:
        updates["stated.dob"] = born.isoformat()
    sums, tenure, counts, ranges = read_terms(text)
    incomes = [found.value for found in sums if found.income]
    # Only a sum asked for, or said bare, may be the loan: a rent, a price, a pension is no term.
    # The sum a request governs before a bare one ("I want 3 lakh, and 8k for tuition").
    principals = [found.value for found in sums if found.role == "loan"]
    principals += [found.value for found in sums if found.role == "bare"]
    # An ask said in the past ("I wanted 3 lakh") is the ask when nothing is asked now.
    principals = principals or [found.value for found in sums if found.role == "past_ask"][:1]
    # "Go back to the first amount": an amount asked earlier in this conversation.
    earlier = asked_before(text, [*loan.loan_details.asked, *_said(loan.loan_details.amount)])
    if earlier is not None and not principals:
        principals = [earlier]
    # "Increase it by 50k", "top up my existing loan by 1 lakh": a sum said as a difference.
    change_by = difference(
        _join_groups(text), [(found.value, found.start, found.end) for found in sums if not found.income]
    )
    # A loan word counts for a sum in its own clause ("I need 3 lakh as a loan"), not in another ("my
    # rent alone is 15000 so money is tight": the rent is no loan term).
    stated_sums = [found for found in sums if found.principal]
    loan_named = _said_with(_LOAN, text, stated_sums) or any(found.role == "loan" for found in sums)
    changing = (
        earlier is not None
        or _CHANGE.search(text) is not None
        or (_CORRECTION.search(text) is not None and not _ASKING.search(text))
    )
    if (
        not principals
        and tenure is None
        and counts
        and len(counts) <= len(TERMS)
        and not sums
        and _counter(text)
    ):
        # "make it 3.5 instead", "can you do 6?", "drop it to 3 and stretch it to 60": numbers said
        # without their unit, as a change of terms already known, in the conversation's unit; one
        # amount and one tenure at most, else none is guessed.
        read_as = [_in_the_conversations_unit(loan, text, count) for count in counts]
        amounts = [value for said, _ in read_as for value in said]
        lengths = [months for _, months in read_as if months is not None]
        if len(amounts) + len(lengths) == len(counts) and len(amounts) <= 1 and len(lengths) <= 1:
            principals, tenure, counts = amounts, next(iter(lengths), None), []
            changing = changing or bool(principals)
    about_the_loan = tenure is not None or changing or loan_named
    budget = _budget(text, sums) if changing or "down" in directions(_WORDS.findall(text)) else None
    unsure_salary: float | None = None
    offered = loan.loan_details.emi is not None
    salary_asked = "stated.monthly_salary" in asked
    if principals and "loan_details.amount" not in asked and (salary_asked or offered) and not about_the_loan:
        # A bare sum where a salary was asked (and no amount, no tenure, no loan named): the salary when
        # the message is a short answer; said among other words, it is asked about first. Where the
        # salary was not asked (verification asks for the PAN and date of birth) a short bare sum may
        # as well be a new amount: it is confirmed as one before it replaces the offer (below), never
        # taken as a salary or an amount unasked ("60k a month" is a monthly figure: a salary).
        bare = next(found for found in sums if found.principal)
        after = text[bare.end :]
        rate = _PER_MONTH.match(after)  # "60k a month": the month is part of the sum said
        rest = _WORDS.findall(text[: bare.start] + " " + after[rate.end() if rate else 0 :])
        if len(rest) > ANSWER_WORDS:
            unsure_salary, principals = principals[0], principals[1:]
        elif salary_asked or rate is not None:
            incomes, principals = incomes + principals[:1], principals[1:]
    if incomes:
        updates["stated.monthly_salary"] = incomes[0]
    terms: dict[str, Any] = {}
    if principals:
        terms["loan_details.amount"] = principals[0]
    if (
        tenure is None
        and "loan_details.tenure_months" in asked
        and len(counts) == 1
        and counts[0] == int(counts[0])
    ):
        count = int(counts[0])
        tenure = count * 12 if count <= 7 and re.search(r"\by(ea)?rs?\b", text, re.I) else count
    if tenure is not None:
        terms["loan_details.tenure_months"] = tenure
    reply: str | None = None
    hold = False
    changed = {path: value for path, value in terms.items() if _known(loan, path) not in (None, value)}
    wanted = changing or _said_with(_WANT, text, stated_sums)
    # A question that states terms without asking for them ("the EMI you gave me is for 7.5 lakh,
    # right?") checks the offer, it does not change it: confirmed like a bare sum.
    framed = wanted or (not _ASKING.search(text) and ("loan_details.tenure_months" in terms or loan_named))
    if _closed(loan):
        if terms:
            # A decided (or locked) application's terms stay those decided: said so, never ignored.
            reply = _decision_stands(loan)
        terms = {}
    elif change_by is not None and (change_by.top_up or loan.loan_details.amount):
        # A difference is confirmed with the sum it makes; a top-up of a loan the customer has is no
        # product here: said so, and a new loan of the sum offered instead (never old plus new).
        updates["pending_change"] = _by_difference(loan, change_by)
        reply = _difference_reply(loan, change_by)
        hold = True
        terms = {}
    elif offered and budget is not None and not terms:
        # "Reduce the amount to fit 10k a month": the largest amount whose EMI fits, confirmed before
        # it replaces the offer; the budget is never the loan.
        fitting, reply = _fitting(loan, budget)
        if fitting:
            updates["pending_change"], hold = fitting, True
    elif offered and changed and _ASKING.search(text) and _WHAT_IF.search(text):
        # "What would the EMI be for 36 months?": the EMI of those terms, the offer unchanged.
        reply = _what_if(loan, terms)
        terms = {}
    elif unsure_salary is not None and not terms and loan.pending_change is None:
        updates["pending_change"] = {"monthly_salary": unsure_salary}
        reply = f"Is {rupees(unsure_salary)} your net monthly salary? Please answer yes or no."
        hold = True
    elif terms and offered and not (asked & set(TERMS)) and changed and not framed:
        # A bare sum nobody asked for, replacing the offered amount: confirmed before it does (a
        # tenure, a loan named or a change said make it plainly the loan's terms).
        updates["pending_change"] = {
            "amount": terms.get("loan_details.amount"),
            "tenure_months": terms.get("loan_details.tenure_months"),
        }
        reply = (
            f"Your offer is {_describe(loan, {})} (EMI {rupees(loan.loan_details.emi or 0)}). Do you want to "
            f"change your loan to {_describe(loan, terms)}? Please answer yes or no."
        )
        hold = True
        terms = {}
    elif loan.pending_change is not None and not terms and _YES.search(text):
        pending = loan.pending_change
        if pending.monthly_salary is not None:
            updates["stated.monthly_salary"] = pending.monthly_salary
        if pending.amount is not None:
            terms["loan_details.amount"] = pending.amount
        if pending.tenure_months is not None:
            terms["loan_details.tenure_months"] = pending.tenure_months
        updates["pending_change"] = None
    elif loan.pending_change is not None:
        # Anything but a yes leaves the offer as it was: a later "yes" must not change it unasked.
        updates["pending_change"] = None
        if _NO.search(text):
            reply = (
                "All right, I have not taken it as your salary."
                if loan.pending_change.monthly_salary is not None
                else "All right, your loan stays as offered."
            )
    if offered and not terms and reply is None and _KEEP.search(text) and _restates(loan, counts, sums):
        # "Keep 60" after a what-if: the offer stands, said so.
        reply = (
            f"All right, your loan stays {_describe(loan, {})} (EMI {rupees(loan.loan_details.emi or 0)})."
        )
    if ranges and not principals and reply is None and not _closed(loan):
        # "between 3 and 4 lakh": the customer is asked which amount, none is guessed.
        said = ranges[-1]
        reply = (
            f"You mentioned between {rupees(said.low)} and {rupees(said.high)}. How much exactly would you "
            "like to borrow?"
        )
    if terms:
        updates.update(terms)
        before = loan.loan_details.amount
        if before is not None and terms.get("loan_details.amount") not in (None, before):
            updates["loan_details.asked"] = [*loan.loan_details.asked, before]
        if offered and any(_known(loan, path) != value for path, value in terms.items()):
            # New terms: the offer is made again (sales recomputes it) before anything goes on.
            updates["loan_details.emi"] = None
        if loan.pending_change is not None:
            updates["pending_change"] = None
    if (
        _LOAN.search(text)
        or ("loan_details.amount" in terms and (tenure is not None or _WANT.search(text)))
        or any(found.role == "loan" for found in sums)
        or (ranges and (tenure is not None or _WANT.search(text)))
        or ("customer_intent" in asked and _YES.search(text))
    ):
        updates["customer_intent"] = "personal_loan"
    in_scope = bool(updates) or reply is not None or _DOMAIN.search(text) is not None
    return MessageReading(in_scope=in_scope, updates=updates, reply=reply, hold=hold)


_INSTALMENT = re.compile(r"\b(?:emis?|instal+ments?)\b", re.I)


def _budget(text: str, sums: list[Sum]) -> float | None:
    """The most a month the customer says they can pay, when they ask for the loan to fit it: an EMI
    said ("EMI of at most 9k", "the EMI stays below 11,000": a figure of the EMI's clause) or a monthly
    figure that is no income ("fit 10k a month")."""
    for found in sums:
        clause = _BREAK.split(text[: found.start])[-1]
        monthly = _PER_MONTH.match(text[found.end :]) or _INSTALMENT.search(clause)
        if found.role == "emi" or (found.role == "other" and monthly):
            return found.value
    return None


def _fitting(loan: LoanConversation, budget: float) -> tuple[dict[str, Any], str]:
    details = loan.loan_details
    months, rate = details.tenure_months or 0, details.rate_pct or 0
    most = largest_principal(budget, rate, months, step=1000)
    if details.amount is not None and most >= details.amount:
        return {}, (
            f"Your EMI of {rupees(details.emi or 0)} is already within {rupees(budget)} a month: your loan stays "
            f"{_describe(loan, {})}."
        )
    if most < AMOUNT_RANGE[0]:
        return {}, (
            f"Over {months} months no loan from {rupees(AMOUNT_RANGE[0])} has an EMI within {rupees(budget)}; "
            "how much would you like to borrow, and over how many months?"
        )
    return {"amount": most}, (
        f"Over {months} months at {rate}% a year, the most you can borrow for an EMI within {rupees(budget)} is "
        f"{rupees(most)} (EMI {rupees(emi(most, rate, months))}). Do you want to change your loan to "
        f"{rupees(most)}? Please answer yes or no."
    )


def _said(amount: float | None) -> list[float]:
    return [] if amount is None else [amount]


def _by_difference(loan: LoanConversation, change: Difference) -> dict[str, Any]:
    if change.top_up:
        return {"amount": change.value}
    return {"amount": (loan.loan_details.amount or 0) + change.sign * change.value}


def _difference_reply(loan: LoanConversation, change: Difference) -> str:
    if change.top_up:
        return (
            "We cannot top up a loan you already have: the one product here is a new personal loan, "
            f"decided on its own. Would you like a new personal loan of {rupees(change.value)}? Please "
            "answer yes or no."
        )
    amount = _by_difference(loan, change)["amount"]
    return (
        f"Your loan is {rupees(loan.loan_details.amount or 0)} now. Do you want to change it to "
        f"{rupees(amount)}? Please answer yes or no."
    )


#: Words that name which term a bare number changes.
_AMOUNT_NAMED = re.compile(r"\b(?:amount|loan|principal|sum|lakhs?|lacs?)\b", re.I)
_TENURE_NAMED = re.compile(r"\b(?:tenure|term|duration|period|months?|years?|saal|mahine)\b", re.I)


def _counter(text: str) -> bool:
    """Whether ``text`` asks for other terms: a change said ("make it", "instead", "reduce"), a verb
    that moves a figure (WordNet), a request's head, or "do" ("can you do 6?")."""
    words = [word.lower() for word in _WORDS.findall(text)]
    return (
        _CHANGE.search(text) is not None
        or bool(directions(words))
        or any(word == "do" or _REQUEST_HEAD.fullmatch(word) for word in words)
    )


def _in_the_conversations_unit(
    loan: LoanConversation, text: str, number: float
) -> tuple[list[float], int | None]:
    """A number said without its unit as a change of known terms: the amount in the unit the amount
    is in (lakh for a loan of lakhs: "make it 3.5" is 3,50,000), or the tenure in months; the term
    named ("reduce the amount to 2"), else the one the number is nearer to (by ratio) that it can be."""
    details = loan.loan_details
    amount: float | None = None
    if details.amount:
        scale = 1e5 if details.amount >= 1e5 else 1e3
        if AMOUNT_RANGE[0] <= number * scale <= AMOUNT_RANGE[1]:
            amount = number * scale
    months = int(number) if number == int(number) and TENURE_MONTHS[0] <= number <= TENURE_MONTHS[1] else None
    if months is not None and details.tenure_months is None:
        months = None
    if amount is not None and months is not None:
        if _AMOUNT_NAMED.search(text):
            months = None
        elif _TENURE_NAMED.search(text):
            amount = None
        elif abs(math.log(amount / (details.amount or amount))) <= abs(
            math.log(months / (details.tenure_months or months))
        ):
            months = None
        else:
            amount = None
    return ([amount] if amount is not None else []), months


def _restates(loan: LoanConversation, counts: list[float], sums: list[Sum]) -> bool:
    """Whether the numbers said are the offer's own (its tenure, its amount)."""
    details = loan.loan_details
    said = [*counts, *(found.value for found in sums if found.principal)]
    return bool(said) and all(value in (details.tenure_months, details.amount) for value in said)


def _what_if(loan: LoanConversation, terms: dict[str, Any]) -> str:
    details = loan.loan_details
    amount = terms.get("loan_details.amount", details.amount) or 0
    months = terms.get("loan_details.tenure_months", details.tenure_months) or 0
    if details.rate_pct is None or not (
        AMOUNT_RANGE[0] <= amount <= AMOUNT_RANGE[1] and TENURE_MONTHS[0] <= months <= TENURE_MONTHS[1]
    ):
        return (
            f"Loans run from {rupees(AMOUNT_RANGE[0])} to {rupees(AMOUNT_RANGE[1])} over {TENURE_MONTHS[0]} to "
            f"{TENURE_MONTHS[1]} months. Your offer stays {_describe(loan, {})}."
        )
    emi = Application(amount, months, details.rate_pct).emi
    return (
        f"For {_describe(loan, terms)} the EMI would be {rupees(emi)} a month. Your offer stays "
        f"{_describe(loan, {})} (EMI {rupees(details.emi or 0)}); tell me if you want to change it."
    )


def _known(loan: LoanConversation, path: str) -> Any:
    return getattr(loan.loan_details, path.split(".", 1)[1])


def _closed(loan: LoanConversation) -> bool:
    return _decided(loan) or loan.verification_status.locked


def _decision_stands(loan: LoanConversation) -> str:
    decision = loan.underwriting_result.decision
    if loan.verification_status.locked:
        what = "Your application is locked after failed identity checks"
    elif decision == "APPROVED":
        what = f"Your loan of {rupees(loan.loan_details.amount or 0)} is already sanctioned"
    elif decision == "REJECTED":
        what = "Your application was declined"
    else:
        what = "Your application is with our team for a manual review"
    return (
        f"{what}, and that decision stands: I cannot change its terms now. For a loan on new terms, please "
        "start a new application in a new conversation."
    )


def _decided(loan: LoanConversation) -> bool:
    return bool(loan.document_links.get("sanction_letter")) or loan.underwriting_result.decision in (
        "REJECTED",
        "MANUAL_REVIEW",
    )


def _describe(loan: LoanConversation, terms: dict[str, Any]) -> str:
    amount = terms.get("loan_details.amount", loan.loan_details.amount)
    months = terms.get("loan_details.tenure_months", loan.loan_details.tenure_months)
    return f"{rupees(amount or 0)} over {months} months"


def loan_amount(text: str) -> float | None:
    """The principal ``text`` states last (a sum asked for, or bare: not an income, not a figure of
    something else)."""
    sums, _, _, _ = read_terms(text)
    return next((found.value for found in sums if found.principal), None)


def _date_of_birth(text: str) -> date | None:
    try:
        iso = _ISO_DATE.search(text)
        if iso:
            return date(int(iso.group(1)), int(iso.group(2)), int(iso.group(3)))
        dmy = _DMY_DATE.search(text)
        if dmy:
            return date(int(dmy.group(3)), int(dmy.group(2)), int(dmy.group(1)))
        written = _written_dates(text)
        if written:
            return written[0][2]
    except ValueError:
        return None
    return None
