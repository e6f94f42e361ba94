"""LangGraph-compatible assistants: search, get, graph."""

from __future__ import annotations

from typing import Any, Literal

from fastapi import APIRouter, HTTPException, Query, Response
from pydantic import BaseModel, ConfigDict, Field

from master_agent.runtime.graph_runs import shape_of, thread_graph_config
from master_agent.runtime.graphs import graph_for, graph_ids
from master_agent.service.assistants import Assistant, resolve_assistant, search_assistants
from master_agent.service.deps import ResourcesDep, TenantDep
from master_agent.service.limits import Metadata, StrictJsonRoute

router = APIRouter(prefix="/assistants", tags=["assistants"], route_class=StrictJsonRoute)


class AssistantSearch(BaseModel):
    model_config = ConfigDict(extra="forbid")

    metadata: Metadata = Field(default_factory=dict)
    graph_id: str | None = None
    name: str | None = None
    limit: int = Field(default=10, ge=1, le=1000)
    offset: int = Field(default=0, ge=0)
    sort_by: Literal["assistant_id", "graph_id", "name", "created_at", "updated_at"] | None = None
    sort_order: Literal["asc", "desc"] | None = None
    select: list[str] | None = None


@router.post("/search", response_model=list[Assistant])
async def search(
    body: AssistantSearch, tenant: TenantDep, resources: ResourcesDep, response: Response
) -> list[Assistant]:
    found, total = await search_assistants(
        resources.database.pool,
        tenant,
        graph_ids(resources),
        graph_id=body.graph_id,
        name=body.name,
        metadata=body.metadata,
        limit=body.limit,
        offset=body.offset,
    )
    response.headers["X-Pagination-Total"] = str(total)
    return found


async def _assistant(resources: ResourcesDep, tenant: str, assistant_id: str) -> Assistant:
    assistant = await resolve_assistant(resources.database.pool, tenant, assistant_id, graph_ids(resources))
    if assistant is None:
        raise HTTPException(404, detail=f"Assistant {assistant_id} not found")
    return assistant


@router.get("/{assistant_id}", response_model=Assistant)
async def get(assistant_id: str, tenant: TenantDep, resources: ResourcesDep) -> Assistant:
    return await _assistant(resources, tenant, assistant_id)


@router.get("/{assistant_id}/graph")
async def get_graph(
    assistant_id: str,
    tenant: TenantDep,
    resources: ResourcesDep,
    xray: bool | int = Query(default=False),
) -> dict[str, Any]:
    assistant = await _assistant(resources, tenant, assistant_id)
    config = thread_graph_config(tenant, "graph", shape_of(assistant.config)["configurable"])
    graph = await graph_for(resources, assistant.graph_id, config)
    drawable = graph.get_graph(xray=xray)
    return {
        "nodes": [
            {"id": node.id, "type": "runnable", "data": {"name": node.name}}
            if node.id not in ("__end__",)
            else {"id": node.id}
            for node in drawable.nodes.values()
        ],
        "edges": [
            {
                "source": edge.source,
                "target": edge.target,
                **({"conditional": True} if edge.conditional else {}),
            }
            for edge in drawable.edges
        ],
    }
