"""What comes after a phase: a failure classified and routed to the role that can fix it (a bounded retry, or a
promotion), the next phase, a budget reallocated or its exhaustion told, and the edge out."""

from __future__ import annotations

from typing import Any

from langchain_core.runnables import RunnableConfig

from master_agent.meta.artifacts import Role
from master_agent.meta.failures import FailureSignals, classify_failure
from master_agent.meta.graph.budgets import _left, _remaining, _spent_in_all
from master_agent.meta.graph.phases import _next_phase_node
from master_agent.meta.graph.request import MetaRequest
from master_agent.meta.graph.state import MetaState, _log, _trace
from master_agent.meta.playbooks import DIMENSIONS, MAX_LOOPS, PLAYBOOKS, Phase
from master_agent.meta.roles import REVISED, RoleResult, Spent

#: What each role does when a failure is routed back to it (None: nothing it can change by rule).
REVISE_TASK: dict[Role, str | None] = {
    "architect": "revise",
    "prompt_policy": "revise",
    "tooling": "revise",
    "eval": "design",
    "optimizer": None,
    "ops": None,
    "compiler": None,
}


async def classify_failure_node(state: MetaState, config: RunnableConfig) -> dict[str, Any]:
    failure = state.get("failure") or {}
    result = RoleResult.model_validate(state["last_result"])
    signals = FailureSignals.model_validate(
        failure.get("signals") or (result.signals or FailureSignals()).model_dump()
    )
    classification = classify_failure(signals)
    evidence = "; ".join(f"{m.rule}: {m.evidence}" for m in classification.matched if m.evidence)
    return {
        "failure": {
            "route_to": classification.route_to,
            "rule": classification.priority,
            "feedback": evidence or result.note,
            "compile_errors": [e.model_dump() for e in signals.compile_errors],
            "signals": signals.model_dump(mode="json"),
        },
        "routing_trace": _trace(
            state,
            "classify_failure",
            f"rule {classification.priority}: {classification.rule}",
            route_to=classification.route_to,
            matched=[m.model_dump() for m in classification.matched],
        ),
        "history": await _log(
            state,
            config,
            "classify_failure",
            classification.route_to,
            f"rule {classification.priority}",
            matched=[m.priority for m in classification.matched],
        ),
    }


async def decide_next_phase(state: MetaState, config: RunnableConfig) -> dict[str, Any]:
    """Deterministic routing on the gates, the failure classification and the budgets."""
    phases = list(state.get("phases") or [])
    index = state.get("phase_index", 0)
    request = MetaRequest.model_validate(state["request"])
    if state.get("status") == "failed":
        return {"routing_trace": _trace(state, "decide_next_phase", "cannot start", go="finalize")}
    failure = state.get("failure")
    if failure:
        role: Role = failure["route_to"]
        loops = dict(state.get("loops") or {})
        loops[role] = loops.get(role, 0) + 1
        task = REVISE_TASK[role]
        by_promotion = PLAYBOOKS[state["intent"]].fixes_by_promotion and role in REVISED  # type: ignore[index]
        if task is None or loops[role] > MAX_LOOPS:
            why = f"{role} has no revision by rule" if task is None else f"{role} sent back {MAX_LOOPS} times"
            return {
                "loops": loops,
                "status": "partial",
                "left_undone": [*(state.get("left_undone") or []), f"{phases[index]['id']}: {why}"],
                "routing_trace": _trace(state, "decide_next_phase", why, go="finalize"),
            }
        if by_promotion:
            # The Optimizer proposes the fix; apply_promotion has the owner decide it and queues
            # the phases to run again.
            fix = Phase(id=f"{role}_fix_{loops[role]}", role="optimizer", task="propose").model_dump()
            return {
                "phases": [*phases[: index + 1], fix, *phases[index + 1 :]],
                "phase_index": index + 1,
                "loops": loops,
                "routing_trace": _trace(
                    state, "decide_next_phase", f"retry {loops[role]}: a promotion for {role}", go=fix["id"]
                ),
            }
        # Bounded retry: the owner revises, then everything from the first phase after its own
        # up to the failing one runs again.
        fix = Phase(id=f"{role}_fix_{loops[role]}", role=role, task=task).model_dump()
        owned = next((i for i, p in enumerate(phases[: index + 1]) if p["role"] == role), index)
        rerun = [
            p
            for p in phases[owned + 1 : index + 1]
            if not p["id"].endswith(tuple(f"_fix_{n}" for n in range(1, 9)))
        ]
        phases = [*phases[: index + 1], fix, *rerun, *phases[index + 1 :]]
        return {
            "phases": phases,
            "phase_index": index + 1,
            "loops": loops,
            "routing_trace": _trace(
                state, "decide_next_phase", f"retry {loops[role]} via {role}", go=fix["id"]
            ),
        }
    result = RoleResult.model_validate(state["last_result"]) if state.get("last_result") else None
    if result is not None and result.status == "budget_exhausted":
        return await _exhausted(state, config, result, request)
    if index + 1 < len(phases):
        return {
            "phase_index": index + 1,
            "routing_trace": _trace(state, "decide_next_phase", "next phase", go=phases[index + 1]["id"]),
        }
    return {
        "routing_trace": _trace(state, "decide_next_phase", "playbook done", go="finalize"),
        "phase_index": len(phases),
    }


