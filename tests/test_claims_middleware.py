"""A write that reports or needs another write of its request (``runtime.middleware.claims``): it runs
only once that write is confirmed by its provider and then states the server's values; when that
write fails or is declined it is not run and the reply says what was not done and why. Against the
real local mail and calendar servers, through the chat front door."""

from __future__ import annotations

import email
import email.policy
import json
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import ToolMessage
from langchain_core.tools import BaseTool, StructuredTool
from langgraph.types import Command

from master_agent.capabilities import install_tenant
from master_agent.domains.assistant.demo import sent_envelopes
from master_agent.domains.assistant.demo_data import start_demo_servers
from master_agent.domains.assistant.local_servers import LocalEndpoints, LocalServers
from master_agent.domains.assistant.providers import CalDavCalendar
from master_agent.domains.assistant.tools import reported_in, stated_change
from master_agent.runtime import RuntimeResources
from master_agent.runtime.factory import chat_turn
from master_agent.runtime.middleware import ClaimsMiddleware, ToolCallRequest
from master_agent.runtime.middleware.base import CallOutcome
from master_agent.runtime.middleware.claims import MAX_WAITS, WAITING, standing_of
from master_agent.runtime.state import MasterAgentState

#: The demo week the servers are seeded with (recurring events: the chat's own clock finds them).
NOW = datetime(2026, 12, 7, 9, 0, tzinfo=UTC)
MOVE_AND_TELL = "Move the budget sync to 4pm Tuesday and email Maria to tell her"
MARIA = "maria.lopez@acme.example"


@pytest.fixture(scope="module")
async def assistant(resources: RuntimeResources) -> AsyncIterator[RuntimeResources]:
    yield resources
    LocalServers(resources.settings.data_dir).stop()


async def _seeded(resources: RuntimeResources) -> tuple[str, LocalEndpoints]:
    tenant = f"claims-{uuid.uuid4().hex[:8]}"
    await install_tenant(resources.database.pool, resources.settings, "assistant", tenant)
    return tenant, await start_demo_servers(resources.settings.data_dir, tenant, NOW)


def _mine(data_dir: Path, endpoints: LocalEndpoints) -> list[dict[str, Any]]:
    return [e for e in sent_envelopes(data_dir) if e.get("mail_from") == endpoints.address]


def _last_body(data_dir: Path) -> str:
    accepted = sorted((data_dir / "assistant" / "smtp" / "accepted").glob("*.eml"))[-1]
    message = email.message_from_bytes(accepted.read_bytes(), policy=email.policy.default)
    return str(message.get_body(preferencelist=("plain",)).get_content())  # type: ignore[union-attr]


async def test_a_mail_reporting_a_move_is_sent_after_it_is_read_back_with_the_servers_time_and_uid(
    assistant: RuntimeResources,
) -> None:
    """The move's draft says its approval also approves the mail that will report it; approved, the
    move is read back from CalDAV, then the mail goes, stating the server's new time and uid."""
    data_dir = assistant.settings.data_dir
    tenant, endpoints = await _seeded(assistant)
    thread = str(uuid.uuid4())
    first = await chat_turn(assistant, tenant, thread, MOVE_AND_TELL)
    [move] = first["interrupts"]
    assert move["tool"] == "reschedule_event"
    assert move["covers"] and "send an email to Maria Lopez" in move["question"], move
    assert _mine(data_dir, endpoints) == []
    done = await chat_turn(assistant, tenant, thread, Command(resume="approve"))
    assert done["interrupts"] == [] and done["reply"]["status"] == "success", done["reply"]
    start = datetime.fromisoformat(move["draft"]["event_ref"]["start"])
    day = start.replace(hour=0, minute=0)
    held = await CalDavCalendar(endpoints.caldav).events(day, day + timedelta(days=1))
    [moved] = [e for e in held if e.summary == "Budget sync"]
    assert moved.start.astimezone(UTC).hour == 16
    assert [e["rcpt_tos"] for e in _mine(data_dir, endpoints)] == [[MARIA]]
    body = _last_body(data_dir)
    assert moved.uid in body and "16:00-17:00" in body and "14:00" in body  # the new time, and the old


