"""Members named by their place in an order (``routing.ordered``): superlatives read by WordNet, the
measure said with them held to the orders the data has, and what no order holds said back as unread."""

from __future__ import annotations

import pytest

from master_agent.domains.retail import RETAIL, STORE_ORDERS
from master_agent.routing.ordered import order_said, superlative
from master_agent.routing.queries import _LOW_WORDS, _RANK_WORDS, ENTITY_WORDS

NOUNS = [noun for noun in ENTITY_WORDS["store_id"] if not noun.endswith("s")] + ["one"]


def _read(message: str) -> tuple[str, list[tuple[str, bool]], str | None] | None:
    said = order_said(message, STORE_ORDERS, NOUNS, _RANK_WORDS, RETAIL.data_metrics, _LOW_WORDS)
    return None if said is None else (said.words, [(o.measure, high) for o, high in said.fits], said.unread)


@pytest.mark.parametrize(
    ("message", "words", "fits"),
    [
        # A clause after the noun, its adverb read through the adjective it is formed from.
        ("How many sales did the branch that opened most recently make in August?",
         "the branch that opened most recently", [("opening date", True)]),
        ("refunds at the outlet which opened earliest, in May", "the outlet which opened earliest",
         [("opening date", False)]),
        # A superlative no order declares, read as the head its WordNet sense stands for.
        ("attach rate at the least recently opened shop in July", "the least recently opened shop",
         [("opening date", False)]),
        ("what did the youngest location take in June", "the youngest location", [("opening date", True)]),
        ("refunds at the tiniest store in May", "the tiniest store",
         [("staff count", False), ("number of sales", False)]),
        # A measure said: only the order of that measure, by its words or a figure's alias.
        ("attach at the store with the most staff in September", "the store with the most staff",
         [("staff count", True)]),
        ("sales at the shop with the fewest employees in May", "the shop with the fewest employees",
         [("staff count", False)]),
        ("attach at the largest store by headcount in July", "the largest store by headcount",
         [("staff count", True)]),
    ],
)  # fmt: skip
def test_a_superlative_names_the_end_of_the_order_it_means(
    message: str, words: str, fits: list[tuple[str, bool]]
) -> None:
    assert _read(message) == (words, fits, None)


@pytest.mark.parametrize(
    ("message", "unread"),
    [
        ("accessory revenue at the biggest store by floor space in August", "floor space"),
        ("attach rate at the roomiest branch in July", "roomiest"),
        ("what did the store with the most parking spaces sell in June", "parking spaces"),
    ],
)
def test_a_property_or_measure_no_order_holds_is_unread(message: str, unread: str) -> None:
    read = _read(message)
    assert read is not None and read[1] == [] and read[2] == unread


@pytest.mark.parametrize(
    "message",
    [
        "which store had the best attach rate in June?",  # ranked by the question's own figure
        "attach at the store we opened in 2019",  # a date, no superlative
        "how did the north store do in July",
        "what was the attach rate at the west branch?",
    ],
)
def test_words_with_no_superlative_name_no_member_by_order(message: str) -> None:
    assert _read(message) is None


def test_a_superlative_is_known_by_its_form_not_its_ending() -> None:
    assert superlative("oldest") and superlative("busiest")
    assert not superlative("west") and not superlative("honest") and not superlative("interest")
