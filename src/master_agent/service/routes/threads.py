"""LangGraph-compatible threads: create, get, search, delete, state, state update, history."""

from __future__ import annotations

import uuid
from typing import Annotated, Any, Literal, cast

from fastapi import APIRouter, Header, HTTPException, Query, Request, Response
from langchain_core.runnables import RunnableConfig
from langgraph.errors import InvalidUpdateError
from langgraph.types import StateUpdate as GraphStateUpdate
from pydantic import Field

from master_agent.capabilities import domain_pack, load_tenant
from master_agent.errors import InputError
from master_agent.runtime.graph_runs import command_of, shape_of
from master_agent.runtime.graphs import check_state_keys, graph_ids
from master_agent.runtime.loop import CompiledLoop
from master_agent.runtime.serialization import interrupts_by_task, to_jsonable
from master_agent.service.client_gone import stops_when_client_leaves
from master_agent.service.deps import QueueDep, ResourcesDep, ServiceDep, TenantDep, operator
from master_agent.service.graph_state import snapshot_json, thread_graph, thread_snapshot
from master_agent.service.limits import LangGraphBody, Metadata, StrictJsonRoute, page
from master_agent.service.state import ServiceState
from master_agent.service.thread_extract import Extract, extracted
from master_agent.service.threads import (
    Thread,
    ThreadStatus,
    ThreadTTL,
    copy_thread,
    count_threads,
    create_thread,
    delete_thread,
    get_thread,
    patch_latest_checkpoint,
    patch_thread,
    prune_threads,
    search_threads,
    store_thread_values,
    thread_storage,
)
from master_agent.workflows.audit import AuditTrail
from master_agent.workflows.spec import merge_patch

router = APIRouter(prefix="/threads", tags=["threads"], route_class=StrictJsonRoute)


class SuperstepUpdate(LangGraphBody):
    """One update of a superstep: values (or a command) written as if ``as_node`` had just run."""

    values: dict[str, Any] | list[Any] | None = None
    command: dict[str, Any] | None = None
    as_node: str


class Superstep(LangGraphBody):
    """Updates applied together, as one step of the graph."""

    updates: list[SuperstepUpdate] = Field(min_length=1)


class ThreadCreate(LangGraphBody):
    metadata: Metadata = Field(default_factory=dict)
    thread_id: uuid.UUID | None = None
    if_exists: Literal["raise", "do_nothing"] = "raise"
    graph_id: str | None = None
    ttl: ThreadTTL | None = None
    supersteps: list[Superstep] | None = Field(
        default=None,
        description="State written into the new thread, step by step (a copied or imported conversation); "
        "the graph is metadata.graph_id.",
    )


class ThreadSearch(LangGraphBody):
    metadata: Metadata = Field(default_factory=dict)
    values: dict[str, Any] | None = Field(
        default=None, description="Only threads whose current values contain these (JSON containment)."
    )
    ids: list[uuid.UUID] | None = None
    status: ThreadStatus | None = None
    limit: int = Field(default=10, ge=1, le=1000)
    offset: int = Field(default=0, ge=0)
    sort_by: Literal["thread_id", "status", "created_at", "updated_at", "state_updated_at"] | None = None
    sort_order: Literal["asc", "desc"] | None = None
    select: (
        list[
            Literal[
                "thread_id",
                "created_at",
                "updated_at",
                "metadata",
                "status",
                "config",
                "values",
                "interrupts",
            ]
        ]
        | None
    ) = None
    extract: Extract | None = Field(
        default=None, description="alias -> path (e.g. values.messages[-1].content): answered in extracted."
    )


class ThreadCount(LangGraphBody):
    metadata: Metadata = Field(default_factory=dict)
    values: dict[str, Any] | None = None
    status: ThreadStatus | None = None


class ThreadPatch(LangGraphBody):
    metadata: Metadata = Field(default_factory=dict)
    ttl: ThreadTTL | None = None


