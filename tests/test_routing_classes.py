"""The front door's reading of each kind of request (issue 42), on wording written for these tests and
in no labelled set: a goal to act on, a question the service answers, a new agent, a change to one,
a system of agents, a message that says too little, and requests the tenant's packs do not serve,
whether worded as a task or as a question."""

from __future__ import annotations

import pytest

from master_agent.capabilities import load_tenant
from master_agent.runtime import RuntimeResources
from master_agent.runtime.factory import front_door


@pytest.mark.parametrize(
    ("tenant", "message", "kind", "name"),
    [
        ("demo-retail", "Get store 9's refund rate down to 2% within three months", "agent", "master_agent"),
        ("demo-retail", "what was store 7's attach rate in August?", "query", "data"),
        ("demo-retail", "Build me an agent that emails me a refunds summary every Friday", "builder", None),
        ("demo-retail", "update the agent so it also counts exchanges", "builder", None),
        (
            "demo-retail",
            "Build an agent system that screens job applications, with a reviewer and a human sign-off",
            "builder",
            None,
        ),
        ("demo-retail", "do the thing from before", "clarification", None),
        ("demo-retail", "Book me a flight to Lisbon next Tuesday", "out_of_scope", None),
        ("demo-retail", "what is the capital of Australia?", "out_of_scope", None),
        ("demo-assistant", "Order a large pepperoni pizza to my flat", "out_of_scope", None),
        ("demo-lending", "What's the dollar to rupee exchange rate today?", "out_of_scope", None),
    ],
)
async def test_each_kind_of_request_reaches_its_handler(
    resources: RuntimeResources, tenant: str, message: str, kind: str, name: str | None
) -> None:
    door = front_door(resources, await load_tenant(resources.database.pool, tenant))
    decision = await door.decide(message, [], {})
    assert decision.target.kind == kind, (decision.intent, decision.confidence, decision.reason)
    assert name is None or decision.target.name == name, decision.reason
