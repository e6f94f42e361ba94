"""Confidence calibration: how often solutions of a (problem type, intervention) really succeed.

The model is Beta-Binomial. A solution's raw confidence ``p`` (what the agents reported) is read as a
prior worth ``PRIOR_WEIGHT`` observations, Beta(k*p, k*(1-p)); the observed successes ``s`` and
failures ``f`` of that problem type and intervention (all tenants: counts, not data, are pooled) update
it, and the calibrated confidence is the posterior mean::

    calibrated = (k * p + s) / (k + s + f)

With no outcomes it equals the raw confidence; as outcomes accumulate it moves to the observed
success rate, whatever the agents claimed. ``predicted_sum`` keeps the raw confidences that were
judged, so the gap between claimed and observed (the model's bias) can be reported.
"""

from __future__ import annotations

from typing import Any

from psycopg import AsyncConnection
from psycopg_pool import AsyncConnectionPool
from pydantic import BaseModel

PRIOR_WEIGHT = 4.0

SELECT_COUNTS = """
SELECT coalesce(sum(successes), 0)::int AS successes, coalesce(sum(failures), 0)::int AS failures,
       coalesce(sum(predicted_sum), 0)::float AS predicted_sum
FROM confidence_calibration WHERE problem_type = %s AND intervention = %s
"""
RECORD = """
INSERT INTO confidence_calibration (tenant_id, problem_type, intervention, successes, failures, predicted_sum)
VALUES (%(tenant_id)s, %(problem_type)s, %(intervention)s, %(s)s, %(f)s, %(p)s)
ON CONFLICT (tenant_id, problem_type, intervention) DO UPDATE SET
    successes = confidence_calibration.successes + excluded.successes,
    failures = confidence_calibration.failures + excluded.failures,
    predicted_sum = confidence_calibration.predicted_sum + excluded.predicted_sum,
    updated_at = now()
"""


class Calibration(BaseModel):
    """What the model knows about one (problem type, intervention)."""

    problem_type: str
    intervention: str
    successes: int
    failures: int
    mean_predicted: float | None
    """Average raw confidence of the judged solutions (None before any outcome)."""

    @property
    def observed(self) -> int:
        return self.successes + self.failures

    def calibrate(self, raw: float) -> float:
        raw = min(max(raw, 0.0), 1.0)
        return round((PRIOR_WEIGHT * raw + self.successes) / (PRIOR_WEIGHT + self.observed), 4)


async def load_calibration(
    pool: AsyncConnectionPool[Any], problem_type: str, intervention: str
) -> Calibration:
    async with pool.connection() as conn:
        row = await (await conn.execute(SELECT_COUNTS, (problem_type, intervention))).fetchone()
    assert row is not None  # an aggregate always returns a row
    observed = row["successes"] + row["failures"]
    return Calibration(
        problem_type=problem_type,
        intervention=intervention,
        successes=row["successes"],
        failures=row["failures"],
        mean_predicted=row["predicted_sum"] / observed if observed else None,
    )


async def record_outcome(
    conn: AsyncConnection[Any],
    *,
    tenant_id: str,
    problem_type: str,
    intervention: str,
    success: bool,
    predicted: float,
) -> None:
    """Count one judged solution (in the caller's transaction)."""
    await conn.execute(
        RECORD,
        {
            "tenant_id": tenant_id,
            "problem_type": problem_type,
            "intervention": intervention,
            "s": int(success),
            "f": int(not success),
            "p": predicted,
        },
    )
