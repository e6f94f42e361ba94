"""Members a question names by a description ("the store we opened in summer 2019", "the flagship",
"the one by the station", "my branch") rather than by id, read against the tenant's own member table.

What a description may say is decided by the table's columns, never by a list of words: a verb that
is a column's word ("opened" for ``opened_on``) with a time reads that date column (one member
matching settles it; several or none are asked between); a word that is a value of a text column
("the north store") is left to the groups that read it; any other word ("flagship", "station",
"Leeds") is a property the data does not hold, so which member is meant takes one fact from the user.
An answer for every member would answer another question.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import Any

from master_agent.capabilities.terms import duckling_parse, duckling_parse_time, time_mention, time_window
from master_agent.capabilities.tools.lexicon import wordnet
from master_agent.capabilities.tools.sql import ReadOnlySql

#: Determiners that make a noun phrase name one member ("the store ...", "our flagship", "my branch").
_DETERMINERS = ("the", "our", "my", "your")
_OWNERS = frozenset({"our", "my", "your"})
#: Closed-class words (pronouns, determiners, prepositions, auxiliaries, pointers back): they carry
#: no property of a member, so they are never read as one.
_FUNCTION_WORDS = frozenset({
    "a", "an", "the", "our", "my", "your", "their", "his", "her", "its", "we", "i", "you", "they", "he",
    "she", "it", "us", "me", "them", "this", "that", "these", "those", "which", "who", "whom", "whose",
    "where", "when", "what", "in", "on", "at", "by", "near", "next", "to", "of", "for", "from", "with",
    "opposite", "beside", "behind", "across", "around", "up", "down", "over", "off", "just", "only", "also",
    "all", "any", "each", "every", "other", "same", "own", "one", "ones", "do", "did", "does", "done",
    "doing", "was", "were", "is", "are", "be", "been", "being", "have", "has", "had", "having", "got", "get",
    "gets", "s", "ve", "ll", "re", "d", "m", "t", "and", "or", "but", "so", "as", "then", "there", "here",
    "about", "into", "onto", "round",
})  # fmt: skip
#: Words that order members by a date ("the last store we opened", "the first shop we opened").
_LATEST = frozenset({"last", "latest", "newest", "most", "recent", "recently", "youngest"})
_EARLIEST = frozenset({"first", "earliest", "oldest", "original"})
#: Where a description ends: punctuation or a dash standing alone ("the store we opened in 2019 - what").
_CLAUSE_END = re.compile(r"\s[-\u2013\u2014]\s|[,.;:?!()\u2013\u2014]")


@dataclass(frozen=True)
class Description:
    """The words a question names one member by: ``noun`` heads them, ``words`` is all of them."""

    words: str
    determiner: str
    noun: str
    said: tuple[str, ...]
    """Its own words (modifiers and clause), the time it says left out."""
    time: str | None
    """The time it says ("in summer 2019"), the property's value when the property is a date."""
    titled: bool
    """Its noun is a title of its own ("the flagship"), not a noun the entity goes by."""
    ordinal: int | None = None
    """The place it says ("the fifth store", "the 7th shop"), read by Duckling's ordinal rules."""


@dataclass(frozen=True)
class Described:
    """What the member table says of a description: the members that fit it, and why."""

    words: str
    members: tuple[Any, ...]
    """Every member that fits; exactly one settles the description."""
    known: tuple[Any, ...]
    """Every member of the table, to ask between."""
    reason: str
    """What the data read ("opened_on in summer 2019") or lacks ("no column holds 'flagship'")."""
    settled: bool

    def claim(self, noun: str) -> dict[str, str]:
        return {
            "claim": f"{self.words!r} is {noun.title()} {self.members[0]}",
            "evidence": f"the {noun}s' {self.reason}, read from your data",
            "verdict": "backed",
        }


def _member_noun(word: str) -> bool:
    """A noun whose commonest sense is a place of business ("office") or a member of a group named by
    its role in it ("flagship": the chief one of a related group), so "the X" names one member."""
    senses = wordnet().synsets(word, "n")
    if not senses or wordnet().morphy(word, "n") != word:
        return False  # a plural names several
    first = senses[0]
    business = wordnet().synset("place_of_business.n.01")
    if business in first.closure(lambda sense: sense.hypernyms()):
        return True
    return bool(re.search(r"\bone of (?:a|an|the) (?:\w+ )?group\b", first.definition()))


