"""The outcome tracker: when a solution is delivered, schedule checks of its metric; run them later.

Checkpoints follow the seed (days 14, 30, 45 and 60 of a 60-day goal), scaled to the goal's timeline.
A check runs the solution's metric query (read-only, as the tenant's reader role) over a window that
ends on its due date, stores what it measured next to what was expected by then (a linear path from
the baseline to the expected value), and the final check hands over to learning. A check runs at most
once: it is locked and its status checked in one transaction, so a second run stores nothing.
"""

from __future__ import annotations

import logging
import uuid
from datetime import datetime, timedelta
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from master_agent.capabilities.tools import ReadOnlySql
from master_agent.errors import InputError, ToolInputError
from master_agent.evolution import outbox
from master_agent.evolution.context import EvolutionContext
from master_agent.evolution.learning import Measurement, learn_from_outcome
from master_agent.untrusted.sql_text import MAX_SQL_CHARS, SqlText

logger = logging.getLogger(__name__)

#: The seed's checkpoints of a 60-day goal, as fractions of the timeline.
CHECKPOINT_FRACTIONS = (14 / 60, 30 / 60, 45 / 60, 1.0)
CHECK_JOB = "master_agent.evolution.jobs:run_outcome_check"

INSERT_CHECK = """
INSERT INTO outcome_checks (check_id, tenant_id, solution_id, checkpoint_day, due_at, metric_query, expected,
                            is_final)
VALUES (%s, %s, %s, %s, %s, %s, %s, %s)
ON CONFLICT (solution_id, checkpoint_day) DO UPDATE SET check_id = outcome_checks.check_id
RETURNING check_id, due_at
"""
LOCK_CHECK = """
SELECT c.*, s.solution, s.goal FROM outcome_checks c JOIN solutions s USING (solution_id)
WHERE c.check_id = %s FOR UPDATE OF c
"""
STORE_MEASURED = """
UPDATE outcome_checks SET status = %s, measured = %s, observations = %s, error = %s, measured_at = %s
WHERE check_id = %s
"""
DUE_CHECKS = """
SELECT check_id FROM outcome_checks WHERE status = 'scheduled' AND due_at <= %s ORDER BY due_at, checkpoint_day
"""
LIST_CHECKS = """
SELECT check_id, tenant_id, solution_id, checkpoint_day, due_at, metric_query, expected, measured, observations,
       status, is_final, measured_at, error
FROM outcome_checks WHERE tenant_id = %s AND (%s::uuid IS NULL OR solution_id = %s::uuid)
ORDER BY due_at, checkpoint_day LIMIT %s OFFSET %s
"""
MARK_DELIVERED = "UPDATE solutions SET delivered_at = coalesce(delivered_at, %s) WHERE solution_id = %s"


class MetricQuery(BaseModel):
    """How to measure a solution's metric from the tenant's data.

    ``sql`` is one read-only SELECT returning ``value`` (and optionally ``observations``); it may use
    ``%(window_start)s`` and ``%(window_end)s`` besides its own ``params``."""

    model_config = ConfigDict(extra="forbid")

    sql: SqlText = Field(min_length=1, max_length=MAX_SQL_CHARS)
    params: dict[str, Any] = Field(default_factory=dict)
    window_days: int = Field(default=14, ge=1, le=365)
    """Days of data before the due date one measurement reads."""


class OutcomeCheck(BaseModel):
    """A row of ``outcome_checks``."""

    check_id: uuid.UUID
    tenant_id: str
    solution_id: uuid.UUID
    checkpoint_day: int
    due_at: datetime
    metric_query: dict[str, Any]
    expected: float | None
    measured: float | None
    observations: int | None
    status: str
    is_final: bool
    measured_at: datetime | None
    error: str | None


class CheckResult(BaseModel):
    check_id: uuid.UUID
    status: str
    """``measured``, ``error``, ``not_due`` or ``already_done``."""
    measured: float | None = None
    expected: float | None = None
    learned: bool = False


def check_job_id(check_id: uuid.UUID | str) -> str:
    return f"outcome-check:{check_id}"


def checkpoint_days(timeline_days: int) -> list[int]:
    """The seed's 14/30/45/60 scaled to ``timeline_days`` (distinct days, the last is the timeline)."""
    days = sorted({max(1, round(fraction * timeline_days)) for fraction in CHECKPOINT_FRACTIONS})
    return days


def expected_by(day: int, timeline_days: int, baseline: float, expected: float) -> float:
    """What the solution promised by ``day``: a straight line from the baseline to the expected value."""
    return round(baseline + (expected - baseline) * min(1.0, day / timeline_days), 6)


def trackable(solution: dict[str, Any]) -> dict[str, Any] | None:
    """The solution's expected outcome if it can be measured (it carries a metric query)."""
    outcome = solution.get("expected_outcome")
    if not isinstance(outcome, dict) or not isinstance(outcome.get("metric_query"), dict):
        return None
    if not all(
        isinstance(outcome.get(key), int | float) for key in ("baseline", "expected", "timeline_days")
    ):
        return None
    return outcome


