"""The verification step every agent runs before it answers: claims checked against their evidence."""

from __future__ import annotations

from master_agent.runtime.verification import is_empty_answer, limitations_of, verify_answer


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
