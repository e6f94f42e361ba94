"""Learning from a measured outcome: a ``solution_learnings`` row, calibration counts, and village
knowledge that grows (on success) or weakens (on failure).

What ``confidence`` predicts: the probability that the user's target is met by the deadline. Success
is the seed's rule, the same event: the measured value on the final day reached the goal's target
(``target_met``). ``confidence_actual`` is that event as 0 or 1 and the confidence delta is actual
minus predicted, so calibration and its Brier score judge exactly what was promised. How far the
expected value missed is recorded apart: ``expected_error`` = measured - expected (the error of the
expected lift, since both share the baseline); the share of the asked-for lift achieved stays in the
learning's evidence.

Evidence is one per independent measurement. A learning names its measurement (the tenant, the
metric query with its parameters, e.g. the store, and the window it read); when an earlier learning
measured the same over an overlapping window (two solutions for one store delivered together, the
same world measured again), the later one is recorded but counted nowhere: not in calibration, not in
any pattern.

Pattern update rule (documented, not a constant): a pattern's evidence is the list of its judged
uses. Its confidence is the posterior mean of a Beta prior worth ``PATTERN_PRIOR_WEIGHT``
observations centred on the confidence first predicted for it, updated with those uses::

    confidence = (w * c0 + successes) / (w + successes + failures)
    success_rate = successes / (successes + failures)

A success of a new problem type/intervention creates the pattern; a success reinforces it; a failure
of a solution that used a pattern (the same key, or the pattern it reused) weakens that pattern.
Shared patterns are anonymised: store numbers and ids are left out of their text and evidence.
"""

from __future__ import annotations

import hashlib
import json
import re
import uuid
from datetime import datetime
from typing import Any

from psycopg import AsyncConnection
from pydantic import BaseModel

from master_agent.evolution import outbox
from master_agent.evolution.calibration import record_outcome, stratum_of
from master_agent.evolution.context import EvolutionContext
from master_agent.evolution.knowledge import PatternCreate, tenant_session

PATTERN_PRIOR_WEIGHT = 2.0

INSERT_LEARNING = """
INSERT INTO solution_learnings (solution_id, tenant_id, problem_type, root_cause, solution_pattern, industry,
    vertical, expected_outcome, actual_outcome, success, confidence_predicted, confidence_actual,
    confidence_delta, timeline_days, budget_usd, constraints, evidence, measured_at, target_met,
    expected_value, expected_error, measurement_key, window_start, window_end, independent)
VALUES (%(solution_id)s, %(tenant_id)s, %(problem_type)s, %(root_cause)s, %(solution_pattern)s, %(industry)s,
    %(vertical)s, %(expected_outcome)s, %(actual_outcome)s, %(success)s, %(confidence_predicted)s,
    %(confidence_actual)s, %(confidence_delta)s, %(timeline_days)s, %(budget_usd)s, %(constraints)s,
    %(evidence)s, %(measured_at)s, %(success)s, %(expected_value)s, %(expected_error)s, %(measurement_key)s,
    %(window_start)s, %(window_end)s,
    NOT EXISTS (SELECT 1 FROM solution_learnings
                WHERE measurement_key = %(measurement_key)s AND independent
                  AND window_start < %(window_end)s AND window_end > %(window_start)s))
ON CONFLICT (solution_id) DO NOTHING
RETURNING solution_id, independent
"""
#: Learnings of one tenant's metric of one entity are written one at a time, so two measured
#: together cannot both find no earlier one.
LOCK_MEASUREMENT = "SELECT pg_advisory_xact_lock(hashtext(%s))"
FIND_PATTERN = """
SELECT pattern_id, evidence, confidence FROM village_knowledge
WHERE pattern_key = %s OR pattern_id = %s::uuid ORDER BY (pattern_key = %s) DESC NULLS LAST LIMIT 1
FOR UPDATE
"""
UPDATE_PATTERN = """
UPDATE village_knowledge SET evidence = %s, confidence = %s, success_rate = %s WHERE pattern_id = %s
"""
TENANT_DOMAIN = "SELECT domain FROM tenants WHERE tenant_id = %s"