class ThreadPrune(LangGraphBody):
    thread_ids: list[uuid.UUID] = Field(max_length=1000)
    strategy: Literal["delete", "keep_latest"] = "delete"


class StateAtCheckpoint(LangGraphBody):
    checkpoint: dict[str, Any]
    subgraphs: bool = False


class StateUpdate(LangGraphBody):
    values: dict[str, Any] | list[Any] | None = None
    as_node: str | None = None
    checkpoint: dict[str, Any] | None = None
    checkpoint_id: str | None = None


class HistoryRequest(LangGraphBody):
    limit: int = Field(default=10, ge=1, le=1000)
    before: str | dict[str, Any] | None = None
    metadata: Metadata | None = None
    checkpoint: dict[str, Any] | None = None


def graph_state_keys(graph: CompiledLoop) -> frozenset[str]:
    return frozenset(key for key in graph.channels if not key.startswith(("__", "branch:")))


async def existing_thread(resources: ResourcesDep, tenant: str, thread_id: uuid.UUID) -> Thread:
    thread = await get_thread(resources.database.pool, tenant, thread_id)
    if thread is None:
        raise HTTPException(404, detail=f"Thread with ID {thread_id} not found")
    return thread


#: Whether the thread has a checkpoint (the one named, or any in the namespace named).
CHECKPOINT_EXISTS = """
SELECT 1 FROM checkpoints
WHERE thread_id = %(thread)s AND checkpoint_ns = %(ns)s AND (%(id)s::text IS NULL OR checkpoint_id = %(id)s)
LIMIT 1
"""


async def check_checkpoint(
    resources: ResourcesDep, thread_id: uuid.UUID, wanted: dict[str, Any], where: str = ""
) -> None:
    """Refuse a checkpoint a request names that the thread does not have: 422 for what cannot be a
    checkpoint id (LangGraph's are UUIDs), 404 for one the thread lacks, as langgraph-api answers.
    Without this a state update or a run would start from an empty state as if the thread were new.
    ``wanted``: ``checkpoint_id`` and ``checkpoint_ns`` as sent; ``where``: the fields' prefix."""
    checkpoint_id = wanted.get("checkpoint_id") or None
    namespace = wanted.get("checkpoint_ns") or ""
    if checkpoint_id is not None:
        if not isinstance(checkpoint_id, str):
            raise HTTPException(422, detail=f"{where}checkpoint_id: a checkpoint id (a string)")
        try:
            uuid.UUID(checkpoint_id)
        except ValueError:
            shown = checkpoint_id if len(checkpoint_id) <= 64 else checkpoint_id[:64] + "..."
            raise HTTPException(
                422, detail=f"{where}checkpoint_id: {shown!r} is not a checkpoint id (a UUID)"
            ) from None
    if not isinstance(namespace, str):
        raise HTTPException(422, detail=f"{where}checkpoint_ns: a checkpoint namespace (a string)")
    if checkpoint_id is None and not namespace:
        return  # the latest checkpoint: nothing named
    async with resources.database.pool.connection() as conn:
        found = await (
            await conn.execute(
                CHECKPOINT_EXISTS, {"thread": str(thread_id), "ns": namespace, "id": checkpoint_id}
            )
        ).fetchone()
    if found is None:
        inside = f" in namespace {namespace!r}" if namespace else ""
        if checkpoint_id is None:
            raise HTTPException(404, detail=f"{where}checkpoint_ns: no checkpoint{inside} on this thread")
        raise HTTPException(
            404, detail=f"{where}checkpoint_id: no checkpoint {checkpoint_id}{inside} on this thread"
        )


