"""The front door's nodes and its thread state."""

from __future__ import annotations

import operator
from typing import Annotated, Any, NotRequired

from langchain_core.messages import AnyMessage
from langgraph.graph.message import add_messages
from typing_extensions import TypedDict

NODES = (
    "route",
    "clarify",
    "solve",
    "answer_query",
    "build_agent",
    "build_system",
    "out_of_scope",
    "drop_flow",
)


class FrontDoorState(TypedDict):
    """The thread state of a chat graph: the conversation, the routing records and the latest answer."""

    goal: NotRequired[str]
    """The latest task handed to an agent (or given as input: an explicit EXECUTE)."""
    context: NotRequired[dict[str, Any]]
    messages: NotRequired[Annotated[list[AnyMessage], add_messages]]
    routing: NotRequired[dict[str, Any] | None]
    """The latest routing decision (``RoutingDecision``)."""
    routing_trace: NotRequired[Annotated[list[dict[str, Any]], operator.add]]
    """Every routing decision of the thread, in order."""
    chat_turns: NotRequired[Annotated[list[dict[str, Any]], operator.add]]
    """Each handled message: text, goal, time, intent, target, entities (the follow-up context)."""
    pending: NotRequired[dict[str, Any] | None]
    """The message being routed: ``{id, text, at}``."""
    clarifications: NotRequired[list[dict[str, Any]]]
    """Questions asked about the pending message, with their answers."""
    clarifying: NotRequired[bool]
    suspended: NotRequired[list[dict[str, Any]]]
    """Agent flows later messages cut short, oldest first (``SuspendedFlow``)."""
    reply: NotRequired[dict[str, Any] | None]
    """The front door's answer to the latest message: ``{kind, status, text, data}``."""
    solution: NotRequired[dict[str, Any]]
    envelope: NotRequired[dict[str, Any]]
    termination: NotRequired[dict[str, Any]]
    reused_pattern: NotRequired[dict[str, Any] | None]
    escalation: NotRequired[dict[str, Any] | None]
    model_failure: NotRequired[str | None]
    steps: NotRequired[list[dict[str, Any]]]
