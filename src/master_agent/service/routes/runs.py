"""LangGraph-compatible runs: create (background), wait, join, get, list; stateless wait."""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import uuid
from collections.abc import AsyncIterator, Callable, Coroutine
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial
from typing import Annotated, Any, Literal, cast, get_args

from fastapi import APIRouter, Body, Depends, Header, HTTPException, Query, Request, Response
from fastapi.responses import JSONResponse, StreamingResponse
from prometheus_client import Gauge
from pydantic import Field, model_validator
from sse_starlette import EventSourceResponse

from master_agent.capabilities.assistants import AGENT_SPEC_KEY, resolve_assistant
from master_agent.errors import InputError
from master_agent.evolution.webhooks import WebhookRefused, check_webhook_url
from master_agent.runtime.graph_runs import shape_of
from master_agent.runtime.graphs import GraphRegistration, graph_ids, graph_registration
from master_agent.runtime.run_events import STORED_ELSEWHERE, RunEvent
from master_agent.runtime.runs import Run, RunQueue
from master_agent.service.deps import QueueDep, ResourcesDep, RunTenantDep, TenantDep, run_starting_tenant
from master_agent.service.graph_state import run_json, run_output, snapshot_json, thread_snapshot
from master_agent.service.limits import LangGraphBody, Metadata, StrictJsonRoute
from master_agent.service.routes.threads import check_checkpoint, existing_thread
from master_agent.service.threads import Thread, create_thread, delete_thread, get_thread
from master_agent.storage.outages import OutageTooLong, through_outages

router = APIRouter(tags=["runs"], route_class=StrictJsonRoute)

RunField = Literal[
    "run_id",
    "thread_id",
    "assistant_id",
    "created_at",
    "updated_at",
    "status",
    "metadata",
    "kwargs",
    "multitask_strategy",
]
StreamMode = Literal[
    "values", "updates", "messages", "messages-tuple", "custom", "debug", "tasks", "checkpoints", "events"
]
#: Longest a wait or join holds the request open.
WAIT_LIMIT_S = 600.0


class RunCreate(LangGraphBody):
    """The run request the langgraph-sdk client sends (fields it may send; others are refused)."""

    assistant_id: str
    input: dict[str, Any] | list[Any] | str | int | float | bool | None = None
    command: dict[str, Any] | None = None
    config: dict[str, Any] | None = None
    context: dict[str, Any] | None = None
    metadata: Metadata | None = None
    stream_mode: StreamMode | list[StreamMode] = "values"
    stream_subgraphs: bool = False
    stream_resumable: bool = False
    multitask_strategy: Literal["reject", "enqueue", "interrupt", "rollback"] | None = None
    if_not_exists: Literal["create", "reject"] | None = None
    on_disconnect: Literal["cancel", "continue"] | None = None
    on_completion: Literal["delete", "keep"] | None = None
    after_seconds: int | None = Field(default=None, ge=0, le=365 * 24 * 3600)
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


async def check_run_request(
    body: RunCreate, thread: Thread, resources: ResourcesDep, graph: GraphRegistration, tenant_id: str
) -> None:
    """Refuse, before anything is stored, what the graph would fail on: the generic checks here, the
    graph's own input and command checks from its registration."""
    # Refused rather than run without them (a caller relying on them would never learn).
    if body.webhook is not None:
        try:
            check_webhook_url(body.webhook, resources.settings.webhook_allowed_networks)
        except WebhookRefused as refused:
            raise HTTPException(422, detail=f"webhook: {refused}") from None
    if body.checkpoint:
        wanted = {key: body.checkpoint.get(key) for key in ("checkpoint_id", "checkpoint_ns")}
        await check_checkpoint(resources, thread.thread_id, wanted, "checkpoint.")
    if body.checkpoint_id:
        namespace = (body.checkpoint or {}).get("checkpoint_ns")
        wanted = {"checkpoint_id": body.checkpoint_id, "checkpoint_ns": namespace}
        await check_checkpoint(resources, thread.thread_id, wanted)
    if body.input is not None and body.command is not None:
        raise HTTPException(422, detail="input: a run takes input or a command, not both")
    if body.input is None and body.command is None:
        # No input: go on from where the thread stopped (a breakpoint, an interrupt).
        if thread.status != "interrupted":
            raise HTTPException(422, detail="input: required unless the thread is stopped at a breakpoint")
        return
    try:
        if body.command is not None:
            unknown = sorted(set(body.command) - {"resume", "update"})
            if unknown:
                raise HTTPException(
                    422, detail=f"command: unsupported keys {unknown}; use resume and/or update"
                )
            if "resume" in body.command and thread.status != "interrupted":
                raise HTTPException(409, detail="command.resume: the thread is not waiting for a decision")
            if graph.check_command is not None:
                graph.check_command(body.command)
        elif graph.check_input is not None:
            await graph.check_input(resources, tenant_id, str(thread.thread_id), body.input)
    except InputError as error:
        raise HTTPException(422, detail=str(error)) from None


