"""LangGraph-compatible threads: create, get, search, delete, state, state update, history."""

from __future__ import annotations

import uuid
from typing import Any, Literal

from fastapi import APIRouter, HTTPException, Query, Response
from langchain_core.runnables import RunnableConfig
from langgraph.errors import InvalidUpdateError
from pydantic import BaseModel, ConfigDict, Field

from master_agent.routing.graph import FrontDoorState
from master_agent.runtime import MasterAgentState
from master_agent.service.deps import QueueDep, ResourcesDep, TenantDep
from master_agent.service.graph_state import snapshot_json, thread_graph
from master_agent.service.limits import Metadata, StrictJsonRoute
from master_agent.service.threads import Thread, create_thread, delete_thread, get_thread, search_threads

router = APIRouter(prefix="/threads", tags=["threads"], route_class=StrictJsonRoute)


class ThreadCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    metadata: Metadata = Field(default_factory=dict)
    thread_id: uuid.UUID | None = None
    if_exists: Literal["raise", "do_nothing"] = "raise"
    graph_id: str | None = None


class ThreadSearch(BaseModel):
    model_config = ConfigDict(extra="forbid")

    metadata: Metadata = Field(default_factory=dict)
    values: dict[str, Any] | None = None
    status: Literal["idle", "busy", "interrupted", "error"] | None = None
    limit: int = Field(default=10, ge=1, le=1000)
    offset: int = Field(default=0, ge=0)
    sort_by: str | None = None
    sort_order: Literal["asc", "desc"] | None = None
    select: list[str] | None = None


class StateUpdate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    values: dict[str, Any] | list[dict[str, Any]] | None = None
    as_node: str | None = None
    checkpoint: dict[str, Any] | None = None
    checkpoint_id: str | None = None


class HistoryRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    limit: int = Field(default=10, ge=1, le=1000)
    before: str | dict[str, Any] | None = None
    metadata: Metadata | None = None
    checkpoint: dict[str, Any] | None = None


#: Keys of the master graph's state: the agent loop's, and the chat front door's around it.
STATE_KEYS = frozenset(MasterAgentState.__annotations__) | frozenset(FrontDoorState.__annotations__)


def check_state_keys(field: str, values: dict[str, Any]) -> None:
    unknown = sorted(set(values) - STATE_KEYS)
    if unknown:
        raise HTTPException(422, detail=f"{field}: unknown state keys {unknown}; known: {sorted(STATE_KEYS)}")


async def existing_thread(resources: ResourcesDep, tenant: str, thread_id: uuid.UUID) -> Thread:
    thread = await get_thread(resources.database.pool, tenant, thread_id)
    if thread is None:
        raise HTTPException(404, detail=f"Thread with ID {thread_id} not found")
    return thread


@router.post("", response_model=Thread)
async def create(body: ThreadCreate, tenant: TenantDep, resources: ResourcesDep) -> Thread:
    created = await create_thread(resources.database.pool, tenant, body.metadata, body.thread_id)
    if created is not None:
        return created
    assert body.thread_id is not None
    existing = await get_thread(resources.database.pool, tenant, body.thread_id)
    if existing is None or body.if_exists == "raise":
        raise HTTPException(
            409,
            detail=f"Thread with ID {body.thread_id} already exists or was used before; use a new thread_id",
        )
    return existing


@router.get("/{thread_id}", response_model=Thread)
async def get(thread_id: uuid.UUID, tenant: TenantDep, resources: ResourcesDep) -> Thread:
    return await existing_thread(resources, tenant, thread_id)


@router.post("/search", response_model=list[Thread])
async def search(
    body: ThreadSearch, tenant: TenantDep, resources: ResourcesDep, response: Response
) -> list[Thread]:
    found, total = await search_threads(
        resources.database.pool,
        tenant,
        metadata=body.metadata,
        status=body.status,
        limit=body.limit,
        offset=body.offset,
    )
    response.headers["X-Pagination-Total"] = str(total)
    return found


@router.delete("/{thread_id}", status_code=204)
async def delete(
    thread_id: uuid.UUID, tenant: TenantDep, resources: ResourcesDep, queue: QueueDep
) -> Response:
    await existing_thread(resources, tenant, thread_id)
    # Its active runs stop first (in whichever process executes them), then it goes in one transaction.
    for run in await queue.list_for_thread(str(thread_id), limit=100, offset=0, status=None):
        if run.status in ("pending", "running") and await queue.cancel(str(run.run_id)):
            await queue.wait(str(run.run_id), within_s=resources.settings.run_lease_s)
    if not await delete_thread(resources.database.pool, tenant, thread_id):
        raise HTTPException(404, detail=f"Thread with ID {thread_id} not found")
    return Response(status_code=204)


@router.get("/{thread_id}/state")
async def get_state(
    thread_id: uuid.UUID, tenant: TenantDep, resources: ResourcesDep, subgraphs: bool = Query(default=False)
) -> dict[str, Any]:
    thread = await existing_thread(resources, tenant, thread_id)
    graph, config = await thread_graph(resources, tenant, thread)
    return snapshot_json(await graph.aget_state(config, subgraphs=subgraphs))


@router.post("/{thread_id}/state")
async def update_state(
    thread_id: uuid.UUID, body: StateUpdate, tenant: TenantDep, resources: ResourcesDep
) -> dict[str, Any]:
    thread = await existing_thread(resources, tenant, thread_id)
    if thread.status == "busy":
        raise HTTPException(
            409, detail="Thread is busy: wait for its run to finish before updating its state"
        )
    graph, config = await thread_graph(resources, tenant, thread)
    if body.checkpoint_id or body.checkpoint:
        checkpoint_id = body.checkpoint_id or (body.checkpoint or {}).get("checkpoint_id")
        config = {**config, "configurable": {**config["configurable"], "checkpoint_id": checkpoint_id}}
    if isinstance(body.values, list):
        raise HTTPException(422, detail="values: send one object of state keys")
    check_state_keys("values", body.values or {})
    try:
        updated = await graph.aupdate_state(config, body.values, as_node=body.as_node)
    except (InvalidUpdateError, ValueError, KeyError, TypeError) as error:
        field = "as_node" if body.as_node and "Node" in str(error) else "values"
        raise HTTPException(422, detail=f"{field}: {error}") from None
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


@router.post("/{thread_id}/history")
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
