"""The ``planner_first`` variant of the master loop: an execution plan (a DAG of tool and sub-agent
steps) is designed by one model call first and run as a graph (``runtime.planning``), instead of the
model deciding every turn; the loop then finalizes. Its nodes replace the agent/tools pair."""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AnyMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import ValidationError

from master_agent.capabilities import AgentSpec
from master_agent.models.budget import schema_tokens
from master_agent.models.offline import PLAN_TOOL_NAME, fill_arguments
from master_agent.models.prompt_blocks import render_tagged_json
from master_agent.models.schemas import model_schema
from master_agent.runtime.context import render_context_box
from master_agent.runtime.middleware.base import LoopMiddleware
from master_agent.runtime.model_call import ModelCaller
from master_agent.runtime.planning import ExecutionPlan, PlanStep, build_plan_graph
from master_agent.runtime.state import CompiledLoop, ContextBox, MasterAgentState, StepRecord


class PlanHost(Protocol):
    """What the planner needs of the loop it runs in."""

    @property
    def spec(self) -> AgentSpec: ...

    @property
    def depth(self) -> int: ...

    @property
    def plain(self) -> dict[str, BaseTool]: ...

    @property
    def subs(self) -> dict[str, tuple[AgentSpec, CompiledLoop]]: ...

    @property
    def model(self) -> BaseChatModel | None: ...

    @property
    def name(self) -> str: ...

    @property
    def limits(self) -> Any: ...

    def short_path(self, state: MasterAgentState) -> bool: ...

    def tool_parameters(self, name: str) -> dict[str, Any]: ...

    def refresh(
        self, state: MasterAgentState
    ) -> tuple[dict[str, Any], ContextBox, list[AnyMessage], MasterAgentState]: ...

    @property
    def call_model(self) -> ModelCaller: ...

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
    ) -> dict[str, Any]: ...


@dataclass(kw_only=True)
class PlannerFirstMiddleware(LoopMiddleware):
    """Designs a plan first and runs it as a graph (the ``plan`` and ``run_plan`` nodes)."""

    state_keys: ClassVar[tuple[str, ...]] = ("plan", "current_plan", "blockers", "findings", "steps")

    research: frozenset[str] = frozenset()
    """Research sub-agents left out of the plan on the short path."""
    plan_graphs: dict[str, CompiledLoop] = field(default_factory=dict)
    """Compiled plan graphs by plan (a repeated plan is not compiled again)."""

    def plan_request(self, loop: PlanHost, box: Any, skip: frozenset[str] = frozenset()) -> dict[str, Any]:
        tools = []
        for name in loop.spec["tools"]:
            if (name not in loop.plain and name not in loop.subs) or name in skip:
                continue
            parameters = loop.tool_parameters(name)
            required = list(parameters.get("required") or [])
            provides = (
                list(model_schema(loop.subs[name][0]["output_schema"]).get("properties", {}))
                if name in loop.subs
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

    async def plan(self, loop: PlanHost, state: MasterAgentState, config: RunnableConfig) -> dict[str, Any]:
        update, box, new_messages, _ = loop.refresh(state)
        assert loop.model is not None
        skip = self.research if loop.short_path(state) else frozenset()
        system = (
            f"{loop.spec['system_prompt']}\n\nDesign an execution plan before acting: call "
            f"{PLAN_TOOL_NAME} with steps {{id, agent, depends_on}}. Each step calls one of the tools "
            "below once its dependencies are done; steps without a dependency between them run in "
            "parallel; leave out tools whose required inputs nothing provides.\n"
            f"{render_tagged_json('plan_request', self.plan_request(loop, box, skip))}\n{render_context_box(box)}"
        )
        planner = loop.model.bind_tools([ExecutionPlan], tool_choice=PLAN_TOOL_NAME)
        reply, tokens = await loop.call_model(
            planner,
            [system],
            [*(state.get("messages") or []), *new_messages],
            config,
            tool_tokens=schema_tokens([convert_to_openai_tool(ExecutionPlan)], loop.limits.count_tokens),
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
                plan.check({*loop.plain, *loop.subs})
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
        self, loop: PlanHost, step: PlanStep, state: MasterAgentState, config: RunnableConfig
    ) -> dict[str, Any]:
        box = state.get("context_box")
        known = {
            **(box["entities"] if box else {}),
            **(state.get("context") or {}),
            **(state.get("findings") or {}),
        }
        args = fill_arguments(loop.tool_parameters(step.agent), known, state.get("goal", ""))
        if args is None:
            kind = "sub_agent" if step.agent in loop.subs else "tool"
            record = StepRecord(
                agent=loop.name, depth=loop.depth, tool=step.agent, kind=kind, status="error", children=[]
            )
            return {
                "steps": [record],
                "blockers": [f"{step.agent}: skipped, a required input was never produced"],
            }
        update = await loop.execute_call(step.agent, args, f"plan_{step.id}", config)
        update.pop("messages")  # the plan graph keeps no conversation
        return update

    async def run_plan(
        self, loop: PlanHost, state: MasterAgentState, config: RunnableConfig
    ) -> dict[str, Any]:
        if not state.get("plan"):
            return {}
        plan = ExecutionPlan.model_validate(state["plan"])
        key = plan.model_dump_json()
        graph = self.plan_graphs.get(key)
        if graph is None:
            graph = self.plan_graphs[key] = build_plan_graph(
                plan, functools.partial(self.run_step, loop), f"{loop.name}_plan"
            )
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
