"""Playbooks: validated, deployed on a cron schedule, executed for real, disabled or rolled back.

A playbook is what the playbook generator writes: a trigger (a cron schedule and/or an event condition
on a metric), ordered steps (a call of one of the tenant's tools, or a notification), integrations,
success metrics, a rollback plan and an owner. An invalid one is refused with every reason, and
nothing is stored. An execution runs the tool steps against the tenant's data; when the trigger has
an event condition, the notification steps run only if the condition holds on those results.
Notifications go to the outbox. Every execution is a ``playbook_runs`` row (one per scheduled
instant, so a repeated trigger stores one run), every deploy/disable/rollback a ``playbook_events`` row.
"""

from __future__ import annotations

import json
import logging
import uuid
from datetime import datetime
from typing import Any, Literal

from langchain_core.tools import BaseTool
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from master_agent.capabilities import load_tenant, tenant_capabilities
from master_agent.capabilities.spec import cron_min_interval
from master_agent.errors import ConflictError, InputError, NotFoundError, ScheduleTooFrequentError
from master_agent.evolution import outbox
from master_agent.evolution.context import EvolutionContext
from master_agent.evolution.scheduler import check_cron_frequency, crontab_trigger

logger = logging.getLogger(__name__)

PLAYBOOK_JOB = "master_agent.evolution.jobs:run_playbook"
#: Validation context key: the least seconds between two firings a new trigger may have. Only
#: deploying passes it: a stored playbook is read back whatever the setting was when it was deployed.
CRON_MIN_INTERVAL = "cron_min_interval_s"
#: The pydantic error type of a trigger firing too often (told apart from a malformed one).
CRON_TOO_FREQUENT = "cron_too_frequent"

INSERT_PLAYBOOK = """
INSERT INTO playbooks (playbook_id, tenant_id, solution_id, version, spec, status, schedule)
VALUES (%s, %s, %s,
        1 + coalesce((SELECT max(version) FROM playbooks WHERE tenant_id = %s AND spec->>'name' = %s), 0),
        %s, 'active', %s)
RETURNING version
"""
INSERT_EVENT = "INSERT INTO playbook_events (playbook_id, tenant_id, action, reason) VALUES (%s, %s, %s, %s)"
SELECT_PLAYBOOK = """
SELECT playbook_id, tenant_id, solution_id, version, spec, status, schedule, created_at, updated_at
FROM playbooks WHERE playbook_id = %s AND tenant_id = %s
"""
LOCK_PLAYBOOK = SELECT_PLAYBOOK + " FOR UPDATE"
LIST_PLAYBOOKS = """
SELECT playbook_id, tenant_id, solution_id, version, spec, status, schedule, created_at, updated_at
FROM playbooks WHERE tenant_id = %s AND (%s::text IS NULL OR status = %s)
ORDER BY created_at DESC LIMIT %s OFFSET %s
"""
SET_STATUS = "UPDATE playbooks SET status = %s, updated_at = now() WHERE playbook_id = %s"
INSERT_RUN = """
INSERT INTO playbook_runs (run_id, playbook_id, tenant_id, scheduled_for, status, results, error)
VALUES (%s, %s, %s, %s, %s, %s, %s)
ON CONFLICT (playbook_id, scheduled_for) DO NOTHING
RETURNING run_id
"""
SELECT_RUNS = """
SELECT run_id, playbook_id, scheduled_for, status, results, error, created_at FROM playbook_runs
WHERE playbook_id = %s ORDER BY scheduled_for DESC LIMIT %s
"""
SELECT_EVENTS = """
SELECT action, reason, created_at FROM playbook_events WHERE playbook_id = %s ORDER BY event_id
"""
_OPERATORS = {
    "<": float.__lt__,
    "<=": float.__le__,
    ">": float.__gt__,
    ">=": float.__ge__,
}


class EventCondition(BaseModel):
    """Fires when a metric found in the step results crosses a threshold."""

    model_config = ConfigDict(extra="forbid")

    metric: str = Field(min_length=1, description="Key of a numeric value in the tool steps' results.")
    operator: Literal["<", "<=", ">", ">="]
    threshold: float
    source: str | None = Field(default=None, description="Only look in this tool step's result.")


