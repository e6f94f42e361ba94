"""Members named by a description (``routing.described``): which words describe a member, and what the
member table's columns make of them."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, cast

import pytest

from master_agent.capabilities.terms import time_window
from master_agent.capabilities.tools.sql import ReadOnlySql
from master_agent.routing.described import Described, describe, described_member
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
        ("How did the branch that opened in June 2019 do on refunds in August?",
         "the branch that opened in June 2019", ("opened",), "in June 2019"),
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


class _Rows:
    """The read-only SQL tool's answer for the stores table: rows as JSON gives them (dates as text)."""

    def __init__(self, rows: list[dict[str, Any]]) -> None:
        self.rows = rows

    async def query(self, sql: str, params: Any = None) -> _Rows:
        assert sql == "SELECT * FROM stores"
        return self


STORES = _Rows(
    [
        {"store_id": n, "name": f"Store {n}", "region": ("north", "south", "east", "west")[n % 4],
         "opened_on": f"2019-{n:02d}-01"}
        for n in range(1, 9)
    ]
)  # fmt: skip
NOW = datetime(2026, 12, 1, 12, tzinfo=UTC)


async def _described(message: str) -> Described | None:
    description = describe(message, STORE_NOUNS)
    assert description is not None, message
    return await described_member(cast(ReadOnlySql, STORES), "stores", "store_id", description, NOW)


async def test_a_date_column_a_verb_names_settles_one_member_or_lists_those_that_fit() -> None:
    one = await _described("The outlet we opened in April 2019 - refunds in July?")
    assert one is not None and one.settled and one.members == (4,)
    assert one.claim("store")["verdict"] == "backed"
    several = await _described("refunds at the branch that opened in the summer of 2019")
    assert several is not None and not several.settled and several.members == (6, 7, 8)
    none = await _described("refunds at the shop we opened last spring")
    assert none is not None and not none.settled and none.members == ()
    last = await _described("attach at the last store we opened, in June")
    assert last is not None and last.settled and last.members == (8,)


async def test_a_property_no_column_holds_is_asked_about_and_a_value_a_column_holds_is_left_alone() -> None:
    for message in ("How did the flagship do on refunds?", "attach at the shop by the bus station in May"):
        found = await _described(message)
        assert found is not None and not found.settled and found.members == (), message
        assert "no column holds" in found.reason
    mine = await _described("what's the attach rate at my shop this year")
    assert mine is not None and not mine.settled
    assert await _described("attach at our south store in May") is None  # the region groups read it
    assert await _described("what did the northern shop take in June?") is None


async def test_a_place_in_the_numbering_names_the_member_numbered_so() -> None:
    fifth = await _described("and for the fifth store?")
    assert fifth is not None and fifth.settled and fifth.members == (5,)
    ninth = await _described("refunds at the 9th branch in May")
    assert ninth is not None and not ninth.settled and ninth.members == ()
    first = await _described("attach at the first shop we opened, in June")
    assert first is not None and first.settled and first.members == (1,)


def test_a_place_in_the_numbering_is_no_day_of_the_month() -> None:
    """ "the fifth store" reads as no time (Duckling alone would read the 5th of a month), so a follow-up
    naming it keeps the period asked before."""
    assert time_window("And for the fifth store?", NOW) is None
    fifth = time_window("sales on the fifth", NOW)
    assert fifth is not None and fifth.start.day == 5
