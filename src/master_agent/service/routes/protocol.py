"""The thread protocol over HTTP (``client.threads.stream`` of the SDKs): commands to a thread
(``run.start``, ``input.respond``, ``state.get``, ``state.listCheckpoints``) and a filtered event
stream of its runs, as langgraph-api serves them."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Annotated, Any

from fastapi import APIRouter, Depends, HTTPException, Request
from fastapi.responses import JSONResponse
from pydantic import ValidationError
from sse_starlette import EventSourceResponse

from master_agent.runtime.graph_runs import PROTOCOL_V2
from master_agent.runtime.runs import Run, RunQueue
from master_agent.runtime.serialization import to_jsonable
from master_agent.service.deps import QueueDep, ResourcesDep, TenantDep, run_starting_tenant
from master_agent.service.graph_state import thread_graph, thread_snapshot
from master_agent.service.limits import StrictJsonRoute
from master_agent.service.routes.runs import KEEPALIVE_S, RunCreate, counted, run_on_thread, thread_events
from master_agent.service.routes.runs.events import STREAM_POLL_S
from master_agent.service.routes.threads import existing_thread
from master_agent.service.thread_protocol import (
    ErrorCode,
    EventStreamRequest,
    ProtocolCommand,
    ProtocolFrames,
)
from master_agent.service.threads import Thread, get_thread, thread_id_taken

router = APIRouter(tags=["threads"], route_class=StrictJsonRoute)

#: Commands of the protocol this HTTP transport does not take (they need a socket's session).
SESSION_COMMANDS = frozenset(
    {
        "subscription.subscribe",
        "subscription.unsubscribe",
        "subscription.reconnect",
        "agent.getTree",
        "input.inject",
        "state.fork",
    }
)


class ProtocolError(Exception):
    def __init__(self, code: ErrorCode, message: str, status: int) -> None:
        super().__init__(message)
        self.code, self.message, self.status = code, message, status


def _error(command_id: int | None, code: str, message: str, status: int) -> JSONResponse:
    # The protocol's error envelope, with ``detail`` as every other error of the service has.
    body = {"type": "error", "id": command_id, "error": code, "message": message, "detail": message}
    return JSONResponse(body, status_code=status)


_CODES = {404: "no_such_run", 403: "permission_denied", 422: "invalid_argument", 400: "invalid_argument"}


#: Commands that start a run (counted against ``MASTER_AGENT_RATE_RUNS``).
RUN_COMMANDS = frozenset({"run.start", "input.respond"})


def _runs_started(body: Any) -> int:
    method = body.get("method") if isinstance(body, dict) else None
    return 1 if isinstance(method, str) and method in RUN_COMMANDS else 0


CommandTenantDep = Annotated[str, Depends(run_starting_tenant(_runs_started))]


@router.post("/threads/{thread_id}/commands")
async def thread_command(
    thread_id: uuid.UUID,
    body: ProtocolCommand,
    tenant: CommandTenantDep,
    resources: ResourcesDep,
    queue: QueueDep,
) -> JSONResponse:
    """One protocol command to the thread; runs it starts execute in the background and are watched
    through ``POST /threads/{thread_id}/stream/events``."""
    handler = _COMMANDS.get(body.method)
    if handler is None:
        if body.method in SESSION_COMMANDS:
            return _error(
                body.id,
                "not_supported",
                f"method: {body.method} needs a socket session; not served over HTTP here",
                400,
            )
        return _error(
            body.id,
            "unknown_command",
            f"method: unknown command {body.method!r}; use {sorted(_COMMANDS)}",
            400,
        )
    try:
        result = await handler(thread_id, body.params, tenant, resources, queue)
    except ProtocolError as failure:
        return _error(body.id, failure.code, failure.message, failure.status)
    except HTTPException as failure:
        code = _CODES.get(failure.status_code, "unknown_error")
        return _error(body.id, code, str(failure.detail), failure.status_code)
    return JSONResponse({"type": "success", "id": body.id, "result": result})


def _run_request(params: dict[str, Any], **fields: Any) -> RunCreate:
    try:
        return RunCreate(
            config=params.get("config"),
            context=params.get("context"),
            metadata=params.get("metadata"),
            stream_subgraphs=True,
            multitask_strategy=params.get("multitask_strategy") or params.get("multitaskStrategy"),
            **fields,
        )
    except ValidationError as invalid:
        first = invalid.errors()[0]
        field = ".".join(str(part) for part in first["loc"])
        raise ProtocolError("invalid_argument", f"params.{field}: {first['msg']}", 422) from None


async def _run_start(
    thread_id: uuid.UUID, params: dict[str, Any], tenant: str, resources: ResourcesDep, queue: QueueDep
) -> dict[str, Any]:
    """A run of ``assistant_id`` on the thread (made for it when new); an ``input`` to a thread waiting
    at an interrupt resumes it."""
    assistant_id = params.get("assistant_id")
    if not isinstance(assistant_id, str) or not assistant_id:
        raise ProtocolError(
            "invalid_argument", "params.assistant_id: required (the assistant or graph to run)", 422
        )
    thread = await get_thread(resources.database.pool, tenant, thread_id)
    graph_input = params.get("input")
    resume = graph_input is not None and thread is not None and bool(thread.interrupts)
    body = _run_request(
        params,
        assistant_id=assistant_id,
        input=None if resume else graph_input,
        command={"resume": graph_input} if resume else None,
        if_not_exists="create",
    )
    _, run = await run_on_thread(thread_id, body, tenant, resources, queue, protocol=PROTOCOL_V2)
    return {"run_id": str(run.run_id)}


async def _input_respond(
    thread_id: uuid.UUID, params: dict[str, Any], tenant: str, resources: ResourcesDep, queue: QueueDep
) -> dict[str, Any]:
    """Answers to the thread's pending interrupts (one, or ``responses``): a run resuming it with them."""
    thread = await existing_thread(resources, tenant, thread_id)
    entries = params.get("responses") if "responses" in params else [params]
    if not isinstance(entries, list) or not entries or not all(isinstance(entry, dict) for entry in entries):
        raise ProtocolError(
            "invalid_argument", "params.responses: send a list of {interrupt_id, response}", 422
        )
    wanted = {entry.get("interrupt_id") for entry in entries}
    if not wanted <= _pending(thread) and thread.status == "busy":
        # The stream shows an interrupt as the run stops at it, a moment before the run's end (and
        # the thread's interrupts) is stored: let that run finish, then look again.
        for run in await queue.list_for_thread(str(thread_id), limit=10, offset=0, status="running"):
            await queue.wait(str(run.run_id), within_s=resources.settings.run_lease_s)
        thread = await existing_thread(resources, tenant, thread_id)
    pending = _pending(thread)
    answers: dict[str, Any] = {}
    for entry in entries:
        interrupt_id = entry.get("interrupt_id")
        if not isinstance(interrupt_id, str) or not interrupt_id:
            raise ProtocolError("invalid_argument", "params.interrupt_id: required", 422)
        if interrupt_id not in pending:
            raise ProtocolError(
                "no_such_interrupt", f"params.interrupt_id: {interrupt_id} is not pending on this thread", 404
            )
        answers[interrupt_id] = entry.get("response")
    command = {
        "resume": answers,
        **{key: params[key] for key in ("update", "goto") if params.get(key) is not None},
    }
    body = _run_request(params, assistant_id=await _thread_assistant(queue, thread), command=command)
    _, run = await run_on_thread(thread_id, body, tenant, resources, queue, protocol=PROTOCOL_V2)
    return {"run_id": str(run.run_id)}


