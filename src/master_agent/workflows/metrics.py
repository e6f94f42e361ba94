"""Stage-driven conversations measured (seed 001 section 9.1), from their audit trail: turns, time per
stage, worker utilisation and completion rate, per tenant and workflow."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from psycopg_pool import AsyncConnectionPool
from pydantic import BaseModel

# A conversation is a thread with a message; it is complete once it has entered a final stage.
CONVERSATIONS = """
WITH threads AS (
    SELECT tenant_id, workflow, thread_id,
           count(*) FILTER (WHERE kind = 'message') AS turns,
           bool_or(kind = 'transition' AND detail->>'final' = 'true') AS completed
    FROM audit_events
    WHERE (%(tenant)s::text IS NULL OR tenant_id = %(tenant)s) AND kind IN ('message', 'transition')
    GROUP BY tenant_id, workflow, thread_id
    HAVING count(*) FILTER (WHERE kind = 'message') > 0
)
SELECT tenant_id, workflow, count(*) AS conversations, count(*) FILTER (WHERE completed) AS completed,
       sum(turns)::bigint AS turns, avg(turns) FILTER (WHERE completed)::float AS mean_turns_to_complete
FROM threads
GROUP BY tenant_id, workflow
ORDER BY tenant_id, workflow
"""
# A stage's visit lasts from its entry (the previous transition, or the thread's first message) to
# the transition that leaves it; a stage not left yet is not counted.
STAGE_TIMES = """
WITH first_message AS (
    SELECT tenant_id, thread_id, min(at) AS at
    FROM audit_events
    WHERE (%(tenant)s::text IS NULL OR tenant_id = %(tenant)s) AND kind = 'message'
    GROUP BY tenant_id, thread_id
), moves AS (
    SELECT event_id, tenant_id, workflow, thread_id, detail->>'from_stage' AS stage, at,
           lag(at) OVER (PARTITION BY tenant_id, thread_id ORDER BY event_id) AS entered
    FROM audit_events
    WHERE (%(tenant)s::text IS NULL OR tenant_id = %(tenant)s) AND kind = 'transition'
)
SELECT moves.tenant_id, moves.workflow, moves.stage, count(*) AS visits,
       sum(extract(epoch FROM moves.at - coalesce(moves.entered, first_message.at)))::float AS seconds
FROM moves JOIN first_message USING (tenant_id, thread_id)
GROUP BY moves.tenant_id, moves.workflow, moves.stage
ORDER BY moves.tenant_id, moves.workflow, min(moves.event_id)
"""
WORKER_TASKS = """
SELECT tenant_id, workflow, agent AS worker, count(*) AS tasks,
       count(*) FILTER (WHERE detail->>'status' = 'COMPLETED') AS completed,
       count(*) FILTER (WHERE detail->>'status' = 'NEEDS_INPUT') AS needs_input,
       count(*) FILTER (WHERE detail->>'status' = 'FAILED') AS failed
FROM audit_events
WHERE (%(tenant)s::text IS NULL OR tenant_id = %(tenant)s) AND kind = 'task'
GROUP BY tenant_id, workflow, agent
ORDER BY tenant_id, workflow, count(*) DESC, agent
"""


class StageTime(BaseModel):
    stage: str
    visits: int
    """Visits that ended (the stage was left)."""
    mean_seconds: float
    total_seconds: float


class WorkerLoad(BaseModel):
    worker: str
    tasks: int
    completed: int
    needs_input: int
    failed: int
    utilisation: float
    """Its share of the workflow's tasks."""


class WorkflowSummary(BaseModel):
    tenant_id: str
    workflow: str
    conversations: int
    completed: int
    completion_rate: float
    turns: int
    mean_turns: float
    mean_turns_to_complete: float | None
    stages: list[StageTime]
    workers: list[WorkerLoad]


async def workflow_summaries(
    pool: AsyncConnectionPool[Any], tenant_id: str | None = None
) -> list[WorkflowSummary]:
    """Every workflow's figures for one tenant (or every tenant: the operator's ``/metrics``)."""
    parameters = {"tenant": tenant_id}
    async with pool.connection() as conn:
        conversations = await (await conn.execute(CONVERSATIONS, parameters)).fetchall()
        stage_rows = await (await conn.execute(STAGE_TIMES, parameters)).fetchall()
        worker_rows = await (await conn.execute(WORKER_TASKS, parameters)).fetchall()
    return [_summary(row, _of(stage_rows, row), _of(worker_rows, row)) for row in conversations]


def _of(rows: Sequence[dict[str, Any]], workflow: dict[str, Any]) -> list[dict[str, Any]]:
    key = (workflow["tenant_id"], workflow["workflow"])
    return [row for row in rows if (row["tenant_id"], row["workflow"]) == key]


def _summary(
    row: dict[str, Any], stages: list[dict[str, Any]], workers: list[dict[str, Any]]
) -> WorkflowSummary:
    tasks = sum(int(worker["tasks"]) for worker in workers)
    conversations = int(row["conversations"])
    return WorkflowSummary(
        tenant_id=row["tenant_id"],
        workflow=row["workflow"],
        conversations=conversations,
        completed=int(row["completed"]),
        completion_rate=round(int(row["completed"]) / conversations, 4) if conversations else 0.0,
        turns=int(row["turns"]),
        mean_turns=round(int(row["turns"]) / conversations, 2) if conversations else 0.0,
        mean_turns_to_complete=(
            round(row["mean_turns_to_complete"], 2) if row["mean_turns_to_complete"] is not None else None
        ),
        stages=[
            StageTime(
                stage=stage["stage"],
                visits=int(stage["visits"]),
                mean_seconds=round(stage["seconds"] / int(stage["visits"]), 3),
                total_seconds=round(stage["seconds"], 3),
            )
            for stage in stages
        ],
        workers=[
            WorkerLoad(
                worker=worker["worker"],
                tasks=int(worker["tasks"]),
                completed=int(worker["completed"]),
                needs_input=int(worker["needs_input"]),
                failed=int(worker["failed"]),
                utilisation=round(int(worker["tasks"]) / tasks, 4) if tasks else 0.0,
            )
            for worker in workers
        ],
    )
