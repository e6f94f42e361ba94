"""Stores named in other registers or languages: a noun WordNet files under a place of business is a store
("boutique 2", "outlet 5"); a numbered word English has no noun for ("Filiale 3", "Laden 3") is an id whose
entity is asked about, never dropped for an answer over every store, and its number is never a date."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from master_agent.capabilities.terms import business_noun, entity_noun, time_window, unknown_numbered
from master_agent.domains.retail import RETAIL
from master_agent.routing.queries import _spelled_as_filters
from master_agent.runtime.context import extract_entities

NOW = datetime(2026, 12, 1, 12, tzinfo=UTC)


@pytest.mark.parametrize("word", ["boutique", "outlet", "supermarket", "emporium", "Boutiques"])
def test_a_place_of_business_in_any_register_is_a_store_noun(word: str) -> None:
    assert business_noun(word) and entity_noun(word)


@pytest.mark.parametrize("word", ["week", "pixel", "galaxy", "staff", "region"])
def test_other_nouns_are_no_place_of_business(word: str) -> None:
    assert not business_noun(word)


def test_a_store_named_as_a_boutique_filters_by_that_store() -> None:
    metric = next(m for m in RETAIL.data_metrics if m.name == "transactions")
    entities = extract_entities("How many phones did boutique 2 sell in August?")
    assert _spelled_as_filters(entities, metric)["store_id"] == 2


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("What was the attach rate at Filiale 3 in July?", "Filiale 3"),
        ("Wie hoch war die Anschlussrate in Laden 3 am 3.8.?", "Laden 3"),
        ("How many Pixel 9 cases did store 2 sell in July?", None),  # a noun English has: a model's name
        ("Chuseok 3 days holiday this year, store 6 accessories?", None),  # days, not an id
        ("sales on Diwali 2026", None),
    ],
)
def test_a_numbered_word_english_has_no_noun_for_is_an_unknown_id(text: str, said: str | None) -> None:
    assert unknown_numbered(text) == said


def test_an_unknown_ids_number_is_no_day_of_the_month() -> None:
    window = time_window("What was the attach rate at Filiale 3 in July?", NOW)
    assert window is not None and (window.start.date().isoformat(), window.label) == ("2026-07-01", "in July")
