from __future__ import annotations

from typing import Any

import pytest
from langchain_core.messages import AIMessage

from master_agent.runtime.state import MasterAgentState, TurnRecord
from master_agent.runtime.termination import decide, is_stagnating, progress_score


def _state(**values: Any) -> MasterAgentState:
    calls = [{"name": "t", "args": {}, "id": "1"}]
    base: dict[str, Any] = {
        "goal": "g",
        "messages": [AIMessage(content="", tool_calls=calls)],
        "iteration_count": 1,
        "max_iterations": 10,
        "confidence_score": 0.8,
        "progress_score": 0.2,
        "completed_steps": [],
    }
    base.update(values)
    return base  # type: ignore[return-value]


def test_no_tool_calls_means_completed_even_at_the_iteration_limit() -> None:
    decision = decide(_state(messages=[AIMessage(content="{}")], iteration_count=10))
    assert (decision.route, decision.reason) == ("end", "completed")


def test_progress_threshold_ends_before_the_iteration_limit() -> None:
    decision = decide(_state(progress_score=0.95, iteration_count=10))
    assert (decision.route, decision.reason) == ("end", "progress_threshold")


def test_max_iterations_escalates() -> None:
    decision = decide(_state(iteration_count=10))
    assert (decision.route, decision.reason) == ("escalate_to_human", "max_iterations")


def test_low_confidence_escalates_only_after_five_iterations() -> None:
    assert decide(_state(confidence_score=0.3, iteration_count=4)).route == "continue"
    decision = decide(_state(confidence_score=0.3, iteration_count=5))
    assert (decision.route, decision.reason) == ("escalate_to_human", "low_confidence")


def _turns(*turns: tuple[list[str], float]) -> list[TurnRecord]:
    return [TurnRecord(steps=steps, progress=progress) for steps, progress in turns]


def test_same_step_three_turns_without_progress_escalates_whatever_its_arguments() -> None:
    # Arguments differ from turn to turn (signatures are not compared): the name is the step.
    turns = _turns((["a"], 0.1), (["b"], 0.2), (["b", "c"], 0.2), (["b"], 0.2))
    decision = decide(_state(recent_turns=turns, completed_steps=["a#1", "b#2", "b#3", "c#4", "b#5"]))
    assert (decision.route, decision.reason) == ("escalate_to_human", "stagnation")


@pytest.mark.parametrize(
    "turns",
    [
        _turns((["b"], 0.2), (["a"], 0.2), (["b"], 0.2)),  # not in a row
        _turns((["b"], 0.2), (["b"], 0.3), (["b"], 0.4)),  # progressing
        _turns((["b"], 0.2), (["b"], 0.2)),  # only twice
        _turns((["a", "b"], 0.2), (["a", "c"], 0.2), (["b", "c"], 0.2)),  # no step in all three
    ],
)
def test_no_stagnation_without_three_fruitless_turns_of_one_step(turns: list[TurnRecord]) -> None:
    assert not is_stagnating(turns)
    assert decide(_state(recent_turns=turns)).route == "continue"


def test_otherwise_continue() -> None:
    assert decide(_state()).route == "continue"


def test_progress_score_follows_the_seed_weights() -> None:
    keys = ["root_cause", "strategy", "implementation_plan"]
    empty = _state(findings={}, confidence_score=0.0)
    assert progress_score(empty, keys) == 0.0
    one = _state(findings={"root_cause": {"x": 1}}, confidence_score=0.6)
    assert progress_score(one, keys) == 0.4  # 0.25 + 0.15 partial confidence
    everything = _state(
        findings={"root_cause": 1, "strategy": 1}, solution={"implementation_plan": 1}, confidence_score=0.8
    )
    assert progress_score(everything, keys) == 1.0
