"""The time window a request names, read with Duckling against the runtime clock.

Duckling (``pyduckling-native-phihos``: Facebook's Duckling, the rule-based time parser Rasa and
wit.ai use, compiled in) reads what people write about time: "June 2026", "last month", "this
quarter", "between 1 May and 15 June", "the week of 7 September", "last 30 days", "in 2025". It
returns an instant with a grain (a month, a quarter) or an interval, relative to a reference time:
here the runtime clock, never the data's last row (a simulated future never moves the present).

Around it, only what Duckling does not read: entity mentions ("Store 4") are masked first (it reads
"4 in June 2026" as the 4th of June), calendar quarters ("Q2", "fiscal Q3" on a calendar fiscal
year), halves of a month, and the direction of time. A question about data looks back: "in July"
asked in November means this July, where Duckling, built for scheduling, answers next July; a plan's
deadline looks forward.
"""

from __future__ import annotations

import calendar
import contextlib
import difflib
import functools
import itertools
import re
import threading
import unicodedata
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Literal

from master_agent.capabilities.holiday_names import cached_holidays
from master_agent.capabilities.spec import DataMetric
from master_agent.capabilities.tools.lexicon import (
    SENSES,
    a_set_phrase,
    event_or_state,
    names_a_person,
    names_the_buyers,
    noun_first,
    phrasal_verb_meanings,
    takes_an_object,
    verb_base,
    wordnet,
)

Direction = Literal["past", "future"]

#: "Store 4", "branch #12": a noun and its number, which Duckling would read as a day or an hour.
_ENTITY_NOUNS = ("store", "shop", "branch", "outlet", "location", "region", "staff", "employee", "team", "id")
#: A noun and its number or numbers ("stores 2 and 5", "store 1, 3 & 7", "store5").
_NOUN_AND_NUMBER = re.compile(
    r"\b([a-z]+)\s*(?:#|\s(?:number|no\.?|num)\s)?\s*\d+(?:\s*(?:,|&|and|or|vs\.?|versus)\s*#?\s*\d+(?![\d/:.]))*\b",
    re.I,
)


def entity_noun(word: str) -> bool:
    """Whether ``word`` is a noun things are numbered by here ("store", "Branches"), not a name."""
    word = word.lower()
    return (
        word in _ENTITY_NOUNS
        or word.removesuffix("es") in _ENTITY_NOUNS
        or word.removesuffix("s") in _ENTITY_NOUNS
        or business_noun(word)
    )


@functools.cache
def business_noun(word: str) -> bool:
    """Whether ``word``'s commonest noun sense is a place of business in WordNet ("boutique", "outlet",
    "supermarket", "emporium"): a store, whatever register names it."""
    reader = wordnet()
    base = reader.morphy(word.lower(), "n")
    senses = reader.synsets(base, "n") if base else []
    business = reader.synset("place_of_business.n.01")
    return bool(senses) and business in senses[0].closure(lambda sense: sense.hypernyms())


#: A capitalised word and a number ("Filiale 3", "Laden 5"): an id's noun, when the word is none of English's.
_WORD_AND_NUMBER = re.compile(
    r"(?<![.!?]\s)(?<!^)\b([A-Z][a-zà-ÿ]{3,})\s*#?\s*(\d{1,3})\b(?![.,:/]\d)"
    r"(?!\s*(?:%|percent|days?|weeks?|months?|years?|hours?|pts?|points?)\b)"
)


def _unknown_id_word(word: str) -> bool:
    """Whether ``word`` before a number is an id's noun English does not have ("Filiale", "Laden")."""
    return not entity_noun(word) and noun_first(word) is False


def unknown_numbered(text: str) -> str | None:
    """A word and number that number something in words WordNet has no noun for ("Filiale 3", "Laden 3":
    another language's store), the time said left out; None when there is none. Which entity it numbers
    is the user's to say: answering for every store would answer another question."""
    if said := time_mention(text):
        text = text.replace(said, " " * len(said))
    return next((m.group(0) for m in _WORD_AND_NUMBER.finditer(text) if _unknown_id_word(m.group(1))), None)


def _digits_in_place(text: str) -> str:
    """``text`` with each number said in words written as its digits padded to the words' length
    ("store six" -> "store 6  "), so offsets into it are offsets into ``text``."""
    chars = list(text)
    for span in duckling_parse(text, ("number",)):
        value = span["value"].get("value")
        start, end = int(span["start"]), int(span["end"])
        if not isinstance(value, int) or any(ch.isdigit() for ch in text[start:end]):
            continue
        digits = str(value)
        if len(digits) <= end - start:
            chars[start:end] = list(digits.ljust(end - start))
    return "".join(chars)


@functools.lru_cache(maxsize=1024)
def _mask_entities(text: str) -> str:
    """``text`` with each entity noun and its numbers blanked ("store six", "stores 2 and 5"), a slip
    of the noun too ("stroe 2"): Duckling would read "six in July" as 6 July. Kept per text: one
    question is masked by the window, date, period and figure readers in turn (a Duckling parse each)."""
    digits = _digits_in_place(text)
    chars = list(text)
    for match in _NOUN_AND_NUMBER.finditer(digits):
        word = match.group(1).lower()
        slip = len(word) >= 4 and difflib.get_close_matches(word, _ENTITY_NOUNS, n=1, cutoff=0.75)
        if word in _ENTITY_NOUNS or slip:
            end = match.end()
            while end < len(text) and text[end].isalpha():
                end += 1  # the rest of a number said in words ("six" is "6  " in ``digits``)
            # Not blanks: Duckling would read "at store 5 2 July" as "at 2" o'clock, across the gap.
            width = end - match.start()
            chars[match.start() : end] = " " + ";" * (width - 2) + " " if width > 2 else " " * width
    for match in _WORD_AND_NUMBER.finditer(text):
        if _unknown_id_word(match.group(1)):
            # "Filiale 3 in July": an id in a word English lacks, no 3 July.
            chars[match.start() : match.end()] = " " + ";" * (match.end() - match.start() - 2) + " "
    for span in duckling_parse(text, ("ordinal",)):
        # "the fifth store" is the store numbered 5, not the 5th of a month.
        start, end = int(span["start"]), int(span["end"])
        following = re.match(r"\s+([A-Za-z]+)", text[end:])
        if following and entity_noun(following.group(1)):
            chars[start:end] = " " * (end - start)
    return "".join(chars)


_QUARTER = re.compile(
    r"\b(?:(?:fiscal|fy|calendar)\s+)?(?:q([1-4])|(first|second|third|fourth|1st|2nd|3rd|4th)\s+quarter)"
    r"(?:\s+(?:of\s+)?(?:fy\s*)?'?(\d{4}|\d{2}))?\b",
    re.I,
)
_ORDINAL = {"first": 1, "second": 2, "third": 3, "fourth": 4, "1st": 1, "2nd": 2, "3rd": 3, "4th": 4}
#: A month's name or its usual shortening ("Sept", "Aug").
_MONTH_WORD = (
    r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sept?(?:ember)?|"
    r"oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)"
)
_MONTH_WORD_RE = re.compile(_MONTH_WORD, re.I)
_HALF_OF_MONTH = re.compile(
    rf"\b(first|second|1st|2nd|last)\s+half\s+of\s+({_MONTH_WORD})\.?(?:\s+(\d{{4}}))?\b", re.I
)
#: A month by the first three letters of its name.
_MONTHS = {name.lower()[:3]: number for number, name in enumerate(calendar.month_name) if name}
_YEAR = re.compile(r"\b(19|20)\d{2}\b")
_GRAIN_DAYS = {"second": 0, "minute": 0, "hour": 0, "day": 1, "week": 7}
#: Times of day ("at 10am", "about 2"): not a span of data or a deadline, and often a number misread.
_CLOCK_GRAINS = frozenset({"second", "minute", "hour"})
#: "in 60 days" comes back at the hour it is now; the words say it is a span of days.
_AMOUNT_AFTER = re.compile(
    r"\s*(?:%|percent\b|per\s*cent\b|pct\b|points?\b|pts?\b|pp\b|percentage\b|x\b|times\b)", re.I
)
_SPAN_UNIT = re.compile(r"\b(?:days?|weeks?|fortnights?|months?|quarters?|years?)\b", re.I)


@dataclass(frozen=True, kw_only=True)
class Window:
    """A span of time a request names: ``start`` inclusive, ``end`` exclusive (UTC)."""

    start: datetime
    end: datetime
    label: str
    """The words it was read from ("June 2026", "last quarter")."""
    reading: str | None = None
    """The guess the days rest on when the words alone do not settle them (a holiday in a calendar
    the text did not name: "Heritage Day as South Africa's calendar has it"): an answer over such a
    window says the reading it used and claims nothing."""

    def last_day(self) -> datetime:
        return self.end - timedelta(microseconds=1)

    def describe(self) -> str:
        # Said after "in": the label's own preposition ("in August", "over June and July") would repeat it.
        # "in during October" (a preposition the question put before its own) loses both.
        label = re.sub(r"^(?:(?:in|over|during|for|from)\s+)+", "", self.label, flags=re.I)
        return f"{label} ({self.start:%Y-%m-%d} to {self.last_day():%Y-%m-%d})"


#: Characters of a request Duckling reads.
PARSED_CHARS = 600
_LONG_NUMBER = re.compile(r"\d{7,}")


class _Duckling:
    """One Duckling runtime per process, started on first use (its Haskell runtime starts once)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._ready: tuple[Any, Any, Any] | None = None
        self._dimensions: dict[tuple[str, ...], Any] = {}

    def parse(
        self, text: str, now: datetime, dimensions: tuple[str, ...] = ("time",), long_digits: int = 7
    ) -> list[dict[str, Any]]:
        """Duckling's mentions of ``dimensions`` in ``text`` (the lending pack reads "number",
        "amount-of-money" and "duration" with it)."""
        import duckling  # the native library loads only where time is read

        # Its number rules are slow on long digit runs (7 s on 3,000 zeros): no date has 7 digits, and
        # a time is said in the first words of a request.
        long_number = _LONG_NUMBER if long_digits == 7 else re.compile(rf"\d{{{long_digits},}}")
        text = long_number.sub(lambda match: " " * len(match.group(0)), text[:PARSED_CHARS])

        with self._lock:
            if self._ready is None:
                duckling.init()
                zones = duckling.load_time_zones(str(_zoneinfo()))
                locale = duckling.default_locale_lang(duckling.parse_lang("EN"))
                self._ready = (duckling, zones, locale)
            module, zones, locale = self._ready
            if dimensions not in self._dimensions:
                self._dimensions[dimensions] = module.parse_dimensions(list(dimensions))
            reference = module.parse_ref_time(zones, "UTC", int(now.timestamp()))
            found: list[dict[str, Any]] = module.parse(
                text, module.Context(reference, locale), self._dimensions[dimensions], False
            )
        for item in found:
            _repair_units(item.get("value") or {})
        return found


def _repair_units(value: dict[str, Any]) -> None:
    """The binding hands a unit's UTF-8 bytes back read as Latin-1 ("Â£" for "£"): decoded again here,
    so a pound amount has the unit every reader compares with."""
    for part in (value, value.get("from") or {}, value.get("to") or {}):
        unit = part.get("unit")
        if isinstance(unit, str) and not unit.isascii():
            # A unit that is already text (not Latin-1 bytes of UTF-8) stays as it is.
            with contextlib.suppress(UnicodeEncodeError, UnicodeDecodeError):
                part["unit"] = unit.encode("latin-1").decode("utf-8")


def _zoneinfo() -> Path:
    system = Path("/usr/share/zoneinfo")
    if (system / "UTC").exists():
        return system
    import tzdata  # the Python package's copy where the system has none

    return Path(tzdata.__file__).parent / "zoneinfo"


_DUCKLING = _Duckling()


def duckling_parse(text: str, dimensions: tuple[str, ...], *, long_digits: int = 7) -> list[dict[str, Any]]:
    """Duckling's mentions of ``dimensions`` (not time: no reference time matters) in ``text``."""
    return _DUCKLING.parse(text, datetime(2000, 1, 1, tzinfo=UTC), dimensions, long_digits)


def duckling_parse_time(text: str) -> list[dict[str, Any]]:
    """Duckling's time mentions in ``text`` read against a midnight (2000-01-01, UTC): a clock time's
    value is then the hour as said ("at 3" is 03:00), for the caller to place in its day."""
    return _DUCKLING.parse(text, datetime(2000, 1, 1, tzinfo=UTC), ("time",))


#: An instant no "since 2pm" or "since the 1st" falls on: a span said to start at it starts now.
_NOW_PROBE = datetime(2000, 6, 15, 12, 34, 56, tzinfo=UTC)


def holds_from_now(text: str) -> bool:
    """Whether ``text`` says a span that starts now, or today, and has no end ("from now on", "from
    today onwards"), as Duckling reads it: the time a lasting change holds from, not a window of data
    ("since 2pm", "since the 1st" start at another time)."""
    starts = {_NOW_PROBE.isoformat(timespec="milliseconds"), "2000-06-15T00:00:00.000+00:00"}
    return any(
        mention.get("value", {}).get("type") == "interval"
        and "to" not in mention["value"]
        and str((mention["value"].get("from") or {}).get("value", "")) in starts
        for mention in _DUCKLING.parse(_mask_entities(text), _NOW_PROBE, ("time",))
    )


@dataclass(frozen=True)
class HoursOfDay:
    """The hours of every day a request keeps ("after 6pm", "mornings", "16:00 till midnight"), in
    minutes of the day: ``start`` inclusive, ``end`` exclusive (1440 is midnight at the day's end); a
    ``start`` after ``end`` runs over midnight ("10pm to 2am")."""

    start: int
    end: int
    said: str
    clock_spans: tuple[tuple[int, int], ...]
    """Where the clock times are said ("between 16:00 and midnight"): no day's date, so the window
    readers read the text without them. Parts of the day ("mornings") are left: "this morning" is a day."""


#: The parts of a day people name ("Saturday mornings", "at lunchtimes", "in the evenings"); how long
#: each runs is Duckling's ("in the morning" is 00:00-12:00). "Good morning" greets; "Burns Night",
#: "tonight" and "midnight" are no part of every day.
_PART_OF_DAY = re.compile(
    r"(?<!good\s)\b(?P<part>morning|afternoon|evening|lunch|(?-i:night))(?:\s?time)?s?\b(?!\s*[,!]\s*(?:$|[A-Z]))",
    re.I,
)
_DAY_MINUTES = 24 * 60


@functools.cache
def _part_of_day(part: str) -> tuple[int, int] | None:
    """The minutes Duckling gives the part of a day ``part`` names."""
    found = [
        item
        for item in duckling_parse_time(f"in the {part.lower()}")
        if item["value"].get("type") == "interval"
    ]
    return _clock_minutes(found[0]["value"], closed=False) if found else None


def _clock_minutes(value: dict[str, Any], *, closed: bool) -> tuple[int, int] | None:
    """A Duckling clock interval as minutes of the day; None when it keeps the whole day. A ``closed``
    interval ("7am to 3pm") ends with its last hour (Duckling's end is the hour after it); an open
    one ("before midday", "in the morning") ends where it says."""
    start_at, end_at = _instant(value.get("from")), _instant(value.get("to"))
    start = start_at.hour * 60 + start_at.minute if start_at else 0
    end = _DAY_MINUTES
    if end_at is not None:
        if closed and start_at is not None:
            end_at -= timedelta(**{f"{value['to'].get('grain', 'hour')}s": 1})
        end = end_at.hour * 60 + end_at.minute or _DAY_MINUTES
    if (start, end) == (0, _DAY_MINUTES) or start == end:
        return None
    return start, end


def _clock_mentions(text: str) -> list[tuple[tuple[int, int], tuple[int, int]]]:
    """Each clock interval ``text`` says, its words alone (Duckling reads "between 4pm and midnight in
    July" as one mention, and times it wrong): the minutes of the day it keeps and where it is said."""
    found = []
    for item in duckling_parse_time(text):
        value = item["value"]
        if value.get("type") != "interval" or not _clock_interval(value):
            continue
        start, end = int(item["start"]), int(item["end"])
        words = [(start + m.start(), start + m.end()) for m in re.finditer(r"[^\s,;!?()]+", text[start:end])]
        pieces = sorted(
            ((first, last) for first in range(len(words)) for last in range(first, len(words))),
            key=lambda piece: piece[0] - piece[1],
        )
        for first, last in pieces:
            span = (words[first][0], words[last][1])
            if (minutes := _clock_piece(text[span[0] : span[1]])) is not None:
                found.append((minutes, span))
                break
    return found


#: What makes a number a time of day ("6pm", "16:00", "16h", "noon"): bare numbers ("between 3 and 17
#: September") are days.
_CLOCK_SAID = re.compile(
    r"\d\s*(?:am|pm|a\.m\.|p\.m\.|h\b|:\d\d)|\b(?:noon|midnight|midday|o'?clock)\b", re.I
)


@functools.lru_cache(maxsize=4096)
def _clock_piece(piece: str) -> tuple[int, int] | None:
    """The minutes of the day ``piece`` keeps when it is one clock interval from its first word to its
    last, none of its words naming a day or longer ("after 6pm", not "June after 6pm"); else None."""
    if any(_names_days(word) for word in re.findall(r"[A-Za-z]+", piece)) or not _CLOCK_SAID.search(piece):
        return None
    found = [item for item in duckling_parse_time(piece) if item["value"].get("type") == "interval"]
    if len(found) != 1 or int(found[0]["start"]) != 0 or int(found[0]["end"]) != len(piece):
        return None
    value = found[0]["value"]
    start_at, end_at = _instant(value.get("from")), _instant(value.get("to"))
    if not _clock_interval(value) or (start_at and end_at and end_at - start_at > timedelta(days=1)):
        return None  # "the weekend" (Friday 6 pm to Monday): days, not hours of each
    return _clock_minutes(value, closed=bool(start_at and end_at))


@functools.cache
def _names_days(word: str) -> bool:
    """Whether Duckling reads ``word`` alone as a day or longer ("June", "Saturday", "yesterday")."""
    return any(item["value"].get("grain") not in (None, *_CLOCK_GRAINS) for item in duckling_parse_time(word))


@functools.lru_cache(maxsize=1024)
def hours_of_day(text: str) -> HoursOfDay | None:
    """The hours of every day ``text`` keeps, by clock times ("after 6pm", "between 16:00 and midnight",
    "7am to 3pm", "before midday") and parts of the day ("Saturday mornings", "lunchtimes"), all read by
    Duckling; said more than once ("Saturday mornings ... before midday"), the hours all of them keep.
    None when it names none."""
    masked = _mask_entities(text)
    found: list[tuple[tuple[int, int], tuple[int, int], bool]] = []
    for match in _PART_OF_DAY.finditer(masked):
        following = re.match(r"\s+([a-z]+)", masked[match.end() :], re.I)
        if following is not None and _period_of_work(following.group(1)):
            continue  # "the night shift": the business's own hours, not Duckling's night
        if (minutes := _part_of_day(match.group("part"))) is not None:
            found.append((minutes, match.span(), False))
    # Parts of the day blanked: Duckling would read "Saturday morning" as one Saturday's morning.
    clocks = _PART_OF_DAY.sub(lambda match: " " * len(match.group(0)), masked)
    for minutes, span in _clock_mentions(clocks):
        found.append((minutes, span, True))
    if not found:
        return None
    kept = {
        minute for minute in range(_DAY_MINUTES) if all(_keeps(minutes, minute) for minutes, _, _ in found)
    }
    if not kept or len(kept) == _DAY_MINUTES:
        return None  # hours that exclude one another ask nothing the data can answer
    # The one run of minutes kept (over midnight, "10pm to 2am", it starts late and ends early).
    start = min(minute for minute in kept if (minute - 1) % _DAY_MINUTES not in kept)
    end = next(
        minute for minute in range(start, start + _DAY_MINUTES + 1) if minute % _DAY_MINUTES not in kept
    )
    if end - start != len(kept):
        start, end = found[0][0]  # runs apart ("mornings and evenings"): the first said
    spans = sorted(span for _, span, _ in found)
    return HoursOfDay(
        start=start,
        end=end if end <= _DAY_MINUTES else end - _DAY_MINUTES,
        said=" ".join(text[a:b] for a, b in spans),
        clock_spans=tuple(span for _, span, clock in found if clock),
    )


def _keeps(minutes: tuple[int, int], minute: int) -> bool:
    start, end = minutes
    return start <= minute < end if start < end else (minute >= start or minute < end)


def clock_blanked(text: str) -> str:
    """``text`` without the clock times it keeps every day ("in June after 6pm" is June)."""
    hours = hours_of_day(text)
    if hours is None:
        return text
    for start, end in hours.clock_spans:
        text = text[:start] + " " * (end - start) + text[end:]
    return text


#: "now", "right now" said of the present state, not counted from ("three months from now" is kept).
_PRESENT = re.compile(r"\b(?<!from )(?:right\s+)?now\b", re.I)


def time_window(text: str, now: datetime, *, direction: Direction = "past") -> Window | None:
    """The one window ``text`` names, relative to ``now``; None when it names none. A window that
    reaches past ``now`` in a backward-looking question ends at ``now`` ("this year" so far)."""
    now = now.astimezone(UTC)
    # "in June after 6pm" asks about June, each day's evening: the hours narrow the rows, not the days.
    masked = spelled_for_duckling(_mask_entities(clock_blanked(text) if direction == "past" else text))
    open_ended = direction == "past" and _TO_NOW.search(masked) is not None
    # "what it is now" is no span, but Duckling reads "now by the end of March" as the instant now.
    masked = _PRESENT.sub(lambda match: " " * len(match.group(0)), masked)
    if _unnamed_holiday(masked):
        return None
    window = (
        (_part_of_period(masked, now) if direction == "past" else None)
        # "the fortnight before Diwali": a span counted from the day, not the day it is counted from.
        or (_anchored_span(masked, now) if direction == "past" else None)
        or _tax_year(masked, now)
        or _to_date(masked, now)
        or _full_units(masked, now)
        or _quarter(masked, now, direction)
        or _half_of_month(masked, now, direction)
        or _half_of_year(masked, now, direction)
        or _holiday(masked, now, direction)
        or _season(masked, now, direction)
        or _iso_week(masked, now, direction)
        or _weeks_back(masked, now, direction)
        or (_units_ago(masked, now) if direction == "past" else None)
        or _unit_before_last(masked, now)
    )
    if window is None:
        window = _from_duckling(masked, now, direction)
    if window is not None and open_ended and window.start < now:
        # "since the start of October", "from 1st June till date": from the day said to today.
        window = replace(window, end=now)
    if window is not None and direction == "past" and window.end > now and window.start < now:
        window = replace(window, end=now)
    return window