def _pending(thread: Thread) -> set[Any]:
    return {item.get("id") for items in thread.interrupts.values() for item in items}


async def _thread_assistant(queue: RunQueue, thread: Thread) -> str:
    """The assistant of the thread's latest run (a resume continues the graph that stopped)."""
    latest = await queue.list_for_thread(str(thread.thread_id), limit=1, offset=0, status=None)
    if latest and latest[0].assistant_id is not None:
        return str(latest[0].assistant_id)
    graph_id = (thread.config or {}).get("graph_id")
    if not graph_id:
        raise ProtocolError("no_such_run", "the thread has no run to resume; send run.start", 404)
    return str(graph_id)


async def _state_get(
    thread_id: uuid.UUID, params: dict[str, Any], tenant: str, resources: ResourcesDep, queue: QueueDep
) -> dict[str, Any]:
    snapshot = await thread_snapshot(resources, tenant, await existing_thread(resources, tenant, thread_id))
    values = snapshot.values if isinstance(snapshot.values, dict) else {"value": snapshot.values}
    keys = params.get("keys")
    if keys is not None:
        if not isinstance(keys, list) or not all(isinstance(key, str) for key in keys):
            raise ProtocolError("invalid_argument", "params.keys: send a list of state keys", 422)
        values = {key: value for key, value in values.items() if key in keys}
    result: dict[str, Any] = {"values": to_jsonable(values)}
    checkpoint_id = (snapshot.config or {}).get("configurable", {}).get("checkpoint_id")
    if checkpoint_id:
        result["checkpoint"] = {"id": checkpoint_id}
    return result