async def check_run_config(
    resources: ResourcesDep, tenant: str, config: dict[str, Any], graph: GraphRegistration
) -> None:
    """Refuse a config the run could not start with (422 naming the field), before it is stored or
    kept on the thread: the graph's own check, else ``recursion_limit`` a positive integer."""
    if graph.check_config is None:
        limit = config.get("recursion_limit")
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
            raise HTTPException(422, detail="config.recursion_limit: a positive integer")
        return
    try:
        await graph.check_config(resources, tenant, config)
    except InputError as error:
        raise HTTPException(422, detail=str(error)) from None


def _location(run: Run, then: str = "") -> dict[str, str]:
    """``Content-Location``: the run; ``Location``: where its result is read again (``then``: ``/join``)."""
    path = f"/threads/{run.thread_id}/runs/{run.run_id}"
    return {"Content-Location": path, **({"Location": path + then} if then else {})}


@dataclass(frozen=True)
class PreparedRun:
    """A run request checked and resolved against its assistant, ready to be stored."""

    assistant_id: uuid.UUID
    kwargs: dict[str, Any]
    metadata: dict[str, Any]
    multitask_strategy: str
    thread_config: dict[str, Any]
    after_seconds: int = 0

    async def enqueue(
        self, queue: RunQueue, tenant: str, thread_id: str, *, execute_here: bool, run_id: str | None = None
    ) -> Run:
        return await queue.enqueue_graph_run(
            tenant_id=tenant,
            thread_id=thread_id,
            assistant_id=self.assistant_id,
            kwargs=self.kwargs,
            metadata=self.metadata,
            multitask_strategy=self.multitask_strategy,
            thread_config=self.thread_config,
            execute_here=execute_here,
            run_id=run_id,
            after_seconds=self.after_seconds,
        )


async def enqueue_run(
    body: RunCreate,
    thread: Thread,
    tenant: str,
    resources: ResourcesDep,
    queue: QueueDep,
    *,
    execute_here: bool = False,
) -> Run:
    """Store the run (refusing what it could not run); with ``execute_here`` this process executes it
    at once when nothing holds it back (the caller waits for it or streams it)."""
    prepared = await prepare_run(body, thread, tenant, resources)
    return await prepared.enqueue(queue, tenant, str(thread.thread_id), execute_here=execute_here)


async def prepare_run(
    body: RunCreate, thread: Thread, tenant: str, resources: ResourcesDep, *, protocol: str | None = None
) -> PreparedRun:
    """The run request checked and resolved; ``protocol``: the run streams for the thread protocol
    (``threads.stream``) instead of its ``stream_mode``."""
    assistant = await resolve_assistant(
        resources.database.pool, tenant, body.assistant_id, graph_ids(resources)
    )
    if assistant is None:
        raise HTTPException(404, detail=f"Assistant {body.assistant_id} not found")
    graph = graph_registration(resources, assistant.graph_id)
    await check_run_request(body, thread, resources, graph, tenant)
    config = dict(body.config or {})
    if not isinstance(config.get("configurable") or {}, dict):
        raise HTTPException(422, detail="config.configurable: send one object")
    configurable = {**(assistant.config.get("configurable") or {}), **(config.get("configurable") or {})}
    configurable.pop("tenant_id", None)  # the tenant comes from the API key only
    if configurable.pop("client_id", tenant) != tenant:
        raise HTTPException(
            403, detail="config.configurable.client_id: differs from the tenant of the API key"
        )
    configurable.pop(AGENT_SPEC_KEY, None)
    graph_input = body.input
    if assistant.agent_spec() is not None:
        # A tenant agent's run is pinned to the version live now (or the one it asks for), and every
        # later run of the thread keeps the version its first run had.
        kept = thread.config.get("configurable") or {}
        configurable["agent_id"] = str(assistant.assistant_id)
        configurable["agent_version"] = (
            kept.get("agent_version")
            if kept.get("agent_id") == str(assistant.assistant_id)
            else configurable.get("agent_version") or assistant.version
        )
        if "complexity" not in configurable and kept.get("complexity"):
            configurable["complexity"] = kept["complexity"]  # a resume needs the graph it stopped in
        graph_input = _agent_input(body.input)
    elif graph.pin_configurable is not None:
        # Fixed per thread: later runs (a resume, a follow-up) build the same graph as the first one.
        configurable = graph.pin_configurable(configurable, thread.config, body.input)
    config["configurable"] = configurable
    await check_run_config(resources, tenant, config, graph)
    kwargs = {
        "input": graph_input,
        "command": body.command,
        "config": config,
        "stream_mode": body.stream_mode,
        "stream_subgraphs": body.stream_subgraphs,
        "stream_protocol": protocol,
        "graph_id": assistant.graph_id,
        "durability": body.durability,
        "checkpoint": _start_checkpoint(body),
        "interrupt_before": body.interrupt_before,
        "interrupt_after": body.interrupt_after,
        "webhook": body.webhook,
        "context": {
            **{key: value for key, value in assistant.context.items() if key != AGENT_SPEC_KEY},
            **(body.context or {}),
        },
    }
    metadata = {
        **(body.metadata or {}),
        "graph_id": assistant.graph_id,
        "assistant_id": str(assistant.assistant_id),
    }
    return PreparedRun(
        assistant_id=assistant.assistant_id,
        kwargs=kwargs,
        metadata=metadata,
        multitask_strategy=body.multitask_strategy or "enqueue",
        thread_config=shape_of(config, assistant.graph_id),
        after_seconds=body.after_seconds or 0,
    )


