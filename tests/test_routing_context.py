"""Conversation context at the front door (issue 42): a short message that nothing serves on its own,
right after a served one, continues it with the previous target, goal and entities."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from master_agent.capabilities import load_tenant
from master_agent.capabilities.agents import AgentDocument, StoredAgent
from master_agent.domains.retail import RETAIL
from master_agent.routing.context import corrected_goal
from master_agent.routing.graph.follow_ups import (
    CLOSES_THE_CONVERSATION,
    agent_meant,
    corrects_previous,
    is_closing,
)
from master_agent.routing.models import RouteTarget, RoutingDecision
from master_agent.runtime import RuntimeResources
from master_agent.runtime.factory import front_door


def _turn(door: Any, decision: RoutingDecision) -> dict[str, Any]:
    return {
        "text": decision.message,
        "goal": decision.goal,
        "at": door.now(),
        "intent": decision.intent,
        "target": decision.target.model_dump(),
        "entities": decision.entities,
    }


@pytest.mark.parametrize("follow_up", ["and broken down by weekday?", "hmm, same but per staff member"])
async def test_a_short_message_nothing_serves_alone_continues_the_previous_turn(
    resources: RuntimeResources, follow_up: str
) -> None:
    door = front_door(resources, await load_tenant(resources.database.pool, "demo-retail"))
    first = await door.decide("What was Store 3's attach rate last month?", [], {})
    assert first.target.kind == "query" and first.entities["window"] == "last month"
    alone = await door.decide(follow_up, [], {})
    # Nothing serves it on its own (at best a guess at a figure of the data it resembles).
    assert alone.target.kind in ("clarification", "out_of_scope") or alone.best_guess, alone.reason

    after = await door.decide(follow_up, [], {"chat_turns": [_turn(door, first)]})
    assert after.follow_up and after.target == first.target
    assert after.goal.startswith("What was Store 3's attach rate last month") and follow_up in after.goal
    assert after.entities["store_id"] == 3 and after.entities["window"] == "last month"


async def test_a_long_new_request_after_a_served_turn_is_not_taken_as_its_follow_up(
    resources: RuntimeResources,
) -> None:
    door = front_door(resources, await load_tenant(resources.database.pool, "demo-retail"))
    first = await door.decide("What was Store 3's attach rate last month?", [], {})
    message = "Plan a Black Friday marketing campaign for all our stores with a TikTok budget"
    after = await door.decide(message, [], {"chat_turns": [_turn(door, first)]})
    assert not after.follow_up and after.target.kind != "query"


async def test_a_goal_after_a_question_takes_the_store_it_named(resources: RuntimeResources) -> None:
    """A goal that leaves out the store the conversation just named is not asked which store."""
    door = front_door(resources, await load_tenant(resources.database.pool, "demo-retail"))
    message = "alright, draw up a plan to lift it by 8% within 45 days, whatever it takes to get there"
    alone = await door.decide(message, [], {})
    assert alone.target.kind == "clarification"  # which store?
    first = await door.decide("What was Store 2's attach rate last week?", [], {})
    after = await door.decide(message, [], {"chat_turns": [_turn(door, first)]})
    assert after.target.kind == "agent" and after.target.name == "master_agent"
    assert after.entities["store_id"] == 2


async def test_a_goal_about_the_figure_just_given_keeps_its_store(resources: RuntimeResources) -> None:
    """A plan for the figure the question before gave ("halve it by March") is a goal with that
    question's store; its deadline is not read as the question's window."""
    door = front_door(resources, await load_tenant(resources.database.pool, "demo-retail"))
    first = await door.decide("What's Store 5's refund rate this month?", [], {})
    assert first.target.kind == "query"
    after = await door.decide(
        "then draw me up a plan to cut it in half by March", [], {"chat_turns": [_turn(door, first)]}
    )
    assert (after.target.kind, after.target.name) == ("agent", "master_agent"), after.reason
    assert after.entities["store_id"] == 5
    assert "this month" in after.goal


async def test_a_longer_message_pointing_back_continues_the_previous_turn(
    resources: RuntimeResources,
) -> None:
    door = front_door(resources, await load_tenant(resources.database.pool, "demo-retail"))
    first = await door.decide("What was Store 3's attach rate last month?", [], {})
    message = "hmm and could you split that up by each of the weekdays instead"
    assert 8 < len(message.split()) <= 14
    after = await door.decide(message, [], {"chat_turns": [_turn(door, first)]})
    assert after.follow_up and after.target == first.target, after.reason


async def test_a_value_changed_after_naming_an_agent_goes_to_that_agent(resources: RuntimeResources) -> None:
    door = front_door(resources, await load_tenant(resources.database.pool, "demo-retail"))
    first = await door.decide("@master_agent store 4 attach rate review, October", [], {})
    assert (first.target.kind, first.target.name) == ("agent", "master_agent")
    after = await door.decide("same for November", [], {"chat_turns": [_turn(door, first)]})
    assert after.follow_up and (after.target.kind, after.target.name) == ("agent", "master_agent"), (
        after.reason
    )


async def test_a_short_request_nothing_here_serves_is_refused_not_taken_as_a_follow_up(
    resources: RuntimeResources,
) -> None:
    door = front_door(resources, await load_tenant(resources.database.pool, "demo-retail"))
    first = await door.decide("What was Store 3's attach rate last month?", [], {})
    after = await door.decide("who won the match last night?", [], {"chat_turns": [_turn(door, first)]})
    assert not after.follow_up and after.target.kind == "out_of_scope", after.reason


@pytest.mark.parametrize(
    "closing", ["great, thanks - that's all for now", "lovely, cheers, that's all I needed"]
)
async def test_a_closing_after_a_served_turn_ends_it_with_thanks(
    resources: RuntimeResources, closing: str
) -> None:
    door = front_door(resources, await load_tenant(resources.database.pool, "demo-retail"))
    first = await door.decide("What was Store 3's attach rate last month?", [], {})
    after = await door.decide(closing, [], {"chat_turns": [_turn(door, first)]})
    # Neither the figure again nor a question back: the thread is closed, nothing is refused.
    assert after.target.kind == "out_of_scope" and after.reason == CLOSES_THE_CONVERSATION, after.reason
    state = {"routing": after.model_dump(mode="json"), "chat_turns": [_turn(door, first)]}
    reply = (await door.out_of_scope(state))["reply"]
    assert reply["status"] == "success" and "None of your agents" not in reply["text"]


@pytest.mark.parametrize("closing", ["nice one, that's me done", "right, I'm off"])
async def test_a_closing_that_says_the_speaker_is_done_ends_a_goal_thread(
    resources: RuntimeResources, closing: str
) -> None:
    """A closing that states the speaker is done rather than thanks (the lowest-reading closings) ends a
    goal's thread: the goal is not run again."""
    door = front_door(resources, await load_tenant(resources.database.pool, "demo-retail"))
    first = await door.decide("Raise Store 5's attach rate to 4% by the end of March", [], {})
    assert first.target.kind == "agent", first.reason
    after = await door.decide(closing, [], {"chat_turns": [_turn(door, first)]})
    assert after.target.kind == "out_of_scope" and after.reason == CLOSES_THE_CONVERSATION, after.reason


