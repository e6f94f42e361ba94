"""Chat shorthand written out before a request is read: "book lunch w/ david thurs 12:30" is "book lunch
with david thursday 12:30".

Two kinds, both closed classes rather than phrases of requests:

- a day word cut short: a word of three letters or more that begins exactly one day word ("thu",
  "thurs", "fri", "tues"), written out whole; one that is a word of its own ("sat", "sun", "wed") only
  where Duckling reads it as a day with a time of day ("sat around 11", "sun 10ish", "wed morning");
- the few written abbreviations of English chat that stand for a word a reader needs ("w/" with,
  "w/o" without, "mtg" meeting, "pls" please, "tmrw" tomorrow, "b4" before, "asap" as soon as
  possible, "appt" appointment, "msg" message, "ppl" people).

The reader of each word keeps its position in the request no more than the readers after it need: the
text is rewritten, and everything after reads the rewritten request.
"""

from __future__ import annotations

import re
from typing import Any

from master_agent.capabilities.terms import duckling_parse_time

_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_DAY_WORDS = (*_WEEKDAYS, "tomorrow", "today", "tonight")
#: Words that begin a day word but are words of their own ("sat", "sun", "wed"): written out only
#: where Duckling reads them with a time of day after them (alone, it reads "the sun is out" as Sunday).
_AMBIGUOUS = frozenset({"sat", "sun", "wed"})
#: Grains of a time of day (a day's grain is "day").
_TIME_OF_DAY = frozenset({"hour", "minute", "second"})
#: Words that begin a day word and are names or words of their own ("Tom at 3pm" names a person).
_NEVER = frozenset({"tom", "tod", "ton", "toni", "frida"})
_WORD = re.compile(r"(?<![\w'/])[a-z]{3,}(?![\w'/])", re.I)
#: Written abbreviations, each standing for one word or phrase (lower case; matched whole).
ABBREVIATIONS: dict[str, str] = {
    "w/o": "without",
    "w/": "with",
    "mtg": "meeting",
    "mtgs": "meetings",
    "pls": "please",
    "plz": "please",
    "weds": "wednesday",
    "tmrw": "tomorrow",
    "tmr": "tomorrow",
    "tmw": "tomorrow",
    "2moro": "tomorrow",
    "b4": "before",
    "asap": "as soon as possible",
    "appt": "appointment",
    "msg": "message",
    "ppl": "people",
    "thx": "thanks",
}
_ABBREVIATION = re.compile(
    r"(?<![\w/])("
    + "|".join(re.escape(key) for key in sorted(ABBREVIATIONS, key=len, reverse=True))
    + r")(?=\s|$|[,.;:!?)])",
    re.I,
)


def _day_word(word: str) -> str | None:
    """The one day word ``word`` is the start of ("thurs" of "thursday"), or None."""
    lowered = word.lower()
    if lowered in _DAY_WORDS or lowered in _NEVER:
        return None
    found = [day for day in _DAY_WORDS if day.startswith(lowered)]
    return found[0] if len(found) == 1 else None


def _with_time_of_day(mention: dict[str, Any]) -> bool:
    value = mention.get("value") or {}
    # A part of the day ("wed morning") or an interval ("sat 10-12") has no single grain.
    return value.get("type") == "interval" or value.get("grain", "hour") in _TIME_OF_DAY


def _day_with_time(text: str, start: int, end: int) -> bool:
    """Duckling reads ``text[start:end]`` as a day with a time of day said after it."""
    return any(
        mention["start"] <= start and mention["end"] > end and _with_time_of_day(mention)
        for mention in duckling_parse_time(text)
    )


def written_out(text: str) -> str:
    """``text`` with its chat shorthand written out (unchanged when it has none)."""
    expanded = _ABBREVIATION.sub(lambda match: ABBREVIATIONS[match.group(1).lower()], text)

    def day(match: re.Match[str]) -> str:
        word = match.group(0)
        whole = _day_word(word)
        if whole is None:
            return word
        if word.lower() in _AMBIGUOUS and not _day_with_time(expanded, match.start(), match.end()):
            return word
        return whole

    return _WORD.sub(day, expanded)
