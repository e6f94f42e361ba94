"""The assistant's tools, bound to a tenant, against the real local servers."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import date, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from langchain_core.tools import BaseTool

from master_agent.capabilities.tools.context import ToolContext
from master_agent.domains.assistant.demo_data import TEAM
from master_agent.domains.assistant.local_servers import LocalServers
from master_agent.domains.assistant.providers import ProviderError
from master_agent.domains.assistant.scheduling import resolve_day
from master_agent.domains.assistant.tools import (
    ACCOUNTS_ENV,
    AccountsFile,
    accounts_on,
    build_tools,
    goal_entities,
)
from master_agent.errors import InputError, ToolInputError
from master_agent.runtime.proposals import call_risk
from master_agent.settings import Settings

TENANT = "demo-assistant"


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    directory = tmp_path_factory.mktemp("assistant-tools")
    yield directory
    LocalServers(directory).stop()


def _tools(data_dir: Path, tenant: str = TENANT) -> dict[str, BaseTool]:
    # The assistant's tools use no database: only the tenant and the data directory of the context.
    context = ToolContext(
        pool=None, database_uri="", tenant_id=tenant, data_schema=None, settings=Settings(data_dir=data_dir)
    )  # type: ignore[arg-type]
    return build_tools(context)


def test_each_tool_declares_its_risk(data_dir: Path) -> None:
    risks = {name: tool.metadata["risk"] for name, tool in _tools(data_dir).items() if tool.metadata}
    assert risks == {
        "find_free_slots": "low",
        "calendar_events": "low",
        "find_contacts": "low",
        "find_correspondents": "low",
        "search_email": "low",
        "find_event": "low",
        "find_attendees": "low",
        "first_free_after": "low",
        "draft_email": "low",
        "create_event": "medium",
        "reschedule_event": "medium",
        "cancel_event": "medium",
        "send_email": "medium",
    }
    # More than ten people affected raises a write to high (the runtime's rule reads the tool's own).
    tools = _tools(data_dir)
    many = {"addresses": [f"p{i}@acme.example" for i in range(11)], "subject": "s", "body": "b"}
    assert call_risk(tools["send_email"], many) == "high"
    assert call_risk(tools["send_email"], {**many, "addresses": many["addresses"][:10]}) == "medium"
    assert call_risk(tools["create_event"], {"addresses": []}, override="low") == "low"


async def test_free_slots_next_tuesday_come_from_the_calendar(data_dir: Path) -> None:
    found = await _tools(data_dir)["find_free_slots"].ainvoke(
        {"within": "next Tuesday", "duration_minutes": 60}
    )
    assert found["day"] == resolve_day("next tuesday", datetime.now(ZoneInfo("UTC")).date()).isoformat()  # type: ignore[union-attr]
    assert found["free_slots"] == [
        {"day": found["day"], "start": "11:00", "end": "13:00", "minutes": 120},
        {"day": found["day"], "start": "15:00", "end": "17:00", "minutes": 120},
    ]
    assert found["conflicts"] == [["Customer call: Northwind", "Budget sync"]]
    with pytest.raises(ToolInputError, match="names no day"):
        await _tools(data_dir)["find_free_slots"].ainvoke({"within": "sometime", "duration_minutes": 60})


async def test_contacts_mail_and_the_calendar_are_read(data_dir: Path) -> None:
    tools = _tools(data_dir)
    davids = await tools["find_contacts"].ainvoke({"name": "David"})
    assert davids["matches"] == 2
    # Two people answer to the name: no addresses, a choice for the user instead.
    assert "addresses" not in davids
    assert davids["choices"]["field"] == "addresses"
    assert len(davids["choices"]["options"]) == 2
    team = await tools["find_contacts"].ainvoke({"name": "team"})
    assert sorted(team["addresses"]) == sorted(c.email for c in TEAM)
    with pytest.raises(ProviderError) as missing:
        await tools["find_contacts"].ainvoke({"name": "Zebedee"})
    assert missing.value.error_type == "not_found"
    mail = await tools["search_email"].ainvoke({"sender": "John", "about": "Atlas"})
    assert [m["subject"] for m in mail["messages"]][-1] == "Project Atlas kickoff"
    assert mail["matches"] == 3
    assert mail["mail_summary"].startswith("3 email(s) from John Miller about Atlas:")
    week = await tools["calendar_events"].ainvoke({"period": "next week"})
    assert len(week["events"]) == 12  # five standups and seven weekly meetings
    assert week["conflicts"] == [["Customer call: Northwind", "Budget sync"]]


async def test_an_event_is_created_and_mail_is_sent(data_dir: Path) -> None:
    tools = _tools(data_dir)
    created = await tools["create_event"].ainvoke(
        {
            "summary": "Sync with David",
            "day": "tomorrow",
            "start_time": "2pm",
            "addresses": ["david.chen@acme.example"],
        }
    )
    tomorrow = (datetime.now(ZoneInfo("UTC")).date() + timedelta(days=1)).isoformat()
    assert created["event"]["day"] == tomorrow
    assert created["event"]["start"] == "14:00"
    listed = await tools["calendar_events"].ainvoke({"period": "tomorrow"})
    assert any(
        e["summary"] == "Sync with David" and e["attendees"] == ["david.chen@acme.example"]
        for e in listed["events"]
    )
    sent = await tools["send_email"].ainvoke(
        {
            "addresses": [c.email for c in TEAM],
            "subject": "Budget freeze",
            "body": "Spending is frozen from next month.",
        }
    )
    assert sent["recipients"] == 14


async def test_a_configured_tenant_uses_its_accounts_file(
    data_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The local servers stand in for a user's own: the accounts file points at them.
    local = LocalServers(data_dir)
    endpoints, _ = local.ensure_running(TENANT)
    entry = accounts_on(
        endpoints,
        username=TENANT,
        password_env="TEST_ASSISTANT_SECRET",
        address="exec@acme.example",
        timezone="Europe/Berlin",
    )
    accounts = tmp_path / "accounts.json"
    accounts.write_text(AccountsFile(tenants={"acme-exec": entry}).model_dump_json())
    monkeypatch.setenv(ACCOUNTS_ENV, str(accounts))
    with pytest.raises(InputError, match="TEST_ASSISTANT_SECRET is not set"):
        await _tools(data_dir, "acme-exec")["find_contacts"].ainvoke({"name": "David"})
    monkeypatch.setenv("TEST_ASSISTANT_SECRET", endpoints.caldav.password.get_secret_value())
    tools = _tools(data_dir, "acme-exec")
    assert (await tools["find_contacts"].ainvoke({"name": "David"}))["matches"] == 2
    slots = await tools["find_free_slots"].ainvoke({"within": "next Tuesday", "duration_minutes": 60})
    assert slots["timezone"] == "Europe/Berlin"
    # The demo week is in UTC; the working day is Berlin's (UTC+1 in winter), so the meetings sit an hour
    # later in it.
    assert [(s["start"], s["end"]) for s in slots["free_slots"]] == [
        ("09:00", "10:30"),
        ("12:00", "14:00"),
        ("16:00", "17:00"),
    ]
    # No local account was made for the configured tenant.
    assert "acme-exec" not in (local.root / "accounts.json").read_text()


def test_goal_entities_are_what_the_tools_take() -> None:
    monday = date(2026, 11, 23)
    assert goal_entities("What times am I free next Tuesday for 60 minutes?", monday) == {
        "day": "2026-12-01",
        "period": "2026-12-01",
        "duration_minutes": 60,
    }
    assert goal_entities("Schedule a meeting with David tomorrow at 2pm", monday) == {
        "day": "2026-11-24",
        "period": "2026-11-24",
        "start_time": "14:00",
        "name": "David",
        "summary": "Meeting with David",
    }
    assert goal_entities("Schedule board meeting next month", monday) == {
        "period": "next month",
        "summary": "Board meeting",
        "addresses": [],
    }
    assert goal_entities("Email the whole team about the budget freeze", monday) == {
        "about": "budget freeze",
        "name": "team",
    }
    assert goal_entities("Find emails from John about the project and summarise them", monday) == {
        "sender": "John",
        "about": "project",
    }
    assert goal_entities("Book a call with the CFO on Friday at 10am", monday)["name"] == "CFO"


def test_people_senders_and_messages_are_read_from_the_requests_words() -> None:
    """A name right after the request's first word is read whole; a person a mail question names
    without "from" is its sender; with no "saying" or "that", what follows the recipient is the
    message; a polite question's question mark is not the message's."""
    monday = date(2026, 12, 7)
    assert goal_entities("What's Omar Haddad's phone number?", monday, "contact") == {"name": "Omar Haddad"}
    assert goal_entities("What did David Okafor say about Northwind?", monday, "read_mail") == {
        "sender": "David Okafor",
        "about": "Northwind",
    }
    drafted = goal_entities("Draft a mail to Mia Rossi thanking her for the slides", monday, "send_mail")
    assert (drafted["name"], drafted["message"]) == ("Mia Rossi", "thank you for the slides")
    told = goal_entities("Can you tell Lena Novak that the offsite is postponed?", monday, "send_mail")
    assert told["message"] == "the offsite is postponed"