async def test_a_refusal_of_a_question_about_stock_names_the_stock(resources: RuntimeResources) -> None:
    """A question about what is on hand that reaches the refusal names the data missing (the stock),
    as the data handler does, not every agent's skills."""
    door = front_door(resources, await load_tenant(resources.database.pool, "demo-retail"))
    asked = await door.decide("how many cases are left on the shelves at store 6?", [], {})
    state = {"routing": {**asked.model_dump(mode="json"), "reason": "no agent serves it"}}
    reply = (await door.out_of_scope(state))["reply"]
    assert reply["status"] == "out_of_scope" and "None of your agents" not in reply["text"]
    assert reply["data"]["missing"] == ["stock levels (cases on hand)"], reply["text"]


async def test_a_go_ahead_is_no_closing(resources: RuntimeResources) -> None:
    embedder = resources.evolution.knowledge.embedder
    assert not await is_closing("ok that works, go ahead", embedder, RETAIL.data_metrics)
    assert await is_closing("perfect, thanks - that's me done", embedder, RETAIL.data_metrics)


@pytest.mark.parametrize(
    "closing",
    [
        "brilliant, that's me finished for today",
        "cheers, talk tomorrow",
        "lovely, that's it from me, off at 6 tonight",
    ],
)
async def test_a_closing_that_says_a_time_still_closes(resources: RuntimeResources, closing: str) -> None:
    """The time a closing says is the speaker's own day, no window of a request: the thread is closed and
    nothing of it (the time neither) is carried."""
    door = front_door(resources, await load_tenant(resources.database.pool, "demo-retail"))
    first = await door.decide("What was Store 3's attach rate last month?", [], {})
    after = await door.decide(closing, [], {"chat_turns": [_turn(door, first)]})
    assert after.target.kind == "out_of_scope" and after.reason == CLOSES_THE_CONVERSATION, after.reason
    assert after.entities == {}


