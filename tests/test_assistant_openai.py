"""Seed 002's scenarios with the OpenAI path: the real ChatOpenAI client against recorded
chat.completions responses (``tests/recordings/assistant_scenarios.json``, replayed by an
``httpx2.MockTransport``), through the chat front door, against the real local mail, calendar and
contacts servers. Among them a model that calls ``send_email`` for 14 people directly, and one that
sends something other than the preview the user accepted: the tools step refuses both."""

from __future__ import annotations

import dataclasses
import json
import uuid
from collections.abc import Iterator
from datetime import date, datetime, time, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import httpx2
import pytest
from langgraph.types import Command

from master_agent.capabilities import install_tenant
from master_agent.domains.assistant import DEMO_TENANT
from master_agent.domains.assistant.agents import MASTER
from master_agent.domains.assistant.demo import chat_turn, sent_envelopes
from master_agent.domains.assistant.demo_data import TEAM
from master_agent.domains.assistant.local_servers import LocalServers
from master_agent.domains.assistant.providers import CalDavCalendar
from master_agent.domains.assistant.scheduling import resolve_day
from master_agent.domains.assistant.tools import ACCOUNTS_ENV, AccountsFile, accounts_on
from master_agent.models import make_chat_model
from master_agent.models.prompt_blocks import parse_tagged_json
from master_agent.runtime import RuntimeResources
from master_agent.runtime.proposals import ProposalBook
from master_agent.settings import Settings

RECORDING = json.loads((Path(__file__).parent / "recordings" / "assistant_scenarios.json").read_text())
TOOLS = MASTER["tools"]


class RecordedModel:
    """Answers the front door's intent analysis with the recorded intent, and each master-agent turn
    with the recording for (the goal of its flow, the assistant turns in the request)."""

    def __init__(self) -> None:
        self.turns: list[tuple[str, int]] = []
        self.requests: list[dict[str, Any]] = []

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        body = json.loads(request.content)
        self.requests.append(body)
        names = [tool["function"]["name"] for tool in body.get("tools") or []]
        if names == ["IntentAnalysis"]:
            return httpx2.Response(200, json=RECORDING["intent"])
        box = parse_tagged_json(body["messages"][0]["content"], "context_box")
        goal = str(box["goal"])
        turn = sum(1 for message in body["messages"] if message["role"] == "assistant")
        self.turns.append((goal, turn))
        for exchange in RECORDING["exchanges"]:
            if (exchange["goal"], exchange["turn"]) == (goal, turn):
                return httpx2.Response(200, json=exchange["response"])
        raise AssertionError(f"no recording for {goal!r} turn {turn}")

    def goals(self) -> list[str]:
        return [goal for goal, _ in self.turns]


@pytest.fixture
def model() -> RecordedModel:
    return RecordedModel()


@pytest.fixture(scope="module")
def local_servers(resources: RuntimeResources) -> Iterator[None]:
    """The mail, calendar and contacts servers the module's tests start in the shared data directory,
    stopped with the module (their data is on disk: a server started again serves the same)."""
    yield
    LocalServers(resources.settings.data_dir).stop()


@pytest.fixture
def openai_resources(
    resources: RuntimeResources, settings: Settings, model: RecordedModel, local_servers: None
) -> RuntimeResources:
    chat_model = make_chat_model(
        settings.with_overrides(
            model="openai:gpt-4o-mini", openai_api_key="sk-test", openai_base_url="http://llm.test/v1"
        ),
        http_async_client=httpx2.AsyncClient(transport=httpx2.MockTransport(model)),
    )
    # Its own graphs (the graph cache is per resources), on the same database and local servers.
    return dataclasses.replace(resources, model=chat_model)


async def _chat(
    resources: RuntimeResources, thread: str, message: str | Command[Any], tenant: str = DEMO_TENANT
) -> dict[str, Any]:
    return await chat_turn(resources, tenant, thread, message)


def _today() -> date:
    return datetime.now(ZoneInfo("UTC")).date()