@pytest.mark.parametrize("how", ["declined", "gone from the server"])
async def test_a_mail_reporting_a_move_that_was_not_done_is_not_sent_and_the_reply_says_why(
    assistant: RuntimeResources, how: str
) -> None:
    data_dir = assistant.settings.data_dir
    tenant, endpoints = await _seeded(assistant)
    thread = str(uuid.uuid4())
    [move] = (await chat_turn(assistant, tenant, thread, MOVE_AND_TELL))["interrupts"]
    answer = "cancel"
    if how == "gone from the server":
        # Someone else removes the occurrence between the draft and its approval: the move fails at
        # the calendar server (not found), and the mail that would report it must not leave.
        calendar = CalDavCalendar(endpoints.caldav)
        start = datetime.fromisoformat(move["draft"]["event_ref"]["start"])
        [event] = [
            e
            for e in await calendar.events(start, start + timedelta(minutes=1))
            if e.summary == "Budget sync"
        ]
        await calendar.cancel_occurrence(event)
        answer = "approve"
    done = await chat_turn(assistant, tenant, thread, Command(resume=answer))
    assert done["interrupts"] == [], done["interrupts"]  # no mail draft is even shown
    assert _mine(data_dir, endpoints) == []
    reply = done["reply"]
    assert reply["status"] != "success", reply
    assert "Sent " not in reply["text"] and "Moved:" not in reply["text"]
    if how == "declined":
        # What was not done, each with its reason: the move (declined), so the mail that reports it.
        assert "the user cancelled this reschedule_event" in reply["text"], reply["text"]
        assert (
            "Not done (send an email): not done because it reports 'move an event', which was not done"
            in reply["text"]
        ), reply["text"]
    else:
        # The move's failure ends the request with a question about it; the reply says both were not
        # done: the move (not found) and the mail, never sent.
        assert "no event budget-sync@demo" in reply["text"], reply["text"]
        assert "Not done (move an event)" in reply["text"] and "Not done (send an email)" in reply["text"]


def _tool(name: str, performs: str | None) -> BaseTool:
    async def run(text: str = "") -> dict[str, Any]:
        return {"text": text}

    return StructuredTool.from_function(
        coroutine=run, name=name, description=name, metadata={"performs": performs} if performs else {}
    )


def _claims() -> ClaimsMiddleware:
    tools = {
        "move": _tool("move", "move an event"),
        "send": _tool("send", "send an email"),
        "read": _tool("read", None),
    }
    return ClaimsMiddleware(tools=tools)


STEPS = [
    {"requested": "move an event", "done": False},
    {"requested": "send an email", "done": False, "tells": 0},
]


def _state(*messages: ToolMessage, steps: list[dict[str, Any]] = STEPS) -> MasterAgentState:
    return MasterAgentState(goal="g", context={"actions": steps}, messages=list(messages))


def _answer(name: str, content: Any, status: str = "success") -> ToolMessage:
    text = content if isinstance(content, str) else json.dumps(content)
    return ToolMessage(content=text, tool_call_id=str(uuid.uuid4()), name=name, status=status)


def test_a_reporting_call_waits_in_the_turn_of_the_write_it_reports_and_runs_with_its_record_after() -> None:
    claims = _claims()
    calls = [
        {"name": "move", "args": {}, "id": "1"},
        {"name": "send", "args": {}, "id": "2"},
        {"name": "read", "args": {}, "id": "3"},
    ]
    marked = claims.after_model(_state(), calls)
    assert "needs" not in marked[0] and "needs" not in marked[2]
    # The change's draft says the mail that will report it, so approving it approves the report.
    assert marked[0]["covers"] == [
        "then send an email, stating this change as the server holds it, once it is confirmed"
    ]
    assert "covers" not in marked[1] and "covers" not in marked[2]
    assert marked[1]["needs"]["standing"] == "waiting" and marked[1]["needs"]["link"] == "tells"
    done = {
        "action": {
            "requested": "move an event",
            "done": True,
            "uid": "u-1",
            "confirmed_by": "caldav read-back",
        }
    }
    [after] = claims.after_model(_state(_answer("move", done)), [calls[1]])
    assert after["needs"]["standing"] == "confirmed" and after["needs"]["record"]["uid"] == "u-1"
    # Not done by its provider, or its call failed: the reporting call is refused with the reason.
    undone = {"action": {"requested": "move an event", "done": False, "why": "the server still shows it"}}
    [refused] = claims.after_model(_state(_answer("move", undone)), [calls[1]])
    assert refused["needs"] == {
        **refused["needs"],
        "standing": "failed",
        "record": {"why": "the server still shows it"},
    }
    [failed] = claims.after_model(
        _state(_answer("move", "error: move_to: names no day. Say one.", "error")), [calls[1]]
    )
    assert failed["needs"]["record"] == {"why": "move_to: names no day"}
    # A request of one step, or steps with no link, is left alone.
    assert claims.after_model(_state(steps=[STEPS[0], {"requested": "send an email"}]), calls) == calls