#: Words that name a period ("in Sept", "the fortnight before last", "H1"), read or not.
_PERIOD_WORDS = re.compile(
    rf"\b(?:{_MONTH_WORD}|days?|weeks?|fortnights?|months?|quarters?|years?|h[12]|q[1-4]|spring|summer|autumn|"
    r"winter|holidays?|christmas|easter|weekends?|yesterday|today|tonight|"
    # An occasion's name ("Burns Night", "Dragon Boat Festival", "la Fête nationale") and a year said.
    r"nights?|eve|festival|feast|f[êe]te|(?:19|20)\d{2})\b",
    re.I,
)


def unread_time(text: str) -> str | None:
    """The words of ``text`` that name a period when :func:`time_window` reads none from them (the
    question is about some time the reader cannot place); None when it names no period."""
    match = _PERIOD_WORDS.search(_mask_entities(text))
    return match.group(0) if match else None


@dataclass(frozen=True)
class OwnPeriod:
    """A period a request names by something only the business knows the time of ("while the 2-for-1
    offer was on", "during our summer promo", "on the late shift"): no calendar places it."""

    words: str
    needs: Literal["dates", "hours"]
    """What the user must say: the days it ran (an offer, a promotion) or the hours of each day (a shift)."""
    span: tuple[int, int]


#: "while the offer was on", "whilst we ran the promo": a period said as a clause (not "while store 2
#: ...", a contrast between members).
_WHILE = re.compile(
    r"\b(?:while|whilst)\s+(?P<words>(?:the|our|that|this|those|these|we|they|my|their)\b[^.?!;,()]*)", re.I
)
#: "during our summer promo", "throughout the roadworks": a period named by what went on in it.
_DURING = re.compile(
    r"\b(?:during|throughout|for\s+the\s+duration\s+of)\s+"
    r"(?P<words>(?:the|our|that|this|my|their|its)\s+[^.?!;,()]*?)(?=\s+(?:at|in|for|on|across|and)\b|[.?!;,()]|$)",
    re.I,
)
#: "on the late shift", "during the night shift": a period of work of each day, its noun among the
#: three words after the determiner.
_OF_EACH_DAY = re.compile(
    r"\b(?:on|during|in|for|across|over)\s+(?:the|our|a|their|my)\s+(?P<words>[a-z-]+(?:\s+[a-z-]+){0,2})",
    re.I,
)
#: The period of work WordNet files a shift under ("shift", "night shift", "watch").
_WORK_PERIOD = "hours.n.01"
#: How many of a noun's senses (commonest first) are read for a period of work: "shift" is one by its third.
_WORK_SENSES = 3


@functools.cache
def _period_of_work(noun: str) -> bool:
    """Whether ``noun`` (or the last two words joined: "night shift") is a period of work of each day
    in WordNet ("shift", "watch", "swing shift"), whose hours are the business's own."""
    reader = wordnet()
    base = reader.morphy(noun.lower(), "n")
    work = reader.synset(_WORK_PERIOD)
    return base is not None and any(
        work in sense.closure(lambda above: above.hypernyms())
        for sense in reader.synsets(base, "n")[:_WORK_SENSES]
    )


def own_period(text: str, now: datetime) -> OwnPeriod | None:
    """The period ``text`` names that only the user can place: a shift (its hours) when no clock time
    is said, or an offer, a promotion, a refit said with "while" or "during" (its days) when no
    other words of the text name a window. None when there is none, or the text says when it was."""
    masked = _mask_entities(text)
    for match in _OF_EACH_DAY.finditer(masked):
        for word in re.finditer(r"[a-z]+", match.group("words"), re.I):
            if _period_of_work(word.group(0)) and hours_of_day(text) is None:
                end = match.start("words") + word.end()
                return OwnPeriod(words=masked[match.start() : end], needs="hours", span=(match.start(), end))
    for match in (*_WHILE.finditer(masked), *_DURING.finditer(masked)):
        words = match.group("words").strip()
        named = time_window(words, now)
        if named is not None and not _event_named_by(words, named.label):
            continue  # "during the summer", "during the week of 7 September": a calendar's period
        rest = masked[: match.start()] + " " * (match.end() - match.start()) + masked[match.end() :]
        if time_window(rest, now) is not None:
            continue  # "... while the offer was on? It ran from the 10th to the 23rd of August."
        return OwnPeriod(words=match.group(0).strip(), needs="dates", span=match.span())
    return None


# -- times spelled so Duckling reads them ---------------------------------------------------------------

#: "w/c 14 Sept", "week commencing 14 Sept": the week that starts that day.
_WEEK_COMMENCING = re.compile(r"\bw/c\b\.?|\bweek\s+(?:commencing|beginning|starting)(?:\s+on)?\b", re.I)
#: "between the 3rd and 17th of Sept", "3 and 17 September": two days that share the month said once.
_SHARED_MONTH = re.compile(
    r"\b(?:the\s+)?(\d{1,2})(?:st|nd|rd|th)?\s*(and|to|until|till|through|thru|-|–)\s*(?:the\s+)?"
    rf"(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?({_MONTH_WORD})\b\.?",
    re.I,
)
_LONG_WORD = re.compile(r"\b[A-Za-z]{5,}\b")
_MONTH_NAMES = [name.lower() for name in calendar.month_name if name]


def _month_spelt(match: re.Match[str]) -> str:
    """A misspelt month's name as written ("spetember", "Febuary"); any other word as it is."""
    word = match.group(0)
    if word.lower() in _MONTH_NAMES or _MONTH_WORD_RE.fullmatch(word):
        return word
    close = difflib.get_close_matches(word.lower(), _MONTH_NAMES, n=1, cutoff=0.8)
    return close[0] if close else word


#: "feb end", "March-end": the end of that month, said the Indian and British way.
_MONTH_END = re.compile(rf"\b({_MONTH_WORD})\.?[\s-]+end\b", re.I)
#: "by month end", "before quarter-end": the end of the period we are in.
_PERIOD_END = re.compile(r"\b(?:the\s+)?(month|quarter|year)[\s-]+end\b", re.I)
#: Where a label names the end of a period ("before end of April").
_END_OF = re.compile(r"\bend\s+of\b", re.I)
#: "8/7", "02/07/2026": a date in digits, day and month in an order only the writer knows.
_SLASH_DATE = re.compile(r"(?<![\d/])(\d{1,2})/(\d{1,2})(?:/(\d{4}|\d{2}))?(?![\d/])")
#: Words that run a span on to today ("since July", "from 1 June till date", "so far").
_TO_NOW = re.compile(
    r"\bsince\b|\b(?:till|til|until|up\s+to|to)\s+(?:date|now|today)\b|\bso\s+far\b|\bonwards?\b", re.I
)


#: A text that says its day is a holiday.
_SAID_HOLIDAY = re.compile(r"\bholiday\b", re.I)


def _slash_order(text: str) -> Literal["day", "month"] | None:
    """Whether the digit dates of ``text`` are day-first or month-first: one part over 12 settles it
    for them all; None when it stays open (or there are none)."""
    pairs = [(int(match.group(1)), int(match.group(2))) for match in _SLASH_DATE.finditer(text)]
    if any(first > 12 >= second for first, second in pairs):
        return "day"
    if any(second > 12 >= first for first, second in pairs):
        return "month"
    if pairs and _SAID_HOLIDAY.search(text):
        # "on 7/4, the holiday": the order in which the dates are holidays (4 July, not 7 April).
        said = _YEAR.search(text)
        year = int(said.group(0)) if said else datetime.now(UTC).year
        days = {
            (day.month, day.day)
            for country, subdiv in _CALENDARS
            for day, _ in _holiday_days(country, subdiv, year)
        }
        month_first = all((first, second) in days for first, second in pairs)
        day_first = all((second, first) in days for first, second in pairs)
        if month_first != day_first:
            return "month" if month_first else "day"
    return None


def ambiguous_date(text: str) -> tuple[str, str] | None:
    """The two days a digit date may be ("8/7": 8 July or 7 August) when nothing in ``text`` settles
    which part is the day; None when it is settled or there is none."""
    if _slash_order(text) is not None:
        return None
    for match in _SLASH_DATE.finditer(_mask_entities(text)):
        first, second = int(match.group(1)), int(match.group(2))
        if first != second and 1 <= first <= 12 and 1 <= second <= 12:
            names = calendar.month_name
            return f"{first} {names[second]}", f"{second} {names[first]}"
    return None


#: The languages whose month names a date said the way its writer says it at home may use ("le 14
#: juillet", "14. Juli", "15 de junio de 2026"): their names come from the CLDR (Babel), not a list.
_DATE_LOCALES = ("fr", "de", "es", "it", "pt", "nl")


def _plain(word: str) -> str:
    """``word`` lower-cased without its accents ("août" -> "aout"), as people type it either way."""
    return "".join(ch for ch in unicodedata.normalize("NFKD", word.lower()) if not unicodedata.combining(ch))


def load_month_names() -> None:
    """Read the month names of other languages now (file reads: off the event loop, before serving)."""
    _foreign_months()


def load_world_holidays(year: int) -> None:
    """Read every country's holidays of ``year`` now, by their English names and by their names in every
    language (a parent that forks its workers shares them: the second took ~26 MB in each worker)."""
    _world_holidays(year)
    _holidays_by_first_words(year)


@functools.cache
def _foreign_months() -> tuple[re.Pattern[str], dict[str, int]]:
    """A pattern finding a month named in another language next to its day or year, and the month
    each such name is (English names and their shortenings are Duckling's own)."""
    from babel.dates import get_month_names

    names: dict[str, int] = {}
    for locale in _DATE_LOCALES:
        for number, name in get_month_names("wide", locale=locale).items():
            if _plain(name) not in _MONTHS_BY_NAME:
                names[_plain(name)] = number
    spelt = "|".join(sorted(names, key=len, reverse=True))
    pattern = re.compile(
        rf"\b(?:(\d{{1,2}})(?:er|\.|º|°)?\s+(?:de\s+)?({spelt})\b|({spelt})\b(?=\s+(?:de\s+)?\d{{4}}\b))"
        r"(?:\s+(?:de\s+)?(\d{4})\b)?",
        re.I,
    )
    return pattern, names


_MONTHS_BY_NAME = {name.lower() for name in calendar.month_name if name}
#: "15.06.2026", "1.7.26": a dotted date, day first wherever it is written so.
_DOTTED_DATE = re.compile(r"(?<![\d.])(\d{1,2})\.(\d{1,2})\.(\d{4}|\d{2})(?![\d.]|\.\d)")


def _in_english(text: str) -> str:
    """``text`` with a date said in another language's words or its dotted digits written in English
    ("le 14 juillet" -> "le 14 July", "15.06.2026" -> "15 June 2026"); Duckling reads English here."""
    pattern, names = _foreign_months()
    plain = _plain(text)
    if len(plain) == len(text):  # accents dropped in place; otherwise matched on the text as typed
        found = [(m.start(), m.end(), m) for m in pattern.finditer(plain)]
    else:
        found = [(m.start(), m.end(), m) for m in pattern.finditer(text)]
    for start, end, match in reversed(found):
        day, name, year = match.group(1), match.group(2) or match.group(3), match.group(4)
        month = calendar.month_name[names[_plain(name)]]
        said = " ".join(part for part in (day, month, year) if part)
        text = text[:start] + said + text[end:]

    def dotted(match: re.Match[str]) -> str:
        day, month, year = int(match.group(1)), int(match.group(2)), match.group(3)
        if not (1 <= month <= 12 and 1 <= day <= 31):
            return match.group(0)
        return f"{day} {calendar.month_name[month]} {year if len(year) == 4 else '20' + year}"

    text = _DOTTED_DATE.sub(dotted, text)
    # "am 9. September": a day written as an ordinal with a dot, before an English-spelt month.
    return re.sub(rf"\b(\d{{1,2}})\.\s+(?={_MONTH_WORD}\b)", r"\1 ", text, flags=re.I)


#: "through" after a word: a range's end ("May through July") or a verb's particle ("put through").
_THROUGH = re.compile(
    r"\b(?P<verb>[a-z]+)\s+(?P<particle>through|thru)\b(?P<preposition>\s+(?:in|on|at|during|over|across|since|for|before|after|by|between|from)\b)?",
    re.I,
)


def _particles_blanked(text: str) -> str:
    """``text`` without the "through" of a verb WordNet lists with it ("put through", "went through",
    "got through") or one a preposition follows ("through in June"): no range ends there, where
    Duckling would read "through in June" as from now to next June."""

    def blanked(match: re.Match[str]) -> str:
        base = verb_base(match.group("verb"))
        phrasal = base is not None and bool(wordnet().synsets(f"{base}_through", "v"))
        if not (phrasal or match.group("preposition")):
            return match.group(0)
        start, end = match.span("particle")
        at = match.start()
        said = match.group(0)
        return said[: start - at] + " " * (end - start) + said[end - at :]

    return _THROUGH.sub(blanked, text)


def spelled_for_duckling(text: str) -> str:
    """``text`` with the time shapes Duckling misreads written the way it reads them: a date in
    another language's words or dotted digits, a week commencing, two days sharing one month, digit
    dates in the order the text settles, "feb end", a verb's "through"."""
    text = _particles_blanked(_in_english(text))
    text = _WEEK_COMMENCING.sub("the week of", text)
    text = _LONG_WORD.sub(_month_spelt, text)
    text = _MONTH_END.sub(lambda m: f"end of {m.group(1)}", text)
    text = _PERIOD_END.sub(lambda m: f"the end of the {m.group(1).lower()}", text)
    text = _SHARED_MONTH.sub(
        lambda m: (
            f"{m.group(1)} {m.group(4)} {'and' if m.group(2) == 'and' else 'to'} {m.group(3)} {m.group(4)}"
        ),
        text,
    )
    order = _slash_order(text)

    def spelled(match: re.Match[str]) -> str:
        first, second = int(match.group(1)), int(match.group(2))
        day, month = (first, second) if order == "day" else (second, first)
        if not (1 <= month <= 12 and 1 <= day <= 31):
            return match.group(0)
        year = f" {match.group(3)}" if match.group(3) else ""
        return f"{day} {calendar.month_name[month]}{year}"

    return _SLASH_DATE.sub(spelled, text)


#: "our fiscal year starts on 1 May", "our FY runs April to March", "the financial year ends 31 March".
_FISCAL_START = re.compile(
    r"\b(?:fiscal|financial|fy|year)\b[^.?!]{0,40}?\b(?:(starts?|begins?|starting|beginning|runs?(?:\s+from)?|from)"
    r"|(ends?|ending|closes?|finishes?))\s+(?:on\s+|in\s+)?(?:the\s+)?(?:\d{1,2}(?:st|nd|rd|th)?\s+(?:of\s+)?)?"
    rf"({_MONTH_WORD})\b",
    re.I,
)


def fiscal_year_start(text: str) -> int | None:
    """The month a business's financial year starts in, when ``text`` says it (or says when it ends)."""
    match = _FISCAL_START.search(text)
    if match is None:
        return None
    month = _MONTHS[match.group(3).lower()[:3]]
    return month if match.group(1) else month % 12 + 1


def fiscal_quarter(text: str, now: datetime, start_month: int) -> Window | None:
    """The financial quarter ``text`` names ("fiscal Q1") in a year starting in ``start_month``: the
    latest such quarter that has started."""
    match = _QUARTER.search(text)
    if match is None:
        return None
    number = int(match.group(1)) if match.group(1) else _ORDINAL[match.group(2).lower()]
    if (named := _year_of(match.group(3), now)) is not None:
        # "Q4 of FY26": a financial year is named by the calendar year it ends in (FY26 starting on 1
        # October is October 2025 to September 2026), as governments and companies name theirs.
        first = datetime(named - (1 if start_month > 1 else 0), start_month, 1, tzinfo=UTC)
        start = _add(first, 3 * (number - 1), "month")
        return Window(start=start, end=_add(start, 3, "month"), label=match.group(0).strip())
    first = datetime(now.year, start_month, 1, tzinfo=UTC)
    start = _add(first, 3 * (number - 1), "month")
    while start > now:
        start = _add(start, -12, "month")
    while _add(start, 12, "month") <= now:
        start = _add(start, 12, "month")
    return Window(start=start, end=_add(start, 3, "month"), label=match.group(0).strip())


#: "H1", "the first half of the year", "second half of 2026".
_HALF_OF_YEAR = re.compile(
    r"\b(?:h([12])|(first|second|1st|2nd)\s+half\s+of\s+(?:the\s+)?(?:year|(\d{4})))(?:\s+(?:of\s+)?(\d{4}))?\b",
    re.I,
)
#: A season said as a period ("over the summer", "last winter", "summer 2026"); "fall" only so.
_SEASON = re.compile(
    r"\b(?:(?:the|this|last|in|over|during)\s+)(spring|summer|autumn|fall|winter)\b(?:\s+(?:of\s+)?(\d{4}))?"
    r"|\b(spring|summer|autumn|winter)\s+(\d{4})\b",
    re.I,
)
#: Meteorological seasons, as retail reports them: the first month of each.
_SEASON_START = {"spring": 3, "summer": 6, "autumn": 9, "fall": 9, "winter": 12}
#: "the fortnight before last", "the month before last".
#: "the month before last", and as Indian English says it, "last to last month".
_BEFORE_LAST = re.compile(
    r"\b(?:the\s+)?(?:(week|fortnight|month|quarter|year)\s+before\s+last|last\s+to\s+last\s+"
    r"(week|fortnight|month|quarter|year))\b",
    re.I,
)
_COUNT = r"(\d+|a|an|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve)"
#: "the fortnight ending 13 September", "14 days to 13 Sept", "the week after the week of 14 Sept".
_ANCHORED = re.compile(
    rf"\b(?:(?:the|a|last)\s+)?(?:{_COUNT}\s+)?(days?|weeks?|fortnights?|months?)\s+"
    r"(ending|ended|up\s+to|until|till|through|to|leading\s+up\s+to|before|starting|from|beginning|after|following)"
    r"\s+(?:on\s+)?(.+)$",
    re.I,
)
_SPAN_DAYS = {"day": 1, "week": 7, "fortnight": 14}
#: "the last two weeks of August", "the first 10 days of Q3": the start or the end of a named period.
_PART_OF = re.compile(
    rf"\b(?:the\s+)?(first|last|final|opening|closing)\s+(?:{_COUNT}\s+)?(days?|weeks?|fortnights?)\s+of\s+(.+)$",
    re.I,
)


def _latest(start_of: Any, year: int | None, now: datetime, direction: Direction) -> Window | None:
    """The period ``start_of(year)`` builds, in the year said or else the latest one that has
    started (past) or not yet ended (future)."""
    if year is not None:
        window: Window = start_of(year)
        return window
    window = start_of(now.year)
    if direction == "past" and window.start > now:
        window = start_of(now.year - 1)
    elif direction == "future" and window.end <= now:
        window = start_of(now.year + 1)
    return window


def _half_of_year(text: str, now: datetime, direction: Direction) -> Window | None:
    match = _HALF_OF_YEAR.search(text)
    if match is None:
        return None
    first = (match.group(1) or "") == "1" or (match.group(2) or "").lower() in ("first", "1st")
    said = match.group(3) or match.group(4)

    def half(year: int) -> Window:
        start = datetime(year, 1 if first else 7, 1, tzinfo=UTC)
        return Window(start=start, end=_add(start, 6, "month"), label=match.group(0).strip())

    return _latest(half, int(said) if said else None, now, direction)


def _season(text: str, now: datetime, direction: Direction) -> Window | None:
    match = _SEASON.search(text)
    if match is None:
        return None
    name = (match.group(1) or match.group(3)).lower()
    said = match.group(2) or match.group(4)

    def season(year: int) -> Window:
        # Winter runs December to February: the winter of a year starts in the December before it.
        start = datetime(year - 1 if name == "winter" else year, _SEASON_START[name], 1, tzinfo=UTC)
        return Window(start=start, end=_add(start, 3, "month"), label=match.group(0).strip())

    return _latest(season, int(said) if said else None, now, direction)


