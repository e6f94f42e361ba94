"""Running a playbook's phases: each phase is a task of a role lead (its subgraph), charged to its budget; the
edge after a phase picks its gate, a failure's classification or the next decision."""

from __future__ import annotations

from typing import Any

from langchain_core.runnables import RunnableConfig

from master_agent.meta.artifacts import OWNERS, Role
from master_agent.meta.graph.budgets import _charge, _remaining
from master_agent.meta.graph.request import MetaRequest
from master_agent.meta.graph.state import MetaState, _broker, _log, _resources, _tenant, _trace
from master_agent.meta.playbooks import ConstraintPack, Phase
from master_agent.meta.roles import CONTEXT_KEY, ROLE_GRAPHS, RoleContext, RoleResult


async def _lead(
    state: MetaState, config: RunnableConfig, role: Role, task: str, **context: Any
) -> RoleResult:
    """One task of a role lead (its subgraph), with what the role may still spend."""
    request = MetaRequest.model_validate(state["request"])
    ctx = RoleContext(
        resources=await _resources(config),
        broker=await _broker(state, config),
        tenant_id=_tenant(config),
        request=request.text,
        runtime_target=state["runtime_target"],  # type: ignore[arg-type]
        constraints=ConstraintPack.model_validate(state["constraint_pack"]),
        budget=_remaining(state["budgets"], role),
        given={name: value for name, value in request.artifacts.items() if OWNERS[name] == role},
        system_name=request.name,
        **context,
    )
    out = await ROLE_GRAPHS[role].ainvoke(
        {"task": task, "result": None},
        {**config, "configurable": {**(config.get("configurable") or {}), CONTEXT_KEY: ctx}},
    )
    return RoleResult.model_validate(out["result"])


async def _dispatch(state: MetaState, config: RunnableConfig, node: str) -> dict[str, Any]:
    phase = Phase.model_validate(state["phases"][state["phase_index"]])
    budgets = state["budgets"]
    remaining = _remaining(budgets, phase.role)
    failure = state.get("failure") or {}
    if remaining.max_steps <= 0:
        result = RoleResult(
            role=phase.role,
            task=phase.task,
            status="budget_exhausted",
            note="no steps left",
            left_undone=[phase.id],
        )
    else:
        result = await _lead(
            state,
            config,
            phase.role,
            phase.task,
            feedback=failure.get("feedback"),
            failure_errors=list(failure.get("compile_errors") or []),
            target_role=failure.get("route_to") if phase.role == "optimizer" else None,
        )
    spent, result = _charge(budgets, result)
    artifacts = dict(state.get("artifacts") or {})
    for ref in result.wrote:
        artifacts[ref.type] = ref.model_dump()
    left = list(state.get("left_undone") or [])
    if result.status == "done":
        left.extend(result.left_undone)
    review = list(state.get("review") or [])
    if result.needs_human_review:
        review.append(f"{phase.role}: {result.note}")
    warnings = list(state.get("warnings") or [])
    if result.fallback:
        warnings.append(f"{phase.role}: {result.fallback}")
    update: dict[str, Any] = {}
    if "_fix_" in phase.id and result.status == "done" and not result.wrote and request_autonomous(state):
        # The failure routed here has no fix by rule, and no human waits to give one: it ends here.
        update["status"] = "failed"
        update["error"] = f"{phase.id}: {result.note}; the failure stays: {failure.get('feedback') or '-'}"
    if result.proposed:
        update["active_promotions"] = [*(state.get("active_promotions") or []), *result.proposed]
    return {
        **update,
        "last_result": result.model_dump(mode="json"),
        "artifacts": artifacts,
        "budgets": {**budgets, "spent": {**budgets["spent"], phase.role: spent.model_dump()}},
        "review": review,
        "warnings": warnings,
        "left_undone": left,
        "failure": None,
        "history": await _log(
            state, config, phase.id, f"{phase.role}.{phase.task}", result.status, note=result.note
        ),
        "routing_trace": _trace(
            state, node, f"phase {phase.id}", role=phase.role, task=phase.task, status=result.status
        ),
    }


def request_autonomous(state: MetaState) -> bool:
    return bool(state["request"].get("autonomous", True))


async def run_phase(state: MetaState, config: RunnableConfig) -> dict[str, Any]:
    return await _dispatch(state, config, "run_phase")


async def compile_system(state: MetaState, config: RunnableConfig) -> dict[str, Any]:
    return await _dispatch(state, config, "compile_system")


def after_phase(state: MetaState) -> str:
    if state.get("status") == "failed":
        return "finalize"
    result = RoleResult.model_validate(state["last_result"])
    phase = Phase.model_validate(state["phases"][state["phase_index"]])
    if result.status == "failed":
        return "classify_failure"
    if state.get("active_promotions"):
        return "apply_promotion"
    if result.status == "budget_exhausted" and not (phase.gate == "quality" and result.metrics):
        return "decide_next_phase"
    # An evaluation that went over its budget after measuring is still judged by its gate: its
    # partial report never lets a system through ungated.
    if not result.metrics:  # nothing measured (e.g. a runtime not runnable yet): no gate to pass
        return "decide_next_phase"
    if phase.gate == "quality":
        return "gate_quality"
    if phase.gate == "production":
        return "gate_production"
    return "decide_next_phase"


def _next_phase_node(phases: list[dict[str, Any]], index: int) -> str:
    return "compile_system" if phases[index]["role"] == "compiler" else "run_phase"