def describe(message: str, nouns: Sequence[str]) -> Description | None:
    """The first noun phrase in ``message`` naming one member by a description: a determiner, its own
    words and a member noun (``nouns``, or one WordNet places as a business or a group's member), with
    the clause that follows it ("we opened in summer 2019", "by the station"). None for a member
    noun with nothing of its own ("the store", "the same shop"), unless a possessive says whose it is."""
    singular = [noun for noun in nouns if not noun.endswith("s")] + ["one"]
    determiner = rf"\b(?P<det>{'|'.join(_DETERMINERS)})\s+"
    # "branch 8" is numbered, not described.
    rest = r"\b(?!\s*#?\s*\d)(?=(?P<rest>[^\n]*))"
    by_noun = re.compile(
        rf"{determiner}(?P<mods>(?:[A-Za-z0-9][\w'-]*\s+){{0,3}}?)(?P<noun>{'|'.join(map(re.escape, singular))}){rest}",
        re.I,
    )
    by_title = re.compile(rf"{determiner}(?P<mods>)(?P<noun>[a-z]{{4,}}){rest}")
    for pattern in (by_noun, by_title):
        for found in pattern.finditer(message):
            if (description := _description(found, singular)) is not None:
                return description
    return None


def _description(found: re.Match[str], singular: Sequence[str]) -> Description | None:
    noun = found.group("noun").lower()
    if noun not in singular and not _member_noun(noun):
        return None
    if any(word.lower() in _FUNCTION_WORDS for word in found.group("mods").split()):
        return None  # "the average person at branch 8": the noun is not the phrase's head
    rest = found.group("rest")
    end = _CLAUSE_END.search(rest)
    clause = rest[: end.start()] if end else rest
    # A clause is the description's only when a relative word or a place opens it ("we opened ...",
    # "by the station"); "the store did in June" goes on with the question's own verb.
    if not re.match(r"\s+(?:we|that|which|i|you|they|by|near|next|opposite|beside|in|on|at)\b", clause, re.I):
        clause = ""
    if spans := duckling_parse_time(clause):
        # "the outlet that opened last winter take in June": the clause's first time ends it.
        clause = clause[: min(int(span["end"]) for span in spans)]
    if not _own_words(clause):
        clause = ""  # "my branch in June": the time is the question's, not the branch's
    said_time = time_mention(f"{found.group('mods')}{clause}")
    mods = found.group("mods")
    placed = duckling_parse(mods, ("ordinal",)) if mods.strip() else []
    ordinal = placed[0]["value"]["value"] if len(placed) == 1 else None
    if placed and placed[0]["body"].lower() not in _LATEST | _EARLIEST:
        # "first" stays a word: "the first shop we opened" orders by a date.
        mods = mods[: placed[0]["start"]] + mods[placed[0]["end"] :]
    said = _own_words(f"{mods} {clause}")
    words = f"{found.group('det')} {found.group('mods')}{found.group('noun')}{clause}".strip()
    if noun == "one" and not said and not said_time:
        return None  # "the one" alone points back or ranks
    if said or said_time or ordinal or found.group("det").lower() in _OWNERS or noun not in singular:
        return Description(
            words, found.group("det").lower(), noun, said, said_time, noun not in singular, ordinal
        )
    return None


def _own_words(text: str) -> tuple[str, ...]:
    """The words of ``text`` that could name a property: neither the time it says nor closed-class."""
    if said_time := time_mention(text):
        text = text.replace(said_time, " ")
    return tuple(
        word
        for word in re.findall(r"[A-Za-z][A-Za-z'-]*", text)
        if word.lower() not in _FUNCTION_WORDS and not word.isdigit()
    )


def held_word(word: str, values: set[str]) -> bool:
    """Whether ``word`` is a value's word, or that word with a short ending ("northern" for "north")."""
    return any(
        word == value or (len(value) >= 3 and word.startswith(value) and len(word) - len(value) <= 3)
        for value in values
    )


