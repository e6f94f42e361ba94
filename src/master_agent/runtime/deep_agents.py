"""Agents whose runtime is ``deepagents``: the tenant agent document says ``"runtime": "deepagents"``
and it runs as a real ``deepagents.create_deep_agent`` harness instead of our agent loop.

Its sub-agents become the harness's sub-agents (each with its own prompt, output schema and tools),
reached through deepagents' ``task`` tool; its own tools are the harness's tools. Around the harness
sits the loop's contract, so a deep agent is run, routed to, nested and evaluated like any other
agent: it takes ``goal`` and ``context`` and answers ``solution`` and ``envelope``. The budgets of the
document bind the harness through LangChain's call-limit middleware: ``max_iterations`` model calls,
``max_tool_calls`` tool calls, ``max_spawns`` sub-agent spawns and ``max_tokens`` tokens per run (the
tighter of the document's and the run's budgets).
"""

from __future__ import annotations

import json
import logging
from typing import Any, Literal

from deepagents import SubAgent, create_deep_agent
from langchain.agents.middleware import (
    AgentMiddleware,
    ModelCallLimitMiddleware,
    ToolCallLimitMiddleware,
    hook_config,
)
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.errors import GraphRecursionError
from langgraph.graph import END, START, StateGraph

from master_agent.capabilities.envelope import SubAgentEnvelope
from master_agent.capabilities.registry import TenantCapabilities
from master_agent.capabilities.spec import AgentSpec
from master_agent.models.budget import (
    TokenCounter,
    estimate_tokens,
    fit_prompt,
    message_tokens,
    schema_tokens,
)
from master_agent.models.chat import content_text, describe_model_failure
from master_agent.models.prompt_blocks import render_tagged_json
from master_agent.models.schemas import compact_schema, model_schema
from master_agent.runtime.answers import final_confidence, parse_final_answer, shape_answer
from master_agent.runtime.context import extract_entities, new_context_box, render_context_box
from master_agent.runtime.state import CompiledLoop, MasterAgentState, StepRecord
from master_agent.runtime.termination import NO_EVIDENCE_CONFIDENCE, TerminationReport, TerminationSink
from master_agent.runtime.verification import Check, verify_before_answer
from master_agent.storage.outages import is_outage

logger = logging.getLogger(__name__)

DEEP_RUNTIME = "deepagents"
#: deepagents' tool through which the harness spawns a sub-agent.
SPAWN_TOOL = "task"
#: Supersteps of the harness per model call (the model node, its middleware and the tools node).
STEPS_PER_CALL = 4

Status = Literal["success", "partial", "error"]


def harness_tokens(messages: list[AnyMessage]) -> int:
    """Tokens the harness's model calls used: the server's count of each call when it gives one, else
    an estimate of what the call read and wrote."""
    total = 0
    for index, message in enumerate(messages):
        if not isinstance(message, AIMessage):
            continue
        usage = message.usage_metadata
        if usage:
            total += usage["total_tokens"]
        else:
            total += sum(message_tokens(m, estimate_tokens) for m in messages[: index + 1])
    return total


class TokenBudgetMiddleware(AgentMiddleware):
    """Ends the harness after the model call that brings its use to ``budget`` tokens (that call's
    tool calls are not made), as the agent loop's stop rule does."""

    def __init__(self, budget: int) -> None:
        super().__init__()
        self.budget = budget

    def _check(self, state: Any) -> dict[str, Any] | None:
        if harness_tokens(list(state["messages"])) < self.budget:
            return None
        return {"jump_to": "end", "messages": [AIMessage(content=self.note())]}

    def note(self) -> str:
        return f"Stopped: the token budget of {self.budget} is spent."

    @hook_config(can_jump_to=["end"])
    def after_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        return self._check(state)

    @hook_config(can_jump_to=["end"])
    async def aafter_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        return self._check(state)


def _tools(names: list[str], capabilities: TenantCapabilities) -> list[BaseTool]:
    return [capabilities.tools[name] for name in names if name in capabilities.tools]


def _schema_prompt(spec: AgentSpec) -> str:
    return render_tagged_json("output_schema", compact_schema(model_schema(spec["output_schema"])))


def delegation_block(sub_agents: list[AgentSpec]) -> str:
    """What each sub-agent is for and which values it needs, in the order to delegate: the harness's
    model reads it beside the ``task`` tool (the offline planner's delegation rule follows it)."""
    return render_tagged_json(
        "delegation",
        {
            "agents": [
                {
                    "name": sub["name"],
                    "description": sub["description"],
                    "needs": list(model_schema(sub["input_schema"]).get("required") or []),
                    "accepts": list(sub["input_schema"].model_fields),
                    "returns": list(sub["output_schema"].model_fields),
                }
                for sub in sub_agents
            ]
        },
    )


