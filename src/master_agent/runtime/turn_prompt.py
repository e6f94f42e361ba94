"""What the model reads each agent turn: the context box as the turn sees it, the system prompt, and\nthe prompt's smaller forms for a prompt over budget."""

from __future__ import annotations

from typing import Any, cast

from master_agent.capabilities import AgentSpec
from master_agent.models.prompt_blocks import render_tagged_json
from master_agent.models.schemas import compact_schema, lean_schema, model_schema
from master_agent.runtime.context import compact_context_box, render_context_box
from master_agent.runtime.state import ContextBox, MasterAgentState

#: Notes of the context box shown in a prompt (the newest).
NOTES_SHOWN = 12


def turn_box(box: ContextBox, state: MasterAgentState, *, progress: float, confidence: float) -> ContextBox:
    """The context box as this turn sees it: what was found, where the loop stands, the blockers and
    the newest notes."""
    turn: dict[str, Any] = {
        **box,
        "data": {**box["data"], "found": sorted(state.get("findings") or {})},
        "progress": {
            "iteration": state.get("iteration_count", 0),
            "progress": progress,
            "confidence": confidence,
            "completed_steps": len(state.get("completed_steps") or []),
        },
        "blockers": list(state.get("blockers") or []),
        "notes": list(state.get("notes") or [])[-NOTES_SHOWN:],
    }
    return cast(ContextBox, turn)


def system_prompt(
    spec: AgentSpec,
    depth: int,
    max_iterations: int,
    state: MasterAgentState,
    box: ContextBox,
    *,
    lean: bool = False,
) -> str:
    """What agent ``spec`` at ``depth`` reads first each turn: its instructions, where the loop stands,
    the output schema (``lean``: without descriptions) and the context box."""
    iteration = state.get("iteration_count", 0) + 1
    full = model_schema(spec["output_schema"])
    schema = lean_schema(full) if lean else compact_schema(full)
    return (
        f"{spec['system_prompt']}\n\n"
        f"You are agent '{spec['name']}' at depth {depth}. Iteration {iteration} of "
        f"{state.get('max_iterations', max_iterations)}; progress "
        f"{state.get('progress_score', 0.0):.0%}; confidence {state.get('confidence_score', 0.0):.2f}.\n"
        "Call the tools you need; independent calls may go in one turn. When you have enough "
        "for a sufficient (not perfect) answer, stop calling tools and reply with one JSON "
        "object matching the output schema below, built only from what your tools returned. "
        "Near the iteration limit, prefer completing over perfecting.\n"
        f"{render_tagged_json('output_schema', schema)}\n"
        f"{render_context_box(box)}"
    )


def system_prompts(
    spec: AgentSpec, depth: int, max_iterations: int, state: MasterAgentState, box: ContextBox
) -> list[str]:
    """The system prompt, then its smaller forms for a prompt over budget: the compact context box,
    then also the output schema without descriptions."""
    compact = compact_context_box(box)
    return [
        system_prompt(spec, depth, max_iterations, state, box),
        system_prompt(spec, depth, max_iterations, state, compact),
        system_prompt(spec, depth, max_iterations, state, compact, lean=True),
    ]