def _start_checkpoint(body: RunCreate) -> dict[str, str] | None:
    """The checkpoint a run starts from (time travel: a fork of the thread's past), None: the latest."""
    wanted = {
        key: str(value)
        for key, value in (body.checkpoint or {}).items()
        if key in ("checkpoint_id", "checkpoint_ns") and value
    }
    if body.checkpoint_id:
        wanted["checkpoint_id"] = body.checkpoint_id
    return wanted or None


def _agent_input(graph_input: Any) -> Any:
    """A tenant agent's loop takes a goal: a chat message's text becomes it."""
    if not isinstance(graph_input, dict) or graph_input.get("goal") or not graph_input.get("messages"):
        return graph_input
    last = graph_input["messages"][-1]
    text = last.get("content") if isinstance(last, dict) else last
    if not isinstance(text, str) or not text.strip():
        raise HTTPException(422, detail="input.messages: the last message has no text to give the agent")
    return {**{key: value for key, value in graph_input.items() if key != "messages"}, "goal": text}


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


async def run_on_thread(
    thread_id: uuid.UUID,
    body: RunCreate,
    tenant: str,
    resources: ResourcesDep,
    queue: QueueDep,
    *,
    execute_here: bool = False,
    protocol: str | None = None,
) -> tuple[Thread, Run]:
    """Store a run of the thread; with ``if_not_exists="create"`` a thread that does not exist yet is
    made for it (once the run request is known to be valid)."""
    thread = await get_thread(resources.database.pool, tenant, thread_id)
    if thread is not None:
        prepared = await prepare_run(body, thread, tenant, resources, protocol=protocol)
        return thread, await prepared.enqueue(queue, tenant, str(thread_id), execute_here=execute_here)
    if body.if_not_exists != "create":
        raise HTTPException(404, detail=f"Thread with ID {thread_id} not found")
    prepared = await prepare_run(
        body, new_thread_placeholder(thread_id), tenant, resources, protocol=protocol
    )
    created = await create_thread(resources.database.pool, tenant, {}, thread_id)
    if created is None:
        raise HTTPException(
            409, detail=f"thread_id: {thread_id} is taken or was used before; use a new thread_id"
        )
    run = await prepared.enqueue(queue, tenant, str(thread_id), execute_here=execute_here)
    return created, run


@router.post("/threads/{thread_id}/runs")
async def create_run(
    thread_id: uuid.UUID, body: RunCreate, tenant: RunTenantDep, resources: ResourcesDep, queue: QueueDep
) -> JSONResponse:
    _, run = await run_on_thread(thread_id, body, tenant, resources, queue)
    return JSONResponse(run_json(run), headers=_location(run))


@router.post("/threads/{thread_id}/runs/wait")
async def wait_run(
    thread_id: uuid.UUID, body: RunCreate, tenant: RunTenantDep, resources: ResourcesDep, queue: QueueDep
) -> StreamingResponse:
    thread, run = await run_on_thread(thread_id, body, tenant, resources, queue, execute_here=True)
    return _waited(run, _output(queue, resources, tenant, thread, run), headers=_location(run, "/join"))


@router.post("/runs")
async def create_stateless_run(
    body: RunCreate, tenant: RunTenantDep, resources: ResourcesDep, queue: QueueDep
) -> JSONResponse:
    """A background run on a thread of its own, deleted when the run ends (unless
    ``on_completion="keep"``)."""
    run = await start_stateless_run(body, tenant, resources, queue)
    return JSONResponse(run_json(run), headers=_location(run))


