"""The loop core: one agent's graph of model turns and tool steps, with its concerns as middleware
(``runtime.middleware``), run in the order the factory gave them.

Shape::

    START -> [recall: before_agent hooks] -> agent --(decide: continue)--> tools (one task per call) -> agent
                                                   --(end)--------------> finalize (after_agent) -> END
                                                   --(escalate)---------> human_review or finalize

Each tool call is its own ``Send`` task, so LangGraph checkpoints each call's result as it lands: after a
crash only unfinished calls run again, and one failing call never cancels its siblings. A sub-agent call
runs its compiled subgraph one level deeper (``runtime.sub_agents``). With ``PlannerFirstMiddleware`` the
agent/tools pair is replaced by ``plan -> run_plan``.
"""

from __future__ import annotations

import functools
import json
import logging
from dataclasses import dataclass
from typing import Any, TypeVar, cast

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langchain_core.runnables import Runnable, RunnableConfig
from langchain_core.tools import BaseTool
from langgraph.config import get_stream_writer
from langgraph.graph import END, START, StateGraph
from langgraph.types import Send

from master_agent.capabilities import AgentSpec, SubAgentEnvelope
from master_agent.models.schemas import model_schema, openai_tool
from master_agent.runtime.answers import progress_keys
from master_agent.runtime.context import new_context_box
from master_agent.runtime.middleware import (
    CallKind,
    CallOutcome,
    HumanReviewMiddleware,
    LoopMiddleware,
    ModelRequest,
    ModelResponse,
    PlannerFirstMiddleware,
    RecallMiddleware,
    ToolCallRequest,
    chain_model_calls,
    chain_tool_calls,
    tool_outcome,
)
from master_agent.runtime.middleware.risk import APPROVED_ALL
from master_agent.runtime.model_call import ModelCaller, with_call_ids
from master_agent.runtime.state import (
    CompiledLoop,
    ContextBox,
    MasterAgentState,
    ToolTask,
    TurnRecord,
)
from master_agent.runtime.sub_agents import call_sub_agent, envelope_outcome
from master_agent.runtime.termination import STAGNATION_REPEATS, aggregate_confidence, decide, progress_score
from master_agent.runtime.tool_calls import call_tool, outcome_update
from master_agent.runtime.turn_prompt import system_prompts, turn_box

logger = logging.getLogger(__name__)

M = TypeVar("M", bound=LoopMiddleware)

#: Step name a turn records for each malformed call (unparseable arguments, unknown tool), so that
#: turns of malformed calls count toward stagnation whatever names they carry.
MALFORMED_STEP = "<malformed call>"
#: Keys of the previous flow's end that a new flow clears.
FLOW_END_KEYS = ("escalation", "reused_pattern", "model_failure", "handoff")


