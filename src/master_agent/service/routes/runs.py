"""LangGraph-compatible runs: create (background), wait, join, get, list; stateless wait."""

from __future__ import annotations

import json
import uuid
from typing import Any, Literal

from fastapi import APIRouter, HTTPException, Query, Response
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field

from master_agent.runtime.runs import Run
from master_agent.service.assistants import resolve_assistant
from master_agent.service.deps import QueueDep, ResourcesDep, TenantDep
from master_agent.service.graph_state import run_json, run_output, shape_of
from master_agent.service.routes.threads import existing_thread
from master_agent.service.threads import Thread, create_thread, delete_thread

router = APIRouter(tags=["runs"])

StreamMode = Literal[
    "values", "updates", "messages", "messages-tuple", "custom", "debug", "events", "tasks", "checkpoints"
]
#: Longest a wait or join holds the request open.
WAIT_LIMIT_S = 600.0


class RunCreate(BaseModel):
    """The run request the langgraph-sdk client sends (fields it may send; others are refused)."""

    model_config = ConfigDict(extra="forbid")

    assistant_id: str
    input: dict[str, Any] | None = None
    command: dict[str, Any] | None = None
    config: dict[str, Any] | None = None
    context: dict[str, Any] | None = None
    metadata: dict[str, Any] | None = None
    stream_mode: StreamMode | list[StreamMode] = "values"
    stream_subgraphs: bool = False
    stream_resumable: bool = False
    multitask_strategy: Literal["reject", "enqueue", "interrupt", "rollback"] | None = None
    if_not_exists: Literal["create", "reject"] | None = None
    on_disconnect: Literal["cancel", "continue"] | None = None
    on_completion: Literal["delete", "keep"] | None = None
    after_seconds: int | None = Field(default=None, ge=0)
    checkpoint: dict[str, Any] | None = None
    checkpoint_id: str | None = None
    checkpoint_during: bool | None = None
    durability: Literal["sync", "async", "exit"] | None = None
    interrupt_before: list[str] | Literal["*"] | None = None
    interrupt_after: list[str] | Literal["*"] | None = None
    webhook: str | None = None
    feedback_keys: list[str] | None = None
    langsmith_tracer: dict[str, Any] | None = None
    strict_resume: bool | None = None


def _location(run: Run, suffix: str = "") -> dict[str, str]:
    return {"Content-Location": f"/threads/{run.thread_id}/runs/{run.run_id}{suffix}"}


async def _enqueue(
    body: RunCreate, thread: Thread, tenant: str, resources: ResourcesDep, queue: QueueDep
) -> Run:
    if body.input is None and body.command is None:
        raise HTTPException(422, detail="input: a run needs an input or a command")
    assistant = await resolve_assistant(resources.database.pool, tenant, body.assistant_id)
    if assistant is None:
        raise HTTPException(404, detail=f"Assistant {body.assistant_id} not found")
    config = dict(body.config or {})
    configurable = {**(assistant.config.get("configurable") or {}), **(config.get("configurable") or {})}
    configurable.pop("tenant_id", None)  # the tenant comes from the API key only
    config["configurable"] = configurable
    kwargs = {
        "input": body.input,
        "command": body.command,
        "config": config,
        "stream_mode": body.stream_mode,
        "stream_subgraphs": body.stream_subgraphs,
    }
    metadata = {
        **(body.metadata or {}),
        "graph_id": assistant.graph_id,
        "assistant_id": str(assistant.assistant_id),
    }
    async with resources.database.pool.connection() as conn:
        await conn.execute(
            "UPDATE threads SET config = %s WHERE thread_id = %s",
            (json.dumps(shape_of(config) if configurable else thread.config or {}), thread.thread_id),
        )
    return await queue.enqueue_graph_run(
        tenant_id=tenant,
        thread_id=str(thread.thread_id),
        assistant_id=assistant.assistant_id,
        kwargs=kwargs,
        metadata=metadata,
        multitask_strategy=body.multitask_strategy or "enqueue",
    )