_STORE_NUMBER = re.compile(r"\b(store|branch|shop|location)\s+#?\d+\b", re.I)


def problem_type_of(solution: dict[str, Any]) -> str:
    """``low_<metric>`` from the expected outcome's metric (the seed's ``low_retail_attach_rate``)."""
    metric = str((solution.get("expected_outcome") or {}).get("metric") or "metric")
    return f"low_{re.sub(r'[^a-z0-9]+', '_', metric.lower()).strip('_')}"


def intervention_of(solution: dict[str, Any]) -> str:
    strategy = solution.get("strategy") or {}
    return str(strategy.get("intervention_id") or strategy.get("name") or "unknown")


def judge(outcome: dict[str, Any], measured: float) -> tuple[bool, float]:
    """(target_met, share of the asked-for lift achieved, in [0, 1]) of a measured value."""
    baseline = float(outcome.get("baseline") or 0.0)
    target = float(outcome["target"] if outcome.get("target") is not None else outcome["expected"])
    target_met = measured >= target
    achieved = (measured - baseline) / (target - baseline) if target > baseline else float(target_met)
    return target_met, round(min(max(achieved, 0.0), 1.0), 4)


class Measurement(BaseModel):
    """What one final outcome check read: a metric query (with its parameters, e.g. the store) of a
    tenant over a window."""

    tenant_id: str
    metric_query: dict[str, Any]
    window_start: datetime
    window_end: datetime

    @property
    def key(self) -> str:
        """Equal for measurements of the same metric of the same entity of the same tenant."""
        query = {name: self.metric_query.get(name) for name in ("sql", "params")}
        text = json.dumps([self.tenant_id, query], sort_keys=True, default=str)
        return hashlib.sha256(text.encode()).hexdigest()[:32]


def pattern_confidence(evidence: list[dict[str, Any]]) -> tuple[float, float | None]:
    """(confidence, success_rate) from a pattern's judged uses (see the module's update rule)."""
    if not evidence:
        return 0.5, None
    prior = float(evidence[0].get("predicted", 0.5))
    successes = sum(1 for item in evidence if item.get("success"))
    confidence = (PATTERN_PRIOR_WEIGHT * prior + successes) / (PATTERN_PRIOR_WEIGHT + len(evidence))
    return round(confidence, 4), round(successes / len(evidence), 4)


def anonymise(text: str) -> str:
    return _STORE_NUMBER.sub("the store", text)


def reuse_values(solution: dict[str, Any]) -> dict[str, Any]:
    """What travels to a later goal: the pattern (which driver to suspect, which intervention worked),
    never a figure. Another store's statistics are no evidence for this one: the later goal measures
    its own root cause on its own data."""
    values: dict[str, Any] = {}
    root_cause = solution.get("root_cause")
    if isinstance(root_cause, dict) and root_cause.get("driver"):
        values["suspected_driver"] = root_cause["driver"]
    strategy = solution.get("strategy") or {}
    if strategy.get("intervention_id"):
        values["preferred_intervention"] = strategy["intervention_id"]
    return values


