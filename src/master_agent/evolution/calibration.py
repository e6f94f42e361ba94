"""Confidence calibration: how often solutions of a (problem type, intervention) really succeed, and
how that depends on how ambitious the goal was.

The model is a two-level Beta-Binomial. A solution's raw confidence ``p`` (what the agents reported)
is read as a prior worth ``PRIOR_WEIGHT`` observations. The outcomes of its problem type and
intervention (all tenants: counts, not data, are pooled), ``s`` successes of ``n``, update it::

    m = (k * p + s) / (k + n)

The goal's *stratum* refines it: the ambition of the goal against the strategy's own expectation
(required lift / expected lift, in buckets; see ``stratum_of``). The stratum's outcomes ``s'`` of
``n'`` update a prior centred on ``m``, again worth ``k`` observations, and the calibrated confidence
is that posterior mean::

    calibrated = (k * m + s') / (k + n')

With no outcomes it equals the raw confidence; as outcomes accumulate it moves to the success rate
observed for goals like this one, whatever the agents claimed. ``predicted_sum`` keeps the raw
confidences that were judged, so the gap between claimed and observed can be reported.
"""

from __future__ import annotations

from typing import Any

from psycopg import AsyncConnection
from psycopg_pool import AsyncConnectionPool
from pydantic import BaseModel

PRIOR_WEIGHT = 4.0
ALL = "all"
#: Upper bounds of the ambition buckets (required lift / expected lift).
AMBITION_BOUNDS = (0.5, 1.0, 1.5)

SELECT_COUNTS = """
SELECT stratum, coalesce(sum(successes), 0)::int AS successes, coalesce(sum(failures), 0)::int AS failures,
       coalesce(sum(predicted_sum), 0)::float AS predicted_sum
FROM confidence_calibration WHERE problem_type = %s AND intervention = %s AND stratum IN (%s, %s)
GROUP BY stratum
"""
RECORD = """
INSERT INTO confidence_calibration (tenant_id, problem_type, intervention, stratum, successes, failures,
                                    predicted_sum)
VALUES (%(tenant_id)s, %(problem_type)s, %(intervention)s, %(stratum)s, %(s)s, %(f)s, %(p)s)
ON CONFLICT (tenant_id, problem_type, intervention, stratum) DO UPDATE SET
    successes = confidence_calibration.successes + excluded.successes,
    failures = confidence_calibration.failures + excluded.failures,
    predicted_sum = confidence_calibration.predicted_sum + excluded.predicted_sum,
    updated_at = now()
"""


def stratum_of(expected_outcome: dict[str, Any]) -> str:
    """``ambition:<bucket>`` from the expected outcome's baseline, target and expected values."""
    try:
        baseline = float(expected_outcome["baseline"])
        target = float(expected_outcome["target"])
        expected = float(expected_outcome["expected"])
    except (KeyError, TypeError, ValueError):
        return ALL
    if expected <= baseline:
        return "ambition:unknown"
    ambition = (target - baseline) / (expected - baseline)
    for bound in AMBITION_BOUNDS:
        if ambition <= bound:
            return f"ambition:<={bound:g}"
    return f"ambition:>{AMBITION_BOUNDS[-1]:g}"


class Counts(BaseModel):
    successes: int = 0
    failures: int = 0
    predicted_sum: float = 0.0

    @property
    def observed(self) -> int:
        return self.successes + self.failures


class Calibration(BaseModel):
    """What the model knows about one (problem type, intervention) and one stratum of it."""

    problem_type: str
    intervention: str
    stratum: str = ALL
    overall: Counts = Counts()
    within: Counts = Counts()
    """Outcomes of the stratum (equal to ``overall`` for the ``all`` stratum)."""

    def calibrate(self, raw: float) -> float:
        raw = min(max(raw, 0.0), 1.0)
        overall = (PRIOR_WEIGHT * raw + self.overall.successes) / (PRIOR_WEIGHT + self.overall.observed)
        if self.stratum == ALL:
            return round(overall, 4)
        within = (PRIOR_WEIGHT * overall + self.within.successes) / (PRIOR_WEIGHT + self.within.observed)
        return round(within, 4)