def _batch_size(body: Any) -> int:
    """Runs a batch request starts (each counted; a body that is no list fails validation anyway)."""
    return len(body) if isinstance(body, list) else 1


BatchTenantDep = Annotated[str, Depends(run_starting_tenant(_batch_size))]


@router.post("/runs/batch")
async def create_stateless_runs(
    body: Annotated[list[RunCreate], Body(max_length=100)],
    tenant: BatchTenantDep,
    resources: ResourcesDep,
    queue: QueueDep,
) -> list[dict[str, Any]]:
    """Several stateless background runs; all are checked before any is stored."""
    for index, item in enumerate(body):
        try:
            await prepare_run(item, new_thread_placeholder(), tenant, resources)
        except HTTPException as error:
            raise HTTPException(error.status_code, detail=f"[{index}].{error.detail}") from None
    return [run_json(await start_stateless_run(item, tenant, resources, queue)) for item in body]


def new_thread_placeholder(thread_id: uuid.UUID | None = None) -> Thread:
    """A thread not stored yet, to check a run request that will get a new thread."""
    now = datetime.now(UTC)
    return Thread(
        thread_id=thread_id or uuid.uuid4(),
        created_at=now,
        updated_at=now,
        metadata={},
        status="idle",
        config={},
    )


async def start_stateless_run(body: RunCreate, tenant: str, resources: ResourcesDep, queue: QueueDep) -> Run:
    """A background run on a new thread, deleted when the run ends unless ``on_completion="keep"``."""
    thread = await create_thread(resources.database.pool, tenant, {"stateless": True})
    assert thread is not None
    prepared = await prepare_run(body, thread, tenant, resources)
    prepared.kwargs["on_completion"] = body.on_completion or "delete"
    return await prepared.enqueue(queue, tenant, str(thread.thread_id), execute_here=False)


class RunsCancel(LangGraphBody):
    thread_id: uuid.UUID | None = None
    run_ids: list[uuid.UUID] | None = Field(default=None, max_length=1000)
    status: Literal["pending", "running", "all"] | None = None

    @model_validator(mode="after")
    def _one_selection(self) -> RunsCancel:
        if self.status is not None and (self.thread_id or self.run_ids):
            raise ValueError("status: cancels every run with that status; omit thread_id and run_ids")
        if self.status is None and self.thread_id is None and not self.run_ids:
            raise ValueError("thread_id: name a thread, run_ids, or a status")
        return self


@router.post("/runs/cancel", status_code=204, response_class=Response)
async def cancel_runs(
    body: RunsCancel,
    tenant: TenantDep,
    resources: ResourcesDep,
    queue: QueueDep,
    action: Literal["interrupt", "rollback"] = "interrupt",
) -> Response:
    """Cancel the tenant's active runs: of a thread, by id, or all pending / running ones."""
    await cancel_active_runs(
        queue,
        tenant,
        statuses=["pending", "running"] if body.status in (None, "all") else [body.status],
        thread_id=body.thread_id,
        run_ids=body.run_ids,
        action=action,
    )
    return Response(status_code=204)


ACTIVE_RUNS = """
SELECT run_id FROM runs
WHERE tenant_id = %(tenant)s AND kind = 'graph' AND status = ANY(%(statuses)s)
  AND (%(thread)s::text IS NULL OR thread_id = %(thread)s)
  AND (%(runs)s::uuid[] IS NULL OR run_id = ANY(%(runs)s::uuid[]))
  AND (%(assistant)s::uuid IS NULL OR assistant_id = %(assistant)s::uuid)
"""


async def cancel_active_runs(
    queue: RunQueue,
    tenant: str,
    *,
    statuses: list[str] | None = None,
    thread_id: uuid.UUID | None = None,
    run_ids: list[uuid.UUID] | None = None,
    assistant_id: uuid.UUID | None = None,
    action: Literal["interrupt", "rollback"] = "interrupt",
) -> None:
    """Cancel the tenant's runs with ``statuses`` (default: the active ones) of a thread, by id, or of
    an assistant."""
    params = {
        "tenant": tenant,
        "statuses": statuses or ["pending", "running"],
        "thread": str(thread_id) if thread_id else None,
        "runs": [str(run_id) for run_id in run_ids] if run_ids else None,
        "assistant": assistant_id,
    }
    async with queue.resources.database.pool.connection() as conn:
        rows = await (await conn.execute(ACTIVE_RUNS, params)).fetchall()
    for row in rows:
        await queue.cancel(str(row["run_id"]), action=action)