#: The calendars holidays are named in (Canada by Ontario, whose days most of it keeps), and the words
#: that point to one ("bank holiday" is England's).
_CALENDARS = (("US", None), ("GB", "ENG"), ("IN", None), ("AU", None), ("CA", "ON"))
#: Calendars read when the text names their country, or when no calendar above has the holiday it
#: names ("Heritage Day", "Dragon Boat Festival", "the June bank holiday"): then the days are a guess
#: the answer states (``Window.reading``), since another country may keep a day of that name.
_MORE_CALENDARS = (
    ("IE", None), ("GB", "SCT"), ("GB", "WLS"), ("NZ", None), ("ZA", None), ("SG", None), ("CN", None),
    ("FR", None), ("DE", None),
)  # fmt: skip
#: How a text names a calendar's country (its name, its people's adjective, its usual shortening).
_COUNTRY_WORDS = {
    ("US", None): r"u\.s\.a?\.?|usa|america|american|united\s+states|stateside",
    ("GB", "ENG"): r"uk|u\.k\.|britain|british|england|english|hmrc",
    ("IN", None): r"india|indian",
    ("AU", None): r"australia|australian|aussie|oz",
    ("CA", "ON"): r"canada|canadian|ontario",
    ("IE", None): r"ireland|irish|eire|éire",
    ("GB", "SCT"): r"scotland|scottish|scots",
    ("GB", "WLS"): r"wales|welsh",
    ("NZ", None): r"new\s+zealand|nz|kiwi|aotearoa",
    ("ZA", None): r"south\s+africa|south\s+african|sa",
    ("SG", None): r"singapore|singaporean",
    ("CN", None): r"china|chinese|prc",
    ("FR", None): r"france|french",
    ("DE", None): r"germany|german",
}
_COUNTRY_NAMES = {
    ("US", None): "the US", ("GB", "ENG"): "England", ("IN", None): "India", ("AU", None): "Australia",
    ("CA", "ON"): "Canada (Ontario)", ("IE", None): "Ireland", ("GB", "SCT"): "Scotland",
    ("GB", "WLS"): "Wales", ("NZ", None): "New Zealand", ("ZA", None): "South Africa",
    ("SG", None): "Singapore", ("CN", None): "China", ("FR", None): "France", ("DE", None): "Germany",
}  # fmt: skip


def _countries_named(text: str) -> list[tuple[str, str | None]]:
    """The calendars whose country ``text`` names ("Canadian one, eh", "china national day"), in the
    order they are said."""
    found = []
    for calendar_of, words in _COUNTRY_WORDS.items():
        # Short forms only as written ("NZ", "SA"): "sa" or "oz" in lower case are other words.
        if match := re.search(rf"\b(?:{words})\b", text, re.I):
            said = match.group(0)
            if len(said) <= 3 and not said.isupper() and "." not in said:
                continue
            found.append((match.start(), calendar_of))
    return [calendar_of for _, calendar_of in sorted(found)]


_BANK_HOLIDAY = re.compile(r"\bbank\s+holidays?\b", re.I)
#: What a holiday's name says around it: "the late May bank holiday weekend", "Thanksgiving week".
_HOLIDAY_PART = re.compile(
    r"\s*(?:bank\s+holiday\s+|holiday\s+|day\s+)?(long\s+weekend|weekend|week)\b"
    # "the national day holiday", "the Christmas break", "National Day golden week": its days off.
    r"|\s*(?:day\s+)?(holidays?|break|golden\s+week)\b",
    re.I,
)
#: Names a holiday goes by that are not its calendar's (the ``holidays`` package names each day once):
#: (the words, the calendar's name, its country).
_HOLIDAY_ALIASES = (
    (r"juneteenth", "Juneteenth National Independence Day", "US"),
    (r"(?:the\s+)?(?:4th|fourth)\s+of\s+july|july\s+(?:4th|fourth)", "Independence Day", "US"),
    (r"mlk\s+day|martin\s+luther\s+king\s+day", "Martin Luther King Jr. Day", "US"),
    (r"presidents'?\s+day", "Washington's Birthday", "US"),
    (r"i-day", "Independence Day", "IN"),
    (r"gandhi\s+jayanti", "Mahatma Gandhi's Birthday", "IN"),
    (r"deepavali", "Diwali", "IN"),
)
#: Days said after a holiday's name ("Chuseok 3 days", "Golden Week, all seven days").
_DAYS_SAID = re.compile(
    r"\s*,?\s*(?:all\s+)?(?:\d+|two|three|four|five|six|seven|eight|nine|ten)[\s-]+days?\b", re.I
)
#: "over Chuseok", "over the Easter": the holiday's days, all of them.
_OVER = re.compile(r"\bover\s+(?:the\s+)?$", re.I)
_WHEN_IN_MONTH = re.compile(rf"\b(early|late|end\s+of|start\s+of)?\s*({_MONTH_WORD})\.?\s*$", re.I)
_HOLIDAY_YEAR = re.compile(r"\s*(?:(?:of\s+)?(\d{4})|(next\s+year)|(this\s+year)|(last\s+year))\b", re.I)


@functools.lru_cache(maxsize=128)
def _holiday_days(
    country: str, subdiv: str | None, year: int, *, days_off: bool = False
) -> tuple[tuple[datetime, str], ...]:
    """A country's holidays of ``year`` (the ``holidays`` package), Easter Sunday among them: "Easter"
    names a weekend its Friday and Monday stand around. The days people name without having them off
    (the US "unofficial" ones: Mother's Day, Halloween, St Patrick's Day) are left out with ``days_off``,
    which a long weekend is made of."""
    import holidays
    from dateutil.easter import easter

    kind = holidays.country_holidays(country, subdiv=subdiv)
    named = {"public", "optional"} | (set() if days_off else {"unofficial"})
    categories = named & set(getattr(kind, "supported_categories", ("public",)))
    kept = holidays.country_holidays(country, subdiv=subdiv, years=[year], categories=tuple(categories))
    days = [
        (datetime(d.year, d.month, d.day, tzinfo=UTC), name)
        for d, names in kept.items()
        for name in names.split("; ")
    ]
    sunday = easter(year)
    days.append((datetime(sunday.year, sunday.month, sunday.day, tzinfo=UTC), "Easter Sunday"))
    return tuple(sorted(days))


@functools.cache  # a calendar's few hundred names, read for every time mention
def _holiday_name(name: str) -> re.Pattern[str]:
    """The words a holiday's calendar name is said in: "Thanksgiving" for "Thanksgiving Day", "Easter"
    for "Easter Sunday"; a trailing "Day" or "Sunday" is left out only after a long word of its own."""
    name = re.sub(r"\s*\(.*?\)", "", name)  # "(observed)", "Chinese New Year (Spring Festival)"
    # "St Patrick's Day" for "Saint Patrick's Day"; "Mothers Day" for "Mother's Day".
    words = [
        r"(?:saint|st\.?)" if word.lower() == "saint" else re.escape(word).replace("'", "'?")
        for word in re.split(r"\s+", name.strip())
    ]
    if len(words) >= 2 and words[-1].lower() in ("day", "sunday") and len(words[-2]) >= 6:
        head = r"\s+".join(words[:-1])
        return re.compile(rf"\b{_either_spelling(head)}(?:\s+{words[-1]})?\b", re.I)
    spaced = r"\s+".join(words)
    return re.compile(rf"\b{_either_spelling(spaced)}\b", re.I)


def _either_spelling(pattern: str) -> str:
    """A name's "-or" words either way they are spelt ("Labor" and "Labour")."""
    return re.sub(r"(?<=[a-z])or\b", "ou?r", pattern)


def _unnamed_holiday(text: str) -> bool:
    """ "the Whitsun bank holiday": a bank holiday named by a word no calendar here has (nor a month):
    which days it is takes the user's word, never another holiday's or the weekend's."""
    bank = _BANK_HOLIDAY.search(text)
    if bank is None or _WHEN_IN_MONTH.search(text[: bank.start()]):
        return False
    # Any calendar read here may name it: Scotland's "Summer Bank Holiday" is no England's day.
    if any(
        _holiday_name(name).search(text)
        for country, subdiv in (*_CALENDARS, *_MORE_CALENDARS)
        for _, name in _holiday_days(country, subdiv, 2026)
    ):
        return False
    qualifier = re.search(r"([A-Za-z]+)\s*$", text[: bank.start()])
    return qualifier is not None and qualifier.group(1).lower() not in _NOT_A_HEAD


_Named = tuple[int, int, str, str, str | None]  # start, end, the calendar's name, country, subdivision


def _holiday_named(text: str, calendars: Sequence[tuple[str, str | None]], year: int) -> _Named | None:
    """The holiday of ``calendars`` that ``text`` names: the longest name said; a name two countries
    share ("Independence Day") is the country's whose holidays the text names more often ("... on
    Independence Day, for the I-Day offer"), else the one listed first."""
    named: list[_Named] = []
    for country, subdiv in calendars:
        for _, name in _holiday_days(country, subdiv, year):
            if "substituted" in name:  # China's working weekends swapped for days off: no names
                continue
            if match := _holiday_name(name).search(text):
                named.append((match.start(), match.end(), name, country, subdiv))
        for words, name, of in _HOLIDAY_ALIASES:
            if of == country and (match := re.search(rf"\b{words}\b", text, re.I)):
                named.append((match.start(), match.end(), name, country, subdiv))
    votes = Counter(
        country for _, _, country in {(start, end, country) for start, end, _, country, _ in named}
    )
    return max(named, key=lambda item: (item[1] - item[0], votes[item[3]]), default=None)


def _lengthening(name: str, year: int) -> tuple[str, str | None] | None:
    """The first usual calendar that keeps the holiday ``name`` with another day off within three days
    of it (a long weekend's Friday or Monday); None when none does."""
    pattern = _holiday_name(name)
    for country, subdiv in _CALENDARS:
        days = _holiday_days(country, subdiv, year, days_off=True)
        named = [day for day, other in days if pattern.fullmatch(_unbracketed(other))]
        if any(
            day != other and abs((day - other).days) <= 3 and not pattern.fullmatch(_unbracketed(label))
            for other in named
            for day, label in days
        ):
            return country, subdiv
    return None


@functools.lru_cache(maxsize=4)
def _world_holidays(year: int) -> tuple[tuple[str, str, datetime], ...]:
    """Every country's public holidays of ``year`` in the ``holidays`` package, by their English names,
    with the country (about a thousand names; a fifth of a second, once a year)."""
    import holidays

    days: set[tuple[str, str, datetime]] = set()
    for country in holidays.list_supported_countries():
        kept = holidays.country_holidays(country, years=[year], language="en_US")
        days |= {
            (name, country, datetime(d.year, d.month, d.day, tzinfo=UTC))
            for d, names in kept.items()
            for name in names.split("; ")
        }
    return tuple(sorted(days))


@functools.lru_cache(maxsize=4)
def _world_holidays_by_head(year: int) -> dict[str, tuple[int, ...]]:
    """The places in ``_world_holidays(year)`` of the names that begin with each word."""
    places: dict[str, list[int]] = defaultdict(list)
    for place, (name, _, _) in enumerate(_world_holidays(year)):
        head = re.search(r"[a-z]+", name.lower())
        if head is not None:
            places[head.group(0)].append(place)
    return {head: tuple(found) for head, found in places.items()}


@functools.lru_cache(maxsize=256)
def _dated_alike_everywhere(name: str, year: int) -> bool:
    """Whether every calendar in the ``holidays`` package that keeps a day called ``name`` keeps it on
    the same days ("Waitangi Day": New Zealand's alone; "Mid-Autumn Festival": the same lunar day
    wherever it is kept), so the name settles its days; "National Day" and "Republic Day" fall on
    different days in different countries, so a guess among them is no reading of the name."""
    pattern = _holiday_name(name)
    days = {day for other, _, day in _world_holidays(year) if pattern.fullmatch(_unbracketed(other))}
    return bool(days) and len(days) <= 3 and max(days) - min(days) <= timedelta(days=2)


def _world_holiday_named(text: str, year: int) -> _Named | None:
    """A holiday no calendar read here has, named in ``text`` by a name every calendar of the
    ``holidays`` package that keeps it dates alike ("Tiradentes' Day": Brazil's alone): the longest
    such name said, read in its country's own calendar (and language, for the days it names)."""
    words = set(re.findall(r"[a-z]+", text.lower()))
    if "st" in words:
        words.add("saint")
    by_head = _world_holidays_by_head(year)
    # Most names share no word with the text: no pattern is tried. The names whose first word is said,
    # in the index's order (the first of two matches as long is kept).
    places = sorted(place for word in words for place in by_head.get(word, ()))
    world = _world_holidays(year)
    best: _Named | None = None
    for name, country, day in (world[place] for place in places):
        match = _holiday_name(name).search(text)
        if match is None or not match.group(0)[:1].isupper() or not _dated_alike_everywhere(name, year):
            continue  # a proper name is written as one ("a hot summer day" names no day of Albania's)
        said = _unbracketed(name).lower().split()
        if len(match.group(0).split()) < len(said) and wordnet().synsets(said[0].strip("'")):
            continue  # "Summer" for "Summer Day": an English word said alone names no holiday
        own = next((other for when, other in _holiday_days(country, None, year) if when == day), None)
        if own is not None and (best is None or match.end() - match.start() > best[1] - best[0]):
            best = (match.start(), match.end(), own, country, None)
    return best


@functools.lru_cache(maxsize=2)
def _holidays_in_every_language(year: int) -> tuple[tuple[str, str, str | None, datetime], ...]:
    """Every holiday of ``year`` the ``holidays`` package keeps, in every country and subdivision, by its
    name in each language the package has for it ("Fête nationale du Québec", "Saint Jean Baptiste
    Day"): (name, country, subdivision, day). Read once a year, and kept on disk for the next process
    (``holiday_names``)."""
    return cached_holidays(_read_holidays_in_every_language, year)


def _read_holidays_in_every_language(year: int) -> tuple[tuple[str, str, str | None, datetime], ...]:
    """``_holidays_in_every_language`` read from the package: some six thousand calendars, ~2 CPU-s."""
    import holidays

    days: set[tuple[str, str, str | None, datetime]] = set()
    for country, subdivisions in holidays.list_supported_countries().items():
        languages = getattr(holidays.country_holidays(country), "supported_languages", ()) or (None,)
        for subdiv in (None, *subdivisions):
            for language in languages:
                kept = holidays.country_holidays(country, subdiv=subdiv, years=[year], language=language)
                days |= {
                    (name, country, subdiv, datetime(d.year, d.month, d.day, tzinfo=UTC))
                    for d, names in kept.items()
                    for name in names.split("; ")
                }
    return tuple(sorted(days, key=lambda item: (item[3], item[0], item[1], item[2] or "")))


@functools.lru_cache(maxsize=2)
def _holidays_by_first_words(year: int) -> dict[tuple[str, str], list[tuple[str, str, str | None, datetime]]]:
    """``_holidays_in_every_language`` by the first two words of each name, lower-cased (a text is held
    only against the names that open with two of its words)."""
    index: dict[tuple[str, str], list[tuple[str, str, str | None, datetime]]] = {}
    for item in _holidays_in_every_language(year):
        head = re.findall(r"[^\W\d_]+", item[0].lower())[:2]
        if len(head) == 2:
            index.setdefault((head[0], head[1]), []).append(item)
    return index


def _leading_names(name: str) -> list[re.Pattern[str]]:
    """The words a holiday's name is said in, in any language: its whole name, or its first two words or
    more when they are a name of their own ("la Saint-Jean" for "Saint Jean Baptiste Day", "Fête
    nationale" for "Fête nationale du Québec"); words may be joined by hyphens."""
    words = re.findall(r"[^\W\d_]+(?:'[^\W\d_]+)?", _unbracketed(name))
    found = []
    for count in range(len(words), 1, -1):
        joined = r"[\s-]+".join(re.escape(word).replace("'", "'?") for word in words[:count])
        found.append(re.compile(rf"(?<![^\W\d_]){joined}(?![^\W\d_])", re.I))
    return found


def _holiday_in_any_language(text: str, year: int) -> _Named | None:
    """A holiday named in ``text`` in any language or region's calendar ("la Saint-Jean (Fête nationale)":
    Quebec's 24 June), read when no calendar read in English names it. Each name said points at the days
    of the calendars keeping a holiday of that name; the day most of the names said point at settles it,
    when one day does ("Fête nationale" alone is France's 14 July and Quebec's 24 June: no day)."""
    said_words = re.findall(r"[^\W\d_]+", text)
    if not any(word[:1].isupper() for word in said_words[1:]):
        return None  # a holiday's name is a proper name, written as one
    lowered = [word.lower() for word in said_words]
    index = _holidays_by_first_words(year)
    named = [item for pair in set(itertools.pairwise(lowered)) for item in index.get(pair, ())]
    said: dict[tuple[int, int], set[tuple[datetime, str, str | None]]] = {}
    for name, country, subdiv, day in named:
        for pattern in _leading_names(name):
            if match := pattern.search(text):
                said.setdefault((match.start(), match.end()), set()).add((day, country, subdiv))
                break
    # "la Fête nationale du Québec": the longest name said stands, not France's "Fête nationale" inside it.
    said = {
        span: kept
        for span, kept in said.items()
        if not any(o != span and o[0] <= span[0] and span[1] <= o[1] for o in said)
    }
    if not said:
        return None
    votes = Counter(day for kept in said.values() for day in {day for day, _, _ in kept})
    ranked = votes.most_common(2)
    if len(ranked) > 1 and ranked[0][1] == ranked[1][1]:
        return None
    day = ranked[0][0]
    spans = [span for span, kept in said.items() if any(when == day for when, _, _ in kept)]
    start, end = min(spans)
    country, subdiv = next(
        (c, sd) for span in spans for when, c, sd in sorted(said[span], key=str) if when == day
    )
    own = next((other for when, other in _holiday_days(country, subdiv, year) if when == day), None)
    return None if own is None else (start, end, own, country, subdiv)


def _kept_alike(found: _Named, year: int) -> bool:
    """Whether the holiday ``found`` names is kept on the same days by two or more of the calendars
    read on a guess ("Ascension Day", "Pentecost Monday"), or by every calendar that keeps a day of its
    name (``_dated_alike_everywhere``): a feast, or a day only one country keeps, not a guess."""
    if _dated_alike_everywhere(found[2], year):
        return True
    pattern = _holiday_name(found[2])
    kept = [
        frozenset(
            day for day, name in _holiday_days(country, subdiv, year) if pattern.fullmatch(_unbracketed(name))
        )
        for country, subdiv in _MORE_CALENDARS
    ]
    kept = [days for days in kept if days]
    return len(kept) >= 2 and len(set(kept)) == 1


def _unbracketed(name: str) -> str:
    return re.sub(r"\s*\(.*?\)", "", name)


def _holiday(text: str, now: datetime, direction: Direction) -> Window | None:
    """A holiday named in ``text`` as its country's calendar dates it: the day, or its week (Monday to
    Sunday) or its weekend (the holiday joined to the nearest Saturday and Sunday, with the calendar's
    holidays next to them: Easter's is Good Friday to Easter Monday). "The (late) May bank holiday" is
    the English bank holiday of that month; the latest that has come (past) or the next (future)."""
    bank = _BANK_HOLIDAY.search(text)
    said_countries = _countries_named(text)
    # "Canadian Thanksgiving", "china national day": the country said is the calendar meant.
    home = [c for c in _CALENDARS if c[0] == "GB"] if bank else list(_CALENDARS)
    found = _holiday_named(text, said_countries or home, now.year)
    if found is None and said_countries and not bank:
        # A country said that keeps no day of that name ("our US stores on Boxing Day"): the usual
        # calendars, as if none were said.
        found = _holiday_named(text, home, now.year)
    guessed = False
    if found is None and not said_countries and not bank:
        # A holiday none of the usual calendars has: another country's, read as a guess said so.
        found = _holiday_named(text, list(_MORE_CALENDARS), now.year)
        guessed = found is not None and not _kept_alike(found, now.year)
    if found is None and not bank:
        # Nor any of those: a day only one country keeps, or every country alike, settles its days.
        found = _world_holiday_named(text, now.year)
    if found is None and not bank:
        # Nor in English: a calendar's own language or a region's ("la Saint-Jean", Quebec's).
        found = _holiday_in_any_language(text, now.year)
    month: tuple[str | None, int] | None = None
    if found is None and bank is not None:
        said = _WHEN_IN_MONTH.search(text[: bank.start()])
        if said is None and _unnamed_holiday(text):
            return None
        month = ((said.group(1) or "").lower() or None, _MONTHS[said.group(2).lower()[:3]]) if said else None
        # "the June bank holiday": England's, or (none that month) a calendar that has one then.
        banked = [c for c in said_countries or _CALENDARS if c[0] == "GB"] + [
            c for c in said_countries or _MORE_CALENDARS if c not in _CALENDARS
        ]
        keeping = [
            c
            for c in banked
            if month is None
            or any(
                day.month == month[1] and _BANK_HOLIDAY.search(other)
                for day, other in _holiday_days(c[0], c[1], now.year)
            )
        ]
        country, subdiv = keeping[0] if keeping else ("GB", "ENG")
        guessed = (country, subdiv) != ("GB", "ENG") and not said_countries
        found = (said.start() if said else bank.start(), bank.end(), "", country, subdiv)
    if found is None:
        return None
    start_at, end_at, name, country, subdiv = found
    part = _HOLIDAY_PART.match(text, end_at)
    if name and not said_countries and part and part.group(1) and part.group(1).lower().startswith("long"):
        # "the Easter long weekend": a weekend made long by days off next to the holiday, so the first
        # usual calendar that keeps such days (England's Good Friday and Easter Monday; the US keeps
        # neither), not one in which it is a plain weekend.
        country, subdiv = _lengthening(name, now.year) or (country, subdiv)
    after = part.end() if part else end_at
    year_said = _HOLIDAY_YEAR.match(text, after)

    def days_of(year: int) -> list[datetime]:
        days = _holiday_days(str(country), subdiv, year)
        if name:
            pattern = _holiday_name(name)
            same = [
                (day, other) for day, other in days if pattern.fullmatch(re.sub(r"\s*\(.*?\)", "", other))
            ]
            # The day itself is meant, not the day off in its stead, when the calendar has both.
            itself = [day for day, other in same if "(observed)" not in other]
            return itself or [day for day, _ in same]
        picked = [day for day, other in days if month is None or day.month == month[1]]
        picked = [day for day in picked if day.weekday() != 6]  # Easter Sunday is no bank holiday
        if (country, subdiv) != ("GB", "ENG"):
            # Another calendar's days of that month are not all bank holidays (Ireland's June has one).
            picked = [day for day in picked if any(d == day and _BANK_HOLIDAY.search(o) for d, o in days)]
        if month is not None and month[0] in ("early", "start of") and picked:
            return picked[:1]
        if month is not None and month[0] in ("late", "end of") and picked:
            return picked[-1:]
        return picked

    def window_of(day: datetime) -> Window:
        label = text[start_at : year_said.end() if year_said else after].strip()
        kind = (part.group(1).lower() if part and part.group(1) else "").replace("long ", "")
        if part and part.group(2):
            # The days off it stands in: the calendar's holidays (days in lieu and days swapped for
            # worked weekends too) and weekends next to it ("golden week": China's 1-7 October).
            off = {
                d
                for year in (day.year - 1, day.year, day.year + 1)
                for d, _ in _holiday_days(str(country), subdiv, year, days_off=True)
            }
            first, last = day, day
            while first - timedelta(days=1) in off or (first - timedelta(days=1)).weekday() >= 5:
                first -= timedelta(days=1)
            while last + timedelta(days=1) in off or (last + timedelta(days=1)).weekday() >= 5:
                last += timedelta(days=1)
            return Window(start=first, end=last + timedelta(days=1), label=label, reading=reading)
        if kind == "week":
            start = day - timedelta(days=day.weekday())
            return Window(start=start, end=start + timedelta(days=7), label=label, reading=reading)
        if kind == "weekend":
            saturday = day + timedelta(days=(5 - day.weekday()) % 7)
            if day.weekday() in (0, 1, 6):  # Monday, Tuesday, Sunday: the weekend just before
                saturday = day - timedelta(days=(day.weekday() - 5) % 7)
            start, end = min(day, saturday), max(day, saturday + timedelta(days=1)) + timedelta(days=1)
            holidays_near = {d for d, _ in _holiday_days(str(country), subdiv, day.year, days_off=True)}
            while start - timedelta(days=1) in holidays_near:
                start -= timedelta(days=1)
            while end in holidays_near:
                end += timedelta(days=1)
            return Window(start=start, end=end, label=label, reading=reading)
        # A holiday of several days in a row (China's National Day, 1-3 October) is one window.
        first, last = day, day
        while first - timedelta(days=1) in run:
            first -= timedelta(days=1)
        while last + timedelta(days=1) in run:
            last += timedelta(days=1)
        return Window(start=first, end=last + timedelta(days=1), label=label, reading=reading)

    run = {day for year in (now.year - 1, now.year, now.year + 1) for day in days_of(year)} if name else set()
    if name and len(run) <= 3 and (_DAYS_SAID.match(text, end_at) or _OVER.search(text[:start_at])):
        # "Chuseok 3 days", "over Chuseok": a holiday whose own name is on one day a year is kept over the
        # days its calendar names after it ("The day preceding Chuseok", "The second day of Chuseok").
        # (A name on several days, China's New Year, is those days already.)
        pattern = _holiday_name(name)
        run |= {
            day
            for year in (now.year - 1, now.year, now.year + 1)
            for day, other in _holiday_days(str(country), subdiv, year)
            if pattern.search(_unbracketed(other))
        }
    reading = (
        f"{name or 'the bank holiday'} as {_COUNTRY_NAMES[(str(country), subdiv)]}'s calendar has it"
        if guessed
        else None
    )

    if year_said is not None:
        year = (
            int(year_said.group(1))
            if year_said.group(1)
            else now.year + (1 if year_said.group(2) else -1 if year_said.group(4) else 0)
        )
        windows = list(dict.fromkeys(window_of(day) for day in days_of(year)))
        return windows[-1] if windows else None
    windows = list(
        dict.fromkeys(
            window_of(day) for year in (now.year - 1, now.year, now.year + 1) for day in days_of(year)
        )
    )
    if direction == "past":
        begun = [window for window in windows if window.start <= now]
        return begun[-1] if begun else None
    ahead = [window for window in windows if window.end > now]
    if not ahead:
        return None
    window = ahead[0]
    before = re.search(r"\b(?:before|ahead\s+of)\s+(?:the\s+)?$", text[:start_at], re.I)
    if before is not None:
        return Window(start=now, end=window.start, label=f"before {window.label}", reading=window.reading)
    return window


