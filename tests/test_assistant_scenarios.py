"""Seed 002's scenarios end to end: the assistant pack's master agent on the real runtime (offline
planner, Postgres checkpointer) against the real local mail, calendar and contacts servers."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any, Literal
from zoneinfo import ZoneInfo

import pytest
from langgraph.types import Command

from master_agent.capabilities import install_tenant
from master_agent.domains.assistant import DEMO_TENANT
from master_agent.domains.assistant.demo import sent_envelopes
from master_agent.domains.assistant.demo_data import TEAM, start_demo_servers
from master_agent.domains.assistant.local_servers import LocalEndpoints, LocalServers
from master_agent.domains.assistant.providers import CalDavCalendar
from master_agent.domains.assistant.scheduling import resolve_day
from master_agent.domains.assistant.tools import ACCOUNTS_ENV, AccountsFile, accounts_on
from master_agent.evolution.clock import FixedClock
from master_agent.runtime import RuntimeResources
from master_agent.runtime.factory import chat_turn
from master_agent.runtime.proposals import ProposalBook
from master_agent.runtime.recovery import answers_question
from master_agent.runtime.solve import SolveRequest, solve


@pytest.fixture(scope="module")
async def assistant(resources: RuntimeResources) -> AsyncIterator[RuntimeResources]:
    yield resources
    LocalServers(resources.settings.data_dir).stop()


async def _chat(resources: RuntimeResources, thread_id: str, message: str | Command[Any]) -> dict[str, Any]:
    return await chat_turn(resources, DEMO_TENANT, thread_id, message)


async def test_free_slots_next_tuesday(assistant: RuntimeResources) -> None:
    outcome = await solve(
        assistant,
        SolveRequest(tenant_id=DEMO_TENANT, goal="What times am I free next Tuesday for 60 minutes?"),
    )
    assert outcome.status == "success", outcome
    solution = outcome.solution
    assert solution is not None
    tuesday = resolve_day("next tuesday", datetime.now(ZoneInfo("UTC")).date())
    assert tuesday is not None
    assert solution.details["day"] == tuesday.isoformat()
    assert [(s["start"], s["end"]) for s in solution.details["free_slots"]] == [
        ("11:00", "13:00"),
        ("15:00", "17:00"),
    ]
    assert solution.confidence_band == "COMPLETE"
    assert [step["tool"] for step in solution.steps][:1] == ["find_free_slots"]


async def test_emails_from_john_are_found_and_summarised(assistant: RuntimeResources) -> None:
    outcome = await solve(
        assistant,
        SolveRequest(
            tenant_id=DEMO_TENANT, goal="Find emails from John about the project and summarise them"
        ),
    )
    assert outcome.status == "success", outcome
    details = outcome.solution.details  # type: ignore[union-attr]
    assert {m["address"] for m in details["messages"]} == {"john.miller@acme.example"}
    assert details["mail_summary"].startswith("2 email(s) from John Miller about project:")
    assert "Project Atlas kickoff" in details["mail_summary"]


async def test_a_mass_email_is_a_preview_until_accepted(assistant: RuntimeResources) -> None:
    data_dir = assistant.settings.data_dir
    before = len(sent_envelopes(data_dir))
    thread = str(uuid.uuid4())
    first = await _chat(assistant, thread, "Email the whole team about the budget freeze")
    handoff = first["envelope"]["handoff"]
    assert handoff["kind"] == "preview", first["reply"]
    proposal = handoff["proposal"]
    assert proposal["tool"] == "send_email"
    assert len(proposal["args"]["addresses"]) == 14
    assert "Preview (not done yet, high risk): send_email." in first["reply"]["text"]
    assert len(sent_envelopes(data_dir)) == before  # nothing sent before acceptance

    second = await _chat(assistant, thread, "Please execute the proposed plan")
    assert second["reply"]["status"] == "success", second["reply"]
    sent = sent_envelopes(data_dir)[before:]
    assert len(sent) == 1
    assert sorted(sent[0]["rcpt_tos"]) == sorted(c.email for c in TEAM)
    stored = await ProposalBook(assistant.database.pool).list(DEMO_TENANT, thread_id=thread)
    assert [p.status for p in stored] == ["executed"]

    # Accepted once, run once: asking again finds nothing to accept and sends nothing.
    third = await _chat(assistant, thread, "Please execute the proposed plan")
    assert len(sent_envelopes(data_dir)) == before + 1, third["reply"]


async def test_which_david_then_a_draft_to_approve_then_the_event(assistant: RuntimeResources) -> None:
    thread = str(uuid.uuid4())
    asked = await _chat(assistant, thread, "Schedule a meeting with David tomorrow at 2pm")
    [question] = asked["interrupts"]
    assert question["kind"] == "clarification"
    assert [option.split(" <")[0] for option in question["options"]] == ["David Chen", "David Okafor"]

    drafted = await _chat(assistant, thread, Command(resume="David Okafor"))
    [approval] = drafted["interrupts"]
    assert approval["kind"] == "approval" and approval["tool"] == "create_event"
    assert approval["draft"]["addresses"] == ["david.okafor@acme.example"]
    tomorrow = datetime.now(ZoneInfo("UTC")).date().toordinal() + 1
    assert approval["detail"]["day"] == datetime.fromordinal(tomorrow).date().isoformat()
    assert approval["detail"]["start"] == "14:00"
    assert isinstance(approval["detail"]["overlaps"], list)  # what the meeting would overlap, if anything

    endpoints, _ = LocalServers(assistant.settings.data_dir).ensure_running(DEMO_TENANT)
    day = datetime.fromordinal(tomorrow).replace(tzinfo=ZoneInfo("UTC"))
    calendar = CalDavCalendar(endpoints.caldav)
    before = {e.uid for e in await calendar.events(day, day.replace(hour=23))}
    done = await _chat(assistant, thread, Command(resume="approve"))
    assert done["interrupts"] == []
    assert done["reply"]["status"] == "success", done["reply"]
    assert "Created: Meeting with David" in done["reply"]["text"]
    events = await calendar.events(day, day.replace(hour=23))
    invited = [e for e in events if e.summary == "Meeting with David" and e.uid not in before]
    assert [(e.attendees, e.start.astimezone(ZoneInfo("UTC")).hour) for e in invited] == [
        (["david.okafor@acme.example"], 14)
    ]


def _accounts_file(
    path: Path, tenant: str, endpoints: LocalEndpoints, secret_env: str, overrides: dict[str, dict[str, str]]
) -> Path:
    accounts = accounts_on(
        endpoints, username=DEMO_TENANT, password_env=secret_env, address="exec@acme.example", timeout_s=3
    )
    for name, changes in overrides.items():
        setattr(accounts, name, getattr(accounts, name).model_copy(update=changes))
    path.write_text(AccountsFile(tenants={tenant: accounts}).model_dump_json())
    return path


async def _with_a_stopped_server(
    resources: RuntimeResources,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    tenant: str,
    service: Literal["caldav", "carddav"],
) -> tuple[LocalServers, LocalEndpoints]:
    """An assistant ``tenant`` whose ``service`` points at a server that was started and stopped (its
    address answers nothing), the rest at the demo's live servers: (the stopped servers, the live
    endpoints)."""
    stopped = LocalServers(tmp_path / "stopped")
    gone, _ = stopped.ensure_running(DEMO_TENANT)
    stopped.stop(("dav",))
    live = await start_demo_servers(resources.settings.data_dir, DEMO_TENANT, datetime.now(UTC))
    monkeypatch.setenv("ASSISTANT_TEST_SECRET", live.caldav.password.get_secret_value())
    overrides = {service: {"url": getattr(gone, service).url}}
    accounts = _accounts_file(tmp_path / "accounts.json", tenant, live, "ASSISTANT_TEST_SECRET", overrides)
    monkeypatch.setenv(ACCOUNTS_ENV, str(accounts))
    await install_tenant(resources.database.pool, resources.settings, "assistant", tenant)
    return stopped, live


async def test_a_stopped_calendar_server_ends_in_api_down_with_what_to_do(
    assistant: RuntimeResources, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A calendar server that was running and was stopped: its address answers nothing now.
    stopped, _ = await _with_a_stopped_server(
        assistant, tmp_path, monkeypatch, "acme-calendar-down", "caldav"
    )
    outcome = await solve(
        assistant,
        SolveRequest(
            tenant_id="acme-calendar-down", goal="What times am I free next Tuesday for 60 minutes?"
        ),
    )
    stopped.stop()
    assert outcome.status == "error"
    solution = outcome.solution
    assert solution is not None and solution.handoff is not None
    assert solution.handoff["kind"] == "failure"
    assert solution.handoff["error_type"] == "api_down"
    assert solution.handoff["context"]["provider"] == "caldav"
    assert "not reachable" in solution.handoff["what_you_can_do"]
    assert solution.termination["reason"] == "exit"


async def test_a_stopped_contacts_server_is_worked_around_through_the_mailbox(
    assistant: RuntimeResources, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The address book's server was stopped; the mailbox still answers: the assistant tries another
    # way (find_correspondents, declared instead_of find_contacts) rather than giving up. The day is
    # read from the clock seam, fixed here.
    monkeypatch.setattr(assistant.evolution, "clock", FixedClock(datetime(2031, 3, 3, 9, 0, tzinfo=UTC)))
    stopped, live = await _with_a_stopped_server(
        assistant, tmp_path, monkeypatch, "acme-contacts-down", "carddav"
    )
    thread = str(uuid.uuid4())
    drafted = await chat_turn(
        assistant, "acme-contacts-down", thread, "Schedule a meeting with David tomorrow at 2pm"
    )
    stopped.stop()
    [approval] = drafted["interrupts"]
    assert approval["kind"] == "approval" and approval["tool"] == "create_event", drafted["interrupts"]
    # Only David Okafor ever wrote: the mailbox names one David, so nobody is asked which.
    assert approval["draft"]["addresses"] == ["david.okafor@acme.example"]
    assert approval["detail"]["day"] == "2031-03-04"

    done = await chat_turn(assistant, "acme-contacts-down", thread, Command(resume="approve"))
    assert done["reply"]["status"] == "success", done["reply"]
    envelope = done["envelope"]
    steps = [(step["tool"], step["status"]) for step in envelope["steps"]]
    assert steps.index(("find_contacts", "error")) < steps.index(("find_correspondents", "success"))
    assert steps[-1] == ("create_event", "success")
    assert envelope["confidence_band"] == "COMPLETE" and envelope["handoff"] is None
    assert [item for item in envelope["limitations"] if "api_down" in item] == [
        # The address book is read whole (names, misspellings and roles are matched against it).
        "find_contacts: carddav everyone: api_down: cannot reach the server (All connection attempts failed)"
    ]
    calendar = CalDavCalendar(live.caldav)
    day = datetime(2031, 3, 4, tzinfo=UTC)
    events = await calendar.events(day, day + timedelta(days=1))
    assert [(e.summary, e.attendees, e.start.hour) for e in events if e.summary == "Meeting with David"] == [
        ("Meeting with David", ["david.okafor@acme.example"], 14)
    ]


async def test_wrong_contacts_credentials_end_in_permission_and_an_unknown_name_asks_the_user(
    assistant: RuntimeResources, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    live, _ = LocalServers(assistant.settings.data_dir).ensure_running(DEMO_TENANT)
    monkeypatch.setenv("ASSISTANT_TEST_SECRET", live.caldav.password.get_secret_value())
    monkeypatch.setenv("ASSISTANT_WRONG_SECRET", "not-the-password")
    monkeypatch.setenv(
        ACCOUNTS_ENV,
        str(
            _accounts_file(
                tmp_path / "accounts.json",
                "acme-wrong-password",
                live,
                "ASSISTANT_TEST_SECRET",
                {"carddav": {"password_env": "ASSISTANT_WRONG_SECRET"}},
            )
        ),
    )
    await install_tenant(assistant.database.pool, assistant.settings, "assistant", "acme-wrong-password")
    refused = await solve(
        assistant,
        SolveRequest(tenant_id="acme-wrong-password", goal="Schedule a meeting with David tomorrow at 2pm"),
    )
    assert refused.status == "error"
    assert refused.solution is not None and refused.solution.handoff is not None
    assert refused.solution.handoff["error_type"] == "permission"
    assert "credentials" in refused.solution.handoff["what_you_can_do"]

    unknown = await solve(
        assistant, SolveRequest(tenant_id=DEMO_TENANT, goal="Schedule a meeting with Zebedee tomorrow at 2pm")
    )
    # A name in a person's place that no contact fits is asked about before anything is drafted.
    assert unknown.status == "interrupted", unknown
    assert unknown.interrupt is not None and unknown.interrupt["reason"] == "missing_information"
    assert "No one named 'Zebedee' is in your contacts" in unknown.interrupt["question"]


async def test_a_preview_is_revised_then_cancelled_and_nothing_is_sent(assistant: RuntimeResources) -> None:
    data_dir = assistant.settings.data_dir
    before = len(sent_envelopes(data_dir))
    thread = str(uuid.uuid4())
    first = await _chat(assistant, thread, "Email the whole team about the budget freeze")
    assert "handoff" in first["envelope"], (first["routing"]["reason"], first["routing"]["candidates"])
    original = first["envelope"]["handoff"]["proposal"]
    assert original["args"]["subject"] == "Budget freeze"

    revised = await _chat(assistant, thread, "Change budget freeze to hiring freeze in the proposal")
    proposal = revised["envelope"]["handoff"]["proposal"]
    assert proposal["proposal_id"] != original["proposal_id"]
    assert proposal["args"]["subject"] == "Hiring freeze"
    assert "hiring freeze" in proposal["args"]["body"]
    book = ProposalBook(assistant.database.pool)
    assert [p.status for p in await book.list(DEMO_TENANT, thread_id=thread)] == ["pending", "revised"]

    cancelled = await _chat(assistant, thread, "Cancel")
    assert cancelled["solution"]["proposal"]["status"] == "cancelled"
    assert [p.status for p in await book.list(DEMO_TENANT, thread_id=thread)] == ["cancelled", "revised"]
    # Nothing waits any more: "execute" now accepts nothing and sends nothing.
    await _chat(assistant, thread, "Please execute the proposed plan")
    assert len(sent_envelopes(data_dir)) == before


async def test_a_high_risk_call_without_an_accepted_preview_never_runs(assistant: RuntimeResources) -> None:
    """The tools step, not the prompt, guards the call: an accepted proposal for other arguments does
    not let a call with these run."""
    data_dir = assistant.settings.data_dir
    before = len(sent_envelopes(data_dir))
    thread = str(uuid.uuid4())
    first = await _chat(assistant, thread, "Email the whole team about the budget freeze")
    proposal = first["envelope"]["handoff"]["proposal"]
    book = ProposalBook(assistant.database.pool)
    pending = await book.open_proposal(DEMO_TENANT, thread)
    assert pending is not None
    await book.answer(pending, "accepted", "accepted elsewhere")
    other = {**proposal["args"], "subject": "Something else"}
    assert await book.claim(DEMO_TENANT, thread, "send_email", other) is None
    assert await book.claim(DEMO_TENANT, str(uuid.uuid4()), "send_email", proposal["args"]) is None
    claimed = await book.claim(DEMO_TENANT, thread, "send_email", proposal["args"])
    assert claimed is not None and claimed.status == "executing"
    # Claimed once: the same accepted proposal cannot be claimed again.
    assert await book.claim(DEMO_TENANT, thread, "send_email", proposal["args"]) is None
    assert len(sent_envelopes(data_dir)) == before


async def _events_on(resources: RuntimeResources, day: date, summary: str) -> list[Any]:
    endpoints, _ = LocalServers(resources.settings.data_dir).ensure_running(DEMO_TENANT)
    start = datetime.combine(day, datetime.min.time(), tzinfo=ZoneInfo("UTC"))
    events = await CalDavCalendar(endpoints.caldav).events(start, start.replace(hour=23))
    return [event for event in events if event.summary == summary]


async def test_a_meeting_without_a_time_asks_a_new_request_suspends_it_and_it_resumes_later(
    assistant: RuntimeResources,
) -> None:
    thread = str(uuid.uuid4())
    asked = await _chat(assistant, thread, "Schedule board meeting next month")
    [question] = asked["interrupts"]
    assert question["reason"] == "missing_information"
    assert question["fields"] == ["day", "start_time"]
    assert "next month" in question["question"]

    # Not an answer: a new flow runs, the board meeting waits as a suspended task.
    check = await _chat(assistant, thread, "Actually, check my calendar first")
    assert check["interrupts"] == []
    assert check["solution"]["events"], check["reply"]
    assert check["routing"]["previous_task"] == "Schedule board meeting next month"
    [suspended] = check["suspended"]
    assert suspended["goal"] == "Schedule board meeting next month"
    assert "Paused: 'Schedule board meeting next month'" in check["reply"]["text"]
    assert check["context"]["previous_task"] == "Schedule board meeting next month"

    today = datetime.now(ZoneInfo("UTC")).date()
    day = (today.replace(day=1) + timedelta(days=32)).replace(day=16)
    before = len(await _events_on(assistant, day, "Board meeting"))
    resumed = await _chat(assistant, thread, f"Resume the board meeting on {day.isoformat()} at 3pm")
    assert resumed["routing"]["resumes"] == suspended["flow_id"]
    assert resumed["suspended"] == []
    [approval] = resumed["interrupts"]
    assert approval["kind"] == "approval" and approval["tool"] == "create_event"
    assert (approval["draft"]["day"], approval["draft"]["start_time"]) == (day.isoformat(), "15:00")

    done = await _chat(assistant, thread, Command(resume="approve"))
    assert done["reply"]["status"] == "success", done["reply"]
    events = await _events_on(assistant, day, "Board meeting")
    assert len(events) == before + 1
    assert events[-1].start.astimezone(ZoneInfo("UTC")).hour == 15


async def test_a_missing_time_is_asked_and_a_suspended_task_can_be_dropped(
    assistant: RuntimeResources,
) -> None:
    thread = str(uuid.uuid4())
    await _chat(assistant, thread, "Schedule board meeting next month")
    # An answer that gives only the day: the time is asked for next.
    again = await _chat(assistant, thread, Command(resume="2030-01-10"))
    [question] = again["interrupts"]
    assert question["fields"] == ["start_time"]
    assert question["question"] == "What time should 'Board meeting' be?"

    await _chat(assistant, thread, "Wait, what is on my calendar next week?")
    dropped = await _chat(assistant, thread, "Never mind the board meeting")
    assert dropped["reply"]["kind"] == "drop_flow"
    assert "dropped the task 'Schedule board meeting next month'" in dropped["reply"]["text"]
    assert dropped["suspended"] == []
    assert await _events_on(assistant, date(2030, 1, 10), "Board meeting") == []

    # Two answers that never give the time: the flow ends with the question.
    thread = str(uuid.uuid4())
    await _chat(assistant, thread, "Schedule board meeting next month")
    await _chat(assistant, thread, Command(resume="not sure"))
    ended = await _chat(assistant, thread, Command(resume="whenever suits"))
    assert ended["interrupts"] == []
    assert ended["envelope"]["handoff"]["kind"] == "question"
    assert ended["envelope"]["handoff"]["reason"] == "missing_information"
    assert ended["termination"]["reason"] == "ask_user"


async def test_an_answer_below_seventy_percent_confidence_asks_the_user(assistant: RuntimeResources) -> None:
    outcome = await solve(
        assistant,
        SolveRequest(tenant_id=DEMO_TENANT, goal="Find emails from Zed about the project and summarise them"),
    )
    assert outcome.status == "partial"
    solution = outcome.solution
    assert solution is not None and solution.handoff is not None
    assert solution.handoff["reason"] == "low_confidence"
    assert solution.confidence_band == "BLOCKED"
    assert "40%" in solution.handoff["question"]
    assert solution.details["mail_summary"] == "No emails from Zed about project."
    assert solution.termination["reason"] == "ask_user"


async def test_to_which_day_answered_next_completes_the_move(assistant: RuntimeResources) -> None:
    """A move without where to asks "to which day or time?"; the answer (the next chat message, which
    ``/chat/stream`` sends as the interrupt's resume) completes that move: previewed, then read back
    from the calendar, on the event asked about (the answer's day is where to, not which event)."""
    thread = str(uuid.uuid4())
    asked = await _chat(assistant, thread, "Move the design review")
    [question] = asked["interrupts"]
    assert question["fields"] == ["move_to"], question
    answer = "to Thursday 2pm please"
    assert answers_question(question, answer)
    answered = await _chat(assistant, thread, Command(resume=answer))
    [approval] = answered["interrupts"]
    assert approval["kind"] == "approval" and approval["tool"] == "reschedule_event", approval
    done = await _chat(assistant, thread, Command(resume="approve"))
    assert done["reply"]["status"] == "success", done["reply"]
    assert "Moved: Design review" in done["reply"]["text"]
    thursday = resolve_day("Thursday", datetime.now(UTC).date())
    assert thursday is not None
    moved = await _events_on(assistant, thursday, "Design review")
    assert [event.start.astimezone(UTC).hour for event in moved] == [14]


async def test_a_time_answered_with_go_ahead_books_the_meeting_without_a_second_draft(
    assistant: RuntimeResources,
) -> None:
    """The time asked for, answered with "go ahead": the answer completes the event and approves it;
    the event is read back from the calendar with the contact the lower-case name meant."""
    thread = str(uuid.uuid4())
    asked = await _chat(assistant, thread, "can u set up a sync with lena novak on Thursday? hiring plan")
    [question] = asked["interrupts"]
    assert question["fields"] == ["start_time"], question
    done = await _chat(assistant, thread, Command(resume="9:30 works, go ahead"))
    assert done["interrupts"] == [], done["interrupts"]
    assert done["reply"]["status"] == "success", done["reply"]
    assert "Created: Sync with Lena Novak" in done["reply"]["text"]
    thursday = resolve_day("Thursday", datetime.now(UTC).date())
    assert thursday is not None
    [event] = await _events_on(assistant, thursday, "Sync with Lena Novak: hiring plan")
    assert event.attendees == ["lena.novak@acme.example"]
    assert event.start.astimezone(UTC).strftime("%H:%M") == "09:30"


async def test_a_recipient_nobody_in_the_contacts_is_asked_about_then_the_answer_is_used(
    assistant: RuntimeResources,
) -> None:
    data_dir = assistant.settings.data_dir
    before = len(sent_envelopes(data_dir))
    thread = str(uuid.uuid4())
    asked = await _chat(assistant, thread, "Email Zebulon saying the demo moves to Friday")
    [question] = asked["interrupts"]
    assert question["fields"] == ["name", "people_checked"], question
    assert "No one named 'Zebulon' is in your contacts" in question["question"]
    answered = await _chat(assistant, thread, Command(resume="I meant the QA engineer"))
    [draft] = answered["interrupts"]
    assert draft["kind"] == "approval" and draft["draft"]["addresses"] == ["lucas.silva@acme.example"]
    assert "The demo moves to Friday." in draft["draft"]["body"]
    cancelled = await _chat(assistant, thread, Command(resume="cancel"))
    assert "Sent" not in cancelled["reply"]["text"]
    assert len(sent_envelopes(data_dir)) == before


async def test_a_reservation_is_said_to_have_no_tool_and_nothing_is_booked(
    assistant: RuntimeResources,
) -> None:
    friday = resolve_day("Friday", datetime.now(UTC).date())
    assert friday is not None
    start = datetime.combine(friday, datetime.min.time(), tzinfo=UTC)
    endpoints, _ = LocalServers(assistant.settings.data_dir).ensure_running(DEMO_TENANT)
    calendar = CalDavCalendar(endpoints.caldav)
    before = {e.uid for e in await calendar.events(start, start + timedelta(days=1))}
    table = await _chat(assistant, str(uuid.uuid4()), "book a table for 4 at Nonna's on Friday at 8pm")
    assert table["interrupts"] == []
    assert table["reply"]["status"] != "success", table["reply"]
    assert "no tool" in table["reply"]["text"]
    assert {e.uid for e in await calendar.events(start, start + timedelta(days=1))} == before