async def test_a_follow_up_that_says_a_time_is_no_closing(resources: RuntimeResources) -> None:
    embedder = resources.evolution.knowledge.embedder
    for message in (
        "ok and the week before",
        "great, now the same for yesterday",
        "fine, and for today",
        "4pm",
    ):
        assert not await is_closing(message, embedder, RETAIL.data_metrics), message


def test_a_correction_substitutes_a_value() -> None:
    for message in ("sorry, I meant store 6", "no wait, v3", "ah sorry, 40 not 30", "make that ninety days"):
        assert corrects_previous(message), message
    for message in (
        "sorry to bother you, what was store 2's refund rate last week?",
        "no thanks",
        "ok set a target: 12% by March",  # "ok" opens any reply; it repairs nothing
        "make it send on Mondays",
        "sorry to be a pain, but could you build me an agent that emails the area team the refund rate on Mondays",
    ):
        assert not corrects_previous(message), message


async def test_a_correction_updates_the_previous_request_instead_of_starting_a_new_one(
    resources: RuntimeResources,
) -> None:
    door = front_door(resources, await load_tenant(resources.database.pool, "demo-retail"))
    first = await door.decide("What was Store 3's attach rate last month?", [], {})
    assert first.target.kind == "query"
    after = await door.decide("sorry, I meant store 7", [], {"chat_turns": [_turn(door, first)]})
    assert after.follow_up and after.target == first.target, after.reason
    assert after.entities["store_id"] == 7 and after.entities["window"] == "last month"
    assert "7" in after.goal and "3" not in after.goal

    goal = await door.decide("Raise Store 4's attach rate by 5% within 30 days", [], {})
    assert (goal.target.kind, goal.target.name) == ("agent", "master_agent"), goal.reason
    after = await door.decide("oops, make that 45 days", [], {"chat_turns": [_turn(door, goal)]})
    assert after.target == goal.target and after.intent == "EXECUTE", after.reason
    assert "45 days" in after.goal and "30" not in after.goal and after.entities["store_id"] == 4


def test_a_corrected_goal_replaces_the_value_it_names() -> None:
    assert corrected_goal("I need 3 lakh for 2 years", "sorry, 2.5 lakh only, not 3") == (
        "I need 2.5 lakh for 2 years"
    )
    assert corrected_goal("give refund_watch a 20 second timeout", "make that 50") == (
        "give refund_watch a 50 second timeout"
    )
    # Two numbers and no word to tell which: the correction is kept beside the goal, nothing guessed.
    assert corrected_goal("book a table for 4 at 7pm", "sorry, make that 6") == (
        "book a table for 4 at 7pm (sorry, make that 6)"
    )


async def test_a_correction_opening_a_thread_is_asked_about(resources: RuntimeResources) -> None:
    """A correction with nothing before it to correct ("sorry, I meant 12 there") is no request of its
    own: what it corrects is asked."""
    door = front_door(resources, await load_tenant(resources.database.pool, "demo-retail"))
    alone = await door.decide("whoops, I meant 12 there", [], {})
    assert alone.target.kind == "clarification", alone.reason


