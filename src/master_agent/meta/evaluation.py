"""Meta-evaluation (seed 004 section 15): figures of each request logged by the orchestrator into the
append-only ``meta_eval_log``, and their aggregate per tenant (``GET /meta/eval``, ``master-agent meta
eval``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from psycopg.types.json import Jsonb
from psycopg_pool import AsyncConnectionPool
from pydantic import BaseModel

from master_agent.meta.broker import StateBroker

INSERT_METRIC = """
INSERT INTO meta_eval_log (tenant_id, request_id, playbook, metric, value, detail, at)
VALUES (%s, %s, %s, %s, %s, %s, %s)
"""
UPDATE_REQUEST = """
UPDATE meta_requests SET intent = %s, runtime_target = %s, playbook = %s, system_name = %s, status = %s,
       result = %s, updated_at = %s
WHERE request_id = %s AND tenant_id = %s
"""
SUMMARY = """
SELECT playbook, metric, count(*) AS n, avg(value) AS mean, min(value) AS least, max(value) AS most
FROM meta_eval_log WHERE tenant_id = %s GROUP BY playbook, metric ORDER BY playbook, metric
"""
PROMOTIONS = """
SELECT count(*) FILTER (WHERE status IN ('accepted', 'modified')) AS accepted,
       count(*) FILTER (WHERE status = 'rejected') AS rejected
FROM meta_promotions WHERE tenant_id = %s
"""
REQUESTS = "SELECT status, count(*) AS n FROM meta_requests WHERE tenant_id = %s GROUP BY status"


def request_metrics(
    state: Mapping[str, Any], result: Mapping[str, Any]
) -> list[tuple[str, float, dict[str, Any]]]:
    """The tracked figures of one finished request (section 15.2)."""
    metrics: list[tuple[str, float, dict[str, Any]]] = []
    loops: dict[str, int] = dict(state.get("loops") or {})
    metrics.append(("loop_count", float(sum(loops.values())), {"by_role": loops}))
    # A failure routed to the same role again after its fix is a misroute (the fix did not hold).
    metrics.append(("misroutes", float(sum(max(n - 1, 0) for n in loops.values())), {"by_role": loops}))
    budgets = state.get("budgets") or {}
    for role, spent in (budgets.get("spent") or {}).items():
        caps = budgets["per_role"][role]
        if not spent.get("steps"):
            continue
        use = {
            dim: round(spent[key] / caps[dim], 4) if caps[dim] else 0.0
            for dim, key in (
                ("max_steps", "steps"),
                ("max_tokens", "tokens"),
                ("max_tool_calls", "tool_calls"),
                ("max_spawns", "spawns"),
            )
        }
        metrics.append(("budget_utilization", max(use.values()), {"role": role, **use}))
    phases_before_compile = 0
    compiled = False
    for entry in state.get("routing_trace") or []:
        if entry.get("node") in ("run_phase", "compile_system"):
            phases_before_compile += 1
            if entry.get("node") == "compile_system" and entry.get("status") == "done":
                compiled = True
                break
    if compiled:
        metrics.append(("phases_to_compile", float(phases_before_compile), {}))
    for gate, outcome in (result.get("gates") or {}).items():
        metrics.append((f"gate_{gate}_passed", 1.0 if outcome.get("passed") else 0.0, dict(outcome)))
        # A passing gate followed by a request that did not end done is a false positive signal.
        if outcome.get("passed") and result.get("status") != "done":
            metrics.append((f"gate_{gate}_false_positive", 1.0, {"status": result.get("status")}))
    if "pass_rate" in (result.get("gates") or {}).get("quality", {}):
        metrics.append(("pass_rate", float(result["gates"]["quality"]["pass_rate"]), {}))
    metrics.append(("done", 1.0 if result.get("status") == "done" else 0.0, {"status": result.get("status")}))
    return metrics


async def record_request_metrics(
    pool: AsyncConnectionPool[Any], broker: StateBroker, state: Mapping[str, Any], result: Mapping[str, Any]
) -> None:
    """Store the request's outcome on its row and its figures in the log, in one transaction."""
    at = broker.now()
    playbook = str(state.get("playbook") or "none")
    async with pool.connection() as conn, conn.transaction():
        await conn.execute(
            UPDATE_REQUEST,
            (
                state.get("intent"),
                state.get("runtime_target"),
                playbook,
                result.get("registered_agent"),
                result["status"],
                Jsonb(dict(result)),
                at,
                broker.request_id,
                broker.tenant_id,
            ),
        )
        for metric, value, detail in request_metrics(state, result):
            await conn.execute(
                INSERT_METRIC,
                (broker.tenant_id, broker.request_id, playbook, metric, value, Jsonb(detail), at),
            )


class MetricFigure(BaseModel):
    playbook: str
    metric: str
    requests: int
    mean: float
    min: float
    max: float


class MetaEvaluation(BaseModel):
    requests: dict[str, int]
    """Requests by status."""
    figures: list[MetricFigure]
    promotions_accepted: int
    promotions_rejected: int
    promotion_acceptance_rate: float | None


async def meta_evaluation(pool: AsyncConnectionPool[Any], tenant_id: str) -> MetaEvaluation:
    async with pool.connection() as conn:
        rows = await (await conn.execute(SUMMARY, (tenant_id,))).fetchall()
        promotions = await (await conn.execute(PROMOTIONS, (tenant_id,))).fetchone()
        statuses = await (await conn.execute(REQUESTS, (tenant_id,))).fetchall()
    assert promotions is not None
    accepted, rejected = int(promotions["accepted"]), int(promotions["rejected"])
    return MetaEvaluation(
        requests={row["status"]: int(row["n"]) for row in statuses},
        figures=[
            MetricFigure(
                playbook=row["playbook"],
                metric=row["metric"],
                requests=int(row["n"]),
                mean=round(float(row["mean"]), 4),
                min=float(row["least"]),
                max=float(row["most"]),
            )
            for row in rows
        ],
        promotions_accepted=accepted,
        promotions_rejected=rejected,
        promotion_acceptance_rate=round(accepted / (accepted + rejected), 4) if accepted + rejected else None,
    )