@dataclass(frozen=True, kw_only=True)
class _AgentLoop:
    spec: AgentSpec
    depth: int
    plain: dict[str, BaseTool]
    subs: dict[str, tuple[AgentSpec, CompiledLoop]]
    bound_model: Runnable[Any, Any]
    limits: Any
    """The graph's ``LoopLimits``."""
    middleware: tuple[LoopMiddleware, ...]
    """The agent's concerns, outermost first (``runtime.loop`` composes them per spec)."""
    model: BaseChatModel | None = None
    """The unbound model (the planner's call)."""
    tool_tokens: int = 0
    """Prompt tokens of the tool schemas sent with each call."""
    lean_tools: tuple[Runnable[Any, Any], int] | None = None
    """The model bound to lean tool schemas, and their tokens: the last resort of a prompt over budget."""

    @property
    def name(self) -> str:
        return self.spec["name"]

    def _find(self, kind: type[M]) -> M | None:
        return next((layer for layer in self.middleware if isinstance(layer, kind)), None)

    def graph(self) -> StateGraph[MasterAgentState, Any, Any, Any]:
        # The nodes that take the state name it: langgraph would read it from their hints at every build
        # (``get_type_hints`` over the whole state, ~15% of a build's CPU).
        graph: StateGraph[MasterAgentState, Any, Any, Any] = StateGraph(MasterAgentState)
        planner = self._find(PlannerFirstMiddleware)
        first = "plan" if planner else "agent"
        if self.depth == 0:
            graph.add_node("recall", self.recall_step, input_schema=MasterAgentState)
            graph.add_edge(START, "recall")
            graph.add_edge("recall", first)
        else:
            graph.add_edge(START, first)
        graph.add_node("finalize", self.finalize, input_schema=MasterAgentState)
        graph.add_edge("finalize", END)
        if planner is not None:

            async def plan(state: MasterAgentState, config: RunnableConfig) -> dict[str, Any]:
                return await planner.plan(self, state, config)

            async def run_plan(state: MasterAgentState, config: RunnableConfig) -> dict[str, Any]:
                return await planner.run_plan(self, state, config)

            graph.add_node("plan", plan)
            graph.add_node("run_plan", run_plan)
            graph.add_edge("plan", "run_plan")
            graph.add_edge("run_plan", "finalize")
            return graph
        graph.add_node("agent", self.agent, input_schema=MasterAgentState)
        graph.add_node("tools", self.tools)  # type: ignore[arg-type]  # input is a ToolTask, not the state
        destinations = ["tools", "finalize"]
        review = self._find(HumanReviewMiddleware)
        if review is not None:
            graph.add_node("human_review", review, destinations=("agent", "finalize"))
            destinations.append("human_review")
        graph.add_conditional_edges("agent", self.route, destinations)
        graph.add_edge("tools", "agent")
        return graph

    def max_iterations(self) -> int:
        return int(self.spec.get("limits", {}).get("max_iterations", self.limits.max_iterations))

    def short_path(self, state: MasterAgentState) -> bool:
        recall = self._find(RecallMiddleware)
        return recall is not None and recall.short_path(state)

    def tool_parameters(self, name: str) -> dict[str, Any]:
        if name in self.subs:
            return model_schema(self.subs[name][0]["input_schema"])
        parameters: dict[str, Any] = openai_tool(self.plain[name])["function"]["parameters"]
        return parameters

    # -- the flow's first step -------------------------------------------------------------------

    async def recall_step(self, state: MasterAgentState, config: RunnableConfig) -> dict[str, Any]:
        """The first step of every flow of the master loop (a thread's first input, or each later user
        message): the flow's stop rules start afresh, then each middleware's ``before_agent``."""
        update: dict[str, Any] = {
            "iteration_count": 0,
            "max_iterations": self.max_iterations(),
            "recent_turns": [],
        }
        # What decided the previous flow's end does not carry over to this one.
        update.update({key: None for key in FLOW_END_KEYS if state.get(key)})
        findings = state.get("findings") or {}
        if findings.get("proposal") or findings.get(APPROVED_ALL):
            # A previous flow's proposal, or its approval of every change, is not this flow's.
            update["findings"] = {"proposal": None, APPROVED_ALL: None}
        previous = (state.get("context") or {}).get("previous_task")
        if previous:
            update["notes"] = [f"previous task {previous!r} was in progress; it is kept and can be resumed"]
        for layer in self.middleware:
            await layer.before_agent(state, config, update)
        return update

    # -- model turn ------------------------------------------------------------------------------

    def refresh(
        self, state: MasterAgentState
    ) -> tuple[dict[str, Any], ContextBox, list[AnyMessage], MasterAgentState]:
        """Start-of-turn bookkeeping: the first turn's context box and user message, then progress,
        confidence and the box's view of them. Returns (update, box, new messages, prompt state)."""
        update: dict[str, Any] = {}
        new_messages: list[AnyMessage] = []
        box = state.get("context_box")
        max_iterations = state.get("max_iterations") or self.max_iterations()
        for layer in self.middleware:
            layer.before_model(state, update)
        if box is None:
            context = state.get("context") or {}
            constraints = {
                "max_iterations": max_iterations,
                "depth": self.depth,
                "max_depth": self.limits.max_depth,
            }
            box = new_context_box(state.get("goal", ""), context, constraints)
            text = state.get("goal", "")
            if context:
                text += "\n\nInput: " + json.dumps(context, sort_keys=True, default=str)
            if not state.get("messages"):
                new_messages.append(HumanMessage(content=text))
            update.update(max_iterations=max_iterations, depth=self.depth)
        confidence = aggregate_confidence(state)
        progress = progress_score({**state, "confidence_score": confidence}, progress_keys(self.spec))
        box = turn_box(box, state, progress=progress, confidence=confidence)
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

    @functools.cached_property
    def call_model(self) -> ModelCaller:
        """Calls the model for this agent (``runtime.model_call``)."""
        return ModelCaller(agent=self.name, depth=self.depth, limits=self.limits)

    async def agent(self, state: MasterAgentState, config: RunnableConfig) -> dict[str, Any]:
        if state.get("handoff"):
            return {}  # a call ended the flow (a preview, a question, a failure): the stop rules finish it
        update, box, new_messages, prompt_state = self.refresh(state)
        history = [*(state.get("messages") or []), *new_messages]

        async def model_turn(request: ModelRequest) -> ModelResponse:
            systems = system_prompts(self.spec, self.depth, self.max_iterations(), prompt_state, request.box)
            reply, tokens = await self.call_model(
                request.model,
                systems,
                history,
                config,
                tool_tokens=self.tool_tokens,
                lean_tools=request.lean_tools,
            )
            return ModelResponse(reply=reply, tokens=tokens)

        request = ModelRequest(state=state, box=box, model=self.bound_model, lean_tools=self.lean_tools)
        response = await chain_model_calls(list(self.middleware), model_turn)(request)
        if response.model_calls:
            update["tokens_used"] = response.tokens
        update.update(iteration_count=state.get("iteration_count", 0) + 1, model_calls=response.model_calls)
        if isinstance(response.reply, str):
            box["next"] = []
            update.update(
                messages=new_messages,
                context_box=box,
                pending_actions=[],
                current_plan=[],
                model_failure=response.reply,
            )
            return update
        reply = with_call_ids(response.reply)
        calls = list(reply.tool_calls)
        box["next"] = [call["name"] for call in calls]
        steps = [call["name"] for call in calls]
        if reply.invalid_tool_calls or any(name not in {*self.plain, *self.subs} for name in steps):
            steps.append(MALFORMED_STEP)
        turn = TurnRecord(steps=steps, progress=update["progress_score"])
        update.update(
            messages=[*new_messages, reply],
            context_box=box,
            recent_turns=[*(state.get("recent_turns") or []), turn][-STAGNATION_REPEATS:],
            pending_actions=calls,
            current_plan=[call["name"] for call in calls],
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
            for layer in self.middleware:
                calls = layer.after_model(state, calls)
            approved = bool((state.get("context") or {}).get("draft_approved")) or bool(
                (state.get("findings") or {}).get(APPROVED_ALL)
            )
            return [Send("tools", ToolTask(call=call, depth=self.depth, approved=approved)) for call in calls]
        if decision.route == "escalate_to_human" and self._find(HumanReviewMiddleware):
            return "human_review"
        return "finalize"

    # -- tool step -------------------------------------------------------------------------------

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
        return await self.execute_call(
            call["name"],
            dict(call.get("args") or {}),
            call.get("id") or "",
            config,
            approved=bool(task.get("approved")),
            over_budget=call.get("over_budget"),
            needs=call.get("needs"),
            covers=list(call.get("covers") or []),
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
        over_budget: str | None = None,
        needs: dict[str, Any] | None = None,
        covers: list[str] | None = None,
    ) -> dict[str, Any]:
        """Run one tool or sub-agent call through the middleware; never raises for the call's own
        failure. With ``refusal`` (the result, the blocker) the call does not run: that error is its
        result."""
        kind: CallKind = "sub_agent" if name in self.subs else "tool" if name in self.plain else "unknown"
        event_kind = "sub_agent" if kind == "sub_agent" else "tool"
        writer = get_stream_writer()
        writer(
            {"event": "call_start", "agent": self.name, "depth": self.depth, "tool": name, "kind": event_kind}
        )
        if refusal is not None:
            outcome = CallOutcome(status="error", content=refusal[0], blockers=[refusal[1]])
        else:
            request = ToolCallRequest(
                name=name,
                args=args,
                call_id=call_id,
                config=config,
                kind=kind,
                approved=approved,
                over_budget=over_budget,
                needs=needs,
                covers=list(covers or []),
            )
            outcome = await chain_tool_calls(list(self.middleware), self.dispatch)(request)
        end = {"event": "call_end", "agent": self.name, "depth": self.depth, "tool": name, "kind": event_kind}
        writer({**end, "status": outcome.status})
        return outcome_update(
            outcome, agent=self.name, depth=self.depth, name=name, kind=event_kind, args=args, call_id=call_id
        )

    async def dispatch(self, request: ToolCallRequest) -> CallOutcome:
        """The innermost handler: run the tool or the sub-agent, or refuse a name this agent lacks."""
        name = request.name
        if request.kind == "sub_agent":
            spec, graph = self.subs[name]
            if self.depth + 1 > self.limits.max_depth:  # runtime guard; normally not offered at all
                envelope = SubAgentEnvelope.failure(f"sub-agent {name!r} refused: depth cap reached")
            else:
                limits = self.limits
                envelope = await call_sub_agent(
                    spec,
                    graph,
                    request.args,
                    max_iterations=limits.max_iterations,
                    timeout_s=limits.subagent_timeout_s,
                )
            return envelope_outcome(name, request.call_id, envelope)
        if request.kind == "tool":
            return tool_outcome(
                name, request.call_id, *await call_tool(self.plain[name], request.args, request.config)
            )
        if name in self.spec["tools"] and self.depth >= self.limits.max_depth:
            content = SubAgentEnvelope.failure(
                f"sub-agent {name!r} refused: depth cap {self.limits.max_depth} reached"
            ).model_dump_json(exclude={"steps", "context_box"})
        else:
            content = f"error: {name!r} is not a valid tool; use one of {sorted([*self.plain, *self.subs])}"
        return CallOutcome(status="error", content=content, blockers=[content])

    # -- stop ------------------------------------------------------------------------------------

    async def finalize(self, state: MasterAgentState, config: RunnableConfig) -> dict[str, Any]:
        update: dict[str, Any] = {}
        for layer in self.middleware:
            update.update(await layer.after_agent(state, config) or {})
        return update
