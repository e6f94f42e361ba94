"""Crons of the LangGraph-compatible API: a run request made on a schedule, on one thread or on a new
thread each time, as langgraph-api has them.

A cron is a row in ``crons`` and a job in the scheduler's job store (in the same PostgreSQL, so both
survive restarts); only the scheduler leader runs jobs. The row is the truth: a firing locks it, takes
its ``next_run_date`` as the instant fired, records the instant in ``cron_firings`` (one row per
instant, so a repeated or concurrent firing makes no second run) and moves ``next_run_date`` past now
(instants missed while no leader ran are fired once, not one by one). The run it makes is an
ordinary run, through the same checks as ``POST /threads/{id}/runs``."""

from __future__ import annotations

import json
import logging
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from apscheduler.triggers.cron import CronTrigger
from fastapi import HTTPException
from pydantic import BaseModel

from master_agent.errors import MasterAgentError
from master_agent.evolution.jobs import API_CRON_JOB, api_cron_job_id
from master_agent.evolution.scheduler import EvolutionScheduler, check_cron_frequency, crontab_trigger
from master_agent.runtime.resources import RuntimeResources
from master_agent.runtime.runs import RunQueue
from master_agent.service.limits import order_by
from master_agent.service.routes.runs import RunCreate, run_on_thread, start_stateless_run
from master_agent.storage.documents import StoredMetadata

logger = logging.getLogger(__name__)

#: A job may wake a moment before the instant it was set for (clocks read apart).
DUE_SLACK = timedelta(seconds=1)

INSERT_CRON = """
INSERT INTO crons (cron_id, tenant_id, assistant_id, thread_id, schedule, timezone, end_time, payload, metadata,
                   on_run_completed, enabled, next_run_date)
VALUES (%(cron_id)s, %(tenant)s, %(assistant_id)s, %(thread_id)s, %(schedule)s, %(timezone)s, %(end_time)s,
        %(payload)s, %(metadata)s, %(on_run_completed)s, %(enabled)s, %(next_run_date)s)
RETURNING *
"""
SELECT_CRON = "SELECT * FROM crons WHERE tenant_id = %s AND cron_id = %s"
UPDATE_CRON = """
UPDATE crons SET schedule = %(schedule)s, timezone = %(timezone)s, end_time = %(end_time)s, payload = %(payload)s,
                 metadata = %(metadata)s, on_run_completed = %(on_run_completed)s, enabled = %(enabled)s,
                 next_run_date = %(next_run_date)s, updated_at = now()
WHERE tenant_id = %(tenant)s AND cron_id = %(cron_id)s
RETURNING *
"""
DELETE_CRON = "DELETE FROM crons WHERE tenant_id = %s AND cron_id = %s RETURNING cron_id"
_MATCHING = """
WHERE tenant_id = %(tenant)s AND metadata @> %(metadata)s
  AND (%(assistant_id)s::uuid IS NULL OR assistant_id = %(assistant_id)s)
  AND (%(thread_id)s::uuid IS NULL OR thread_id = %(thread_id)s)
  AND (%(enabled)s::boolean IS NULL OR enabled = %(enabled)s)
"""
SEARCH_CRONS = f"""
SELECT *, count(*) OVER () AS total FROM crons {_MATCHING}
ORDER BY {{order}} NULLS LAST, cron_id
LIMIT %(limit)s OFFSET %(offset)s
"""
COUNT_CRONS = f"SELECT count(*) AS n FROM crons {_MATCHING}"
CRON_SORT_COLUMNS = (
    "cron_id",
    "assistant_id",
    "thread_id",
    "next_run_date",
    "end_time",
    "created_at",
    "updated_at",
)
LOCK_DUE_CRON = "SELECT * FROM crons WHERE cron_id = %s FOR UPDATE"
CLAIM_INSTANT = """
INSERT INTO cron_firings (cron_id, scheduled_for) VALUES (%s, %s) ON CONFLICT DO NOTHING RETURNING scheduled_for
"""
ADVANCE = "UPDATE crons SET next_run_date = %s WHERE cron_id = %s"
RECORD_FIRING = "UPDATE cron_firings SET run_id = %s, error = %s WHERE cron_id = %s AND scheduled_for = %s"


class Cron(BaseModel):
    """A cron as langgraph-api answers it."""

    cron_id: uuid.UUID
    assistant_id: uuid.UUID
    thread_id: uuid.UUID | None
    on_run_completed: Literal["delete", "keep"] | None
    end_time: datetime | None
    schedule: str
    timezone: str | None
    created_at: datetime
    updated_at: datetime
    payload: dict[str, Any]
    user_id: str | None = None
    next_run_date: datetime | None
    metadata: StoredMetadata
    enabled: bool


CRON_FIELDS = tuple(Cron.model_fields)


class CronFiring(BaseModel):
    """What one firing of a cron's job did."""

    cron_id: uuid.UUID
    status: Literal["fired", "error", "not_due", "already_fired", "inactive", "gone"]
    scheduled_for: datetime | None = None
    run_id: uuid.UUID | None = None
    error: str | None = None


