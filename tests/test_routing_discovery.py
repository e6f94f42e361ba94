"""Discovery: what a message says decides which agent serves it; how much agents were used orders
agents of equal relevance only, so routing never flips because other agents got used (issue 42)."""

from __future__ import annotations

import uuid
from dataclasses import replace

import pytest

from master_agent.evolution.clock import SystemClock
from master_agent.routing.discovery import AgentCard, Discovery, described_agent
from master_agent.routing.models import IntentAnalysis
from master_agent.runtime import RuntimeResources
from master_agent.runtime.termination import TerminationReport

CARDS = [
    AgentCard(
        name="returns_digest",
        description="Summarises the week's product returns and refunds per store",
        skills=("weekly returns summary per store", "refunded amount per store"),
        domain="retail",
        runnable=True,
        source="tenant",
    ),
    AgentCard(
        name="refund_watch",
        description="Watches refund rates and alerts on spikes in returns",
        skills=("track the refund rate", "alert when returns spike"),
        domain="retail",
        runnable=True,
        source="tenant",
    ),
    AgentCard(
        name="stock_keeper",
        description="Keeps an eye on inventory levels and reorders stock",
        skills=("low stock alerts", "reorder products running out"),
        domain="retail",
        runnable=True,
        source="tenant",
    ),
]
MESSAGES = [
    "Summarise this week's returns for every store",
    "How much did we refund per store last week?",
    "refunds report by store",
    "Tell me when refunds suddenly go up",
    "Which products are about to run out of stock?",
]
EXECUTE = IntentAnalysis(action="EXECUTE", confidence=0.9, domain="retail")


async def _ranking(discovery: Discovery, tenant: str, message: str) -> list[tuple[str, float]]:
    found = await discovery.discover(tenant, 1, CARDS, message, EXECUTE)
    return [(candidate.name, candidate.score) for candidate in found]


async def _use(resources: RuntimeResources, tenant: str, agent: str, times: int, succeeded: bool) -> None:
    for index in range(times):
        await resources.terminations.record(
            TerminationReport(
                tenant_id=tenant,
                thread_id=f"{tenant}-{agent}-{index}",
                scope="",
                agent=agent,
                depth=0,
                reason="completed" if succeeded else "max_iterations",
                iterations=3,
                progress=1.0 if succeeded else 0.0,
                confidence=0.9,
                steps=[],
            )
        )


async def test_routing_does_not_flip_when_other_agents_are_used_many_times(
    resources: RuntimeResources,
) -> None:
    embedder = resources.evolution.knowledge.embedder
    discovery = Discovery(resources.database.pool, embedder, SystemClock(), ttl_s=0)
    # A near twin of returns_digest, so that messages have runners-up to flip to.
    cards = [
        *CARDS,
        AgentCard(
            name="returns_roundup",
            description="Rounds up product returns and refunds of every store each week",
            skills=("summary of the week's returns", "refunds per store this week"),
            domain="retail",
            runnable=True,
            source="tenant",
        ),
    ]
    runners_up = 0
    for message in MESSAGES:
        tenant = f"disc-{uuid.uuid4().hex[:8]}"
        before = [(c.name, c.score) for c in await discovery.discover(tenant, 1, cards, message, EXECUTE)]
        assert before, message
        runners_up += len(before) - 1
        # Every other agent succeeds again and again; the first choice fails as often.
        for card in cards:
            await _use(resources, tenant, card.name, 25, succeeded=card.name != before[0][0])
        found = await discovery.discover(tenant, 1, cards, message, EXECUTE)
        assert [(c.name, c.score) for c in found] == before, message
        # The usage was read: it shows in the parts.
        assert found[0].parts["performance"] < 0.1
        assert all(candidate.parts["performance"] > 0.9 for candidate in found[1:])
    assert runners_up >= 2  # there were agents to flip to


async def test_usage_orders_agents_of_equal_relevance(resources: RuntimeResources) -> None:
    tenant = f"disc-{uuid.uuid4().hex[:8]}"
    twins = [
        AgentCard(
            name=name,
            description="Summarises the week's product returns per store",
            skills=("weekly returns summary per store",),
            domain="retail",
            runnable=True,
            source="tenant",
        )
        for name in ("twin_a", "twin_b")
    ]
    discovery = Discovery(
        resources.database.pool, resources.evolution.knowledge.embedder, SystemClock(), ttl_s=0
    )
    message = "Summarise the returns per store for this week"
    first = await discovery.discover(tenant, 1, twins, message, EXECUTE)
    assert len(first) == 2 and first[0].score == first[1].score
    loser = first[1].name
    await _use(resources, tenant, loser, 1, succeeded=True)
    again = await discovery.discover(tenant, 1, twins, message, EXECUTE)
    assert again[0].name == loser  # the proven one of two equally relevant agents goes first