async def load_calibration(
    pool: AsyncConnectionPool[Any], problem_type: str, intervention: str, stratum: str = ALL
) -> Calibration:
    async with pool.connection() as conn:
        cursor = await conn.execute(SELECT_COUNTS, (problem_type, intervention, ALL, stratum))
        rows = {row["stratum"]: Counts.model_validate(row) for row in await cursor.fetchall()}
    overall = rows.get(ALL, Counts())
    return Calibration(
        problem_type=problem_type,
        intervention=intervention,
        stratum=stratum,
        overall=overall,
        within=rows.get(stratum, overall if stratum == ALL else Counts()),
    )


async def record_outcome(
    conn: AsyncConnection[Any],
    *,
    tenant_id: str,
    problem_type: str,
    intervention: str,
    stratum: str,
    success: bool,
    predicted: float,
) -> None:
    """Count one judged solution in its problem type/intervention and its stratum (caller's transaction)."""
    for name in {ALL, stratum}:
        await conn.execute(
            RECORD,
            {
                "tenant_id": tenant_id,
                "problem_type": problem_type,
                "intervention": intervention,
                "stratum": name,
                "s": int(success),
                "f": int(not success),
                "p": predicted,
            },
        )


#: A tenant's judged solutions: what each predicted (raw, and calibrated when delivered) and whether its
#: target was met; only independent measurements count, as in calibration itself.
JUDGED_PREDICTIONS = """
SELECT l.confidence_predicted AS raw, (s.solution ->> 'calibrated_confidence')::float AS calibrated,
       l.target_met AS met
FROM solution_learnings l JOIN solutions s ON s.solution_id = l.solution_id AND s.tenant_id = l.tenant_id
WHERE l.tenant_id = %s AND l.independent AND l.target_met IS NOT NULL AND l.confidence_predicted IS NOT NULL
"""


class ReliabilityBin(BaseModel):
    """Predictions whose confidence fell in [``low``, ``high``): their mean and how often they came true."""

    low: float
    high: float
    count: int
    mean_predicted: float
    observed: float


class Reliability(BaseModel):
    """A reliability diagram's data: raw and calibrated confidence against observed success."""

    judged: int
    raw: list[ReliabilityBin]
    calibrated: list[ReliabilityBin]


def reliability_bins(predictions: list[tuple[float, bool]], bins: int = 5) -> list[ReliabilityBin]:
    """Equal-width bins over [0, 1]; empty bins are left out."""
    out: list[ReliabilityBin] = []
    for index in range(bins):
        low, high = index / bins, (index + 1) / bins
        inside = [(p, met) for p, met in predictions if low <= p < high or (index == bins - 1 and p == 1.0)]
        if inside:
            out.append(
                ReliabilityBin(
                    low=low,
                    high=high,
                    count=len(inside),
                    mean_predicted=round(sum(p for p, _ in inside) / len(inside), 4),
                    observed=round(sum(met for _, met in inside) / len(inside), 4),
                )
            )
    return out


async def load_reliability(pool: AsyncConnectionPool[Any], tenant_id: str, bins: int = 5) -> Reliability:
    async with pool.connection() as conn:
        rows = await (await conn.execute(JUDGED_PREDICTIONS, (tenant_id,))).fetchall()
    raw = [(float(row["raw"]), bool(row["met"])) for row in rows]
    # A solution delivered before any outcome was counted was calibrated to its raw confidence.
    calibrated = [
        (float(row["calibrated"] if row["calibrated"] is not None else row["raw"]), bool(row["met"]))
        for row in rows
    ]
    return Reliability(
        judged=len(rows), raw=reliability_bins(raw, bins), calibrated=reliability_bins(calibrated, bins)
    )
