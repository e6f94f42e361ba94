"""Chat shorthand written out before a request is read: "book lunch w/ david thurs 12:30" is "book lunch
with david thursday 12:30".

Two kinds, both closed classes rather than phrases of requests:

- a day word cut short: a word of three letters or more that begins exactly one day word ("thu",
  "thurs", "fri", "tues"), written out whole;
- the few written abbreviations of English chat that stand for a word a reader needs ("w/" with,
  "w/o" without, "mtg" meeting, "pls" please, "tmrw" tomorrow, "b4" before, "asap" as soon as
  possible, "appt" appointment, "msg" message, "ppl" people).

The reader of each word keeps its position in the request no more than the readers after it need: the
text is rewritten, and everything after reads the rewritten request.
"""

from __future__ import annotations

import re

_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_DAY_WORDS = (*_WEEKDAYS, "tomorrow", "today", "tonight")
#: Words that begin a day word but are words of their own ("sat", "sun", "wed"): written out only
#: with a clock time or "at" after them.
_AMBIGUOUS = frozenset({"sat", "sun", "wed"})
#: Words that begin a day word and are names or words of their own ("Tom at 3pm" names a person).
_NEVER = frozenset({"tom", "tod", "ton", "toni", "frida"})
_CLOCK_AFTER = re.compile(
    r"\s*(?:at\b|\d{1,2}(?::\d{2})?\s*(?:am|pm)?\b|morning|afternoon|evening|night)", re.I
)
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


def written_out(text: str) -> str:
    """``text`` with its chat shorthand written out (unchanged when it has none)."""
    expanded = _ABBREVIATION.sub(lambda match: ABBREVIATIONS[match.group(1).lower()], text)

    def day(match: re.Match[str]) -> str:
        word = match.group(0)
        whole = _day_word(word)
        if whole is None:
            return word
        if word.lower() in _AMBIGUOUS and not _CLOCK_AFTER.match(expanded, match.end()):
            return word
        return whole

    return _WORD.sub(day, expanded)
