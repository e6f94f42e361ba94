"""Tenant-scoped reads of ``solutions`` for the API (another tenant's row is simply not found)."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from psycopg_pool import AsyncConnectionPool
from pydantic import BaseModel

from master_agent.runtime import Solution

SELECT_ONE = """
SELECT solution_id, thread_id, goal, status, solution, error, created_at, updated_at
FROM solutions WHERE tenant_id = %s AND solution_id = %s
"""
SELECT_BY_THREADS = """
SELECT solution_id, thread_id, goal, status, solution, error, created_at, updated_at
FROM solutions WHERE tenant_id = %s AND thread_id::text = ANY(%s::text[])
ORDER BY created_at
"""
SELECT_PAGE = """
SELECT solution_id, thread_id, goal, status, solution, error, created_at, updated_at,
       count(*) OVER () AS total
FROM solutions WHERE tenant_id = %s
ORDER BY created_at DESC, solution_id
LIMIT %s OFFSET %s
"""


OUTCOME_SUMMARIES = """
SELECT c.solution_id, s.goal, count(*)::int AS checks, count(c.measured)::int AS measured,
       max(c.measured_at) AS last_measured_at, min(c.due_at) FILTER (WHERE c.measured IS NULL) AS next_due_at
FROM outcome_checks c JOIN solutions s ON s.solution_id = c.solution_id AND s.tenant_id = c.tenant_id
WHERE c.tenant_id = %s
GROUP BY c.solution_id, s.goal, s.created_at
ORDER BY s.created_at DESC, c.solution_id
LIMIT %s
"""


class OutcomeSummary(BaseModel):
    """One solution's outcome checks in a line: how many, how many measured, the last and the next."""

    solution_id: uuid.UUID
    goal: str
    checks: int
    measured: int
    last_measured_at: datetime | None
    next_due_at: datetime | None


class StrategicGoalPublic(BaseModel):
    """A strategic goal as the API shows it: its status and, when done, its solution."""

    solution_id: uuid.UUID
    thread_id: str
    goal: str
    status: str
    solution: Solution | None = None
    error: str | None = None
    created_at: datetime
    updated_at: datetime


class StrategicGoalPage(BaseModel):
    items: list[StrategicGoalPublic]
    limit: int
    offset: int
    total: int


async def get_solution(
    pool: AsyncConnectionPool[Any], tenant_id: str, solution_id: uuid.UUID
) -> StrategicGoalPublic | None:
    async with pool.connection() as conn:
        row = await (await conn.execute(SELECT_ONE, (tenant_id, solution_id))).fetchone()
    return StrategicGoalPublic.model_validate(row) if row else None


async def goals_of_threads(
    pool: AsyncConnectionPool[Any], tenant_id: str, thread_ids: list[str]
) -> dict[str, StrategicGoalPublic]:
    """The goal each of ``thread_ids`` was started for (its latest), by thread id; threads of no goal left out."""
    if not thread_ids:
        return {}
    async with pool.connection() as conn:
        rows = await (await conn.execute(SELECT_BY_THREADS, (tenant_id, thread_ids))).fetchall()
    return {str(row["thread_id"]): StrategicGoalPublic.model_validate(row) for row in rows}


async def list_solutions(
    pool: AsyncConnectionPool[Any], tenant_id: str, limit: int, offset: int
) -> StrategicGoalPage:
    async with pool.connection() as conn:
        rows = await (await conn.execute(SELECT_PAGE, (tenant_id, limit, offset))).fetchall()
    total = int(rows[0]["total"]) if rows else 0
    if not rows and offset:
        async with pool.connection() as conn:
            counted = await (
                await conn.execute("SELECT count(*) AS n FROM solutions WHERE tenant_id = %s", (tenant_id,))
            ).fetchone()
        total = int(counted["n"]) if counted else 0
    return StrategicGoalPage(
        items=[StrategicGoalPublic.model_validate(row) for row in rows],
        limit=limit,
        offset=offset,
        total=total,
    )


async def outcome_summaries(
    pool: AsyncConnectionPool[Any], tenant_id: str, limit: int
) -> list[OutcomeSummary]:
    """The tenant's solutions with outcome checks, newest first."""
    async with pool.connection() as conn:
        rows = await (await conn.execute(OUTCOME_SUMMARIES, (tenant_id, limit))).fetchall()
    return [OutcomeSummary.model_validate(row) for row in rows]