@router.post("", response_model=Thread)
async def create(body: ThreadCreate, tenant: TenantDep, resources: ResourcesDep) -> Thread:
    graph_id = body.metadata.get("graph_id") or body.graph_id
    if body.graph_id and "graph_id" not in body.metadata:
        # The graph a thread is made for is its metadata's, as langgraph-api keeps it.
        body = body.model_copy(update={"metadata": {**body.metadata, "graph_id": body.graph_id}})
    if body.supersteps and graph_id not in graph_ids(resources):
        raise HTTPException(
            422,
            detail=f"metadata.graph_id: supersteps need the graph whose state they write, one of "
            f"{graph_ids(resources)} (got {graph_id!r})",
        )
    config = shape_of({}, str(graph_id)) if body.supersteps else None
    created = await create_thread(
        resources.database.pool, tenant, body.metadata, body.thread_id, config, ttl=body.ttl
    )
    if created is not None:
        if body.supersteps:
            await _write_supersteps(resources, tenant, created, body.supersteps)
            return await existing_thread(resources, tenant, created.thread_id)
        return created
    assert body.thread_id is not None
    existing = await get_thread(resources.database.pool, tenant, body.thread_id)
    if existing is None or body.if_exists == "raise":
        raise HTTPException(
            409,
            detail=f"Thread with ID {body.thread_id} already exists or was used before; use a new thread_id",
        )
    return existing


async def _write_supersteps(
    resources: ResourcesDep, tenant: str, thread: Thread, supersteps: list[Superstep]
) -> None:
    """The supersteps written into a new thread in one go; a step the graph refuses leaves no thread."""
    graph, config = await thread_graph(resources, tenant, thread)
    # LangGraph applies a Command or a list-state's list as an update too (its type says dict only).
    steps = [
        [
            GraphStateUpdate(
                cast(Any, command_of(update.command) if update.command else update.values), update.as_node
            )
            for update in superstep.updates
        ]
        for superstep in supersteps
    ]
    try:
        await graph.abulk_update_state(config, steps)
    except (InvalidUpdateError, ValueError, KeyError, TypeError) as error:
        await delete_thread(resources.database.pool, tenant, thread.thread_id)
        raise HTTPException(422, detail=f"supersteps: {error}") from None
    snapshot = await graph.aget_state(config)
    # Steps left to run: the thread waits as at a breakpoint (a run without input goes on), as there.
    await store_thread_values(
        resources.database.pool,
        thread.thread_id,
        to_jsonable(snapshot.values),
        interrupts_by_task(snapshot),
        "interrupted" if snapshot.next else "idle",
    )


@router.get("/{thread_id}")
@stops_when_client_leaves
async def get(
    thread_id: uuid.UUID,
    tenant: TenantDep,
    resources: ResourcesDep,
    include: Annotated[list[Literal["ttl"]] | None, Query()] = None,
) -> dict[str, Any]:
    """The thread; with ``include=ttl``, its TTL and when it runs out (null without one)."""
    thread = await existing_thread(resources, tenant, thread_id)
    found = thread.model_dump(mode="json")
    if include and "ttl" in include:
        found["ttl"] = thread.ttl_json()
    return found


@router.post("/search", response_model=list[dict[str, Any]])
@stops_when_client_leaves
async def search(
    body: ThreadSearch, tenant: TenantDep, resources: ResourcesDep, response: Response
) -> list[dict[str, Any]]:
    """The tenant's threads, newest first unless ``sort_by``/``sort_order`` say otherwise; ``select``
    keeps only those fields."""
    found, total = await search_threads(
        resources.database.pool,
        tenant,
        metadata=body.metadata,
        status=body.status,
        limit=body.limit,
        offset=body.offset,
        values=body.values,
        ids=body.ids,
        sort_by=body.sort_by,
        sort_order=body.sort_order,
    )
    rows = page(response, found, body.offset, total, body.select)
    if body.extract:
        for row, thread in zip(rows, found, strict=True):
            row["extracted"] = extracted(thread.model_dump(mode="json"), body.extract)
    return rows


@router.post("/count", response_model=int)
@stops_when_client_leaves
async def count(body: ThreadCount, tenant: TenantDep, resources: ResourcesDep) -> int:
    return await count_threads(
        resources.database.pool, tenant, metadata=body.metadata, status=body.status, values=body.values
    )


