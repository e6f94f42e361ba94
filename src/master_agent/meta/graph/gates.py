"""The gates after a phase: quality (the eval's pass rate and the requirements), production (the ops metrics),
and promotions applied by the owners of their targets."""

from __future__ import annotations

from typing import Any

from langchain_core.runnables import RunnableConfig

from master_agent.meta.artifacts import OWNERS, Role
from master_agent.meta.failures import FailureSignals
from master_agent.meta.graph.budgets import _charge
from master_agent.meta.graph.phases import _lead
from master_agent.meta.graph.state import MetaState, _broker, _log
from master_agent.meta.roles import RoleResult

#: A quality gate's pass rate in this band asks for a human review (section 10.1).
AMBIGUOUS_BAND = (0.4, 0.7)


async def gate_quality(state: MetaState, config: RunnableConfig) -> dict[str, Any]:
    result = RoleResult.model_validate(state["last_result"])
    rate, threshold = result.metrics.get("pass_rate", 0.0), result.metrics.get("threshold", 0.8)
    # A requirement the system does not honour fails the gate, whatever the pass rate.
    passed = rate >= threshold and not result.unmet
    review = list(state.get("review") or [])
    if AMBIGUOUS_BAND[0] <= rate <= AMBIGUOUS_BAND[1]:
        review.append(f"quality gate: pass rate {rate:.0%} is in the ambiguous band")
    outcome: dict[str, Any] = {"passed": passed, "pass_rate": rate, "threshold": threshold}
    if result.unmet:
        outcome["unmet"] = list(result.unmet)
    gates = {**(state.get("gates") or {}), "quality": outcome}
    extra: dict[str, Any] = {}
    if result.unmet:
        # Unmet requirements are not fixed by the rule-based revisions: the request ends partial,
        # saying which, and the system is not registered.
        extra = {
            "status": "partial",
            "left_undone": [*(state.get("left_undone") or []), *(f"requirement {u}" for u in result.unmet)],
        }
    return {
        **extra,
        "gates": gates,
        "review": review,
        "failure": None
        if passed or result.unmet
        else {"signals": (result.signals or FailureSignals()).model_dump(mode="json")},
        "history": await _log(
            state,
            config,
            "gate_quality",
            "pass" if passed else "fail",
            f"pass rate {rate:.0%} against a threshold of {threshold:.0%}"
            + (f"; unmet: {'; '.join(result.unmet)}"[:400] if result.unmet else ""),
        ),
    }


async def gate_production(state: MetaState, config: RunnableConfig) -> dict[str, Any]:
    result = RoleResult.model_validate(state["last_result"])
    signals = result.signals or FailureSignals()
    passed = not signals.metric_failures
    gates = {**(state.get("gates") or {}), "production": {"passed": passed, **result.metrics}}
    return {
        "gates": gates,
        "failure": None if passed else {"signals": signals.model_dump(mode="json")},
        "history": await _log(state, config, "gate_production", "pass" if passed else "fail", result.note),
    }


async def apply_promotion(state: MetaState, config: RunnableConfig) -> dict[str, Any]:
    """Section 9: each pending PromotionDecision goes to the owner of its target, who applies it as a
    new version (accepted), applies it with changes of its own (modified) or refuses it (rejected).
    After a change, the phases from the owner's own up to this one run again (their gates re-run);
    after a refusal the playbook goes on."""
    broker = await _broker(state, config)
    pending = {str(p.decision_id): p for p in await broker.promotions() if p.status == "pending"}
    phases, index = list(state.get("phases") or []), state.get("phase_index", 0)
    budgets = dict(state["budgets"])
    artifacts = dict(state.get("artifacts") or {})
    history, trace = state.get("history") or [], state.get("routing_trace") or []
    changed_owners: list[Role] = []
    last: RoleResult | None = None
    for decision_id in state.get("active_promotions") or []:
        promotion = pending.get(decision_id)
        if promotion is None:
            continue
        owner = OWNERS[promotion.target_artifact]
        result = await _lead(
            {**state, "budgets": budgets},
            config,
            owner,
            "apply",
            promotion_id=decision_id,
        )
        spent, result = _charge(budgets, result)
        budgets = {**budgets, "spent": {**budgets["spent"], owner: spent.model_dump()}}
        for ref in result.wrote:
            artifacts[ref.type] = ref.model_dump()
        decided = result.promotion.status if result.promotion else "undecided"
        if decided in ("accepted", "modified"):
            changed_owners.append(owner)
        history = await _log(
            {**state, "history": history},
            config,
            "apply_promotion",
            f"{owner}: {decided}",
            result.note,
            decision_id=decision_id,
            target=promotion.target_artifact,
        )
        trace = [*trace, {"node": "apply_promotion", "why": result.note, "owner": owner, "decision": decided}]
        last = result
    rerun: list[dict[str, Any]] = []
    if changed_owners:
        owned = min(
            (i for i, p in enumerate(phases[: index + 1]) if p["role"] in changed_owners), default=index
        )
        rerun = [
            p for p in phases[owned + 1 : index + 1] if p["role"] != "optimizer" and "_fix_" not in p["id"]
        ]
    return {
        "active_promotions": [],
        "phases": [*phases[: index + 1], *rerun, *phases[index + 1 :]],
        "budgets": budgets,
        "artifacts": artifacts,
        "history": history,
        "routing_trace": trace,
        "last_result": (last or RoleResult.model_validate(state["last_result"])).model_dump(mode="json"),
    }


def after_gate(state: MetaState) -> str:
    if state.get("status") in ("failed", "partial"):
        return "finalize"
    return "classify_failure" if state.get("failure") else "decide_next_phase"