@router.post("/runs/wait")
async def wait_stateless_run(
    body: RunCreate, tenant: RunTenantDep, resources: ResourcesDep, queue: QueueDep
) -> StreamingResponse:
    run, output = await start_stateless_wait(body, tenant, resources, queue)
    return _waited(run, output, headers=_location(run))


async def start_stateless_wait(
    body: RunCreate, tenant: str, resources: ResourcesDep, queue: QueueDep
) -> tuple[Run, Coroutine[Any, Any, Any]]:
    """A run on a thread of its own, stored (refused as a run is); and its output to await, after
    which the thread is deleted (unless ``on_completion="keep"``)."""
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
                await delete_thread(resources.database.pool, tenant, thread.thread_id)

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
    thread_id: uuid.UUID,
    run_id: uuid.UUID,
    tenant: TenantDep,
    resources: ResourcesDep,
    queue: QueueDep,
    cancel_on_disconnect: bool = False,
) -> Response:
    """The run's output once it has finished; ``cancel_on_disconnect``: a client that leaves before
    cancels the run."""
    thread, run = await _thread_run(thread_id, run_id, tenant, resources, queue)
    if cancel_on_disconnect:
        output = _output(queue, resources, tenant, thread, run)
        cancel = partial(queue.spawn, _cancel_when_stored(queue, StreamedRun.of(run)))
        return _waited(run, output, headers=_location(run), on_leave=cancel)
    return JSONResponse(await _output(queue, resources, tenant, thread, run), headers=_location(run))


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
    select: Annotated[list[RunField] | None, Query()] = None,
) -> list[dict[str, Any]]:
    """The thread's runs, newest first; ``select`` keeps only those fields."""
    await existing_thread(resources, tenant, thread_id)
    runs = await queue.list_for_thread(str(thread_id), limit=limit, offset=offset, status=status)
    found = [run_json(run) for run in runs]
    return [{key: run[key] for key in select if key in run} for run in found] if select else found


@router.post("/threads/{thread_id}/runs/{run_id}/cancel")
async def cancel_run(
    thread_id: uuid.UUID,
    run_id: uuid.UUID,
    tenant: TenantDep,
    resources: ResourcesDep,
    queue: QueueDep,
    wait: bool = False,
    action: Literal["interrupt", "rollback"] = "interrupt",
) -> JSONResponse:
    thread, run = await _thread_run(thread_id, run_id, tenant, resources, queue)
    # A run that already finished is left as it is (langgraph-api answers 202 to that too).
    await queue.cancel(str(run.run_id), action=action)
    if not wait:
        return JSONResponse(None, status_code=202, headers=_location(run))
    finished = await queue.wait(str(run.run_id), within_s=WAIT_LIMIT_S)
    if finished is None:  # rolled back: the run and its work are gone
        return JSONResponse(None, headers=_location(run))
    return JSONResponse(
        await run_output(resources, tenant, thread, finished), headers=_location(run, "/join")
    )


@router.delete("/threads/{thread_id}/runs/{run_id}", status_code=204, response_class=Response)
async def delete_run(
    thread_id: uuid.UUID, run_id: uuid.UUID, tenant: TenantDep, resources: ResourcesDep, queue: QueueDep
) -> Response:
    """Forget a finished run (its events go with it; the thread's state stays)."""
    _, run = await _thread_run(thread_id, run_id, tenant, resources, queue)
    if run.status in ("pending", "running"):
        raise HTTPException(409, detail=f"Run {run_id} is {run.status}; cancel it first")
    async with resources.database.pool.connection() as conn:
        await conn.execute(
            "DELETE FROM runs WHERE run_id = %s AND status NOT IN ('pending', 'running')", (str(run_id),)
        )
    return Response(status_code=204)


# -- streams ---------------------------------------------------------------------------------------

#: How often a quiet stream looks in the database anyway (events stored by another process are
#: announced at once; this covers notifications lost while the listener reconnects).
STREAM_POLL_S = 1.0
#: How long a stream waits, in all, for an event stored after the one behind it (then it goes on
#: without it), and how often it looks again.
STREAM_GAP_WAIT_S = 2.0
STREAM_GAP_POLL_S = 0.05
KEEPALIVE_S = 10


def _sse(item: RunEvent) -> dict[str, str]:
    return {"event": item.event, "data": json.dumps(item.data, default=str), "id": str(item.seq)}


@dataclass(frozen=True)
class StreamedRun:
    """The run a stream follows; ``stored`` is the storing of a run the stream opened before it was
    stored (a run on a thread created for it)."""

    run_id: str
    thread_id: str
    attempt: int = 1
    stored: asyncio.Task[Any] | None = None

    @classmethod
    def of(cls, run: Run) -> StreamedRun:
        return cls(str(run.run_id), run.thread_id, max(run.attempts, 1))