async def test_free_slots_and_a_mail_summary_from_the_models_calls(
    openai_resources: RuntimeResources, model: RecordedModel
) -> None:
    slots = await _chat(
        openai_resources, str(uuid.uuid4()), "What times am I free next Tuesday for 60 minutes?"
    )
    solution = slots["solution"]
    tuesday = resolve_day("next tuesday", _today())
    assert tuesday is not None and solution["day"] == tuesday.isoformat()
    assert [(s["start"], s["end"]) for s in solution["free_slots"]] == [
        ("11:00", "13:00"),
        ("15:00", "17:00"),
    ]
    assert solution["answer"].startswith("Next Tuesday you are free")
    assert slots["envelope"]["confidence_band"] == "COMPLETE"
    master = [r for r in model.requests if r.get("tools") and len(r["tools"]) > 1]
    assert [t["function"]["name"] for t in master[0]["tools"]] == TOOLS

    mail = await _chat(
        openai_resources, str(uuid.uuid4()), "Find emails from John about the project and summarise them"
    )
    assert mail["solution"]["mail_summary"].startswith("2 email(s) from John Miller about project:")
    assert {m["address"] for m in mail["solution"]["messages"]} == {"john.miller@acme.example"}


async def test_which_david_then_an_approved_draft_from_the_models_calls(
    openai_resources: RuntimeResources, model: RecordedModel
) -> None:
    thread = str(uuid.uuid4())
    asked = await _chat(openai_resources, thread, "Schedule a meeting with David tomorrow at 2pm")
    [question] = asked["interrupts"]
    assert question["kind"] == "clarification" and len(question["options"]) == 2
    drafted = await _chat(openai_resources, thread, Command(resume="David Chen"))
    [approval] = drafted["interrupts"]
    assert approval["draft"]["addresses"] == ["david.chen@acme.example"]
    done = await _chat(openai_resources, thread, Command(resume="approve"))
    assert done["reply"]["status"] == "success", done["reply"]
    endpoints, _ = LocalServers(openai_resources.settings.data_dir).ensure_running(DEMO_TENANT)
    tomorrow = datetime.combine(_today() + timedelta(days=1), time.min, tzinfo=ZoneInfo("UTC"))
    events = await CalDavCalendar(endpoints.caldav).events(tomorrow, tomorrow.replace(hour=23))
    assert any(
        e.summary == "Meeting with David" and e.attendees == ["david.chen@acme.example"] for e in events
    )
    assert [turn for goal, turn in model.turns] == [0, 1, 2]


async def test_a_model_sending_to_fourteen_people_gets_a_preview_and_only_the_accepted_call_runs(
    openai_resources: RuntimeResources, model: RecordedModel
) -> None:
    data_dir = openai_resources.settings.data_dir
    before = len(sent_envelopes(data_dir))
    thread = str(uuid.uuid4())
    first = await _chat(openai_resources, thread, "Email the whole team about the budget freeze")
    # The model called send_email for 14 people itself: nothing was sent, a preview waits.
    handoff = first["envelope"]["handoff"]
    assert handoff["kind"] == "preview" and handoff["proposal"]["tool"] == "send_email"
    assert len(sent_envelopes(data_dir)) == before
    assert model.turns == [
        ("Email the whole team about the budget freeze", 0),
        ("Email the whole team about the budget freeze", 1),
    ]

    accepted = await _chat(openai_resources, thread, "Please execute the proposed plan")
    assert accepted["reply"]["status"] == "success", accepted["reply"]
    sent = sent_envelopes(data_dir)[before:]
    assert len(sent) == 1 and sorted(sent[0]["rcpt_tos"]) == sorted(c.email for c in TEAM)

    # Another preview, accepted; the model then sends another subject than the one accepted.
    thread = str(uuid.uuid4())
    await _chat(openai_resources, thread, "Email the whole team about the budget freeze")
    other = await _chat(openai_resources, thread, "Yes, go ahead")
    assert len(sent_envelopes(data_dir)) == before + 1
    assert other["envelope"]["handoff"]["kind"] == "preview"
    stored = await ProposalBook(openai_resources.database.pool).list(DEMO_TENANT, thread_id=thread)
    assert [(p.status, p.args["subject"]) for p in stored] == [
        ("pending", "Budget freeze (updated)"),
        ("accepted", "Budget freeze"),
    ]


