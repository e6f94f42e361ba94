"""Outcome questions (``routing.queries.goal_outcomes``): a question about one goal is answered from that
goal's record, and a goal that was never run is said to be on no record, never answered with other goals."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any, cast

from master_agent.domains.retail import RETAIL
from master_agent.routing.queries import QueryRequest, goal_outcomes
from master_agent.runtime.context import extract_entities

RUN = datetime(2026, 11, 20, 9, tzinfo=UTC)


def _solution(goal: str) -> dict[str, Any]:
    return {
        "solution_id": goal[:8],
        "goal": goal,
        "status": "success",
        "created_at": RUN,
        "success": None,
        "expected_outcome": None,
        "actual_outcome": None,
        "confidence_delta": None,
        "measured_at": None,
        "checks": [{"day": 30, "status": "scheduled", "expected": None, "measured": None}],
    }


class _Solutions:
    """The solutions table's rows as the outcome query returns them (newest first)."""

    def __init__(self, rows: list[dict[str, Any]]) -> None:
        self.rows = rows

    @asynccontextmanager
    async def connection(self) -> AsyncIterator[_Solutions]:
        yield self

    async def execute(self, sql: str, params: Any = None) -> _Solutions:
        assert params == {"tenant_id": "demo-retail"}
        return self

    async def fetchall(self) -> list[dict[str, Any]]:
        return self.rows


SOLVED = _Solutions(
    [
        _solution("Increase Store 5's accessory attach rate to 6% by the end of January"),
        _solution("Cut the refund rate at Store 2 to 3% by March"),
    ]
)


def _asking(message: str, solved: _Solutions = SOLVED) -> QueryRequest:
    request = SimpleNamespace(
        tenant_id="demo-retail",
        message=message,
        entities=extract_entities(message),
        pool=solved,
        metrics=RETAIL.data_metrics,
        clock=SimpleNamespace(now=lambda: RUN),
    )
    return cast(QueryRequest, request)


async def test_an_outcome_asked_of_a_goal_never_run_says_no_such_goal_is_on_record() -> None:
    for message in ("how did the Store 9 refund plan work out?", "Did the attach goal at store 2 pay off?"):
        answer = await goal_outcomes(_asking(message))
        assert not answer.answered and answer.data["outcome"] == "no_data", answer.text
        assert answer.data["solutions"] == [] and "No goal about" in answer.text


async def test_an_outcome_asked_of_one_goal_lists_that_goal_only() -> None:
    answer = await goal_outcomes(_asking("so how are the returns at store 2 coming along since the plan?"))
    assert answer.answered
    assert [row["goal"] for row in answer.data["solutions"]] == [
        "Cut the refund rate at Store 2 to 3% by March"
    ]


async def test_an_outcome_asked_of_every_goal_lists_the_latest() -> None:
    answer = await goal_outcomes(_asking("how did my goals work out?"))
    assert answer.answered and len(answer.data["solutions"]) == 2


async def test_a_goal_asked_about_before_any_was_run_is_on_no_record() -> None:
    answer = await goal_outcomes(_asking("how did the Store 9 refund plan work out?", _Solutions([])))
    assert not answer.answered and answer.data["outcome"] == "no_data", answer.text
    assert "Store 9's refunds" in answer.text
