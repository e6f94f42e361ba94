"""The verification step every agent runs before it answers: claims checked against their evidence."""

from __future__ import annotations

import pytest

from master_agent.capabilities.envelope import SubAgentEnvelope, settle
from master_agent.routing.graph.handlers import _said_unbacked
from master_agent.runtime.verification import (
    WEAK_CONFIDENCE_CAP,
    is_empty_answer,
    limitations_of,
    requested_steps,
    verify_answer,
    verify_before_answer,
)


def test_a_driver_without_a_significant_test_is_weak_evidence() -> None:
    answer = {
        "root_cause": {
            "driver": "tenure_months",
            "evidence": ["Pearson r(tenure, attach rate) = -0.31 (p = 0.300, n = 9 staff)"],
        }
    }
    [check] = verify_answer(answer, {})
    assert check.verdict == "weak" and "0.3 > 0.05" in check.evidence
    assert limitations_of([check]) == [f"weak evidence: {check.claim} ({check.evidence})"]
    strong = {"root_cause": {"evidence": ["Welch t = -2.02, p = 0.0438 over 3629 transactions"]}}
    assert [c.verdict for c in verify_answer(strong, {})] == ["backed"]


def test_an_expected_value_short_of_its_target_is_not_backed() -> None:
    outcome = {
        "expected_outcome": {"baseline": 0.03, "target": 0.09, "expected": 0.07, "meets_target": False}
    }
    [check] = verify_answer(outcome, {})
    assert check.verdict == "unbacked" and "0.09" in check.claim


def test_an_answer_about_another_entity_than_asked_is_not_backed() -> None:
    answer = {"expected_outcome": {"store_id": 5, "meets_target": True, "target": 0.04, "expected": 0.05}}
    verdicts = {c.claim: c.verdict for c in verify_answer(answer, {"store_id": 7})}
    assert verdicts["expected_outcome.store_id = 5"] == "unbacked"
    assert all(c.verdict == "backed" for c in verify_answer(answer, {"store_id": 5}))


def test_an_answer_with_every_field_empty_is_no_answer() -> None:
    assert is_empty_answer({"rows": None, "answer": None, "confidence": 0.5})
    assert not is_empty_answer({"rows": [], "answer": "3 stores"})


def test_a_claim_with_one_significant_test_of_two_is_backed() -> None:
    answer = {
        "root_cause": {
            "evidence": [
                "Pearson r(tenure months, attach rate) = -0.68 (p = 0.018, n = 10 staff)",
                "Welch t = -1.94, p = 0.0520 over 2700 transactions",
            ]
        }
    }
    [check] = verify_answer(answer, {})
    assert check.verdict == "backed" and "the best of 2 tests" in check.evidence


def test_status_and_band_are_settled_together() -> None:
    assert settle("success", 0.95) == ("success", "COMPLETE", None)
    assert settle("success", 0.82) == ("success", "COMPLETE", None)  # P(target met) 0.82, answer whole
    status, band, limitation = settle("success", 0.42)
    assert (status, band) == ("partial", "BLOCKED") and limitation and "0.42" in limitation
    assert settle("partial", 0.97)[:2] == ("partial", "PARTIAL")  # a partial is never COMPLETE
    assert settle("partial", 0.3) == ("partial", "BLOCKED", None)
    assert settle("error", 0.99)[:2] == ("error", "BLOCKED")


def test_an_envelope_cannot_contradict_its_band() -> None:
    envelope = SubAgentEnvelope(status="success", data={"x": 1}, confidence=0.3, confidence_band="COMPLETE")
    assert (envelope.status, envelope.confidence_band) == ("partial", "BLOCKED")
    assert any("more likely wrong" in line for line in envelope.limitations)
    again = SubAgentEnvelope.model_validate(envelope.model_dump())
    assert again.limitations == envelope.limitations  # settled once: reading it back adds nothing
    for status in ("success", "partial", "error"):
        for confidence in (0.0, 0.49, 0.5, 0.89, 0.9, 1.0):
            settled = SubAgentEnvelope(status=status, confidence=confidence)
            assert (settled.status == "success") == (settled.confidence_band == "COMPLETE")
            assert settled.status != "error" or settled.confidence_band == "BLOCKED"


