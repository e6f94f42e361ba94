"""The request's budgets: what a role has spent and may still spend, bound by what the whole request has left."""

from __future__ import annotations

from typing import Any

from master_agent.meta.playbooks import DIMENSIONS, RoleBudget
from master_agent.meta.roles import RoleResult, Spent


def _used(spent: Spent) -> dict[str, int]:
    """A spend by budget dimension."""
    return dict(zip(DIMENSIONS, (spent.steps, spent.tokens, spent.tool_calls, spent.spawns), strict=True))


def _left(caps: dict[str, int], spent: Spent) -> dict[str, int]:
    used = _used(spent)
    return {dim: max(caps[dim] - used[dim], 0) for dim in DIMENSIONS}


def _spent_in_all(budgets: dict[str, Any]) -> Spent:
    total = Spent()
    for spent in budgets["spent"].values():
        total = total.add(Spent.model_validate(spent))
    return total


def _remaining(budgets: dict[str, Any], role: str) -> RoleBudget:
    """What ``role`` may still spend: its own caps, bound by what the request's global budget has left."""
    own = _left(budgets["per_role"][role], Spent.model_validate(budgets["spent"][role]))
    whole = _left(budgets["global"], _spent_in_all(budgets))
    return RoleBudget(**{dim: min(own[dim], whole[dim]) for dim in DIMENSIONS})


def _charge(budgets: dict[str, Any], result: RoleResult) -> tuple[Spent, RoleResult]:
    """What the role has spent with this result; a done result over a cap becomes exhausted."""
    spent = Spent.model_validate(budgets["spent"][result.role]).add(result.spent)
    over = spent.over(RoleBudget.model_validate(budgets["per_role"][result.role]))
    if over and result.status == "done":
        result = result.model_copy(
            update={"status": "budget_exhausted", "note": f"{result.note}; over {', '.join(over)}"}
        )
    return spent, result
