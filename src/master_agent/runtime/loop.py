"""``build_agent_loop``: one agent/tools loop from one spec, used at every depth.

The loop core (``runtime.core``) runs model turns and tool steps; each cross-cutting concern is a
middleware (``runtime.middleware``) this module composes per agent spec, in one documented order
(``runtime.middleware.__init__``): budgets, choices, risk, recovery, recall, opening calls, gathering,
scope, planner first, human review, termination. The master loop (depth 0) gets the flow-start
middleware (proposal feedback, recall, gathering, scope) and, per ``LoopLimits``, human review and the
``planner_first`` or ``parallel_research`` variant; sub-agents get the rest. An agent whose spec says
``"runtime": "deepagents"`` is a langchain ``create_agent`` harness instead (``runtime.deep_agents``,
which imports nothing of this module).
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass, field
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool
from langgraph.checkpoint.base import BaseCheckpointSaver

from master_agent.capabilities import AgentSpec, TenantCapabilities
from master_agent.models.budget import TokenCounter, estimate_tokens, schema_tokens
from master_agent.models.schemas import compact_tool, lean_tool, model_schema, openai_tool
from master_agent.runtime.answers import final_confidence, parse_final_answer, progress_keys, shape_answer
from master_agent.runtime.core import _AgentLoop
from master_agent.runtime.middleware import (
    BudgetsMiddleware,
    ChoicesMiddleware,
    ClaimsMiddleware,
    Gathering,
    GatheringMiddleware,
    HumanReviewMiddleware,
    LoopMiddleware,
    OpeningCallsMiddleware,
    PlannerFirstMiddleware,
    Recall,
    RecallMiddleware,
    RecallStep,
    RecoveryMiddleware,
    RiskMiddleware,
    ScopeMiddleware,
    TerminationMiddleware,
)
from master_agent.runtime.middleware import agent_budgets as _budgets_of
from master_agent.runtime.proposals import ProposalBook
from master_agent.runtime.state import CompiledLoop
from master_agent.runtime.sub_agents import TASK_FIELDS, sub_agent_tool_schema, task_text
from master_agent.runtime.termination import TerminationSink, iterations_within, recursion_limit_for

__all__ = [
    "TASK_FIELDS",
    "CompiledLoop",
    "Gathering",
    "LoopLimits",
    "NestedAgent",
    "Recall",
    "RecallStep",
    "agent_budgets",
    "build_agent_loop",
    "final_confidence",
    "iterations_within",
    "nested_agents",
    "parse_final_answer",
    "progress_keys",
    "recursion_limit_for",
    "register_nested_agents",
    "shape_answer",
    "sub_agent_tool_schema",
    "task_text",
]


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


def agent_budgets(spec: AgentSpec, limits: LoopLimits) -> dict[str, int]:
    """The per-run budgets binding ``spec``'s runs: the tighter of its own limits and the graph's."""
    return _budgets_of(
        spec,
        {
            "max_tool_calls": limits.max_tool_calls,
            "max_spawns": limits.max_spawns,
            "max_tokens": limits.max_tokens,
        },
    )


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
        compiled = self._deep(spec, depth, checkpointer) if spec.get("runtime") == "deepagents" else None
        if compiled is None:
            compiled = self._loop(spec, depth, checkpointer)
        if checkpointer is None:
            self.built[key] = compiled
        return compiled

    def _deep(
        self, spec: AgentSpec, depth: int, checkpointer: BaseCheckpointSaver[Any] | None
    ) -> CompiledLoop:
        # Imported here: deepagents takes about a second to import, paid only by graphs that use it.
        from master_agent.runtime.deep_agents import PromptBudgetMiddleware, build_deep_agent

        return build_deep_agent(
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

    def _loop(
        self, spec: AgentSpec, depth: int, checkpointer: BaseCheckpointSaver[Any] | None
    ) -> CompiledLoop:
        limits = self.limits
        plain: dict[str, BaseTool] = {}
        subs: dict[str, tuple[AgentSpec, CompiledLoop]] = {}
        schemas: list[dict[str, Any]] = []

        def offer_sub_agent(name: str) -> None:
            sub_spec = self.capabilities.sub_agents[name]
            subs[name] = (sub_spec, self.build(sub_spec, depth + 1))
            schemas.append(sub_agent_tool_schema(sub_spec))

        for name in spec["tools"]:
            if name in self.capabilities.tools:
                plain[name] = self.capabilities.tools[name]
                schemas.append(compact_tool(openai_tool(plain[name])))
            elif name in self.capabilities.sub_agents and depth < limits.max_depth:
                offer_sub_agent(name)
        opening: tuple[str, ...] = ()
        if depth == 0 and limits.variant == "parallel_research" and depth < limits.max_depth:
            opening = tuple(n for n, s in self.capabilities.sub_agents.items() if s.get("research"))
            for name in opening:
                if name not in subs:
                    offer_sub_agent(name)
        bound: Runnable[Any, Any] = self.model.bind_tools(schemas) if schemas else self.model
        lean = [lean_tool(schema) for schema in schemas]
        loop = _AgentLoop(
            spec=spec,
            depth=depth,
            plain=plain,
            subs=subs,
            bound_model=bound,
            limits=limits,
            middleware=tuple(self.middleware(spec, depth, plain, subs, schemas, opening)),
            model=self.model,
            tool_tokens=schema_tokens(schemas, limits.count_tokens),
            lean_tools=(self.model.bind_tools(lean), schema_tokens(lean, limits.count_tokens))
            if lean
            else None,
        )
        compiled = loop.graph().compile(checkpointer=checkpointer, name=spec["name"])
        register_nested_agents(
            compiled, {name: NestedAgent(sub, graph) for name, (sub, graph) in subs.items()}
        )
        return compiled

    def middleware(
        self,
        spec: AgentSpec,
        depth: int,
        plain: dict[str, BaseTool],
        subs: dict[str, tuple[AgentSpec, CompiledLoop]],
        schemas: list[dict[str, Any]],
        opening: tuple[str, ...],
    ) -> list[LoopMiddleware]:
        """The middleware of ``spec``'s loop at ``depth``, outermost first (the module docstring's order)."""
        limits, name, master = self.limits, spec["name"], depth == 0
        research = {sub: sub_spec for sub, (sub_spec, _) in subs.items() if sub_spec.get("research")}
        stack: list[LoopMiddleware] = [
            BudgetsMiddleware(budgets=agent_budgets(spec, limits), sub_agents=frozenset(subs)),
            ChoicesMiddleware(agent=name),
            ClaimsMiddleware(tools=plain),
            RiskMiddleware(
                agent=name,
                tools=plain,
                tool_risks=dict(spec.get("tool_risks") or {}),
                proposals=self.proposals,
                tenant_id=self.capabilities.tenant.tenant_id,
            ),
            RecoveryMiddleware(tools=plain),
        ]
        if master and self.recall is not None:
            short = [schema for schema in schemas if schema["function"]["name"] not in research]
            stack.append(
                RecallMiddleware(
                    agent=name,
                    recall=self.recall,
                    research_fields={
                        sub: frozenset(
                            key for key in sub_spec["output_schema"].model_fields if key != "confidence"
                        )
                        for sub, sub_spec in research.items()
                    },
                    short_model=self.model.bind_tools(short) if research and short else None,
                )
            )
        if opening:
            stack.append(OpeningCallsMiddleware(research=opening, parameters=_parameters(plain, subs)))
        if master and self.gathering is not None:
            stack.append(GatheringMiddleware(agent=name, gathering=self.gathering))
        if master:
            stack.append(ScopeMiddleware())
        if master and limits.variant == "planner_first":
            stack.append(PlannerFirstMiddleware(research=frozenset(research)))
        if master and limits.human_review:
            max_iterations = int(spec.get("limits", {}).get("max_iterations", limits.max_iterations))
            stack.append(HumanReviewMiddleware(agent=name, max_iterations=max_iterations))
        stack.append(TerminationMiddleware(spec=spec, depth=depth, sink=self.sink))
        return stack


def _parameters(plain: dict[str, BaseTool], subs: dict[str, tuple[AgentSpec, CompiledLoop]]) -> Any:
    def parameters(name: str) -> dict[str, Any]:
        if name in subs:
            return model_schema(subs[name][0]["input_schema"])
        found: dict[str, Any] = openai_tool(plain[name])["function"]["parameters"]
        return found

    return parameters


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
