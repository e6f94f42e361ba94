"""Seed 002's scenarios end to end: the assistant pack's master agent on the real runtime (offline
planner, Postgres checkpointer) against the real local mail, calendar and contacts servers."""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator
from datetime import datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from langchain_core.messages import HumanMessage
from langgraph.types import Command

from master_agent.domains.assistant import DEMO_TENANT
from master_agent.domains.assistant.demo_data import TEAM
from master_agent.domains.assistant.local_servers import LocalServers
from master_agent.domains.assistant.scheduling import resolve_day
from master_agent.runtime import RuntimeResources
from master_agent.runtime.factory import master_graph
from master_agent.runtime.proposals import ProposalBook
from master_agent.runtime.solve import SolveRequest, solve


@pytest.fixture(scope="module")
async def assistant(resources: RuntimeResources) -> AsyncIterator[RuntimeResources]:
    yield resources
    LocalServers(resources.settings.data_dir).stop()


def _sent_envelopes(data_dir: Path) -> list[dict[str, Any]]:
    accepted = data_dir / "assistant" / "smtp" / "accepted"
    return (
        [json.loads(path.read_text()) for path in sorted(accepted.glob("*.json"))]
        if accepted.exists()
        else []
    )


async def _chat(resources: RuntimeResources, thread_id: str, message: str | Command) -> dict[str, Any]:
    config = {"configurable": {"tenant_id": DEMO_TENANT, "thread_id": thread_id}}
    graph = await master_graph(resources, config, checkpointer=resources.database.checkpointer)
    graph_input: Any = (
        message if isinstance(message, Command) else {"messages": [HumanMessage(content=message)]}
    )
    await graph.ainvoke(graph_input, config)
    snapshot = await graph.aget_state(config, subgraphs=True)
    values = dict(snapshot.values)
    pending = [i.value for task in snapshot.tasks for i in task.interrupts]
    if not pending:  # an interrupt inside the agent's loop sits on the nested state
        pending = [
            i.value
            for task in snapshot.tasks
            if task.state is not None and hasattr(task.state, "interrupts")
            for i in task.state.interrupts  # type: ignore[union-attr]
        ]
    values["interrupts"] = pending
    return values


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
    assert details["summary"].startswith("2 email(s) from John Miller about project:")
    assert "Project Atlas kickoff" in details["summary"]


async def test_a_mass_email_is_a_preview_until_accepted(assistant: RuntimeResources) -> None:
    data_dir = assistant.settings.data_dir
    before = len(_sent_envelopes(data_dir))
    thread = str(uuid.uuid4())
    first = await _chat(assistant, thread, "Email the whole team about the budget freeze")
    handoff = first["envelope"]["handoff"]
    assert handoff["kind"] == "preview", first["reply"]
    proposal = handoff["proposal"]
    assert proposal["tool"] == "send_email"
    assert len(proposal["args"]["addresses"]) == 14
    assert "Preview (not done yet, high risk): send_email." in first["reply"]["text"]
    assert len(_sent_envelopes(data_dir)) == before  # nothing sent before acceptance

    second = await _chat(assistant, thread, "Please execute the proposed plan")
    assert second["reply"]["status"] == "success", second["reply"]
    sent = _sent_envelopes(data_dir)[before:]
    assert len(sent) == 1
    assert sorted(sent[0]["rcpt_tos"]) == sorted(c.email for c in TEAM)
    stored = await ProposalBook(assistant.database.pool).list(DEMO_TENANT, thread_id=thread)
    assert [p.status for p in stored] == ["executed"]

    # Accepted once, run once: asking again finds nothing to accept and sends nothing.
    third = await _chat(assistant, thread, "Please execute the proposed plan")
    assert len(_sent_envelopes(data_dir)) == before + 1, third["reply"]