async def _events(
    queue: RunQueue,
    run: StreamedRun,
    last_event_id: int | None,
    cancel_on_disconnect: bool,
) -> AsyncIterator[dict[str, str]]:
    """The run's events strictly after ``last_event_id`` (None: from the start, the ``metadata``
    event 0 first, out at once before the graph's first step), then live ones, until ``end``."""
    run_id = run.run_id
    # Subscribed before the stored events are read: every later event arrives live, none is missed.
    live = queue.events.subscribe(run_id)
    seen = last_event_id if last_event_id is not None else 0
    ended = False
    gap_wait_s = 0.0
    try:
        if last_event_id is None:
            metadata = {"run_id": run_id, "thread_id": run.thread_id, "attempt": run.attempt}
            yield {"event": "metadata", "data": json.dumps(metadata), "id": "0"}
        if run.stored is not None:
            try:
                await asyncio.shield(run.stored)
            except Exception as failure:
                ended = True
                yield {
                    "event": "error",
                    "data": json.dumps({"error": type(failure).__name__, "message": str(failure)}),
                }
                yield {"event": "end", "data": "null"}
                return
        while not ended:
            try:
                current, backlog = await through_outages(
                    queue.resources.database.health,
                    partial(_status_then_backlog, queue, run_id, seen),
                    within_s=queue.outage_wait_s,
                )
            except OutageTooLong as outage:
                # The run goes on once the database is back; the client resumes with Last-Event-ID.
                ended = True
                yield {
                    "event": "error",
                    "data": json.dumps({"error": "DatabaseUnavailable", "message": str(outage)}),
                }
                return
            hole = False
            for item in backlog:
                if item.seq > seen + 1 and gap_wait_s < STREAM_GAP_WAIT_S:
                    # Events are stored by concurrent writes: one may commit before the one before it.
                    # The missing one is being written; read again rather than skip it.
                    hole = True
                    break
                yield _sse(item)
                seen, ended = item.seq, item.event == "end"
                if ended:
                    return
            if hole:
                await asyncio.sleep(STREAM_GAP_POLL_S)
                gap_wait_s += STREAM_GAP_POLL_S
                continue
            if current is None or current.status not in ("pending", "running"):
                # finished before events were kept (or they were removed): close like a finished run
                ended = True
                yield {"event": "end", "data": "null"}
                return
            # Live events while they come (a run executing here); the database again when another
            # process announces it stored events of the run (it executes there), or when quiet.
            while not ended:
                try:
                    item = await asyncio.wait_for(live.get(), STREAM_POLL_S)
                except TimeoutError:
                    break
                if item.event == STORED_ELSEWHERE:
                    break
                if item.seq > seen + 1:
                    # An event went by before this stream listened (a run executing here starts before
                    # its stream subscribes) and was not stored yet when the backlog was read: the
                    # database has it next, in order, with this one.
                    break
                if item.seq > seen:
                    yield _sse(item)
                    seen, ended = item.seq, item.event == "end"
    finally:
        queue.events.unsubscribe(run_id, live)
        if cancel_on_disconnect and not ended:
            # The client left before the end. This scope is being cancelled, so nothing can be
            # awaited here: the cancel runs as its own task.
            queue.spawn(_cancel_when_stored(queue, run))


async def _status_then_backlog(queue: RunQueue, run_id: str, seen: int) -> tuple[Run | None, list[RunEvent]]:
    # The status first: a run's end stores its last events in the same commit as its status, so once
    # the run is seen finished, the backlog read next holds every event it has.
    return await queue.get(run_id), await queue.events.read_after(run_id, seen)


async def _cancel_when_stored(queue: RunQueue, run: StreamedRun) -> None:
    if run.stored is not None:
        with contextlib.suppress(Exception):
            await run.stored
    await queue.cancel(run.run_id, action="interrupt")


async def counted(gauge: Gauge, events: AsyncIterator[dict[str, str]]) -> AsyncIterator[dict[str, str]]:
    gauge.inc()
    try:
        async for item in events:
            yield item
    finally:
        gauge.dec()


#: A run's event id: its sequence number, at most 18 digits (the column holds far fewer; a longer
#: string is no id of ours, and ``int()`` of thousands of digits would be refused).
_EVENT_ID = re.compile(r"[0-9]{1,18}")


def event_seq(last_event_id: str | None) -> int | None:
    """The event a reconnect resumes strictly after; None (from the start, as langgraph-api does) for
    no id or one that is not ours (another server's, a proxy's)."""
    if last_event_id is None or not _EVENT_ID.fullmatch(last_event_id):
        return None
    return int(last_event_id)


