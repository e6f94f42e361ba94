"""What a tenant's meta requests hold, read for people (the console's Systems pages): each request's
phases, its artifacts' newest versions, the gate (every EvalSpec case with its result in the newest
ExperimentReport) and the human decisions on promotions. The broker writes; this only reads."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any, TypeVar

from psycopg_pool import AsyncConnectionPool
from pydantic import BaseModel, ValidationError

from master_agent.meta.artifacts import EvalSpec, ExperimentReport

ModelT = TypeVar("ModelT", bound=BaseModel)

SELECT_REQUESTS = """
SELECT request_id, thread_id, request, intent, runtime_target, playbook, system_name, status, created_at,
       updated_at
FROM meta_requests WHERE tenant_id = %s ORDER BY created_at DESC, request_id LIMIT %s
"""
COUNT_REQUESTS = "SELECT count(*) AS n FROM meta_requests WHERE tenant_id = %s"
SELECT_REQUEST = """
SELECT request_id, thread_id, request, intent, runtime_target, playbook, system_name, status, created_at,
       updated_at, result
FROM meta_requests WHERE tenant_id = %s AND request_id = %s
"""
SELECT_HISTORY = """
SELECT phase, decision, outcome, at FROM meta_history WHERE request_id = %s AND tenant_id = %s ORDER BY entry_id
"""
# The newest version of each artifact type, with how many versions it has.
SELECT_ARTIFACTS = """
SELECT DISTINCT ON (artifact_type) artifact_type, version, written_by, summary, payload, created_at,
       count(*) OVER (PARTITION BY artifact_type) AS versions
FROM meta_artifacts WHERE request_id = %s AND tenant_id = %s
ORDER BY artifact_type, version DESC
"""
SELECT_PROMOTIONS = """
SELECT proposer, target_artifact, base_version, status, decided_by, reason, applied_version, created_at,
       decided_at
FROM meta_promotions WHERE request_id = %s AND tenant_id = %s ORDER BY created_at, decision_id
"""


class MetaRequestRow(BaseModel):
    request_id: uuid.UUID
    thread_id: str | None
    request: str
    intent: str | None
    runtime_target: str | None
    playbook: str | None
    system_name: str | None
    status: str
    created_at: datetime
    updated_at: datetime


class PhaseEntry(BaseModel):
    phase: str
    decision: str
    outcome: str
    at: datetime


class ArtifactVersion(BaseModel):
    artifact_type: str
    version: int
    versions: int
    written_by: str
    summary: str
    payload: dict[str, Any]
    created_at: datetime


class GateCase(BaseModel):
    """One case of the gate: what it checks, and whether the newest experiment passed it (None: not run)."""

    case_id: str
    requirement: str | None
    metric: str
    hard: bool
    adversarial: bool
    """It expects the system to avoid words (a case built to make a violating output fail)."""
    passed: bool | None
    mismatches: list[str]
    error: str | None


class HumanDecision(BaseModel):
    proposer: str
    target_artifact: str
    base_version: int
    status: str
    decided_by: str | None
    reason: str | None
    applied_version: int | None
    created_at: datetime
    decided_at: datetime | None


class MetaRequestView(BaseModel):
    request: MetaRequestRow
    result: dict[str, Any] | None
    phases: list[PhaseEntry]
    artifacts: list[ArtifactVersion]
    gate: list[GateCase]
    pass_rate: float | None
    pass_threshold: float | None
    requirements: dict[str, str]
    decisions: list[HumanDecision]


async def list_meta_requests(
    pool: AsyncConnectionPool[Any], tenant_id: str, limit: int
) -> tuple[list[MetaRequestRow], int]:
    """The tenant's newest ``limit`` requests, and how many it has in all."""
    async with pool.connection() as conn:
        rows = await (await conn.execute(SELECT_REQUESTS, (tenant_id, limit))).fetchall()
        total = await (await conn.execute(COUNT_REQUESTS, (tenant_id,))).fetchone()
    return [MetaRequestRow.model_validate(row) for row in rows], int(total["n"]) if total else 0


def gate_cases(spec: EvalSpec | None, report: ExperimentReport | None) -> list[GateCase]:
    """Every case of ``spec`` beside its result in ``report`` (a case the report lacks was not run)."""
    if spec is None:
        return []
    results = {result.case_id: result for result in report.results} if report else {}
    cases = []
    for case in spec.cases:
        result = results.get(case.id)
        cases.append(
            GateCase(
                case_id=case.id,
                requirement=case.requirement,
                metric=case.metric,
                hard=case.hard,
                adversarial=bool(case.avoid),
                passed=None if result is None else result.passed,
                mismatches=[] if result is None else result.mismatches,
                error=None if result is None else result.error,
            )
        )
    return cases


def _parsed(model: type[ModelT], artifact: ArtifactVersion | None) -> ModelT | None:
    if artifact is None:
        return None
    try:
        return model.model_validate(artifact.payload)
    except ValidationError:  # an artifact written by an older version of the model: shown raw only
        return None


async def meta_request_view(
    pool: AsyncConnectionPool[Any], tenant_id: str, request_id: uuid.UUID
) -> MetaRequestView | None:
    """One request of ``tenant_id`` whole, or None (another tenant's request is not found either)."""
    async with pool.connection() as conn:
        row = await (await conn.execute(SELECT_REQUEST, (tenant_id, request_id))).fetchone()
        if row is None:
            return None
        history = await (await conn.execute(SELECT_HISTORY, (request_id, tenant_id))).fetchall()
        artifacts = await (await conn.execute(SELECT_ARTIFACTS, (request_id, tenant_id))).fetchall()
        promotions = await (await conn.execute(SELECT_PROMOTIONS, (request_id, tenant_id))).fetchall()
    newest = {a["artifact_type"]: ArtifactVersion.model_validate(a) for a in artifacts}
    spec = _parsed(EvalSpec, newest.get("EvalSpec"))
    report = _parsed(ExperimentReport, newest.get("ExperimentReport"))
    return MetaRequestView(
        request=MetaRequestRow.model_validate(row),
        result=row["result"],
        phases=[PhaseEntry.model_validate(entry) for entry in history],
        artifacts=list(newest.values()),
        gate=gate_cases(spec, report),
        pass_rate=report.pass_rate if report else None,
        pass_threshold=spec.pass_threshold if spec else None,
        requirements=report.requirements if report else {},
        decisions=[HumanDecision.model_validate(p) for p in promotions],
    )
