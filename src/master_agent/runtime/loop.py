"""``build_agent_loop``: one agent/tools loop from one spec, used at every depth.

Shape of every loop::

    START -> agent --(decide: continue)--> tools (one task per tool call, in parallel) -> agent
                   --(end)--------------> finalize -> END
                   --(escalate)---------> human_review (master of a strategic graph: interrupt())
                                          or finalize (everywhere else: a partial, flagged answer)

The master loop may start with a ``recall`` step (village knowledge): values a proven pattern or the
tenant implies are added to its input; research sub-agents are not offered when what they would find
is already known (the short path), which a pattern alone never settles: only the pattern travels.

Each tool call is its own ``Send`` task, so LangGraph checkpoints each call's result as it lands: after
a crash only unfinished calls run again, and one failing call never cancels its siblings. A sub-agent
is offered as a tool whose schema is its input schema; calling it runs its compiled subgraph one level
deeper with only the task it was given, and hands back one ``SubAgentEnvelope``.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import json
import logging
import weakref
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal, cast

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, ToolMessage
from langchain_core.runnables import Runnable, RunnableConfig
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.config import get_stream_writer
from langgraph.errors import GraphBubbleUp
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Command, Send, interrupt
from pydantic import BaseModel, ValidationError

from master_agent.capabilities import (
    AgentSpec,
    MissingInformation,
    SubAgentEnvelope,
    TenantCapabilities,
)
from master_agent.errors import PromptBudgetError, ToolFailure, ToolInputError
from master_agent.models.budget import (
    TokenCounter,
    estimate_tokens,
    fit_prompt,
    message_tokens,
    schema_tokens,
)
from master_agent.models.chat import describe_model_failure
from master_agent.models.offline import PLAN_TOOL_NAME, fill_arguments
from master_agent.models.prompt_blocks import render_tagged_json
from master_agent.models.schemas import compact_schema, compact_tool, lean_schema, lean_tool
from master_agent.runtime.context import (
    closing_context_box,
    compact_context_box,
    extract_entities,
    new_context_box,
    render_context_box,
)
from master_agent.runtime.planning import ExecutionPlan, PlanStep, build_plan_graph
from master_agent.runtime.proposals import (
    HOW_TO_ANSWER,
    Proposal,
    ProposalBook,
    approves,
    call_risk,
    read_feedback,
    revise_args,
)
from master_agent.runtime.recovery import (
    RETRIED,
    RETRY_DELAY_S,
    RETRY_LIMIT,
    answer_text,
    failure_decision,
    failure_handoff,
    guidance,
    low_confidence_question,
    pick_option,
)
from master_agent.runtime.state import MasterAgentState, StepRecord, ToolTask, TurnRecord
from master_agent.runtime.termination import (
    STAGNATION_REPEATS,
    TerminationReport,
    TerminationSink,
    aggregate_confidence,
    decide,
    progress_score,
)
from master_agent.runtime.verification import Check, verify_before_answer
from master_agent.storage.outages import is_outage

logger = logging.getLogger(__name__)

#: Argument names whose value, for a sub-agent, is the task text it was given.
TASK_FIELDS = ("task", "goal", "question", "problem", "objective")

#: Content of the tool message answering a call that never ran because the loop escalated.
SKIPPED_CALL = "skipped: the run was escalated to a human before this call ran"

#: Step name a turn records for each malformed call (unparseable arguments, unknown tool), so that
#: turns of malformed calls count toward stagnation whatever names they carry.
MALFORMED_STEP = "<malformed call>"

CompiledLoop = CompiledStateGraph[Any, Any, Any, Any]

#: Rounds of "change X to Y" one medium-risk draft may go through before it is dropped.
DRAFT_ROUNDS = 3
#: Notes of the context box shown in a prompt (the newest).
NOTES_SHOWN = 12


@dataclass(frozen=True)
class NestedAgent:
    """An agent a compiled graph calls inside one of its nodes (LangGraph cannot see those)."""

    spec: AgentSpec
    graph: CompiledLoop


#: What each compiled graph calls inside its nodes, by agent name (weakly: dropped with the graph).
_nested: weakref.WeakKeyDictionary[CompiledLoop, dict[str, NestedAgent]] = weakref.WeakKeyDictionary()


def register_nested_agents(graph: CompiledLoop, agents: dict[str, NestedAgent]) -> None:
    _nested[graph] = agents


def nested_agents(graph: CompiledLoop) -> dict[str, NestedAgent]:
    """The agents ``graph`` runs as sub-agents (or hands goals to), by name."""
    return dict(_nested.get(graph, {}))


#: Supersteps of one loop invocation besides its agent/tools pairs: the input, recall (or plan),
#: the last agent turn's stop route (finalize or human review) and finalize after a review.
LOOP_OVERHEAD_STEPS = 4


#: Agent turns a human's guidance buys at least (half the loop's cap when that is more).
REVIEW_EXTRA_TURNS = 2


def recursion_limit_for(max_iterations: int) -> int:
    """The LangGraph recursion limit that lets a loop with this iteration cap always reach its own
    stop rules (two supersteps per agent turn, plus the overhead; a run resumed after a review gets
    at most ``max(REVIEW_EXTRA_TURNS, cap // 2)`` turns), so an iteration cap ends in a flagged
    answer or a human review, never in ``GraphRecursionError``."""
    return 2 * max(max_iterations, REVIEW_EXTRA_TURNS) + LOOP_OVERHEAD_STEPS


def iterations_within(recursion_limit: int) -> int:
    """The largest iteration cap whose loop fits ``recursion_limit`` (0 when none does)."""
    return max(0, (recursion_limit - LOOP_OVERHEAD_STEPS) // 2)


@dataclass(frozen=True, kw_only=True)
class Recall:
    """What the master loop's first step found before the first model turn."""

    context: dict[str, Any] = field(default_factory=dict)
    """Values added to the loop's input (the request's own values win)."""
    reused_pattern: dict[str, Any] | None = None
    """The village-knowledge pattern taken as a short path, if any."""


RecallStep = Callable[[str, dict[str, Any]], Awaitable[Recall]]
"""(goal, known values) -> Recall."""


@dataclass(frozen=True, kw_only=True)
class Gathering:
    """How the master loop asks the user for critical information a request lacks (a pack's
    ``missing_information`` and ``goal_entities``)."""

    missing: Callable[[dict[str, Any]], MissingInformation | None]
    """The flow's values -> what it cannot go on without, or None."""
    read: Callable[[str], Awaitable[dict[str, Any]]]
    """An answer -> the values it states."""


#: Questions about missing information in one flow before it ends with the question instead.
GATHER_ROUNDS = 2


@dataclass(frozen=True, kw_only=True)
class LoopLimits:
    """Limits every loop of one graph obeys (per-agent ``limits`` in a spec override some)."""

    max_depth: int
    """Deepest sub-agent level (the master agent is depth 0)."""
    max_iterations: int
    """Agent turns per loop before escalation."""
    subagent_timeout_s: float
    """Wall-clock limit of one sub-agent call."""
    human_review: bool = False
    """Whether the master loop escalates to a human (``interrupt()``) instead of a partial answer."""
    variant: str = "control"
    """Shape of the master loop: ``control`` (the agent decides every turn), ``planner_first`` (a plan
    DAG is designed first and run as a graph) or ``parallel_research`` (all research sub-agents run
    at once before the first turn)."""
    prompt_tokens: int = 16_000
    """Token budget of one prompt (``MASTER_AGENT_PROMPT_TOKENS``)."""
    count_tokens: TokenCounter = estimate_tokens
    """How prompt tokens are counted (``MASTER_AGENT_TOKENIZER``)."""
    max_tool_calls: int | None = None
    """Tool and sub-agent calls per run of each loop (``configurable.max_tool_calls``)."""
    max_spawns: int | None = None
    """Sub-agent calls per run of each loop (``configurable.max_spawns``)."""
    max_tokens: int | None = None
    """Model tokens per run of each loop (``configurable.max_tokens``)."""


BUDGETS = ("max_tool_calls", "max_spawns", "max_tokens")


def agent_budgets(spec: AgentSpec, limits: LoopLimits) -> dict[str, int]:
    """The per-run budgets binding ``spec``'s runs: the tighter of its own limits and the graph's."""
    own: dict[str, Any] = dict(spec.get("limits", {}))
    budgets: dict[str, int] = {}
    for name in BUDGETS:
        values = [int(v) for v in (own.get(name), getattr(limits, name)) if v is not None]
        if values:
            budgets[name] = min(values)
    return budgets


@dataclass(kw_only=True)
class _LoopBuilder:
    capabilities: TenantCapabilities
    model: BaseChatModel
    limits: LoopLimits
    sink: TerminationSink
    recall: RecallStep | None = None
    gathering: Gathering | None = None
    proposals: ProposalBook | None = None
    built: dict[tuple[str, int], CompiledLoop] = field(default_factory=dict)

    def build(
        self, spec: AgentSpec, depth: int, checkpointer: BaseCheckpointSaver[Any] | None = None
    ) -> CompiledLoop:
        key = (spec["name"], depth)
        if key in self.built and checkpointer is None:
            return self.built[key]
        if spec.get("runtime") == "deepagents":
            # Imported here: the deep-agent runtime wraps a harness in this module's contract.
            from master_agent.runtime.deep_agents import PromptBudgetMiddleware, build_deep_agent

            deep = build_deep_agent(
                spec,
                capabilities=self.capabilities,
                model=self.model,
                sink=self.sink,
                max_iterations=self.limits.max_iterations,
                budgets=agent_budgets(spec, self.limits),
                may_spawn=depth < self.limits.max_depth,
                depth=depth,
                checkpointer=checkpointer,
                prompt_budget=PromptBudgetMiddleware(self.limits.prompt_tokens, self.limits.count_tokens),
            )
            if checkpointer is None:
                self.built[key] = deep
            return deep
        plain: dict[str, BaseTool] = {}
        subs: dict[str, tuple[AgentSpec, CompiledLoop]] = {}
        schemas: list[dict[str, Any]] = []
        for name in spec["tools"]:
            if name in self.capabilities.tools:
                plain[name] = self.capabilities.tools[name]
                schemas.append(compact_tool(convert_to_openai_tool(plain[name])))
            elif name in self.capabilities.sub_agents and depth < self.limits.max_depth:
                sub_spec = self.capabilities.sub_agents[name]
                subs[name] = (sub_spec, self.build(sub_spec, depth + 1))
                schemas.append(sub_agent_tool_schema(sub_spec))
        opening: tuple[str, ...] = ()
        if depth == 0 and self.limits.variant == "parallel_research" and depth < self.limits.max_depth:
            research = [n for n, s in self.capabilities.sub_agents.items() if s.get("research")]
            for name in research:
                if name not in subs:
                    sub_spec = self.capabilities.sub_agents[name]
                    subs[name] = (sub_spec, self.build(sub_spec, depth + 1))
                    schemas.append(sub_agent_tool_schema(sub_spec))
            opening = tuple(research)
        bound: Runnable[Any, Any] = self.model.bind_tools(schemas) if schemas else self.model
        researchers = {name for name, (sub_spec, _) in subs.items() if sub_spec.get("research")}
        short = [schema for schema in schemas if schema["function"]["name"] not in researchers]
        recall = self.recall if depth == 0 else None
        loop = _AgentLoop(
            spec=spec,
            depth=depth,
            plain=plain,
            subs=subs,
            bound_model=bound,
            limits=self.limits,
            sink=self.sink,
            human_review=self.limits.human_review and depth == 0,
            opening=opening,
            model=self.model,
            plan_first=depth == 0 and self.limits.variant == "planner_first",
            recall=recall,
            gathering=self.gathering if depth == 0 else None,
            research=frozenset(researchers),
            short_bound_model=self.model.bind_tools(short) if recall and researchers and short else None,
            tool_tokens=schema_tokens(schemas, self.limits.count_tokens),
            lean_tools=(
                (self.model.bind_tools(lean), schema_tokens(lean, self.limits.count_tokens))
                if (lean := [lean_tool(schema) for schema in schemas])
                else None
            ),
            proposals=self.proposals,
            tenant_id=self.capabilities.tenant.tenant_id,
        )
        compiled = loop.graph().compile(checkpointer=checkpointer, name=spec["name"])
        register_nested_agents(
            compiled, {name: NestedAgent(sub, graph) for name, (sub, graph) in subs.items()}
        )
        if checkpointer is None:
            self.built[key] = compiled
        return compiled


def build_agent_loop(
    spec: AgentSpec,
    *,
    capabilities: TenantCapabilities,
    model: BaseChatModel,
    limits: LoopLimits,
    sink: TerminationSink,
    depth: int = 0,
    checkpointer: BaseCheckpointSaver[Any] | None = None,
    recall: RecallStep | None = None,
    gathering: Gathering | None = None,
    proposals: ProposalBook | None = None,
) -> CompiledLoop:
    """Compile ``spec`` (and, recursively, its sub-agents) into an agent/tools loop.

    Sub-agent graphs are compiled without a checkpointer: they inherit the parent's, so their
    checkpoints live in the same thread under their own namespace. ``recall`` becomes the master
    loop's first step, where ``gathering`` also asks for missing information. ``proposals`` keeps
    previews of high-risk calls (``runtime.proposals``); without it a high-risk call can never run.
    """
    builder = _LoopBuilder(
        capabilities=capabilities,
        model=model,
        limits=limits,
        sink=sink,
        recall=recall,
        gathering=gathering,
        proposals=proposals,
    )
    return builder.build(spec, depth, checkpointer)


def sub_agent_tool_schema(spec: AgentSpec) -> dict[str, Any]:
    """The OpenAI-format tool a parent model sees for a sub-agent."""
    return {
        "type": "function",
        "function": {
            "name": spec["name"],
            "description": spec["description"],
            "parameters": compact_schema(spec["input_schema"].model_json_schema()),
        },
    }


def step_signature(name: str, args: dict[str, Any]) -> str:
    digest = hashlib.sha1(json.dumps(args, sort_keys=True, default=str).encode()).hexdigest()[:10]
    return f"{name}#{digest}"


def task_text(spec: AgentSpec, args: dict[str, Any]) -> str:
    for name in TASK_FIELDS:
        value = args.get(name)
        if isinstance(value, str) and value.strip():
            return value
    return spec["description"]


def progress_keys(spec: AgentSpec) -> list[str]:
    if "progress_keys" in spec:
        return list(spec["progress_keys"])
    schema = spec["output_schema"].model_json_schema()
    return [key for key in schema.get("required", []) if key != "confidence"]


def parse_final_answer(message: AnyMessage | None) -> dict[str, Any]:
    """The JSON object of a final model answer (tolerates a fenced block or surrounding prose)."""
    if not isinstance(message, AIMessage) or message.tool_calls:
        return {}
    text = message.content if isinstance(message.content, str) else json.dumps(message.content)
    start, end = text.find("{"), text.rfind("}")
    if start < 0 or end <= start:
        return {}
    try:
        answer = json.loads(text[start : end + 1])
    except json.JSONDecodeError:
        return {}
    return answer if isinstance(answer, dict) else {}


def final_confidence(answer: dict[str, Any], reported: float, has_reports: bool) -> float:
    """The answer's confidence: what its calls reported, capped by what the answer itself claims (the
    claim alone when no call reported any), within 0..1."""
    confidence = reported
    claimed = answer.get("confidence")
    if isinstance(claimed, int | float):
        confidence = min(reported, float(claimed)) if has_reports else float(claimed)
    return max(0.0, min(1.0, confidence))


def shape_answer(
    schema: type[BaseModel], answer: dict[str, Any], findings: dict[str, Any], confidence: float
) -> tuple[dict[str, Any], list[str]]:
    """The final answer shaped by the output schema (fields it lacks taken from what the calls found,
    ``confidence`` set) and, when it is incomplete, the limitation saying what is missing."""
    fields = schema.model_fields
    output = {key: value for key, value in answer.items() if key in fields}
    for key in fields:
        if key not in output and key in findings:
            output[key] = findings[key]
    if "confidence" in fields:
        output["confidence"] = confidence
    try:
        return schema.model_validate(output).model_dump(mode="json"), []
    except ValidationError as invalid:
        bad = {str(item["loc"][0]) for item in invalid.errors() if item["loc"]}
    # A value failing the schema (a model may break a limit its portable schema did not carry) is never
    # handed on as if checked: what the calls found takes its place, else it is left out.
    repaired = {key: value for key, value in output.items() if key not in bad}
    repaired.update(
        {key: findings[key] for key in bad if key in findings and findings[key] != output.get(key)}
    )
    try:
        return schema.model_validate(repaired).model_dump(mode="json"), []
    except ValidationError as still:
        failing = {str(item["loc"][0]) for item in still.errors() if item["loc"]}
    kept = {key: value for key, value in repaired.items() if key not in failing}
    return kept, [f"incomplete answer: {', '.join(sorted(bad | failing))} missing or invalid"]


def _jsonable(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    return value


@dataclass(kw_only=True)
class _CallOutcome:
    """What one call left: its tool message, and what it adds to the loop's state."""

    status: Literal["success", "partial", "error"]
    content: str
    findings: dict[str, Any] = field(default_factory=dict)
    confidences: dict[str, float] = field(default_factory=dict)
    blockers: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    children: list[StepRecord] = field(default_factory=list)
    handoff: dict[str, Any] | None = None


@dataclass(frozen=True, kw_only=True)
class _AgentLoop:
    spec: AgentSpec
    depth: int
    plain: dict[str, BaseTool]
    subs: dict[str, tuple[AgentSpec, CompiledLoop]]
    bound_model: Runnable[Any, Any]
    limits: LoopLimits
    sink: TerminationSink
    human_review: bool
    opening: tuple[str, ...] = ()
    """Tools called together before the first model turn (the parallel_research variant)."""
    model: BaseChatModel | None = None
    """The unbound model, for the planner_first variant's planning call."""
    plan_first: bool = False
    """Design a plan DAG first and run it as a graph (the planner_first variant)."""
    plan_graphs: dict[str, CompiledLoop] = field(default_factory=dict)
    """Compiled plan graphs by plan (a repeated plan is not compiled again)."""
    recall: RecallStep | None = None
    """The first step of the master loop (village knowledge, tenant defaults)."""
    gathering: Gathering | None = None
    """Asks the user for what a request lacks, in the recall step (None: nothing is asked)."""
    research: frozenset[str] = frozenset()
    """Research sub-agents offered here (skipped on the short path)."""
    short_bound_model: Runnable[Any, Any] | None = None
    """The model bound without research sub-agents, for the short path."""
    tool_tokens: int = 0
    """Prompt tokens of the tool schemas sent with each call."""
    lean_tools: tuple[Runnable[Any, Any], int] | None = None
    """The model bound to the tools without their parameters' descriptions, and their tokens: the
    last resort of a prompt over budget."""
    proposals: ProposalBook | None = None
    """Where previews of high-risk calls wait for the user (None: such calls never run)."""
    tenant_id: str = ""

    @property
    def name(self) -> str:
        return self.spec["name"]

    @functools.cached_property
    def budgets(self) -> dict[str, int]:
        return agent_budgets(self.spec, self.limits)

    def graph(self) -> StateGraph[MasterAgentState, Any, Any, Any]:
        graph: StateGraph[MasterAgentState, Any, Any, Any] = StateGraph(MasterAgentState)
        first = "plan" if self.plan_first else "agent"
        if self.depth == 0:
            graph.add_node("recall", self.recall_step)
            graph.add_edge(START, "recall")
            graph.add_edge("recall", first)
        else:
            graph.add_edge(START, first)
        if self.plan_first:
            graph.add_node("plan", self.plan)
            graph.add_node("run_plan", self.run_plan)
            graph.add_node("finalize", self.finalize)
            graph.add_edge("plan", "run_plan")
            graph.add_edge("run_plan", "finalize")
            graph.add_edge("finalize", END)
            return graph
        graph.add_node("agent", self.agent)
        graph.add_node("tools", self.tools)  # type: ignore[arg-type]  # input is a ToolTask, not the state
        graph.add_node("finalize", self.finalize)
        destinations = ["tools", "finalize"]
        if self.human_review:
            graph.add_node("human_review", self.review, destinations=("agent", "finalize"))
            destinations.append("human_review")
        graph.add_conditional_edges("agent", self.route, destinations)
        graph.add_edge("tools", "agent")
        graph.add_edge("finalize", END)
        return graph

    # -- recall --------------------------------------------------------------------------------

    async def recall_step(self, state: MasterAgentState, config: RunnableConfig) -> dict[str, Any]:
        """The first step of every flow of the master loop (a thread's first input, or each later
        user message): the flow's stop rules start afresh, then village knowledge is recalled."""
        update: dict[str, Any] = {
            "iteration_count": 0,
            "max_iterations": self._max_iterations(),
            "recent_turns": [],
        }
        # What decided the previous flow's end does not carry over to this one.
        update.update(
            {
                key: None
                for key in ("escalation", "reused_pattern", "model_failure", "handoff")
                if state.get(key)
            }
        )
        if (state.get("findings") or {}).get("proposal"):
            update["findings"] = {"proposal": None}  # a previous flow's proposal is not this flow's
        goal = state.get("goal", "")
        context = dict(state.get("context") or {})
        answered = await self.proposal_feedback(goal, config)
        if answered is not None:
            context = {**answered, **context}
            update["context"] = context
            proposal = answered["proposal"]
            update["findings"] = {"proposal": proposal}
            update["notes"] = [
                f"the user answered proposal {proposal['proposal_id']} ({proposal['tool']}): "
                f"{proposal['status']} ({proposal['feedback']!r})"
            ]
        if context.get("previous_task"):
            update["notes"] = [
                *update.get("notes", []),
                f"previous task {context['previous_task']!r} was in progress; it is kept and can be resumed",
            ]
        if self.recall is not None:
            await self._recall(goal, context, update)
        if self.gathering is not None:
            await self.gather(goal, dict(update.get("context", context)), update)
        scope = dict(update.get("context", context)).get("scope")
        if isinstance(scope, dict) and not update.get("handoff"):
            # The pack read the request as one it cannot answer in full (a figure its data lacks, or
            # one it has no strategy for): the flow ends with that, not with another figure's plan.
            update["handoff"] = {
                "kind": scope.get("kind", "out_of_scope"),
                "explanation": scope.get("explanation"),
                "what_you_can_do": scope.get("what_you_can_do"),
                "missing": list(scope.get("missing") or []),
                "facts": scope.get("facts"),
            }
        return update

    async def _recall(self, goal: str, context: dict[str, Any], update: dict[str, Any]) -> None:
        """Village knowledge and the pack's values for the goal, into ``update``."""
        assert self.recall is not None
        found = await self.recall(goal, {**extract_entities(goal), **context})
        update["context"] = {**found.context, **context}
        if found.reused_pattern is not None:
            update["reused_pattern"] = found.reused_pattern
            # What the pattern settles counts as found, so progress (and the stop rules) see it.
            update["findings"] = {
                **update.get("findings", {}),
                **dict(found.reused_pattern.get("values") or {}),
            }
            get_stream_writer()(
                {"event": "pattern_reused", "agent": self.name, "pattern": found.reused_pattern}
            )
            update["notes"] = [
                *update.get("notes", []),
                f"reused village-knowledge pattern {found.reused_pattern.get('pattern_id', '')}".rstrip(),
            ]

    async def gather(self, goal: str, context: dict[str, Any], update: dict[str, Any]) -> None:
        """Critical information the request lacks is asked of the user (``interrupt()``, kind
        ``clarification``, reason ``missing_information``) before the first turn; after
        ``GATHER_ROUNDS`` answers that do not give it, the flow ends with the question. Answering
        re-runs the recall step, whose reads are repeatable; a flow answering a proposal (recall's only
        write) carries its call's arguments and is never asked."""
        if self.gathering is None or context.get("proposal"):
            return
        notes: list[str] = []
        in_goal = extract_entities(goal)  # what the goal's own words settle ("Store 5")
        for _ in range(GATHER_ROUNDS):
            missing = self.gathering.missing({**in_goal, **context})
            if missing is None:
                break
            answer = answer_text(
                interrupt(
                    {
                        "kind": "clarification",
                        "reason": "missing_information",
                        "question": missing.question,
                        "fields": missing.fields,
                        "options": [],
                        "agent": self.name,
                    }
                )
            )
            stated = await self.gathering.read(answer)
            given = {
                key: value
                for key, value in stated.items()
                if value not in (None, "", []) and (key in missing.fields or key not in context)
            }
            if approves(answer):
                # "10:30 works, go ahead": the change is approved with its last missing value.
                given["draft_approved"] = True
            context.update(given)
            notes.append(
                f"asked the user for {', '.join(missing.fields)}: {answer!r} gave "
                + (", ".join(f"{key}={value}" for key, value in given.items()) or "nothing usable")
            )
        else:
            missing = self.gathering.missing({**in_goal, **context})
        if notes:
            update["context"] = context
            update["notes"] = [*update.get("notes", []), *notes]
        if missing is not None:
            update["handoff"] = {
                "kind": "question",
                "question": missing.question,
                "reason": "missing_information",
                "fields": missing.fields,
            }

    async def proposal_feedback(self, goal: str, config: RunnableConfig) -> dict[str, Any] | None:
        """A new flow that answers the thread's pending proposal (accept, revise, cancel): the answer
        is recorded, and the flow's context carries the proposal with the feedback (and, to accept or
        revise, the call's arguments: the accepted ones, or the ones the change makes)."""
        thread_id = str((config.get("configurable") or {}).get("thread_id") or "")
        if self.proposals is None or not thread_id:
            return None
        feedback = read_feedback(goal)
        if feedback is None:
            return None
        pending = await self.proposals.open_proposal(self.tenant_id, thread_id)
        if pending is None:
            return None
        statuses: dict[str, Literal["accepted", "cancelled", "revised"]] = {
            "accept": "accepted",
            "cancel": "cancelled",
            "revise": "revised",
        }
        answered = await self.proposals.answer(pending, statuses[feedback], goal)
        if answered is None:
            return None
        view = answered.view()
        if feedback == "cancel":
            return {"proposal": view}
        args = answered.args if feedback == "accept" else revise_args(answered.args, goal)
        return {"proposal": view, **args}

    def _short_path(self, state: MasterAgentState) -> bool:
        """Research is skipped only when what it would find is already known for this run: a reused
        pattern brings a driver to suspect, never this store's figures, so research still runs."""
        if not state.get("reused_pattern") or self.short_bound_model is None:
            return False
        findings = state.get("findings") or {}
        return all(
            key in findings
            for name in self.research
            for key in self.subs[name][0]["output_schema"].model_fields
            if key != "confidence"
        )

    # -- agent ---------------------------------------------------------------------------------

    def _max_iterations(self) -> int:
        return self.spec.get("limits", {}).get("max_iterations", self.limits.max_iterations)

    def system_prompts(self, state: MasterAgentState, box: Any) -> list[str]:
        """The system prompt, then its smaller forms for a prompt over budget: the compact context
        box, then also the output schema without descriptions."""
        compact = compact_context_box(box)
        return [
            self.system_prompt(state, box),
            self.system_prompt(state, compact),
            self.system_prompt(state, compact, lean=True),
        ]

    def system_prompt(self, state: MasterAgentState, box: Any, *, lean: bool = False) -> str:
        iteration = state.get("iteration_count", 0) + 1
        full = self.spec["output_schema"].model_json_schema()
        schema = lean_schema(full) if lean else compact_schema(full)
        return (
            f"{self.spec['system_prompt']}\n\n"
            f"You are agent '{self.name}' at depth {self.depth}. Iteration {iteration} of "
            f"{state.get('max_iterations', self._max_iterations())}; progress "
            f"{state.get('progress_score', 0.0):.0%}; confidence {state.get('confidence_score', 0.0):.2f}.\n"
            "Call the tools you need; independent calls may go in one turn. When you have enough "
            "for a sufficient (not perfect) answer, stop calling tools and reply with one JSON "
            "object matching the output schema below, built only from what your tools returned. "
            "Near the iteration limit, prefer completing over perfecting.\n"
            f"{render_tagged_json('output_schema', schema)}\n"
            f"{render_context_box(box)}"
        )

    def _refresh(
        self, state: MasterAgentState
    ) -> tuple[dict[str, Any], Any, list[AnyMessage], MasterAgentState]:
        """Start-of-turn bookkeeping: the first turn's context box and user message, then progress,
        confidence and the box's view of them. Returns (update, box, new messages, prompt state)."""
        update: dict[str, Any] = {}
        new_messages: list[AnyMessage] = []
        box = state.get("context_box")
        max_iterations = state.get("max_iterations") or self._max_iterations()
        if box is None:
            context = state.get("context") or {}
            box = new_context_box(
                state.get("goal", ""),
                context,
                {
                    "max_iterations": max_iterations,
                    "depth": self.depth,
                    "max_depth": self.limits.max_depth,
                },
            )
            text = state.get("goal", "")
            if context:
                text += "\n\nInput: " + json.dumps(context, sort_keys=True, default=str)
            if not state.get("messages"):
                new_messages.append(HumanMessage(content=text))
            update.update(max_iterations=max_iterations, depth=self.depth, budget_start=self.counters(state))
            if "max_tokens" in self.budgets:
                update["max_tokens"] = self.budgets["max_tokens"]
        confidence = aggregate_confidence(state)
        progress = progress_score({**state, "confidence_score": confidence}, progress_keys(self.spec))
        findings = state.get("findings") or {}
        box = {
            **box,
            "data": {**box["data"], "found": sorted(findings)},
            "progress": {
                "iteration": state.get("iteration_count", 0),
                "progress": progress,
                "confidence": confidence,
                "completed_steps": len(state.get("completed_steps") or []),
            },
            "blockers": list(state.get("blockers") or []),
            "notes": list(state.get("notes") or [])[-NOTES_SHOWN:],
        }
        prompt_state = cast(
            MasterAgentState,
            {
                **state,
                "confidence_score": confidence,
                "progress_score": progress,
                "max_iterations": max_iterations,
            },
        )
        update.update(confidence_score=confidence, progress_score=progress)
        return update, box, new_messages, prompt_state

    def opening_calls(self, state: MasterAgentState, box: Any) -> AIMessage:
        """The parallel_research variant's first turn: every research sub-agent at once, with
        arguments filled from the goal and input by the same rules as the offline planner."""
        known = {**box["entities"], **box["data"]["context"]}
        calls = []
        for name in self.opening:
            args = fill_arguments(self.tool_parameters(name), known, state.get("goal", ""))
            if args is not None:
                calls.append({"name": name, "args": args, "id": f"call_open_{name}", "type": "tool_call"})
        return AIMessage(content="", tool_calls=calls)

    def tool_parameters(self, name: str) -> dict[str, Any]:
        if name in self.subs:
            return self.subs[name][0]["input_schema"].model_json_schema()
        parameters: dict[str, Any] = convert_to_openai_tool(self.plain[name])["function"]["parameters"]
        return parameters

    async def call_model(
        self,
        model: Runnable[Any, Any],
        systems: list[str],
        history: list[AnyMessage],
        config: RunnableConfig,
        *,
        tool_tokens: int,
        lean_tools: tuple[Runnable[Any, Any], int] | None = None,
    ) -> tuple[AIMessage | str, int]:
        """One model call on a prompt fitted to the budget: the reply, or why the call failed (after
        the client's own retries), and the tokens it used (the server's count when it gives one). A
        failing model never raises out of a loop."""
        try:
            fitted = fit_prompt(
                systems,
                history,
                budget=self.limits.prompt_tokens,
                count=self.limits.count_tokens,
                fixed_tokens=tool_tokens,
            )
        except PromptBudgetError as error:
            if lean_tools is None:
                logger.warning("agent %s (depth %d) not called: %s", self.name, self.depth, error)
                return f"agent '{self.name}': {error}", 0
            # The last resort: the tools' parameters without their descriptions.
            model, tool_tokens = lean_tools
            return await self.call_model(model, systems, history, config, tool_tokens=tool_tokens)
        try:
            reply = await model.ainvoke(fitted.messages, config)
        except GraphBubbleUp:
            raise
        except Exception as error:
            if is_outage(error):
                raise
            logger.warning("model call of %s (depth %d) failed: %r", self.name, self.depth, error)
            return describe_model_failure(error), fitted.tokens
        if not isinstance(reply, AIMessage):
            return f"the model answered with a {type(reply).__name__}, not a message", fitted.tokens
        usage = reply.usage_metadata
        tokens = (
            usage["total_tokens"]
            if usage
            else fitted.tokens + message_tokens(reply, self.limits.count_tokens)
        )
        return reply, tokens

    def with_call_ids(self, reply: AIMessage) -> AIMessage:
        """The reply with every tool call named by an id (some servers send none; each needs an answer
        tied to it)."""
        ids = [call.get("id") for call in [*reply.tool_calls, *reply.invalid_tool_calls]]
        if all(ids) and len(set(ids)) == len(ids):
            return reply
        stamp = hashlib.sha1(str(ids).encode() + str(reply.content).encode()).hexdigest()[:8]
        tool_calls = [{**call, "id": f"call_{stamp}_{i}"} for i, call in enumerate(reply.tool_calls)]
        offset = len(tool_calls)
        invalid = [
            {**call, "id": f"call_{stamp}_{offset + i}"} for i, call in enumerate(reply.invalid_tool_calls)
        ]
        return reply.model_copy(update={"tool_calls": tool_calls, "invalid_tool_calls": invalid})

    def turn_steps(self, reply: AIMessage) -> list[str]:
        steps = [call["name"] for call in reply.tool_calls]
        known = {*self.plain, *self.subs}
        if reply.invalid_tool_calls or any(name not in known for name in steps):
            steps.append(MALFORMED_STEP)
        return steps

    async def agent(self, state: MasterAgentState, config: RunnableConfig) -> dict[str, Any]:
        if state.get("handoff"):
            return {}  # a call ended the flow (a preview, a question, a failure): the stop rules finish it
        update, box, new_messages, prompt_state = self._refresh(state)
        history = [*(state.get("messages") or []), *new_messages]
        reply: AIMessage | str
        if self.opening and not state.get("iteration_count") and not self._short_path(state):
            reply = self.opening_calls(state, box)
            model_calls = 0
        else:
            model = self.short_bound_model if self._short_path(state) else self.bound_model
            assert model is not None
            reply, tokens = await self.call_model(
                model,
                self.system_prompts(prompt_state, box),
                history,
                config,
                tool_tokens=self.tool_tokens,
                lean_tools=None if model is self.short_bound_model else self.lean_tools,
            )
            model_calls = 1
            update["tokens_used"] = tokens
        if isinstance(reply, str):
            box["next"] = []
            update.update(
                messages=new_messages,
                context_box=box,
                iteration_count=state.get("iteration_count", 0) + 1,
                pending_actions=[],
                current_plan=[],
                model_calls=model_calls,
                model_failure=reply,
            )
            return update
        reply = self.with_call_ids(reply)
        calls = list(reply.tool_calls)
        box["next"] = [call["name"] for call in calls]
        turn = TurnRecord(steps=self.turn_steps(reply), progress=update["progress_score"])
        update.update(
            messages=[*new_messages, reply],
            context_box=box,
            iteration_count=state.get("iteration_count", 0) + 1,
            recent_turns=[*(state.get("recent_turns") or []), turn][-STAGNATION_REPEATS:],
            pending_actions=calls,
            current_plan=[call["name"] for call in calls],
            model_calls=model_calls,
        )
        return update

    def route(self, state: MasterAgentState) -> list[Send] | str:
        decision = decide(state)
        if decision.route == "continue":
            last = cast(AIMessage, (state.get("messages") or [])[-1])
            calls = [dict(call) for call in last.tool_calls]
            calls += [
                {**call, "args": {}, "raw_args": call.get("args") or "", "malformed": call.get("error") or ""}
                for call in last.invalid_tool_calls
            ]
            approved = bool((state.get("context") or {}).get("draft_approved"))
            return [
                Send("tools", ToolTask(call=call, depth=self.depth, approved=approved))
                for call in self.within_budget(state, calls)
            ]
        if decision.route == "escalate_to_human" and self.human_review:
            return "human_review"
        return "finalize"

    @staticmethod
    def counters(state: MasterAgentState) -> dict[str, int]:
        """The loop's budget counters so far (a flow's budgets count from their values at its start)."""
        return {
            "tool_calls": int(state.get("tool_calls") or 0),
            "spawns": sum(1 for step in state.get("steps") or [] if step["kind"] == "sub_agent"),
            "tokens": int(state.get("tokens_used") or 0),
        }

    def within_budget(self, state: MasterAgentState, calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The turn's calls, those past the agent's tool-call or spawn budget for this run marked
        ``over_budget`` (they answer with the refusal instead of running)."""
        max_calls, max_spawns = self.budgets.get("max_tool_calls"), self.budgets.get("max_spawns")
        if max_calls is None and max_spawns is None:
            return calls
        now, start = self.counters(state), state.get("budget_start") or {}
        used = now["tool_calls"] - start.get("tool_calls", 0)
        spawned = now["spawns"] - start.get("spawns", 0)
        checked = []
        for call in calls:
            spawn = call.get("name") in self.subs
            if max_calls is not None and used >= max_calls:
                call = {**call, "over_budget": f"its budget of {max_calls} tool calls per run is spent"}
            elif spawn and max_spawns is not None and spawned >= max_spawns:
                call = {
                    **call,
                    "over_budget": f"its budget of {max_spawns} sub-agent spawns per run is spent",
                }
            else:
                used += 1
                spawned += spawn
            checked.append(call)
        return checked

    # -- planner_first ---------------------------------------------------------------------------

    def plan_request(self, box: Any, skip: frozenset[str] = frozenset()) -> dict[str, Any]:
        tools = []
        for name in self.spec["tools"]:
            if (name not in self.plain and name not in self.subs) or name in skip:
                continue
            parameters = self.tool_parameters(name)
            required = list(parameters.get("required") or [])
            provides = (
                list(self.subs[name][0]["output_schema"].model_json_schema().get("properties", {}))
                if name in self.subs
                else []
            )
            tools.append(
                {
                    "name": name,
                    "required": required,
                    "optional": [key for key in parameters.get("properties", {}) if key not in required],
                    "provides": [key for key in provides if key != "confidence"],
                }
            )
        known = sorted({*box["entities"], *box["data"]["context"]})
        return {"tools": tools, "known": known}

    async def plan(self, state: MasterAgentState, config: RunnableConfig) -> dict[str, Any]:
        update, box, new_messages, _ = self._refresh(state)
        assert self.model is not None
        skip = self.research if self._short_path(state) else frozenset()
        system = (
            f"{self.spec['system_prompt']}\n\nDesign an execution plan before acting: call "
            f"{PLAN_TOOL_NAME} with steps {{id, agent, depends_on}}. Each step calls one of the tools "
            "below once its dependencies are done; steps without a dependency between them run in "
            "parallel; leave out tools whose required inputs nothing provides.\n"
            f"{render_tagged_json('plan_request', self.plan_request(box, skip))}\n{render_context_box(box)}"
        )
        planner = self.model.bind_tools([ExecutionPlan], tool_choice=PLAN_TOOL_NAME)
        reply, tokens = await self.call_model(
            planner,
            [system],
            [*(state.get("messages") or []), *new_messages],
            config,
            tool_tokens=schema_tokens([convert_to_openai_tool(ExecutionPlan)], self.limits.count_tokens),
        )
        if isinstance(reply, str):
            return {
                **update,
                "messages": new_messages,
                "context_box": box,
                "plan": {},
                "current_plan": [],
                "iteration_count": 1,
                "model_calls": 1,
                "tokens_used": tokens,
                "model_failure": reply,
            }
        calls = [call for call in reply.tool_calls if call["name"] == PLAN_TOOL_NAME]
        plan: ExecutionPlan | None = None
        problem = f"the planner did not call {PLAN_TOOL_NAME}"
        if calls:
            try:
                plan = ExecutionPlan.model_validate(calls[0]["args"])
                plan.check({*self.plain, *self.subs})
            except (ValidationError, ValueError) as error:
                plan, problem = None, f"invalid plan: {error}"
        answer = ToolMessage(
            content=plan.model_dump_json() if plan else f"error: {problem}",
            tool_call_id=(calls[0]["id"] or "") if calls else "",
            name=PLAN_TOOL_NAME,
            status="success" if plan else "error",
        )
        messages: list[AnyMessage] = [*new_messages, reply, answer] if calls else [*new_messages, reply]
        return {
            **update,
            "messages": messages,
            "context_box": box,
            "plan": plan.model_dump() if plan else {},
            "current_plan": [step.agent for step in plan.steps] if plan else [],
            "blockers": [] if plan else [problem],
            "iteration_count": 1,
            "model_calls": 1,
            "tokens_used": tokens,
        }

    async def run_step(
        self, step: PlanStep, state: MasterAgentState, config: RunnableConfig
    ) -> dict[str, Any]:
        box = state.get("context_box")
        known = {
            **(box["entities"] if box else {}),
            **(state.get("context") or {}),
            **(state.get("findings") or {}),
        }
        args = fill_arguments(self.tool_parameters(step.agent), known, state.get("goal", ""))
        if args is None:
            kind = "sub_agent" if step.agent in self.subs else "tool"
            record = StepRecord(
                agent=self.name, depth=self.depth, tool=step.agent, kind=kind, status="error", children=[]
            )
            return {
                "steps": [record],
                "blockers": [f"{step.agent}: skipped, a required input was never produced"],
            }
        update = await self.execute_call(step.agent, args, f"plan_{step.id}", config)
        update.pop("messages")  # the plan graph keeps no conversation
        return update

    async def run_plan(self, state: MasterAgentState, config: RunnableConfig) -> dict[str, Any]:
        if not state.get("plan"):
            return {}
        plan = ExecutionPlan.model_validate(state["plan"])
        key = plan.model_dump_json()
        graph = self.plan_graphs.get(key)
        if graph is None:
            graph = self.plan_graphs[key] = build_plan_graph(plan, self.run_step, f"{self.name}_plan")
        result = await graph.ainvoke(
            {
                "goal": state.get("goal", ""),
                "context": state.get("context") or {},
                "context_box": state.get("context_box"),
            },
            {"recursion_limit": len(plan.steps) + 2},
        )
        carried = ("findings", "confidences", "steps", "completed_steps", "blockers", "tool_calls")
        return {key: result[key] for key in carried if key in result}

    # -- tools ---------------------------------------------------------------------------------

    async def tools(self, task: ToolTask, config: RunnableConfig) -> dict[str, Any]:
        call = task["call"]
        if "malformed" in call:
            # Arguments that were not a JSON object: the error, once, as the call's result.
            raw = str(call.get("raw_args") or "")
            refusal = (
                f"error: the arguments of {call['name']!r} are not a valid JSON object "
                f"({call['malformed'] or 'unparseable'}); call it again with a JSON object matching "
                f"its schema. Received: {raw[:200]}"
            )
            blocker = f"{call['name']}: malformed call (arguments not valid JSON)"
            return await self.execute_call(
                call["name"], {}, call.get("id") or "", config, refusal=(refusal, blocker)
            )
        if "over_budget" in call:
            why = f"{call['name']} not run: {call['over_budget']}"
            refusal = f"error: {why}; answer with what you have"
            return await self.execute_call(
                call["name"],
                dict(call.get("args") or {}),
                call.get("id") or "",
                config,
                refusal=(refusal, why),
            )
        return await self.execute_call(
            call["name"],
            dict(call.get("args") or {}),
            call.get("id") or "",
            config,
            approved=bool(task.get("approved")),
        )

    async def execute_call(
        self,
        name: str,
        args: dict[str, Any],
        call_id: str,
        config: RunnableConfig,
        *,
        refusal: tuple[str, str] | None = None,
        approved: bool = False,
    ) -> dict[str, Any]:
        """Run one tool or sub-agent call; never raises for the call's own failure. With ``refusal``
        (the result, the blocker) the call does not run: that error is its result."""
        status: Literal["success", "partial", "error"]
        kind = "sub_agent" if name in self.subs else "tool"
        writer = get_stream_writer()
        writer(
            {
                "event": "call_start",
                "agent": self.name,
                "depth": self.depth,
                "tool": name,
                "kind": kind,
            }
        )
        outcome = _CallOutcome(status="error", content="")
        if refusal is not None:
            outcome = _CallOutcome(status="error", content=refusal[0], blockers=[refusal[1]])
        elif name in self.subs:
            envelope = await self.call_sub_agent(name, args)
            outcome = _CallOutcome(
                status=envelope.status,
                content=envelope.model_dump_json(exclude={"steps", "context_box"}),
                children=cast(list[StepRecord], envelope.steps),
                blockers=[f"{name}: {item}" for item in envelope.limitations],
                handoff=envelope.handoff,
            )
            if envelope.status != "error":
                outcome.findings = {name: envelope.data, **envelope.data}
                outcome.confidences[call_id or name] = envelope.confidence
            elif envelope.error_type and envelope.handoff is None:
                outcome.notes = [self.failure_note(name, envelope.error_type)]
        elif name in self.plain:
            outcome = await self.plain_call(name, args, call_id, config, approved=approved)
        else:
            if name in self.spec["tools"] and self.depth >= self.limits.max_depth:
                content = SubAgentEnvelope.failure(
                    f"sub-agent {name!r} refused: depth cap {self.limits.max_depth} reached"
                ).model_dump_json(exclude={"steps", "context_box"})
            else:
                valid = sorted([*self.plain, *self.subs])
                content = f"error: {name!r} is not a valid tool; use one of {valid}"
            outcome = _CallOutcome(status="error", content=content, blockers=[content])
        status = outcome.status
        writer(
            {
                "event": "call_end",
                "agent": self.name,
                "depth": self.depth,
                "tool": name,
                "kind": kind,
                "status": status,
            }
        )
        record = StepRecord(
            agent=self.name,
            depth=self.depth,
            tool=name,
            kind=kind,
            status=status,
            children=outcome.children,
        )
        update: dict[str, Any] = {
            "messages": [
                ToolMessage(
                    content=outcome.content,
                    tool_call_id=call_id,
                    name=name,
                    status="error" if status == "error" else "success",
                )
            ],
            "findings": outcome.findings,
            "confidences": outcome.confidences,
            "completed_steps": [step_signature(name, args)],
            "steps": [record],
            "blockers": outcome.blockers,
            "tool_calls": 1,
        }
        if outcome.notes:
            update["notes"] = outcome.notes
        if outcome.handoff is not None:
            update["handoff"] = outcome.handoff
        return update

    async def plain_call(
        self, name: str, args: dict[str, Any], call_id: str, config: RunnableConfig, *, approved: bool = False
    ) -> _CallOutcome:
        """One plain tool call under its risk tier (``runtime.proposals``) and the failure matrix
        (``runtime.recovery``)."""
        tool = self.plain[name]
        risk = call_risk(tool, args, (self.spec.get("tool_risks") or {}).get(name))
        notes: list[str] = []
        claimed: Proposal | None = None
        if risk == "medium" and approved:
            notes.append(f"{name}: medium risk, approved by the user with the answer that completed it")
        elif risk == "medium":
            args, declined = await self.approve_draft(name, args)
            if declined is not None:
                return declined
            notes.append(f"{name}: medium risk, the user approved the draft")
        elif risk == "high":
            claimed = await self.claim_accepted(name, args, config)
            if claimed is None:
                return await self.preview(name, args, call_id, config)
            notes.append(f"{name}: high risk, running the accepted proposal {claimed.proposal_id}")
        status, result = await self.call_tool(name, args, config)
        for _ in range(RETRY_LIMIT):
            if not (status == "error" and isinstance(result, dict) and result.get("error_type") in RETRIED):
                break
            notes.append(f"{name}: {result['error_type']}, called again")
            await asyncio.sleep(RETRY_DELAY_S)
            status, result = await self.call_tool(name, args, config)
        if claimed is not None and self.proposals is not None:
            await self.proposals.finish(claimed, ok=status == "success", result=result)
        if status == "success" and isinstance(result, dict):
            result, chosen = self.resolve_choices(name, result)
            notes.extend(chosen)
        content = result if isinstance(result, str) else json.dumps(result, default=str)
        outcome = _CallOutcome(status=status, content=content, notes=notes)
        if status == "success" and isinstance(result, dict):
            outcome.findings = {name: result, **result}
            if isinstance(result.get("confidence"), int | float):
                outcome.confidences[call_id or name] = float(result["confidence"])
        elif status == "error" and isinstance(result, dict) and result.get("error_type"):
            error_type = str(result["error_type"])
            alternatives = self.alternatives(name)
            decision = failure_decision(error_type, alternatives)
            told = {**result, "decision": decision, "guidance": guidance(decision)}
            if decision == "try_another_way" and alternatives:
                told["alternatives"] = alternatives
            outcome.content = json.dumps(told, default=str)
            outcome.blockers = [f"{name}: {result['error']}"]
            outcome.notes.append(self.failure_note(name, error_type))
            if decision in ("exit", "ask_user"):
                outcome.handoff = failure_handoff(
                    name, error_type, str(result["error"]), dict(result.get("context") or {})
                )
        elif status == "error":
            outcome.blockers = [f"{name}: {result}"]
        return outcome

    def failure_note(self, name: str, error_type: str) -> str:
        alternatives = self.alternatives(name)
        decision = failure_decision(error_type, alternatives)
        instead = f" ({', '.join(alternatives)})" if decision == "try_another_way" and alternatives else ""
        return f"{name} failed ({error_type}): decided {decision}{instead}"

    def alternatives(self, name: str) -> list[str]:
        """This agent's tools declared ``instead_of`` ``name`` (metadata): another way to the same
        facts when ``name``'s service is down."""
        return [
            other
            for other, tool in self.plain.items()
            if other != name and (tool.metadata or {}).get("instead_of") == name
        ]

    async def describe_call(self, name: str, args: dict[str, Any]) -> dict[str, Any]:
        """What a call would do, in the tool's own words when it has them (``metadata["preview_of"]``:
        args -> dict, possibly awaitable), else its arguments."""
        describe = (self.plain[name].metadata or {}).get("preview_of")
        if not callable(describe):
            return dict(args)
        try:
            detail = describe(args)
            if asyncio.iscoroutine(detail):
                detail = await detail
        except (ToolInputError, ToolFailure, ValidationError) as error:
            return {**args, "problem": str(error)}
        return dict(detail) if isinstance(detail, dict) else dict(args)

    async def approve_draft(
        self, name: str, args: dict[str, Any]
    ) -> tuple[dict[str, Any], _CallOutcome | None]:
        """A medium-risk call shown as a draft until the user approves it (its arguments, None), cancels
        it or asks for a change the runtime cannot apply (the arguments, the outcome that replaces the
        call). "change X to Y" is applied to the draft and shown again."""
        draft = dict(args)
        text = ""
        for _ in range(DRAFT_ROUNDS):
            answer = interrupt(
                {
                    "kind": "approval",
                    "question": f"Approve this draft of {name}? Reply 'approve', 'cancel', or "
                    "'change X to Y'.",
                    "options": ["approve", "cancel"],
                    "agent": self.name,
                    "tool": name,
                    "risk": "medium",
                    "draft": draft,
                    "detail": await self.describe_call(name, draft),
                }
            )
            text = answer_text(answer)
            feedback = read_feedback(text)
            if feedback == "accept":
                return draft, None
            if feedback != "revise":
                break
            revised = revise_args(draft, text)
            if revised == draft:
                break
            draft = revised
        if not text or read_feedback(text) == "cancel":
            reason = (
                f"declined: the user cancelled this {name} ({text!r}); it did not run. Do not call it again."
            )
            note = f"{name}: medium risk, the user cancelled the draft"
            blocker = f"{name}: cancelled by the user, not run ({text or 'no answer'})"
        else:
            reason = (
                f"declined: the user asked for a change the draft could not take ({text!r}); it did not "
                "run. Call it again with the change."
            )
            note = f"{name}: medium risk, the user asked for a change: {text!r}"
            blocker = f"{name}: not run ({text})"
        return draft, _CallOutcome(
            status="error",
            content=reason,
            blockers=[blocker],
            notes=[note],
        )

    async def claim_accepted(
        self, name: str, args: dict[str, Any], config: RunnableConfig
    ) -> Proposal | None:
        thread_id = str((config.get("configurable") or {}).get("thread_id") or "")
        if self.proposals is None or not thread_id:
            return None
        return await self.proposals.claim(self.tenant_id, thread_id, name, args)

    async def preview(
        self, name: str, args: dict[str, Any], call_id: str, config: RunnableConfig
    ) -> _CallOutcome:
        """A high-risk call not accepted yet: stored as a pending proposal (its preview), never run;
        the flow ends with the preview."""
        tool = self.plain[name]
        preview = {
            "tool": name,
            "risk": "high",
            "description": tool.description,
            "call": args,
            "detail": await self.describe_call(name, args),
            "how_to_answer": HOW_TO_ANSWER,
        }
        thread_id = str((config.get("configurable") or {}).get("thread_id") or "")
        view: dict[str, Any] = {"proposal_id": None, "tool": name, "args": args, "status": "not stored"}
        if self.proposals is not None and thread_id:
            proposal = await self.proposals.propose(
                tenant_id=self.tenant_id,
                thread_id=thread_id,
                call_id=call_id,
                agent=self.name,
                tool=name,
                args=args,
                risk="high",
                preview=preview,
            )
            view = proposal.view()
            note = f"{name}: high risk, preview {proposal.proposal_id} stored; waiting for the user"
        else:
            note = f"{name}: high risk and no proposal book here: it cannot run"
        content = {
            "status": "preview",
            "executed": False,
            "proposal": view,
            "note": "Not run: this call is high risk. The flow ends with this preview; the user accepts, "
            "revises or cancels it in a new message.",
        }
        return _CallOutcome(
            status="partial",
            content=json.dumps(content, default=str),
            findings={"proposal": view},
            notes=[note],
            handoff={"kind": "preview", "proposal": view, "how_to_answer": HOW_TO_ANSWER},
        )

    def resolve_choices(self, name: str, result: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
        """A result offering ``choices`` (``{"field", "question", "options": [{"label", "value"}]}``,
        e.g. two contacts named David) asks the user (``interrupt()``, multiple choice); the chosen
        option's value is the result's ``field``."""
        choices = result.get("choices")
        if not isinstance(choices, dict):
            return result, []
        options = [o for o in choices.get("options") or [] if isinstance(o, dict) and "label" in o]
        field_name = str(choices.get("field") or "")
        if len(options) < 2 or not field_name:
            return result, []
        labels = [str(o["label"]) for o in options]
        answer = answer_text(
            interrupt(
                {
                    "kind": "clarification",
                    "question": str(choices.get("question") or f"Which one did you mean ({name})?"),
                    "options": labels,
                    "agent": self.name,
                    "tool": name,
                }
            )
        )
        picked = pick_option(answer, labels)
        resolved = {key: value for key, value in result.items() if key != "choices"}
        if picked is None:
            resolved["unresolved"] = f"the user's answer {answer!r} matched none of {labels}"
            return resolved, [f"{name}: the user's answer {answer!r} matched no option"]
        chosen = options[labels.index(picked)]
        resolved[field_name] = chosen.get("value")
        resolved["chosen"] = picked
        resolved["confidence"] = max(float(result.get("confidence") or 0.0), 0.95)
        return resolved, [f"{name}: the user chose {picked!r}"]

    async def call_tool(
        self, name: str, args: dict[str, Any], config: RunnableConfig
    ) -> tuple[Literal["success", "error"], Any]:
        try:
            result = await self.plain[name].ainvoke(args, config)
        except GraphBubbleUp:
            raise
        except (ToolInputError, ValidationError) as error:
            return "error", f"error: {error}"
        except ToolFailure as failure:
            return "error", {
                "error": str(failure),
                "error_type": failure.error_type,
                "context": failure.context,
            }
        except Exception as error:
            if is_outage(error):
                raise  # the run waits for the database and repeats the step; the model never sees it
            # A broken tool must not take the run (or its sibling calls) down with it.
            logger.exception("tool %s failed", name)
            return "error", f"error: tool {name} failed: {type(error).__name__}: {error}"
        return "success", _jsonable(result)

    async def call_sub_agent(self, name: str, args: dict[str, Any]) -> SubAgentEnvelope:
        spec, graph = self.subs[name]
        if self.depth + 1 > self.limits.max_depth:  # runtime guard; normally not offered at all
            return SubAgentEnvelope.failure(f"sub-agent {name!r} refused: depth cap reached")
        try:
            sub_args = spec["input_schema"].model_validate(args).model_dump(mode="json")
        except ValidationError as error:
            return SubAgentEnvelope.failure(f"invalid arguments for {name}: {error}")
        limits = spec.get("limits", {})
        max_iterations = limits.get("max_iterations", self.limits.max_iterations)
        timeout = limits.get("timeout_s", self.limits.subagent_timeout_s)
        try:
            final = await asyncio.wait_for(
                graph.ainvoke(
                    {
                        "goal": task_text(spec, sub_args),
                        "context": sub_args,
                        "max_iterations": max_iterations,
                    },
                    {"recursion_limit": recursion_limit_for(max_iterations)},
                ),
                timeout,
            )
        except GraphBubbleUp:
            raise
        except TimeoutError:
            return SubAgentEnvelope.failure(f"sub-agent {name} timed out after {timeout:g} s")
        except Exception as error:
            if is_outage(error):
                raise
            logger.exception("sub-agent %s failed", name)
            return SubAgentEnvelope.failure(f"sub-agent {name} failed: {type(error).__name__}: {error}")
        return SubAgentEnvelope.model_validate(final["envelope"])

    # -- stop ----------------------------------------------------------------------------------

    def review(self, state: MasterAgentState) -> Command[Any]:
        decision = decide(state)
        answer = interrupt(
            {
                "question": "The agent escalated. Reply 'approve' (accept the partial answer), "
                "'reject' (stop), or guidance text (continue with it).",
                "agent": self.name,
                "reason": decision.reason,
                "goal": state.get("goal", ""),
                "iterations": state.get("iteration_count", 0),
                "progress": state.get("progress_score", 0.0),
                "confidence": state.get("confidence_score", 0.0),
                "found": sorted(state.get("findings") or {}),
                "blockers": list(state.get("blockers") or []),
            }
        )
        verdict = answer.get("decision", "") if isinstance(answer, dict) else answer
        verdict = str(verdict).strip()
        if verdict.lower() in ("approve", "reject"):
            return Command(
                goto="finalize",
                update={
                    "escalation": {"reason": decision.reason, "decision": verdict.lower()},
                    "notes": [f"escalated ({decision.reason}); the reviewer answered {verdict.lower()}"],
                },
            )
        extra = max(REVIEW_EXTRA_TURNS, self._max_iterations() // 2)
        last = (state.get("messages") or [])[-1]
        # Every tool call needs an answer before the next user turn (OpenAI rejects the history
        # otherwise); the calls the escalation stopped are answered as skipped.
        skipped = [
            ToolMessage(
                content=SKIPPED_CALL, tool_call_id=call["id"] or "", name=call["name"], status="error"
            )
            for call in [
                *(getattr(last, "tool_calls", None) or []),
                *(getattr(last, "invalid_tool_calls", None) or []),
            ]
        ]
        return Command(
            goto="agent",
            update={
                "messages": [*skipped, HumanMessage(content=verdict or "Continue.")],
                "max_iterations": state.get("iteration_count", 0) + extra,
                "notes": [f"escalated ({decision.reason}); the reviewer's guidance: {verdict or 'continue'}"],
            },
        )

    async def finalize(self, state: MasterAgentState, config: RunnableConfig) -> dict[str, Any]:
        escalation = state.get("escalation")
        decision = decide(state)
        limitations: list[str] = []
        error: str | None = None
        failure = state.get("model_failure")
        handoff = state.get("handoff")
        if handoff:
            reason = decision.reason
            kind = handoff.get("kind")
            if kind == "preview":
                limitations.append(f"waiting for your acceptance of the preview: {HOW_TO_ANSWER}")
            elif kind == "question":
                limitations.append(f"needs your answer: {handoff.get('question')}")
            else:
                limitations.append(str(handoff.get("explanation")))
                limitations.append(f"what you can do: {handoff.get('what_you_can_do')}")
        elif failure:
            reason = "model_error"
            limitations.append(f"the agent stopped: {failure}")
        elif escalation:
            reason = f"escalated:{escalation['reason']}:{escalation['decision']}"
        elif decision.route == "escalate_to_human":
            reason = f"escalated:{decision.reason}"
            limitations.append(f"stopped early ({decision.reason}); the answer may be incomplete")
        else:
            reason = decision.reason
        messages = state.get("messages") or []
        answer = parse_final_answer(messages[-1] if messages else None)
        confidence = final_confidence(answer, aggregate_confidence(state), bool(state.get("confidences")))
        data, incomplete = shape_answer(
            self.spec["output_schema"], answer, state.get("findings") or {}, confidence
        )
        complete = not incomplete
        limitations.extend(incomplete)
        checks: list[Check] = []
        no_answer: str | None = None
        if not handoff and not failure:
            asked = {**extract_entities(str(state.get("goal") or "")), **dict(state.get("context") or {})}
            verified = verify_before_answer(
                data,
                asked,
                confidence,
                model_finished=decision.reason == "completed" and not escalation,
                tools_called=bool(state.get("completed_steps")),
            )
            data, confidence, checks = verified.data, verified.confidence, verified.checks
            limitations.extend(verified.limitations)
            no_answer = verified.no_answer
        status: Literal["success", "partial", "error"] = "success" if complete else "partial"
        floor = self.spec.get("ask_below_confidence")
        if floor is not None and confidence < floor and not (handoff or failure or escalation):
            handoff = low_confidence_question(confidence, state.get("blockers") or [])
            limitations.append(f"needs your answer: {handoff['question']}")
            reason = "ask_user"
        if limitations and status == "success":
            status = "partial"
        if failure and not complete:
            status, error = "error", failure
        if no_answer is not None:
            status, error = "error", no_answer
            limitations.append(no_answer)
        if escalation and escalation["decision"] == "reject":
            status, error = "error", "rejected by a human reviewer"
        if handoff and handoff.get("kind") == "failure":
            status, error = "error", str(handoff.get("explanation"))
        limitations.extend(state.get("blockers") or [])
        report = TerminationReport.in_run(
            config,
            agent=self.name,
            depth=self.depth,
            reason=reason,
            iterations=state.get("iteration_count", 0),
            progress=progress_score({**state, "confidence_score": confidence}, progress_keys(self.spec)),
            confidence=confidence,
            steps=list(state.get("completed_steps") or []),
        )
        await self.sink.record(report)
        envelope = SubAgentEnvelope(
            status=status,
            data=data,
            confidence=confidence,
            limitations=limitations,
            error=error,
            error_type=(handoff or {}).get("error_type"),
            error_context=dict((handoff or {}).get("context") or {}),
            handoff=handoff or None,
            steps=cast(list[dict[str, Any]], list(state.get("steps") or [])),
            verification=[check.model_dump() for check in checks],
            context_box=dict(
                closing_context_box(
                    state.get("context_box"),
                    str(state.get("goal") or ""),
                    dict(state.get("context") or {}),
                    steps=list(state.get("completed_steps") or []),
                    blockers=list(state.get("blockers") or []),
                    notes=list(state.get("notes") or []),
                    handoff=handoff or None,
                    limitations=limitations,
                    outcome=data.get("action"),
                )
            ),
        )
        return {
            "solution": data,
            "envelope": envelope.model_dump(mode="json"),
            "termination": report.model_dump(),
            "confidence_score": confidence,
            "progress_score": report.progress,
        }
