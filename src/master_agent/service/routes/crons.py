"""Crons, as langgraph-api serves them: ``POST /threads/{id}/runs/crons`` (a thread's), ``POST
/runs/crons`` (a new thread each firing), search, count, get, patch, delete."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any, Literal

from fastapi import APIRouter, HTTPException, Response
from pydantic import Field

from master_agent.capabilities import load_tenant
from master_agent.capabilities.assistants import system_assistant_id
from master_agent.capabilities.spec import cron_min_interval
from master_agent.runtime.graphs import graph_ids
from master_agent.service.client_gone import stops_when_client_leaves
from master_agent.service.crons import (
    CRON_FIELDS,
    Cron,
    check_schedule,
    count_crons,
    delete_cron,
    get_cron,
    search_crons,
    store_cron,
    update_cron,
)
from master_agent.service.deps import ResourcesDep, TenantDep
from master_agent.service.limits import LangGraphBody, Metadata, StrictJsonRoute, page
from master_agent.service.routes.runs import RunCreate, StreamMode, new_thread_placeholder, prepare_run
from master_agent.service.routes.threads import existing_thread
from master_agent.service.threads import Thread

router = APIRouter(tags=["crons"], route_class=StrictJsonRoute)

#: The run request a cron repeats (the fields of a run langgraph-api keeps in a cron's payload).
RUN_FIELDS = (
    "input",
    "config",
    "context",
    "metadata",
    "interrupt_before",
    "interrupt_after",
    "webhook",
    "stream_mode",
    "stream_subgraphs",
    "stream_resumable",
    "durability",
    "multitask_strategy",
    "checkpoint_during",
)


class CronRunFields(LangGraphBody):
    input: dict[str, Any] | list[Any] | str | int | float | bool | None = None
    config: dict[str, Any] | None = None
    context: dict[str, Any] | None = None
    metadata: Metadata | None = None
    interrupt_before: list[str] | Literal["*"] | None = None
    interrupt_after: list[str] | Literal["*"] | None = None
    webhook: str | None = None
    stream_mode: StreamMode | list[StreamMode] | None = None
    stream_subgraphs: bool | None = None
    stream_resumable: bool | None = None
    durability: Literal["sync", "async", "exit"] | None = None
    multitask_strategy: Literal["reject", "enqueue", "interrupt", "rollback"] | None = None
    checkpoint_during: bool | None = None
    end_time: datetime | None = None
    enabled: bool | None = None
    timezone: str | None = None
    on_run_completed: Literal["delete", "keep"] | None = None


class CronCreate(CronRunFields):
    assistant_id: str
    schedule: str = Field(min_length=1, max_length=200)


class CronPatch(CronRunFields):
    schedule: str | None = Field(default=None, min_length=1, max_length=200)


class CronSearch(LangGraphBody):
    assistant_id: str | None = Field(default=None, description="An assistant id or a graph's name.")
    thread_id: uuid.UUID | None = None
    enabled: bool | None = None
    metadata: Metadata = Field(default_factory=dict)
    limit: int = Field(default=10, ge=1, le=1000)
    offset: int = Field(default=0, ge=0)
    sort_by: (
        Literal[
            "cron_id", "assistant_id", "thread_id", "next_run_date", "end_time", "created_at", "updated_at"
        ]
        | None
    ) = None
    sort_order: Literal["asc", "desc"] | None = None
    select: list[Literal[CRON_FIELDS]] | None = None  # type: ignore[valid-type]


class CronCount(LangGraphBody):
    assistant_id: str | None = Field(default=None, description="An assistant id or a graph's name.")
    thread_id: uuid.UUID | None = None
    metadata: Metadata = Field(default_factory=dict)


def _assistant_filter(resources: ResourcesDep, tenant: str, ref: str | None) -> uuid.UUID | None:
    """The assistant a cron search filters by: its id, or a graph's name for that graph's own assistant
    (as langgraph-api reads it)."""
    if ref is None:
        return None
    known = graph_ids(resources)
    if ref in known:
        return system_assistant_id(tenant, ref)
    try:
        return uuid.UUID(ref)
    except ValueError:
        raise HTTPException(
            422, detail=f"assistant_id: {ref!r} is neither an assistant id nor a graph name ({known})"
        ) from None


def _run_payload(body: CronRunFields, assistant_id: str) -> dict[str, Any]:
    sent = body.model_dump(mode="json", include=set(RUN_FIELDS), exclude_unset=True)
    return {"assistant_id": assistant_id, **{key: value for key, value in sent.items() if value is not None}}


async def _checked(
    resources: ResourcesDep, tenant: str, payload: dict[str, Any], thread: Thread
) -> uuid.UUID:
    """The assistant of a cron's run request, once the request is known to be one a run accepts now
    (refused with the status and field a run would get)."""
    body = RunCreate.model_validate(payload)
    prepared = await prepare_run(body, thread, tenant, resources)
    return prepared.assistant_id


async def _min_interval(resources: ResourcesDep, tenant: str) -> int:
    """The least gap between two firings this tenant's tier allows."""
    record = await load_tenant(resources.database.pool, tenant)
    return cron_min_interval(record.tier, resources.settings.cron_min_interval_s)