def test_a_write_no_call_attempts_is_waited_for_a_bounded_number_of_turns() -> None:
    waited = [_answer("send", f"{WAITING} 'move an event'") for _ in range(MAX_WAITS)]
    assert standing_of("move an event", ["move"], waited[:1], in_turn=False, waits=1)[0] == "waiting"
    standing, record = standing_of("move an event", ["move"], waited, in_turn=False, waits=MAX_WAITS)
    assert standing == "failed" and "no call made it" in record["why"]
    # A skipped answer of the write itself is no attempt; a later confirmation decides.
    confirmed = _answer("move", {"action": {"requested": "move an event", "done": True}})
    assert (
        standing_of("move an event", ["move"], [_answer("move", "skipped: x"), confirmed], False, 0)[0]
        == "confirmed"
    )


async def test_a_refused_call_answers_with_an_action_record_not_done_and_never_runs() -> None:
    claims = _claims()
    ran: list[str] = []

    async def handler(request: ToolCallRequest) -> CallOutcome:
        ran.append(request.name)
        return CallOutcome(status="success", content="{}")

    needs = {
        "requested": "move an event",
        "link": "tells",
        "standing": "failed",
        "record": {"why": "declined"},
        "own": "send an email",
    }
    request = ToolCallRequest(name="send", args={}, call_id="2", config={}, needs=needs)
    outcome = await claims.wrap_tool_call(request, handler)
    assert ran == [] and outcome.status == "error"
    assert json.loads(outcome.content)["action"] == {
        "requested": "send an email",
        "done": False,
        "why": "not done because it reports 'move an event', which was not done (declined)",
    }
    waiting = ToolCallRequest(
        name="send", args={}, call_id="2", config={}, needs={**needs, "standing": "waiting"}
    )
    assert (await claims.wrap_tool_call(waiting, handler)).content.startswith("skipped:") and ran == []
    # Confirmed: it runs, approved by the change's own approval (its draft said so).
    approved: list[bool] = []

    async def approving(request: ToolCallRequest) -> CallOutcome:
        approved.append(request.approved)
        return CallOutcome(status="success", content="{}")

    confirmed = {**needs, "standing": "confirmed", "record": {"confirmed_by": "caldav read-back"}}
    ran_after = ToolCallRequest(name="send", args={}, call_id="2", config={}, needs=confirmed)
    outcome = await claims.wrap_tool_call(ran_after, approving)
    assert approved == [True] and "confirmed" in outcome.notes[0]


def test_a_reported_change_is_stated_in_the_servers_values_and_replaces_a_time_it_does_not_hold() -> None:
    moved = {
        "requested": "move an event",
        "done": True,
        "uid": "abc@master-agent",
        "event": {"summary": "Sprint retro", "day": "2026-12-11", "start": "14:00", "end": "15:00"},
        "from": {"day": "2026-12-11", "start": "16:00"},
    }
    fact = stated_change(moved, "UTC")
    assert fact == (
        "Sprint retro is now on Friday 11 December 2026, 14:00-15:00 (UTC) (it was Friday 11 December 2026, "
        "16:00). Calendar event: abc@master-agent."
    )
    body = "Hi,\n\nThe retro moves to 2pm Friday.\n\nBest regards,\nme"
    kept = reported_in("The retro moves to 2pm Friday", body, fact, moved)
    assert kept["body"] == f"Hi,\n\nThe retro moves to 2pm Friday.\n\n{fact}\n\nBest regards,\nme"
    # Words that name a time the server does not hold ("3pm") are replaced by what it holds.
    wrong = reported_in("Retro at 3pm", body.replace("2pm", "3pm"), fact, moved)
    assert "3pm" not in wrong["body"] and "3pm" not in wrong["subject"] and fact in wrong["body"]
    cancelled = {**moved, "requested": "cancel an event"}
    assert stated_change(cancelled, "UTC") == (
        "Sprint retro on Friday 11 December 2026, 14:00-15:00 (UTC) is cancelled. Calendar event: abc@master-agent."
    )
    assert stated_change({"requested": "send an email", "done": True}, "UTC") is None
