"""The state every agent loop carries (the master agent and every sub-agent, each its own copy)."""

from __future__ import annotations

import operator
from typing import Annotated, Any, NotRequired

from langchain_core.messages import AnyMessage
from langgraph.graph.message import add_messages
from langgraph.graph.state import CompiledStateGraph
from typing_extensions import TypedDict


def merge_dicts(left: dict[str, Any] | None, right: dict[str, Any] | None) -> dict[str, Any]:
    """Reducer: later keys win; parallel tool tasks each add their own keys."""
    return {**(left or {}), **(right or {})}


#: Which handoff a flow ends with when parallel calls hand over several (the worst first).
HANDOFF_PRIORITY = ("failure", "question", "preview")


def keep_handoff(left: dict[str, Any] | None, right: dict[str, Any] | None) -> dict[str, Any] | None:
    """Reducer: None clears (a new flow); of two handoffs the worse stays (a failure over a question
    over a preview), so parallel calls never conflict."""
    if right is None or left is None:
        return right

    def rank(handoff: dict[str, Any]) -> int:
        kind = handoff.get("kind")
        return HANDOFF_PRIORITY.index(kind) if kind in HANDOFF_PRIORITY else len(HANDOFF_PRIORITY)

    return right if rank(right) < rank(left) else left


class ContextBox(TypedDict):
    """The working memory rendered into every agent prompt."""

    goal: str
    """The task as given."""
    entities: dict[str, Any]
    """Values extracted from the goal (``store_id``, ``target_percent``, ``timeline_days``, ``budget``)."""
    constraints: dict[str, Any]
    """Limits the agent works under (iterations, depth, timeline, budget)."""
    data: dict[str, Any]
    """The agent's input arguments (its context) and the keys found so far."""
    progress: dict[str, Any]
    """Iteration, progress score, confidence, completed steps."""
    blockers: list[str]
    """Tool errors and limitations met so far."""
    next: list[str]
    """Tools the agent intends to call next."""
    notes: list[str]
    """Free-form notes (human decisions, escalations)."""


class StepRecord(TypedDict):
    """One tool or sub-agent call, with its own calls nested under ``children``."""

    agent: str
    depth: int
    tool: str
    kind: str
    """``tool`` or ``sub_agent``."""
    status: str
    """``success``, ``partial`` or ``error``."""
    children: list[StepRecord]


class TurnRecord(TypedDict):
    """One agent turn, as the stagnation rule sees it."""

    steps: list[str]
    """Names of the tools and sub-agents it chose."""
    progress: float
    """Progress score when it chose them (after the previous turn's results)."""


class MasterAgentState(TypedDict):
    """State of one agent loop. Sub-agents get a fresh one: they never share reducers with a parent."""

    goal: str
    """The goal (master) or task (sub-agent)."""
    context: NotRequired[dict[str, Any]]
    """Input arguments: the request's options, or the sub-agent tool's arguments."""
    context_box: NotRequired[ContextBox]
    messages: NotRequired[Annotated[list[AnyMessage], add_messages]]
    current_plan: NotRequired[list[str]]
    """Tool names requested in the latest agent turn."""
    completed_steps: NotRequired[Annotated[list[str], operator.add]]
    """Signatures (tool + arguments) of executed calls, in order."""
    pending_actions: NotRequired[list[dict[str, Any]]]
    """Tool calls of the latest agent turn not yet executed."""
    findings: NotRequired[Annotated[dict[str, Any], merge_dicts]]
    """Results by tool name, plus each result's top-level keys."""
    confidences: NotRequired[Annotated[dict[str, float], merge_dicts]]
    """Confidence reported by each tool call or sub-agent, by call id."""
    blockers: NotRequired[Annotated[list[str], operator.add]]
    solution: NotRequired[dict[str, Any]]
    """The agent's final answer, shaped by its output schema."""
    envelope: NotRequired[dict[str, Any]]
    """The final answer wrapped for a parent (``SubAgentEnvelope`` as a dict)."""
    learnings: NotRequired[list[dict[str, Any]]]
    confidence_score: NotRequired[float]
    iteration_count: NotRequired[int]
    """Agent turns of the current flow (a new user message starts a new flow at 0)."""
    recent_turns: NotRequired[list[TurnRecord]]
    """The latest agent turns of the current flow, oldest first; used to detect stagnation."""
    max_iterations: NotRequired[int]
    progress_score: NotRequired[float]
    depth: NotRequired[int]
    model_calls: NotRequired[Annotated[int, operator.add]]
    """Budget counter: chat-model calls made by this loop."""
    tool_calls: NotRequired[Annotated[int, operator.add]]
    """Budget counter: tool and sub-agent calls made by this loop."""
    tokens_used: NotRequired[Annotated[int, operator.add]]
    """Budget counter: tokens of this loop's model calls (prompt and answer)."""
    max_tokens: NotRequired[int]
    """The agent's token budget per flow (its spec's ``limits.max_tokens``), when it has one."""
    budget_start: NotRequired[dict[str, int]]
    """The budget counters (tool_calls, spawns, tokens) when the current flow began: a flow's budgets
    count from there."""
    steps: NotRequired[Annotated[list[StepRecord], operator.add]]
    plan: NotRequired[dict[str, Any]]
    """The execution plan (planner_first variant), an ``ExecutionPlan`` as a dict."""
    escalation: NotRequired[dict[str, Any]]
    """Set by human review: the reason escalated and the human's decision."""
    termination: NotRequired[dict[str, Any]]
    """The TerminationReport of this loop's stop."""
    reused_pattern: NotRequired[dict[str, Any]]
    """The village-knowledge pattern the master loop reused (the short path), if any."""
    model_failure: NotRequired[str | None]
    """Why this loop's model call failed (after the client's retries); the loop then stops."""
    handoff: NotRequired[Annotated[dict[str, Any] | None, keep_handoff]]
    """What this flow hands the user instead of an answer (a preview of a high-risk call, a question,
    or a failure with what to do; ``runtime.recovery``); the loop then stops."""
    notes: NotRequired[Annotated[list[str], operator.add]]
    """The context box's free-form notes: decisions the runtime and the user made along the way."""


class ToolTask(TypedDict):
    """What the agent node sends to one tools task (one per tool call, so each is checkpointed alone)."""

    call: dict[str, Any]
    """The tool call: ``name``, ``args``, ``id``."""
    depth: int
    approved: NotRequired[bool]
    """The user approved the flow's change already, in answering a question it asked ("10:30 works, go
    ahead"): a medium-risk call runs without its draft being shown again."""


CompiledLoop = CompiledStateGraph[Any, Any, Any, Any]
"""A compiled agent loop (or any graph run behind the loop's input and output contract)."""