@router.post("/prune")
async def prune(body: ThreadPrune, tenant: TenantDep, resources: ResourcesDep) -> dict[str, int]:
    """``delete`` the threads, or ``keep_latest``: drop their history before the latest checkpoint. A
    thread of another tenant, or with an active run, is left alone and not counted."""
    pruned = await prune_threads(resources.database.pool, tenant, body.thread_ids, body.strategy)
    return {"pruned_count": pruned}


@router.patch(
    "/{thread_id}", response_model=Thread, responses={204: {"description": "Prefer: return=minimal"}}
)
async def patch(
    thread_id: uuid.UUID,
    body: ThreadPatch,
    tenant: TenantDep,
    resources: ResourcesDep,
    prefer: Annotated[str | None, Header()] = None,
) -> Thread | Response:
    """Merge ``metadata`` into the thread's; with ``Prefer: return=minimal`` (the SDK's
    ``return_minimal``), 204 and no body."""
    patched = await patch_thread(resources.database.pool, tenant, thread_id, body.metadata, body.ttl)
    if patched is None:
        raise HTTPException(404, detail=f"Thread with ID {thread_id} not found")
    if prefer is not None and prefer.replace(" ", "").lower() == "return=minimal":
        return Response(status_code=204)
    return patched


@router.post("/{thread_id}/copy", response_model=Thread)
async def copy(thread_id: uuid.UUID, tenant: TenantDep, resources: ResourcesDep) -> Thread:
    """A new thread with this one's metadata and whole checkpoint history."""
    source = await existing_thread(resources, tenant, thread_id)
    return await copy_thread(resources.database.pool, tenant, source)


@router.delete("/{thread_id}", status_code=204)
async def delete(
    thread_id: uuid.UUID, tenant: TenantDep, resources: ResourcesDep, queue: QueueDep
) -> Response:
    await existing_thread(resources, tenant, thread_id)
    if not await remove_thread(resources, queue, tenant, thread_id):
        raise HTTPException(404, detail=f"Thread with ID {thread_id} not found")
    return Response(status_code=204)


async def remove_thread(resources: ResourcesDep, queue: QueueDep, tenant: str, thread_id: uuid.UUID) -> bool:
    """Its active runs stop first (in whichever process executes them), then it goes in one
    transaction; False: it was not there."""
    for run in await queue.list_for_thread(str(thread_id), limit=100, offset=0, status=None):
        if run.status in ("pending", "running") and await queue.cancel(str(run.run_id)):
            await queue.wait(str(run.run_id), within_s=resources.settings.run_lease_s)
    return await delete_thread(resources.database.pool, tenant, thread_id)


@router.get("/{thread_id}/storage")
async def storage(thread_id: uuid.UUID, tenant: TenantDep, resources: ResourcesDep) -> dict[str, Any]:
    """Bytes the thread's checkpoints occupy, as stored: checkpoints, channel values (per channel) and
    pending writes (langgraph-api's ``ThreadStorage``)."""
    await existing_thread(resources, tenant, thread_id)
    return await thread_storage(resources.database.pool, thread_id)


@router.get("/{thread_id}/state")
@stops_when_client_leaves
async def get_state(
    thread_id: uuid.UUID, tenant: TenantDep, resources: ResourcesDep, subgraphs: bool = Query(default=False)
) -> dict[str, Any]:
    return await _state_at(resources, tenant, thread_id, {}, subgraphs)


@router.get("/{thread_id}/state/{checkpoint_id}")
@stops_when_client_leaves
async def get_state_at_checkpoint(
    thread_id: uuid.UUID,
    checkpoint_id: str,
    tenant: TenantDep,
    resources: ResourcesDep,
    subgraphs: bool = Query(default=False),
) -> dict[str, Any]:
    """The thread's state as it was at one of its checkpoints (time travel, checkpoint browsing)."""
    return await _state_at(resources, tenant, thread_id, {"checkpoint_id": checkpoint_id}, subgraphs)