def _of_modes(events: AsyncIterator[dict[str, str]], modes: set[str]) -> AsyncIterator[dict[str, str]]:
    """Only the events of ``modes`` (a subgraph's too; ``messages`` and ``messages-tuple`` both mean
    every ``messages...`` event), as langgraph-api filters a joined stream; ``error`` and ``end`` always."""
    if "messages-tuple" in modes:
        modes = modes | {"messages"}
    return (
        item
        async for item in events
        if item["event"] in ("error", "end") or item["event"].partition("|")[0].partition("/")[0] in modes
    )


def stream_modes_asked(values: list[str] | None) -> set[str]:
    """The modes of a ``stream_mode`` query (repeated, comma-separated or a JSON array, as the SDKs
    send it); empty: every event."""
    known = set(get_args(StreamMode))
    modes: set[str] = set()
    for value in values or []:
        parsed: Any = None
        if value.startswith("["):
            with contextlib.suppress(ValueError):
                parsed = json.loads(value)
        if isinstance(parsed, list):
            modes |= {str(mode) for mode in parsed}
        else:
            modes |= {mode.strip() for mode in value.split(",") if mode.strip()}
    unknown = sorted(modes - known)
    if unknown:
        raise HTTPException(422, detail=f"stream_mode: unknown {unknown}; use {sorted(known)}")
    return modes


def stream_response(
    queue: RunQueue,
    run: Run | StreamedRun,
    request: Request,
    last_event_id: str | None,
    cancel_on_disconnect: bool,
    modes: set[str] | None = None,
) -> EventSourceResponse:
    gauge = request.app.state.service.metrics.active_streams
    after = event_seq(last_event_id)
    streamed = run if isinstance(run, StreamedRun) else StreamedRun.of(run)
    location = f"/threads/{run.thread_id}/runs/{run.run_id}/stream"
    events = _events(queue, streamed, after, cancel_on_disconnect)
    return EventSourceResponse(
        counted(gauge, _of_modes(events, modes) if modes else events),
        ping=KEEPALIVE_S,
        headers={"Location": location, "Content-Location": f"/threads/{run.thread_id}/runs/{run.run_id}"},
    )


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
    _, run = await _thread_run(thread_id, run_id, tenant, resources, queue)
    modes = stream_modes_asked(stream_mode)
    return stream_response(queue, run, request, last_event_id, cancel_on_disconnect, modes)


ThreadStreamMode = Literal["run_modes", "lifecycle", "state_update"]
#: A thread's runs a thread stream has not sent yet: those active when it joined or made since, in the
#: order they run (a delayed run's ``created_at`` is when it is due).
THREAD_RUNS_TO_STREAM = """
SELECT * FROM runs
WHERE thread_id = %(thread)s AND run_id <> ALL(%(seen)s::uuid[])
  AND (status IN ('pending', 'running') OR created_at >= %(since)s OR finished_at >= %(since)s)
ORDER BY created_at, run_id
"""
RUN_CREATED = "SELECT created_at FROM runs WHERE run_id = %s AND thread_id = %s"
#: The thread's latest root checkpoint when a stream joins (the server's clock with it).
LATEST_CHECKPOINT = """
SELECT (SELECT max(checkpoint_id) FROM checkpoints WHERE thread_id = %(thread)s AND checkpoint_ns = '') AS checkpoint_id,
       now() AS now
"""
#: Root checkpoints written by state updates (not by runs) after ``seen``, and whether the thread is still there.
STATE_UPDATES_AFTER = """
SELECT EXISTS (SELECT 1 FROM threads WHERE thread_id = %(thread)s::uuid) AS exists,
       ARRAY(SELECT checkpoint_id FROM checkpoints
             WHERE thread_id = %(thread)s::text AND checkpoint_ns = '' AND checkpoint_id > %(seen)s
               AND metadata ->> 'source' = 'update'
             ORDER BY checkpoint_id) AS updates
"""


def _thread_stream_modes(values: list[str]) -> set[ThreadStreamMode]:
    modes = {mode.strip() for value in values for mode in value.split(",") if mode.strip()}
    unknown = sorted(modes - {"run_modes", "lifecycle", "state_update"})
    if unknown:
        raise HTTPException(
            422, detail=f"stream_mode: unknown {unknown}; use run_modes, lifecycle, state_update"
        )
    return cast(set[ThreadStreamMode], modes) or {"run_modes"}


