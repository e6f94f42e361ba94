"""Waiting for runs: a wait that answers the output once the run has finished (a newline now and then until
then), joining a run, reading and listing a thread's runs."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator, Callable, Coroutine
from functools import partial
from typing import Annotated, Any, Literal

from fastapi import APIRouter, HTTPException, Query, Response
from fastapi.responses import JSONResponse, StreamingResponse

from master_agent.runtime.runs import Run
from master_agent.service.client_gone import stops_when_client_leaves
from master_agent.service.deps import QueueDep, ResourcesDep, RunTenantDep, TenantDep
from master_agent.service.graph_state import run_json, run_output
from master_agent.service.limits import StrictJsonRoute
from master_agent.service.routes.runs.create import enqueue_run, run_on_thread
from master_agent.service.routes.runs.events import StreamedRun, cancel_when_stored
from master_agent.service.routes.runs.request import (
    KEEPALIVE_S,
    WAIT_LIMIT_S,
    RunCreate,
    RunField,
    location,
    thread_run,
)
from master_agent.service.routes.threads import existing_thread
from master_agent.service.threads import Thread, create_thread, delete_thread

router = APIRouter(tags=["runs"], route_class=StrictJsonRoute)


async def _output(queue: QueueDep, resources: ResourcesDep, tenant: str, thread: Thread, run: Run) -> Any:
    """What ``runs.wait`` answers, once the run has finished: from memory when it ran here."""
    try:
        output = await queue.local_output(str(run.run_id), WAIT_LIMIT_S)
    except TimeoutError:
        raise HTTPException(408, detail=f"Run {run.run_id} is still running; join it again") from None
    if output is not None:
        return output
    return await run_output(resources, tenant, thread, await _finished(queue, run))


async def _finished(queue: QueueDep, run: Run) -> Run:
    finished = await queue.wait(str(run.run_id), within_s=WAIT_LIMIT_S)
    if finished is None:
        raise HTTPException(404, detail=f"Run {run.run_id} not found")
    if finished.status in ("pending", "running"):
        raise HTTPException(408, detail=f"Run {run.run_id} is still {finished.status}; join it again")
    return finished


@router.post("/threads/{thread_id}/runs/wait")
async def wait_run(
    thread_id: uuid.UUID, body: RunCreate, tenant: RunTenantDep, resources: ResourcesDep, queue: QueueDep
) -> StreamingResponse:
    thread, run = await run_on_thread(thread_id, body, tenant, resources, queue, execute_here=True)
    return _waited(run, _output(queue, resources, tenant, thread, run), headers=location(run, "/join"))


@router.post("/runs/wait")
async def wait_stateless_run(
    body: RunCreate, tenant: RunTenantDep, resources: ResourcesDep, queue: QueueDep
) -> StreamingResponse:
    run, output = await start_stateless_wait(body, tenant, resources, queue)
    return _waited(run, output, headers=location(run))


async def start_stateless_wait(
    body: RunCreate, tenant: str, resources: ResourcesDep, queue: QueueDep
) -> tuple[Run, Coroutine[Any, Any, Any]]:
    """A run on a thread of its own, stored (refused as a run is); and its output to await, after
    which the thread is deleted (unless ``on_completion="keep"``): in the background, as LangGraph's
    server does it, so the caller has the output without waiting for the deletion (one transaction of
    several statements: it made stateless waits slower than waits on a thread, issue 46)."""
    thread = await create_thread(resources.database.pool, tenant, {"stateless": True})
    assert thread is not None
    try:
        run = await enqueue_run(body, thread, tenant, resources, queue, execute_here=True)
    except BaseException:
        await delete_thread(resources.database.pool, tenant, thread.thread_id)
        raise

    async def output_then_forget() -> Any:
        try:
            return await _output(queue, resources, tenant, thread, run)
        finally:
            if body.on_completion != "keep":
                queue.spawn(delete_thread(resources.database.pool, tenant, thread.thread_id))

    return run, output_then_forget()


def _waited(
    run: Run,
    output: Coroutine[Any, Any, Any],
    headers: dict[str, str],
    on_leave: Callable[[], object] | None = None,
) -> StreamingResponse:
    """The answer of a wait: a newline every ``KEEPALIVE_S`` while the run goes on (so proxies and
    clients do not drop a quiet connection; JSON allows leading whitespace), then the output. A failure
    after the first byte is the body: ``{"error", "message"}``. ``on_leave``: called when the client
    leaves before the output."""

    async def body() -> AsyncIterator[bytes]:
        # A task of its own: a client that leaves stops the waiting, not what comes after it (a
        # stateless run's thread is still deleted).
        task = asyncio.ensure_future(output)
        task.add_done_callback(lambda done: done.cancelled() or done.exception())
        try:
            while not task.done():
                done, _ = await asyncio.wait({task}, timeout=KEEPALIVE_S)
                if not done:
                    yield b"\n"
        finally:
            if on_leave is not None and not task.done():
                on_leave()
        try:
            value = task.result()
        except HTTPException as error:
            value = {"error": f"HTTP {error.status_code}", "message": error.detail}
        yield json.dumps(value, default=str).encode()

    return StreamingResponse(body(), media_type="application/json", headers=headers)


@router.get("/threads/{thread_id}/runs/{run_id}/join")
async def join_run(
    thread_id: uuid.UUID,
    run_id: uuid.UUID,
    tenant: TenantDep,
    resources: ResourcesDep,
    queue: QueueDep,
    cancel_on_disconnect: bool = False,
) -> Response:
    """The run's output once it has finished; ``cancel_on_disconnect``: a client that leaves before
    cancels the run."""
    thread, run = await thread_run(thread_id, run_id, tenant, resources, queue)
    if cancel_on_disconnect:
        output = _output(queue, resources, tenant, thread, run)
        cancel = partial(queue.spawn, cancel_when_stored(queue, StreamedRun.of(run)))
        return _waited(run, output, headers=location(run), on_leave=cancel)
    return JSONResponse(await _output(queue, resources, tenant, thread, run), headers=location(run))


@router.get("/threads/{thread_id}/runs/{run_id}")
@stops_when_client_leaves
async def get_run(
    thread_id: uuid.UUID, run_id: uuid.UUID, tenant: TenantDep, resources: ResourcesDep, queue: QueueDep
) -> dict[str, Any]:
    _, run = await thread_run(thread_id, run_id, tenant, resources, queue)
    return run_json(run)


@router.get("/threads/{thread_id}/runs")
@stops_when_client_leaves
async def list_runs(
    thread_id: uuid.UUID,
    tenant: TenantDep,
    resources: ResourcesDep,
    queue: QueueDep,
    response: Response,
    limit: int = Query(default=10, ge=1, le=1000),
    offset: int = Query(default=0, ge=0),
    status: Literal["pending", "running", "success", "error", "interrupted"] | None = None,
    select: Annotated[list[RunField] | None, Query()] = None,
) -> list[dict[str, Any]]:
    """The thread's runs, newest first; ``select`` keeps only those fields."""
    await existing_thread(resources, tenant, thread_id)
    runs = await queue.list_for_thread(str(thread_id), limit=limit, offset=offset, status=status)
    found = [run_json(run) for run in runs]
    return [{key: run[key] for key in select if key in run} for run in found] if select else found