def schedule_trigger(schedule: str, timezone: str | None, end_time: datetime | None) -> CronTrigger:
    """The trigger of a cron, or a 422 naming the field that makes it impossible."""
    try:
        zone = ZoneInfo(timezone or "UTC")
    except (ZoneInfoNotFoundError, ValueError):
        raise HTTPException(
            422, detail=f"timezone: {timezone!r} is not an IANA time zone (e.g. 'America/New_York')"
        ) from None
    try:
        return crontab_trigger(schedule, zone, end_time)
    except ValueError as error:
        raise HTTPException(
            422,
            detail=f"schedule: {schedule!r} is not a cron schedule ({error}); e.g. '*/5 * * * *' every 5 minutes",
        ) from None


def check_schedule(schedule: str, timezone: str | None, min_interval_s: int) -> None:
    """A new or changed schedule: a 422 naming ``schedule`` when it is malformed or fires more often
    than ``MASTER_AGENT_CRON_MIN_INTERVAL_S`` allows (a cron stored before keeps firing as it does)."""
    trigger = schedule_trigger(schedule, timezone, None)
    try:
        check_cron_frequency(schedule, min_interval_s, trigger.timezone)
    except ValueError as error:
        raise HTTPException(422, detail=f"schedule: {schedule!r}: {error}") from None


def next_run_after(trigger: CronTrigger, moment: datetime) -> datetime | None:
    """The trigger's first instant strictly after ``moment`` (None: it has ended)."""
    following: datetime | None = trigger.get_next_fire_time(None, moment + timedelta(microseconds=1))
    return following.astimezone(UTC) if following is not None else None


def _cron(row: dict[str, Any]) -> Cron:
    return Cron.model_validate(row)


async def store_cron(
    resources: RuntimeResources,
    tenant: str,
    *,
    assistant_id: uuid.UUID,
    thread_id: uuid.UUID | None,
    schedule: str,
    timezone: str | None,
    end_time: datetime | None,
    payload: dict[str, Any],
    metadata: dict[str, Any],
    on_run_completed: str | None,
    enabled: bool,
) -> Cron:
    trigger = schedule_trigger(schedule, timezone, end_time)
    cron_id = uuid.uuid4()
    next_run_date = next_run_after(trigger, datetime.now(UTC))
    values = {
        "cron_id": cron_id,
        "tenant": tenant,
        "assistant_id": assistant_id,
        "thread_id": thread_id,
        "schedule": schedule,
        "timezone": timezone,
        "end_time": end_time,
        "payload": json.dumps(payload),
        "metadata": json.dumps(metadata),
        "on_run_completed": on_run_completed,
        "enabled": enabled,
        "next_run_date": next_run_date,
    }
    async with resources.database.pool.connection() as conn:
        row = await (await conn.execute(INSERT_CRON, values)).fetchone()
    assert row is not None
    cron = _cron(row)
    schedule_job(resources.evolution.scheduler, cron)
    return cron


def schedule_job(scheduler: EvolutionScheduler | None, cron: Cron) -> None:
    """Set (or replace, or drop) the cron's job in the shared job store, where a scheduler is at hand
    (elsewhere the leader adds it when it finds none)."""
    if scheduler is None:
        return
    if not cron.enabled or cron.next_run_date is None:
        scheduler.remove_job(api_cron_job_id(cron.cron_id))
        return
    trigger = schedule_trigger(cron.schedule, cron.timezone, cron.end_time)
    scheduler.add_cron_job(api_cron_job_id(cron.cron_id), API_CRON_JOB, trigger, [str(cron.cron_id)])


async def get_cron(resources: RuntimeResources, tenant: str, cron_id: uuid.UUID) -> Cron | None:
    async with resources.database.pool.connection() as conn:
        row = await (await conn.execute(SELECT_CRON, (tenant, cron_id))).fetchone()
    return _cron(row) if row else None


async def update_cron(resources: RuntimeResources, tenant: str, cron: Cron, reschedule: bool) -> Cron | None:
    """Store ``cron``'s fields; ``reschedule``: its timing changed, so its next instant is counted
    again from now."""
    next_run_date = cron.next_run_date
    if reschedule or next_run_date is None:
        trigger = schedule_trigger(cron.schedule, cron.timezone, cron.end_time)
        next_run_date = next_run_after(trigger, datetime.now(UTC))
    values = {
        **cron.model_dump(
            include={"schedule", "timezone", "end_time", "on_run_completed", "enabled", "cron_id"}
        ),
        "payload": json.dumps(cron.payload),
        "metadata": json.dumps(cron.metadata),
        "next_run_date": next_run_date,
        "tenant": tenant,
    }
    async with resources.database.pool.connection() as conn:
        row = await (await conn.execute(UPDATE_CRON, values)).fetchone()
    if row is None:
        return None
    updated = _cron(row)
    schedule_job(resources.evolution.scheduler, updated)
    return updated