async def thread_events(
    queue: RunQueue,
    tenant: str,
    thread: Thread,
    modes: set[ThreadStreamMode],
    resume: tuple[str, int] | None,
    *,
    from_start: bool = False,
) -> AsyncIterator[dict[str, str]]:
    """Every run of the thread as it runs (ids ``<run_id>:<seq>``), each closed by a ``run_done``
    metadata event; state updates made through the API as ``state_update``. Until the client leaves or
    the thread is deleted. ``from_start``: the thread's earlier runs first (those whose events are kept)."""
    pool = queue.resources.database.pool
    thread_id = str(thread.thread_id)
    async with pool.connection() as conn:
        latest = await (await conn.execute(LATEST_CHECKPOINT, {"thread": thread_id})).fetchone()
    assert latest is not None
    since: datetime = thread.created_at if from_start else latest["now"]
    seen_checkpoint = latest["checkpoint_id"]
    seen: list[uuid.UUID] = []
    if resume is not None:
        async with pool.connection() as conn:
            row = await (await conn.execute(RUN_CREATED, (resume[0], thread_id))).fetchone()
        if row is not None:
            since = row["created_at"]
    while True:
        async with pool.connection() as conn:
            runs = await (
                await conn.execute(THREAD_RUNS_TO_STREAM, {"thread": thread_id, "seen": seen, "since": since})
            ).fetchall()
        for row in runs:
            run = Run.from_row(row)
            seen.append(run.run_id)
            after_seq = resume[1] if resume is not None and resume[0] == str(run.run_id) else None
            if after_seq is not None and after_seq >= STREAM_DONE_SEQ:
                continue  # the client has all of it
            async for item in _events(queue, StreamedRun.of(run), after_seq, False):
                event = item["event"]
                if event == "end":
                    item = {
                        "event": "metadata",
                        "data": json.dumps({"status": "run_done", "run_id": str(run.run_id)}),
                    }
                    item["id"] = f"{run.run_id}:{STREAM_DONE_SEQ}"
                elif "id" in item:
                    item = {**item, "id": f"{run.run_id}:{item['id']}"}
                lifecycle = event in ("metadata", "end")
                if "run_modes" in modes or ("lifecycle" in modes and lifecycle):
                    yield item
            break  # runs made meanwhile are read again, in the order they run
        if runs:
            continue
        async with pool.connection() as conn:
            found = await (
                await conn.execute(STATE_UPDATES_AFTER, {"thread": thread_id, "seen": seen_checkpoint or ""})
            ).fetchone()
        assert found is not None
        if not found["exists"]:
            return
        for checkpoint_id in found["updates"]:
            seen_checkpoint = checkpoint_id
            if "state_update" in modes:
                # Read again: a run since the stream joined may have fixed the thread's graph.
                thread = await get_thread(pool, tenant, thread.thread_id) or thread
                snapshot = await thread_snapshot(
                    queue.resources, tenant, thread, {"checkpoint_id": checkpoint_id}
                )
                yield {
                    "event": "state_update",
                    "data": json.dumps(
                        {"state": snapshot_json(snapshot), "thread_id": thread_id}, default=str
                    ),
                    "id": f"{thread_id}:{checkpoint_id}",
                }
        await asyncio.sleep(STREAM_POLL_S)


#: The id of a run's ``run_done`` event in a thread stream: after every event of the run.
STREAM_DONE_SEQ = 2**31 - 1


@router.get("/threads/{thread_id}/stream")
async def join_thread_stream(
    thread_id: uuid.UUID,
    request: Request,
    tenant: TenantDep,
    resources: ResourcesDep,
    queue: QueueDep,
    stream_mode: Annotated[list[str] | None, Query()] = None,
    stream_modes: Annotated[list[str] | None, Query()] = None,
    last_event_id: Annotated[str | None, Header(alias="Last-Event-ID")] = None,
) -> EventSourceResponse:
    """The thread's runs as they run, and its state updates, until the client leaves: ``run_modes``
    (every event of every run, default), ``lifecycle`` (each run's start and ``run_done``),
    ``state_update``. ``Last-Event-ID`` resumes after that event of that run."""
    thread = await existing_thread(resources, tenant, thread_id)
    modes = _thread_stream_modes([*(stream_mode or []), *(stream_modes or [])])
    resume: tuple[str, int] | None = None
    if last_event_id:
        run_part, _, seq_part = last_event_id.partition(":")
        seq = event_seq(seq_part)
        with contextlib.suppress(ValueError):
            resume = (str(uuid.UUID(run_part)), seq) if seq is not None else None
    gauge = request.app.state.service.metrics.active_streams
    return EventSourceResponse(
        counted(gauge, thread_events(queue, tenant, thread, modes, resume)), ping=KEEPALIVE_S
    )
