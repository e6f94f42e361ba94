"""Members a question names by where they stand in an order ("our oldest shop", "the branch that opened
most recently", "the store with the most staff", "the biggest store by floor space"), read by WordNet.

A superlative is read by its meaning, not matched as written: its adjective (or the adjective an adverb
is formed from: "recently" is "recent"'s) is taken to its WordNet head ("ancient" and "oldest" are
"old"; "tiniest" is "small"), and that head is compared with the heads of the words an order declares
for its ends (``EntityOrder.high``/``low``), its antonym naming the other end ("youngest" is the
opposite of "old"). A measure said with it ("by floor space", "with the most staff", "that opened")
must be the order's own measure, by WordNet base forms and derived forms ("opened" is the opening
date's, "sold" the sales'); a superlative or a measure no order holds is said back as unread, never
answered for every member or by another measure.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass

from master_agent.capabilities.spec import DataMetric, EntityOrder
from master_agent.capabilities.terms import metric_mention
from master_agent.capabilities.tools.lexicon import wordnet

#: Words a measure is said with that say nothing of what is measured ("staff count", "number of sales").
_MEASURE_FRAME = frozenset({"count", "number", "amount", "total", "date", "level", "figure", "of", "the"})
#: Words that open a relative clause after the noun ("the branch that opened ...", "the shop we opened").
_RELATIVE = r"(?:that|which|we|you|they|i|who)"
#: Degree words before an adjective or adverb ("the most recently opened", "the least staffed").
_DEGREE = frozenset({"most", "least"})


@dataclass(frozen=True)
class OrderSaid:
    """Words naming one member by its place in an order, and the orders they fit."""

    words: str
    """The words as said ("the branch that opened most recently"), replaced by the member once read."""
    entity: str
    fits: tuple[tuple[EntityOrder, bool], ...]
    """Each order the words fit, and whether they name its highest value (else its lowest)."""
    unread: str | None = None
    """The superlative or measure no order holds ("roomiest", "floor space"), when that is what was said."""


def _first_adjective(word: str) -> str | None:
    """The WordNet head adjective sense of ``word`` (an adjective, a superlative of one, or an adverb
    formed from one), by its commonest sense: satellites ("ancient") stand for their head ("old")."""
    reader = wordnet()
    word = word.lower()
    base = reader.morphy(word, "a")
    if base is None and (adverbs := reader.synsets(word, "r")):
        formed = [p.name() for lemma in adverbs[0].lemmas() for p in lemma.pertainyms()]
        base = formed[0] if formed else None
    senses = reader.synsets(base, "a") if base else []
    if not senses:
        return None
    sense = senses[0]
    if sense.pos() == "s":
        heads = sense.similar_tos()
        sense = heads[0] if heads else sense
    return str(sense.name())


@functools.cache
def _head(word: str) -> tuple[str, frozenset[str]] | None:
    """(head sense, its antonyms' head senses) of the adjective ``word`` is, or is a degree of."""
    name = _first_adjective(word)
    if name is None:
        return None
    sense = wordnet().synset(name)
    opposite = {
        head
        for lemma in sense.lemmas()
        for other in lemma.antonyms()
        if (head := _first_adjective(other.name()))
    }
    return name, frozenset(opposite)


def superlative(word: str) -> bool:
    """Whether ``word`` is an adjective's or adverb's superlative by its form ("oldest", "busiest"): WordNet
    takes it to another base ("west" and "honest" are their own)."""
    reader = wordnet()
    word = word.lower()
    return word.endswith("est") and any(
        (base := reader.morphy(word, pos)) is not None and base != word for pos in ("a", "r")
    )


def _ends(order: EntityOrder) -> list[tuple[str, bool]]:
    """(head sense, highest) for each end word of ``order`` WordNet reads as an adjective."""
    found = []
    for highest, words in ((True, order.high), (False, order.low)):
        for said in words:
            last = re.findall(r"[a-z]+", said.lower())
            one = len(last) == 1 or (len(last) == 2 and last[0] in _DEGREE)
            if one and (head := _head(last[-1])) is not None:
                found.append((head[0], highest))
    return found


def _place(word: str, order: EntityOrder) -> bool | None:
    """Whether ``word`` names ``order``'s highest (True) or lowest (False) end, by its WordNet head or its
    antonym's; None when it names neither."""
    head = _head(word)
    if head is None:
        return None
    for end, highest in _ends(order):
        if head[0] == end:
            return highest
        if end in head[1]:
            return not highest
    return None


def _forms(word: str) -> set[str]:
    """``word``'s base forms and the forms derived from them ("sold": sell, sale; "opened": open, opening)."""
    reader = wordnet()
    word = word.lower()
    bases = {word} | {base for pos in ("n", "v", "a") for base in reader._morphy(word, pos)}
    derived = {
        other.name().lower()
        for base in bases
        for sense in reader.synsets(base)[:3]
        for lemma in sense.lemmas()
        if lemma.name().lower() == base
        for other in lemma.derivationally_related_forms()
    }
    return bases | derived


def _measures(words: str, order: EntityOrder, metrics: Sequence[DataMetric]) -> bool:
    """Whether ``words`` say ``order``'s measure ("staff" its staff count, "opened" its opening date), in
    its words or as a figure of the data named by the measure ("employees": the staff count)."""
    figure = metric_mention(words, metrics).metric
    if figure is not None and order.measure.lower() in (n.lower() for n in (figure.name, *figure.aliases)):
        return True
    own = {form for word in re.findall(r"[a-z]+", order.measure.lower()) if word not in _MEASURE_FRAME
           for form in _forms(word)}  # fmt: skip
    return any(
        _forms(word) & own for word in re.findall(r"[a-z]+", words.lower()) if word not in _MEASURE_FRAME
    )


def order_said(
    message: str,
    orders: Sequence[EntityOrder],
    nouns: Sequence[str],
    ranks: Collection[str] = (),
    metrics: Sequence[DataMetric] = (),
    low: Collection[str] = (),
) -> OrderSaid | None:
    """The first words in ``message`` naming one member of ``orders``' entity by a superlative around one
    of ``nouns`` (singular): before it ("our oldest shop", "the most recently opened store", "the biggest
    store by floor space"), in a clause after it ("the branch that opened most recently", "the store we
    opened first") or with a measure ("the store with the most staff"). ``ranks``: superlatives that
    order by the question's own figure ("the best store"), left to its ranking unless an order declares
    them; ``low``: those naming the lowest of a measure ("fewest"). None when there are none."""
    if not orders or not nouns:
        return None
    noun = "|".join(map(re.escape, nouns))
    det = r"\b(?:the|our|my|your)\s+"
    measure = r"(?P<measure>[a-z]+(?:\s+(?!in\b|on\b|at\b|for\b|during\b|over\b|last\b|this\b)[a-z]+)?)"
    patterns = (
        rf"{det}(?P<sup>(?:most|least)\s+[a-z]+(?:\s+opened)?|[a-z][\w-]*)\s+(?P<noun>{noun})\b"
        rf"(?:\s+(?:by|in\s+terms\s+of)\s+(?:its\s+|their\s+)?{measure})?",
        rf"{det}(?P<noun>{noun})\s+{_RELATIVE}\s+(?:have\s+|has\s+|had\s+)?(?P<verb>[a-z]+)\s+"
        r"(?P<sup>(?:the\s+)?(?:most|least)(?:\s+(?!in\b|on\b|at\b)[a-z]+)?|[a-z]+)\b",
        rf"{det}(?P<noun>{noun})\s+(?P<having>with|that\s+has|which\s+has)\s+the\s+(?P<sup>most|least|[a-z]+est)\s+{measure}",
    )
    found = sorted(
        (match for pattern in patterns for match in re.finditer(pattern, message, re.I)),
        key=lambda match: match.start(),
    )
    for match in found:
        if (said := _read(match, orders, ranks, metrics, low)) is not None:
            return said
    return None


def _read(
    match: re.Match[str],
    orders: Sequence[EntityOrder],
    ranks: Collection[str],
    metrics: Sequence[DataMetric],
    low: Collection[str],
) -> OrderSaid | None:
    groups = match.groupdict()
    words = [w for w in re.findall(r"[a-z][\w-]*", groups["sup"].lower()) if w not in ("the",)]
    quality = [w for w in words if w not in _DEGREE and w != "opened"]
    degree = next((w for w in words if w in _DEGREE), None)
    if not quality and degree is None:
        return None
    having = bool(groups.get("having"))
    if having:
        # "the store with the fewest employees": the most or the least of the measure said.
        degree, quality = ("least" if words[0] in low else "most"), []
    if quality and degree is None and not superlative(quality[0]) and _declared(quality[0], orders) is None:
        return None  # "the north store", "the store we opened in 2019": no superlative
    said_measure = groups.get("measure") or ""
    verb = groups.get("verb") or ""
    if groups.get("sup") and "opened" in groups["sup"].lower():
        verb = "opened"
    entity = orders[0].entity
    fits: list[tuple[EntityOrder, bool]] = []
    for order in orders:
        if said_measure and not _measures(said_measure, order, metrics):
            continue
        if verb and not _measures(verb, order, metrics):
            continue
        if quality:
            place = _place(quality[0], order)
            if place is None:
                place = _declared(quality[0], [order])
            if place is None:
                continue
            # "the least recently opened": the other end from the most.
            place = place if degree != "least" else not place
        else:
            place = degree == "most"
        fits.append((order, bool(place)))
    text = match.group(0)
    if fits:
        return OrderSaid(words=text, entity=entity, fits=tuple(fits))
    if quality and quality[0] in ranks and not said_measure:
        return None  # "the best store", "the store that did best": ranked by the question's own figure
    unread = said_measure or (
        f"{verb} {groups['sup']}" if verb else " ".join([*([degree] if degree else []), *quality])
    )
    return OrderSaid(words=text, entity=entity, fits=(), unread=unread)


def _declared(word: str, orders: Sequence[EntityOrder]) -> bool | None:
    """Whether ``word`` is one an order declares for its highest (True) or lowest (False) end as written
    ("first", "original": words WordNet reads as no degree of a quality)."""
    for order in orders:
        if word in (w.lower() for w in order.high):
            return True
        if word in (w.lower() for w in order.low):
            return False
    return None
