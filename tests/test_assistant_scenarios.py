"""Seed 002's scenarios end to end: the assistant pack's master agent on the real runtime (offline
planner, Postgres checkpointer) against the real local mail, calendar and contacts servers."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from datetime import datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from langgraph.types import Command

from master_agent.capabilities import install_tenant
from master_agent.domains.assistant import DEMO_TENANT
from master_agent.domains.assistant.demo import chat_turn, sent_envelopes
from master_agent.domains.assistant.demo_data import TEAM
from master_agent.domains.assistant.local_servers import LocalEndpoints, LocalServers
from master_agent.domains.assistant.providers import CalDavCalendar
from master_agent.domains.assistant.scheduling import resolve_day
from master_agent.domains.assistant.tools import ACCOUNTS_ENV, AccountsFile, accounts_on
from master_agent.runtime import RuntimeResources
from master_agent.runtime.proposals import ProposalBook
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

    done = await _chat(assistant, thread, Command(resume="approve"))
    assert done["interrupts"] == []
    assert done["reply"]["status"] == "success", done["reply"]
    assert "Created: Meeting with David" in done["reply"]["text"]
    endpoints, _ = LocalServers(assistant.settings.data_dir).ensure_running(DEMO_TENANT)
    day = datetime.fromordinal(tomorrow).replace(tzinfo=ZoneInfo("UTC"))
    events = await CalDavCalendar(endpoints.caldav).events(day, day.replace(hour=23))
    [meeting] = [e for e in events if e.summary == "Meeting with David"]
    assert meeting.attendees == ["david.okafor@acme.example"]
    assert meeting.start.astimezone(ZoneInfo("UTC")).hour == 14


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


async def test_a_stopped_calendar_server_ends_in_api_down_with_what_to_do(
    assistant: RuntimeResources, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A calendar server that was running and was stopped: its address answers nothing now.
    stopped = LocalServers(tmp_path / "stopped")
    gone, _ = stopped.ensure_running(DEMO_TENANT)
    stopped.stop(("dav",))
    live, _ = LocalServers(assistant.settings.data_dir).ensure_running(DEMO_TENANT)
    monkeypatch.setenv("ASSISTANT_TEST_SECRET", live.caldav.password.get_secret_value())
    monkeypatch.setenv(
        ACCOUNTS_ENV,
        str(
            _accounts_file(
                tmp_path / "accounts.json",
                "acme-calendar-down",
                live,
                "ASSISTANT_TEST_SECRET",
                {"caldav": {"url": gone.caldav.url}},
            )
        ),
    )
    await install_tenant(assistant.database.pool, assistant.settings, "assistant", "acme-calendar-down")
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
    assert unknown.status == "partial"
    assert unknown.solution is not None and unknown.solution.handoff is not None
    assert unknown.solution.handoff["kind"] == "question"
    assert "Zebedee" in unknown.solution.handoff["question"]
    assert unknown.solution.termination["reason"] == "ask_user"


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