@pytest.mark.parametrize(
    ("tenant", "closing"),
    [
        ("demo-retail", "cheers for everything, I'm heading home now - back on Monday"),
        ("demo-assistant", "many thanks, logging off for tonight, talk at 9 tomorrow"),
    ],
)
async def test_a_thread_opened_by_a_sign_off_is_closed_with_thanks(
    resources: RuntimeResources, tenant: str, closing: str
) -> None:
    """A first message that only signs off asks for nothing, like a closing mid-thread: no agent runs
    (the heads, trained on requests, read it as one) and the day and time it says are carried nowhere."""
    door = front_door(resources, await load_tenant(resources.database.pool, tenant))
    decision = await door.decide(closing, [], {})
    assert decision.target.kind == "out_of_scope" and decision.reason == CLOSES_THE_CONVERSATION, (
        decision.reason
    )
    assert decision.entities == {}


async def test_one_word_opening_a_thread_is_no_closing(resources: RuntimeResources) -> None:
    door = front_door(resources, await load_tenant(resources.database.pool, "demo-retail"))
    decision = await door.decide("Help", [], {})
    assert decision.reason != CLOSES_THE_CONVERSATION
    assert decision.target.kind == "clarification", decision.reason


async def test_a_plan_between_two_sign_offs_is_a_closing(resources: RuntimeResources) -> None:
    """What the user will do later, said between a thanks and a goodbye, is their own plan; a go-ahead
    said there is a request."""
    embedder = resources.evolution.knowledge.embedder
    assert await is_closing(
        "Thank you madam, I will visit the branch on Saturday. Bye", embedder, RETAIL.data_metrics
    )
    assert await is_closing("brilliant. it's 5 o'clock, I'm logging off", embedder, RETAIL.data_metrics)
    assert not await is_closing("thanks, send it to Raj, bye", embedder, RETAIL.data_metrics)
    assert not await is_closing("thanks, now show me the staff leaderboard", embedder, RETAIL.data_metrics)


LEADERBOARD = AgentDocument(
    name="staff_leaderboard",
    description="Ranks a store's sales staff in a leaderboard by accessory attach rate",
    skills=["rank salespeople by attach rate", "show the staff leaderboard"],
    instructions="Rank the store's staff by accessory attach rate over the window asked.",
)


@pytest.mark.parametrize(
    ("message", "meant"),
    [
        ("from now on have it list exchanges apart", "from now on have returns_digest list exchanges apart"),
        ("keep store 11 out of it", "keep store 11 out of returns_digest"),
        ("It should skip store 9", "returns_digest should skip store 9"),
        ("make its output shorter", "make returns_digest's output shorter"),
        # No "it" of the agent: "it's" (it is), or another word that holds the letters.
        ("it's fine, thanks", None),
        ("and for Italy?", None),
        ("cheers", None),
    ],
)
def test_it_in_a_follow_up_to_an_agent_s_run_is_read_as_that_agent(message: str, meant: str | None) -> None:
    assert agent_meant(message, "returns_digest") == meant


@pytest.mark.parametrize(
    "change",
    [
        "from now on, it should only count full-time staff",
        "going forward, keep the trainees out of it",
    ],
)
async def test_a_lasting_change_after_an_agent_ran_changes_that_agent(
    resources: RuntimeResources, change: str
) -> None:
    tenant = await load_tenant(resources.database.pool, "demo-retail")
    agents = {LEADERBOARD.name: StoredAgent(assistant_id=str(uuid.uuid4()), version=1, document=LEADERBOARD)}
    door = front_door(resources, tenant, agents=agents)
    # Discovery indexes a tenant's agents by its capability version: this door's agent is not stored,
    # so its index is made for it and dropped after (other tests' doors have no such agent).
    door.discovery.invalidate(tenant.tenant_id)
    try:
        first = await door.decide("rank the sales people at store 4 by attach rate, this week", [], {})
        assert first.target == RouteTarget(kind="agent", name="staff_leaderboard"), first.reason
        after = await door.decide(change, [], {"chat_turns": [_turn(door, first)]})
        assert after.intent == "UPDATE" and after.target.kind == "builder", after.reason
        # One more run of it, with a value changed, is still a run.
        again = await door.decide("now run it again for store 5", [], {"chat_turns": [_turn(door, first)]})
        assert again.target == first.target, again.reason
    finally:
        door.discovery.invalidate(tenant.tenant_id)
