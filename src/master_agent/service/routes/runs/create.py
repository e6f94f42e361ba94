"""Creating runs: a run request checked (the generic checks, then its graph's own, from the graph's
registration) and resolved against its assistant, stored on a thread, on a new thread (stateless), or in a
batch."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Annotated, Any

from fastapi import APIRouter, Body, Depends, HTTPException
from fastapi.responses import JSONResponse

from master_agent.capabilities.assistants import AGENT_SPEC_KEY, resolve_assistant
from master_agent.errors import InputError
from master_agent.evolution.webhooks import WebhookRefused, check_webhook_url
from master_agent.runtime.graph_runs import shape_of
from master_agent.runtime.graphs import GraphRegistration, graph_ids, graph_registration
from master_agent.runtime.runs import Run, RunQueue
from master_agent.service.deps import QueueDep, ResourcesDep, RunTenantDep, run_starting_tenant
from master_agent.service.graph_state import run_json
from master_agent.service.limits import StrictJsonRoute
from master_agent.service.routes.runs.request import RunCreate, location
from master_agent.service.routes.threads import check_checkpoint
from master_agent.service.threads import Thread, create_thread, get_thread

router = APIRouter(tags=["runs"], route_class=StrictJsonRoute)


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
        # No input: go on from where the thread stopped (a breakpoint, an interrupt), or from the
        # checkpoint named (a replay of the thread's past from there, as langgraph-api runs it).
        if thread.status != "interrupted" and _start_checkpoint(body) is None:
            raise HTTPException(
                422,
                detail="input: required unless the thread is stopped at a breakpoint or a checkpoint is named",
            )
        return
    try:
        if body.command is not None:
            # RemoteGraph sends a whole ``Command`` (``graph`` and ``goto`` empty unless set).
            given = {key for key, value in body.command.items() if value not in (None, (), [])}
            unknown = sorted(given - {"resume", "update", "goto"})
            if unknown:
                raise HTTPException(
                    422, detail=f"command: unsupported keys {unknown}; use resume, update and/or goto"
                )
            if "resume" in given and thread.status != "interrupted":
                raise HTTPException(409, detail="command.resume: the thread is not waiting for a decision")
            if graph.check_command is not None:
                graph.check_command({key: body.command[key] for key in given})
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
    thread = await _settled_for_resume(body, thread, tenant, resources, queue)
    prepared = await prepare_run(body, thread, tenant, resources)
    return await prepared.enqueue(queue, tenant, str(thread.thread_id), execute_here=execute_here)


async def _settled_for_resume(
    body: RunCreate, thread: Thread, tenant: str, resources: ResourcesDep, queue: QueueDep
) -> Thread:
    """The thread as a resume finds it: a stream shows an interrupt as its run stops there, a moment
    before the run's end (and the thread's status) is stored, so a resume sent at once lets that run
    finish first (RemoteGraph resumes so)."""
    if (body.command or {}).get("resume") is None or thread.status != "busy":
        return thread
    for running in await queue.list_for_thread(str(thread.thread_id), limit=10, offset=0, status="running"):
        await queue.wait(str(running.run_id), within_s=resources.settings.run_lease_s)
    return await get_thread(resources.database.pool, tenant, thread.thread_id) or thread


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
        "durability": _durability(body),
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


def _durability(body: RunCreate) -> str | None:
    """``durability``, or the deprecated ``checkpoint_during`` as langgraph-api reads it (False: ``exit``,
    one checkpoint at the run's end; True: ``async``); None: the default."""
    if body.durability is not None or body.checkpoint_during is None:
        return body.durability
    return "async" if body.checkpoint_during else "exit"


def _start_checkpoint(body: RunCreate) -> dict[str, str] | None:
    """The checkpoint a run starts from (time travel: a fork of the thread's past), None: the latest."""
    wanted = {
        key: str(value)
        for key, value in (body.checkpoint or {}).items()
        if key in ("checkpoint_id", "checkpoint_ns") and value
    }
    configurable = (body.config or {}).get("configurable") or {}
    if isinstance(configurable, dict) and configurable.get("checkpoint_id"):
        wanted["checkpoint_id"] = str(configurable["checkpoint_id"])
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
        thread = await _settled_for_resume(body, thread, tenant, resources, queue)
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
    return JSONResponse(run_json(run), headers=location(run))


@router.post("/runs")
async def create_stateless_run(
    body: RunCreate, tenant: RunTenantDep, resources: ResourcesDep, queue: QueueDep
) -> JSONResponse:
    """A background run on a thread of its own, deleted when the run ends (unless
    ``on_completion="keep"``)."""
    run = await start_stateless_run(body, tenant, resources, queue)
    return JSONResponse(run_json(run), headers=location(run))


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
