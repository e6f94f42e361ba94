"""What a message says of the conversation's own history of terms: going back to an amount asked
before ("go back to the first amount", "revert to what I asked originally"), a sum said as a
difference ("increase it by 50k", "top up my existing loan by 1 lakh"), and adding to a loan the
customer already has, for which the pack has no product (a top-up).

Which earlier ask is meant is said with ordinals and their kin ("first", "original", "previous"), and
a return with a verb of going back: closed classes of grammar words. Whether a verb raises or lowers
a figure is WordNet's (``terms.verb_direction``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from master_agent.capabilities.terms import verb_direction

#: A return to terms said before ("go back to", "revert to", "switch back", "as I asked originally").
_GOING_BACK = re.compile(
    r"\b(?:go(?:ing)?\s+back|come\s+back|revert\w*|return\w*|back\s+to|switch\w*\s+back|restore|"
    r"as\s+(?:i\s+)?(?:asked|said|wanted)\s+(?:originally|at\s+first|initially|before|earlier))\b",
    re.I,
)
#: Which earlier ask: the first one the customer made, or the one before the last.
_FIRST = re.compile(r"\b(?:first|original\w*|initial\w*|at\s+the\s+start|start(?:ed)?\s+with)\b", re.I)
_BEFORE_LAST = re.compile(r"\b(?:previous\w*|earlier|before|last\s+one|old)\b", re.I)
#: A loan the customer already has, said as such, or a top-up of one (the product others sell).
_EXISTING_LOAN = re.compile(
    r"\b(?:existing|running|current|ongoing|active|old|previous|earlier)\s+(?:personal\s+)?loan\b|"
    r"\bloan\s+(?:i\s+)?(?:already\s+)?(?:have|am\s+paying|is\s+running)\b|\btop[\s-]?up\b",
    re.I,
)
#: A sum said as a difference: "by 1 lakh", "50,000 more", "add 50,000 to".
_BY_BEFORE = re.compile(r"\bby\s*(?:₹|rs\.?|inr)?\s*(?:another\s+)?$", re.I)
_ADDED_AFTER = re.compile(
    r"\s*(?:more|extra|additional)\b|\s*(?:to|on|onto|into)\s+(?:it|my|the|that)\b", re.I
)
_ADDING = re.compile(r"\b(?:add|top[\s-]?up|increase|extend|enhance)\w*\b", re.I)


#: Particles that give a phrasal verb its direction ("push it up", "bring it down"): closed grammar
#: words, where WordNet knows the verb but not its phrasal sense.
_PARTICLES: dict[str, Literal["up", "down"]] = {"up": "up", "down": "down"}


def directions(words: list[str]) -> list[Literal["up", "down"]]:
    """The directions the verbs of ``words`` move a figure in, in order: WordNet's, or a particle's."""
    found: list[Literal["up", "down"]] = []
    for word in words:
        lowered = word.lower()
        direction = _PARTICLES.get(lowered) or (verb_direction(lowered) if len(lowered) > 2 else None)
        if direction is not None:
            found.append(direction)
    return found


@dataclass(frozen=True)
class Difference:
    """A sum said as a change of another: ``sign`` +1 adds it, -1 takes it off; ``top_up`` when what
    it changes is a loan the customer already has."""

    value: float
    sign: int
    top_up: bool


def names_an_existing_loan(text: str) -> bool:
    """Whether ``text`` names a loan the customer already has ("my old loan", "the existing loan")."""
    return _EXISTING_LOAN.search(text) is not None


def asked_before(text: str, asked: list[float]) -> float | None:
    """The earlier ask ``text`` goes back to ("go back to the first amount": the first of ``asked``;
    "the previous one": the one before the last), or None."""
    if len(asked) < 2 or not _GOING_BACK.search(text):
        return None
    if _FIRST.search(text):
        return asked[0]
    if _BEFORE_LAST.search(text):
        return asked[-2]
    return None


def difference(text: str, sums: list[tuple[float, int, int]]) -> Difference | None:
    """The sum ``text`` says as a difference (``sums`` are the sums it states with their spans), with
    the direction of the verb that moves it, or None."""
    for value, start, end in sums:
        before = text[:start]
        if not (_BY_BEFORE.search(before) or (_ADDED_AFTER.match(text, end) and _ADDING.search(before))):
            continue
        clause = re.split(r"[.;!?]", before)[-1]
        words = re.findall(r"[A-Za-z]+", clause)
        said = directions(words)
        down = bool(said) and said[-1] == "down"
        if not said and not _ADDING.search(clause):
            continue
        return Difference(value, -1 if down else 1, _EXISTING_LOAN.search(text) is not None)
    return None