async def delete_cron(resources: RuntimeResources, tenant: str, cron_id: uuid.UUID) -> bool:
    async with resources.database.pool.connection() as conn:
        row = await (await conn.execute(DELETE_CRON, (tenant, cron_id))).fetchone()
    if row is not None and resources.evolution.scheduler is not None:
        resources.evolution.scheduler.remove_job(api_cron_job_id(cron_id))
    return row is not None


def _filters(
    tenant: str,
    metadata: dict[str, Any],
    assistant_id: uuid.UUID | None,
    thread_id: uuid.UUID | None,
    enabled: bool | None,
) -> dict[str, Any]:
    return {
        "tenant": tenant,
        "metadata": json.dumps(metadata),
        "assistant_id": assistant_id,
        "thread_id": thread_id,
        "enabled": enabled,
    }


async def search_crons(
    resources: RuntimeResources,
    tenant: str,
    *,
    metadata: dict[str, Any],
    assistant_id: uuid.UUID | None,
    thread_id: uuid.UUID | None,
    enabled: bool | None,
    limit: int,
    offset: int,
    sort_by: str | None,
    sort_order: str | None,
) -> tuple[list[Cron], int]:
    """The tenant's crons matching the filters, newest first unless ``sort_by``/``sort_order`` say
    otherwise, and how many match in all."""
    column = sort_by or "created_at"
    assert column in CRON_SORT_COLUMNS
    query = SEARCH_CRONS.format(order=order_by(column, sort_order))
    params = {
        **_filters(tenant, metadata, assistant_id, thread_id, enabled),
        "limit": limit,
        "offset": offset,
    }
    async with resources.database.pool.connection() as conn:
        rows = await (await conn.execute(query, params)).fetchall()
    return [_cron(row) for row in rows], int(rows[0]["total"]) if rows else 0


async def count_crons(
    resources: RuntimeResources,
    tenant: str,
    *,
    metadata: dict[str, Any],
    assistant_id: uuid.UUID | None,
    thread_id: uuid.UUID | None,
) -> int:
    params = _filters(tenant, metadata, assistant_id, thread_id, None)
    async with resources.database.pool.connection() as conn:
        row = await (await conn.execute(COUNT_CRONS, params)).fetchone()
    return int(row["n"]) if row else 0


async def fire_cron(resources: RuntimeResources, queue: RunQueue, cron_id: str) -> CronFiring:
    """Make the run of the cron's due instant, once: a second firing of the same instant (a repeated
    job, a second leader for a moment) finds it claimed and makes nothing."""
    key = uuid.UUID(cron_id)
    now = datetime.now(UTC)
    async with resources.database.pool.connection() as conn, conn.transaction():
        row = await (await conn.execute(LOCK_DUE_CRON, (key,))).fetchone()
        if row is None:
            if resources.evolution.scheduler is not None:
                resources.evolution.scheduler.remove_job(api_cron_job_id(key))
            return CronFiring(cron_id=key, status="gone")
        cron = _cron(row)
        if not cron.enabled or (cron.end_time is not None and cron.end_time <= now):
            return CronFiring(cron_id=key, status="inactive")
        due = cron.next_run_date
        if due is None or due > now + DUE_SLACK:
            return CronFiring(cron_id=key, status="not_due", scheduled_for=due)
        claimed = await (await conn.execute(CLAIM_INSTANT, (key, due))).fetchone()
        trigger = schedule_trigger(cron.schedule, cron.timezone, cron.end_time)
        await conn.execute(ADVANCE, (next_run_after(trigger, max(now, due)), key))
        if claimed is None:
            return CronFiring(cron_id=key, status="already_fired", scheduled_for=due)
    tenant = str(row["tenant_id"])
    metadata = {**cron.metadata, **(cron.payload.get("metadata") or {}), "cron_id": str(key)}
    try:
        body = RunCreate.model_validate({**cron.payload, "metadata": metadata})
        if cron.thread_id is not None:
            _, run = await run_on_thread(cron.thread_id, body, tenant, resources, queue)
        else:
            body.on_completion = cron.on_run_completed or "delete"
            run = await start_stateless_run(body, tenant, resources, queue)
    except (HTTPException, MasterAgentError, ValueError) as failure:
        error = str(failure.detail) if isinstance(failure, HTTPException) else str(failure)
        logger.warning("cron %s: the run of %s was not made: %s", key, due, error)
        await _record(resources, key, due, None, error)
        return CronFiring(cron_id=key, status="error", scheduled_for=due, error=error)
    await _record(resources, key, due, run.run_id, None)
    return CronFiring(cron_id=key, status="fired", scheduled_for=due, run_id=run.run_id)


async def _record(
    resources: RuntimeResources,
    cron_id: uuid.UUID,
    due: datetime,
    run_id: uuid.UUID | None,
    error: str | None,
) -> None:
    async with resources.database.pool.connection() as conn:
        await conn.execute(RECORD_FIRING, (run_id, error, cron_id, due))
