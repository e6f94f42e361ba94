"""The assistant's new verbs and its truthfulness, against the real local servers: an event moved or
cancelled (one occurrence of a weekly one), free slots over a span and within hours, unread mail
newest first with the decision asked for surfaced, several people invited, drafts that say what was
asked; and a change is reported done only when the server shows it (a send the SMTP server does not
take is reported not done)."""

from __future__ import annotations

import email
import email.policy
import json
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import replace
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from langchain_core.tools import BaseTool
from langgraph.types import Command

from master_agent.capabilities import install_tenant
from master_agent.capabilities.tools.context import ToolContext
from master_agent.domains.assistant import (
    describe_answer,
    opens_as_request,
    read_as_free_time,
    read_as_negated,
    read_as_reply,
)
from master_agent.domains.assistant.demo import sent_envelopes
from master_agent.domains.assistant.demo_data import start_demo_servers
from master_agent.domains.assistant.local_servers import LocalEndpoints, LocalServers
from master_agent.domains.assistant.providers import CalDavCalendar, ImapMailbox, ProviderError
from master_agent.domains.assistant.requests import (
    _READERS,
    ActionReader,
    Reading,
    action_reader,
    imperative_verb,
    sure_request,
)
from master_agent.domains.assistant.steps import request_steps, verb_openings
from master_agent.domains.assistant.tools import (
    ACCOUNTS_ENV,
    AccountsFile,
    accounts_on,
    bare_hour,
    build_tools,
    goal_entities,
)
from master_agent.runtime import RuntimeResources
from master_agent.runtime.factory import chat_turn
from master_agent.runtime.proposals import ProposalBook, read_feedback, revise_args
from master_agent.runtime.verification import verify_answer
from master_agent.settings import Settings

#: A Monday 09:00 UTC: the demo week is written relative to it.
NOW = datetime(2026, 12, 7, 9, 0, tzinfo=UTC)
MONDAY = NOW.date()


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    directory = tmp_path_factory.mktemp("assistant-verbs")
    yield directory
    LocalServers(directory).stop()


def _tools(data_dir: Path, tenant: str) -> dict[str, BaseTool]:
    # Each test its own tenant: its own freshly seeded account on the local servers.
    context = ToolContext(
        pool=None,  # type: ignore[arg-type]
        database_uri="",
        tenant_id=tenant,
        data_schema=None,
        settings=Settings(data_dir=data_dir),
        now=lambda: NOW,
    )
    return build_tools(context)


async def _calendar(tools: dict[str, BaseTool], data_dir: Path, tenant: str) -> CalDavCalendar:
    await tools["calendar_events"].ainvoke({"period": "this week"})  # seeds the account
    endpoints, _ = LocalServers(data_dir).ensure_running(tenant)
    return CalDavCalendar(endpoints.caldav)


def _at(day: date, hour: int, minute: int = 0) -> datetime:
    return datetime(day.year, day.month, day.day, hour, minute, tzinfo=UTC)


async def test_one_occurrence_of_a_weekly_event_is_moved_and_read_back(data_dir: Path) -> None:
    tools = _tools(data_dir, "verbs-move")
    calendar = await _calendar(tools, data_dir, "verbs-move")
    thursday, friday = MONDAY + timedelta(days=3), MONDAY + timedelta(days=4)
    found = await tools["find_event"].ainvoke({"event_words": "my 1:1 with Maria", "on_day": "2026-12-10"})
    assert found["event"]["summary"] == "1:1 with Maria"
    moved = await tools["reschedule_event"].ainvoke(
        {"event_ref": found["event_ref"], "move_to": "Friday at 4pm"}
    )
    action = moved["action"]
    assert action["done"] is True and action["confirmed_by"] == "caldav read-back"
    # What the server holds now: the occurrence at the new time with its attendee, none at the old.
    there = await calendar.events(_at(friday, 16), _at(friday, 17))
    assert [(e.uid, e.attendees) for e in there if e.summary == "1:1 with Maria"] == [
        (action["uid"], ["maria.lopez@acme.example"])
    ]
    assert not [
        e for e in await calendar.events(_at(thursday, 15), _at(thursday, 16)) if "Maria" in e.summary
    ]
    # Next week's occurrence stays where it was.
    later = thursday + timedelta(days=7)
    assert [e.summary for e in await calendar.events(_at(later, 15), _at(later, 16))] == ["1:1 with Maria"]
    assert describe_answer(moved)[-1].startswith(
        "Moved: 1:1 with Maria from 2026-12-10 15:00 to 2026-12-11 16:00"
    )


async def test_an_event_moves_an_hour_earlier_and_one_occurrence_is_cancelled(data_dir: Path) -> None:
    tools = _tools(data_dir, "verbs-cancel")
    calendar = await _calendar(tools, data_dir, "verbs-cancel")
    friday, wednesday = MONDAY + timedelta(days=4), MONDAY + timedelta(days=2)
    retro = await tools["find_event"].ainvoke(
        {"event_words": "the sprint retro", "on_day": friday.isoformat()}
    )
    preview = await tools["reschedule_event"].metadata["preview_of"](  # type: ignore[index]
        {"event_ref": retro["event_ref"], "move_to": "an hour earlier"}
    )
    assert preview["to"] == f"{friday.isoformat()} 15:00-16:00"
    review = await tools["find_event"].ainvoke({"event_words": "design review, Tom is off sick"})
    assert review["event"]["day"] == wednesday.isoformat()
    cancelled = await tools["cancel_event"].ainvoke(
        {"event_ref": review["event_ref"], "cancel_request": "cancel the design review"}
    )
    assert cancelled["action"]["done"] is True
    assert not await calendar.events(_at(wednesday, 11), _at(wednesday, 12))
    later = wednesday + timedelta(days=7)
    assert [e.summary for e in await calendar.events(_at(later, 11), _at(later, 12))] == ["Design review"]


async def test_an_event_named_by_nothing_on_its_day_is_asked_about(data_dir: Path) -> None:
    tools = _tools(data_dir, "verbs-which")
    found = await tools["find_event"].ainvoke({"event_words": "cancel my meeting", "on_day": "2026-12-08"})
    assert "event_ref" not in found
    labels = [o["label"] for o in found["choices"]["options"]]
    assert "the Product review on 2026-12-08 at 10:00" in labels and len(labels) == 4
    with pytest.raises(ProviderError, match="not_found"):
        await tools["find_event"].ainvoke({"event_words": "the zebra parade"})


async def test_free_slots_of_a_span_and_within_hours_are_free_time_not_events(data_dir: Path) -> None:
    tools = _tools(data_dir, "verbs-free")
    week = await tools["find_free_slots"].ainvoke({"within": "next week", "duration_minutes": 60})
    assert {slot["day"] for slot in week["free_slots"]} == {
        (MONDAY + timedelta(days=7 + n)).isoformat() for n in range(5)
    }
    assert week["window"] == {"first": "2026-12-14", "last": "2026-12-18"}
    thursday = await tools["find_free_slots"].ainvoke(
        {"within": "any free hour thursday between 1 and 6pm?", "duration_minutes": 60}
    )
    assert [(s["start"], s["end"]) for s in thursday["free_slots"]] == [
        ("13:00", "15:00"),
        ("16:00", "18:00"),
    ]
    morning = await tools["find_free_slots"].ainvoke({"within": "Wednesday morning", "duration_minutes": 60})
    assert [(s["start"], s["end"]) for s in morning["free_slots"]] == [("09:45", "11:00")]


async def test_unread_mail_is_summarised_newest_first_with_the_decisions_surfaced(data_dir: Path) -> None:
    tools = _tools(data_dir, "verbs-mail")
    mail = await tools["search_email"].ainvoke({"sender": "", "unread": True})
    assert mail["matches"] == 6
    dates = [m["date"] for m in mail["messages"]]
    assert dates == sorted(dates, reverse=True)
    summary = mail["mail_summary"].splitlines()
    assert summary[0].startswith("6 unread email(s)")
    assert summary[1] == "Waiting for your decision or answer:"
    asking = summary[2 : summary.index("All, newest first:")]
    assert any("I need a decision by Friday" in line for line in asking)
    assert not any("This week in tech" in line for line in asking)
    listed = summary[summary.index("All, newest first:") + 1 :]
    assert "Budget freeze from next month" in listed[0]