async def _create(
    body: CronCreate, tenant: str, resources: ResourcesDep, thread: Thread | None
) -> dict[str, Any]:
    if thread is not None and body.on_run_completed is not None:
        raise HTTPException(422, detail="on_run_completed: only for a cron without a thread")
    check_schedule(body.schedule, body.timezone, await _min_interval(resources, tenant))
    payload = _run_payload(body, body.assistant_id)
    assistant_id = await _checked(resources, tenant, payload, thread or new_thread_placeholder())
    cron = await store_cron(
        resources,
        tenant,
        assistant_id=assistant_id,
        thread_id=thread.thread_id if thread is not None else None,
        schedule=body.schedule,
        timezone=body.timezone,
        end_time=body.end_time,
        payload=payload,
        metadata=body.metadata or {},
        on_run_completed=None if thread is not None else body.on_run_completed or "delete",
        enabled=True if body.enabled is None else body.enabled,
    )
    return cron.model_dump(mode="json")


@router.post("/threads/{thread_id}/runs/crons")
async def create_thread_cron(
    thread_id: uuid.UUID, body: CronCreate, tenant: TenantDep, resources: ResourcesDep
) -> dict[str, Any]:
    """A cron whose runs all go to this thread."""
    thread = await existing_thread(resources, tenant, thread_id)
    return await _create(body, tenant, resources, thread)


@router.post("/runs/crons")
async def create_cron(body: CronCreate, tenant: TenantDep, resources: ResourcesDep) -> dict[str, Any]:
    """A cron whose every run gets a new thread (deleted after the run unless
    ``on_run_completed="keep"``)."""
    return await _create(body, tenant, resources, None)


@router.post("/runs/crons/search", response_model=list[dict[str, Any]])
@stops_when_client_leaves
async def search(
    body: CronSearch, tenant: TenantDep, resources: ResourcesDep, response: Response
) -> list[dict[str, Any]]:
    found, total = await search_crons(
        resources,
        tenant,
        metadata=body.metadata,
        assistant_id=_assistant_filter(resources, tenant, body.assistant_id),
        thread_id=body.thread_id,
        enabled=body.enabled,
        limit=body.limit,
        offset=body.offset,
        sort_by=body.sort_by,
        sort_order=body.sort_order,
    )
    return page(response, found, body.offset, total, body.select)


@router.post("/runs/crons/count", response_model=int)
@stops_when_client_leaves
async def count(body: CronCount, tenant: TenantDep, resources: ResourcesDep) -> int:
    return await count_crons(
        resources,
        tenant,
        metadata=body.metadata,
        assistant_id=_assistant_filter(resources, tenant, body.assistant_id),
        thread_id=body.thread_id,
    )


async def _existing(resources: ResourcesDep, tenant: str, cron_id: uuid.UUID) -> Cron:
    cron = await get_cron(resources, tenant, cron_id)
    if cron is None:
        raise HTTPException(404, detail=f"Cron '{cron_id}' not found")
    return cron


@router.get("/runs/crons/{cron_id}")
@stops_when_client_leaves
async def get(cron_id: uuid.UUID, tenant: TenantDep, resources: ResourcesDep) -> dict[str, Any]:
    return (await _existing(resources, tenant, cron_id)).model_dump(mode="json")


@router.patch("/runs/crons/{cron_id}")
async def patch(
    cron_id: uuid.UUID, body: CronPatch, tenant: TenantDep, resources: ResourcesDep
) -> dict[str, Any]:
    """Change a cron: its timing (the next instant is counted again from now), whether it is enabled,
    and the run request (merged over the one it has: the assistant stays)."""
    sent = body.model_fields_set
    if not sent:
        raise HTTPException(400, detail="body: send at least one field to change")
    cron = await _existing(resources, tenant, cron_id)
    if "on_run_completed" in sent and cron.thread_id is not None:
        raise HTTPException(422, detail="on_run_completed: only for a cron without a thread")
    for field in ("schedule", "enabled"):
        if field in sent and getattr(body, field) is None:
            raise HTTPException(422, detail=f"{field}: may not be null")
    if body.schedule is not None:
        # Only a schedule sent now: an older cron firing more often can still be disabled or retimed.
        timezone = body.timezone if "timezone" in sent else cron.timezone
        check_schedule(body.schedule, timezone, await _min_interval(resources, tenant))
    changes = _run_payload(body, str(cron.assistant_id))
    payload = {**cron.payload, **changes, "assistant_id": cron.payload["assistant_id"]}
    if changes.keys() - {"assistant_id"}:
        thread = (
            await existing_thread(resources, tenant, cron.thread_id)
            if cron.thread_id is not None
            else new_thread_placeholder()
        )
        await _checked(resources, tenant, payload, thread)
    updated = cron.model_copy(
        update={
            "payload": payload,
            # Merged, as langgraph-api merges a cron's metadata.
            "metadata": {**cron.metadata, **(body.metadata or {})},
            **{
                field: getattr(body, field)
                for field in ("schedule", "enabled", "on_run_completed", "timezone", "end_time")
                if field in sent
            },
        }
    )
    reschedule = bool(sent & {"schedule", "timezone", "end_time", "enabled"})
    stored = await update_cron(resources, tenant, updated, reschedule)
    if stored is None:
        raise HTTPException(404, detail=f"Cron '{cron_id}' not found")
    return stored.model_dump(mode="json")


@router.delete("/runs/crons/{cron_id}", status_code=204)
async def delete(cron_id: uuid.UUID, tenant: TenantDep, resources: ResourcesDep) -> Response:
    if not await delete_cron(resources, tenant, cron_id):
        raise HTTPException(404, detail=f"Cron '{cron_id}' not found")
    return Response(status_code=204)
