"""What the front door decides, as records: the intent of a message and the routing decision."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.json_schema import SkipJsonSchema

Action = Literal["CREATE", "UPDATE", "EXECUTE", "QUERY", "AMBIGUOUS"]
ACTIONS: tuple[Action, ...] = ("CREATE", "UPDATE", "EXECUTE", "QUERY", "AMBIGUOUS")
TargetKind = Literal["agent", "builder", "query", "clarification", "out_of_scope", "drop_flow"]
#: A query handler's name: the built-in ones (``list_agents``, ``outcome``, ``knowledge``, ``data``,
#: ``other``) and any a domain pack adds (``DomainPack.query_handlers``).
QueryKind = str
ClarificationKind = Literal["multiple_choice", "entity", "open_ended", "create_or_execute"]


class IntentAnalysis(BaseModel):
    """What a message asks for (seed 003 ``IntentAnalysis``)."""

    model_config = ConfigDict(extra="ignore")

    action: Action = Field(
        description="CREATE or UPDATE an agent, EXECUTE a task, QUERY for facts, or AMBIGUOUS."
    )
    confidence: float = Field(ge=0, le=1, description="How sure the analysis is of the action.")
    query_kind: QueryKind | None = Field(
        default=None,
        description="For QUERY: list_agents, outcome (how a goal turned out), knowledge (what village "
        "knowledge says), data (a fact from the business data), a domain's own kind, or other.",
    )
    entities: dict[str, Any] = Field(default_factory=dict, description="Values named in the message.")
    required_skills: list[str] = Field(default_factory=list, description="Skills an agent needs for it.")
    domain: str | None = Field(default=None, description="Business domain, e.g. retail, marketing, hr.")
    ambiguity_reason: str | None = Field(default=None, description="Why the message is unclear, if it is.")
    agent_name: str | None = Field(default=None, description="The agent a CREATE/UPDATE is about, if named.")
    out_of_scope: SkipJsonSchema[bool] = False
    """The trained intent head is sure no agent of any tenant is asked for this (general knowledge,
    chit-chat, another product or channel): refused without discovery. Never asked of a model."""
    out_of_scope_likeliest: SkipJsonSchema[bool] = False
    """Out of scope is the head's likeliest reading, sure of it or not: no figure it names makes such a
    message, which no agent takes on either, a question about the data ("write unit tests for my
    Django app" names no transactions)."""
    out_of_scope_after_a_turn: SkipJsonSchema[bool] = False
    """Said right after a served turn, the message is out of scope by the head's own reading of it alone
    (``IntentHead.follow_up_refuse_from``): "can you print that out for the staffroom noticeboard?" after
    a figure asks for what no agent does, though read with the figure's question it reads like one more."""


class RouteTarget(BaseModel):
    kind: TargetKind
    name: str | None = None


class Candidate(BaseModel):
    """An agent that may serve the message, with its score and the parts of it."""

    name: str
    score: float
    parts: dict[str, float]
    description: str = ""


class Clarification(BaseModel):
    """A question the front door asks before routing (``interrupt()``)."""

    kind: ClarificationKind
    question: str
    options: list[str] = Field(default_factory=list, max_length=4)
    entity: str | None = None
    round: int = Field(ge=1)


class RoutingDecision(BaseModel):
    """One decision of the front door, kept in the thread state and streamed as it is made."""

    message: str
    goal: str
    """The text handed to the target: the message, completed from the conversation for a follow-up."""
    intent: Action
    confidence: float
    query_kind: QueryKind | None = None
    entities: dict[str, Any] = Field(default_factory=dict)
    ambiguity_reason: str | None = None
    target: RouteTarget
    candidates: list[Candidate] = Field(default_factory=list)
    reason: str
    follow_up: bool = False
    """The message was read with the conversation before it (e.g. "and for Store 7?")."""
    round: int = 0
    """Clarification rounds answered before this decision."""
    best_guess: bool = False
    """Made after the last clarification round allowed: the best guess, flagged."""
    clarification: Clarification | None = None
    previous_task: str | None = None
    """The task an active run was doing when this message interrupted it."""
    resumes: str | None = None
    """The suspended flow this message resumes (``SuspendedFlow.flow_id``)."""
    at: str


class SuspendedFlow(BaseModel):
    """An agent flow a later message cut short (a run still working, or a flow waiting for the
    user's answer): kept in the thread, to be resumed or dropped by a later message."""

    flow_id: str
    goal: str
    agent: str | None = None
    entities: dict[str, Any] = Field(default_factory=dict)
    started_at: str
    suspended_at: str