async def _exhausted(
    state: MetaState, config: RunnableConfig, result: RoleResult, request: MetaRequest
) -> dict[str, Any]:
    """Section 14.2: usable partial output goes on with a warning; otherwise up to 50 % of what the other
    roles left unspent is reallocated (once per role); otherwise a human decides; autonomous: partial."""
    phases, index = list(state.get("phases") or []), state.get("phase_index", 0)
    budgets = dict(state["budgets"])
    role = result.role
    if result.wrote:
        warning = f"{role} ran out of budget; its partial {', '.join(r.type for r in result.wrote)} is used"
        nxt = index + 1
        return {
            "warnings": [*(state.get("warnings") or []), warning],
            "left_undone": [*(state.get("left_undone") or []), *result.left_undone],
            "phase_index": nxt if nxt < len(phases) else len(phases),
            "routing_trace": _trace(
                state, "decide_next_phase", warning, go=phases[nxt]["id"] if nxt < len(phases) else "finalize"
            ),
        }
    # Reallocation is possible when the dimensions the role ran out of can gain: up to 50 % of what
    # the other roles left unspent, within what the request's global budget has left.
    exhausted = [dim for dim, left in _remaining(budgets, role).model_dump().items() if left <= 0]
    whole = _left(budgets["global"], _spent_in_all(budgets))
    gained: dict[str, int] = {}
    for dim in DIMENSIONS:
        unused = sum(
            _left(budgets["per_role"][other], Spent.model_validate(budgets["spent"][other]))[dim]
            for other in budgets["per_role"]
            if other not in (role, "orchestrator")
        )
        gained[dim] = min(unused // 2, whole[dim])
    if role not in budgets["reallocated"] and all(gained[dim] > 0 for dim in exhausted):
        caps = {dim: budgets["per_role"][role][dim] + gained[dim] for dim in DIMENSIONS}
        budgets = {
            **budgets,
            "per_role": {**budgets["per_role"], role: caps},
            "reallocated": [*budgets["reallocated"], role],
        }
        return {
            "budgets": budgets,
            "last_result": None,
            "routing_trace": _trace(
                state, "decide_next_phase", f"reallocated to {role}", gained=gained, go=phases[index]["id"]
            ),
            "history": await _log(state, config, "budgets", f"reallocate to {role}", str(gained)),
        }
    why = f"{role} exhausted its budget in {phases[index]['id']}; no reallocation possible"
    if not request.autonomous:
        return {
            "review": [*(state.get("review") or []), why],
            "status": "awaiting_human",
            "routing_trace": _trace(state, "decide_next_phase", why, go="gate_human"),
        }
    return {
        "status": "partial",
        "left_undone": [*(state.get("left_undone") or []), *(result.left_undone or [phases[index]["id"]])],
        "routing_trace": _trace(state, "decide_next_phase", why, go="finalize"),
    }


def after_decision(state: MetaState) -> str:
    phases, index = list(state.get("phases") or []), state.get("phase_index", 0)
    if state.get("status") == "failed":
        return "finalize"
    if state.get("status") in ("partial", "awaiting_human"):
        return "gate_human" if state.get("status") == "awaiting_human" else "finalize"
    if index < len(phases):
        return _next_phase_node(phases, index)
    request = MetaRequest.model_validate(state["request"])
    placement = request.human_gate or PLAYBOOKS[state["intent"]].human_gate  # type: ignore[index]
    if placement == "required" or (placement == "optional" and state.get("review")):
        return "gate_human"
    return "register"
