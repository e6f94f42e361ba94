"""A message that asks more than one thing of the data, split into its questions (``routing.compound``),
and the eval's reading of a compound answer (``benchmarks.truth_parts``). The figure reader is a stand-in
(the service passes the data handler's own readers), so only the splitting is tested here."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from benchmarks.truth_parts import score_parts

from master_agent.routing.compound import Asked, asks_change, per_store, split_questions

#: A stand-in figure reader: a word of a figure's name, two names of one figure, data the tenant lacks.
_FIGURES = {
    "takings": "total revenue",
    "sales total": "total revenue",
    "gross sales": "total revenue",
    "refund rate": "refund rate",
    "refunds": "refunds",
    "attach": "attach rate",
    "average basket": "average basket",
    "phones sold": "transactions",
    "handsets sold": "transactions",
    "accessory money": "accessory revenue",
    "footfall": "no foot traffic",
    "staff turnover": "no staff turnover",
}


async def _figure_of(text: str) -> str | None:
    lowered = text.lower()
    found = [(lowered.find(word), figure) for word, figure in _FIGURES.items() if word in lowered]
    return min(found)[1] if found else None


def _split(message: str) -> list[Asked]:
    return asyncio.run(split_questions(message, _figure_of))


def test_two_figures_joined_by_and_share_the_store_and_the_period_said_once() -> None:
    asked = _split("What was the average basket at store 7 in May and how many handsets sold?")
    assert [a.role for a in asked] == ["figure", "figure"]
    assert asked[0].text == "What was the average basket at store 7 in May"
    assert "in May" in asked[1].text and asked[1].store == 7


def test_a_list_of_figures_after_a_preamble_is_one_question_each_with_the_preamble() -> None:
    asked = _split("Store 3, April: takings / refunds / attach")
    assert len(asked) == 3
    assert all("April" in a.text and a.store == 3 for a in asked)


def test_a_second_sentence_that_asks_is_a_question_and_one_that_tells_is_context() -> None:
    asked = _split("How many refunds did store 2 log in May? And the refund rate, too.")
    assert [a.role for a in asked] == ["figure", "figure"]
    one = _split("How many refunds did store 2 log in May? My boss wants it for the board pack.")
    assert len(one) == 1


def test_one_figure_named_twice_is_one_question() -> None:
    assert len(_split("What were the takings and gross sales for store 4 in May?")) == 1
    assert len(_split("store 4 May: sales total, i.e. takings")) == 1


def test_another_period_for_the_same_figure_is_asked_over_that_period() -> None:
    asked = _split("Attach at store 8 in April, and how about May?")
    assert [a.role for a in asked] == ["figure", "period"]
    assert asked[1].text == "Attach at store 8 in May" and asked[1].of == 0


def test_a_span_of_two_periods_joined_by_and_stays_one_period() -> None:
    assert len(_split("How many refunds did store 1 have over April and May?")) == 1


def test_a_ranking_a_place_and_a_share_of_the_figure_before_are_questions_about_it() -> None:
    asked = _split(
        "Store 6 takings in May, which store led, where did store 6 rank, and what share of the chain?"
    )
    assert [a.role for a in asked] == ["figure", "winner", "rank", "share"]
    assert all(a.of == 0 for a in asked[1:]) and asked[3].store == 6 and asked[3].period == "in May"


def test_a_qualifier_asks_nothing() -> None:
    assert len(_split("Takings at stores 2, 4 and 6 in May - each one, not added up")) == 1
    assert len(_split("Who sold most at store 2 in May, going by attach?")) == 1


def test_a_goal_is_never_split() -> None:
    assert len(_split("Get store 3 to 9% attach and cut its refund rate to 1% by March")) == 1


def test_data_the_tenant_lacks_is_a_question_of_its_own() -> None:
    asked = _split("Store 5 takings in June plus the footfall?")
    assert len(asked) == 2 and "footfall" in asked[1].text and "June" in asked[1].text


def test_words_that_ask_for_the_change() -> None:
    assert asks_change("Attach in May at store 1 - higher or lower than April?")
    assert not asks_change("Store 4 refunds: April vs May")


# -- the eval's reading of a compound answer -------------------------------------------------------


def _part(
    kind: str, value: float | None, start: str = "2026-05-01", end: str = "2026-05-31"
) -> dict[str, Any]:
    return {
        "kind": kind,
        "metric": "m",
        "store_id": 3,
        "window": {"start": start, "end": end},
        "shape": "figure",
        "value_sql": None if value is None else str(value),
        "missing": [],
        "why": "",
    }


async def _truth(sql: str | None) -> float | None:
    return None if sql is None else float(sql)


def _data(
    value: float, start: str = "2026-05-01T00:00:00+00:00", end: str = "2026-06-01T00:00:00+00:00"
) -> dict[str, Any]:
    return {
        "outcome": "answer",
        "value": value,
        "window": {"start": start, "end": end},
        "params": {"store_id": "3"},
    }


def test_the_eval_finds_every_part_with_its_store_and_window_and_a_named_missing_part() -> None:
    expect = {"parts": [_part("answer", 10.0), _part("out_of_scope", None)]}
    reply = {
        "outcome": "partial",
        "parts": [_data(10.0), {"outcome": "out_of_scope", "missing": ["footfall"]}],
    }
    score = asyncio.run(score_parts(expect, reply, _truth))
    assert (score.answered, score.named, score.problems) == (1, 1, [])


@pytest.mark.parametrize(
    "reply",
    [
        {"outcome": "answer", "parts": [_data(10.0)]},  # the second part dropped
        {"outcome": "answer", "parts": [_data(10.0), _data(99.0)]},  # the wrong figure
        # the right figure for another month
        {
            "outcome": "answer",
            "parts": [_data(10.0), _data(12.0, "2026-04-01T00:00:00+00:00", "2026-05-01T00:00:00+00:00")],
        },
    ],
)
def test_the_eval_misses_a_dropped_wrong_or_misattributed_part(reply: dict[str, Any]) -> None:
    expect = {"parts": [_part("answer", 10.0), _part("answer", 12.0)]}
    score = asyncio.run(score_parts(expect, reply, _truth))
    assert score.answered == 1 and len(score.problems) == 1


def test_one_figure_for_three_listed_stores_is_a_question_for_each_without_what_is_not_wanted() -> None:
    asked = per_store("May takings for stores 2, 5 & 8, one by one - not summed")
    assert asked is not None and [a.store for a in asked] == [2, 5, 8]
    assert asked[1].text == "May takings for store 5, one by one"
    assert per_store("attach at stores 2 and 5 in May") is None  # two are set side by side as they are


def test_a_share_or_place_that_names_its_figure_is_still_a_share_and_either_or_words_ask_nothing() -> None:
    asked = _split("Refunds at store 4 in May, and what share of the chain's takings was store 4's?")
    assert [a.role for a in asked] == ["figure", "share"]
    assert len(_split("Store 2 takings in June against April - rise or fall?")) == 2