#: "ISO week 32", "week 32 of 2026", "wk 32": a week by its ISO number (Monday to Sunday).
_ISO_WEEK = re.compile(
    r"\b(?:iso\s+)?(?:week|wk)\s*(?:no\.?\s*|number\s+|#\s*)?(\d{1,2})\b(?:\s+(?:of\s+)?(\d{4}))?"
    # ISO 8601's own notation: "2026-W32", "2026W32".
    r"|\b(\d{4})-?W(\d{1,2})\b",
    re.I,
)
#: ISO 8601's week notation alone ("2026-W32"): a time as said ("week 45" may number something else).
_ISO_WEEK_DATE = re.compile(r"\b\d{4}-?W\d{1,2}\b", re.I)
#: "the last six weeks", "past 3 weeks": the days counted back from today, today left out.
_WEEKS_BACK = re.compile(
    rf"\b(?:last|past|previous|prior|trailing|rolling)\s+{_COUNT}\s+(?:weeks?|wks?)\b", re.I
)
#: "three months ago", "2 weeks ago": the calendar unit that many back (a day ago is that day).
_UNITS_AGO = re.compile(rf"\b{_COUNT}\s+(day|week|month|quarter|year)s?\s+ago\b", re.I)


#: "the past three full months", "last 2 complete weeks": whole calendar units before the one running.
_FULL_UNITS = re.compile(
    rf"\b(?:the\s+)?(?:last|past|previous|prior)\s+(?:{_COUNT}\s+)?(?:full|complete|whole|entire|calendar)\s+"
    r"(week|month|quarter|year)s?\b",
    re.I,
)


def _full_units(text: str, now: datetime) -> Window | None:
    match = _FULL_UNITS.search(text)
    if match is None:
        return None
    count, unit = _count(match.group(1)), match.group(2).lower()
    end = _unit_start(now, unit)
    if unit == "week":
        start = end - timedelta(days=7 * count)
    else:
        start = _add(end, -count * {"month": 1, "quarter": 3, "year": 12}[unit], "month")
    return Window(start=start, end=end, label=match.group(0).strip())


#: "this tax year so far", "last tax year", "the 2025/26 tax year", "the UK tax year".
_TAX_YEAR = re.compile(
    r"\b(?:(this|current|last|previous|prior)\s+)?(?:(\d{4})\s*[/-]\s*\d{2,4}\s+)?tax\s+year"
    r"(?:\s+(\d{4})\s*[/-]\s*\d{2,4})?\b",
    re.I,
)
#: The day a country's tax year starts on (month, day): the calendar year where none is listed.
_TAX_YEAR_START = {("GB", "ENG"): (4, 6), ("GB", "SCT"): (4, 6), ("GB", "WLS"): (4, 6), ("IN", None): (4, 1),
                   ("AU", None): (7, 1), ("NZ", None): (4, 1), ("ZA", None): (3, 1)}  # fmt: skip


def _tax_year(text: str, now: datetime) -> Window | None:
    """A tax year as the country the text names keeps it; with none named, the UK's (from 6 April),
    the one "tax year" usually names, as a reading the answer states."""
    match = _TAX_YEAR.search(text)
    if match is None:
        return None
    named = _countries_named(text)
    country = named[0] if named else ("GB", "ENG")
    month, day = _TAX_YEAR_START.get(country, (1, 1))
    said = match.group(2) or match.group(3)
    if said:
        year = int(said)
    else:
        year = now.year if (now.month, now.day) >= (month, day) else now.year - 1
        if (match.group(1) or "").lower() in ("last", "previous", "prior"):
            year -= 1
    start = datetime(year, month, day, tzinfo=UTC)
    reading = None if named else f"the tax year as the UK's runs (from {start:%-d %B})"
    return Window(
        start=start, end=start.replace(year=year + 1), label=match.group(0).strip(), reading=reading
    )


def _units_ago(text: str, now: datetime) -> Window | None:
    """The calendar day, week, month, quarter or year ``N`` of them before the one running now."""
    match = _UNITS_AGO.search(text)
    if match is None:
        return None
    count, unit = _count(match.group(1)), match.group(2).lower()
    start = (
        now.replace(hour=0, minute=0, second=0, microsecond=0) if unit == "day" else _unit_start(now, unit)
    )
    if unit in ("day", "week"):
        start, end = _add(start, -count, unit), _add(start, 1 - count, unit)
    else:
        months = count * (3 if unit == "quarter" else 12 if unit == "year" else 1)
        step = 3 if unit == "quarter" else 12 if unit == "year" else 1
        start, end = _add(start, -months, "month"), _add(start, step - months, "month")
    return Window(start=start, end=end, label=match.group(0))


def _iso_week(text: str, now: datetime, direction: Direction) -> Window | None:
    match = _ISO_WEEK.search(text)
    if match is None or not 1 <= int(match.group(1) or match.group(4)) <= 53:
        return None
    number = int(match.group(1) or match.group(4))
    year = match.group(2) or match.group(3)

    def week(year: int) -> Window:
        try:
            monday = datetime.fromisocalendar(year, number, 1).replace(tzinfo=UTC)
        except ValueError:  # week 53 of a year with 52
            monday = datetime.fromisocalendar(year, 52, 1).replace(tzinfo=UTC)
        return Window(start=monday, end=monday + timedelta(days=7), label=match.group(0).strip())

    return _latest(week, int(year) if year else None, now, direction)


def _weeks_back(text: str, now: datetime, direction: Direction) -> Window | None:
    match = _WEEKS_BACK.search(text)
    if match is None or direction != "past":
        return None
    today = now.replace(hour=0, minute=0, second=0, microsecond=0)
    return Window(start=today - timedelta(days=7 * _count(match.group(1))), end=today, label=match.group(0))


