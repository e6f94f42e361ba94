"""Members named by a description (``routing.described``): which words describe a member, and what the
member table's columns make of them."""

from __future__ import annotations

import pytest

from master_agent.routing.described import describe
from master_agent.routing.queries import ENTITY_WORDS

STORE_NOUNS = ENTITY_WORDS["store_id"]


@pytest.mark.parametrize(
    ("message", "words", "said", "time"),
    [
        ("The branch we opened in autumn 2019 - refunds in May?", "The branch we opened in autumn 2019",
         ("opened",), "in autumn 2019"),
        ("what did the outlet that opened last winter take in June", "the outlet that opened last winter",
         ("opened",), "last winter"),
        ("attach rate at the shop next to the car park in July", "the shop next to the car park in July",
         ("car", "park"), "in July"),
        ("How is the Glasgow store doing on refunds?", "the Glasgow store", ("Glasgow",), None),
        ("what was the attach rate at my shop last week", "my shop", (), None),
    ],
)  # fmt: skip
def test_a_member_noun_with_words_of_its_own_is_a_description(
    message: str, words: str, said: tuple[str, ...], time: str | None
) -> None:
    found = describe(message, STORE_NOUNS)
    assert found is not None and (found.words, found.said, found.time) == (words, said, time)
    assert not found.titled


def test_a_noun_wordnet_glosses_as_a_group_s_chief_member_names_one_member() -> None:
    found = describe("How did the flagship do on refunds in July?", STORE_NOUNS)
    assert found is not None and found.titled and found.noun == "flagship"


@pytest.mark.parametrize(
    "message",
    [
        "What was the attach rate for the store in July?",  # the time is the question's
        "which store had the highest attach rate in June?",
        "what did the same shop do in August?",
        "attach rate across all our stores in June",
        "What was the attach rate in the month of June?",
        "what did the store do in June",
        "how many hours of training has the average person at branch 8 had?",  # numbered
    ],
)
def test_a_member_noun_with_nothing_of_its_own_describes_no_one(message: str) -> None:
    assert describe(message, STORE_NOUNS) is None