async def test_an_agent_named_in_the_message_matches_fully_whatever_its_description(
    resources: RuntimeResources,
) -> None:
    discovery = Discovery(
        resources.database.pool, resources.evolution.knowledge.embedder, SystemClock(), ttl_s=0
    )
    tenant = f"disc-{uuid.uuid4().hex[:8]}"
    for message in ("Harden stock_keeper before we put it in production", "debug the stock keeper please"):
        found = await discovery.discover(tenant, 1, CARDS, message, EXECUTE)
        assert found[0].name == "stock_keeper", message
        assert all(candidate.score < found[0].score for candidate in found[1:]), message
    named = await discovery.discover(tenant, 1, CARDS, "Harden stock_keeper before production", EXECUTE)
    unnamed = await discovery.discover(tenant, 1, CARDS, "Harden it before production", EXECUTE)
    assert all(c.score < named[0].score for c in unnamed if c.name == "stock_keeper")


MASTER = AgentCard(
    name="master_agent",
    description="Raises a store's accessory attach rate: finds the root cause and plans the fix",
    skills=("raise a store's accessory attach rate", "find why a store's figures are low and fix it"),
    domain="retail",
    runnable=True,
)


@pytest.mark.parametrize(
    ("message", "agent"),
    [
        (
            "Summarise the product returns of store 4 for this week",
            "returns_digest",
        ),
        ("Ping me whenever refunds jump", "refund_watch"),
        ("Lift store 4's accessory attach rate by a tenth before spring", "master_agent"),
    ],
)
async def test_the_agent_a_message_asks_for_is_the_likeliest_whichever_has_more_skills(
    resources: RuntimeResources, message: str, agent: str
) -> None:
    """A tenant's own agent, described in a sentence and two skills, against the pack's master agent
    with its many skills: what the message asks decides (the relevance head, issue 42)."""
    discovery = Discovery(
        resources.database.pool, resources.evolution.knowledge.embedder, SystemClock(), ttl_s=0
    )
    found = await discovery.discover(f"disc-{uuid.uuid4().hex[:8]}", 1, [MASTER, *CARDS], message, EXECUTE)
    assert found and found[0].name == agent, found


async def test_no_agent_is_offered_for_work_none_of_them_does(resources: RuntimeResources) -> None:
    discovery = Discovery(
        resources.database.pool, resources.evolution.knowledge.embedder, SystemClock(), ttl_s=0
    )
    tenant = f"disc-{uuid.uuid4().hex[:8]}"
    found = await discovery.discover(
        tenant, 1, CARDS, "Book a table for four at an Italian place tonight", EXECUTE
    )
    assert found == []


def test_a_description_of_an_agent_is_read_apart_from_the_rest_of_the_message() -> None:
    assert described_agent("could the shelf-gap checker agent look at store 2 for last week?") == (
        "shelf-gap checker agent"
    )
    assert described_agent("the report that warns me when refunds jump - store 4, last month") == (
        "report that warns me when refunds jump"
    )
    # The noun alone, or with a word that only picks among agents, describes nothing.
    for message in ("run the agent again", "no, the other one", "fix the newest one", "Why is store 3 down?"):
        assert described_agent(message) is None, message


#: A pack's master agent as discovery sees it in a tenant: with the many messages its users asked it
#: (``AgentCard.examples``), most of them about a store, a period and why a figure moved.
MASTER_ASKED = replace(
    MASTER,
    examples=(
        "Why did store 3's sales drop last week?",
        "explain why refunds went up at store 2 in October",
        "what went wrong at store 5 last month",
        "go over store 7's numbers for last week and tell me what happened",
        "store 9 had a bad November, find out why",
    ),
)


@pytest.mark.parametrize(
    ("message", "agent"),
    [
        (
            "could the weekly returns summariser go over store 3 for last week and explain the drop",
            "returns_digest",
        ),
        (
            "the refund spike alarm thing - go over store 9 for November and tell me what happened",
            "refund_watch",
        ),
    ],
)
async def test_an_agent_described_in_other_words_is_found_by_its_description(
    resources: RuntimeResources, message: str, agent: str
) -> None:
    """What the message says the agent does finds it, against the pack's master agent that the rest of
    the message (a store, a period, what went wrong) reads like (issue 42: agents described in other
    words)."""
    discovery = Discovery(
        resources.database.pool, resources.evolution.knowledge.embedder, SystemClock(), ttl_s=0
    )
    cards = [MASTER_ASKED, *CARDS]
    found = await discovery.discover(f"disc-{uuid.uuid4().hex[:8]}", 1, cards, message, EXECUTE)
    assert found and found[0].name == agent, found


def test_a_description_s_noun_may_be_plural_or_the_doer_of_its_verb() -> None:
    """A "reporter" does what a report is of (WordNet's derivations); "rankings" is the ranking."""
    assert described_agent("the stock reporter: leave out store 4") == "stock reporter"
    assert described_agent("the floor rankings look off for store 2") == "floor rankings"
    assert described_agent("the store did well in May") is None
    # Each determiner opens a description of its own: "the other one" describes nothing, the next does.
    assert described_agent("no wait, the other one - the stock reporter") == "stock reporter"