class Trigger(BaseModel):
    model_config = ConfigDict(extra="forbid")

    cron: str | None = Field(default=None, description="Five-field crontab, UTC (e.g. '0 9 * * MON').")
    event: EventCondition | None = None

    @field_validator("cron")
    @classmethod
    def _valid_cron(cls, cron: str | None, info: ValidationInfo) -> str | None:
        if cron is None:
            return cron
        try:
            crontab_trigger(cron)
        except ValueError as error:
            raise ValueError(f"invalid cron {cron!r}: {error}") from None
        min_interval_s = (info.context or {}).get(CRON_MIN_INTERVAL)
        if min_interval_s is not None:
            try:
                check_cron_frequency(cron, min_interval_s)
            except ValueError as error:
                raise PydanticCustomError(
                    CRON_TOO_FREQUENT, "cron {cron!r}: {reason}", {"cron": cron, "reason": str(error)}
                ) from None
        return cron

    @model_validator(mode="after")
    def _something_triggers(self) -> Trigger:
        if self.cron is None and self.event is None:
            raise ValueError("a trigger needs a cron schedule, an event condition or both")
        return self


class Step(BaseModel):
    model_config = ConfigDict(extra="forbid")

    order: int = Field(ge=1)
    action: Literal["tool", "notify"]
    tool: str | None = None
    args: dict[str, Any] = Field(default_factory=dict)
    message: str | None = None

    @model_validator(mode="after")
    def _complete(self) -> Step:
        if self.action == "tool" and not self.tool:
            raise ValueError(f"step {self.order}: a tool step names its tool")
        if self.action == "notify" and not (self.message and self.message.strip()):
            raise ValueError(f"step {self.order}: a notify step has a message")
        return self


class PlaybookSpec(BaseModel):
    """An executable playbook (the playbook generator's output, validated)."""

    model_config = ConfigDict(extra="ignore")

    name: str = Field(min_length=1, max_length=200)
    trigger: Trigger
    steps: list[Step] = Field(min_length=1, max_length=50)
    integrations: list[str] = Field(default_factory=list)
    success_metrics: dict[str, Any] = Field(min_length=1)
    rollback: dict[str, Any] = Field(min_length=1)
    owner: str = Field(min_length=1)

    @model_validator(mode="after")
    def _ordered(self) -> PlaybookSpec:
        orders = [step.order for step in self.steps]
        if orders != sorted(set(orders)):
            raise ValueError(f"steps must have distinct, increasing order numbers (got {orders})")
        return self


class Playbook(BaseModel):
    """A row of ``playbooks``."""

    playbook_id: uuid.UUID
    tenant_id: str
    solution_id: uuid.UUID | None
    version: int
    spec: dict[str, Any]
    status: str
    schedule: str | None
    created_at: datetime
    updated_at: datetime
    next_run_at: datetime | None = None


class StepResult(BaseModel):
    order: int
    action: str
    status: Literal["success", "skipped", "error"]
    result: Any = None


class PlaybookRun(BaseModel):
    run_id: uuid.UUID | None
    playbook_id: uuid.UUID
    scheduled_for: datetime
    status: Literal["success", "skipped", "error", "inactive", "already_ran"]
    results: list[StepResult] = Field(default_factory=list)
    error: str | None = None
    triggered: bool | None = None
    """Whether the event condition held (None without one)."""


class PlaybookRefused(InputError):
    """The playbook is invalid; ``reasons`` lists every problem."""

    def __init__(self, reasons: list[str], field: str = "playbook") -> None:
        super().__init__(field, "invalid playbook: " + "; ".join(reasons))
        self.reasons = reasons


class PlaybookScheduleRefused(PlaybookRefused, ScheduleTooFrequentError):
    """The playbook's ``trigger.cron`` fires more often than the deployment allows (422); ``reasons``
    lists every problem of the playbook."""

    def __init__(self, reasons: list[str]) -> None:
        super().__init__(reasons, field="trigger.cron")


