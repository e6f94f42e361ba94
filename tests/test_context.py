from __future__ import annotations

import pytest

from master_agent.runtime.context import extract_entities


def test_retail_goal_entities() -> None:
    entities = extract_entities("Increase Store 5's accessory attach rate by 20% within 60 days")
    assert entities == {"store_id": 5, "target_percent": 20.0, "timeline_days": 60}


def test_other_domains_and_units() -> None:
    entities = extract_entities("Reduce churn in Region 3 by 15 percent over 8 weeks with $12k")
    assert entities == {"region_id": 3, "target_percent": 15.0, "timeline_days": 56, "budget": 12000.0}


def test_prepositions_are_not_entities() -> None:
    assert "by_id" not in extract_entities("grow revenue by 3 points in 2 months")
    assert extract_entities("grow revenue by 3 points in 2 months")["timeline_days"] == 60


def test_a_number_before_a_holiday_day_is_no_duration() -> None:
    # With the holiday read as the time, "store 8 on Janmashtami day" left "store 8 day": an "8 days".
    assert extract_entities("accessory attach % of store 8 on Janmashtami day itself")["store_id"] == 8
    assert extract_entities("refunds at store 3 on Diwali day")["store_id"] == 3
    assert "store_id" not in extract_entities("refunds over the store's first 8 days")


@pytest.mark.parametrize(
    "text",
    [
        "I'd like to borrow 6 lakh over 4 years",  # a verb before an amount
        "I need 3 lakh for 2 years for my kitchen",
        "what if I take 4 lakh",
        "how many iPhone 15s are left at store 3?",  # a model name WordNet lacks
        "actually make it 15",  # grammar words
        "sorry, 2.5 lakh only, not 3",
        "bottom 2 on attach in every branch",
        "Can you shove my 2:30 with Marco back to 4?",
        "book 30 mins with Rafael on Tuesday",  # a duration after the number
        "Namaste, mujhe 2 lakh ka loan chahiye",
    ],
)
def test_a_word_that_is_no_noun_names_no_id(text: str) -> None:
    assert not [key for key in extract_entities(text) if key.endswith("_id") and key != "store_id"]


@pytest.mark.parametrize(
    ("text", "key", "value"),
    [
        ("promote version 4 of returns_digest", "version_id", 4),
        ("search my emails for invoice 4471", "invoice_id", 4471),
        ("what's the status of ticket 882?", "ticket_id", 882),
        ("@refund_rate_reporter week 45", "week_id", 45),
        ("how many iPhone 15s are left at store 3?", "store_id", 3),
    ],
)
def test_a_noun_before_a_number_is_the_id_it_names(text: str, key: str, value: int) -> None:
    assert extract_entities(text)[key] == value


def test_without_wordnet_every_word_but_grammar_words_may_name_an_id(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("master_agent.runtime.context.noun_first", lambda word: None)
    assert extract_entities("show ticket 12 and make it 15") == {"ticket_id": 12}


@pytest.mark.parametrize(
    ("text", "store"),
    [
        ("Store 6 weekly refunds for July", 6),
        ("store 2 monthly accessory revenue since May", 2),
        ("Store 8 hourly sales", 8),
    ],
)
def test_an_adverb_of_frequency_after_a_store_number_is_no_unit_of_it(text: str, store: int) -> None:
    assert extract_entities(text).get("store_id") == store