async def learn_from_outcome(
    evolution: EvolutionContext,
    conn: AsyncConnection[Any],
    tenant_id: str,
    solution_id: str,
    solution: dict[str, Any],
    measured: float,
    now: datetime,
    measurement: Measurement,
) -> bool:
    """Learn from a solution's final measurement, in the caller's transaction. False if it was
    learned before (nothing changes then). A measurement that is not independent (see the module)
    is recorded and counted nowhere."""
    outcome = dict(solution.get("expected_outcome") or {})
    success, lift_share = judge(outcome, measured)
    confidence_actual = float(success)
    expected_value = float(outcome.get("expected") or outcome.get("baseline") or 0.0)
    predicted = float(solution.get("confidence") or 0.0)
    problem_type = problem_type_of(solution)
    intervention = intervention_of(solution)
    root_cause = solution.get("root_cause") or {}
    domain_row = await (await conn.execute(TENANT_DOMAIN, (tenant_id,))).fetchone()
    domain = str((domain_row or {}).get("domain") or "unknown")
    plan = solution.get("implementation_plan") or {}
    await conn.execute(LOCK_MEASUREMENT, (measurement.key,))
    inserted = await (
        await conn.execute(
            INSERT_LEARNING,
            {
                "solution_id": solution_id,
                "tenant_id": tenant_id,
                "problem_type": problem_type,
                "root_cause": root_cause.get("driver") or root_cause.get("statement"),
                "solution_pattern": intervention,
                "industry": domain,
                "vertical": outcome.get("metric"),
                "expected_outcome": json.dumps(outcome),
                "actual_outcome": json.dumps({"metric": outcome.get("metric"), "value": measured}),
                "success": success,
                "confidence_predicted": predicted,
                "confidence_actual": confidence_actual,
                "confidence_delta": round(confidence_actual - predicted, 4),
                "timeline_days": outcome.get("timeline_days"),
                "budget_usd": round(float(plan["total_budget"])) if plan.get("total_budget") else None,
                "constraints": json.dumps({"timeline_days": outcome.get("timeline_days")}),
                "evidence": json.dumps(
                    {"measured": measured, "baseline": outcome.get("baseline"), "lift_share": lift_share}
                ),
                "measured_at": now,
                "expected_value": expected_value,
                "expected_error": round(measured - expected_value, 6),
                "measurement_key": measurement.key,
                "window_start": measurement.window_start,
                "window_end": measurement.window_end,
            },
        )
    ).fetchone()
    if inserted is None:
        return False
    if inserted["independent"]:
        await _count_evidence(
            evolution, conn, tenant_id, solution_id, solution, domain, measured, success, now
        )
    await outbox.enqueue(
        conn,
        tenant_id,
        "outcomes",
        "Goal achieved" if success else "Goal missed",
        {
            "solution_id": solution_id,
            "metric": outcome.get("metric"),
            "baseline": outcome.get("baseline"),
            "target": outcome.get("target"),
            "measured": measured,
            "success": success,
            "confidence_predicted": predicted,
            "expected_error": round(measured - expected_value, 6),
            "independent": inserted["independent"],
        },
    )
    return True