def validate_playbook(
    spec: dict[str, Any], tools: dict[str, BaseTool], *, cron_min_interval_s: int | None = None
) -> PlaybookSpec:
    """The validated playbook, or PlaybookRefused with every reason (shape, unknown tools, bad args);
    PlaybookScheduleRefused when its cron fires more often than ``cron_min_interval_s`` allows."""
    try:
        playbook = PlaybookSpec.model_validate(spec, context={CRON_MIN_INTERVAL: cron_min_interval_s})
    except ValidationError as error:
        reasons = [
            f"{'.'.join(str(part) for part in item['loc']) or 'playbook'}: {item['msg']}"
            for item in error.errors()
        ]
        if any(item["type"] == CRON_TOO_FREQUENT for item in error.errors()):
            raise PlaybookScheduleRefused(reasons) from None
        raise PlaybookRefused(reasons) from None
    reasons = []
    for step in playbook.steps:
        if step.action != "tool":
            continue
        tool = tools.get(step.tool or "")
        if tool is None:
            reasons.append(f"step {step.order}: unknown tool {step.tool!r}; known: {sorted(tools)}")
            continue
        schema = tool.args_schema
        if isinstance(schema, type) and issubclass(schema, BaseModel):
            try:
                schema.model_validate(step.args)
            except ValidationError as error:
                reasons.append(f"step {step.order}: invalid args for {step.tool}: {error.errors()[0]['msg']}")
    event = playbook.trigger.event
    if (
        event is not None
        and event.source is not None
        and not any(step.tool == event.source for step in playbook.steps)
    ):
        reasons.append(f"trigger.event.source: no step calls {event.source!r}")
    if reasons:
        raise PlaybookRefused(reasons)
    return playbook


async def _tenant_tools(evolution: EvolutionContext, tenant_id: str) -> dict[str, BaseTool]:
    tenant = await load_tenant(evolution.pool, tenant_id)
    return tenant_capabilities(tenant, await evolution.tool_context(tenant_id)).tools


def playbook_job_id(playbook_id: uuid.UUID | str) -> str:
    return f"playbook:{playbook_id}"


async def deploy_playbook(
    evolution: EvolutionContext,
    tenant_id: str,
    spec: dict[str, Any],
    *,
    solution_id: str | None = None,
) -> Playbook:
    """Validate, store and schedule a playbook (a new version when one of that name exists)."""
    tenant = await load_tenant(evolution.pool, tenant_id)
    playbook = validate_playbook(
        spec,
        await _tenant_tools(evolution, tenant_id),
        cron_min_interval_s=cron_min_interval(tenant.tier, evolution.settings.cron_min_interval_s),
    )
    playbook_id = uuid.uuid4()
    async with evolution.pool.connection() as conn, conn.transaction():
        if solution_id is not None:
            owned = await conn.execute(
                "SELECT 1 FROM solutions WHERE solution_id = %s AND tenant_id = %s", (solution_id, tenant_id)
            )
            if await owned.fetchone() is None:
                raise InputError("solution_id", f"unknown solution {solution_id}")
        await conn.execute(
            INSERT_PLAYBOOK,
            (
                playbook_id,
                tenant_id,
                solution_id,
                tenant_id,
                playbook.name,
                playbook.model_dump_json(),
                playbook.trigger.cron,
            ),
        )
        await conn.execute(INSERT_EVENT, (playbook_id, tenant_id, "deployed", None))
    if evolution.scheduler is not None and playbook.trigger.cron:
        evolution.scheduler.add_cron_job(
            playbook_job_id(playbook_id),
            PLAYBOOK_JOB,
            crontab_trigger(playbook.trigger.cron),
            [str(playbook_id)],
        )
    found = await get_playbook(evolution, tenant_id, playbook_id)
    assert found is not None
    return found


async def solution_playbook(evolution: EvolutionContext, tenant_id: str, solution_id: str) -> dict[str, Any]:
    """The playbook of one of the tenant's solutions (to deploy it)."""
    async with evolution.pool.connection() as conn:
        cursor = await conn.execute(
            "SELECT solution FROM solutions WHERE solution_id = %s AND tenant_id = %s",
            (solution_id, tenant_id),
        )
        row = await cursor.fetchone()
    playbook = (row["solution"] or {}).get("playbook") if row else None
    if not isinstance(playbook, dict):
        raise NotFoundError("solution", f"{solution_id} (with a playbook)")
    return playbook