class PromptBudgetMiddleware(AgentMiddleware):
    """Fits each model call of the harness to the prompt budget (``models.budget``: the same order of
    what gives way as the agent loop), or refuses it with ``PromptBudgetError`` naming the budget."""

    def __init__(self, budget: int, count: TokenCounter) -> None:
        super().__init__()
        self.budget = budget
        self.count = count

    def _fit(self, request: Any) -> Any:
        system = content_text(request.system_message.content) if request.system_message else ""
        tools = [tool if isinstance(tool, dict) else convert_to_openai_tool(tool) for tool in request.tools]
        fitted = fit_prompt(
            [system],
            list(request.messages),
            budget=self.budget,
            count=self.count,
            fixed_tokens=schema_tokens(tools, self.count),
        )
        return request.override(messages=fitted.messages[1:])

    def wrap_model_call(self, request: Any, handler: Any) -> Any:
        return handler(self._fit(request))

    async def awrap_model_call(self, request: Any, handler: Any) -> Any:
        return await handler(self._fit(request))


def _sub_agent(
    spec: AgentSpec, capabilities: TenantCapabilities, budget: PromptBudgetMiddleware | None
) -> SubAgent:
    return SubAgent(
        name=spec["name"],
        description=spec["description"],
        system_prompt=(
            f"{spec['system_prompt']}\n\nYou are agent '{spec['name']}'. The task you are given carries "
            "its values in a context box. "
            "Call the tools you need, then reply with one JSON object matching this output schema, "
            f"built only from what your tools returned.\n{_schema_prompt(spec)}"
        ),
        tools=_tools(spec["tools"], capabilities),
        middleware=[budget] if budget is not None else [],
    )


def _findings(messages: list[AnyMessage]) -> dict[str, Any]:
    """Values the harness's tools and sub-agents returned (later ones win)."""
    found: dict[str, Any] = {}
    for message in messages:
        if not isinstance(message, ToolMessage):
            continue
        try:
            result = json.loads(str(message.content))
        except json.JSONDecodeError:
            result = parse_final_answer(AIMessage(content=str(message.content)))
        if isinstance(result, dict) and {"status", "data"} <= result.keys():
            result = result["data"]  # an envelope: its data are the values
        if isinstance(result, dict):
            found.update(result)
    return found


def _steps(messages: list[AnyMessage], agent: str, depth: int) -> list[StepRecord]:
    """The harness's calls that were answered, as step records (a spawn is a sub-agent step under its
    type's name)."""
    answered = {m.tool_call_id: m.status for m in messages if isinstance(m, ToolMessage)}
    return [
        StepRecord(
            agent=agent,
            depth=depth,
            tool=str(call["args"].get("subagent_type")) if call["name"] == SPAWN_TOOL else call["name"],
            kind="sub_agent" if call["name"] == SPAWN_TOOL else "tool",
            status="error" if answered[call["id"]] == "error" else "success",
            children=[],
        )
        for message in messages
        if isinstance(message, AIMessage)
        for call in message.tool_calls
        if call["id"] in answered
    ]