def _unit_start(now: datetime, unit: str) -> datetime:
    day = now.replace(hour=0, minute=0, second=0, microsecond=0)
    if unit in ("week", "fortnight"):
        return day - timedelta(days=day.weekday())
    if unit == "month":
        return day.replace(day=1)
    if unit == "quarter":
        return day.replace(month=(day.month - 1) // 3 * 3 + 1, day=1)
    return day.replace(month=1, day=1)


def _unit_before_last(text: str, now: datetime) -> Window | None:
    """Calendar periods: this week starts on Monday, the last fortnight is the two weeks before it."""
    match = _BEFORE_LAST.search(text)
    if match is None:
        return None
    unit = (match.group(1) or match.group(2)).lower()
    current = _unit_start(now, unit)
    if unit in _SPAN_DAYS:
        length = timedelta(days=_SPAN_DAYS[unit])
        return Window(start=current - 2 * length, end=current - length, label=match.group(0).strip())
    months = {"month": 1, "quarter": 3, "year": 12}[unit]
    return Window(
        start=_add(current, -2 * months, "month"),
        end=_add(current, -months, "month"),
        label=match.group(0).strip(),
    )


def _count(said: str | None) -> int:
    """How many units "10", "two" or no number ("the fortnight") say."""
    word = (said or "a").lower()
    return int(word) if word.isdigit() else _COUNT_WORDS.get(word, 1)


def _part_of_period(text: str, now: datetime) -> Window | None:
    """The first or last days of a period the text names, counted within it."""
    match = _PART_OF.search(text)
    if match is None:
        return None
    period = time_window(match.group(4), now)
    if period is None:
        return None
    span = _count(match.group(2)) * timedelta(days=_SPAN_DAYS[match.group(3).lower().rstrip("s")])
    label = match.group(0).strip(" ?.!")
    if match.group(1).lower() in ("first", "opening"):
        return replace(period, end=min(period.start + span, period.end), label=label)
    return replace(period, start=max(period.end - span, period.start), label=label)


def _anchored_span(text: str, now: datetime) -> Window | None:
    """A span counted from a day the text names: ending on it, before it, from it or after it."""
    match = _ANCHORED.search(text)
    if match is None:
        return None
    anchor = time_window(match.group(4), now)
    if anchor is None:
        return None
    count = _count(match.group(1))
    unit = match.group(2).lower().rstrip("s")
    relation = match.group(3).lower()

    def shifted(moment: datetime, sign: int) -> datetime:
        if unit in _SPAN_DAYS:
            return moment + sign * count * timedelta(days=_SPAN_DAYS[unit])
        return _add(moment, sign * count, "month")

    label = match.group(0).strip(" ?.!")
    # A day read by a guess makes the span counted from it one too: ``replace`` keeps its reading.
    if relation in ("starting", "from", "beginning"):
        return replace(anchor, end=shifted(anchor.start, 1), label=label)
    if relation in ("after", "following"):
        return replace(anchor, start=anchor.end, end=shifted(anchor.end, 1), label=label)
    if relation == "before":
        return replace(anchor, start=shifted(anchor.start, -1), end=anchor.start, label=label)
    # Ending on the day named: that day is the span's last.
    return replace(anchor, start=shifted(anchor.end, -1), label=label)


#: "from now on": a span that starts now and runs ahead without end; it sets when a lasting change
#: holds, neither a window of data nor a deadline.
_FROM_NOW = re.compile(r"^from\s+now\b", re.I)
#: "within 60 days", "in the next quarter", "by March": how long a goal has, not a span of data.
_HORIZON = re.compile(
    r"^(?:(?:with)?in|over|during)\s+(?:the\s+)?(?:next|coming)\b|^(?:with)?in\s+(?:\d+|a|an|one|two|three|four|"
    r"five|six|seven|eight|nine|ten|eleven|twelve)\s+(?:day|week|fortnight|month|quarter|year)s?\b|"
    r"^(?:next|by|before|until|till)\b",
    re.I,
)


def time_mention(text: str, *, horizons: bool = True) -> str | None:
    """The words of ``text`` that name a time ("in June 2026", "last quarter"), as written; None.
    ``horizons=False``: only spans data can be read over, not a goal's horizon ("within 60 days")."""
    found = _time_mention(text)
    if found is not None and not horizons and (_HORIZON.search(found) or _FROM_NOW.search(found)):
        return None
    return found


def _time_mention(text: str) -> str | None:
    read = _time_read(text)
    return read[0] if read else None


def _time_read(text: str) -> tuple[str, str] | None:
    """``text``'s time mention in its own words, and as Duckling read it ("7/13" and "13 July")."""
    return _time_read_in_minute(text, int(datetime.now(UTC).timestamp()) // 60)


@functools.lru_cache(maxsize=4096)
def _time_read_in_minute(text: str, minute: int) -> tuple[str, str] | None:
    """``text``'s time mention, read once a minute: a goal's words are read again and again while its
    flow runs (its entities at every turn), each reading a Duckling parse or two; the reading depends
    on the present only through today's holidays and Duckling's reference time (``minute`` keys it)."""
    masked = spelled_for_duckling(_mask_entities(text))
    said = _said_time(masked)
    if said is None:
        return None
    if (at := masked.find(said)) < 0:
        return said, said
    # "H2-to-date", "Q3 to date": the period running to now, said of any period; the words are the
    # time's, never a qualifier of the figure after them.
    running = _RUNNING_TO_DATE.match(masked, at + len(said))
    end = running.end() if running else at + len(said)
    return _as_written(masked, at, end, text), masked[at:end]


def _as_written(rewritten: str, start: int, end: int, text: str) -> str:
    """The words of ``text`` that ``rewritten[start:end]`` was rewritten from ("14 juillet" for the "14
    July" Duckling read): callers take the mention out of the text they hold, so it must be that
    text's own words."""
    said = rewritten[start:end]
    if rewritten == text or said in text:
        return said
    written_start, written_end = start, end
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, rewritten, text, autojunk=False).get_opcodes():
        if i1 <= start < i2 or (tag == "insert" and i1 == start):
            written_start = j1 + (start - i1 if tag == "equal" else 0)
        if i1 < end <= i2:
            written_end = j1 + (end - i1) if tag == "equal" else j2
    # A rewrite that shortened a word ("mayo" -> "May") aligns with part of it: a time ends at a word's end.
    while 0 < written_end < len(text) and text[written_end - 1].isalnum() and text[written_end].isalnum():
        written_end += 1
    while (
        0 < written_start < len(text) and text[written_start - 1].isalnum() and text[written_start].isalnum()
    ):
        written_start -= 1
    written = text[written_start:written_end].strip()
    return written or said


#: "-to-date", " to date", " till date" right after a period.
_RUNNING_TO_DATE = re.compile(r"[-\s]+(?:to|till|until)[-\s]+date\b", re.I)


def _said_time(masked: str) -> str | None:
    for pattern in (
        _TO_DATE,
        _TAX_YEAR,
        _FULL_UNITS,
        _WEEKS_BACK,
        _QUARTER,
        _HALF_OF_MONTH,
        _HALF_OF_YEAR,
        _SEASON,
        _BEFORE_LAST,
        _ISO_WEEK_DATE,
    ):
        match = pattern.search(masked)
        if match:
            return match.group(0).strip()
    found = _spans(_DUCKLING.parse(masked, datetime.now(UTC)), masked)
    said = str(max(found, key=lambda entry: len(entry.get("body", "")))["body"]).strip() if found else ""
    # A holiday is said by its name ("Labor Day weekend"), of which Duckling reads a part ("weekend")
    # or nothing: the name is the mention, so a follow-up carries the holiday, not "the weekend".
    holiday = _holiday(masked, datetime.now(UTC), "past") or _holiday(masked, datetime.now(UTC), "future")
    if holiday is not None and holiday.label in masked and said in holiday.label:
        return holiday.label
    if holiday is not None and holiday.label in masked and said:
        # "Chuseok 3 days holiday this year": the holiday's days and year said around its name are one
        # mention, so a follow-up ("Store 2 same holiday?") carries the holiday, not "this year".
        at, spoken = masked.find(holiday.label), masked.find(said)
        start, end = min(at, spoken), max(at + len(holiday.label), spoken + len(said))
        between = masked[min(at + len(holiday.label), spoken + len(said)) : max(at, spoken)]
        joined = re.search(
            r"[,.;:?!()]|\b(?:and|or|to|vs|versus|than|against|compared|after|before)\b", between, re.I
        )
        if len(between.split()) <= 4 and not joined:
            return masked[start:end].strip()
        return holiday.label
    return said or None


def _from_duckling(text: str, now: datetime, direction: Direction) -> Window | None:
    window, explicit_year = _read(text, now, now)
    if window is not None and direction == "past" and window.start > now and not explicit_year:
        # Scheduling reads "in July" as the next July; a question about data means the last one:
        # read it again as if asked a year earlier (weeks then fall on that year's weekdays).
        earlier, _ = _read(text, _year_earlier(now), now)
        if earlier is not None and earlier.start <= now:
            window = earlier
    return window


def _read(text: str, now: datetime, present: datetime) -> tuple[Window | None, bool]:
    """The span Duckling reads in ``text`` asked at ``now``; a span open at its end ("from 1 June")
    runs to ``present`` (the real present also when ``now`` is a year earlier, for a second reading)."""
    found = sorted(_spans(_DUCKLING.parse(text, now), text), key=lambda entry: int(entry["start"]))
    if not found:
        return None, False
    # Mentions joined by "and" are one span ("over June and July"); of the rest, the longest mention
    # is the one meant ("between 1 May and 15 June", not "15 June").
    groups: list[list[dict[str, Any]]] = [[found[0]]]
    for item in found[1:]:
        between = text[int(groups[-1][-1]["end"]) : int(item["start"])]
        if _JOINED.fullmatch(between):
            groups[-1].append(item)
        else:
            groups.append([item])
    group = max(groups, key=lambda items: int(items[-1]["end"]) - int(items[0]["start"]))
    windows = [_window_of(item["value"], present) for item in group]
    if any(window is None for window in windows):
        return None, False
    years = {
        window[0].year
        for item, window in zip(group, windows, strict=True)
        if window and _YEAR.search(str(item["body"]))
    }
    if len(years) == 1:
        # "May and June 2026": the year said once is every mention's.
        [year] = years
        windows = [_in_year(window, year) for window in windows]
    body = text[int(group[0]["start"]) : int(group[-1]["end"])]
    start = min(window[0] for window in windows if window is not None)
    end = max(window[1] for window in windows if window is not None)
    return Window(start=start, end=end, label=body.strip()), bool(_YEAR.search(body))


#: What may stand between two time mentions that together name one span.
_JOINED = re.compile(r"\s*(?:,|&|and|plus|,\s*and)\s*", re.I)


def _in_year(window: tuple[datetime, datetime] | None, year: int) -> tuple[datetime, datetime] | None:
    if window is None or window[0].year == year:
        return window
    shift = year - window[0].year
    try:
        return window[0].replace(year=year), window[1].replace(year=window[1].year + shift)
    except ValueError:  # 29 February
        return window


def _window_of(value: dict[str, Any], now: datetime) -> tuple[datetime, datetime] | None:
    if value.get("type") == "interval":
        start, end = _instant(value.get("from")) or now, _instant(value.get("to")) or now
        if start.weekday() == 4 and start.hour == 18 and end.weekday() == 0 and _midnight(end):
            # Duckling's weekend runs from Friday 6 pm (an evening out); a shop's weekend is its
            # Saturday and Sunday.
            start = start.replace(hour=0) + timedelta(days=1)
        return start, end
    instant = _instant(value)
    if instant is None:
        return None
    return instant, _after(instant, str(value.get("grain") or "day"))


def _spans(found: list[dict[str, Any]], text: str) -> list[dict[str, Any]]:
    """Duckling's time mentions that name a day or longer (intervals, days, weeks, months...), not a
    number that is an amount ("by 15 percent" is no 15th of the month) or the count of a length ("by
    two hours" is no "by 2 o'clock")."""
    spans = [
        item
        for item in found
        if item.get("dim") == "time"
        and not _AMOUNT_AFTER.match(text, int(item.get("end", 0)))
        and (
            (item["value"].get("type") == "interval" and not _clock_interval(item["value"]))
            or item["value"].get("grain") not in _CLOCK_GRAINS
            or _SPAN_UNIT.search(str(item.get("body", "")))
        )
    ]
    return [item for item in spans if not _counts_a_length(item, text)] if spans else spans


def _counts_a_length(item: dict[str, Any], text: str) -> bool:
    """Whether a time mention's words are the start of a length Duckling reads on past them: "by
    two" of "push it back by two hours", "by 30" of "delay it by 30 minutes"."""
    start, end = int(item.get("start", 0)), int(item.get("end", 0))
    return any(
        start <= int(length["start"]) < end < int(length["end"])
        for length in duckling_parse(text, ("duration",))
    )


def _clock_interval(value: dict[str, Any]) -> bool:
    """ "from 1 to 3": hours of a day, not days of data."""
    ends = [value.get(side) or {} for side in ("from", "to")]
    return all(end.get("grain") in _CLOCK_GRAINS for end in ends if end) and any(ends)


def _instant(value: dict[str, Any] | None) -> datetime | None:
    if not value or not value.get("value"):
        return None
    return datetime.fromisoformat(str(value["value"])).astimezone(UTC)


def _after(start: datetime, grain: str) -> datetime:
    if grain in _GRAIN_DAYS:
        return start + timedelta(days=max(_GRAIN_DAYS[grain], 1))
    months = {"month": 1, "quarter": 3, "year": 12}.get(grain, 1)
    month = start.month - 1 + months
    return start.replace(year=start.year + month // 12, month=month % 12 + 1, day=1)


def _year_earlier(moment: datetime) -> datetime:
    try:
        return moment.replace(year=moment.year - 1)
    except ValueError:  # 29 February
        return moment.replace(year=moment.year - 1, day=28)


def _year_of(text: str | None, now: datetime) -> int | None:
    if not text:
        return None
    year = int(text)
    return year + 2000 if year < 100 else year


def _quarter(text: str, now: datetime, direction: Direction) -> Window | None:
    match = _QUARTER.search(text)
    if match is None:
        return None
    number = int(match.group(1)) if match.group(1) else _ORDINAL[match.group(2).lower()]
    year = _year_of(match.group(3), now)
    if year is None:
        year = now.year
        start = datetime(year, 3 * number - 2, 1, tzinfo=UTC)
        if direction == "past" and start > now:
            year -= 1
        elif direction == "future" and _after(start, "quarter") <= now:
            year += 1
    start = datetime(year, 3 * number - 2, 1, tzinfo=UTC)
    return Window(start=start, end=_after(start, "quarter"), label=match.group(0).strip())


#: "year to date", "YTD", "month-to-date": from the start of the period that is running to now.
_TO_DATE = re.compile(r"\b(?:(year|month|quarter|week)[-\s]+to[-\s]+date|(y|m|q|w)td)\b", re.I)
_TO_DATE_GRAIN = {"y": "year", "m": "month", "q": "quarter", "w": "week"}


def _to_date(text: str, now: datetime) -> Window | None:
    match = _TO_DATE.search(text)
    if match is None:
        return None
    grain = (match.group(1) or _TO_DATE_GRAIN[match.group(2).lower()]).lower()
    day = now.replace(hour=0, minute=0, second=0, microsecond=0)
    start = {
        "year": day.replace(month=1, day=1),
        "quarter": day.replace(month=(now.month - 1) // 3 * 3 + 1, day=1),
        "month": day.replace(day=1),
        "week": day - timedelta(days=day.weekday()),
    }[grain]
    return Window(start=start, end=now, label=match.group(0))


def _half_of_month(text: str, now: datetime, direction: Direction) -> Window | None:
    match = _HALF_OF_MONTH.search(text)
    if match is None:
        return None
    month = _MONTHS[match.group(2).lower()[:3]]
    year = _year_of(match.group(3), now) or now.year
    start = datetime(year, month, 1, tzinfo=UTC)
    if match.group(3) is None and direction == "past" and start > now:
        start = _year_earlier(start)
    elif match.group(3) is None and direction == "future" and _after(start, "month") <= now:
        start = start.replace(year=start.year + 1)
    middle = start + timedelta(days=15)
    if match.group(1).lower() in ("first", "1st"):
        return Window(start=start, end=middle, label=match.group(0).strip())
    return Window(start=middle, end=_after(start, "month"), label=match.group(0).strip())


# -- what is measured -----------------------------------------------------------------------------


#: Words that may stand before a figure's name without changing what is measured ("our overall
#: attach rate", "chain-wide refund rate"): determiners, scope and period words, not things.
_NEUTRAL_MODIFIERS = frozenset(
    """
    a an the our my your their its this that these those what whats which how is was were be been
    overall total average mean median whole entire combined aggregate chain chainwide chain-wide
    company companywide company-wide network global all every each across together altogether current actual real
    daily weekly monthly quarterly yearly annual store stores shop shops branch branches s
    and or but so then also just only still even please tell show give get know see find
    highest lowest best worst top bottom biggest smallest largest most least better worse fewest
    weakest strongest poorest greatest more less fewer higher lower bigger larger smaller for on in at of to by with from about over during per into
    did does do had has have will would could can should it its it's there here when where why
    much many vs versus compared against than any some no whose who whom both either neither few several
    compare comparing comparison before after prior previous following earlier later since until till
    you kindly pls plz thanks cheers own
    """.split()  # noqa: SIM905
)


@dataclass(frozen=True, kw_only=True)
class MetricMention:
    """The figure a question names, or the words before it that name something the data lacks."""

    metric: DataMetric | None
    unknown: str | None = None
    """A qualifier of the figure the tenant's data has no words for ("warranty" attach rate)."""


#: Business shorthand, written out before a figure's name is looked for ("avg acc rev", "txns").
_SHORTHAND = {
    "avg": "average", "avg.": "average", "rev": "revenue", "revs": "revenue", "txn": "transaction",
    "txns": "transactions", "trans": "transactions", "acc": "accessory", "accy": "accessory",
    "hrs": "hours", "hr": "hours", "amt": "amount", "qty": "quantity", "no.": "number", "num": "number",
    "tot": "total", "mgr": "manager", "dept": "department", "yr": "year", "mth": "month", "wk": "week",
}  # fmt: skip
_SHORT_WORD = re.compile(r"\b(" + "|".join(re.escape(word) for word in _SHORTHAND) + r")(?=\W|$)", re.I)


#: "refund %", "attach%": a percent sign after a word, not a number, is the word's percentage.
_WORD_PERCENT = re.compile(r"\b([A-Za-z]{3,})\s*%")


def written_out(text: str) -> str:
    """``text`` with business shorthand written out ("avg acc rev" -> "average accessory revenue",
    "refund %" -> "refund percentage")."""
    text = _WORD_PERCENT.sub(lambda match: f"{match.group(1)} percentage", text)
    return _SHORT_WORD.sub(lambda match: _SHORTHAND[match.group(1).lower()], text)


#: Where one phrase of a message ends and another begins: a dash between spaces, a colon, semicolon,
#: comma, bar or bracket (a hyphen inside a word joins: "extended-warranty attach rate").
#: Where a phrase ends: a dash standing alone, punctuation inside a sentence, or the sentence's end
#: ("if we make more money. Takings +5%": "money" qualifies nothing in the next sentence).
_PHRASE_BREAK = re.compile(r"\s[-\u2013\u2014]+\s|[:;,|()\[\]]|[.?!]\s+(?=[A-Z])")


def metric_mention(text: str, metrics: Sequence[DataMetric]) -> MetricMention:
    """The longest figure name or alias in ``text``; a word just before it that no figure, table or
    column of the data uses makes it a figure the data does not have."""
    text = written_out(text)
    lowered = text.lower()
    best: tuple[int, int, DataMetric, str] | None = None
    for metric in metrics:
        for alias in (metric.name, *metric.aliases):
            found = re.search(rf"\b{re.escape(alias.lower())}s?\b", lowered)  # "attach rates" too
            if found and (best is None or len(alias) > best[0]):
                best = (len(alias), found.start(), metric, alias.lower())
    if best is None:
        return MetricMention(metric=None)
    _, start, metric, alias = best
    vocabulary = _data_words(metrics)
    # Who and when are no qualifiers: "Store six's attach rate", "the third quarter's revenue"; nor is
    # a word of another phrase ("for the deck - AOV", "S07 | hardware rev").
    # The name's own first letter says whether a sentence ends right before it ("money. Takings").
    phrase = _PHRASE_BREAK.split(_who_and_when_blanked(text)[: start + 1])[-1][:-1].lower()
    before = re.findall(r"[a-z][a-z'-]*", phrase)[-2:]
    unknown = [
        word
        for word in before
        if word.removesuffix("'s") not in vocabulary and word not in _NEUTRAL_MODIFIERS and len(word) > 2
    ]
    # Only the words right before the name qualify it ("warranty attach rate", "extended-warranty
    # attach rate"); "at Store 2" or a verb further away does not.
    if unknown and unknown[-1] == before[-1] and not _one_noun_with(unknown[-1], alias.split()[0]):
        return MetricMention(metric=metric, unknown=f"{unknown[-1]} {metric.name}")
    return _averaged(before, metric, metrics)


@functools.cache
def _one_noun_with(word: str, head: str) -> bool:
    """Whether ``word`` and the ``head`` after it are one noun that is a kind of the head (WordNet's
    "grand total" is a total, "gross sales" are sales): no qualifier naming other data."""
    reader = wordnet()
    heads = set(reader.synsets(head, "n"))
    return any(
        heads & {ancestor for path in compound.hypernym_paths() for ancestor in path}
        for compound in reader.synsets(f"{word}_{head}", "n")
    )


#: The days of a week and its parts, said before a figure as which days it is of ("weekend attach").
DAYS_OF_WEEK = frozenset({*(day.lower() for day in calendar.day_name), "weekend", "weekday"})

#: Words that ask for a figure per observation rather than its total.
_AVERAGING = frozenset({"average", "mean", "typical"})


def _averaged(before: Sequence[str], metric: DataMetric, metrics: Sequence[DataMetric]) -> MetricMention:
    """``metric``, or what an average asked of it is: "average device revenue" is the average device
    amount; "average accessory revenue" (per sale or per accessory?) and "mean refunds" are figures
    the data does not have, never answered with the total."""
    asked = any(_same_word(word, averaging) for word in before for averaging in _AVERAGING)
    if not asked or metric.expression.lstrip().startswith("avg("):
        return MetricMention(metric=metric)
    counterpart = next((m for m in metrics if m.name == metric.average), None)
    if counterpart is None and metric.money is not None:
        # "the average sale" is the money of a sale on average: a count's average is its money's.
        money = next((m for m in metrics if m.name == metric.money), None)
        counterpart = next((m for m in metrics if money is not None and m.name == money.average), None)
    if counterpart is not None:
        return MetricMention(metric=counterpart)
    return MetricMention(metric=metric, unknown=f"average {metric.name}")


#: Words that ask for an amount of money rather than a count: a currency ("in dollars", "$", "quid"),
#: money itself ("in money terms", "cash value", "in revenue terms"), or the verbs of money coming in
#: with no figure after them ("what's store 4 taken since October", "how much did it make in July").
_MONEY = re.compile(
    r"[$£€₹]|\b(?:dollars?|bucks|pounds?|quid|sterling|euros?|rupees?|rs\.?|inr|usd|gbp|eur|money|monetary|"
    r"cash|currency|value|revenue|turnover|takings|receipts)\b",
    re.I,
)
_MONEY_COMING_IN = re.compile(
    r"\b(?:(?:take|takes|taken|took|taking|make|makes|made|making|bring|brings|brought|bringing)(?:\s+in)?|"
    r"turn(?:s|ed)?\s+over)\b(?=\s*(?:$|[?.!,]|\b(?:in|since|during|over|last|this|between|from|"
    r"on|for|so|to|till|until|up|through|across|yesterday|today|all|altogether|overall|total|most|least|with|"
    r"more|less|the\s+most|the\s+least|"
    r"in\s+total)\b))",
    re.I,
)


def asks_money(text: str) -> bool:
    """Whether ``text`` asks for an amount of money ("sorry, I meant in dollars", "what's store 4
    taken since October", "what went through the tills"), which no count answers."""
    if _NOT_TAKINGS.search(text):
        return False  # what is left after costs is no money taken, and the data has no costs
    if _MONEY.search(text) or any(money_noun(found.group(1)) for found in _DETERMINED_NOUN.finditer(text)):
        return True
    # "how many sales did store 5 make in August" asks a count, whatever the verb.
    return bool(_MONEY_COMING_IN.search(text)) and not _COUNT_ASKED.search(text)


#: A word after a determiner or a possessive: a noun, whatever else it can be ("the take", "the tills").
_DETERMINER = r"\b(?:the|our|its|their|your|my|this|that)\b"
_DETERMINED_NOUN = re.compile(rf"(?:{_DETERMINER}|'s|s')\s+(?!{_DETERMINER})([a-z]+)\b(?![-'])", re.I)


@functools.cache
def money_noun(word: str) -> bool:
    """Whether one of ``word``'s three commonest noun senses in WordNet is money taken in (a kind of
    income: "takings", "proceeds", "the take") or where the takings are kept (a cashbox: "the tills",
    "the cash register"), and none is selling itself ("sales" is also a count of the sales)."""
    reader = wordnet()
    senses = reader.synsets(word.lower(), "n")
    income, cashbox, selling = (
        reader.synset(name) for name in ("income.n.01", "cashbox.n.01", "selling.n.01")
    )
    if any(selling in sense.closure(lambda kind: kind.hypernyms()) for sense in senses):
        return False
    return any(
        sense in (income, cashbox) or bool({income, cashbox} & set(sense.hypernyms())) for sense in senses[:3]
    )


def money_source(text: str) -> str | None:
    """What the money asked for is said to come from ("how much did store 7 make from accessories",
    "takings on phones last week"): the words after from/on/off/out of, up to the first closed-class
    word, with the question's entities and time blanked. None: the money of all the sales."""
    blanked = _who_and_when_blanked(written_out(text))
    for match in [*_MONEY_FROM.finditer(blanked), *_MONEY_BY.finditer(blanked)]:
        words = match.group(1).split()
        while words and words[0].lower() in _DETERMINERS:
            words.pop(0)
        head: list[str] = []
        for word in words:
            if word.lower() in _NOT_A_HEAD:
                break
            head.append(word)
        if head:
            return " ".join(head)
    return None


_MONEY_FROM = re.compile(
    r"\b(?:from|on|off|with|out\s+of)\s+([A-Za-z][A-Za-z'-]*(?:\s+[A-Za-z][A-Za-z'-]*){0,3})", re.I
)
#: "how much money did add-ons bring in": what the money came from, said as who made it.
_MONEY_BY = re.compile(
    r"\b(?:did|do|does|have|has|had)\s+([A-Za-z][A-Za-z'-]*(?:\s+[A-Za-z][A-Za-z'-]*){0,2}?)\s+"
    r"(?:bring\s+in|brought\s+in|make|made|generate|generated|earn|earned|take|taken|rake\s+in)\b",
    re.I,
)
_DETERMINERS = frozenset({"the", "our", "its", "their", "my", "your", "his", "her", "all"})


_NOT_TAKINGS = re.compile(
    r"\b(?:profits?|margins?|net|costs?|expenses?|earn\w*|income|wages?|salar\w+)\b", re.I
)
_COUNT_ASKED = re.compile(r"\b(?:how\s+many|number\s+of|count\s+of|no\.?\s+of|count)\b", re.I)


def metric_by_words(text: str, metrics: Sequence[DataMetric]) -> MetricMention | None:
    """The figure whose name's every word the text says, in any order, misspelt or shortened ("refnd
    rate", "staff who completed their training"); None when no name fits."""
    return _match_words(_TOKEN.findall(_who_and_when_blanked(written_out(text)).lower()), metrics)


def _who_and_when_blanked(text: str) -> str:
    """``text`` with its entities and the time it names blanked, offsets kept."""
    masked = _mask_entities(text)
    said = _time_mention(text)
    if said and (at := masked.find(said)) >= 0:
        masked = masked[:at] + " " * len(said) + masked[at + len(said) :]
    return masked


def _data_words(metrics: Sequence[DataMetric]) -> frozenset[str]:
    words: set[str] = set()
    for metric in metrics:
        for text in (
            metric.name,
            *metric.aliases,
            metric.table,
            metric.time_column or "",
            metric.observation_noun,
        ):
            words.update(re.findall(r"[a-z]+", text.lower().replace("_", " ")))
        words.update(re.findall(r"[a-z]+", metric.expression.lower().replace("_", " ")))
        for column in metric.filters.values():
            words.update(column.lower().split("_"))
    return frozenset(words)


def names_the_data(text: str, metrics: Sequence[DataMetric]) -> bool:
    """Whether a noun of ``text`` is one of what the tenant's data is about: a word of its figures,
    tables and columns, or of who the rows are (stores, staff), by a WordNet sense shared with one
    ("outlet" is a store, "takings" the revenue). "How many calories are in a banana" and "how many time
    zones does Russia have" name none: no query of this data answers them."""
    known = {word for word in _data_words(metrics) | set(_ENTITY_NOUNS) if noun_first(word)}
    reader = wordnet()
    # A word's first senses only: "branch" is a store, not the fork of a tree that a leg is.
    senses = {sense for word in known for sense in reader.synsets(word, "n")[:SENSES]}
    for word in _TOKEN.findall(written_out(text).lower()):
        word = word.removesuffix("'s")
        base = reader.morphy(word, "n") or word
        if word in known or base in known:
            return True
        if len(word) < 3 or word in _NEUTRAL_MODIFIERS or not noun_first(word):
            continue
        if senses.intersection(reader.synsets(base, "n")):
            return True
    return False


#: "how many iPhones", "the number of trade-ins", "how many of store 5's customers": the thing a
#: question counts.
_COUNTED = re.compile(
    r"\b(?:how\s+many|number\s+of|count\s+of|no\.?\s+of)\s+"
    r"(?:of\s+(?:the\s+|our\s+|its\s+|their\s+|[a-z]+\s*#?\s*\d+'s\s+)?)?([a-z][a-z'-]*)",
    re.I,
)


_PERSON_WORDS = frozenset({"people", "persons", "person", "workers", "employees", "staffers", "colleagues"})


def counted_unknown(text: str, metrics: Sequence[DataMetric]) -> str | None:
    """The thing a question counts when no figure, table or column of the data has a word for it
    ("how many iPhones did store 1 sell"): data the tenant does not have. None otherwise."""
    found = _COUNTED.search(written_out(text))
    if found is None:
        return None
    thing = found.group(1).lower()
    vocabulary = _data_words(metrics)
    # People are the staff a table lists, whatever they are called.
    if (
        thing in _NEUTRAL_MODIFIERS
        or thing in _PERSON_WORDS
        or any(_same_word(thing, known) for known in vocabulary)
    ):
        return None
    # "how many Pixel 9 cases": a model's name and number are one name with the thing it qualifies.
    model = _MODEL_NAMED.match(written_out(text), found.end())
    return f"{found.group(1)}{model.group(0)}" if model else thing


#: A model number after a name and the thing it names ("Pixel| 9 cases", "Galaxy| S24 chargers").
_MODEL_NAMED = re.compile(
    r"\s+[A-Za-z]{0,3}\d+[A-Za-z+]*(?:\s+(?!(?:did|do|does|are|is|were|was|has|have|had)\b)[a-z]+)?"
)


#: "more of its sales", "less of their takings": a part of a whole, asked as its share.
_PART_OF_WHOLE = re.compile(
    r"\b(?:more|less|fewer|much|most|least)\s+of\s+(?:its|their|the|our|his|her|your)\b", re.I
)


def figure_by_verb(text: str, metrics: Sequence[DataMetric]) -> MetricMention | None:
    """The figure a question names by what its rows did, in a verb of two words WordNet lists as one
    ("how many phones came back": come back is return, so the returns; "more of its sales come back":
    their share, the return rate): a figure one of whose names has a word that is one of the verb's
    meanings ("returns", "return rate"). A count when several fit, its share when the words ask a
    part of a whole. None: no such verb, or no figure's words mean it."""
    blanked = _who_and_when_blanked(text)
    said = phrasal_verb_meanings(blanked)
    # "customers came back to buy again": people who come back are visits, not things returned (people
    # who bring something back return it).
    said = {
        verb: meanings
        for verb, meanings in said.items()
        if takes_an_object(verb)
        or not (before := re.findall(r"[a-z]+", blanked.lower()[: blanked.lower().find(verb)]))
        or not names_a_person(before[-1])
    }
    meanings = frozenset().union(*said.values())
    if not meanings:
        return None
    fitting = [
        metric
        for metric in metrics
        if any(
            verb_base(word) in meanings
            for name in (metric.name, *metric.aliases)
            for word in _TOKEN.findall(name.lower())
        )
    ]
    if not fitting:
        return None
    shares = [metric for metric in fitting if metric.unit == "ratio"]
    if shares and (_PART_OF_WHOLE.search(text) or _PROPORTION_WORDS.search(text)):
        return MetricMention(metric=shares[0])
    counts = [metric for metric in fitting if metric.unit == "count"]
    return MetricMention(metric=(counts or fitting)[0])


#: "share of", "what %": words that ask a proportion.
_PROPORTION_WORDS = re.compile(r"\b(?:share|percentage|proportion|fraction|percent|rate)\b|%", re.I)


#: "fewer phones", "as many handsets", "more units", "shifted the most phones": a count compared or
#: ranked, which only a count answers ("fewer" is said of things counted; money is "less").
_COUNT_COMPARED = re.compile(
    r"\b(?:fewer|more|as\s+many|so\s+many|too\s+many|(?:the\s+)?(?:most|fewest))\s+([a-z][a-z'-]*)", re.I
)


def counted_rows(text: str, metrics: Sequence[DataMetric]) -> MetricMention | None:
    """The count of the rows a question counts by what they are called ("how many phones did store 3
    flog", "how many units has store 8 moved", "did store 3 sell fewer phones"): the figure counting
    every row (``count(*)``) one of whose names opens with the counted word ("phones sold"); None when
    the question counts nothing so named."""
    said = written_out(text)
    found = _COUNTED.search(said) or _COUNT_COMPARED.search(said)
    if found is None:
        return None
    thing = found.group(1).lower()
    for metric in metrics:
        if metric.expression.replace(" ", "").lower() != "count(*)":
            continue
        if any(
            (words := _TOKEN.findall(alias.lower())) and len(words) > 1 and _same_word(thing, words[0])
            for alias in metric.aliases
        ):
            return MetricMention(metric=metric)
    return None


def counted_in_stock(text: str, metrics: Sequence[DataMetric], now: datetime) -> str | None:
    """The thing a question counts as held at a moment rather than as sold over a period ("how many
    handsets are sitting in the back room at store 2 right now?", "how many chargers have we got
    left?"): things (the rows the data counts by what they are called, or things it has no word for),
    asked in words that state where they are or that they are had (WordNet's verbs, ``event_or_state``)
    over no period. Sales rows record events, never what is on hand: the stock is data the tenant
    does not have."""
    found = _COUNTED.search(written_out(text))
    if found is None or time_window(text, now) is not None:
        return None
    thing = found.group(1).lower()
    if thing in _NEUTRAL_MODIFIERS or thing in _PERSON_WORDS or names_a_person(thing):
        return None  # people are staff or customers, never stock
    if counted_rows(text, metrics) is None and counted_unknown(text, metrics) is None:
        return None
    if event_or_state(_who_and_when_blanked(text)) != "state":
        return None
    return thing


#: "spend per transaction", "sales per square foot": one figure taken for each unit of another thing.
_PER_UNIT = re.compile(
    r"\b([a-z]+(?:\s+[a-z]+)?)\s+(?:per|a|each|for\s+each|for\s+every)\s+(?!(?:day|week|month|year|quarter|hour)s?\b)"
    r"([a-z]+(?:\s+(?:foot|feet|metre|meter|mile|hour)s?)?)\b",
    re.I,
)
_MONEY_WORDS = re.compile(r"\b(?:spend|spent|money|revenue|takings?|value|amount|paid|pay)\b", re.I)


def per_unit_figure(text: str, metrics: Sequence[DataMetric]) -> MetricMention | None:
    """A figure said as an amount for each unit of something ("average spend per transaction" is the
    money of the sales averaged over them; "sales per square foot" needs floor areas): the figure the
    data has for it, the unit the data lacks as unknown, or None when the words say no such thing."""
    vocabulary = _data_words(metrics)
    for found in _PER_UNIT.finditer(written_out(entity_numbers_as_digits(text))):
        amount, unit = found.group(1).lower(), found.group(2).lower()
        unit_words = _TOKEN.findall(unit)
        if not unit_words or unit_words[0] in _NEUTRAL_MODIFIERS:
            continue
        if any(word in _PERSON_WORDS or f"{word}s" in _PERSON_WORDS or word == "head" for word in unit_words):
            continue  # "training hours per person": people are the staff a table lists
        known = [any(_same_word(word, v) for v in vocabulary) for word in unit_words]
        counted = _match_words(unit_words, metrics)
        if not all(known):
            if _MONEY_WORDS.search(amount) or metric_mention(amount, metrics).metric is not None:
                return MetricMention(metric=None, unknown=f"{unit} data")
            continue
        if counted is None or counted.metric is None or not _MONEY_WORDS.search(amount):
            continue
        money = next((m for m in metrics if m.name == counted.metric.money), None)
        average = next((m for m in metrics if money is not None and m.name == money.average), None)
        if average is not None:
            return MetricMention(metric=average)
    return None


#: "paid by card vs cash", "bought with a voucher", "sold online": sales told apart by a property
#: the words name; when the data has no word for it, no figure of the data tells them apart.
_BY_PROPERTY = re.compile(
    r"\b(?:were|was|got|been|being|that|which)?\s*(paid|bought|purchased|made|sold|ordered|settled)\s+"
    r"(?:by|with|using|via|through|in|on)\s+((?:[a-z]+(?:\s+(?:vs\.?|versus|or|and)\s+)?){1,4})",
    re.I,
)


def told_apart_by_unknown(text: str, metrics: Sequence[DataMetric]) -> str | None:
    """The property a question splits the sales by ("paid by card vs cash") when the data has no word
    for it: data the tenant does not have. None when there is none or the data knows its words."""
    vocabulary = _data_words(metrics)
    masked = _mask_entities(text)
    for found in _BY_PROPERTY.finditer(masked):
        words = [w for w in _TOKEN.findall(found.group(2).lower()) if w not in _NEUTRAL_MODIFIERS]
        words = [w for w in words if not _PERIOD_WORDS.fullmatch(w) and w not in ("vs", "versus")]
        if words and not any(any(_same_word(w, v) for v in vocabulary) for w in words):
            return f"{found.group(1).lower()} by {' / '.join(words)} data"
    return None


#: "Store 2's customers", "store four's shoppers": whose figure a question asks, by its owner.
_POSSESSED = re.compile(r"\b(?:[a-z]+\s*#?\s*\d+|[a-z]+)'s\s+([a-z][a-z-]*)", re.I)


def possessed_unknown(text: str, metrics: Sequence[DataMetric]) -> str | None:
    """The thing a question asks a figure of, said as someone's ("the average age of store 4's
    customers"), when no figure, table or column of the data has a word for it: data the tenant does
    not have. None otherwise ("Store 3's sales", "store 4's staff")."""
    vocabulary = _data_words(metrics)
    for found in _POSSESSED.finditer(written_out(entity_numbers_as_digits(text))):
        thing = found.group(1).lower()
        if thing in _NEUTRAL_MODIFIERS or len(thing) < 3 or _PERIOD_WORDS.fullmatch(thing):
            continue  # "Store 8's June sales": a month is when, not what
        if thing in _PERSON_WORDS or thing in ("team", "teams", "crew", "workforce"):
            continue  # people are the staff a table lists
        if any(_same_word(thing, known) for known in vocabulary):
            continue
        return thing
    return None


#: A figure's name, then the words that say which of its rows it is taken over ("the refund rate for
#: headphones", "attach rate among first-time customers", "accessory revenue from phone cases").
_OVER_ROWS = re.compile(r"(?:'s)?\s+(for|among|amongst|from|of|on|with|within)\s+([a-z][a-z' -]*)")
#: "first-time customer only", "iPhone buyers only": the rows kept, said before "only" at the end of a
#: phrase (not "I only want ...").
_ONLY_AFTER = re.compile(
    r"(?:^|[,;:(]\s*|\s{2,})(?P<words>[a-z][a-z'-]*(?:\s+[a-z][a-z'-]*){0,2})\s+only\b(?!\s+[a-z]+)"
)
#: "phone-order sales", "click-and-collect orders": a compound before the sales it says which of.
_COMPOUND_BEFORE = re.compile(
    r"\b(?P<words>[a-z]+(?:-[a-z]+)+)\s+(?=(?:sales|orders|transactions|refunds|returns)\b)"
)
#: "the number of returned headphones", "the count of refunded cases": what a figure counts.
_NUMBER_OF = re.compile(r"\b(?:number|count)\s+of\s+(?:the\s+|our\s+|its\s+)?(?P<words>[a-z][a-z' -]*)")


def _participles_left_out(phrase: str) -> str:
    """``phrase`` without the verbs' participles before its noun ("returned headphones" -> "headphones"):
    what was done to the things is the figure's, not which things."""
    words = phrase.split()
    while len(words) > 1 and words[0].endswith(("ed", "ing")) and verb_base(words[0]) is not None:
        words.pop(0)
    return " ".join(words)


_WEEKDAYS = tuple(name.lower() for name in calendar.day_name)


def _says_when(words: str) -> bool:
    """Whether a part of ``words`` names a time ("month-on-month", "same-day", "Mon-Fri", "Saturdays"):
    when, which the time and day readers read, not which rows."""
    parts = re.split(r"[\s-]+", words.lower())
    return any(
        _PERIOD_WORDS.fullmatch(part)
        or (len(part) >= 3 and any(day.startswith(part.rstrip("s")) for day in _WEEKDAYS))
        for part in parts
    )


#: "among first-time buyers" narrows the rows wherever it stands.
_AMONG = re.compile(r"\b(among|amongst)\s+([a-z][a-z' -]*)")
_PRONOUNS = frozenset("me us you him her them everyone everybody anyone anybody".split())  # noqa: SIM905


def rows_narrowed_by(text: str, metric: DataMetric, metrics: Sequence[DataMetric]) -> tuple[str, ...]:
    """The words that narrow ``metric`` to some of its rows ("refund rate for headphones", "attach rate
    among first-time customers") when no figure, table or column of the data has a word for them:
    the data cannot take that part of the rows out, so the figure over all of them answers another
    question. Who and when are no such words (they are read as filters), nor whoever buys said
    whole ("our customers"), nor a set phrase ("on average", "for example"). Words a member table's
    values may hold ("for the north stores") are the caller's to check. Empty: nothing narrows it."""
    blanked = _who_and_when_blanked(written_out(text)).lower()
    vocabulary = _data_words(metrics)
    found: list[str] = []
    places = [
        match
        for alias in (metric.name, *metric.aliases)
        for named in re.finditer(rf"\b{re.escape(alias.lower())}s?\b", blanked)
        if (match := _OVER_ROWS.match(blanked, named.end()))
    ]
    said = [(match.group(1), match.group(2)) for match in [*places, *_AMONG.finditer(blanked)]]
    # "first-time customer only, attach rate", "phone-order sales": said before the figure, as much.
    before = [*_ONLY_AFTER.finditer(blanked), *_COMPOUND_BEFORE.finditer(blanked)]
    said += [("of", match.group("words")) for match in before if not _says_when(match.group("words"))]
    # "halve the number of returned headphones": the things counted, what was done to them left out.
    said += [("of", _participles_left_out(match.group("words"))) for match in _NUMBER_OF.finditer(blanked)]
    if metric.unit == "currency" and (source := money_source(text)) is not None:
        said.append(("from", source.lower()))  # "how much did store 1 make from phone cases"
    # "the part-timers", "part-time staff", "our temps": some of the staff, by a kind of worker (said
    # as a set: "my assistant manager" is one person, no population).
    said += [
        ("among", word)
        for word in re.findall(r"[a-z][a-z-]*[a-z]s\b", blanked)
        if not word.endswith("ss") and _a_kind_of_staff(word)
    ]
    said += [("among", match.group(1)) for match in _STAFF_QUALIFIED.finditer(blanked)]
    for preposition, phrase in said:
        if words := _narrowing_words(preposition, phrase, vocabulary):
            found.append(" ".join(words))
    return tuple(dict.fromkeys(found))


#: "part-time staff", "night-shift sellers": a hyphenated kind of the staff said before them.
_STAFF_QUALIFIED = re.compile(
    r"\b([a-z]+-[a-z]+)\s+(?:staff|people|employees|workers|sellers|salespeople|team|members|reps|colleagues)\b"
)
#: WordNet's senses of the staff themselves ("employees", "staffers", "salespeople"): all of them.
_STAFF_SENSES = frozenset({"employee.n.01", "staff_member.n.01", "salesperson.n.01", "worker.n.01"})


@functools.cache
def _a_kind_of_staff(word: str) -> bool:
    """Whether the noun ``word`` is, in its first WordNet sense, a kind of worker that is not the staff
    as a whole ("part-timers", "temps", "veterans"): some of the staff, by what no column may say."""
    reader = wordnet()
    base = reader.morphy(word, "n")
    senses = reader.synsets(base, "n")[:1] if base else []
    if not senses or senses[0].name() in _STAFF_SENSES:
        return False
    return any(
        ancestor.name() == "worker.n.01" for path in senses[0].hypernym_paths() for ancestor in path[:-1]
    )


def _narrowing_words(preposition: str, phrase: str, vocabulary: frozenset[str]) -> list[str]:
    """The head words of ``phrase`` (its determiners and the words after it left out) when one of them
    is no word of the data; empty when every one is, or the phrase says how rather than which."""
    words = re.findall(r"[a-z][a-z'-]*", phrase)
    while words and (words[0] in _NEUTRAL_MODIFIERS or words[0] in _PRONOUNS):
        words.pop(0)
    if any(_PERIOD_WORDS.fullmatch(word) for word in words[:4]):
        return []  # "for ISO week 32", "for the most recent week": when, which the time readers read
    head: list[str] = []
    for word in words[:3]:
        if word in _NEUTRAL_MODIFIERS or word in _PRONOUNS or _PERIOD_WORDS.fullmatch(word):
            break
        head.append(word)
    if not head or a_set_phrase([preposition, *head[:2]]) or a_set_phrase([preposition, head[0]]):
        return []
    if preposition == "on" and not head[-1].endswith("s"):
        return []  # "on track", "on target": how the figure stands; "on headphones" names things
    unknown = [
        word
        for word in head
        if word not in _ENTITY_NOUNS
        and not any(_same_word(word, known) for known in vocabulary)
        and not (word == head[-1] and names_the_buyers(word))
    ]
    return head if unknown else []


# -- what a goal asks for ------------------------------------------------------------------------

TargetForm = Literal["absolute", "relative", "points", "multiple"]

#: Verbs that move a figure down; the others move it up.
#: The senses a direction is read against: a verb that is a way to decrease ("cut", "trim", "lower",
#: "minimise") or to increase ("raise", "grow", "boost"), by WordNet's hypernyms; an adjective said of
#: a count ("fewer accessories", "less refunds", "more sales"), by its antonym among "more" and "less".
_DOWN_SENSES = ("decrease.v.01", "decrease.v.02")
_UP_SENSES = ("increase.v.01", "increase.v.02")
#: How many of a verb's senses (WordNet lists them commonest first) are read for a direction.
_DIRECTION_SENSES = 4
#: "bring it down", "halve": a particle or a verb WordNet files under no decrease.
_DOWN_WORDS = re.compile(r"\b(?:down|halve)\b", re.I)
#: A comparative said of a thing counted ("fewer phones"); "no less than 8%" compares a level, no direction.
_COMPARED_THING = re.compile(r"\b([a-z]+)\s+(?!than\b|\d)[a-z]{3,}", re.I)


@functools.cache
def verb_direction(word: str) -> Literal["up", "down"] | None:
    """Whether the verb ``word`` (any form) is a way to decrease or to increase a thing, by WordNet."""
    reader = wordnet()
    base = reader.morphy(word.lower(), "v")
    if base is None:
        return None
    down = {reader.synset(name) for name in _DOWN_SENSES}
    up = {reader.synset(name) for name in _UP_SENSES}
    for sense in reader.synsets(base, "v")[:_DIRECTION_SENSES]:
        above = set(sense.closure(lambda s: s.hypernyms())) | {sense}
        if above & down:
            return "down"
        if above & up:
            return "up"
    return None


@functools.cache
def _count_direction(word: str) -> Literal["up", "down"] | None:
    """Whether the comparative ``word`` says a smaller or a larger count ("fewer", "less": the antonyms
    of "more"), by WordNet."""
    reader = wordnet()
    senses = reader.synsets(word.lower(), "a")[:2]
    opposites = {other.name() for sense in senses for lemma in sense.lemmas() for other in lemma.antonyms()}
    if not opposites & {"more", "less", "fewer"}:
        return None
    return "down" if "more" in opposites else "up"


def said_down(text: str) -> bool:
    """Whether ``text`` asks for a figure to go down: its first word with a direction is a verb of
    decreasing ("cut", "reduce", "trim", "lower"), "down", or a comparative of a smaller count said of a
    thing ("sell fewer accessories"), read by WordNet rather than listed."""
    for match in re.finditer(r"[A-Za-z]+", text):
        word = match.group(0)
        if _DOWN_WORDS.fullmatch(word):
            return True
        compared = _COMPARED_THING.match(text, match.start())
        direction = verb_direction(word) or (_count_direction(word) if compared else None)
        if direction is not None:
            return direction == "down"
    return False


_NUMBER = r"(\d+(?:\.\d+)?)"
_POINTS = re.compile(
    rf"\b(?:by\s+|up\s+|down\s+)?{_NUMBER}(?:\s*|-)(?:(?:more|extra|additional|further|full|whole)\s+)?"
    r"(?:percentage[\s-]+points?|pct\.?\s*pts?|pts?\b|pp\b|points?\b)",
    re.I,
)
#: "by a point", "a full percentage point": one point.
_ONE_POINT = re.compile(r"\b(?:by\s+)?an?\s+(?:full\s+|whole\s+)?(?:percentage\s+)?point\b", re.I)
#: "150 bps", "50 basis points": hundredths of a point.
_BASIS_POINTS = re.compile(rf"\b(?:by\s+|up\s+|down\s+)?{_NUMBER}\s*(?:bps?|basis\s+points?)\b", re.I)
_ABSOLUTE = re.compile(
    rf"(?:\b(?:to|reach(?:es|ing)?|hit|at\s+least|at\s+most|above|below|under|over|of|be\s+at)\s+"
    # "attach -> 6.5%": an arrow points to where the figure should end.
    rf"|(?:->|→|=>)\s*)(?:an?\s+)?(?:at\s+least\s+)?{_NUMBER}\s*(?:%|percent\b)",
    re.I,
)
#: A percentage said to be what the target is ("the target is 8%", "aim for 8%", "make it 8%", "8% is
#: the goal"): a level, as "to 8%" is; a change is said with "by", "up" or a verb that moves it.
_NAMED_LEVEL = re.compile(
    rf"\b(?:(?:target|goal|aim)\s+(?:is|=|:|would\s+be|will\s+be|should\s+be)|aim(?:ing)?\s+(?:for|at)|"
    rf"make\s+it|(?:should|must)\s+be|want\s+it\s+at|(?:needs?|wants?)(?!\s+an?\b))\s+(?:an?\s+)?{_NUMBER}\s*(?:%|percent\b)"
    r"(?!\s*(?:more|higher|lower|less|up|down|better|worse|bigger|smaller|extra)\b)|"
    rf"\b{_NUMBER}\s*(?:%|percent\b)\s+(?:is|as)\s+(?:the|our|my)\s+(?:target|goal|aim)\b",
    re.I,
)
#: "NPS to 60": a level without a percent sign (a score, a count); never a time ("to 5 pm").
_LEVEL = re.compile(
    rf"\b(?:to|reach(?:es|ing)?|hit|at\s+least|at\s+most)\s+{_NUMBER}\b(?!\s*(?:%|percent|days?|weeks?|months?|years?|am|pm|[:.]\d))",
    re.I,
)
_RELATIVE = re.compile(rf"(?:\bby\s+|\bup\s+|\bdown\s+|\b){_NUMBER}\s*(?:%|percent\b)", re.I)
#: A fraction in words, after ``with_digits`` ("a third", "1-fourth", "3-quarters", "2 thirds", "a
#: tenth"): a count (or "a"), then a denominator read as an ordinal ("fourth", "tenth") or named
#: ("half", "quarter").
_FRACTION = re.compile(r"\b(?:(\d+)|an?)[\s-]+([a-z]+?)(?:s|es)?\b(?!-)", re.I)
_NAMED_DENOMINATORS = {"half": 2, "halv": 2, "quarter": 4}
#: "1/5th", "2/3rds", "3/4": a fraction written with a slash (a date when nothing says it moves a figure).
_SLASH_FRACTION = re.compile(r"\b(\d{1,2})\s*/\s*(\d{1,2})(?:st|nd|rd|th|s|rds|ths)?\b(?![/.]\d)", re.I)
#: "6.5 accessories per 100 phones", "one case for every 20 handsets": a rate said as a count of one
#: thing for a count of another, a level (6.5 per 100 is 6.5%).
_PER_COUNT = re.compile(
    rf"(?<!\d){_NUMBER}\s+((?:[A-Za-z][\w-]*\s+){{1,2}})(?:per|for\s+every|in\s+every|out\s+of\s+every|every)\s+"
    rf"{_NUMBER}\s+[A-Za-z]",
    re.I,
)
#: "1 in 12 sales", "one in every fifteen transactions", "3 out of 40 sales": a share said as how many of
#: how many (a level: 1 in 12 is 8.3%). Not a time ("5 in 6 weeks") and never more than the whole.
_COUNT_OF_COUNT = re.compile(
    rf"(?<!\d){_NUMBER}\s+(?:in|out\s+of)\s+(?:every\s+)?{_NUMBER}\s+"
    r"(?!(?:seconds?|minutes?|hours?|days?|weeks?|wks?|months?|quarters?|years?|yrs?)\b)[A-Za-z]",
    re.I,
)
#: "by a third", "up by one-fourth", "a fifth more": a fraction that says how much a figure moves.
_FRACTION_MOVES = re.compile(r"(?:\bby|\bup|\bdown)\s+$", re.I)
_FRACTION_MORE = re.compile(r"^\s+(?:more|extra|higher|lower|less|up|down)\b", re.I)
#: "three-quarters of a percentage point": a fraction of one point.
_OF_A_POINT = re.compile(r"^\s+of\s+an?\s+(?:percentage\s+)?point\b", re.I)

#: "half a percentage point", "half of a point".
_HALF_A_POINT = re.compile(r"\bhalf\s+(?:of\s+)?an?\s+(?:percentage\s+)?point\b", re.I)


def _denominator(word: str) -> int | None:
    """The denominator a word names: "half" 2, "quarter" 4, an ordinal ("fourth", "tenth") its number,
    read by Duckling; None for any other word ("a store", "2 weeks")."""
    word = word.lower()
    if word in _NAMED_DENOMINATORS:
        return _NAMED_DENOMINATORS[word]
    for candidate in (word, f"{word}s"):
        found = duckling_parse(candidate, ("ordinal",))
        if (
            found
            and found[0]["body"].lower() == candidate
            and isinstance(found[0]["value"].get("value"), int)
        ):
            value = int(found[0]["value"]["value"])
            return value if value >= 2 else None
    return None


def _fraction_target(text: str, sign: float, down: bool) -> GoalTarget | None:
    """A target stated as a fraction: of a point ("three-quarters of a percentage point": points 0.75)
    or of the figure ("by one-fourth": relative 0.25; "down by a third": -1/3; "by half" as a cut: a
    multiple of 0.5)."""
    slashed = [
        (match, int(match.group(2)))
        for match in _SLASH_FRACTION.finditer(text)
        if match.group(1) < match.group(2)
    ]
    worded = [(match, _denominator(match.group(2))) for match in _FRACTION.finditer(text)]
    for match, denominator in sorted([*slashed, *worded], key=lambda found: found[0].start()):
        if denominator is None or (match.re is _SLASH_FRACTION and int(match.group(1)) >= denominator):
            continue
        fraction = float(match.group(1) or 1) / denominator
        after = text[match.end() :]
        if point := _OF_A_POINT.match(after):
            return GoalTarget(form="points", value=sign * fraction, words=match.group(0) + point.group(0))
        if not (_FRACTION_MOVES.search(text[: match.start()]) or _FRACTION_MORE.match(after)):
            continue
        if down and fraction == 0.5:
            return GoalTarget(form="multiple", value=0.5, words=match.group(0))
        return GoalTarget(form="relative", value=sign * fraction, words=match.group(0))
    if half_point := _HALF_A_POINT.search(text):
        return GoalTarget(form="points", value=sign * 0.5, words=half_point.group(0))
    if half := re.search(r"\bby\s+(half)\b", text, re.I):
        if down:
            return GoalTarget(form="multiple", value=0.5, words=half.group(0))
        return GoalTarget(form="relative", value=sign * 0.5, words=half.group(0))
    return None


_MULTIPLE = re.compile(r"\b(double|triple|quadruple|halve|two-?fold|three-?fold)\b", re.I)
_MULTIPLES = {"double": 2.0, "triple": 3.0, "quadruple": 4.0, "halve": 0.5, "twofold": 2.0, "two-fold": 2.0,
              "threefold": 3.0, "three-fold": 3.0}  # fmt: skip


@dataclass(frozen=True, kw_only=True)
class GoalTarget:
    """The target a goal states, in its own form: "to 8%" (absolute 0.08), "by 20%" (relative 0.2),
    "by 2 points" (points 2), "double" (multiple 2). A decrease is a negative relative or points value."""

    form: TargetForm
    value: float
    words: str
    """The words it was read from."""

    def applied_to(self, baseline: float) -> float:
        """The target value for a figure at ``baseline`` (rates as fractions)."""
        if self.form == "absolute":
            return self.value
        if self.form == "relative":
            return baseline * (1 + self.value)
        if self.form == "points":
            return baseline + self.value / 100
        return baseline * self.value

    def as_dict(self) -> dict[str, Any]:
        return {"form": self.form, "value": self.value, "words": self.words}


def with_digits(text: str) -> str:
    """``text`` with its numbers in words written as digits ("two percentage points" -> "2 percentage
    points", "twenty-five percent" -> "25 percent"), read by Duckling's number rules; "one and a
    half" -> "1.5"."""
    found = duckling_parse(text, ("number",))
    out, cursor = [], 0
    for span in sorted(found, key=lambda item: item["start"]):
        start, end, value = span["start"], span["end"], span["value"].get("value")
        body = text[start:end]
        if start < cursor or not isinstance(value, int | float) or any(ch.isdigit() for ch in body):
            continue
        out.append(text[cursor:start])
        out.append(f"{value:g}")
        cursor = end
    out.append(text[cursor:])
    return _AND_A_HALF.sub(lambda match: f"{float(match.group(1)) + 0.5:g}", "".join(out))


#: An entity noun, then the numbers named so far, just before a number in words ("store ", "stores 4 and ").
_ENTITY_BEFORE = re.compile(
    r"\b(?:stores?|shops?|branch(?:es)?|outlets?)\s*(?:#|\s(?:number|no\.?|num)\s)?\s*"
    r"(?:\d+\s*(?:,|and|&|or|vs\.?|versus)\s*)*$",
    re.I,
)
_ENTITY_WORD = re.compile(r"\b(?:stores?|shops?|branch(?:es)?|outlets?)\s*#?\s*[a-z]", re.I)


#: Places numbered in a shortening of their noun ("st 4", "br. 2", "shp #3"): the letters of one noun
#: only, in order, the first one first.
_PLACE_NOUNS = ("store", "shop", "branch", "outlet")
_PLACE_SHORTHAND = re.compile(
    r"\b([A-Za-z]{2,4})\.?(\s*#?\s*\d+)\b(?!\s*(?:%|percent|[.,:/]\d))|\b([Ss])(\d{1,3})\b(?![.,:/%]\d|\s*%)"
)


def _place_written_out(match: re.Match[str]) -> str:
    if match.group(3):
        # "s7", "S07": a store by its code, the letter of both "store" and "shop" (the same place).
        return f"store {int(match.group(4))}"
    said = match.group(1).lower()
    if said in _PLACE_NOUNS or said in _COUNT_WORDS:
        return match.group(0)

    def shortens(noun: str) -> bool:
        letters = iter(noun)
        return said[0] == noun[0] and all(ch in letters for ch in said)

    nouns = [noun for noun in _PLACE_NOUNS if shortens(noun)]
    return f"{nouns[0]}{match.group(2)}" if len(nouns) == 1 else match.group(0)


#: An entity noun numbered in Roman numerals ("Store IV", "branch XII"), capitals only.
_ROMAN_NUMBERED = re.compile(r"\b((?i:stores?|shops?|branch(?:es)?|outlets?))\s+([IVXLC]{1,6})\b")
_ROMAN = {"I": 1, "V": 5, "X": 10, "L": 50, "C": 100}


def _roman(numeral: str) -> int | None:
    """A Roman numeral's value; None when the letters are no numeral written the standard way ("IIII",
    "VX"): written back, the value must give the same letters."""
    values = [_ROMAN[ch] for ch in numeral]
    total = sum(-v if i + 1 < len(values) and v < values[i + 1] else v for i, v in enumerate(values))
    left, out = total, ""
    for value, letters in _ROMAN_STEPS:
        while left >= value:
            out, left = out + letters, left - value
    # A lone "I" after the noun is the pronoun ("the store I mean").
    return total if out == numeral and numeral != "I" else None


_ROMAN_STEPS = (
    (100, "C"),
    (90, "XC"),
    (50, "L"),
    (40, "XL"),
    (10, "X"),
    (9, "IX"),
    (5, "V"),
    (4, "IV"),
    (1, "I"),
)


def entity_numbers_as_digits(text: str) -> str:
    """``text`` with the numbers in words that number an entity as digits ("store six" -> "store 6",
    "stores four and nine" -> "stores 4 and 9", "Store IV" -> "Store 4"), read by Duckling's number
    rules. Other numbers in words stay as written: they may be a target or a count ("a fifth", "top
    three")."""
    text = _PLACE_SHORTHAND.sub(_place_written_out, text)
    text = _ROMAN_NUMBERED.sub(
        lambda m: f"{m.group(1)} {value}" if (value := _roman(m.group(2))) is not None else m.group(0), text
    )
    if not _ENTITY_WORD.search(text):
        return text
    out: list[str] = []
    cursor = 0
    for span in sorted(duckling_parse(text, ("number",)), key=lambda item: item["start"]):
        start, end, value = span["start"], span["end"], span["value"].get("value")
        if start < cursor or not isinstance(value, int | float) or value != int(value) or value < 1:
            continue
        if any(ch.isdigit() for ch in text[start:end]):
            continue
        if not _ENTITY_BEFORE.search("".join(out) + text[cursor:start]):
            continue
        out.append(text[cursor:start])
        out.append(str(int(value)))
        cursor = end
    out.append(text[cursor:])
    return "".join(out)


#: A level the figure is or was at ("was at about 4.7%", "is currently 3.2%", "stood at 5 percent").
_STANDS_AT = re.compile(
    r"\b(?:is|are|was|were|stands?|stood|sits?|sat|had\s+been|has\s+been)\s+(?:currently\s+|now\s+|only\s+)?"
    r"(?:at\s+)?(?:about|around|roughly|approximately|nearly|almost|just|only|~)?\s*"
    rf"{_NUMBER}\s*(?:%|percent\b)",
    re.I,
)
_AIM_BEFORE = re.compile(r"\b(?:target|goal|aim|objective|ambition)s?\b[^.;,]{0,20}$", re.I)
_AND_A_HALF = re.compile(r"\b(\d+)\s+and\s+a\s+half\b", re.I)
#: "1.5 times", "3x": a multiple of the figure as it is.
_TIMES = re.compile(rf"\b{_NUMBER}\s*(?:x|times)\b(?!\s+(?:a|per|each|every)\b)", re.I)


def _sign_written(text: str, at: int, sign: float) -> float:
    """The sign written on the number at ``at`` ("Takings +5%", "-2 pts"), else ``sign`` (the words')."""
    written = text[:at].rstrip()[-1:]
    return (
        1.0
        if written == "+"
        else -1.0
        if written in ("-", "\u2212") and not text[:at].endswith(" - ")
        else sign
    )


def goal_target(text: str) -> GoalTarget | None:
    """The target ``text`` states, or None. Percentages of a rate after "to", "reach", "at least" are
    where the figure should end; after "by" or alone, how much it should move."""
    text = with_digits(text)
    # "In September store 1 was at about 4.7%": where the figure stands or stood, no target.
    text = _STANDS_AT.sub(
        lambda match: (
            match.group(0)
            if _AIM_BEFORE.search(match.string[: match.start()])  # "the target is 8%" is one
            else " " * len(match.group(0))
        ),
        text,
    )
    # A fraction says its own form ("by a third", "three-quarters of a point"), read before any time is
    # blanked: Duckling reads "a third before April" as a date.
    down = said_down(text)
    fraction = _fraction_target(text, -1.0 if down else 1.0, down)
    # A number inside a time is no target ("from 15 July to 15 August", "by 31 March").
    read = _time_read(text)
    said = read[1] if read else None
    # ... but Duckling also reads "by 1" of "by 1.5 points" as one o'clock: only a mention with words
    # of its own (a month, "week", "end") is a time.
    worded = said and re.search(
        r"[a-z]{3,}", re.sub(r"\b(?:by|to|at|in|on|from|until|till)\b", "", said.lower())
    )
    if read and read[0] in text:
        said = read[0]
    elif said and said not in text and said in (spelled := spelled_for_duckling(text)):
        # The time was read as rewritten for Duckling ("from 7/13 to 7/19" is "from 13 July to 19 July"):
        # blanked there, its digits are no level ("to 7").
        text = spelled
    if said and worded and "%" not in said and said in text:
        text = text.replace(said, " " * len(said), 1)
    sign = -1.0 if down else 1.0
    if fraction is not None and fraction.form == "points":
        return fraction
    if match := _BASIS_POINTS.search(text):
        return GoalTarget(
            form="points", value=sign * float(match.group(1)) / 100, words=match.group(0).strip()
        )
    if match := _POINTS.search(text):
        value = _sign_written(text, match.start(1), sign) * float(match.group(1))
        return GoalTarget(form="points", value=value, words=match.group(0).strip())
    if match := _ONE_POINT.search(text):
        return GoalTarget(form="points", value=sign, words=match.group(0).strip())
    if match := _ABSOLUTE.search(text):
        return GoalTarget(form="absolute", value=float(match.group(1)) / 100, words=match.group(0).strip())
    if match := _NAMED_LEVEL.search(text):
        said = next(group for group in match.groups() if group is not None)
        return GoalTarget(form="absolute", value=float(said) / 100, words=match.group(0).strip())
    if (match := _PER_COUNT.search(text)) and float(match.group(3)) > 0:
        level = float(match.group(1)) / float(match.group(3))
        return GoalTarget(form="absolute", value=level, words=match.group(0)[:-1].strip())
    if (match := _COUNT_OF_COUNT.search(text)) and 0 < float(match.group(1)) < float(match.group(2)):
        level = float(match.group(1)) / float(match.group(2))
        return GoalTarget(form="absolute", value=level, words=match.group(0)[:-1].strip())
    if match := _MULTIPLE.search(text):
        return GoalTarget(form="multiple", value=_MULTIPLES[match.group(1).lower()], words=match.group(0))
    if match := _TIMES.search(text):
        return GoalTarget(form="multiple", value=float(match.group(1)), words=match.group(0))
    if fraction is not None:
        return fraction
    if match := _RELATIVE.search(text):
        return GoalTarget(
            form="relative",
            value=_sign_written(text, match.start(1), sign) * float(match.group(1)) / 100,
            words=match.group(0).strip(),
        )
    if match := _LEVEL.search(text):
        return GoalTarget(form="absolute", value=float(match.group(1)), words=match.group(0).strip())
    return None


_COUNT_WORDS = {"one": 1, "a": 1, "an": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
                "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12}  # fmt: skip
#: "within 60 days", "in the next six months": a span counted from now, not a calendar span.
_ROLLING = re.compile(
    r"\b(?:within|in|next|over|during|coming)\b.*?\b(\d+|"
    + "|".join(_COUNT_WORDS)
    + r")\s+(day|week|month|year)s?\b",
    re.I,
)


def _target_blanked(text: str) -> str:
    """``text`` without its target's words: "by a third by the end of March" is no date "a third"."""
    target = goal_target(text)
    if target is None or not target.words or target.words not in text:
        return text
    return text.replace(target.words, " " * len(target.words), 1)


def deadline_window(text: str, now: datetime) -> Window | None:
    """The span of time a goal's words name looking forward, its target's words left out ("by 1.5
    percentage points" is no "by 1")."""
    return time_window(_target_blanked(text), now, direction="future")


def goal_deadline(text: str, now: datetime) -> tuple[datetime, str] | None:
    """The day a goal should be met by, looking forward from ``now``, and the words it was read from:
    "within 60 days" and "in the next six months" count from today; "by Christmas" and "by jan 31"
    are that day; "by the end of March", "before February" and "this quarter" end the day before the
    span they name ends."""
    blanked = _target_blanked(text)
    window = time_window(blanked, now, direction="future")
    if window is None:
        # Two times in one goal ("1.4 times what it is today by the end of May"): the one a deadline's
        # preposition opens is the deadline; the other says what the target is measured against.
        for opened in reversed(list(_DEADLINE_OPENS.finditer(blanked))):
            window = time_window(blanked[opened.start() :], now, direction="future")
            if window is not None:
                blanked = blanked[opened.start() :]
                break
    if window is None or _event_named_by(blanked, window.label):
        return None
    label = window.label.lower()
    day = timedelta(days=1)
    if (ends := _END_OF.search(label)) and not label.startswith("end"):
        # "before end of April", "till March-end": Duckling ends the span where "the end of April" (its
        # last ten days) begins; the deadline is the last day of the period whose end is named.
        named_end = time_window(window.label[ends.start() :], now, direction="future")
        if named_end is not None:
            window = named_end
            label = window.label.lower()
    if rolling := _ROLLING.search(label):
        count = rolling.group(1).lower()
        number = int(count) if count.isdigit() else _COUNT_WORDS[count]
        last = _add(now, number, rolling.group(2).lower())
    elif re.search(r"\bby\b", label) and not re.search(r"\bend\s+of\b", label) and _midnight(window.end):
        last = window.end  # "by Christmas": met on that day
    elif re.match(r"mid\b", label) and window.end - window.start > day:
        # "by mid-January": the middle of the month, the 15th (Duckling reads the 11th to the 20th).
        last = (window.start + (window.end - window.start) / 2).replace(day=15)
    elif window.end - window.start > day:
        last = window.end - day if _midnight(window.end) else window.end
    else:
        last = window.start
    if last <= now:
        return None
    return last.replace(hour=0, minute=0, second=0, microsecond=0), window.label


#: How recently a yearly day may have passed for "by <that day>" to be asked about rather than read as
#: next year's: a month ago, and its next one most of a year away.
JUST_PASSED = timedelta(days=31)
YEAR_AWAY = timedelta(days=300)


def deadline_just_passed(text: str, now: datetime) -> Window | None:
    """The day a goal's deadline names when it passed a short while ago and its next one is most of a
    year away ("get store 7 to 6% by Black Friday" on 1 December): which one is meant is the user's to
    say, never next year's by default. None otherwise."""
    ahead = goal_deadline(text, now)
    if ahead is None or ahead[0] - now < YEAR_AWAY:
        return None
    # The day itself, without the words that make it a deadline ("by", "before", "until").
    named = re.sub(r"^(?:by|before|until|till|ahead\s+of|in\s+time\s+for)\s+", "", ahead[1], flags=re.I)
    past = time_window(named, now, direction="past")
    if past is None or past.end > now or now - past.end > JUST_PASSED:
        return None
    return past


def deadline_readings(text: str, now: datetime) -> list[tuple[datetime, str]]:
    """The deadlines a goal's digit date may be when nothing in its words settles the order ("by
    1/3/27": 1 March or 3 January 2027), each read as ``goal_deadline`` reads it, the ones still ahead
    only: two readings ask which; one settles it (the other has passed); none when the date is settled
    by its words or there is no digit date."""
    readings = ambiguous_date(text)
    match = next(
        (
            found
            for found in _SLASH_DATE.finditer(text)
            if readings is not None and int(found.group(1)) != int(found.group(2))
        ),
        None,
    )
    if readings is None or match is None:
        return []
    year = f" {match.group(3)}" if match.group(3) else ""
    found: list[tuple[datetime, str]] = []
    for reading in readings:
        said = text[: match.start()] + reading + year + text[match.end() :]
        deadline = goal_deadline(said, now)
        if deadline is not None and all(deadline[0] != day for day, _ in found):
            found.append((deadline[0], reading + year))
    return found


#: Words that make a past period the level a figure should return to ("back to where it was in
#: August", "its June level", "as high as it was in July").
_LEVEL_OF_THEN = re.compile(
    r"\b(?:back|level|(?:where|what|the\s+[a-z]+)\s+it\s+(?:was|stood|had|used\s+to\s+be)|"
    r"as\s+(?:high|good|strong)\s+as)\b",
    re.I,
)

_UP_TO = re.compile(r"\b(?:up\s+)?to\b", re.I)


def level_reference(text: str, now: datetime) -> Window | None:
    """The past period whose level a goal states as its target, when it states no figure ("back to
    where it was in August by mid-February": August; "back up to last year's level by Easter": last
    year): the period named between the level's words and the deadline's preposition. None when the
    goal states a target of its own or names no such period."""
    if goal_target(text) is not None:
        return None
    for level in _LEVEL_OF_THEN.finditer(text):
        # From the "to" the level is said after ("to its July level"), in the level's own sentence.
        sentence = re.split(r"[.;!?]", text[: level.start()])[-1]
        opener = list(re.finditer(r"\bto\b", sentence))
        start = level.start() - len(sentence) + opener[-1].start() if opener else level.start()
        clause = text[start:]
        if opened := _DEADLINE_OPENS.search(clause):
            clause = clause[: opened.start()]
        # "back up to last year's level": the period, not a span running "up to" it.
        clause = _UP_TO.sub(" ", clause)
        window = time_window(clause, now, direction="past")
        if window is not None and window.start < min(now, window.end):
            return window
    return None


#: "How many sales will store 2 make in December?": a question about time to come ("will you tell me"
#: is a request, not the future).
_FUTURE_TENSE = re.compile(r"\b(?:will|shall|going\s+to|gonna)\b(?!\s+(?:you|u)\b)", re.I)


def asks_future(text: str) -> bool:
    """Whether a question is about time to come: its period is the next one, not the last."""
    return _FUTURE_TENSE.search(text) is not None


#: "the most recent week you actually have data for", "the latest month of data": a span counted back
#: from the data's last day, not the calendar's.
_DATA_EDGE = re.compile(
    rf"\b(?:most\s+recent|latest|last|final)\s+(?:{_COUNT}\s+)?(days?|weeks?|fortnights?|months?)\b"
    r"(?=[^.?!]{0,40}?\b(?:data|records?|rows|figures|numbers)\b)",
    re.I,
)


def data_edge_window(text: str, coverage: Window) -> Window | None:
    """The span ``text`` counts back from the end of the data (``coverage``): days, weeks and
    fortnights back from its last day, a month as the calendar month that day is in; None when the
    words count from the calendar."""
    match = _DATA_EDGE.search(text)
    if match is None:
        return None
    unit = match.group(2).lower().rstrip("s")
    label = match.group(0)
    if unit == "month":
        start = coverage.last_day().replace(day=1, hour=0, minute=0, second=0, microsecond=0)
        return Window(
            start=max(_add(start, 1 - _count(match.group(1)), "month"), coverage.start),
            end=coverage.end,
            label=label,
        )
    span = _count(match.group(1)) * timedelta(days=_SPAN_DAYS[unit])
    return Window(start=max(coverage.end - span, coverage.start), end=coverage.end, label=label)


#: Words that ask how a figure changed ("did it go up", "by how much did it increase", "MoM").
_CHANGED = re.compile(
    r"\b(?:increase[sd]?|rise|rose|risen|(?:go|goes|gone|went)\s+(?:up|down)|grow|grew|grown|drop(?:ped)?|"
    r"fall|fell|fallen|decline[sd]?|decrease[sd]?|change[sd]?|improve[sd]?|move[sd]?|mom|qoq|yoy|"
    r"(?:month|quarter|year)[\s-]+on[\s-]+(?:month|quarter|year)|difference|compare[sd]?|comparing|vs|versus|"
    r"against)\b",
    re.I,
)
#: What joins the two periods of a change: "from May to June", "between May and August", "aug->sep",
#: "Diwali week compared with the week before".
_PERIOD_JOIN = re.compile(
    r"\s+(?:to|and|than|vs\.?|versus|(?:compared\s+)?(?:with|against))\s+|\s*(?:->|→)\s*", re.I
)
#: A comparative asks the difference between what follows it and what follows "than" ("how much more
#: did store 3 sell in October than in September", "were refunds lower in Q3 than Q2").
_COMPARATIVE = re.compile(
    r"\b(?:more|less|fewer|higher|lower|bigger|smaller|better|worse|greater)\b[^.?!]*?\bthan\b", re.I
)
#: "the week before", "the month after": the period of that length next to the one said before it.
_NEXT_TO = re.compile(
    r"\s*(?:the\s+)?(day|weekend|week|fortnight|month|quarter|year)\s+(before|prior|earlier|after)\b", re.I
)
_UNIT_WEEKS = {"weekend": 1, "fortnight": 2}
_UNIT_MONTHS = {"quarter": 3}
_PERIOD_WORD = re.compile(r"[A-Za-z0-9']+")


def changed_between(text: str, now: datetime) -> tuple[Window, Window] | None:
    """The two periods gone by whose figures ``text`` asks the change between ("by how much did store
    6's attach rate increase from May to June?": May, then June); None when it asks no change or names
    no two such periods, one after the other. Each period is the fewest words (up to three) on its side
    of the join that read as one."""
    comparative = _COMPARATIVE.search(text) is not None
    if not _CHANGED.search(text) and not comparative:
        return None
    masked = _mask_entities(text)

    def period(words: list[str], *, last: bool) -> Window | None:
        # Up to five words: "last to last month" is one period (its "to" no join), "the week of 10 August" one.
        spans = [words[-n:] if last else words[:n] for n in (1, 2, 3, 4, 5) if len(words) >= n]
        read = [
            window
            for span in spans
            if not {"from", "between"} & {w.lower() for w in span}
            for said in (" ".join(span),)
            # "May" alone is a verb to Duckling: "in May" is the month.
            if (window := time_window(said, now) or time_window(f"in {said}", now)) is not None
        ]
        best = max(read, key=lambda window: len(window.label), default=None)
        if best is None:
            return None
        # Said after "in" in the answer: the words' own preposition ("in October") would repeat it.
        return replace(best, label=re.sub(r"^(?:in|over|during)\s+", "", best.label, flags=re.I))

    for join in _PERIOD_JOIN.finditer(masked):
        before = _PERIOD_WORD.findall(masked[: join.start()])
        after = _PERIOD_WORD.findall(masked[join.end() :])
        first, second = period(before, last=True), period(after, last=False)
        elided = _elided(after, first, now) if first is not None else None
        # "the second half of September than the first": the first half of September, not the 1st.
        if elided is not None and (second is None or _days_apart(second, first) > _days_apart(elided, first)):  # type: ignore[arg-type]
            second = elided
        if first is not None and (beside := _NEXT_TO.match(masked, join.end())) is not None:
            # "Diwali week compared with the week before": the week before Diwali week, not last week.
            unit, side = beside.group(1).lower(), beside.group(2).lower()
            step = -1 if side != "after" else 1
            if unit in _UNIT_MONTHS:
                start, end = _add(first.start, step * 3, "month"), _add(first.end, step * 3, "month")
            elif unit in _UNIT_WEEKS:
                # "the bank holiday weekend vs the weekend before": the same days a week (or two) away.
                weeks = step * _UNIT_WEEKS[unit]
                start, end = _add(first.start, weeks, "week"), _add(first.end, weeks, "week")
            else:
                start, end = _add(first.start, step, unit), _add(first.end, step, unit)
            other = Window(start=start, end=end, label=f"the {unit} {side} {first.label}")
            first, second = (other, first) if step < 0 else (first, other)
        said = re.sub(r"\s+", " ", join.group(0).strip().lower())
        if (
            ((comparative and said == "than") or said in _SIDE_BY_SIDE)
            and first is not None
            and second is not None
        ):
            # "more in October than in September", "August vs July": the periods in either order, the
            # change from the earlier.
            first, second = sorted((first, second), key=lambda window: window.start)
        if first is not None and second is not None and first.end <= second.start and second.end <= now:
            return first, second
    return None


_ELIDED_SKIP = frozenset({"the", "in", "on", "during", "over", "for", "a", "an"})


#: Joins that set two periods side by side, in no order of time ("August vs July").
_SIDE_BY_SIDE = frozenset({"vs", "vs.", "versus", "against", "with", "compared with", "compared against"})


def _elided(words: list[str], said: Window, now: datetime) -> Window | None:
    """The period the words after a join name by leaving out what they share with ``said`` ("the
    second half of September than in the first": the first half of September), read by putting the
    words said in place of as many of ``said``'s first words; None when none reads."""
    head = [word for word in words[:3] if word.lower() not in _ELIDED_SKIP][:2]
    own = [word for word in said.label.split() if word.lower() not in _ELIDED_SKIP]
    if not head or len(own) <= len(head):
        return None
    for size in range(len(head), 0, -1):
        completed = " ".join([*head[:size], *own[size:]])
        window = time_window(completed, now)
        if window is not None:
            return replace(window, label=completed)
    return None


def _days_apart(window: Window, other: Window) -> float:
    """How far two periods' lengths differ, in days: periods compared are alike."""
    return abs((window.end - window.start) - (other.end - other.start)) / timedelta(days=1)


def moves_a_figure(text: str) -> bool:
    """Whether ``text`` has a verb that sets a figure moving ("increase", "cut", "get ... to")."""
    return _GOAL_VERB.search(text) is not None


def only_figure_words(text: str, metrics: Sequence[DataMetric]) -> bool:
    """Whether every content word of ``text`` is a word of the data's figures (misspelt too), of who
    or of when: nothing in it asks for other work ("devise a strategy for ...")."""
    vocabulary = _data_words(metrics)
    blanked = _who_and_when_blanked(written_out(spelled_for_duckling(_mask_entities(text))))
    for word in _TOKEN.findall(blanked.lower()):
        word = word.removesuffix("'s")
        if (
            word in _NEUTRAL_MODIFIERS
            or word in _ENTITY_NOUNS
            or _PERIOD_WORDS.fullmatch(word)
            or len(word) < 3
        ):
            continue
        if not any(_same_word(word, known) for known in vocabulary):
            return False
    return True


def opens_deadline(text: str) -> bool:
    """Whether ``text`` has a preposition that opens a deadline ("by", "before", "within")."""
    return _DEADLINE_OPENS.search(text) is not None


#: A question told in the past tense ("why did Store 2 sell fewer...", "what was...", "sales fell").
_PAST_TENSE = re.compile(r"\b(?:did|was|were|had|went|fell|dropped|dipped|slumped|declined)\b", re.I)


def past_window(text: str, now: datetime) -> Window | None:
    """The period a goal-like message asks about in the past tense, with no deadline and no target
    ("Why did Store 2 sell fewer accessories in October?"): a question about what happened, whose
    month is no deadline next year; None otherwise."""
    if not _PAST_TENSE.search(text) or _DEADLINE_OPENS.search(text) or goal_target(text) is not None:
        return None
    window = time_window(text, now, direction="past")
    return window if window is not None and window.start < now else None


#: Prepositions that open a goal's deadline ("by the end of May", "within six weeks", "before Easter");
#: "by how much", "by what margin" ask an amount.
_DEADLINE_OPENS = re.compile(
    r"\b(?:by(?!\s+(?:how|what|which)\b)|before|until|till|within|in\s+time\s+for|no\s+later\s+than)\b", re.I
)


#: Words that tie a goal to an event rather than a date ("by the time the new manager starts",
#: "before the next stocktake", "in time for the relaunch").
_EVENT_DEADLINE = re.compile(
    r"\b(?:by\s+the\s+time|by\s+(?:the\s+)?next|before|until|till|ahead\s+of|in\s+time\s+for)\s+"
    r"(?!\d)[a-z][a-z' ]{2,60}",
    re.I,
)


#: Closed-class words (and time words) that may follow a period's name without making it the name of
#: something else: "before spring at Store 5", "by March 2027 please" still mean the period.
_NOT_A_HEAD = frozenset(
    """a an the this that these those my our your their its his her and or but nor so yet if then than
    at in on of for to from by with without within into onto over under after before during until till
    about across per via as is are was were be been being will would should could can may might must
    shall do does did have has had we us i you they he she it me them please pls thanks latest earliest
    tops max at least most end start beginning middle mid year years month months week weeks day days
    quarter quarters time latest next last coming following ahead onwards starting from now today""".split()  # noqa: SIM905
)
#: A word directly after a period's name, only spaces between.
_NEXT_WORD = re.compile(r"\s+([A-Za-z][A-Za-z'-]*)")


def _event_named_by(text: str, label: str) -> bool:
    """Whether the period ``label`` only qualifies the noun after it, the name of an event ("before
    the spring sale", "ahead of the autumn launch", "by the Christmas party"): the event's date is
    the business's own, not the season's or the holiday's."""
    at = text.lower().find(label.lower())
    if at < 0 or not label:
        return False
    following = _NEXT_WORD.match(text, at + len(label))
    return following is not None and following.group(1).lower() not in _NOT_A_HEAD


def _event_words(text: str, label: str) -> str:
    """The event's words, from the period's name to the end of the noun after it."""
    at = text.lower().find(label.lower())
    following = _NEXT_WORD.match(text, at + len(label))
    end = following.end() if following else at + len(label)
    before = re.search(
        r"(?:\b(?:by|before|until|till|ahead\s+of|in\s+time\s+for)\s+(?:the\s+)?)?$", text[:at], re.I
    )
    start = before.start() if before and before.group(0) else at
    return text[start:end].strip()


def guessed_deadline(text: str, now: datetime) -> tuple[str, str] | None:
    """A goal's deadline read only by a guess ("before Waitangi Day" by New Zealand's calendar when the
    text names no country): its words and the reading with its day, for the user to settle; None when
    the words settle it or there is none."""
    deadline = goal_deadline(text, now)
    if deadline is None:
        return None
    window = time_window(_target_blanked(text), now, direction="future")
    if window is None or window.reading is None:
        return None
    return window.label, f"{window.reading}, {deadline[0]:%-d %B %Y}"


def unread_deadline(text: str, now: datetime) -> str | None:
    """The words of a goal that tie it to a moment no date was read from ("by the time the new
    manager starts", "before the spring sale"); None when there are none or a deadline was read."""
    if goal_deadline(text, now) is not None:
        return None
    blanked = _target_blanked(text)
    window = time_window(blanked, now, direction="future")
    if window is not None and _event_named_by(blanked, window.label):
        return _event_words(blanked, window.label)
    found = _EVENT_DEADLINE.search(blanked) or _NAMED_DEADLINE.search(blanked)
    if found is not None and entity_noun(found.group(0).split()[-1]):
        return None  # "by Store 5" names who, not when
    return found.group(0).strip(" ?.!") if found else None


#: "by Burns Night", "by Paddy's Day": a deadline named by a proper name no calendar here placed.
_NAMED_DEADLINE = re.compile(r"\bby\s+(?:the\s+)?(?-i:[A-Z][A-Za-z']+(?:\s+[A-Z][A-Za-z']+)*)", re.I)


def restated(goal: str, change: str) -> str:
    """``goal`` with the target and the deadline a later message states in place of its own
    ("actually make it 10 points", "what if we gave it till the end of March?")."""
    said, was = goal_target(change), goal_target(goal)
    if said is not None and was is not None and said.words and was.words and was.words in goal:
        goal = goal.replace(was.words, said.words, 1)
    old_time = time_mention(_target_blanked(goal))
    if old_time and not _hours_only(old_time):
        # "late shift = 16:00 till midnight" after a question about September: the hours of each day
        # of it, said alongside the days, never in their place.
        change = clock_blanked(change)
    new_time = time_mention(_target_blanked(change))
    if new_time and _FROM_NOW.search(new_time):
        # "from now on have it group the items by brand": when a change holds, not the goal's time.
        new_time = None
    if new_time and old_time and old_time not in goal and old_time in spelled_for_duckling(goal):
        goal = spelled_for_duckling(goal)  # "till april end" is read (and found) as "till end of april"
    if new_time and old_time and old_time in goal:
        goal = goal.replace(old_time, new_time, 1)
    elif (
        not new_time
        and old_time
        and old_time in goal
        and (event := _EVENT_DEADLINE.search(_target_blanked(change)))
    ):
        # "give them until St David's Day": a new deadline no calendar here places replaces the old
        # one all the same (then asked about), never leaving the plan on the date it replaces.
        words = event.group(0).strip(" ?.!")
        if re.sub(r"^\S+\s+", "", words).lower() not in _POINTERS:
            goal = goal.replace(old_time, words, 1)
    return goal


def _hours_only(words: str) -> bool:
    """Whether ``words`` are clock times of every day and nothing more ("16:00 till midnight")."""
    hours = hours_of_day(words)
    return hours is not None and not clock_blanked(words).strip()


#: Words that point back instead of naming a moment ("before that", "until then").
_POINTERS = frozenset({"that", "then", "it", "this", "now", "so", "the"})


def _midnight(moment: datetime) -> bool:
    return (moment.hour, moment.minute, moment.second) == (0, 0, 0)


def _add(moment: datetime, count: int, unit: str) -> datetime:
    if unit in ("day", "week"):
        return moment + timedelta(days=count * (7 if unit == "week" else 1))
    months = count * (12 if unit == "year" else 1)
    month = moment.month - 1 + months
    year, month = moment.year + month // 12, month % 12 + 1
    return moment.replace(year=year, month=month, day=min(moment.day, calendar.monthrange(year, month)[1]))


#: Objects that name no figure at all ("improve things"): the goal is left open, not out of scope.
_VAGUE_OBJECTS = frozenset(
    [
        "things",
        "thing",
        "stuff",
        "it",
        "them",
        "results",
        "performance",
        "numbers",
        "figures",
        "business",
        "operations",
        "situation",
        "everything",
        "matters",
    ]
)
#: Nouns of a way of working ("the approach", "the same playbook"): what a goal carries from one store to
#: another, never the figure it moves.
_METHODS = frozenset(
    {"approach", "plan", "playbook", "strategy", "method", "recipe", "tactic", "tactics", "formula", "play"}
)


def _a_method(words: Sequence[str]) -> bool:
    """Whether an object's first content word names a way of working ("the approach you'd use")."""
    content = [word for word in words if word not in _NEUTRAL_MODIFIERS and word not in ("same", "whole")]
    return bool(content) and content[0] in _METHODS


#: Verbs a goal opens its figure with ("increase X", "get X to 8%", "cut X by half").
_GOAL_VERB = re.compile(
    r"\b(increase|raise|improve|boost|lift|grow|reduce|cut|lower|decrease|drop|double|triple|halve|get|"
    r"bring|push|drive|move|take|maximi[sz]e|minimi[sz]e)\b\s+(?P<object>.+?)"
    r"(?=\s+(?:at|in|for|by|to|from|within|over|before|across|this|next|during|up|down|until|per)\b|[,.?!;]|$)",
    re.I,
)
_ADD_TO = re.compile(
    r"\b(?:add|put)\s+.{1,40}?\s+(?:to|on(?:to)?)\s+(?P<object>.+?)"
    r"(?=\s+(?:at|in|for|by|from|within|over|before|across|this|next|during|until)\b|[,.?!;]|$)",
    re.I,
)
#: "Store 5's", "the south store's", "my store": who the figure belongs to, not what it is.
_POSSESSIVE_ENTITY = re.compile(
    r"\b(?:[a-z]+\s+)?(?:store|shop|branch|outlet)s?\s*(?:#?\s*\d+)?(?:'s)?(?=\s|$)", re.I
)
_TOKEN = re.compile(r"[a-z][a-z0-9'-]*")


def goal_metric(text: str, metrics: Sequence[DataMetric]) -> MetricMention:
    """The figure a goal sets out to move: the object of one of its verbs matched to the data's
    figures by their words (a misspelt or shortened word counts: "acc attach rte" is the attach
    rate), else any figure the text names. Only when neither names one of the data's figures is the
    first object reported as a figure the data lacks ("overtime hours"); no verb and no figure leaves
    it open."""
    if (rate := _rate_counted(text, metrics)) is not None:
        return MetricMention(metric=rate)
    # "store one's attach rate": a number in words is the store's, no qualifier of the figure.
    text = written_out(entity_numbers_as_digits(text))
    objects = [_object_words(found.group("object")) for found in _GOAL_VERB.finditer(text)]
    # "add 150 bps to store 6's attach": what is added to is the figure.
    objects += [_object_words(found.group("object")) for found in _ADD_TO.finditer(text)]
    # "take the approach you'd use for Store 5": a way of working taken elsewhere is no figure.
    objects = [words for words in objects if not _a_method(words)]
    for words in objects:
        matched = _match_words(words, metrics)
        if matched is not None:
            return matched
    mentioned = metric_mention(text, metrics)
    if mentioned.metric is None and (counted := counted_rows(text, metrics)) is not None:
        # "help store 3 sell fewer phones": the phones are counted, never their money.
        return counted
    if mentioned.metric is not None or not objects:
        return mentioned
    named = [word for word in objects[0] if word not in _NEUTRAL_MODIFIERS and word not in _VAGUE_OBJECTS]
    vocabulary = _data_words(metrics)
    if all(any(_same_word(word, known) for known in vocabulary) for word in named):
        return MetricMention(metric=None)  # words of the data, no one figure ("sales"): left open
    return MetricMention(metric=None, unknown=" ".join(named) or None)


def _rate_counted(text: str, metrics: Sequence[DataMetric]) -> DataMetric | None:
    """The share a level said as a count for a count is of ("6.5 accessories per 100 phones": the
    one share of the data whose name or meaning says what is counted, the attach rate); None when
    the goal says no such level or no one share fits."""
    found = _PER_COUNT.search(with_digits(text))
    if found is None:
        return None
    counted = [word for word in _TOKEN.findall(found.group(2).lower()) if word not in _NEUTRAL_MODIFIERS]
    rates = [
        metric
        for metric in metrics
        if metric.unit == "ratio"
        and any(
            _same_word(word, known)
            for word in counted
            for phrase in (metric.name, *metric.aliases, metric.description)
            for known in _TOKEN.findall(phrase.lower())
            if len(known) > 3
        )
    ]
    return rates[0] if len(rates) == 1 else None


def _object_words(phrase: str) -> list[str]:
    phrase = _POSSESSIVE_ENTITY.sub(" ", phrase).strip()
    return [word.removesuffix("'s") for word in _TOKEN.findall(phrase.lower())]


def _match_words(words: list[str], metrics: Sequence[DataMetric]) -> MetricMention | None:
    """The figure whose name's every word is among ``words`` (the longest name wins), with the
    leftover words the data has no use for as an unknown qualifier; None when no name fits."""
    best: tuple[int, DataMetric, set[int]] | None = None
    for metric in metrics:
        for alias in (metric.name, *metric.aliases):
            alias_words = _TOKEN.findall(alias.lower())
            used: set[int] = set()
            for alias_word in alias_words:
                index = next(
                    (i for i, word in enumerate(words) if i not in used and _same_word(word, alias_word)),
                    None,
                )
                if index is None:
                    break
                used.add(index)
            else:
                if best is None or len(alias_words) > best[0]:
                    best = (len(alias_words), metric, used)
    if best is None:
        return _by_own_word(words, metrics)
    _, metric, used = best
    vocabulary = _data_words(metrics)
    # Only the words right before the name qualify it ("warranty attach rate"); "three points higher
    # on attach rate" says how far to move it.
    first = min(used)
    strange: list[str] = []
    for word in reversed(words[max(0, first - 2) : first]):
        if (
            word in _NEUTRAL_MODIFIERS
            or word in _MOVES
            or any(_same_word(word, known) for known in vocabulary)
        ):
            break  # "doing on attach": a preposition ends what can qualify the name
        strange.insert(0, word)
    if strange:
        return MetricMention(metric=metric, unknown=" ".join([*strange, metric.name]))
    return _averaged(words[max(0, first - 2) : first], metric, metrics)


def _by_own_word(words: list[str], metrics: Sequence[DataMetric]) -> MetricMention | None:
    """The one figure a qualifier of its name belongs to when no other figure's names have that word
    ("store 6's attach" is the attach rate; a name's head, "hours", "rate", names no one figure); None
    when the words are shared or name none. A word the data lacks right before it qualifies it."""
    vocabulary = _data_words(metrics)
    found: tuple[int, str] | None = None
    for index, word in enumerate(words):
        if word in _NEUTRAL_MODIFIERS or word in _MOVES or len(word) < 4:
            continue
        having = {
            metric.name
            for metric in metrics
            for alias in (metric.name, *metric.aliases)
            for position, known in enumerate(_TOKEN.findall(alias.lower()))
            if _same_word(word, known) and position < len(_TOKEN.findall(alias.lower())) - 1
        }
        heads = {
            metric.name
            for metric in metrics
            for alias in (metric.name, *metric.aliases)
            if _same_word(word, _TOKEN.findall(alias.lower())[-1])
        }
        if len(having) == 1 and not heads - having:
            if found is not None and found[1] not in having:
                return None
            found = (index, next(iter(having)))
    if found is None:
        return None
    index, name = found
    metric = next(metric for metric in metrics if metric.name == name)
    before = words[index - 1] if index else ""
    if (
        before
        and before not in _NEUTRAL_MODIFIERS
        and before not in _MOVES
        and not any(_same_word(before, known) for known in vocabulary)
    ):
        return MetricMention(metric=metric, unknown=f"{before} {metric.name}")
    return MetricMention(metric=metric)


#: Words that say how a figure moves, never which figure it is.
_MOVES = frozenset("on in of for by to up down higher lower more less points point pts percent".split())  # noqa: SIM905


def _same_word(said: str, known: str) -> bool:
    """``said`` is ``known``, a shortening of it ("acc"), or a one-letter slip ("rte")."""
    if said == known or said.rstrip("s") == known.rstrip("s"):
        return True
    if len(said) >= 3 and known.startswith(said):
        return True
    if len(said) >= 3 and len(known) >= 4 and said[0] == known[0]:
        # A slip keeps the word's first letter; one more letter before it is another word ("iphones"
        # is a model of phone, not "phones").
        from difflib import SequenceMatcher

        return SequenceMatcher(None, said, known).ratio() >= 0.8
    return False