async def get_playbook(
    evolution: EvolutionContext, tenant_id: str, playbook_id: uuid.UUID | str
) -> Playbook | None:
    async with evolution.pool.connection() as conn:
        row = await (await conn.execute(SELECT_PLAYBOOK, (playbook_id, tenant_id))).fetchone()
    if row is None:
        return None
    playbook = Playbook.model_validate(row)
    if evolution.scheduler is not None and playbook.status == "active":
        playbook.next_run_at = evolution.scheduler.next_run(playbook_job_id(playbook.playbook_id))
    return playbook


async def list_playbooks(
    evolution: EvolutionContext,
    tenant_id: str,
    *,
    status: str | None = None,
    limit: int = 50,
    offset: int = 0,
) -> list[Playbook]:
    async with evolution.pool.connection() as conn:
        cursor = await conn.execute(LIST_PLAYBOOKS, (tenant_id, status, status, limit, offset))
        found = [Playbook.model_validate(row) for row in await cursor.fetchall()]
    if (
        evolution.scheduler is not None
    ):  # the next run as ``get_playbook`` gives it: a list and a detail agree
        for playbook in found:
            if playbook.status == "active":
                playbook.next_run_at = evolution.scheduler.next_run(playbook_job_id(playbook.playbook_id))
    return found


async def playbook_history(
    evolution: EvolutionContext, playbook_id: uuid.UUID | str, *, limit: int = 50
) -> dict[str, list[dict[str, Any]]]:
    async with evolution.pool.connection() as conn:
        runs = await (await conn.execute(SELECT_RUNS, (playbook_id, limit))).fetchall()
        events = await (await conn.execute(SELECT_EVENTS, (playbook_id,))).fetchall()
    return {"runs": runs, "events": events}


async def change_status(
    evolution: EvolutionContext,
    tenant_id: str,
    playbook_id: uuid.UUID | str,
    action: Literal["disable", "rollback"],
    reason: str | None = None,
) -> Playbook:
    """Stop a playbook's schedule. ``rollback`` also sends its rollback plan to the outbox."""
    status = "disabled" if action == "disable" else "rolled_back"
    async with evolution.pool.connection() as conn, conn.transaction():
        row = await (await conn.execute(LOCK_PLAYBOOK, (playbook_id, tenant_id))).fetchone()
        if row is None:
            raise NotFoundError("playbook", str(playbook_id))
        if row["status"] == "rolled_back" or (row["status"] == status):
            raise ConflictError(f"playbook {playbook_id} is already {row['status']}")
        await conn.execute(SET_STATUS, (status, row["playbook_id"]))
        await conn.execute(INSERT_EVENT, (row["playbook_id"], tenant_id, status, reason))
        if action == "rollback":
            spec = row["spec"]
            await outbox.enqueue(
                conn,
                tenant_id,
                "playbooks",
                f"Rollback of {spec.get('name')}",
                {"playbook_id": str(row["playbook_id"]), "rollback": spec.get("rollback"), "reason": reason},
            )
    if evolution.scheduler is not None:
        evolution.scheduler.remove_job(playbook_job_id(playbook_id))
    found = await get_playbook(evolution, tenant_id, playbook_id)
    assert found is not None
    return found


def _values(result: Any, key: str) -> list[float]:
    """Every numeric value stored under ``key`` anywhere in a result."""
    found: list[float] = []
    if isinstance(result, dict):
        for name, value in result.items():
            if name == key and isinstance(value, int | float) and not isinstance(value, bool):
                found.append(float(value))
            else:
                found.extend(_values(value, key))
    elif isinstance(result, list):
        for item in result:
            found.extend(_values(item, key))
    return found