async def test_several_people_are_invited_and_drafts_say_what_was_asked(data_dir: Path) -> None:
    tools = _tools(data_dir, "verbs-people")
    both = await tools["find_contacts"].ainvoke({"name": "Priya and Tom"})
    assert both["addresses"] == ["priya.shah@acme.example", "tom.becker@acme.example"]
    with_david = await tools["find_contacts"].ainvoke({"name": "Priya and David"})
    assert [o["value"] for o in with_david["choices"]["options"]] == [
        ["priya.shah@acme.example", "david.chen@acme.example"],
        ["priya.shah@acme.example", "david.okafor@acme.example"],
    ]
    entities = goal_entities(
        "Send a note to the team saying the offsite moves to Friday", MONDAY, "send_mail"
    )
    draft = await tools["draft_email"].ainvoke({**entities, "addresses": both["addresses"]})
    assert "The offsite moves to Friday." in draft["body"]
    assert "I am writing about" not in draft["body"]
    assert entities["name"] == "team"


async def test_an_event_is_done_only_as_read_back(data_dir: Path) -> None:
    tools = _tools(data_dir, "verbs-create")
    calendar = await _calendar(tools, data_dir, "verbs-create")
    made = await tools["create_event"].ainvoke(
        {
            "summary": "Roadmap",
            "day": "Thursday",
            "start_time": "10:00",
            "duration_minutes": 30,
            "addresses": ["priya.shah@acme.example", "tom.becker@acme.example"],
        }
    )
    assert made["action"]["done"] is True
    [event] = [
        e
        for e in await calendar.events(
            _at(MONDAY + timedelta(days=3), 10), _at(MONDAY + timedelta(days=3), 11)
        )
        if e.summary == "Roadmap"
    ]
    assert event.uid == made["action"]["uid"]
    assert event.end - event.start == timedelta(minutes=30)