async def schedule_checks(
    evolution: EvolutionContext, tenant_id: str, solution_id: str, solution: dict[str, Any]
) -> list[uuid.UUID]:
    """Create the solution's outcome checks (once: a second call returns the same checks) and their
    jobs; the delivery instant is the first call's now."""
    outcome = trackable(solution)
    if outcome is None:
        raise InputError("solution", "this solution has no measurable expected outcome (metric_query)")
    query = MetricQuery.model_validate(outcome["metric_query"])
    timeline = int(outcome["timeline_days"])
    delivered = evolution.clock.now()
    days = checkpoint_days(timeline)
    created: list[tuple[uuid.UUID, datetime]] = []
    async with evolution.pool.connection() as conn, conn.transaction():
        await conn.execute(MARK_DELIVERED, (delivered, solution_id))
        for day in days:
            row = await (
                await conn.execute(
                    INSERT_CHECK,
                    (
                        uuid.uuid4(),
                        tenant_id,
                        solution_id,
                        day,
                        delivered + timedelta(days=day),
                        query.model_dump_json(),
                        expected_by(day, timeline, float(outcome["baseline"]), float(outcome["expected"])),
                        day == days[-1],
                    ),
                )
            ).fetchone()
            assert row is not None  # inserted, or the existing check (a no-op update)
            created.append((row["check_id"], row["due_at"]))
    if evolution.scheduler is not None:
        for check_id, due_at in created:
            evolution.scheduler.add_date_job(check_job_id(check_id), CHECK_JOB, due_at, [str(check_id)])
    return [check_id for check_id, _ in created]


async def _measure(
    evolution: EvolutionContext, tenant_id: str, query: MetricQuery, due_at: datetime
) -> tuple[float | None, int | None, str | None]:
    params = {
        **query.params,
        "window_start": due_at - timedelta(days=query.window_days),
        "window_end": due_at,
    }
    try:
        result = await ReadOnlySql(await evolution.tool_context(tenant_id)).query(query.sql, params)
    except ToolInputError as error:
        return None, None, str(error)
    row = result.rows[0] if result.rows else {}
    value = row.get("value")
    observations = row.get("observations")
    if not isinstance(value, int | float):
        return None, observations, "no data in the measurement window"
    return float(value), observations if isinstance(observations, int) else None, None


async def run_check(evolution: EvolutionContext, check_id: uuid.UUID | str) -> CheckResult:
    """Measure one check if it is due and not yet done; the final check triggers learning."""
    check_id = uuid.UUID(str(check_id))
    now = evolution.clock.now()
    async with evolution.pool.connection() as conn, conn.transaction():
        row = await (await conn.execute(LOCK_CHECK, (check_id,))).fetchone()
        if row is None:
            raise InputError("check_id", f"unknown outcome check {check_id}")
        if row["status"] != "scheduled":
            return CheckResult(check_id=check_id, status="already_done", measured=row["measured"])
        if row["due_at"] > now:
            return CheckResult(check_id=check_id, status="not_due", expected=row["expected"])
        query = MetricQuery.model_validate(row["metric_query"])
        measured, observations, error = await _measure(evolution, row["tenant_id"], query, row["due_at"])
        status = "measured" if error is None else "error"
        await conn.execute(STORE_MEASURED, (status, measured, observations, error, now, check_id))
        learned = False
        body = {
            "solution_id": str(row["solution_id"]),
            "checkpoint_day": row["checkpoint_day"],
            "expected": row["expected"],
            "measured": measured,
            "error": error,
        }
        await outbox.enqueue(
            conn, row["tenant_id"], "outcomes", f"Outcome check day {row['checkpoint_day']}: {status}", body
        )
        if row["is_final"] and measured is not None:
            measurement = Measurement(
                tenant_id=row["tenant_id"],
                metric_query=row["metric_query"],
                window_start=row["due_at"] - timedelta(days=query.window_days),
                window_end=row["due_at"],
            )
            await learn_from_outcome(
                evolution,
                conn,
                row["tenant_id"],
                str(row["solution_id"]),
                row["solution"],
                measured,
                now,
                measurement,
            )
            learned = True
    return CheckResult(
        check_id=check_id, status=status, measured=measured, expected=row["expected"], learned=learned
    )


async def run_due(evolution: EvolutionContext) -> list[CheckResult]:
    """Run every check due by the clock's now, oldest first (the clock seam: ``run-due --as-of``)."""
    async with evolution.pool.connection() as conn:
        rows = await (await conn.execute(DUE_CHECKS, (evolution.clock.now(),))).fetchall()
    results = []
    for row in rows:
        results.append(await run_check(evolution, row["check_id"]))
        if evolution.scheduler is not None:
            evolution.scheduler.remove_job(check_job_id(row["check_id"]))
    return results


async def list_checks(
    evolution: EvolutionContext,
    tenant_id: str,
    solution_id: str | None = None,
    *,
    limit: int = 100,
    offset: int = 0,
) -> list[OutcomeCheck]:
    async with evolution.pool.connection() as conn:
        cursor = await conn.execute(LIST_CHECKS, (tenant_id, solution_id, solution_id, limit, offset))
        return [OutcomeCheck.model_validate(row) for row in await cursor.fetchall()]