@router.post("/{thread_id}/state/checkpoint")
@stops_when_client_leaves
async def post_state_at_checkpoint(
    thread_id: uuid.UUID, body: StateAtCheckpoint, tenant: TenantDep, resources: ResourcesDep
) -> dict[str, Any]:
    """The state at ``checkpoint`` (``checkpoint_id`` and ``checkpoint_ns``: a subgraph's checkpoint)."""
    wanted = {
        key: body.checkpoint[key] for key in ("checkpoint_id", "checkpoint_ns") if body.checkpoint.get(key)
    }
    return await _state_at(resources, tenant, thread_id, wanted, body.subgraphs, where="checkpoint.")


async def _state_at(
    resources: ResourcesDep,
    tenant: str,
    thread_id: uuid.UUID,
    checkpoint: dict[str, Any],
    subgraphs: bool,
    where: str = "",
) -> dict[str, Any]:
    thread = await existing_thread(resources, tenant, thread_id)
    await check_checkpoint(resources, thread_id, checkpoint, where)
    snapshot = await thread_snapshot(resources, tenant, thread, checkpoint, subgraphs)
    return snapshot_json(snapshot)


async def _guard_state_update(
    request: Request,
    service: ServiceState,
    tenant: str,
    thread_id: uuid.UUID,
    graph: CompiledLoop,
    config: Any,
    values: dict[str, Any],
) -> dict[str, Any]:
    """A stage-driven conversation's state is moved by its guards: an update that would skip one (set
    the stage, a decision, a verification) is refused with 409 and audited, unless an operator (the
    operator token) sends ``X-Override-Reason`` and ``X-Operator``: then it is audited as an override.
    Its ``record`` is patched, not replaced (``workflows.spec.merge_patch``): the values to apply."""
    record = await load_tenant(service.resources.database.pool, tenant)
    pack = domain_pack(record.domain) if record.domain else None
    if pack is None or pack.state_guard is None:
        return values
    current = (await graph.aget_state(config)).values
    if isinstance(values.get("record"), dict):
        values = {**values, "record": merge_patch((current or {}).get("record") or {}, values["record"])}
    problems = pack.state_guard(dict(current or {}), values)
    if not problems:
        return values
    resources = service.resources
    trail = AuditTrail(
        resources.database.pool, tenant, str(thread_id), "state_update", resources.evolution.clock.now
    )
    reason = request.headers.get("x-override-reason", "").strip()
    who = request.headers.get("x-operator", "").strip()
    if reason and who:
        await operator(request, service)  # 403 unless the operator token (or loopback without one)
        trail.add("override", by=who, reason=reason[:1000], fields=problems)
        await trail.flush()
        return values
    trail.add("refused", by="api", reason="state update would skip a guard", fields=problems)
    await trail.flush()
    raise HTTPException(
        409,
        detail=f"{', '.join(problems)}: only the conversation's guards set these (send a message instead; "
        "an operator may override with X-Operator and X-Override-Reason)",
    )