async def execute_playbook(
    evolution: EvolutionContext, playbook_id: uuid.UUID | str, scheduled_for: datetime
) -> PlaybookRun:
    """Run an active playbook's steps once for ``scheduled_for`` (a second call for it stores nothing)."""
    playbook_id = uuid.UUID(str(playbook_id))
    async with evolution.pool.connection() as conn:
        row = await (
            await conn.execute(
                "SELECT tenant_id, spec, status FROM playbooks WHERE playbook_id = %s", (playbook_id,)
            )
        ).fetchone()
    if row is None or row["status"] != "active":
        return PlaybookRun(
            run_id=None, playbook_id=playbook_id, scheduled_for=scheduled_for, status="inactive"
        )
    tenant_id = row["tenant_id"]
    spec = PlaybookSpec.model_validate(row["spec"])
    tools = await _tenant_tools(evolution, tenant_id)
    results: list[StepResult] = []
    outputs: dict[str, Any] = {}
    error: str | None = None
    for step in spec.steps:
        if step.action != "tool":
            continue
        try:
            output = await tools[step.tool or ""].ainvoke(step.args)
        except Exception as failure:  # a failing step is recorded; later steps still run
            results.append(StepResult(order=step.order, action="tool", status="error", result=str(failure)))
            error = error or f"step {step.order} ({step.tool}): {failure}"
            continue
        output = output.model_dump(mode="json") if isinstance(output, BaseModel) else output
        outputs[step.tool or ""] = output
        results.append(StepResult(order=step.order, action="tool", status="success", result=output))
    event = spec.trigger.event
    triggered: bool | None = None
    matches: list[float] = []
    if event is not None:
        sources = [outputs[event.source]] if event.source in outputs else list(outputs.values())
        values = [value for source in sources for value in _values(source, event.metric)]
        matches = [value for value in values if _OPERATORS[event.operator](value, event.threshold)]
        triggered = bool(matches)
    status: Literal["success", "skipped", "error"] = "error" if error else "success"
    if triggered is False and not error:
        status = "skipped"
    try:
        run_id = await _store_run(
            evolution,
            playbook_id,
            tenant_id,
            spec,
            scheduled_for,
            results,
            status,
            error,
            event,
            triggered,
            matches,
        )
    except _AlreadyRan:
        return PlaybookRun(
            run_id=None, playbook_id=playbook_id, scheduled_for=scheduled_for, status="already_ran"
        )
    return PlaybookRun(
        run_id=run_id,
        playbook_id=playbook_id,
        scheduled_for=scheduled_for,
        status=status,
        results=results,
        error=error,
        triggered=triggered,
    )


async def _store_run(
    evolution: EvolutionContext,
    playbook_id: uuid.UUID,
    tenant_id: str,
    spec: PlaybookSpec,
    scheduled_for: datetime,
    results: list[StepResult],
    status: str,
    error: str | None,
    event: EventCondition | None,
    triggered: bool | None,
    matches: list[float],
) -> uuid.UUID:
    """Send the notify steps and store the run, in one transaction (all or nothing)."""
    async with evolution.pool.connection() as conn, conn.transaction():
        for step in spec.steps:
            if step.action != "notify":
                continue
            if triggered is False:
                results.append(StepResult(order=step.order, action="notify", status="skipped"))
                continue
            body: dict[str, Any] = {
                "playbook_id": str(playbook_id),
                "message": step.message,
                "owner": spec.owner,
            }
            if event is not None:
                body["condition"] = event.model_dump()
                body["matching_values"] = matches
            message_id = await outbox.enqueue(conn, tenant_id, "playbooks", step.message or spec.name, body)
            results.append(
                StepResult(
                    order=step.order,
                    action="notify",
                    status="success",
                    result={"message_id": str(message_id)},
                )
            )
        results.sort(key=lambda item: item.order)
        run_id = uuid.uuid4()
        inserted = await (
            await conn.execute(
                INSERT_RUN,
                (
                    run_id,
                    playbook_id,
                    tenant_id,
                    scheduled_for,
                    status,
                    json.dumps([item.model_dump(mode="json") for item in results], default=str),
                    error,
                ),
            )
        ).fetchone()
        if inserted is None:
            # Already ran for this instant: undo this attempt's notifications with the transaction.
            raise _AlreadyRan
    return run_id


class _AlreadyRan(Exception):
    pass
