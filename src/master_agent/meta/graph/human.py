"""The human gate: the question (an interrupt, or auto-approved in autonomous mode) and its five answers."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from langchain_core.runnables import RunnableConfig
from langgraph.types import interrupt
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from master_agent.errors import InputError
from master_agent.meta.artifacts import Role
from master_agent.meta.graph.budgets import _left, _spent_in_all, _used
from master_agent.meta.graph.phases import _next_phase_node
from master_agent.meta.graph.request import MetaRequest, _constrain
from master_agent.meta.graph.state import MetaState, _broker, _log, _trace
from master_agent.meta.playbooks import DIMENSIONS, ConstraintPack
from master_agent.meta.roles import RoleResult, Spent


class HumanAnswer(BaseModel):
    """One of the human gate's five answers (section 10.2)."""

    model_config = ConfigDict(extra="forbid")

    action: Literal["approve", "reject", "budget_override", "terminate", "inject_constraints"]
    role: Role | None = None
    """reject: the role the feedback goes to (default architect); budget_override: whose caps."""
    feedback: str | None = None
    caps: dict[str, Annotated[int, Field(ge=0)]] = Field(default_factory=dict)
    constraints: dict[str, str | float | int | bool | list[str]] = Field(default_factory=dict)


def parse_human_answer(payload: Any) -> HumanAnswer:
    """The human gate's answer (a run's ``command.resume``), or an ``InputError`` naming the field."""
    try:
        answer = HumanAnswer.model_validate(payload)
    except ValidationError as error:
        raise InputError.from_validation(error, prefix="resume") from None
    unknown = sorted(set(answer.caps) - set(DIMENSIONS))
    if unknown:
        raise InputError(f"resume.caps.{unknown[0]}", f"caps are {list(DIMENSIONS)}")
    if answer.action == "budget_override" and not answer.caps:
        raise InputError("resume.caps", "a budget override names the caps it raises")
    if answer.action == "inject_constraints" and not answer.constraints:
        raise InputError("resume.constraints", "name the constraints to inject")
    try:
        _constrain(ConstraintPack(), answer.constraints)
    except InputError as error:
        raise error.under("resume") from None
    return answer


async def gate_human(state: MetaState, config: RunnableConfig) -> dict[str, Any]:
    request = MetaRequest.model_validate(state["request"])
    broker = await _broker(state, config)
    summaries = await broker.summaries(list(state.get("artifacts") or {}))  # type: ignore[arg-type]
    asked = {
        "kind": "meta_review",
        "request_id": state["request_id"],
        "questions": list(state.get("review") or []) or ["approve the result before it is finalized?"],
        "artifacts": summaries,
        "gates": state.get("gates") or {},
        "routing_trace": (state.get("routing_trace") or [])[-10:],
        "answers": ["approve", "reject", "budget_override", "terminate", "inject_constraints"],
    }
    if request.autonomous:
        return {
            "status": "running" if state.get("status") != "partial" else "partial",
            "history": await _log(
                state,
                config,
                "gate_human",
                "auto-approved",
                "autonomous mode: no human waits",
                asked=asked["questions"],
            ),
            "routing_trace": _trace(state, "gate_human", "auto-approved (autonomous)", go="finalize"),
            "review": [],
        }
    answer = parse_human_answer(interrupt(asked))
    history = await _log(
        state, config, "gate_human", answer.action, answer.feedback or "", answer=answer.model_dump()
    )
    phases, index = list(state.get("phases") or []), state.get("phase_index", 0)
    update: dict[str, Any] = {"history": history, "review": [], "status": "running"}
    if answer.action == "approve":
        last = state.get("last_result") or {}
        if last.get("status") == "budget_exhausted":
            # Approved to go on without the exhausted phase's work.
            update["left_undone"] = [*(state.get("left_undone") or []), phases[index]["id"]]
            update["phase_index"] = index + 1
            update["last_result"] = None
        update["routing_trace"] = _trace(state, "gate_human", "approved", go="continue")
    elif answer.action == "terminate":
        update["status"] = "partial"
        update["left_undone"] = [*(state.get("left_undone") or []), *(p["id"] for p in phases[index:])]
        update["routing_trace"] = _trace(state, "gate_human", "terminated by a human", go="finalize")
    elif answer.action == "reject":
        role = answer.role or "architect"
        update["failure"] = {
            "route_to": role,
            "rule": 0,
            "feedback": answer.feedback or "rejected by a human",
            "compile_errors": [],
        }
        update["phase_index"] = min(index, len(phases) - 1)
        update["routing_trace"] = _trace(state, "gate_human", f"rejected: back to {role}", go=role)
    elif answer.action == "budget_override":
        last_role = (
            RoleResult.model_validate(state["last_result"]).role if state.get("last_result") else "eval"
        )
        role = answer.role or last_role
        budgets = dict(state["budgets"])
        caps = {**budgets["per_role"][role], **answer.caps}
        # The request's global budget grows by what the role is now allowed beyond it.
        own_left = _left(caps, Spent.model_validate(budgets["spent"][role]))
        total = _used(_spent_in_all(budgets))
        whole = {dim: max(budgets["global"][dim], total[dim] + own_left[dim]) for dim in DIMENSIONS}
        update["budgets"] = {**budgets, "global": whole, "per_role": {**budgets["per_role"], role: caps}}
        update["last_result"] = None
        update["phase_index"] = min(index, len(phases) - 1)
        update["routing_trace"] = _trace(
            state, "gate_human", f"budget of {role} raised", caps=caps, go=phases[update["phase_index"]]["id"]
        )
    else:
        pack = ConstraintPack.model_validate(state["constraint_pack"])
        changed = _constrain(pack, answer.constraints)
        update["constraint_pack"] = pack.model_dump(mode="json")
        # The phases of the roles whose artifacts carry the new constraints run again under them,
        # before the rest (a phase stopped by its budget runs again too).
        stopped = (state.get("last_result") or {}).get("status") == "budget_exhausted"
        at = index if stopped else min(index + 1, len(phases))
        again = [
            {**p, "id": f"{p['id']}_again"}
            for p in phases[:at]
            if p["role"] in changed and not p["id"].endswith("_again")
        ]
        update["phases"] = [*phases[:at], *again, *phases[at:]]
        update["phase_index"] = at
        update["last_result"] = None
        update["routing_trace"] = _trace(
            state,
            "gate_human",
            "constraints injected",
            added=list(answer.constraints),
            go=again[0]["id"] if again else "continue",
        )
    return update


def after_human(state: MetaState) -> str:
    if state.get("status") in ("partial", "failed"):
        return "finalize"
    if state.get("failure"):
        return "decide_next_phase"
    phases, index = list(state.get("phases") or []), state.get("phase_index", 0)
    if state.get("last_result") is None and index < len(phases):
        return _next_phase_node(phases, index)
    return "register"
