"""Sub-agents as tools: the schema a parent model sees for one, and one call of it, which runs its
compiled subgraph one level deeper with only the task it was given and hands back one
``SubAgentEnvelope``. A failing sub-agent answers an error envelope; it never raises into its parent
(an outage still does: the run waits for the database and repeats the step)."""

from __future__ import annotations

import asyncio
import logging
from typing import Any, cast

from langgraph.errors import GraphBubbleUp
from pydantic import ValidationError

from master_agent.capabilities import AgentSpec, SubAgentEnvelope
from master_agent.models.schemas import compact_schema, model_schema
from master_agent.runtime.middleware.base import CallOutcome
from master_agent.runtime.state import CompiledLoop, StepRecord
from master_agent.runtime.termination import recursion_limit_for
from master_agent.storage.outages import is_outage

logger = logging.getLogger(__name__)

#: Argument names whose value, for a sub-agent, is the task text it was given.
TASK_FIELDS = ("task", "goal", "question", "problem", "objective")


def sub_agent_tool_schema(spec: AgentSpec) -> dict[str, Any]:
    """The OpenAI-format tool a parent model sees for a sub-agent."""
    return {
        "type": "function",
        "function": {
            "name": spec["name"],
            "description": spec["description"],
            "parameters": compact_schema(model_schema(spec["input_schema"])),
        },
    }


def task_text(spec: AgentSpec, args: dict[str, Any]) -> str:
    for name in TASK_FIELDS:
        value = args.get(name)
        if isinstance(value, str) and value.strip():
            return value
    return spec["description"]


async def call_sub_agent(
    spec: AgentSpec, graph: CompiledLoop, args: dict[str, Any], *, max_iterations: int, timeout_s: float
) -> SubAgentEnvelope:
    """One call of the sub-agent ``spec`` (its own ``limits`` win over the given ones)."""
    name = spec["name"]
    try:
        sub_args = spec["input_schema"].model_validate(args).model_dump(mode="json")
    except ValidationError as error:
        return SubAgentEnvelope.failure(f"invalid arguments for {name}: {error}")
    limits = spec.get("limits", {})
    max_iterations = limits.get("max_iterations", max_iterations)
    timeout = limits.get("timeout_s", timeout_s)
    try:
        final = await asyncio.wait_for(
            graph.ainvoke(
                {"goal": task_text(spec, sub_args), "context": sub_args, "max_iterations": max_iterations},
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


def envelope_outcome(name: str, call_id: str, envelope: SubAgentEnvelope) -> CallOutcome:
    """A sub-agent's envelope as its call's outcome: its data are findings unless it failed, its
    limitations are blockers, its steps are the call's children."""
    outcome = CallOutcome(
        status=envelope.status,
        content=envelope.model_dump_json(exclude={"steps", "context_box"}),
        result=envelope,
        error_type=envelope.error_type,
        children=cast(list[StepRecord], envelope.steps),
        blockers=[f"{name}: {item}" for item in envelope.limitations],
        handoff=envelope.handoff,
    )
    if envelope.status != "error":
        outcome.findings = {name: envelope.data, **envelope.data}
        outcome.confidences[call_id or name] = envelope.confidence
    return outcome
