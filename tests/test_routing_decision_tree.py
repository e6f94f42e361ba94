"""The decision tree (``routing.decision.decide_route``): where two weak readings lead."""

from __future__ import annotations

import pytest

from master_agent.routing.decision import decide_route
from master_agent.routing.discovery import AgentCard
from master_agent.routing.models import Candidate, IntentAnalysis
from master_agent.settings import Settings

HELPER = AgentCard(
    name="personal_assistant",
    description="Keeps the user's calendar, mail and contacts",
    skills=("book a meeting", "send a mail"),
    domain="assistant",
    runnable=True,
)


def _decided(confidence: float, score: float) -> str:
    settings = Settings()
    intent = IntentAnalysis(action="EXECUTE", confidence=confidence)
    candidate = Candidate(name=HELPER.name, score=score, parts={})
    outcome = decide_route(intent, [candidate], [HELPER], settings, rounds=0, override=None, known={})
    return outcome.target.kind


def test_an_unlikely_agent_for_an_unsure_request_is_no_route() -> None:
    """Between unsure and sure of the request, with the agent less likely than the clarifying floor
    ("order a birthday cake for Friday" to the assistant at 0.45): no agent here does it."""
    settings = Settings()
    between = (settings.clarify_below + settings.route_confidence) / 2
    assert _decided(between, settings.clarify_below - 0.1) == "out_of_scope"


@pytest.mark.parametrize(
    ("confidence", "score"),
    [
        # Sure of the request: the agent it found runs it, however weakly matched.
        (0.95, 0.45),
        # Unsure of the request, but the agent is likely.
        (0.7, 0.7),
    ],
)
def test_one_strong_reading_still_routes_to_the_agent(confidence: float, score: float) -> None:
    assert _decided(confidence, score) == "agent"
