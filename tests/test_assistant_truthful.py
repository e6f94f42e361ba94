"""The assistant does what it says, by class of request (issue 40): questions about an event's people
answered from the calendar's attendee list, a free slot counted from an event's end, a cancel followed by
a booking of nothing but a new time moving the event, names whose surname is no contact's asked about,
answers to a draft read by meaning, and a report of a change approved with the change it reports; each
change checked against the local servers afterwards."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from langgraph.types import Command

from master_agent.capabilities import install_tenant
from master_agent.domains.assistant import replacement_move
from master_agent.domains.assistant.demo import sent_envelopes
from master_agent.domains.assistant.demo_data import CONTACTS, TEAM, start_demo_servers
from master_agent.domains.assistant.local_servers import LocalEndpoints, LocalServers
from master_agent.domains.assistant.people import attendees_asked
from master_agent.domains.assistant.providers import CalDavCalendar, Contact, ProviderError
from master_agent.domains.assistant.requests import action_reader
from master_agent.domains.assistant.scheduling import resolve_time
from master_agent.domains.assistant.tools import event_after, goal_entities, people_of
from master_agent.runtime import RuntimeResources
from master_agent.runtime.answer_head import load_answer_head, read_answer
from master_agent.runtime.factory import chat_turn
from master_agent.runtime.proposals import read_feedback
from master_agent.settings import Settings
from tests.test_assistant_verbs import _tools

#: A Monday 09:00 UTC: the demo week is written relative to it.
NOW = datetime(2026, 12, 7, 9, 0, tzinfo=UTC)
MONDAY = NOW.date()
BOOK = [Contact(uid=c.uid, name=c.name, emails=[c.email], title=c.title) for c in CONTACTS]


@pytest.mark.parametrize(
    ("text", "event"),
    [
        ("who's on the budget sync invite?", "the budget sync"),
        ("which people are coming to the sprint retro", "the sprint retro"),
        ("could you tell me who is attending tuesday's product review?", "tuesday's product review"),
        ("who are the guests of the design review", "the design review"),
        ("whom did we invite to the weekly planning?", "the weekly planning"),
        # Sending to them, not asking who they are; asking about something else than people.
        ("mail everyone who's on the budget sync invite that it moves", None),
        ("which room is the retro in?", None),
        ("who is Lena?", None),
        ("who is on the team?", None),
    ],
)
def test_a_question_about_an_events_people_names_the_event(text: str, event: str | None) -> None:
    assert attendees_asked(text) == event


@pytest.mark.parametrize(
    ("text", "anchor"),
    [
        ("put 30 minutes with Ben in right after the budget sync", "the budget sync"),
        ("find an hour for me after thursday's 1:1 with Maria", "thursday's 1:1"),
        ("when am I next free after the design review tomorrow?", "the design review"),
        # A day or a clock time after "after" is no event.
        ("book a call with Omar after 4pm on friday", None),
        ("any free time after wednesday?", None),
        ("set up a chat after lunch on thursday", None),
    ],
)
def test_the_event_a_time_comes_after_is_read_apart_from_days_and_times(
    text: str, anchor: str | None
) -> None:
    assert event_after(text, MONDAY) == anchor


def test_a_booking_after_an_event_states_no_clock_time_and_is_not_asked_for_one() -> None:
    found = goal_entities(
        "grab half an hour with Ben for release notes straight after friday's standup", MONDAY, "schedule"
    )
    assert found["start_after"] == "friday's standup"
    assert found["on_day"] == (MONDAY + timedelta(days=4)).isoformat()
    assert "start_time" not in found and "day" not in found
    assert "release notes" in found["summary"]


@pytest.mark.parametrize(
    ("text", "hour"),
    [
        # "one" is a pronoun beside a time said as one.
        ("set one up on thursday at 10 instead", 10),
        ("let's have one on friday at 9", 9),
        ("meet at one", 13),
    ],
)
def test_a_number_word_is_a_time_only_when_nothing_else_is_said_as_one(text: str, hour: int) -> None:
    at = resolve_time(text)
    assert at is not None and at.hour == hour


@pytest.mark.parametrize(
    ("text", "who", "unknown"),
    [
        # A contact's first name with a surname no such contact has is someone else: asked about.
        ("invite hana and tom kelly to the kickoff", "Hana Sato", ["tom kelly"]),
        ("set up coffee with Priya Anand on friday", None, ["Priya Anand"]),
        # Surnames alone, in lower case, where a person goes.
        ("email becker and kim the slides", "Tom Becker and Sara Kim", []),
        ("lunch with silva on thursday", "Lucas Silva", []),
        # A first name before an ordinary word is the contact.
        ("tell omar tomorrow works", "Omar Haddad", []),
        # Chat shorthand after a first name is no surname.
        ("tell ben fyi the build is green", "Ben Adler", []),
    ],
)
def test_people_are_read_in_lower_case_and_a_stranger_sharing_a_first_name_is_not_guessed(
    text: str, who: str | None, unknown: list[str]
) -> None:
    assert people_of(text, BOOK, owners=False) == (who, unknown)


@pytest.mark.parametrize(
    ("text", "feedback"),
    [
        ("scrap that, make it Lena instead", "revise"),
        ("no, cancel it - Friday at 2 instead", "revise"),
        ("scrap that", "cancel"),
        ("no, cancel it instead", "cancel"),
    ],
)
def test_a_draft_withdrawn_for_a_change_is_changed_not_cancelled(text: str, feedback: str) -> None:
    assert read_feedback(text) == feedback


@pytest.mark.parametrize(
    ("text", "feedback"),
    [
        # A yes that goes on in words of its own is read by the head alone: this one is just below the
        # floor of the retrained head (0.966 < 0.97), so the draft waits for a plainer answer.
        ("yes, that's what I had in mind", None),
        ("happy with it, send it off", "accept"),
        ("cool cool, send", "accept"),
        ("spot on, book it", "accept"),
        ("actually, don't bother", "cancel"),
        # A question about what is shown neither approves nor withdraws it.
        ("which room is it in?", None),
        ("who else is on it?", None),
    ],
)
async def test_answers_no_rule_reads_are_read_by_meaning(text: str, feedback: str | None) -> None:
    assert await read_answer(text) == feedback


@pytest.mark.parametrize(
    ("text", "event_words", "move_to"),
    [
        (
            "the budget sync doesn't work for me, cancel it and put it in for wednesday at 10 instead",
            "the budget sync doesn't work for me",
            "put it in for wednesday at 10 instead",
        ),
        (
            "drop friday's retro and book thursday 3pm instead",
            "drop friday's retro",
            "book thursday 3pm instead",
        ),
    ],
)
async def test_a_cancel_then_a_booking_of_only_a_new_time_is_a_move(
    text: str, event_words: str, move_to: str
) -> None:
    found = await replacement_move(text, action_reader(Settings()), MONDAY)
    assert found is not None
    assert found["event_words"].startswith(event_words)
    assert found["move_to"] == move_to
    assert found["action"] == {"requested": "move an event", "done": False, "why": found["action"]["why"]}


@pytest.mark.parametrize(
    "text",
    [
        # A booking that names its own people or kind is an event of its own.
        "cancel the retro and book a lunch with Ben on friday at 1 instead",
        "cancel the retro and email the team",
        "look at my calendar and book friday at 3",
    ],
)
async def test_a_booking_of_its_own_after_a_cancel_is_no_move(text: str) -> None:
    assert await replacement_move(text, action_reader(Settings()), MONDAY) is None


# -- against the local servers ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    directory = tmp_path_factory.mktemp("assistant-truthful")
    yield directory
    LocalServers(directory).stop()


async def test_an_events_people_are_read_from_the_calendar_with_their_names(data_dir: Path) -> None:
    tools = _tools(data_dir, "truthful-attendees")
    found = await tools["find_attendees"].ainvoke({"attendees_of": "the product review"})
    assert sorted(found["addresses"]) == ["priya.shah@acme.example", "tom.becker@acme.example"]
    assert sorted(found["attendees"]) == [
        "Priya Shah <priya.shah@acme.example>",
        "Tom Becker <tom.becker@acme.example>",
    ]
    with pytest.raises(ProviderError):
        # The retro invites no one: said so, never an empty list passed off as its people.
        await tools["find_attendees"].ainvoke({"attendees_of": "the sprint retro"})


async def test_the_first_free_slot_after_an_event_is_counted_from_its_end_on_the_server(
    data_dir: Path,
) -> None:
    tools = _tools(data_dir, "truthful-after")
    wednesday = MONDAY + timedelta(days=2)
    # The design review ends at 12:00; nothing else that Wednesday afternoon.
    found = await tools["first_free_after"].ainvoke(
        {"start_after": "the design review", "duration_minutes": 45, "on_day": wednesday.isoformat()}
    )
    assert (found["day"], found["start_time"]) == (wednesday.isoformat(), "12:00")
    # Tuesday's product review ends at 11:00; the Northwind call (13:00-14:30) and the budget sync
    # (14:00-15:00) leave two free hours from 11:00, and 15:00 onwards after them.
    tuesday = MONDAY + timedelta(days=1)
    slots = await tools["find_free_slots"].ainvoke(
        {"within": tuesday.isoformat(), "duration_minutes": 60, "after_event": "the product review"}
    )
    assert [(s["start"], s["end"]) for s in slots["free_slots"]] == [("11:00", "13:00"), ("15:00", "17:00")]
    assert "from 11:00" in slots["answer"]
    # A three-hour block after it does not fit before the end of the working day on Friday's retro.
    with pytest.raises(ProviderError):
        await tools["first_free_after"].ainvoke(
            {
                "start_after": "the sprint retro",
                "duration_minutes": 180,
                "on_day": (MONDAY + timedelta(days=4)).isoformat(),
            }
        )


@pytest.fixture(scope="module")
async def assistant(resources: RuntimeResources) -> AsyncIterator[RuntimeResources]:
    yield resources
    LocalServers(resources.settings.data_dir).stop()


async def _seeded(resources: RuntimeResources, prefix: str) -> tuple[str, LocalEndpoints]:
    tenant = f"{prefix}-{uuid.uuid4().hex[:8]}"
    await install_tenant(resources.database.pool, resources.settings, "assistant", tenant)
    return tenant, await start_demo_servers(resources.settings.data_dir, tenant, NOW)


async def _chat(
    resources: RuntimeResources, tenant: str, thread: str, message: str | Command[Any]
) -> dict[str, Any]:
    return await chat_turn(resources, tenant, thread, message)


async def _occurrences(endpoints: LocalEndpoints, summary: str, day: date) -> list[datetime]:
    start = datetime.combine(day, datetime.min.time(), tzinfo=UTC)
    events = await CalDavCalendar(endpoints.caldav).events(start, start + timedelta(days=1))
    return [e.start.astimezone(UTC) for e in events if e.summary == summary]


async def test_who_is_invited_is_answered_from_the_calendar_and_nothing_is_sent(
    assistant: RuntimeResources,
) -> None:
    data_dir = assistant.settings.data_dir
    tenant, endpoints = await _seeded(assistant, "truthful-who")
    done = await _chat(
        assistant, tenant, str(uuid.uuid4()), "who's on the budget sync invite? I'll ping them myself"
    )
    assert done["interrupts"] == []
    reply = done["reply"]
    assert reply["status"] == "success", reply
    assert "Maria Lopez <maria.lopez@acme.example>" in reply["text"], reply["text"]
    assert not [e for e in sent_envelopes(data_dir) if e.get("mail_from") == endpoints.address]


async def test_cancel_and_book_a_new_time_instead_moves_the_event_with_its_people(
    assistant: RuntimeResources,
) -> None:
    tenant, endpoints = await _seeded(assistant, "truthful-instead")
    thread = str(uuid.uuid4())
    thursday = MONDAY + timedelta(days=3)
    request = f"scrap the 1:1 with maria on {thursday.isoformat()} and set one up on 2026-12-11 at 10 instead"
    draft = (await _chat(assistant, tenant, thread, request))["interrupts"]
    assert [d["tool"] for d in draft] == ["reschedule_event"], draft
    done = await _chat(assistant, tenant, thread, Command(resume="sounds right, go"))
    assert done["reply"]["status"] == "success", done["reply"]
    assert "Moved: 1:1 with Maria" in done["reply"]["text"]
    assert await _occurrences(endpoints, "1:1 with Maria", thursday) == []
    friday = MONDAY + timedelta(days=4)
    [moved] = await _occurrences(endpoints, "1:1 with Maria", friday)
    assert (moved.hour, moved.minute) == (10, 0)
    events = await CalDavCalendar(endpoints.caldav).events(moved, moved + timedelta(minutes=1))
    assert [e.attendees for e in events if e.summary == "1:1 with Maria"] == [["maria.lopez@acme.example"]]


async def test_a_team_mail_reporting_a_cancel_goes_out_with_the_cancels_approval(
    assistant: RuntimeResources,
) -> None:
    """The cancel's draft says approving it approves the mail to the team; "that works" approves both,
    and the mail (fourteen people, past the mass-mail line) goes once the calendar no longer shows it."""
    data_dir = assistant.settings.data_dir
    tenant, endpoints = await _seeded(assistant, "truthful-team")
    thread = str(uuid.uuid4())
    friday = MONDAY + timedelta(days=4)
    [draft] = (
        await _chat(
            assistant,
            tenant,
            thread,
            f"call off the sprint retro on {friday.isoformat()} and let the team know",
        )
    )["interrupts"]
    assert draft["tool"] == "cancel_event" and draft["covers"], draft
    done = await _chat(assistant, tenant, thread, Command(resume="that works"))
    assert done["interrupts"] == [], done["interrupts"]
    assert done["reply"]["status"] == "success", done["reply"]
    assert await _occurrences(endpoints, "Sprint retro", friday) == []
    [sent] = [e for e in sent_envelopes(data_dir) if e.get("mail_from") == endpoints.address]
    assert sorted(sent["rcpt_tos"]) == sorted(c.email for c in TEAM)


async def test_a_stranger_sharing_a_contacts_first_name_is_asked_about_and_nothing_is_booked(
    assistant: RuntimeResources,
) -> None:
    tenant, endpoints = await _seeded(assistant, "truthful-stranger")
    asked = await _chat(
        assistant,
        tenant,
        str(uuid.uuid4()),
        "invite lena and tom kelly to a roadmap chat on 2026-12-10 at 4pm",
    )
    [question] = asked["interrupts"]
    assert "No one named 'tom kelly'" in question["question"], question
    assert await _occurrences(endpoints, "Roadmap chat with Lena Novak", MONDAY + timedelta(days=3)) == []


def test_the_shipped_answer_head_loads() -> None:
    # The answers read above rest on the committed head: without it every one would read None.
    head = load_answer_head()
    assert head is not None and {"accept", "cancel"} <= set(head.labels)
