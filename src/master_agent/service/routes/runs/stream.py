"""Streaming runs: a run created and streamed, on a thread or a thread made for it, and joining the stream of
a run."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Annotated, Any

from fastapi import APIRouter, Header, Query, Request
from sse_starlette import EventSourceResponse

from master_agent.service.deps import QueueDep, ResourcesDep, RunTenantDep, TenantDep
from master_agent.service.limits import StrictJsonRoute
from master_agent.service.routes.runs.create import prepare_run, run_on_thread
from master_agent.service.routes.runs.events import StreamedRun, stream_modes_asked, stream_response
from master_agent.service.routes.runs.request import RunCreate, thread_run
from master_agent.service.threads import Thread, create_thread

router = APIRouter(tags=["runs"], route_class=StrictJsonRoute)


@router.post("/threads/{thread_id}/runs/stream")
async def stream_run(
    thread_id: uuid.UUID,
    body: RunCreate,
    request: Request,
    tenant: RunTenantDep,
    resources: ResourcesDep,
    queue: QueueDep,
) -> EventSourceResponse:
    _, run = await run_on_thread(thread_id, body, tenant, resources, queue, execute_here=True)
    return stream_response(queue, run, request, None, body.on_disconnect == "cancel")


@router.post("/runs/stream")
async def stream_stateless_run(
    body: RunCreate, request: Request, tenant: RunTenantDep, resources: ResourcesDep, queue: QueueDep
) -> EventSourceResponse:
    return await stream_on_new_thread(
        body, {"stateless": True}, request, tenant, resources, queue, body.on_disconnect == "cancel"
    )


async def stream_on_new_thread(
    body: RunCreate,
    metadata: dict[str, Any],
    request: Request,
    tenant: str,
    resources: ResourcesDep,
    queue: QueueDep,
    cancel_on_disconnect: bool,
) -> EventSourceResponse:
    """A run on a thread created for it. Nothing can hold such a run back once its request is valid,
    so the stream opens (its first event out) while the thread and the run are being stored; the
    storing goes on if the client leaves."""
    now = datetime.now(UTC)
    thread = Thread(
        thread_id=uuid.uuid4(), created_at=now, updated_at=now, metadata=metadata, status="idle", config={}
    )
    prepared = await prepare_run(body, thread, tenant, resources)
    run_id = str(uuid.uuid4())

    async def store() -> None:
        await create_thread(resources.database.pool, tenant, metadata, thread.thread_id)
        await prepared.enqueue(queue, tenant, str(thread.thread_id), execute_here=True, run_id=run_id)

    stored = queue.spawn(store())
    return stream_response(
        queue, StreamedRun(run_id, str(thread.thread_id), stored=stored), request, None, cancel_on_disconnect
    )


@router.get("/threads/{thread_id}/runs/{run_id}/stream")
async def join_stream(
    thread_id: uuid.UUID,
    run_id: uuid.UUID,
    request: Request,
    tenant: TenantDep,
    resources: ResourcesDep,
    queue: QueueDep,
    cancel_on_disconnect: bool = False,
    stream_mode: Annotated[list[str] | None, Query()] = None,
    last_event_id: Annotated[str | None, Header(alias="Last-Event-ID")] = None,
) -> EventSourceResponse:
    """The run's events (after ``Last-Event-ID``), only those of ``stream_mode`` when given."""
    _, run = await thread_run(thread_id, run_id, tenant, resources, queue)
    modes = stream_modes_asked(stream_mode)
    return stream_response(queue, run, request, last_event_id, cancel_on_disconnect, modes)
