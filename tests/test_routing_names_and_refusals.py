"""The front door on new wording (issue 42): an agent's name as the command, follow-ups that ask what no
agent does, and what the head reads as out of scope kept out of the data."""

from __future__ import annotations

import dataclasses
import uuid
from typing import Any

import numpy as np
import pytest
from benchmarks.train_routing import follow_up_threshold

from master_agent.capabilities import load_tenant
from master_agent.capabilities.agents import AgentDocument, StoredAgent
from master_agent.routing import intent_head
from master_agent.routing.graph.follow_ups import CLOSES_THE_CONVERSATION
from master_agent.routing.intent import explicit_builder_action, named_run
from master_agent.routing.models import RoutingDecision
from master_agent.runtime import RuntimeResources
from master_agent.runtime.factory import front_door

AGENTS = ("master_agent", "staff_leaderboard", "returns_digest", "weekly_sales_summary")


@pytest.mark.parametrize(
    ("message", "agent"),
    [
        ("kick off returns_digest for stores 2 and 5, last fortnight", "returns_digest"),
        ("staff_leaderboard - store 7, September, thanks", "staff_leaderboard"),
        ("weekly_sales_summary please", "weekly_sales_summary"),
        ("fire up weekly_sales_summary again for the week ending 8 November", "weekly_sales_summary"),
    ],
)
def test_a_message_that_is_an_agents_name_and_the_runs_values_runs_it(message: str, agent: str) -> None:
    assert named_run(message, AGENTS) == agent


@pytest.mark.parametrize(
    "message",
    [
        "weekly_sales_summary: put the chain total in bold",  # what to change
        "returns_digest -> returns_overview",  # a rename: a second identifier
        "move staff_leaderboard to the hybrid runtime",
        "what tools does returns_digest have?",
        "compare returns_digest with staff_leaderboard",  # two agents named
        "kick off returns_dashboard for store 2",  # no agent of the tenant
    ],
)
def test_a_name_said_with_more_than_a_run_is_no_command_to_run(message: str) -> None:
    assert named_run(message, AGENTS) is None


def test_a_name_alone_after_a_turn_answers_it() -> None:
    """ "returns_digest" after "the weekly one needs a longer timeout" says which agent to change."""
    assert named_run("returns_digest", AGENTS) == "returns_digest"
    assert named_run("returns_digest", AGENTS, after_a_turn=True) is None


def _turn(door: Any, decision: RoutingDecision) -> dict[str, Any]:
    return {
        "text": decision.message,
        "goal": decision.goal,
        "at": door.now(),
        "intent": decision.intent,
        "target": decision.target.model_dump(),
        "entities": decision.entities,
    }


SUMMARY = AgentDocument(
    name="weekly_sales_summary",
    description="Summarises each week's sales per store",
    skills=["weekly sales summary per store"],
    instructions="Summarise the sales of each store over the week asked.",
)


async def test_an_agents_name_as_the_command_runs_that_agent(resources: RuntimeResources) -> None:
    tenant = await load_tenant(resources.database.pool, "demo-retail")
    agents = {SUMMARY.name: StoredAgent(assistant_id=str(uuid.uuid4()), version=1, document=SUMMARY)}
    door = front_door(resources, tenant, agents=agents)
    # The door's agent is not stored: its discovery index is made for it and dropped after.
    door.discovery.invalidate(tenant.tenant_id)
    try:
        run = await door.decide("launch weekly_sales_summary - stores 5 and 6 - week before last", [], {})
        assert (run.intent, run.target.kind, run.target.name) == (
            "EXECUTE",
            "agent",
            "weekly_sales_summary",
        ), run.reason
        # A correction of the run's value stays a run of that agent, not a change to it.
        corrected = await door.decide("sorry, 5 and 7", [], {"chat_turns": [_turn(door, run)]})
        assert (corrected.target.kind, corrected.target.name) == ("agent", "weekly_sales_summary"), (
            corrected.reason
        )
        change = await door.decide("weekly_sales_summary: show the chain total in bold", [], {})
        assert change.target.kind == "builder", change.reason
    finally:
        door.discovery.invalidate(tenant.tenant_id)


