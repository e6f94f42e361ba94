"""Whether a clause of a loan conversation tells of the past: an earlier loan ("I took 2 lakh from you
last year", "I had a 3 lakh loan in 2023", "3L ka loan liya tha"), an amount repaid, an old EMI or an
old loan's tenure ("paid 14,500 EMI for 24 months"), or an ask given up ("I wanted 5L but 4L is fine").
A sum or a tenure said there is history, not the terms asked now.

Three signs, each read by a library where one reads it:

- a verb in a past form before the figure, by WordNet's morphology (``morphy`` gives "took" -> take,
  "repaid" -> repay, "had" -> have; a form that is not its base, nor a third person "-s" nor an "-ing"
  form, is a past tense or participle), unless a present verb of asking comes after it ("I decided I
  need 3 lakh") or the clause supposes ("if I took 3 lakh");
- a time in the past, by Duckling's time dimension: a time said relative to now and before it ("last
  year", "two months ago", "last yr"), or a year before this one ("in 2023");
- Hindi's past auxiliaries (``tha``, ``thi``) and its word for "last" (``pichle``): a closed class of
  grammar words, no library reads Hinglish here.
"""

from __future__ import annotations

import functools
import re
from datetime import UTC, date, datetime

from master_agent.capabilities.terms import duckling_parse_time
from master_agent.capabilities.tools.lexicon import WordNetMissing, wordnet

#: The present forms of "be", "have" and "do" WordNet lists among its irregular forms: they are no past.
_PRESENT_AUXILIARIES = frozenset(("am", "are", "is", "has", "does"))
#: Present forms of "be", with the contractions' remains ("I'm", "we're").
_PRESENT_BE = frozenset(("am", "are", "is", "m", "re"))
#: Hindi (and Hinglish) grammar words that put a clause in the past: the past auxiliaries and "last"
#: ("pichle saal", "pichhle mahine").
_HINDI_PAST = re.compile(r"\b(?:tha|thi|pichle|pichhle|pichli)\b", re.I)
#: Words that make a past verb a supposition ("if I took 3.5 lakh", "suppose I borrowed").
_SUPPOSING = frozenset(("if", "suppose", "supposing", "say"))
#: Nouns a request names its sum with ("a loan of", "the amount"): they do not end a past clause ("I
#: took a loan of 2 lakh").
_NOUN_HEADS = frozenset(("loan", "loans", "amount", "principal", "emi", "emis", "sum"))


@functools.cache
def past_form(word: str) -> bool:
    """Whether ``word`` is a verb in a past form ("took", "repaid", "had", "closed", "wanted"), by
    WordNet's morphology."""
    lowered = word.lower()
    if lowered in _PRESENT_AUXILIARIES or lowered.endswith("ing") or len(lowered) < 3:
        return False
    try:
        base = wordnet().morphy(lowered, "v")
    except WordNetMissing:
        return False
    if base is None or base == lowered:
        return False
    # A third person ("needs", "goes", "tries") is present; "was" is not one.
    return lowered not in (base + "s", base + "es", base[:-1] + "ies")


def past_times(text: str) -> list[tuple[int, int]]:
    """Where ``text`` names a time in the past: relative to now and before it ("last year", "3 months
    ago"), or a year before this one ("in 2023")."""
    reference = datetime(2000, 1, 1, tzinfo=UTC)  # duckling_parse_time's reference
    found = []
    for item in duckling_parse_time(text):
        value = item.get("value") or {}
        body = str(item.get("body", ""))
        said = value.get("value") if value.get("type") == "value" else (value.get("to") or {}).get("value")
        if not said:
            continue
        when = datetime.fromisoformat(str(said))
        year = re.search(r"\b(?:19|20)\d{2}\b", body)
        if year is not None:
            past = int(year.group(0)) < date.today().year
        else:
            past = when < reference and value.get("grain") not in ("second", "minute", "hour")
        if past:
            found.append((int(item["start"]), int(item["end"])))
    return found


def written_years(text: str) -> list[tuple[int, int]]:
    """Where ``text`` names a year with words around it ("in 2023", "since 2019"): a time, not a sum."""
    return [
        (int(item["start"]), int(item["end"]))
        for item in duckling_parse_time(text)
        if re.search(r"\b(?:19|20)\d{2}\b", str(item.get("body", "")))
        and re.search(r"[A-Za-z]", str(item.get("body", "")))
    ]


def said_of_the_past(words_before: list[str], clause: str, in_past_time: bool, heads: list[int]) -> bool:
    """Whether a figure is said of the past: ``words_before`` are the words of its clause before it,
    ``clause`` the clause's whole text, ``in_past_time`` whether the clause names a past time and
    ``heads`` where in ``words_before`` a request's head is ("need", "want", "make")."""
    if in_past_time or _HINDI_PAST.search(clause):
        return True
    if _SUPPOSING.intersection(words_before):
        return False
    # A past form after a present "be" is an adjective or a passive said now ("I am interested in",
    # "I'm pleased to"), no past.
    past_at = max(
        (
            index
            for index, word in enumerate(words_before)
            if past_form(word) and not (index and words_before[index - 1] in _PRESENT_BE)
        ),
        default=None,
    )
    if past_at is None:
        return False
    # "The EMI you gave me is for 7.5 lakh": the clause's verb is present, the past one is inside it.
    if _PRESENT_AUXILIARIES.intersection(words_before[past_at + 1 :]):
        return False
    # "I decided I need 3 lakh", "I want it repaid in 28 months": a request said in the present heads
    # the figure; the past form is a clause inside it, or a participle.
    return not any(
        words_before[index] not in _NOUN_HEADS and not past_form(words_before[index]) for index in heads
    )


@functools.cache
def adjective_only(word: str) -> bool:
    """Whether WordNet knows ``word`` as an adjective and not as a noun ("outstanding", "pending")."""
    try:
        reader = wordnet()
    except WordNetMissing:
        return False
    return bool(reader.synsets(word, "a")) and not reader.synsets(word, "n")