async def _finished(queue: QueueDep, run: Run) -> Run:
    finished = await queue.wait(str(run.run_id), within_s=WAIT_LIMIT_S)
    if finished is None:
        raise HTTPException(404, detail=f"Run {run.run_id} not found")
    if finished.status in ("pending", "running"):
        raise HTTPException(408, detail=f"Run {run.run_id} is still {finished.status}; join it again")
    return finished


@router.post("/threads/{thread_id}/runs")
async def create_run(
    thread_id: uuid.UUID, body: RunCreate, tenant: TenantDep, resources: ResourcesDep, queue: QueueDep
) -> JSONResponse:
    thread = await existing_thread(resources, tenant, thread_id)
    run = await _enqueue(body, thread, tenant, resources, queue)
    return JSONResponse(run_json(run), headers=_location(run))


@router.post("/threads/{thread_id}/runs/wait")
async def wait_run(
    thread_id: uuid.UUID, body: RunCreate, tenant: TenantDep, resources: ResourcesDep, queue: QueueDep
) -> JSONResponse:
    thread = await existing_thread(resources, tenant, thread_id)
    run = await _finished(queue, await _enqueue(body, thread, tenant, resources, queue))
    return JSONResponse(await run_output(resources, tenant, thread, run), headers=_location(run))


@router.post("/runs/wait")
async def wait_stateless_run(
    body: RunCreate, tenant: TenantDep, resources: ResourcesDep, queue: QueueDep
) -> JSONResponse:
    thread = await create_thread(resources.database.pool, tenant, {"stateless": True})
    assert thread is not None
    try:
        run = await _finished(queue, await _enqueue(body, thread, tenant, resources, queue))
        output = await run_output(resources, tenant, thread, run)
    finally:
        if body.on_completion != "keep":
            await delete_thread(resources.database.pool, tenant, thread.thread_id)
    return JSONResponse(output, headers=_location(run))


async def _thread_run(
    thread_id: uuid.UUID, run_id: uuid.UUID, tenant: str, resources: ResourcesDep, queue: QueueDep
) -> tuple[Thread, Run]:
    thread = await existing_thread(resources, tenant, thread_id)
    run = await queue.get(str(run_id))
    if run is None or run.thread_id != str(thread_id) or run.tenant_id != tenant:
        raise HTTPException(404, detail=f"Run {run_id} not found")
    return thread, run


@router.get("/threads/{thread_id}/runs/{run_id}/join")
async def join_run(
    thread_id: uuid.UUID, run_id: uuid.UUID, tenant: TenantDep, resources: ResourcesDep, queue: QueueDep
) -> JSONResponse:
    thread, run = await _thread_run(thread_id, run_id, tenant, resources, queue)
    run = await _finished(queue, run)
    return JSONResponse(await run_output(resources, tenant, thread, run), headers=_location(run))


@router.get("/threads/{thread_id}/runs/{run_id}")
async def get_run(
    thread_id: uuid.UUID, run_id: uuid.UUID, tenant: TenantDep, resources: ResourcesDep, queue: QueueDep
) -> dict[str, Any]:
    _, run = await _thread_run(thread_id, run_id, tenant, resources, queue)
    return run_json(run)


@router.get("/threads/{thread_id}/runs")
async def list_runs(
    thread_id: uuid.UUID,
    tenant: TenantDep,
    resources: ResourcesDep,
    queue: QueueDep,
    response: Response,
    limit: int = Query(default=10, ge=1, le=1000),
    offset: int = Query(default=0, ge=0),
    status: Literal["pending", "running", "success", "error", "interrupted"] | None = None,
) -> list[dict[str, Any]]:
    await existing_thread(resources, tenant, thread_id)
    runs = await queue.list_for_thread(str(thread_id), limit=limit, offset=offset, status=status)
    return [run_json(run) for run in runs]
