"""Answers to a draft are approvals only when read as approvals with confidence (issue 40): an answer
that goes on after its "yes" to hedge, defer, set a condition or take it back approves nothing; a
withdrawal at its end cancels; a hedge leaves the draft waiting with nothing done. A request's clause
asking to see the change first is no part of what it asks. Checked by reading and against the local
servers."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

import pytest
from langgraph.types import Command

from master_agent.capabilities import install_tenant
from master_agent.domains.assistant.demo import sent_envelopes
from master_agent.domains.assistant.demo_data import start_demo_servers
from master_agent.domains.assistant.local_servers import LocalEndpoints, LocalServers
from master_agent.domains.assistant.review_first import without_review_clauses
from master_agent.domains.assistant.tools import event_kind, goal_entities
from master_agent.runtime import RuntimeResources
from master_agent.runtime.answer_head import answer_text_read, read_answer
from master_agent.runtime.factory import chat_turn
from master_agent.runtime.proposals import approves, read_feedback

NOW = datetime(2026, 12, 7, 9, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "feedback"),
    [
        # Nothing but an approval, with the verb and words pointing at what is shown.
        ("alright, send it off to them", "accept"),
        ("yep, go ahead with all of them now", "accept"),
        ("ok then, fire it off please", "accept"),
        # More said after the yes: a deferral, a condition, a hedge, a new value: not an approval.
        ("yes, once Priya confirms", None),
        ("ok but send it on monday", None),
        ("sure, after the board call", None),
        ("go ahead if the room is free", None),
        ("yep send it to Omar", None),
        # A refusal that says "rather" is no change.
        ("I'd rather not, thanks", None),
    ],
)
def test_the_rules_approve_only_an_answer_that_says_nothing_but_yes(text: str, feedback: str | None) -> None:
    assert read_feedback(text) == feedback


@pytest.mark.parametrize(
    ("text", "feedback"),
    [
        # Taken back at the end: a cancel, whatever opened it.
        ("yep... nope, don't", "cancel"),
        ("ok - hmm, no. leave it", "cancel"),
        # A hedge or a deferral after a yes, or a question back: nothing.
        ("sure, but after the standup", None),
        ("fine, let me ask Omar first", None),
        ("who else gets it?", None),
        # Each clause an approval: an approval.
        ("brilliant, fire away", "accept"),
    ],
)
async def test_an_answer_taken_back_cancels_and_a_hedged_one_approves_nothing(
    text: str, feedback: str | None
) -> None:
    assert await read_answer(text) == feedback


def test_a_go_ahead_that_says_more_completes_no_change() -> None:
    assert approves("Thursday at 4, lock it in")
    assert not approves("lock it in once Omar replies")
    assert not approves("Thursday at 4, go ahead after lunch")


def test_emoji_are_read_by_their_names() -> None:
    assert answer_text_read("👍🏾  send") == "thumbs up sign send"


@pytest.mark.parametrize(
    ("text", "read"),
    [
        ("book a call with Omar on friday at 3, run it by me first", "book a call with Omar on friday at 3"),
        ("email Ben that the demo moved. do not send it until I say so", "email Ben that the demo moved"),
        ("push the retro to 5pm but let me look at it before you change it", "push the retro to 5pm"),
        (
            "set up lunch with Sara thursday 12 to 1, don't apply it yet",
            "set up lunch with Sara thursday 12 to 1",
        ),
        # What the request is about, and asking someone else, stay.
        ("email Ben that the servers won't be ready until friday", None),
        ("ask Priya if she can show me the numbers before friday", None),
        ("check if I'm free first, then book lunch with Ben", None),
        ("let me check with Omar first", None),
    ],
)
def test_a_clause_asking_to_see_the_change_first_is_no_part_of_the_request(
    text: str, read: str | None
) -> None:
    assert without_review_clauses(text) == (read or text)


# -- against the local servers ----------------------------------------------------------------------


@pytest.fixture(scope="module")
async def assistant(resources: RuntimeResources) -> AsyncIterator[RuntimeResources]:
    yield resources
    LocalServers(resources.settings.data_dir).stop()


async def _seeded(resources: RuntimeResources, prefix: str) -> tuple[str, LocalEndpoints]:
    tenant = f"{prefix}-{uuid.uuid4().hex[:8]}"
    await install_tenant(resources.database.pool, resources.settings, "assistant", tenant)
    return tenant, await start_demo_servers(resources.settings.data_dir, tenant, NOW)


def _sent_by(resources: RuntimeResources, endpoints: LocalEndpoints) -> list[dict[str, Any]]:
    return [e for e in sent_envelopes(resources.settings.data_dir) if e.get("mail_from") == endpoints.address]


async def test_a_hedged_answer_leaves_the_draft_waiting_and_a_later_yes_sends_it(
    assistant: RuntimeResources,
) -> None:
    tenant, endpoints = await _seeded(assistant, "answers-hedge")
    thread = str(uuid.uuid4())
    first = await chat_turn(
        assistant, tenant, thread, "email Omar that the expense reports are approved, let me read it first"
    )
    [draft] = first["interrupts"]
    assert draft["tool"] == "send_email", draft
    # The clause asking to read it first is not in what the mail says.
    assert "read it first" not in str(draft["draft"]).lower(), draft["draft"]
    held = await chat_turn(assistant, tenant, thread, Command(resume="sure, once the quarter closes"))
    [again] = held["interrupts"]
    assert again["tool"] == "send_email" and "Nothing was done" in again["question"], again
    assert again.get("not_applied") is None, again
    assert _sent_by(assistant, endpoints) == []
    done = await chat_turn(assistant, tenant, thread, Command(resume="that's fine, send it"))
    assert done["interrupts"] == [], done["interrupts"]
    assert done["reply"]["status"] == "success", done["reply"]
    [sent] = _sent_by(assistant, endpoints)
    assert [address.lower() for address in sent["rcpt_tos"]] == ["omar.haddad@acme.example"]


async def test_a_yes_taken_back_books_nothing(assistant: RuntimeResources) -> None:
    tenant, endpoints = await _seeded(assistant, "answers-takeback")
    thread = str(uuid.uuid4())
    first = await chat_turn(assistant, tenant, thread, "book 30 minutes with Ben on 2026-12-09 at 4pm")
    [draft] = first["interrupts"]
    assert draft["tool"] == "create_event", draft
    done = await chat_turn(assistant, tenant, thread, Command(resume="ok... hmm, no. scrap it"))
    assert done["interrupts"] == [], done["interrupts"]
    assert done["reply"]["status"] != "success", done["reply"]
    assert "Created:" not in done["reply"]["text"]
    assert _sent_by(assistant, endpoints) == []


@pytest.mark.parametrize(
    ("text", "start", "minutes"),
    [
        ("put a planning slot on wednesday 3 to 4 with Omar", "15:00", 60),
        ("book lunch with Sara friday 12-1:30", "12:00", 90),
        # After "at", the clock time said: ten to eleven.
        ("book a call with Omar at 10 to 11 on friday", "10:50", None),
    ],
)
def test_two_hours_joined_in_a_booking_are_its_span(text: str, start: str, minutes: int | None) -> None:
    found = goal_entities(text, NOW.date(), "schedule")
    assert (found.get("start_time"), found.get("duration_minutes")) == (start, minutes)


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("set up an invite: quarterly planning on friday at 10 with Omar", "quarterly planning"),
        ("prepare an invitation for a 45-minute retro with Ben on friday", "retro"),
        ("draft an invite for 30 min with Ben on friday", "invite"),
    ],
)
def test_an_invite_names_the_kind_of_event_it_holds(text: str, kind: str) -> None:
    assert event_kind(text) == kind