async def _count_evidence(
    evolution: EvolutionContext,
    conn: AsyncConnection[Any],
    tenant_id: str,
    solution_id: str,
    solution: dict[str, Any],
    domain: str,
    measured: float,
    success: bool,
    now: datetime,
) -> None:
    """An independent measurement: counted in calibration, and in the pattern it confirms (created on
    a first success) or weakens."""
    outcome = dict(solution.get("expected_outcome") or {})
    predicted = float(solution.get("confidence") or 0.0)
    problem_type = problem_type_of(solution)
    intervention = intervention_of(solution)
    root_cause = solution.get("root_cause") or {}
    strategy = solution.get("strategy") or {}
    await record_outcome(
        conn,
        tenant_id=tenant_id,
        problem_type=problem_type,
        intervention=intervention,
        stratum=stratum_of(outcome),
        success=success,
        predicted=predicted,
    )
    shared = evolution.settings.knowledge_sharing == "shared"
    key = f"{problem_type}:{intervention}" if shared else f"{tenant_id}:{problem_type}:{intervention}"
    baseline = float(outcome.get("baseline") or 0.0)
    use: dict[str, Any] = {
        "success": success,
        "target_met": success,
        "predicted": predicted,
        "expected_lift": round(float(outcome.get("expected", baseline)) - baseline, 6),
        "actual_lift": round(measured - baseline, 6),
        "measured_at": now.date().isoformat(),
    }
    if not shared:
        use["solution_id"] = solution_id
    reused = (solution.get("reused_pattern") or {}).get("pattern_id")
    existing = await (await conn.execute(FIND_PATTERN, (key, reused, key))).fetchone()
    if existing is not None:
        evidence = [*existing["evidence"], use]
        confidence, rate = pattern_confidence(evidence)
        await conn.execute(UPDATE_PATTERN, (json.dumps(evidence), confidence, rate, existing["pattern_id"]))
    elif success:
        confidence, rate = pattern_confidence([use])
        statement = str(root_cause.get("statement") or "")
        metric_words = str(outcome.get("metric") or "metric").replace("_", " ")
        pattern = PatternCreate(
            pattern_name=f"{str(root_cause.get('driver') or 'unknown cause').replace('_', ' ')} -> "
            f"{strategy.get('name') or intervention}",
            domain=domain,
            description=anonymise(
                f"Low {metric_words}: {statement.rstrip('.')}. Intervention that worked: "
                f"{strategy.get('name') or intervention}."
            ),
            problem_type=problem_type,
            root_cause=anonymise(statement) or None,
            intervention={
                "intervention_id": intervention,
                "name": strategy.get("name"),
                "kind": strategy.get("kind"),
                "reuse": reuse_values(
                    {**solution, "root_cause": {**root_cause, "statement": anonymise(statement)}}
                ),
            },
            expected_outcome=f"+{use['expected_lift'] * 100:.1f} points of {metric_words}",
            evidence=[use],
            applicability={
                "domain": domain,
                "metric": outcome.get("metric"),
                "requires": [key_ for key_ in ("store_id",) if key_ in outcome],
                # What must hold of a new goal's entity before this pattern stands in for research.
                "precondition": {
                    "root_cause": {
                        key_: root_cause[key_] for key_ in ("driver", "direction") if root_cause.get(key_)
                    }
                },
            },
            confidence=confidence,
            success_rate=rate,
            source="outcome",
            visibility="shared" if shared else "private",
        )
        await evolution.knowledge.insert(conn, tenant_id, pattern, key=key)


LIST_LEARNINGS = """
SELECT solution_id, tenant_id, problem_type, root_cause, solution_pattern, industry, vertical, expected_outcome,
       actual_outcome, success, confidence_predicted, confidence_actual, confidence_delta, timeline_days,
       budget_usd, evidence, created_at, measured_at, target_met, expected_value, expected_error, independent
FROM solution_learnings WHERE (%(solution)s::uuid IS NULL OR solution_id = %(solution)s::uuid)
ORDER BY created_at DESC LIMIT %(limit)s OFFSET %(offset)s
"""


class Learning(BaseModel):
    """A row of ``solution_learnings``."""

    solution_id: uuid.UUID
    tenant_id: str
    problem_type: str
    root_cause: str | None
    solution_pattern: str | None
    industry: str | None
    vertical: str | None
    expected_outcome: dict[str, Any] | None
    actual_outcome: dict[str, Any] | None
    success: bool | None
    confidence_predicted: float | None
    confidence_actual: float | None
    confidence_delta: float | None
    timeline_days: int | None
    budget_usd: int | None
    evidence: dict[str, Any] | None
    created_at: datetime
    measured_at: datetime | None
    target_met: bool | None = None
    """Whether the user's target was met by the deadline: what ``confidence`` predicted."""
    expected_value: float | None = None
    expected_error: float | None = None
    """Measured minus expected value (the error of the expected lift)."""
    independent: bool = True
    """False when an earlier learning measured the same metric of the same entity over an overlapping
    window: then it counted nowhere."""


async def list_learnings(
    evolution: EvolutionContext,
    tenant_id: str,
    *,
    limit: int = 50,
    offset: int = 0,
    solution_id: str | None = None,
) -> list[Learning]:
    """The tenant's learnings (of one solution with ``solution_id``); row-level security, not a WHERE
    clause, keeps them to the tenant."""
    params = {"solution": solution_id, "limit": limit, "offset": offset}
    async with tenant_session(evolution.pool, tenant_id) as conn:
        rows = await (await conn.execute(LIST_LEARNINGS, params)).fetchall()
    return [Learning.model_validate(row) for row in rows]
