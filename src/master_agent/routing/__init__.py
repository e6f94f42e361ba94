"""The chat front door (seed 003, with seed 002's pre-flight): context, ``@agent`` override, intent,
discovery, the decision, clarification and query handlers. Built as the root of the ``master_agent``
graph for chat input (``routing.graph``)."""

from master_agent.routing.models import (
    Candidate,
    Clarification,
    IntentAnalysis,
    RouteTarget,
    RoutingDecision,
)

__all__ = ["Candidate", "Clarification", "IntentAnalysis", "RouteTarget", "RoutingDecision"]
