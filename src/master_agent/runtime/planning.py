"""The planner_first variant: a planner designs a DAG of steps, and a graph is built from that plan.

Each step runs one tool or sub-agent once all the steps it depends on are done; independent steps run
in parallel (LangGraph runs every node whose inputs are ready in the same super-step). A step's
arguments are filled by name from the goal, the agent's input and the results of earlier steps.
Compiled plan graphs are cached by the plan, so a repeated plan is not compiled again.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from pydantic import BaseModel, ConfigDict, Field

from master_agent.models.offline import PLAN_TOOL_NAME
from master_agent.runtime.state import MasterAgentState

_STEP_ID = re.compile(r"^[A-Za-z0-9_-]{1,40}$")


class PlanStep(BaseModel):
    """One step of a plan."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(description="Unique id of the step, e.g. 's1'.")
    agent: str = Field(description="The tool or sub-agent this step calls.")
    depends_on: list[str] = Field(default_factory=list, description="Ids of steps that must finish first.")


class ExecutionPlan(BaseModel):
    """A DAG of steps; each calls one tool or sub-agent after the steps it depends on."""

    model_config = ConfigDict(extra="forbid", title=PLAN_TOOL_NAME)

    steps: list[PlanStep] = Field(min_length=1, max_length=50)

    def check(self, available: set[str]) -> None:
        """Raise ValueError unless ids are unique and valid, agents available, and every dependency
        names an earlier step (which also rules out cycles)."""
        seen: set[str] = set()
        for step in self.steps:
            if not _STEP_ID.match(step.id):
                raise ValueError(f"step id {step.id!r} must be 1-40 letters, digits, '_' or '-'")
            if step.id in seen:
                raise ValueError(f"step id {step.id!r} is used twice")
            if step.agent not in available:
                raise ValueError(
                    f"step {step.id!r}: {step.agent!r} is not available; use one of {sorted(available)}"
                )
            unknown = [dep for dep in step.depends_on if dep not in seen]
            if unknown:
                raise ValueError(f"step {step.id!r} depends on {unknown}, which are not earlier steps")
            seen.add(step.id)


StepRunner = Callable[[PlanStep, MasterAgentState, RunnableConfig], Awaitable[dict[str, Any]]]


def build_plan_graph(
    plan: ExecutionPlan, run_step: StepRunner, name: str
) -> CompiledStateGraph[Any, Any, Any, Any]:
    """A graph with one node per step and an edge from each dependency (joins wait for all)."""
    graph: StateGraph[MasterAgentState, Any, Any, Any] = StateGraph(MasterAgentState)
    needed_by: set[str] = set()
    for step in plan.steps:

        async def node(
            state: MasterAgentState, config: RunnableConfig, step: PlanStep = step
        ) -> dict[str, Any]:
            return await run_step(step, state, config)

        graph.add_node(f"step_{step.id}", node)
        if step.depends_on:
            graph.add_edge([f"step_{dep}" for dep in step.depends_on], f"step_{step.id}")
            needed_by.update(step.depends_on)
        else:
            graph.add_edge(START, f"step_{step.id}")
    sinks = [f"step_{step.id}" for step in plan.steps if step.id not in needed_by]
    graph.add_edge(sinks, END)
    return graph.compile(name=name)