async def test_a_follow_up_asking_what_no_agent_does_is_refused(resources: RuntimeResources) -> None:
    """Read with the question before it, "and WhatsApp it to the regional lead" reads as more of the
    figure; read alone, as what no agent here does."""
    door = front_door(resources, await load_tenant(resources.database.pool, "demo-retail"))
    first = await door.decide("What was Store 3's attach rate last month?", [], {})
    assert first.target.kind == "query"
    after = await door.decide(
        "and WhatsApp it to the regional lead", [], {"chat_turns": [_turn(door, first)]}
    )
    assert after.target.kind == "out_of_scope" and after.reason != CLOSES_THE_CONVERSATION, after.reason


async def test_what_the_head_likeliest_refuses_is_no_data_question_whatever_its_threshold(
    resources: RuntimeResources, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A head that never refuses outright (the threshold end-to-end selection gave a retrained head)
    still keeps a request it likeliest reads as out of scope out of the data, though it shares a word
    with a figure: that fallback, not the head, had cost retrained heads their own training messages."""
    shipped = intent_head.load_head()
    assert shipped is not None
    never = dataclasses.replace(shipped, refuse_from=1.0)
    monkeypatch.setattr(intent_head, "load_head", lambda: never)
    door = front_door(resources, await load_tenant(resources.database.pool, "demo-retail"))
    message = "write a browser extension that shows store sales in the toolbar"
    decision = await door.decide(message, [], {})
    assert decision.target.kind == "out_of_scope", decision.reason


def test_the_follow_up_threshold_is_where_refusing_gains_most() -> None:
    shares = np.array([0.95, 0.7, 0.6, 0.52, 0.3, 0.1])
    refused = [True, True, False, True, False, False]
    # From 0.7: two right, none wrong; from 0.5: three right, one wrong (the same gain, a lower bar).
    assert follow_up_threshold(shares, refused) == 0.7
    assert follow_up_threshold(shares, [False] * 6) == 1.0


@pytest.mark.parametrize(
    "message",
    [
        "clone the staff leaderboard agent for the Saturday team only",
        "duplicate returns_digest, the copy weekly for stores 1-4",
        "copy weekly_sales_summary and make the copy cover stores 7-9",
        "could I have my own version of the refunds reporter that only flags stores over 3%",
    ],
)
def test_a_new_agent_made_from_one_the_tenant_has_is_a_create(message: str) -> None:
    assert explicit_builder_action(message) == "CREATE"


@pytest.mark.parametrize(
    "message",
    ["copy the weekly report to Dave", "copy that over to Priya", "a fresh version of the report please"],
)
def test_copying_a_report_to_someone_builds_nothing(message: str) -> None:
    assert explicit_builder_action(message) is None


LADDER = AgentDocument(
    name="staff_leaderboard",
    description="Ranks a store's sales staff in a leaderboard by accessory attach rate",
    skills=["rank salespeople by attach rate", "show the staff leaderboard"],
    instructions="Rank the sales staff of the store asked by attach rate.",
)


async def test_an_own_agent_pointed_to_by_its_description_is_run_or_changed(
    resources: RuntimeResources,
) -> None:
    """The tenant's own agent said in other words ("the salespeople ranker", "the salespeople rankings") is the
    one asked for, run, or changed when what is asked is to hold from now on; the head, which knows no
    tenant's agents, reads such requests as data questions or new agents."""
    tenant = await load_tenant(resources.database.pool, "demo-retail")
    agents = {
        document.name: StoredAgent(assistant_id=str(uuid.uuid4()), version=1, document=document)
        for document in (SUMMARY, LADDER)
    }
    door = front_door(resources, tenant, agents=agents)
    door.discovery.invalidate(tenant.tenant_id)
    try:
        run = await door.decide("could the salespeople ranker agent have a go at store 8 for May?", [], {})
        assert (run.target.kind, run.target.name) == ("agent", "staff_leaderboard"), run.reason
        change = await door.decide(
            "the salespeople rankings should leave out anyone with under 3 shifts from now on", [], {}
        )
        assert (change.intent, change.target.kind) == ("UPDATE", "builder"), change.reason
        # A run over a span that began at another time ("since the 1st") changes nothing.
        since = await door.decide("kick off the weekly sales summary for store 2 since the 1st", [], {})
        assert (since.target.kind, since.target.name) == ("agent", "weekly_sales_summary"), since.reason
    finally:
        door.discovery.invalidate(tenant.tenant_id)