async def test_a_send_the_smtp_server_does_not_take_is_not_done(
    data_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    stopped = LocalServers(tmp_path / "gone")
    gone, _ = stopped.ensure_running("verbs-smtp")
    stopped.stop()
    live, _ = LocalServers(data_dir).ensure_running("verbs-smtp")
    accounts = accounts_on(
        live, username="verbs-smtp", password_env="VERBS_SMTP_SECRET", address=live.address
    )
    accounts.smtp.url = gone.smtp.url
    path = tmp_path / "accounts.json"
    path.write_text(AccountsFile(tenants={"verbs-smtp": accounts}).model_dump_json())
    monkeypatch.setenv(ACCOUNTS_ENV, str(path))
    monkeypatch.setenv("VERBS_SMTP_SECRET", live.smtp.password.get_secret_value())
    with pytest.raises(ProviderError) as failed:
        await _tools(data_dir, "verbs-smtp")["send_email"].ainvoke(
            {"addresses": ["priya.shah@acme.example"], "subject": "s", "body": "b"}
        )
    assert failed.value.error_type == "api_down"


async def test_a_draft_is_changed_in_its_tools_own_terms_or_not_at_all(data_dir: Path) -> None:
    """What the tools apply themselves: a line asking the reader something added to a mail; an event
    draft's time, span, length and shift; an answer that asks none of these changes nothing (None:
    the runtime then says it was not applied)."""
    tenant = "verbs-own-terms"
    tools = _tools(data_dir, tenant)
    await _calendar(tools, data_dir, tenant)
    revise_mail = (tools["send_email"].metadata or {})["revise_of"]
    body = "Hi,\n\nThank you for the churn deck.\n\nBest regards,\nme"
    mail = {"addresses": ["sara.kim@acme.example"], "subject": "Thanks", "body": body}
    asked = await revise_mail(mail, "also add a line asking her to present it at friday's retro")
    assert "Thank you for the churn deck. Could you present it at friday's retro?" in asked["body"], asked
    revise_event = (tools["create_event"].metadata or {})["revise_of"]
    event = {
        "summary": "Catch-up",
        "day": "Friday",
        "start_time": "10:00",
        "duration_minutes": 30,
        "addresses": [],
    }
    assert await revise_event(event, "move it to 12-1 instead") == {
        **event,
        "start_time": "12:00",
        "duration_minutes": 60,
    }
    assert (await revise_event(event, "actually no, make it 11:30"))["start_time"] == "11:30"
    assert (await revise_event(event, "push it an hour later"))["start_time"] == "11:00"
    assert (await revise_event(event, "make it 45 minutes"))["duration_minutes"] == 45
    assert await revise_event(event, "make it sound more fun") is None


def test_an_action_not_confirmed_is_not_backed_and_changes_name_arguments() -> None:
    [check] = verify_answer({"action": {"requested": "send an email", "done": False, "why": "no tool"}}, {})
    assert check.verdict == "unbacked"
    [done] = verify_answer({"action": {"requested": "move an event", "done": True, "confirmed_by": "x"}}, {})
    assert done.verdict == "backed"
    draft = {"addresses": ["a@b.example"], "subject": "The report is late", "body": "Hi"}
    assert revise_args(draft, "change the subject to Report delay")["subject"] == "Report delay"
    assert revise_args(draft, "Subject should be 'Churn numbers' instead")["subject"] == "Churn numbers"
    # Sent, but without a change the user asked of its draft: never backed as done the way asked.
    [ran, without] = verify_answer(
        {
            "action": {
                "requested": "send an email",
                "done": True,
                "confirmed_by": "smtp",
                "not_applied": ["x"],
            }
        },
        {},
    )
    assert (ran.verdict, without.verdict) == ("backed", "unbacked") and "'x'" in without.evidence
    assert read_feedback("actually scrap that, don't send anything") == "cancel"
    assert read_feedback("looks right, send to everyone") == "accept"


async def test_requests_are_read_as_their_action() -> None:
    reader = action_reader(Settings())
    said = {
        "Move my 1:1 with Maria to Friday at 4pm": "reschedule",
        "Cancel the sprint retro this week": "cancel_event",
        "Summarise my unread mail": "read_mail",
        "Send a note to the team saying the offsite moves to Friday": "send_mail",
        "Invite the whole team to a farewell party on Friday at 5pm": "schedule",
        "Book me a train to Paris": "unsupported",
        "approve": "feedback",
    }
    assert {text: (await reader.read(text))[0] for text in said} == said


async def test_what_a_mail_says_in_a_clause_of_its_own_is_no_step_of_its_own() -> None:
    """ "... and ask whether ..." with no one of its own is what the mail before it says; "... and tell
    the team" names whom it goes to and is a step."""
    reader = action_reader(Settings())
    said = "Write back to John on the Atlas kickoff thread and ask whether the 120k includes contractor costs"
    assert await request_steps(said, reader) == []
    steps = await request_steps("move the retro to 11 and tell the team", reader)
    assert [step.reading.action for step in steps] == ["reschedule", "send_mail"]
    # After a change, "let <someone> know" is the mail telling it, asked as a question or not.
    steps = await request_steps("Can you move the budget sync to 1pm tomorrow and let Maria know?", reader)
    assert [step.reading.action for step in steps] == ["reschedule", "send_mail"]


@pytest.fixture(scope="module")
async def assistant(resources: RuntimeResources) -> AsyncIterator[RuntimeResources]:
    yield resources
    # The mail and calendar servers the module's tests started in the shared data directory stop with it.
    LocalServers(resources.settings.data_dir).stop()


async def _chat(
    resources: RuntimeResources, tenant: str, thread: str, message: str | Command[Any]
) -> dict[str, Any]:
    return await chat_turn(resources, tenant, thread, message)


async def test_a_failed_send_is_reported_not_done_and_an_unsupported_request_is_never_success(
    assistant: RuntimeResources, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data_dir = assistant.settings.data_dir
    tenant = "verbs-outage"
    stopped = LocalServers(tmp_path / "gone")
    gone, _ = stopped.ensure_running(tenant)
    stopped.stop()
    live, _ = LocalServers(data_dir).ensure_running(tenant)
    accounts = accounts_on(live, username=tenant, password_env="VERBS_OUTAGE_SECRET", address=live.address)
    accounts.smtp.url = gone.smtp.url
    path = tmp_path / "accounts.json"
    path.write_text(AccountsFile(tenants={tenant: accounts}).model_dump_json())
    monkeypatch.setenv(ACCOUNTS_ENV, str(path))
    monkeypatch.setenv("VERBS_OUTAGE_SECRET", live.smtp.password.get_secret_value())
    await install_tenant(assistant.database.pool, assistant.settings, "assistant", tenant)
    await start_demo_servers(data_dir, tenant, NOW)
    before = len(sent_envelopes(data_dir))
    thread = str(uuid.uuid4())
    asked = await _chat(assistant, tenant, thread, "Email Priya saying the launch slips a week")
    [approval] = asked["interrupts"]
    assert approval["draft"]["body"].splitlines()[2] == "The launch slips a week."
    done = await _chat(assistant, tenant, thread, Command(resume="approve"))
    reply = done["reply"]
    assert reply["status"] == "error", reply
    assert "Sent" not in reply["text"]
    assert len(sent_envelopes(data_dir)) == before
    box = done["envelope"]["context_box"]
    assert box["goal"] == "Email Priya saying the launch slips a week"
    assert box["entities"]["name"] == "Priya Shah" and box["next"]

    flight = await _chat(
        assistant, tenant, str(uuid.uuid4()), "Book me a flight to Berlin on Thursday morning"
    )
    assert flight["reply"]["status"] != "success"
    assert "no tool" in flight["reply"]["text"] or "None of your agents" in flight["reply"]["text"]


async def test_a_sent_mail_is_kept_in_the_sent_folder_and_read_back(data_dir: Path) -> None:
    """A mail the SMTP server took is also appended to the account's Sent folder on the IMAP server
    and found there again by its Message-ID; the reply names where it was kept."""
    tools = _tools(data_dir, "verbs-sent")
    await tools["calendar_events"].ainvoke({"period": "this week"})  # seeds the account
    sent = await tools["send_email"].ainvoke(
        {"addresses": ["priya.shah@acme.example"], "subject": "Roadmap", "body": "It moves to Friday."}
    )
    action = sent["action"]
    assert action["done"] is True and action["sent_folder"]["folder"] == "Sent", action
    assert "Sent folder" in action["confirmed_by"]
    endpoints, _ = LocalServers(data_dir).ensure_running("verbs-sent")
    kept = await ImapMailbox(endpoints.imap, mailbox="Sent").search()
    assert [(m.subject, m.uid) for m in kept] == [("Roadmap", action["sent_folder"]["uid"])]
    assert "It moves to Friday." in kept[0].body
    assert "raw" not in sent["sent"]  # the message's bytes stay out of the answer
    assert f"kept in Sent as uid {action['sent_folder']['uid']}" in " ".join(describe_answer(sent))
    # A second mail lands in the same folder (made once).
    again = await tools["send_email"].ainvoke(
        {"addresses": ["tom.becker@acme.example"], "subject": "Slides", "body": "Please send them."}
    )
    assert again["action"]["sent_folder"]["uid"] != action["sent_folder"]["uid"]
    assert len(await ImapMailbox(endpoints.imap, mailbox="Sent").search()) == 2


def test_an_event_is_titled_in_the_requests_own_words() -> None:
    """The kind of event a request names, whom it is with and what it is about make its title;
    a request that names no kind is a meeting."""
    said = {
        "Grab coffee with Omar Haddad tomorrow at 4pm": "Coffee with Omar Haddad",
        "Book a planning session with Mia Rossi on Friday at 2pm": "Planning session with Mia Rossi",
        "create an event 'dentist' 9 am thursday": "Dentist",
        "Schedule 30 minutes with David on Wednesday at 2pm": "Meeting with David",
        "Put a 45 min call w/ Hana tomorrow at 3, hiring plan": "Call with Hana: hiring plan",
        "Invite the whole team to a farewell party on Friday at 5pm": "Farewell party",
    }
    titles = {text: goal_entities(text, MONDAY, "schedule")["summary"] for text in said}
    assert titles == said


async def test_a_change_read_with_little_confidence_is_shown_as_its_draft_and_done_only_when_approved(
    assistant: RuntimeResources, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Below the verb head's asking threshold a write is not asked about apart ("do you want me to create
    an event?" took the user's yes, then showed the draft for a second one): its draft shows what would
    be done; "no" leaves the calendar as it was, "yes" creates the event, read back from the server."""
    reader = action_reader(assistant.settings)
    if reader.head is None:
        pytest.skip("no trained verb head for this embedder (the local MiniLM is not installed)")
    # Every reading below the threshold.
    unsure = ActionReader(reader.embedder, replace(reader.head, ask_below=1.01))
    monkeypatch.setitem(_READERS, assistant.settings.embeddings, unsure)
    tenant = "verbs-unsure"
    await install_tenant(assistant.database.pool, assistant.settings, "assistant", tenant)
    endpoints = await start_demo_servers(assistant.settings.data_dir, tenant, NOW)
    calendar = CalDavCalendar(endpoints.caldav)
    request = "Book a planning session with Mia Rossi on Friday at 2pm"

    thread = str(uuid.uuid4())
    asked = await _chat(assistant, tenant, thread, request)
    [draft] = asked["interrupts"]
    assert draft["kind"] == "approval" and draft["tool"] == "create_event"
    assert draft["draft"]["summary"] == "Planning session with Mia Rossi"
    assert "14:00" in str(draft["draft"])
    await _chat(assistant, tenant, thread, Command(resume="no"))
    wide = (_at(MONDAY - timedelta(days=31), 0), _at(MONDAY + timedelta(days=31), 0))
    assert not [e for e in await calendar.events(*wide) if e.summary == "Planning session with Mia Rossi"]

    thread = str(uuid.uuid4())
    await _chat(assistant, tenant, thread, request)
    await _chat(assistant, tenant, thread, Command(resume="yes"))
    # "Friday" is the service clock's next Friday: looked for over a month either side.
    wide = (_at(MONDAY - timedelta(days=31), 0), _at(MONDAY + timedelta(days=31), 0))
    created = [e for e in await calendar.events(*wide) if e.summary == "Planning session with Mia Rossi"]
    assert [(e.start.weekday(), e.start.hour) for e in created] == [(4, 14)]


async def test_an_event_named_by_its_start_is_found_and_a_shift_said_before_its_length_moves_it(
    data_dir: Path,
) -> None:
    """ "my 3pm on thursday" and "my 10am tomorrow" are the events starting then; "push ... back half an
    hour" moves one thirty minutes later, read back from the calendar server."""
    tools = _tools(data_dir, "verbs-timed")
    calendar = await _calendar(tools, data_dir, "verbs-timed")
    said = goal_entities("move my 3pm on thursday to 4:30", MONDAY, "reschedule")
    three = await tools["find_event"].ainvoke({"event_words": said["event_words"], "on_day": said["on_day"]})
    assert three["event"]["summary"] == "1:1 with Maria" and said["move_to"] == "4:30"
    ten = await tools["find_event"].ainvoke(
        {"event_words": "Cancel my 10am tomorrow", "on_day": "2026-12-08"}
    )
    assert ten["event"]["summary"] == "Product review"
    push = goal_entities("Push today's weekly planning back half an hour", MONDAY, "reschedule")
    assert push["move_to"] == "30 minutes later" and push["on_day"] == MONDAY.isoformat()
    planning = await tools["find_event"].ainvoke(
        {"event_words": push["event_words"], "on_day": push["on_day"]}
    )
    moved = await tools["reschedule_event"].ainvoke(
        {"event_ref": planning["event_ref"], "move_to": push["move_to"]}
    )
    assert moved["action"]["done"] is True
    there = await calendar.events(_at(MONDAY, 10, 30), _at(MONDAY, 11, 30))
    assert [(e.summary, e.start) for e in there if "planning" in e.summary.lower()] == [
        ("Weekly planning", _at(MONDAY, 10, 30))
    ]


@pytest.mark.parametrize(
    ("answer", "hour"),
    [("hmm wait, 3 is better", "15:00"), ("4 works", "16:00"), ("3 and 4", None), ("make it 2 people", None)],
)
def test_a_bare_number_answering_a_drafted_time_is_an_hour_by_the_working_day_rule(
    answer: str, hour: str | None
) -> None:
    found = bare_hour(answer)
    assert (found.strftime("%H:%M") if found else None) == hour


def test_a_moves_new_time_said_without_to_is_read_apart_from_the_event() -> None:
    """Where an event goes may be said with "instead", "at", "by" or its way ("back", "earlier"),
    not only after "to"; a day said of the event ("Friday's retro") stays the event's."""
    read = {
        text: {k: v for k, v in goal_entities(text, MONDAY, "reschedule").items() if k != "action"}
        for text in (
            "Can the product review happen at 11:30 instead?",
            "Let's have the budget sync on Wednesday instead",
            "Push back the weekly planning by two hours",
            "Bring the design review forward by 30 minutes",
            "Reschedule Friday's retro for Thursday at 4pm",
            "Move the design review",
            "make the product review begin one hour more late",
        )
    }
    assert read == {
        "Can the product review happen at 11:30 instead?": {
            "event_words": "Can the product review happen",
            "move_to": "at 11:30 instead?",
        },
        "Let's have the budget sync on Wednesday instead": {
            "event_words": "Let's have the budget sync",
            "move_to": "on Wednesday instead",
        },
        "Push back the weekly planning by two hours": {
            "event_words": "Push back the weekly planning by ",
            "move_to": "120 minutes later",
        },
        "Bring the design review forward by 30 minutes": {
            "event_words": "Bring the design review forward by ",
            "move_to": "30 minutes earlier",
        },
        "Reschedule Friday's retro for Thursday at 4pm": {
            "event_words": "Reschedule Friday's retro",
            "move_to": "Thursday at 4pm",
            "on_day": "2026-12-11",
        },
        "Move the design review": {"event_words": "Move the design review"},
        # A comparative said with "more" ("more late") is its way all the same.
        "make the product review begin one hour more late": {
            "event_words": "make the product review begin ",
            "move_to": "60 minutes later",
        },
    }


def test_draft_fields_are_named_as_users_name_them_and_holding_off_cancels() -> None:
    draft = {"addresses": ["a@b.example"], "subject": "Could you send me", "body": "Hi"}
    for said, subject in {
        "make the subject 'Load test results'": "Load test results",
        "retitle it to Review moved": "Review moved",
        "use the subject line Build status": "Build status",
        "subject: Q3 plan": "Q3 plan",
        "change the title to Launch": "Launch",
    }.items():
        assert read_feedback(said) == "revise", said
        assert revise_args(draft, said) == {**draft, "subject": subject}, said
    assert revise_args(draft, "the body should be: see you then")["body"] == "see you then"
    # A new request that starts with a field's word is no change to the draft.
    assert read_feedback("Message Priya that the demo went well") is None
    assert read_feedback("hold off, I'll talk to her in person instead") == "cancel"


def test_what_a_mail_says_is_the_users_words_whoever_it_goes_to() -> None:
    said = {
        "shoot Omar a quick email - the vendor demo is pushed to the 15th": "the vendor demo is pushed to the 15th",
        "Draft an email to Lena asking her to review the hiring plan": "could you review the hiring plan?",
        "write Ben a note thanking him for covering the rota": "thank you for covering the rota",
    }
    assert {text: goal_entities(text, MONDAY, "send_mail")["message"] for text in said} == said
    assert (
        goal_entities("Anything in my inbox that needs a decision from me?", MONDAY, "read_mail")["sender"]
        == ""
    )
    invited = goal_entities(
        "Invite the whole team to farewell drinks for Ben on Friday at 5pm", MONDAY, "schedule"
    )
    assert invited["summary"] == "Farewell drinks" and invited["name"] == "team"


async def test_a_drafts_subject_named_in_the_users_words_is_what_is_sent(assistant: RuntimeResources) -> None:
    """ "make the subject '...'" on a draft changes its subject; the mail the SMTP server takes has it."""
    data_dir = assistant.settings.data_dir
    tenant = "verbs-subject"
    await install_tenant(assistant.database.pool, assistant.settings, "assistant", tenant)
    endpoints = await start_demo_servers(data_dir, tenant, NOW)
    thread = str(uuid.uuid4())
    asked = await _chat(
        assistant, tenant, thread, "Draft a mail to Ben Adler asking for the load test results"
    )
    [approval] = asked["interrupts"]
    assert "load test results" in approval["draft"]["body"]
    revised = await _chat(assistant, tenant, thread, Command(resume="make the subject 'Load test results'"))
    [again] = revised["interrupts"]
    assert again["draft"]["subject"] == "Load test results"
    done = await _chat(assistant, tenant, thread, Command(resume="send it"))
    assert done["reply"]["status"] == "success", done["reply"]
    mine = [e for e in sent_envelopes(data_dir) if e.get("mail_from") == endpoints.address]
    assert [e["rcpt_tos"] for e in mine] == [["ben.adler@acme.example"]]
    kept = await ImapMailbox(endpoints.imap, mailbox="Sent").search()
    assert [m.subject for m in kept] == ["Load test results"]


def test_a_short_request_that_opens_with_its_verb_is_a_request_not_a_bare_answer() -> None:
    """ "Cancel my 10am tomorrow" has as few words besides its day and time as the answer "Thursday at
    2pm", but opens as cancel requests do: it is read as a request of its own."""
    assert opens_as_request("Cancel my 10am tomorrow", "cancel_event")
    assert opens_as_request("push the retro to 3", "reschedule")
    assert not opens_as_request("Thursday at 2pm", "schedule")
    assert not opens_as_request("an hour later works", "reschedule")
    assert not opens_as_request("Cancel my 10am tomorrow", "agenda")


async def test_a_request_divides_into_steps_only_where_a_new_request_opens() -> None:
    reader = action_reader(Settings())
    read = {
        text: [(step.text, step.reading.action) for step in await request_steps(text, reader)]
        for text in (
            "Cancel Wednesday's design review and let Tom know by email it's off this week",
            "check if I'm free thursday at 2, and if I am, book 30 min with Omar on the hiring pipeline",
            "Cancel the budget sync, then send David a note saying we'll sync next week",
            "Set up a 1-hour kickoff with Emma and Lucas on Wednesday afternoon",
            "Tell Priya and Tom that the demo is cancelled",
            "Email Omar and tell him the build is green",
            "Book 30 minutes with Lena on Friday at 2 and email her the agenda: hiring plan",
            "Cancel thursdays 1:1 with Maria and let her know I am travelling",
        )
    }
    assert read == {
        "Cancel Wednesday's design review and let Tom know by email it's off this week": [
            ("Cancel Wednesday's design review", "cancel_event"),
            ("let Tom know by email it's off this week", "send_mail"),
        ],
        "check if I'm free thursday at 2, and if I am, book 30 min with Omar on the hiring pipeline": [
            ("check if I'm free thursday at 2", "free_slots"),
            ("book 30 min with Omar on the hiring pipeline", "schedule"),
        ],
        "Cancel the budget sync, then send David a note saying we'll sync next week": [
            ("Cancel the budget sync", "cancel_event"),
            ("send David a note saying we'll sync next week", "send_mail"),
        ],
        # Names joined by "and", and one action said twice, are one request.
        "Set up a 1-hour kickoff with Emma and Lucas on Wednesday afternoon": [],
        "Tell Priya and Tom that the demo is cancelled": [],
        "Email Omar and tell him the build is green": [],
        # A step read unsure but opened by a verb only one action's requests open with ("email"): a
        # step of that action, never dropped from the request.
        "Book 30 minutes with Lena on Friday at 2 and email her the agenda: hiring plan": [
            ("Book 30 minutes with Lena on Friday at 2", "schedule"),
            ("email her the agenda: hiring plan", "send_mail"),
        ],
        # A telling clause after a change that is no mail is the mail telling it, never dropped.
        "Cancel thursdays 1:1 with Maria and let her know I am travelling": [
            ("Cancel thursdays 1:1 with Maria", "cancel_event"),
            ("let her know I am travelling", "send_mail"),
        ],
    }


async def _first_interrupt(reply: dict[str, Any]) -> dict[str, Any]:
    [waiting] = reply["interrupts"]
    return dict(waiting)


async def _seeded(resources: RuntimeResources, prefix: str) -> tuple[str, LocalEndpoints]:
    """A new assistant tenant of its own, its local servers seeded for the week of ``NOW``."""
    tenant = f"{prefix}-{uuid.uuid4().hex[:8]}"
    await install_tenant(resources.database.pool, resources.settings, "assistant", tenant)
    return tenant, await start_demo_servers(resources.settings.data_dir, tenant, NOW)


@pytest.mark.parametrize(
    ("request_text", "event", "recipient", "said"),
    [
        (
            "Cancel the design review and let Tom know by email it's off this week",
            "Design review",
            "tom.becker@acme.example",
            "design review is off",
        ),
        (
            "Call off the sprint retro, then email Lena saying we skip it this week",
            "Sprint retro",
            "lena.novak@acme.example",
            "we skip it this week",
        ),
    ],
)
async def test_each_step_of_a_request_is_done_or_said_not_done(
    assistant: RuntimeResources, request_text: str, event: str, recipient: str, said: str
) -> None:
    """A request of two changes, the mail telling of the cancellation: the cancellation's draft says
    its approval also approves that mail; approved, the event is read back gone from the calendar and
    only then is the mail sent (success). Declined, nothing is cancelled and nothing reaches the SMTP
    sink, and the reply says both were not done and why (partial, never success)."""
    data_dir = assistant.settings.data_dir
    for decline in (False, True):
        tenant, endpoints = await _seeded(assistant, "verbs-steps")
        thread = str(uuid.uuid4())
        first = await _first_interrupt(await _chat(assistant, tenant, thread, request_text))
        assert first["tool"] == "cancel_event" and first["detail"]["cancel"] == event
        assert first.get("covers"), first
        done = await _chat(assistant, tenant, thread, Command(resume="cancel" if decline else "approve"))
        assert done["interrupts"] == [], done["interrupts"]
        reply = done["reply"]
        mine = [e for e in sent_envelopes(data_dir) if e.get("mail_from") == endpoints.address]
        calendar = CalDavCalendar(endpoints.caldav)
        when = datetime.fromisoformat(first["draft"]["event_ref"]["start"])
        still = [e for e in await calendar.events(when, when + timedelta(minutes=1)) if e.summary == event]
        if decline:
            assert reply["status"] == "partial", reply
            assert "Not done (send an email): not done because it reports 'cancel an event'" in reply["text"]
            assert mine == [] and still
        else:
            assert reply["status"] == "success", reply
            assert f"Cancelled: {event}" in reply["text"] and "Sent " in reply["text"]
            assert [e["rcpt_tos"] for e in mine] == [[recipient]] and not still
            accepted = sorted((data_dir / "assistant" / "smtp" / "accepted").glob("*.eml"))[-1]
            message = email.message_from_bytes(accepted.read_bytes(), policy=email.policy.default)
            body = str(message.get_body(preferencelist=("plain",)).get_content()).lower()
            assert said in body and "is cancelled" in body, body
    # The next request of the thread is drafted again: the approval was that request's only.
    again = await _chat(assistant, tenant, thread, "Email Kate saying the contract is signed")
    assert again["interrupts"] and again["interrupts"][0]["tool"] == "send_email"


@pytest.mark.parametrize(
    ("request_text", "added", "expected"),
    [
        (
            "Draft an email to Lena asking her to review the Q1 hiring plan by Wednesday",
            "also copy Hana on it",
            ["lena.novak@acme.example", "hana.sato@acme.example"],
        ),
        (
            "Write to Ben asking for the load test results",
            "cc omar and noah too",
            ["ben.adler@acme.example", "omar.haddad@acme.example", "noah.weber@acme.example"],
        ),
    ],
)
async def test_people_an_answer_adds_to_a_draft_receive_the_one_mail_sent(
    assistant: RuntimeResources, request_text: str, added: str, expected: list[str]
) -> None:
    data_dir = assistant.settings.data_dir
    tenant, endpoints = await _seeded(assistant, "verbs-add")
    thread = str(uuid.uuid4())
    await _first_interrupt(await _chat(assistant, tenant, thread, request_text))
    again = await _first_interrupt(await _chat(assistant, tenant, thread, Command(resume=added)))
    assert again["tool"] == "send_email" and again["draft"]["addresses"] == expected
    assert again["draft"]["body"].startswith("Hi all,")
    assert sent_envelopes(data_dir) == [
        e for e in sent_envelopes(data_dir) if e.get("mail_from") != endpoints.address
    ]
    done = await _chat(assistant, tenant, thread, Command(resume="ok send"))
    assert done["reply"]["status"] == "success", done["reply"]
    mine = [e for e in sent_envelopes(data_dir) if e.get("mail_from") == endpoints.address]
    assert [sorted(e["rcpt_tos"]) for e in mine] == [sorted(expected)]


@pytest.mark.parametrize(
    ("request_text", "recipient", "said"),
    [
        (
            "Answer David Okafor's Northwind mail: fine by me, let's discuss it on Tuesday's call",
            "david.okafor@acme.example",
            "let's discuss it on tuesday's call",
        ),
        (
            "write back to John Miller on the payment adapter risk saying go ahead with the mock",
            "john.miller@acme.example",
            "go ahead with the mock",
        ),
    ],
)
async def test_answering_a_mail_is_sending_one_and_it_is_done_only_once_sent(
    assistant: RuntimeResources, request_text: str, recipient: str, said: str
) -> None:
    """Replying to a mail ("answer ...", "write back to ...") is a send: a draft to its sender that
    says what the user dictated; success only once the SMTP sink holds it."""
    data_dir = assistant.settings.data_dir
    tenant, endpoints = await _seeded(assistant, "verbs-reply")
    thread = str(uuid.uuid4())
    draft = await _first_interrupt(await _chat(assistant, tenant, thread, request_text))
    assert recipient in str(draft["draft"]) and said in str(draft["draft"]).lower(), draft
    mine = [e for e in sent_envelopes(data_dir) if e.get("mail_from") == endpoints.address]
    assert mine == []  # nothing goes before the user approves
    done = await _chat(assistant, tenant, thread, Command(resume="yes send it"))
    assert done["reply"]["status"] == "success", done["reply"]
    mine = [e for e in sent_envelopes(data_dir) if e.get("mail_from") == endpoints.address]
    assert [e["rcpt_tos"] for e in mine] == [[recipient]]


@pytest.mark.parametrize(
    ("request_text", "reply"),
    [
        ("Answer Maria's budget mail: understood, I'll tell my leads", True),
        ("reply to Tom - the slides are fine", True),
        ("get back to Priya telling her the roadmap holds", True),
        ("What did Maria's budget mail say?", False),
        ("summarise John's Atlas thread, newest first", False),
    ],
)
def test_a_request_read_as_reading_mail_that_dictates_a_reply_is_a_send(
    request_text: str, reply: bool
) -> None:
    """A request read as reading mail, sending its next reading, that dictates words for someone is a
    send (a draft to approve, done only once sent), never a summary answered ``success``."""
    reading = Reading(action="read_mail", confidence=0.8, runner_up="send_mail")
    assert read_as_reply(request_text, reading).action == ("send_mail" if reply else "read_mail")
    # With another next reading, or read as anything else, the request is what the head says.
    assert read_as_reply(request_text, replace(reading, runner_up="agenda")).action == "read_mail"
    assert read_as_reply(request_text, replace(reading, action="agenda")).action == "agenda"


@pytest.mark.parametrize(
    ("request_text", "free_time"),
    [
        ("I need a 2 hour block for a workshop sometime Tuesday to Thursday. What are my options?", True),
        ("Set up a workshop with the team Tuesday to Thursday, 2 hours", False),
        ("I need an hour with Ben on Friday at 2. Is that ok?", False),
    ],
)
def test_a_booking_read_unsure_that_asks_and_names_no_time_is_a_free_time_question(
    request_text: str, free_time: bool
) -> None:
    """A block asked for as a question ("what are my options?") with no start is free time to find:
    it must not book or draft. A booking said as such, or one that names its time, stays a booking."""
    unsure = Reading(action="schedule", confidence=0.65, runner_up="free_slots", sure=False)
    expected = "free_slots" if free_time else "schedule"
    assert read_as_free_time(request_text, unsure).action == expected
    # A sure reading, or another next reading, is what the head says.
    assert read_as_free_time(request_text, replace(unsure, sure=True)).action == "schedule"
    assert read_as_free_time(request_text, replace(unsure, runner_up="agenda")).action == "schedule"


@pytest.mark.parametrize(
    ("request_text", "action", "read_as"),
    [
        ("is the retro still on for friday? dont cancel it, just asking", "cancel_event", "agenda"),
        ("did I already answer Maria? do not send anything", "send_mail", "read_mail"),
        ("cancel the retro, don't email anyone", "cancel_event", "cancel_event"),
        ("don't forget to cancel the standup on friday", "cancel_event", "cancel_event"),
        ("Put together an email to Kate chasing the invoice. Don't send yet.", "send_mail", "send_mail"),
    ],
)
def test_a_change_whose_verb_the_request_negates_is_only_looked_at(
    request_text: str, action: str, read_as: str
) -> None:
    """ "dont cancel it, just asking": the change read is the one the request says not to make, so
    what it names is looked at (calendar, or mailbox for a mail), never drafted; a negation of
    another verb, or "don't forget to", leaves the change as read."""
    reading = Reading(action=action, confidence=0.99, runner_up="free_slots", sure=True)  # type: ignore[arg-type]
    assert read_as_negated(request_text, reading).action == read_as


async def test_a_reply_goes_on_the_answered_mail_s_thread(assistant: RuntimeResources) -> None:
    """A reply to a mail the request names is sent as one: "Re:" and its subject, In-Reply-To and
    References holding that mail's Message-ID, read from the mail the SMTP sink accepted."""
    data_dir = assistant.settings.data_dir
    tenant, endpoints = await _seeded(assistant, "verbs-thread")
    [answered] = await ImapMailbox(endpoints.imap).search(sender="maria.lopez@acme.example", text="freeze")
    thread = str(uuid.uuid4())
    request_text = "Answer Maria's budget freeze mail: understood, I'll brief my leads this week"
    draft = await _first_interrupt(await _chat(assistant, tenant, thread, request_text))
    assert f"Re: {answered.subject}" in str(draft["draft"]), draft
    done = await _chat(assistant, tenant, thread, Command(resume="yes send it"))
    assert done["reply"]["status"] == "success", done["reply"]
    [sent] = [e for e in sent_envelopes(data_dir) if e.get("mail_from") == endpoints.address]
    accepted = sorted((data_dir / "assistant" / "smtp" / "accepted").glob("*.eml"))[-1]
    message = email.message_from_bytes(accepted.read_bytes(), policy=email.policy.default)
    assert message["Subject"] == f"Re: {answered.subject}"
    assert answered.message_id and message["In-Reply-To"] == answered.message_id
    assert answered.message_id in str(message["References"]).split()
    assert "brief my leads" in str(message.get_body(preferencelist=("plain",)).get_content()).lower()
    assert sent["rcpt_tos"] == ["maria.lopez@acme.example"]


async def test_a_mail_step_that_says_nothing_of_its_own_tells_the_move_before_it(
    assistant: RuntimeResources,
) -> None:
    """ "... and tell Lena by email": the mail's words are the change of the step before (an empty
    body was drafted); both are done only as the servers show them: the retro read back from CalDAV
    at its new time, the mail as the SMTP server accepted it."""
    data_dir = assistant.settings.data_dir
    tenant, endpoints = await _seeded(assistant, "verbs-tell")
    thread = str(uuid.uuid4())
    request_text = "Shift the sprint retro to 2pm Friday and tell Lena by email"
    first = await _first_interrupt(await _chat(assistant, tenant, thread, request_text))
    assert first["tool"] == "reschedule_event", first
    done = await _chat(assistant, tenant, thread, Command(resume="yes to both"))
    assert done["interrupts"] == [] and done["reply"]["status"] == "success", done["reply"]
    # The weekly retro is at 16:00 on Fridays: one occurrence, and only it, is at 14:00 now.
    weeks = await CalDavCalendar(endpoints.caldav).events(NOW - timedelta(days=35), NOW + timedelta(days=35))
    moved = [e.start.astimezone(UTC) for e in weeks if e.summary == "Sprint retro" and e.start.hour == 14]
    assert [start.weekday() for start in moved] == [4], done["reply"]["text"]
    [sent] = [e for e in sent_envelopes(data_dir) if e.get("mail_from") == endpoints.address]
    assert sent["rcpt_tos"] == ["lena.novak@acme.example"]
    accepted = sorted((data_dir / "assistant" / "smtp" / "accepted").glob("*.eml"))[-1]
    message = email.message_from_bytes(accepted.read_bytes(), policy=email.policy.default)
    body = str(message.get_body(preferencelist=("plain",)).get_content()).lower()
    assert "sprint retro moves to 2pm friday" in body, body


async def test_a_mail_to_everyone_in_the_event_a_change_moves_goes_to_its_attendees(
    assistant: RuntimeResources,
) -> None:
    """ "... and ping everyone who's in it": the people of the event moved, as the calendar lists its
    attendees. The mail is sent once the move is read back, to Tom and Lena (the design review's), and
    the reply names them; none of its words reach the move (Thursday, at its own time)."""
    data_dir = assistant.settings.data_dir
    tenant, endpoints = await _seeded(assistant, "verbs-ping")
    thread = str(uuid.uuid4())
    request_text = "shift the design review to thursday same time and ping everyone who's in it"
    first = await _first_interrupt(await _chat(assistant, tenant, thread, request_text))
    assert first["tool"] == "reschedule_event", first
    assert "ping" not in json.dumps(first["draft"]).lower(), first
    done = await _chat(assistant, tenant, thread, Command(resume="yes go ahead"))
    reply = done["reply"]
    assert done["interrupts"] == [] and reply["status"] == "success", reply
    weeks = await CalDavCalendar(endpoints.caldav).events(NOW - timedelta(days=35), NOW + timedelta(days=35))
    moved = [
        e.start.astimezone(UTC) for e in weeks if e.summary == "Design review" and e.start.weekday() == 3
    ]
    assert [(start.hour, start.minute) for start in moved] == [(11, 0)], reply["text"]
    [sent] = [e for e in sent_envelopes(data_dir) if e.get("mail_from") == endpoints.address]
    attendees = ["lena.novak@acme.example", "tom.becker@acme.example"]
    assert sorted(sent["rcpt_tos"]) == attendees
    assert all(address in reply["text"] for address in attendees), reply["text"]
    accepted = sorted((data_dir / "assistant" / "smtp" / "accepted").glob("*.eml"))[-1]
    message = email.message_from_bytes(accepted.read_bytes(), policy=email.policy.default)
    body = str(message.get_body(preferencelist=("plain",)).get_content())
    assert f"{moved[0]:%-d %B %Y}, 11:00" in body, body


@pytest.mark.parametrize(
    ("text", "refused", "sure"),
    [
        ("let the people on the Northwind call know I'll be ten minutes late", True, True),
        ("update everyone in the budget sync that the numbers slipped", True, True),
        ("tell the attendees of the retro I can't make it", True, True),
        # A refusal needs people said as an event's: a day, a group or a bare "let ... know" is not that.
        ("what is the weather on friday", True, False),
        ("let the team know I'll be late", True, False),
        ("book a table for four on friday at 8pm", True, False),
        # An ambiguous message: a day or a time is evidence enough, as before.
        ("move my 3pm on thursday to 4:30", False, True),
        ("move it", False, False),
    ],
)
async def test_the_pack_is_sure_of_a_refused_message_only_for_an_events_people(
    text: str, refused: bool, sure: bool
) -> None:
    assert await sure_request(text, Settings(), MONDAY, refused=refused) is sure


@pytest.mark.parametrize(
    ("request_text", "recipients"),
    [
        (
            "email the people on the Northwind call that I'll be ten minutes late",
            ["david.okafor@acme.example"],
        ),
        (
            "mail the product review's attendees that the deck is ready",
            ["priya.shah@acme.example", "tom.becker@acme.example"],
        ),
        # The front door's intent head refuses these as status lines; the pack's second opinion takes
        # them for what they are (``sure_request(refused=True)``).
        (
            "let the people on the Northwind call know I'll be ten minutes late",
            ["david.okafor@acme.example"],
        ),
        (
            "tell everyone at the product review I'm stuck in traffic",
            ["priya.shah@acme.example", "tom.becker@acme.example"],
        ),
        # The retro invites no one: nothing is sent, and the reply says so.
        ("email everyone in the sprint retro that I'm bringing snacks", []),
    ],
)
async def test_a_mail_to_an_events_people_goes_to_its_attendees_or_is_said_not_done(
    assistant: RuntimeResources, request_text: str, recipients: list[str]
) -> None:
    data_dir = assistant.settings.data_dir
    tenant, endpoints = await _seeded(assistant, "verbs-attendees")
    thread = str(uuid.uuid4())
    reply = await _chat(assistant, tenant, thread, request_text)
    if recipients:
        assert reply["interrupts"], (reply["reply"], reply.get("solution"))
        draft = await _first_interrupt(reply)
        assert draft["tool"] == "send_email" and sorted(draft["draft"]["addresses"]) == recipients, draft
        reply = await _chat(assistant, tenant, thread, Command(resume="send it"))
        assert reply["reply"]["status"] == "success", reply["reply"]
        assert all(address in reply["reply"]["text"] for address in recipients)
    else:
        assert reply["interrupts"] == [] and reply["reply"]["status"] != "success", reply["reply"]
    mine = [
        sorted(e["rcpt_tos"]) for e in sent_envelopes(data_dir) if e.get("mail_from") == endpoints.address
    ]
    assert mine == ([recipients] if recipients else [])


async def test_a_move_to_a_bare_hour_moves_it_to_that_hour(assistant: RuntimeResources) -> None:
    """ "move the product review to 11": a bare hour is a clock time by the working-day rule (11:00),
    read back from the calendar; the clause after it with no tool ("invite Omar to it": no tool adds
    people to an event) is said not done, never sent as a mail."""
    data_dir = assistant.settings.data_dir
    tenant, endpoints = await _seeded(assistant, "verbs-bare")
    thread = str(uuid.uuid4())
    first = await _first_interrupt(
        await _chat(assistant, tenant, thread, "move the product review to 11 and invite Omar to it")
    )
    assert first["tool"] == "reschedule_event", first
    done = await _chat(assistant, tenant, thread, Command(resume="approve"))
    reply = done["reply"]
    assert reply["status"] == "partial", reply
    assert "invite Omar to it" in reply["text"], reply["text"]
    weeks = await CalDavCalendar(endpoints.caldav).events(NOW - timedelta(days=35), NOW + timedelta(days=35))
    starts = [e.start.astimezone(UTC) for e in weeks if e.summary == "Product review"]
    assert sum(1 for start in starts if start.hour == 11) == 1, reply["text"]
    assert [e for e in sent_envelopes(data_dir) if e.get("mail_from") == endpoints.address] == []


async def test_a_clause_joined_by_and_divides_only_where_it_opens_with_a_verb() -> None:
    """A clause opens a step when it opens with a verb: one the pack's or the verb head's training
    requests open with ("ping", "notify", "scrap", "text"), or one WordNet reads as a verb more than
    as a noun ("notarize"); nouns ("cake"), names (a capitalised word not followed by what a verb acts
    on: "Mark on Wednesday", "Lena to the review") and a first part that asks nothing alone ("book a
    coffee and chat ...") do not. A verb capitalised is still a verb ("and Email the team")."""
    reader = action_reader(Settings())
    read = {
        text: [(step.text, step.reading.action, step.unread) for step in await request_steps(text, reader)]
        for text in (
            "shift the design review to thursday same time and ping everyone who's in it",
            "cancel the budget sync and notify the team",
            "cancel the budget sync and notarize the minutes",
            "cancel the retro and Email the team",
            "cancel the budget sync and text Omar",
            "book coffee and cake with Lena on friday at 3",
            "book a coffee and chat with Omar on Friday at 10",
            "Tell Priya and Tom that the demo is cancelled",
            "Set up a 1-hour kickoff with Emma and Mark on Wednesday afternoon",
            "invite Tom and Lena to the design review",
            "book a call with Omar at 3 and send Hana the notes",
        )
    }
    assert read == {
        "shift the design review to thursday same time and ping everyone who's in it": [
            ("shift the design review to thursday same time", "reschedule", False),
            ("ping everyone who's in it", "send_mail", False),
        ],
        "cancel the budget sync and notify the team": [
            ("cancel the budget sync", "cancel_event", False),
            ("notify the team", "send_mail", False),
        ],
        "cancel the budget sync and notarize the minutes": [
            ("cancel the budget sync", "cancel_event", False),
            ("notarize the minutes", "unsupported", True),
        ],
        "cancel the retro and Email the team": [
            ("cancel the retro", "cancel_event", False),
            ("Email the team", "send_mail", False),
        ],
        # Texting is no tool's (the assistant sends email): a step of its own, said not done.
        "cancel the budget sync and text Omar": [
            ("cancel the budget sync", "cancel_event", False),
            ("text Omar", "unsupported", False),
        ],
        "book coffee and cake with Lena on friday at 3": [],
        "book a coffee and chat with Omar on Friday at 10": [],
        "Tell Priya and Tom that the demo is cancelled": [],
        "Set up a 1-hour kickoff with Emma and Mark on Wednesday afternoon": [],
        "invite Tom and Lena to the design review": [],
        "book a call with Omar at 3 and send Hana the notes": [
            ("book a call with Omar at 3", "schedule", False),
            ("send Hana the notes", "send_mail", False),
        ],
    }


async def test_a_contacts_name_that_is_also_a_verb_opens_no_step() -> None:
    """Written in lower case, a name is told from a verb by the user's contacts: "mark" opens an
    example request ("Mark every email as read"), but with a contact named Mark it is the person."""
    reader = action_reader(Settings())
    text = "invite emma and mark to a planning session on friday at 10"
    assert [step.text for step in await request_steps(text, reader, frozenset({"emma", "mark"}))] == []
    assert len(await request_steps(text, reader)) == 2


def test_only_imperatives_open_steps() -> None:
    """The words a step may open with are verbs used as imperatives, not the first words of questions,
    possessives or adverbs the example requests open with."""
    assert {"what", "do", "have", "is", "emma's", "hypothetically,", "would", "could"}.isdisjoint(
        verb_openings()
    )
    assert {"scrap", "text", "ping", "pencil", "bump", "cancel", "email"} <= verb_openings()
    assert imperative_verb("text her the address") == "text"
    assert imperative_verb("Do I have anything on Monday?") is None
    assert imperative_verb("Could the planning happen on Wednesday instead") is None


async def test_a_draft_takes_added_words_and_a_new_recipient_and_an_edit_it_cannot_apply_changes_nothing(
    assistant: RuntimeResources,
) -> None:
    """ "add that ..." adds the sentence to the body (to its reader: "he should" is "you should");
    "not Ben - make it to Noah instead" replaces the recipient; an edit nothing can apply leaves the
    draft waiting as it was and says so, and the "ok send" after it sends that draft, never its own
    words, and never as success: the change it went without is named. What was sent is read from the
    SMTP server's accepted mail."""
    data_dir = assistant.settings.data_dir
    tenant, endpoints = await _seeded(assistant, "verbs-edit")
    thread = str(uuid.uuid4())
    await _first_interrupt(await _chat(assistant, tenant, thread, "write to Ben that the test rig is free"))
    added = await _first_interrupt(
        await _chat(assistant, tenant, thread, Command(resume="add that he should book it by Friday"))
    )
    assert "The test rig is free. You should book it by Friday." in added["draft"]["body"], added
    moved = await _first_interrupt(
        await _chat(assistant, tenant, thread, Command(resume="oh wait, not Ben - make it to Noah instead"))
    )
    assert moved["draft"]["addresses"] == ["noah.weber@acme.example"], moved
    kept = await _first_interrupt(
        await _chat(assistant, tenant, thread, Command(resume="make it sound warmer"))
    )
    assert kept["draft"] == moved["draft"] and "could not apply" in kept["question"], kept
    done = await _chat(assistant, tenant, thread, Command(resume="ok send"))
    # Sent as shown, and never reported as the mail the user asked for: the warmer wording was not
    # applied, so the answer is partial and says which change it went without.
    assert done["reply"]["status"] == "partial", done["reply"]
    assert "make it sound warmer" in done["reply"]["text"] and "not applied" in done["reply"]["text"]
    [sent] = [e for e in sent_envelopes(data_dir) if e.get("mail_from") == endpoints.address]
    assert sent["rcpt_tos"] == ["noah.weber@acme.example"]
    accepted = sorted((data_dir / "assistant" / "smtp" / "accepted").glob("*.eml"))[-1]
    message = email.message_from_bytes(accepted.read_bytes(), policy=email.policy.default)
    body = str(message.get_body(preferencelist=("plain",)).get_content())
    assert "You should book it by Friday." in body and "ok send" not in body.lower(), body


async def _events_named(endpoints: LocalEndpoints, summary: str) -> list[tuple[int, int, list[str]]]:
    """The (weekday, UTC start hour and minutes, attendees) of each event of that title within five
    weeks of ``NOW``, read from the CalDAV server."""
    events = await CalDavCalendar(endpoints.caldav).events(NOW - timedelta(days=35), NOW + timedelta(days=35))
    return sorted(
        (e.start.astimezone(UTC).weekday(), e.start.astimezone(UTC).hour * 60 + e.start.minute, e.attendees)
        for e in events
        if summary.lower() in e.summary.lower()
    )


async def test_an_event_draft_takes_a_new_time_and_people_and_runs_as_last_shown(
    assistant: RuntimeResources,
) -> None:
    """ "move it to 4pm instead" moves the draft event, "add Lucas too" adds him; "yes, and make it
    45 minutes" approves it with its new length. What was created is read back from the CalDAV
    server: at 16:00 for 45 minutes, with both invited, and only that one."""
    tenant, endpoints = await _seeded(assistant, "verbs-retime")
    thread = str(uuid.uuid4())
    first = await _first_interrupt(
        await _chat(assistant, tenant, thread, "Book a 30 min call with Sara Kim on Friday at 2pm")
    )
    assert first["tool"] == "create_event", first
    moved = await _first_interrupt(
        await _chat(assistant, tenant, thread, Command(resume="move it to 4pm instead"))
    )
    assert moved["draft"]["start_time"] == "16:00" and "could not apply" not in moved["question"], moved
    added = await _first_interrupt(await _chat(assistant, tenant, thread, Command(resume="add Lucas too")))
    assert added["draft"]["addresses"] == ["sara.kim@acme.example", "lucas.silva@acme.example"], added
    done = await _chat(assistant, tenant, thread, Command(resume="yes, and make it 45 minutes"))
    assert done["interrupts"] == [] and done["reply"]["status"] == "success", done["reply"]
    [event] = await _events_named(endpoints, "sara")
    assert event[1:] == (16 * 60, ["sara.kim@acme.example", "lucas.silva@acme.example"]), event
    created = done["reply"]["text"]
    assert "16:00-16:45" in created, created


async def test_a_previews_time_changed_in_its_own_terms_is_a_new_preview_and_runs_at_that_time(
    assistant: RuntimeResources,
) -> None:
    """A large invitation is a preview; "move it to 12-1 instead" revises it (never accepts the old
    one, never leaves it acceptable as if it carried the change), and "ok go" creates the event at
    12:00-13:00, read back from the calendar, and none at 11."""
    tenant, endpoints = await _seeded(assistant, "verbs-preview")
    thread = str(uuid.uuid4())
    first = await _chat(
        assistant, tenant, thread, "Invite the whole team to a town hall on Thursday from 11 to 12"
    )
    original = first["envelope"]["handoff"]["proposal"]
    assert original["tool"] == "create_event" and original["args"]["start_time"] in ("11:00", "11am"), (
        original
    )
    revised = await _chat(assistant, tenant, thread, "move it to 12-1 instead")
    proposal = revised["envelope"]["handoff"]["proposal"]
    assert proposal["proposal_id"] != original["proposal_id"], (
        revised["routing"],
        revised["envelope"].get("notes"),
        revised["reply"],
    )
    assert (proposal["args"]["start_time"], proposal["args"]["duration_minutes"]) == ("12:00", 60), proposal
    book = ProposalBook(assistant.database.pool)
    assert [p.status for p in await book.list(tenant, thread_id=thread)] == ["pending", "revised"]
    done = await _chat(assistant, tenant, thread, "ok go")
    assert done["reply"]["status"] == "success", done["reply"]
    [event] = await _events_named(endpoints, "town hall")
    assert event[1] == 12 * 60 and len(event[2]) > 10, event


async def test_a_preview_accepted_after_a_change_it_could_not_take_is_never_reported_as_carrying_it(
    assistant: RuntimeResources,
) -> None:
    """ "make it more festive" names no change the invitation can take: the preview is shown again as
    it was, saying so (the old one answered, never left to be accepted as if changed); accepted, the
    event is created as shown, read back from the calendar, and the answer is partial, naming the
    change it went without."""
    tenant, endpoints = await _seeded(assistant, "verbs-preview-kept")
    thread = str(uuid.uuid4())
    first = await _chat(
        assistant, tenant, thread, "Invite the whole team to a town hall on Thursday from 11 to 12"
    )
    original = first["envelope"]["handoff"]["proposal"]
    again = await _chat(assistant, tenant, thread, "make it more festive")
    proposal = again["envelope"]["handoff"]["proposal"]
    assert proposal["proposal_id"] != original["proposal_id"] and proposal["args"] == original["args"], again
    assert "could not apply" in again["reply"]["text"], again["reply"]
    done = await _chat(assistant, tenant, thread, "ok go")
    assert done["reply"]["status"] == "partial", done["reply"]
    assert "make it more festive" in done["reply"]["text"], done["reply"]
    [event] = await _events_named(endpoints, "town hall")
    assert event[1] == 11 * 60, event