def build_deep_agent(
    spec: AgentSpec,
    *,
    capabilities: TenantCapabilities,
    model: BaseChatModel,
    sink: TerminationSink,
    max_iterations: int,
    budgets: dict[str, int],
    may_spawn: bool = True,
    depth: int = 0,
    checkpointer: BaseCheckpointSaver[Any] | None = None,
    prompt_budget: PromptBudgetMiddleware | None = None,
) -> CompiledLoop:
    """``spec`` as a deepagents harness behind the loop's input and output contract (its sub-agents
    only when ``may_spawn``: the depth cap is below it). ``prompt_budget`` fits every model call of
    the harness and of its sub-agents to ``MASTER_AGENT_PROMPT_TOKENS``."""
    limits = spec.get("limits", {})
    subs = [
        capabilities.sub_agents[name]
        for name in spec["tools"]
        if name in capabilities.sub_agents and may_spawn
    ]
    own_tools = _tools([name for name in spec["tools"] if name not in capabilities.sub_agents], capabilities)
    calls = int(limits.get("max_iterations", max_iterations))
    middleware: list[Any] = [ModelCallLimitMiddleware(run_limit=calls, exit_behavior="end")]
    if "max_tool_calls" in budgets:
        middleware.append(ToolCallLimitMiddleware(run_limit=budgets["max_tool_calls"]))
    if "max_spawns" in budgets:
        middleware.append(ToolCallLimitMiddleware(tool_name=SPAWN_TOOL, run_limit=budgets["max_spawns"]))
    token_budget = TokenBudgetMiddleware(budgets["max_tokens"]) if "max_tokens" in budgets else None
    if token_budget is not None:
        middleware.append(token_budget)
    if prompt_budget is not None:
        middleware.append(prompt_budget)
    prompt = (
        f"{spec['system_prompt']}\n\nYou are agent '{spec['name']}'. The user's message carries the goal "
        "and its values in a context box. Delegate to your sub-agents with the task tool, passing each "
        "the values it needs in a context box, and call your own tools; then reply with one JSON "
        f"object matching the output schema below.\n{_schema_prompt(spec)}"
    )
    if subs:
        prompt += f"\n{delegation_block(subs)}"
    harness = create_deep_agent(
        model=model,
        tools=own_tools,
        system_prompt=prompt,
        subagents=[_sub_agent(sub, capabilities, prompt_budget) for sub in subs],
        middleware=middleware,
        name=spec["name"],
    )
    fields = spec["output_schema"].model_fields
    # The harness's supersteps for its model-call cap (its own cap ends the run first, with an answer).
    recursion_limit = STEPS_PER_CALL * (calls + 2) + 4

    async def run(state: MasterAgentState, config: RunnableConfig) -> dict[str, Any]:
        goal = str(state.get("goal") or "")
        context = dict(state.get("context") or {})
        box = new_context_box(goal, context, {"max_model_calls": calls})
        request = HumanMessage(content=f"{goal}\n\n{render_context_box(box)}")
        limitations: list[str] = []
        error: str | None = None
        messages: list[AnyMessage] = [request]
        reason = "completed"
        try:
            final = await harness.ainvoke({"messages": [request]}, {"recursion_limit": recursion_limit})
            messages = list(final.get("messages") or messages)
        except GraphRecursionError:
            reason = "max_iterations"
            limitations.append(f"stopped after {recursion_limit} harness steps; the answer may be incomplete")
        except Exception as failure:
            if is_outage(failure):
                raise
            logger.exception("deep agent %s failed", spec["name"])
            reason, error = "model_error", describe_model_failure(failure)
            limitations.append(f"the agent stopped: {error}")
        last = messages[-1]
        if token_budget is not None and isinstance(last, AIMessage) and last.content == token_budget.note():
            reason = "token_budget"
            limitations.append(f"stopped at its token budget ({token_budget.budget})")
        elif sum(1 for m in messages if isinstance(m, AIMessage)) > calls:
            # The model-call limit ended the run with a note after the last call it allowed.
            reason = "max_iterations"
            limitations.append(f"stopped at its budget of {calls} model calls")
        answer = parse_final_answer(last)
        confidence = final_confidence(answer, NO_EVIDENCE_CONFIDENCE, False)
        data, incomplete = shape_answer(spec["output_schema"], answer, _findings(messages), confidence)
        limitations.extend(incomplete)
        steps = _steps(messages, spec["name"], depth)
        checks: list[Check] = []
        if error is None:
            verified = verify_before_answer(
                data,
                {**extract_entities(goal), **context},
                confidence,
                model_finished=reason == "completed",
                tools_called=bool(steps),
            )
            data, confidence, checks = verified.data, verified.confidence, verified.checks
            limitations.extend(verified.limitations)
            if verified.no_answer is not None:
                error = verified.no_answer
                limitations.append(error)
        status: Status = "partial" if incomplete else "success"
        if limitations and status == "success":
            status = "partial"
        if error is not None and status != "success":
            status = "error"
        report = TerminationReport.in_run(
            config,
            agent=spec["name"],
            depth=depth,
            reason=reason,
            iterations=sum(1 for m in messages if isinstance(m, AIMessage)),
            progress=1.0 if status == "success" else len(data) / max(len(fields), 1),
            confidence=confidence,
            steps=[step["tool"] for step in steps],
        )
        await sink.record(report)
        envelope = SubAgentEnvelope(
            status=status,
            data=data,
            confidence=confidence,
            limitations=limitations,
            error=error,
            steps=[dict(step) for step in steps],
            verification=[check.model_dump() for check in checks],
        )
        return {
            "messages": messages,
            "solution": data,
            "envelope": envelope.model_dump(mode="json"),
            "termination": report.model_dump(),
            "confidence_score": confidence,
            "model_calls": report.iterations,
            "tool_calls": len(steps),
            "steps": steps,
        }

    graph = StateGraph(MasterAgentState)
    graph.add_node("deep_agent", run)
    graph.add_edge(START, "deep_agent")
    graph.add_edge("deep_agent", END)
    compiled: CompiledLoop = graph.compile(checkpointer=checkpointer, name=spec["name"])
    return compiled
