"""Risk tiers, answers to proposals and drafts, the failure decision matrix and confidence bands."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.tools import StructuredTool

from master_agent.capabilities.envelope import SubAgentEnvelope, confidence_band
from master_agent.routing.graph import flow_command
from master_agent.routing.models import SuspendedFlow
from master_agent.runtime.proposals import args_digest, call_risk, read_feedback, revise_args
from master_agent.runtime.recovery import answers_question, failure_decision, failure_handoff, pick_option
from master_agent.runtime.state import keep_handoff


@pytest.mark.parametrize(
    ("text", "feedback"),
    [
        ("Please execute the proposed plan", "accept"),
        ("go ahead", "accept"),
        ("Yes, send it", "accept"),
        ("approve", "accept"),
        ("👍 yes", "accept"),
        ("go", "accept"),
        ("yep", "accept"),
        ("yep, fire away", "accept"),
        ("go back to Friday", None),
        ("actually no, make it 11:30", "revise"),
        ("wait, make it 3pm", "revise"),
        ("sorry, I meant the 15th, fix that", "revise"),
        ("can the subject read 'Migration window'", "revise"),
        ("no wait, send it to the whole team instead", "revise"),
        ("no, cancel it instead", "cancel"),
        ("Change Friday to Monday in the proposal", "revise"),
        ("change 'budget freeze' to 'hiring freeze'", "revise"),
        ("cancel", "cancel"),
        ("No, don't send it", "cancel"),
        ("Never mind", "cancel"),
        ("ok forget it then", "cancel"),
        ("nope, leave it", "cancel"),
        ("hmm, never mind", "cancel"),
        ("y", "accept"),
        ("great, do both now", "accept"),
        # Praise of what is shown, and nothing else, takes it as it stands.
        ("great", "accept"),
        ("Perfect!", "accept"),
        ("lovely, thanks", "accept"),
        ("all good", "accept"),
        ("not great", None),
        ("thanks", None),
        ("great, change it to 4pm", "revise"),
        ("What is on my calendar tomorrow?", None),
        ("Schedule a meeting with David", None),
    ],
)
def test_feedback_is_read_from_a_message(text: str, feedback: str | None) -> None:
    assert read_feedback(text) == feedback


def test_a_change_is_applied_to_every_string_of_the_call() -> None:
    args = {"subject": "Budget freeze", "body": "About the budget freeze.", "addresses": ["a@x"], "n": 3}
    revised = revise_args(args, "Change budget freeze to hiring freeze in the proposal")
    assert revised == {**args, "subject": "Hiring freeze", "body": "About the hiring freeze."}
    assert revise_args(args, "please execute") == args
    assert args_digest(revised) != args_digest(args)
    assert args_digest({"b": 1, "a": 2}) == args_digest({"a": 2, "b": 1})


def test_a_correction_naming_only_the_right_value_replaces_the_drafts_one_value_of_its_kind() -> None:
    """ "I meant the 15th" corrects the draft's one day of the month; with two days (or none) it is not
    guessed, and the draft stays as it was (then said not applied)."""
    args = {
        "subject": "Offsite on the 14th",
        "body": "Hi,\n\nThe offsite is on the 14th.",
        "addresses": ["h@x"],
    }
    fixed = revise_args(args, "sorry, I meant the 15th, fix that")
    assert fixed == {**args, "subject": "Offsite on the 15th", "body": "Hi,\n\nThe offsite is on the 15th."}
    assert revise_args(args, "I meant Friday") == args
    two = {**args, "body": "From the 14th to the 16th."}
    assert revise_args(two, "I meant the 15th") == two
    assert revise_args(args, "can the subject read 'Offsite moved'")["subject"] == "Offsite moved"


def test_a_change_replaces_whole_words_and_never_the_draft_named_by_a_pronoun() -> None:
    """ "make it to Emma instead" names the draft, not words in it: nothing in the draft changes (the
    tool's own terms read it, or it is said not applied); "Fri" is not the inside of "Friday"."""
    args = {"subject": "Submit the item list", "body": "Please submit it by Friday.", "addresses": ["t@x"]}
    assert revise_args(args, "oh wait, not Tom - make it to Emma instead") == args
    assert revise_args(args, "change Fri to Mon") == args
    assert revise_args(args, "change Friday to Monday")["body"] == "Please submit it by Monday."


def _tool(**metadata: Any) -> StructuredTool:
    async def act(addresses: list[str]) -> dict[str, Any]:
        return {}

    return StructuredTool.from_function(coroutine=act, name="act", description="d", metadata=metadata)


def test_risk_is_declared_overridden_and_raised_by_arguments() -> None:
    many = {"addresses": [str(i) for i in range(11)]}
    assert call_risk(_tool(), many) == "low"
    assert call_risk(_tool(risk="medium"), many) == "medium"
    assert call_risk(_tool(risk="dangerous"), many) == "high"  # an unknown risk is the highest
    rule = _tool(risk="medium", risk_of=lambda args: "high" if len(args["addresses"]) > 10 else None)
    assert call_risk(rule, many) == "high"
    assert call_risk(rule, {"addresses": ["a"]}) == "medium"
    # An agent's override replaces the declared risk, never the raise by arguments.
    assert call_risk(rule, {"addresses": ["a"]}, override="low") == "low"
    assert call_risk(rule, many, override="low") == "high"


@pytest.mark.parametrize(
    ("error_type", "decision"),
    [
        ("invalid_input", "revise_plan"),
        ("conflict", "try_another_way"),
        ("not_found", "ask_user"),
        ("api_down", "exit"),
        ("timeout", "exit"),
        ("permission", "exit"),
        (None, "revise_plan"),
    ],
)
def test_the_decision_matrix(error_type: str | None, decision: str) -> None:
    assert failure_decision(error_type) == decision


def test_a_temporary_failure_with_another_way_is_worked_around() -> None:
    assert failure_decision("api_down", ["find_correspondents"]) == "try_another_way"
    assert failure_decision("timeout", ["find_correspondents"]) == "try_another_way"
    # A refusal or a wrong input is not a service being down: another source changes nothing.
    assert failure_decision("permission", ["find_correspondents"]) == "exit"
    assert failure_decision("not_found", ["find_correspondents"]) == "ask_user"


def test_handoffs_say_what_failed_and_what_to_do() -> None:
    down = failure_handoff("find_free_slots", "api_down", "cannot reach", {"provider": "caldav"})
    assert down["kind"] == "failure" and "caldav service is not reachable" in down["what_you_can_do"]
    missing = failure_handoff("find_contacts", "not_found", "no contact matches 'Zed'", {})
    assert missing["kind"] == "question" and "Zed" in missing["question"]
    # Parallel calls: the worse handoff stays; None starts a new flow.
    preview = {"kind": "preview"}
    assert keep_handoff(preview, down) == down
    assert keep_handoff(down, preview) == down
    assert keep_handoff(preview, missing) == missing
    assert keep_handoff(down, None) is None
    assert keep_handoff(None, preview) == preview


def test_confidence_bands_and_options() -> None:
    assert [confidence_band(c) for c in (0.95, 0.9, 0.89, 0.5, 0.49)] == [
        "COMPLETE",
        "COMPLETE",
        "PARTIAL",
        "PARTIAL",
        "BLOCKED",
    ]
    # The band always follows the confidence, whatever a sender claims.
    envelope = SubAgentEnvelope.model_validate(
        {"status": "success", "confidence": 0.95, "confidence_band": "BLOCKED"}
    )
    assert envelope.confidence_band == "COMPLETE"
    options = ["David Chen <david.chen@acme.example>", "David Okafor <david.okafor@acme.example>"]
    assert pick_option("2", options) == options[1]
    assert pick_option("David Chen", options) == options[0]
    assert pick_option("okafor", options) == options[1]
    assert pick_option("David", options) is None  # both contain it
    assert pick_option("someone else", options) is None
    # An option told apart by what only it says: a role, a word of it or its stem.
    roles = [f"{options[0]}, Engineering Lead", f"{options[1]}, Sales Director"]
    assert pick_option("the sales one", roles) == roles[1]
    assert pick_option("I meant the one from engineering", roles) == roles[0]
    assert pick_option("the engineer", roles) == roles[0]
    assert pick_option("the acme one", roles) is None  # both say it
    assert pick_option("the marketing one", roles) is None


MISSING = {"kind": "clarification", "reason": "missing_information", "question": "Which day?", "options": []}
WHICH = {"kind": "clarification", "question": "Which David?", "options": ["David Chen", "David Okafor"]}
DRAFT = {"kind": "approval", "question": "Approve?", "options": ["approve", "cancel"]}


@pytest.mark.parametrize(
    ("question", "message", "answers"),
    [
        (MISSING, "December 15 at 10am", True),
        (MISSING, "Actually, check my calendar first", False),
        (MISSING, "wait, what is on my calendar next week?", False),
        (MISSING, "Never mind", False),
        (WHICH, "the second one please", True),
        (WHICH, "Okafor", True),
        (WHICH, "Actually, David Chen", True),  # it picks an option: an answer however it starts
        (WHICH, "Actually, email John instead", False),
        # A word of one option in a change of direction tells no option apart ("Chen's" team is not him).
        (WHICH, "Actually, forget it, what is on Chen's team calendar?", False),
        ({"options": ["master_agent", "staff_leaderboard"]}, "actually, list my agents", False),
        (DRAFT, "approve", True),
        (DRAFT, "Never mind", True),  # cancels the draft
        (DRAFT, "actually, change 2pm to 3pm", True),
        (DRAFT, "Actually, find emails from John first", False),
        (DRAFT, "actually address it to Mia instead, not Noah", True),  # a change of the draft
        ("a plain question", "Actually, anything", True),
    ],
)
def test_a_message_to_a_waiting_flow_answers_it_unless_it_changes_direction(
    question: Any, message: str, answers: bool
) -> None:
    assert answers_question(question, message) is answers


def _flow(goal: str, flow_id: str) -> SuspendedFlow:
    at = "2026-11-23T10:00:00+00:00"
    return SuspendedFlow(
        flow_id=flow_id, goal=goal, agent="personal_assistant", started_at=at, suspended_at=at
    )


BOARD = _flow("Schedule board meeting next month", "board")
MAIL = _flow("Email the whole team about the budget freeze", "mail")


@pytest.mark.parametrize(
    ("text", "preview_waiting", "expected"),
    [
        ("Resume the board meeting", False, ("resume", "board", "")),
        (
            "let's get back to the board meeting on 2026-12-16 at 3pm",
            False,
            ("resume", "board", "on 2026-12-16 at 3pm"),
        ),
        ("continue", False, ("resume", "mail", "")),  # the latest
        ("Never mind the board meeting", False, ("drop", "board", "")),
        ("forget about the budget email", False, ("drop", "mail", "")),
        ("cancel", True, None),  # answers the waiting preview
        ("cancel", False, ("drop", "mail", "")),
        ("Cancel the proposal", True, None),
        ("Continue with the quarterly report", False, None),  # names no suspended task
        ("Schedule a board meeting tomorrow at 9am", False, None),
    ],
)
def test_a_message_resumes_or_drops_the_suspended_flow_it_names(
    text: str, preview_waiting: bool, expected: tuple[str, str, str] | None
) -> None:
    found = flow_command(text, [BOARD, MAIL], preview_waiting)
    assert (None if found is None else (found[0], found[1].flow_id, found[2])) == expected
    assert flow_command(text, [], preview_waiting) is None
