"""Pure parts of the evolution loop: checkpoints, judging, the pattern update rule, calibration."""

from __future__ import annotations

import pytest
from langchain_core.tools import BaseTool, StructuredTool
from pydantic import BaseModel

from master_agent.cli_evolution import parse_as_of
from master_agent.errors import InputError
from master_agent.evolution.calibration import Calibration, Counts, stratum_of
from master_agent.evolution.learning import anonymise, judge, pattern_confidence, problem_type_of
from master_agent.evolution.outcomes import checkpoint_days, expected_by
from master_agent.evolution.playbooks import PlaybookRefused, validate_playbook

VALID_PLAYBOOK = {
    "name": "monitor",
    "trigger": {
        "cron": "0 9 * * MON",
        "event": {"metric": "attach_rate", "operator": "<", "threshold": 0.04},
    },
    "steps": [
        {"order": 1, "action": "tool", "tool": "staff_performance", "args": {"store_id": 5}},
        {"order": 2, "action": "notify", "message": "coach staff below 4%"},
    ],
    "integrations": ["outbox"],
    "success_metrics": {"primary": "attach_rate"},
    "rollback": {"steps": ["disable"]},
    "owner": "store manager",
}


def test_checkpoints_follow_the_seed_and_scale_with_the_timeline() -> None:
    assert checkpoint_days(60) == [14, 30, 45, 60]
    assert checkpoint_days(30) == [7, 15, 22, 30]
    assert checkpoint_days(7) == [2, 4, 5, 7]
    assert checkpoint_days(120)[-1] == 120


def test_expected_value_moves_linearly_from_baseline_to_expected() -> None:
    assert expected_by(0, 60, 0.03, 0.07) == pytest.approx(0.03)
    assert expected_by(30, 60, 0.03, 0.07) == pytest.approx(0.05)
    assert expected_by(90, 60, 0.03, 0.07) == pytest.approx(0.07)


def test_success_is_reaching_the_target_and_actual_confidence_the_share_of_the_lift() -> None:
    outcome = {"baseline": 0.03, "target": 0.036, "expected": 0.07}
    assert judge(outcome, 0.072) == (True, 1.0)  # (target met, share of the asked-for lift)
    assert judge(outcome, 0.033) == (False, 0.5)
    assert judge(outcome, 0.02) == (False, 0.0)


def test_pattern_confidence_follows_its_evidence() -> None:
    one_success = [{"success": True, "predicted": 0.8}]
    confidence, rate = pattern_confidence(one_success)
    assert confidence == pytest.approx((2 * 0.8 + 1) / 3, abs=1e-4) and rate == 1.0
    weakened, rate = pattern_confidence([*one_success, {"success": False}, {"success": False}])
    assert weakened < confidence and rate == pytest.approx(1 / 3, abs=1e-4)
    strengthened, _ = pattern_confidence([*one_success, {"success": True}, {"success": True}])
    assert strengthened > confidence


def test_calibration_moves_from_the_raw_confidence_toward_observed_success() -> None:
    empty = Calibration(problem_type="p", intervention="i")
    assert empty.calibrate(0.8) == 0.8
    mostly_failing = Calibration(problem_type="p", intervention="i", overall=Counts(successes=1, failures=9))
    assert mostly_failing.calibrate(0.8) < 0.4
    always = Calibration(problem_type="p", intervention="i", overall=Counts(successes=20))
    assert always.calibrate(0.6) > 0.9
    # The stratum refines the overall rate: ambitious goals of an intervention that usually works fail.
    usual = Calibration(problem_type="p", intervention="i", overall=Counts(successes=15, failures=5))
    ambitious = usual.model_copy(update={"stratum": "ambition:>1.5", "within": Counts(failures=5)})
    assert ambitious.calibrate(0.8) < 0.45 < usual.calibrate(0.8)


def test_ambition_strata() -> None:
    assert stratum_of({"baseline": 0.03, "target": 0.036, "expected": 0.07}) == "ambition:<=0.5"
    assert stratum_of({"baseline": 0.03, "target": 0.07, "expected": 0.07}) == "ambition:<=1"
    assert stratum_of({"baseline": 0.03, "target": 0.1, "expected": 0.07}) == "ambition:>1.5"
    assert stratum_of({"baseline": 0.03}) == "all"


def test_names_and_anonymising() -> None:
    assert (
        problem_type_of({"expected_outcome": {"metric": "accessory_attach_rate"}})
        == "low_accessory_attach_rate"
    )
    assert anonymise("Store 5 staff at Shop #12 lag") == "the store staff at the store lag"


def test_as_of_reads_dates_as_the_whole_day() -> None:
    assert parse_as_of("2027-01-10").isoformat().startswith("2027-01-10T23:59:59")
    assert parse_as_of("2027-01-10T08:00").tzinfo is not None
    with pytest.raises(InputError, match="as-of"):
        parse_as_of("next tuesday")


def test_invalid_playbooks_are_refused_with_every_reason() -> None:
    tools = {"staff_performance": _tool()}
    assert validate_playbook(VALID_PLAYBOOK, tools).name == "monitor"
    broken = {
        **VALID_PLAYBOOK,
        "trigger": {"cron": "every monday"},
        "steps": [{"order": 1, "action": "notify"}],
        "owner": "",
    }
    with pytest.raises(PlaybookRefused) as refused:
        validate_playbook(broken, tools)
    text = " ".join(refused.value.reasons)
    assert "cron" in text and "message" in text and "owner" in text
    unknown = {**VALID_PLAYBOOK, "steps": [{"order": 1, "action": "tool", "tool": "launch_rockets"}]}
    with pytest.raises(PlaybookRefused, match="unknown tool 'launch_rockets'"):
        validate_playbook(unknown, tools)
    bad_args = {**VALID_PLAYBOOK, "steps": [{"order": 1, "action": "tool", "tool": "staff_performance"}]}
    with pytest.raises(PlaybookRefused, match="invalid args"):
        validate_playbook(bad_args, tools)
    no_trigger = {**VALID_PLAYBOOK, "trigger": {}}
    with pytest.raises(PlaybookRefused, match="cron schedule, an event condition or both"):
        validate_playbook(no_trigger, tools)


def _tool() -> BaseTool:
    class Args(BaseModel):
        store_id: int

    async def staff_performance(store_id: int) -> dict[str, object]:
        return {}

    return StructuredTool.from_function(
        coroutine=staff_performance, name="staff_performance", description="staff", args_schema=Args
    )