async def test_a_paused_board_meeting_resumes_with_the_models_calls(
    openai_resources: RuntimeResources, model: RecordedModel
) -> None:
    thread = str(uuid.uuid4())
    asked = await _chat(openai_resources, thread, "Schedule board meeting next month")
    assert [q["reason"] for q in asked["interrupts"]] == ["missing_information"]
    assert model.goals() == []  # asked before the model's first turn

    check = await _chat(openai_resources, thread, "Actually, check my calendar first")
    assert check["solution"]["events"] and check["suspended"]
    resumed = await _chat(openai_resources, thread, "Resume the board meeting on the 18th at 3pm")
    [approval] = resumed["interrupts"]
    day = resolve_day("the 18th", _today())
    assert day is not None and approval["detail"]["day"] == day.isoformat()
    done = await _chat(openai_resources, thread, Command(resume="approve"))
    assert done["solution"]["event"]["start"] == "15:00"
    assert model.goals() == [
        "Actually, check my calendar first",
        "Actually, check my calendar first",
        "Schedule board meeting next month (on the 18th at 3pm)",
        "Schedule board meeting next month (on the 18th at 3pm)",
    ]


async def test_a_stopped_calendar_server_ends_the_models_flow_in_api_down(
    openai_resources: RuntimeResources,
    model: RecordedModel,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    stopped = LocalServers(tmp_path / "stopped")
    gone, _ = stopped.ensure_running(DEMO_TENANT)
    stopped.stop()
    live, _ = LocalServers(openai_resources.settings.data_dir).ensure_running(DEMO_TENANT)
    accounts = accounts_on(
        live, username=DEMO_TENANT, password_env="ASSISTANT_OPENAI_SECRET", address=live.address, timeout_s=3
    )
    accounts.caldav.url = gone.caldav.url
    path = tmp_path / "accounts.json"
    path.write_text(AccountsFile(tenants={"openai-calendar-down": accounts}).model_dump_json())
    monkeypatch.setenv("ASSISTANT_OPENAI_SECRET", live.caldav.password.get_secret_value())
    monkeypatch.setenv(ACCOUNTS_ENV, str(path))
    pool = openai_resources.database.pool
    await install_tenant(pool, openai_resources.settings, "assistant", "openai-calendar-down")
    down = await _chat(
        openai_resources,
        str(uuid.uuid4()),
        "What times am I free next Tuesday for 60 minutes?",
        tenant="openai-calendar-down",
    )
    envelope = down["envelope"]
    assert envelope["status"] == "error"
    assert envelope["error_type"] == "api_down"
    assert "not reachable" in envelope["handoff"]["what_you_can_do"]
    assert "What you can do:" in down["reply"]["text"]
    assert [turn for _, turn in model.turns] == [0]  # no model turn after the exit


async def test_input_the_mail_server_refuses_is_revised_by_the_model(
    openai_resources: RuntimeResources, model: RecordedModel
) -> None:
    found = await _chat(
        openai_resources,
        str(uuid.uuid4()),
        "Find emails from John Miller about the project and summarise them",
    )
    assert found["reply"]["status"] == "success", json.dumps(found["routing"])
    subjects = {m["subject"] for m in found["solution"]["messages"]}
    assert subjects == {"Project Atlas kickoff", "Re: Project Atlas kickoff"}
    # The first call failed as invalid_input and the model was told to revise it, not to stop.
    revised = [r for r in model.requests if r.get("tools") and len(r["tools"]) > 1][1]
    refusal = json.loads(next(m for m in revised["messages"] if m["role"] == "tool")["content"])
    assert refusal["error_type"] == "invalid_input"
    assert refusal["decision"] == "revise_plan"
    assert [turn for _, turn in model.turns] == [0, 1, 2]
    assert found["envelope"]["handoff"] is None