@router.post("/{thread_id}/state")
async def update_state(
    thread_id: uuid.UUID,
    body: StateUpdate,
    tenant: TenantDep,
    resources: ResourcesDep,
    request: Request,
    service: ServiceDep,
) -> dict[str, Any]:
    thread = await existing_thread(resources, tenant, thread_id)
    if thread.status == "busy":
        raise HTTPException(
            409, detail="Thread is busy: wait for its run to finish before updating its state"
        )
    if not (thread.config or {}).get("graph_id"):
        # As langgraph-api: the graph a thread was made for (metadata.graph_id) until a run names one; a
        # thread that has neither has no graph whose state the update could be.
        named = thread.metadata.get("graph_id")
        if not named:
            raise HTTPException(
                400,
                detail=f"thread_id: thread {thread_id} has no associated graph yet: no run has been made on "
                "it (run it first, or create it with graph_id)",
            )
        if named not in graph_ids(resources):
            raise HTTPException(
                422, detail=f"metadata.graph_id: no graph {named!r}; one of {graph_ids(resources)}"
            )
        thread = thread.model_copy(update={"config": shape_of({}, str(named))})
    graph, latest = await thread_graph(resources, tenant, thread)
    config = latest
    if body.checkpoint_id or body.checkpoint:
        checkpoint_id = body.checkpoint_id or (body.checkpoint or {}).get("checkpoint_id")
        where = "" if body.checkpoint_id else "checkpoint."
        await check_checkpoint(resources, thread_id, {"checkpoint_id": checkpoint_id}, where)
        config = {**config, "configurable": {**config["configurable"], "checkpoint_id": checkpoint_id}}
    # A list is the whole update of a graph whose state is a list (messages); the graph judges it.
    if isinstance(body.values, dict):
        try:
            check_state_keys(graph_state_keys(graph), "values", body.values)
        except InputError as error:
            raise HTTPException(422, detail=str(error)) from None
        values: Any = await _guard_state_update(
            request, service, tenant, thread_id, graph, config, body.values
        )
    else:
        values = body.values
    try:
        updated = await graph.aupdate_state(config, values, as_node=body.as_node)
    except (InvalidUpdateError, ValueError, KeyError, TypeError) as error:
        field = "as_node" if body.as_node and "Node" in str(error) else "values"
        raise HTTPException(422, detail=f"{field}: {error}") from None
    # The update is the thread's latest checkpoint now, even when it forked an older one.
    snapshot = await graph.aget_state(latest)
    await store_thread_values(
        resources.database.pool,
        thread_id,
        to_jsonable(snapshot.values),
        interrupts_by_task(snapshot),
    )
    configurable = updated["configurable"]
    checkpoint = {
        "thread_id": str(thread_id),
        "checkpoint_ns": configurable.get("checkpoint_ns", ""),
        "checkpoint_id": configurable.get("checkpoint_id"),
    }
    return {
        "checkpoint": checkpoint,
        "configurable": checkpoint,
        "checkpoint_id": checkpoint["checkpoint_id"],
    }


class StatePatch(LangGraphBody):
    metadata: Metadata


@router.patch("/{thread_id}/state", status_code=204)
async def patch_state(
    thread_id: uuid.UUID, body: StatePatch, tenant: TenantDep, resources: ResourcesDep
) -> Response:
    """Merge ``metadata`` into the metadata of the thread's latest checkpoint (the JS SDK's
    ``threads.patchState``; what ``threads.getState`` and the history show afterwards)."""
    await existing_thread(resources, tenant, thread_id)
    if not await patch_latest_checkpoint(resources.database.pool, thread_id, body.metadata):
        raise HTTPException(409, detail=f"Thread {thread_id} has no state yet to patch; run it first")
    return Response(status_code=204)


@router.get("/{thread_id}/history")
@stops_when_client_leaves
async def history_get(
    thread_id: uuid.UUID,
    tenant: TenantDep,
    resources: ResourcesDep,
    limit: int = Query(default=10, ge=1, le=1000),
    before: str | None = Query(default=None, description="A checkpoint_id: only states before it."),
) -> list[dict[str, Any]]:
    """Past states of the thread, newest first."""
    return await history(thread_id, HistoryRequest(limit=limit, before=before), tenant, resources)


@router.post("/{thread_id}/history")
@stops_when_client_leaves
async def history(
    thread_id: uuid.UUID, body: HistoryRequest, tenant: TenantDep, resources: ResourcesDep
) -> list[dict[str, Any]]:
    thread = await existing_thread(resources, tenant, thread_id)
    graph, config = await thread_graph(resources, tenant, thread)
    before: RunnableConfig | None = None
    if isinstance(body.before, str):
        before = {"configurable": {"checkpoint_id": body.before}}
    elif body.before is not None:
        before = {"configurable": dict(body.before.get("configurable") or body.before)}
    states = []
    async for snapshot in graph.aget_state_history(
        config, filter=body.metadata, before=before, limit=body.limit
    ):
        states.append(snapshot_json(snapshot))
    return states