def test_an_answer_over_another_window_than_asked_is_not_backed() -> None:
    june = {"label": "June 2026", "start": "2026-06-01T00:00:00+00:00", "end": "2026-07-01T00:00:00+00:00"}
    everything = {**june, "label": "all your data", "start": "2025-01-01T00:00:00+00:00"}
    [check] = verify_answer({"value": 0.064, "window": everything}, {"window": june})
    assert check.verdict == "unbacked" and "June 2026" in check.evidence
    [check] = verify_answer({"value": 0.0505, "window": june}, {"window": june})
    assert check.verdict == "backed"
    # "This quarter so far" read twice on a running clock, seconds apart, is the same window.
    so_far = {
        "label": "this quarter",
        "start": "2026-10-01T00:00:00+00:00",
        "end": "2026-11-25T12:00:00+00:00",
    }
    [check] = verify_answer({"window": {**so_far, "end": "2026-11-25T12:00:40+00:00"}}, {"window": so_far})
    assert check.verdict == "backed"
    [check] = verify_answer({"window": {**so_far, "end": "2026-11-24T12:00:00+00:00"}}, {"window": so_far})
    assert check.verdict == "unbacked"


def test_no_answer_is_told_apart_from_an_empty_one() -> None:
    nothing = {"rows": None, "answer": None}
    verified = verify_before_answer(nothing, {}, 0.5, model_finished=True, tools_called=False)
    assert verified.no_answer is not None and "no tool called" in verified.no_answer
    verified = verify_before_answer(nothing, {}, 0.5, model_finished=True, tools_called=True)
    assert verified.no_answer is None and verified.limitations == ["the answer is empty"]
    stopped = verify_before_answer(nothing, {}, 0.5, model_finished=False, tools_called=False)
    assert stopped.no_answer is None and stopped.limitations == []  # a stop rule's partial says why itself
    weak = {"root_cause": {"evidence": ["r = 0.2, p = 0.4"]}, "confidence": 0.9}
    verified = verify_before_answer(weak, {}, 0.9, model_finished=True, tools_called=True)
    assert verified.confidence == WEAK_CONFIDENCE_CAP and verified.data["confidence"] == WEAK_CONFIDENCE_CAP


def test_a_message_that_states_an_earlier_change_not_done_is_not_backed() -> None:
    """ "move the review and tell Lena": the mail says the move is made; sent while the move was not
    done, it told the reader something untrue, and the answer is never backed as done."""
    asked = {
        "actions": [
            {"requested": "move an event", "done": False, "why": "no tool confirmed it"},
            {"requested": "send an email", "done": False, "why": "no tool confirmed it", "tells": 0},
        ]
    }
    sent = {"requested": "send an email", "done": True, "confirmed_by": "smtp acceptance"}
    steps = requested_steps(asked, [sent])
    assert steps is not None and steps[1]["states_undone"] == "move an event"
    checks = verify_answer({"actions": steps}, {})
    assert [c.verdict for c in checks] == ["unbacked", "backed", "unbacked"], checks
    moved = {"requested": "move an event", "done": True, "confirmed_by": "caldav"}
    both = requested_steps(asked, [moved, sent])
    assert both is not None and "states_undone" not in both[1]


@pytest.mark.parametrize(
    ("limitation", "line"),
    [
        ("not backed: the total for store 2 (no rows)", "Not backed: the total for store 2 (no rows)"),
        ("weak evidence: over July (a guessed calendar)", "Weak evidence: over July (a guessed calendar)"),
        ("the answer is empty", "Not backed: the answer is empty"),
    ],
)
def test_a_reply_says_each_limitation_with_its_verdict_once(limitation: str, line: str) -> None:
    assert _said_unbacked(limitation) == line