def lemmas(word: str) -> set[str]:
    """``word`` and its WordNet base forms as a verb, noun and adjective ("opened" -> "open")."""
    reader = wordnet()
    word = word.lower()
    return {word} | {base for pos in ("v", "n", "a") if (base := reader.morphy(word, pos))}


def _column_of(word: str, columns: Sequence[str]) -> str | None:
    """The column ``word`` is a word of ("opened" is ``opened_on``'s), by their WordNet base forms."""
    said = lemmas(word)
    for column in columns:
        parts = [part for part in column.lower().split("_") if part not in _FUNCTION_WORDS]
        if any(said & lemmas(part) for part in parts):
            return column
    return None


def _as_moment(value: Any) -> datetime | None:
    """A date or timestamp value as a UTC moment (rows come back as JSON: dates as ISO text); None for
    a value that is none."""
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value)
        except ValueError:
            return None
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    if isinstance(value, date):
        return datetime(value.year, value.month, value.day, tzinfo=UTC)
    return None


async def described_member(
    sql: ReadOnlySql, table: str, entity: str, description: Description, now: datetime
) -> Described | None:
    """The members of ``table`` (one row per member, keyed by ``entity``) that ``description`` names;
    None when a text column's value is among its words (a region: the groups read it)."""
    rows = (await sql.query(f"SELECT * FROM {table}")).rows
    if not rows:
        return None
    known = tuple(sorted(row[entity] for row in rows))
    if len(known) == 1:
        return Described(description.words, known, known, "only one in your data", True)
    columns = [column for column in rows[0] if column != entity]
    dates = [c for c in columns if all(_as_moment(row[c]) for row in rows if row[c] is not None)]
    texts = [
        c
        for c in columns
        if c not in dates and all(isinstance(row[c], str) for row in rows if row[c] is not None)
    ]
    values = {word for row in rows for c in texts for word in re.findall(r"[a-z0-9]+", str(row[c]).lower())}
    if any(held_word(word.lower(), values) for word in description.said):
        return None
    unknown = [
        word
        for word in description.said
        if _column_of(word, dates) is None and word.lower() not in _LATEST | _EARLIEST
    ]
    if description.titled:
        unknown.insert(0, description.noun)
    dated = next((column for word in description.said if (column := _column_of(word, dates))), None)
    if dated is not None and not unknown:
        return _by_date(description, rows, entity, dated, known, now)
    if description.ordinal is not None and not unknown and not description.time:
        # "the fifth store": the stores are numbered, so the fifth is the one numbered 5.
        if description.ordinal in known:
            reason = f"{entity} {description.ordinal}, the {description.words.split()[1]} by number"
            return Described(description.words, (description.ordinal,), known, reason, True)
        return Described(description.words, (), known, f"no {entity} {description.ordinal}", False)
    if unknown:
        missing = ", ".join(repr(word) for word in unknown)
        reason = f"no column holds {missing} (they hold {', '.join(columns)})"
        return Described(description.words, (), known, reason, False)
    if description.determiner in _OWNERS and not description.said and not description.time:
        return Described(description.words, (), known, "which one is yours is not in your data", False)
    return None


def _by_date(
    description: Description,
    rows: Sequence[dict[str, Any]],
    entity: str,
    column: str,
    known: tuple[Any, ...],
    now: datetime,
) -> Described | None:
    """The members whose ``column`` falls in the time the description says ("opened in summer 2019"),
    or is the latest or earliest ("the last store we opened")."""
    earliest = datetime.min.replace(tzinfo=UTC)
    ordered = sorted(
        (row for row in rows if _as_moment(row[column])), key=lambda row: _as_moment(row[column]) or earliest
    )
    said = {word.lower() for word in description.said}
    window = time_window(description.time, now, direction="past") if description.time else None
    if window is not None:
        fit = tuple(
            row[entity]
            for row in ordered
            if window.start <= (_as_moment(row[column]) or window.end) < window.end
        )
        reason = f"{column} in {window.describe()}"
    elif ordered and said & (_LATEST | _EARLIEST):
        end = ordered[-1] if said & _LATEST else ordered[0]
        fit = tuple(row[entity] for row in ordered if row[column] == end[column])
        reason = f"{column}, the {'latest' if said & _LATEST else 'earliest'}"
    else:
        return None
    return Described(description.words, fit, known, reason, len(fit) == 1)