async def _list_checkpoints(
    thread_id: uuid.UUID, params: dict[str, Any], tenant: str, resources: ResourcesDep, queue: QueueDep
) -> dict[str, Any]:
    thread = await existing_thread(resources, tenant, thread_id)
    limit = params.get("limit", 10)
    if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= 1000:
        raise ProtocolError("invalid_argument", "params.limit: a whole number from 1 to 1000", 422)
    before = params.get("before")
    graph, config = await thread_graph(resources, tenant, thread)
    checkpoints = []
    async for snapshot in graph.aget_state_history(
        config,
        before={"configurable": {"checkpoint_id": before}} if isinstance(before, str) else None,
        limit=limit,
    ):
        metadata = dict(snapshot.metadata or {})
        summary: dict[str, Any] = {
            "id": (snapshot.config or {}).get("configurable", {}).get("checkpoint_id"),
            "timestamp": snapshot.created_at,
            "step": metadata.get("step", 0),
            "metadata": to_jsonable(metadata),
        }
        writes = metadata.get("writes")
        if isinstance(writes, dict) and len(writes) == 1:
            summary["node_name"] = next(iter(writes))
        checkpoints.append(summary)
    return {"checkpoints": checkpoints}


Handler = Callable[[uuid.UUID, dict[str, Any], str, ResourcesDep, QueueDep], Awaitable[dict[str, Any]]]
_COMMANDS: dict[str, Handler] = {
    "run.start": _run_start,
    "input.respond": _input_respond,
    "state.get": _state_get,
    "state.listCheckpoints": _list_checkpoints,
}


@router.post("/threads/{thread_id}/stream/events")
async def thread_protocol_stream(
    thread_id: uuid.UUID,
    body: EventStreamRequest,
    request: Request,
    tenant: TenantDep,
    resources: ResourcesDep,
    queue: QueueDep,
) -> EventSourceResponse:
    """The thread's runs as protocol events on the ``channels`` asked for (within ``namespaces`` and
    ``depth``), from its first run whose events are kept, then live, until the client leaves. ``since``:
    only events after that ``seq`` (a reconnect)."""
    # The SDK opens its streams before ``run.start`` makes the thread (its id minted client-side): as
    # langgraph-api does, the stream waits for a thread not made yet rather than answering 404.
    pool = resources.database.pool
    if await get_thread(pool, tenant, thread_id) is None and await thread_id_taken(pool, thread_id):
        raise HTTPException(404, detail=f"Thread with ID {thread_id} not found")
    gauge = request.app.state.service.metrics.active_streams
    return EventSourceResponse(
        counted(gauge, _protocol_events(queue, tenant, thread_id, body)), ping=KEEPALIVE_S
    )


async def _thread_when_made(queue: RunQueue, tenant: str, thread_id: uuid.UUID) -> Thread:
    while True:
        thread = await get_thread(queue.resources.database.pool, tenant, thread_id)
        if thread is not None:
            return thread
        await asyncio.sleep(STREAM_POLL_S)


def _protocol_run(run: Run) -> bool:
    return run.request.get("stream_protocol") == PROTOCOL_V2


async def _protocol_events(
    queue: RunQueue, tenant: str, thread_id: uuid.UUID, wanted: EventStreamRequest
) -> AsyncIterator[dict[str, str]]:
    thread = await _thread_when_made(queue, tenant, thread_id)
    frames = ProtocolFrames()
    # Replayed: the thread's earlier protocol runs (as langgraph-api replays the runs whose events it
    # stored); a classic run made before the client joined is not, or its end would read as the end of
    # the run the client is about to start (the SDK's ``thread.output`` waits for the first one).
    async for item in thread_events(
        queue, tenant, thread, {"run_modes"}, None, from_start=True, replayed=_protocol_run
    ):
        data = json.loads(item["data"])
        if item["event"] == "metadata":
            run = await queue.get(str(data["run_id"]))
            if data.get("status") == "run_done":
                made = frames.run_done(run.status if run else "error", run.error if run else None)
            else:
                graph_name = str((run.metadata if run else {}).get("graph_id") or "agent")
                made = frames.run_started(str(data["run_id"]), graph_name)
        else:
            made = frames.run_event(item["event"], data, item.get("id") or f"{frames.seq}")
        for frame in made:
            if (wanted.since is None or frame["seq"] > wanted.since) and wanted.wants(frame):
                yield {
                    "event": frame["method"],
                    "data": json.dumps(frame, default=str),
                    "id": str(frame["seq"]),
                }
