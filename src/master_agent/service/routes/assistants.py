"""LangGraph-compatible assistants: create, search, count, get, patch (a new version), delete, versions,
latest (promote or roll back), graph, schemas and subgraphs. An assistant carrying an ``agent_spec`` is
one of the tenant's own agents: it is validated against the tenant's catalogue, and every change of it
changes the tenant's capability version, so the next run builds the new graph."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any, Literal, cast

from fastapi import APIRouter, HTTPException, Query, Response
from langchain_core.runnables import RunnableConfig
from pydantic import Field

from master_agent.capabilities.agents import agent_document_schema
from master_agent.capabilities.assistants import (
    Assistant,
    AssistantVersion,
    SortBy,
    assistant_versions,
    count_assistants,
    resolve_assistant,
    search_assistants,
)
from master_agent.runtime.graph_runs import shape_of, thread_graph_config
from master_agent.runtime.graphs import graph_for, graph_ids, graph_registration
from master_agent.runtime.loop import CompiledLoop, nested_agents
from master_agent.runtime.tenant_agents import (
    change_assistant,
    promote_version,
    remove_assistant,
    save_assistant,
)
from master_agent.service.client_gone import stops_when_client_leaves
from master_agent.service.deps import QueueDep, ResourcesDep, TenantDep
from master_agent.service.limits import LangGraphBody, Metadata, StrictJsonRoute, page
from master_agent.service.routes.runs import remove_assistant_runs
from master_agent.service.routes.threads import remove_thread
from master_agent.service.threads import search_threads

router = APIRouter(prefix="/assistants", tags=["assistants"], route_class=StrictJsonRoute)


class AssistantCreate(LangGraphBody):
    graph_id: str
    assistant_id: uuid.UUID | None = None
    config: dict[str, Any] = Field(default_factory=dict)
    context: dict[str, Any] = Field(default_factory=dict)
    metadata: Metadata = Field(default_factory=dict)
    if_exists: Literal["raise", "do_nothing"] = "raise"
    name: str | None = Field(default=None, max_length=200)
    description: str | None = Field(default=None, max_length=2000)


class AssistantPatch(LangGraphBody):
    graph_id: str | None = None
    config: dict[str, Any] | None = None
    context: dict[str, Any] | None = None
    metadata: Metadata | None = None
    name: str | None = Field(default=None, max_length=200)
    description: str | None = Field(default=None, max_length=2000)


AssistantField = Literal[
    "assistant_id",
    "graph_id",
    "name",
    "description",
    "config",
    "context",
    "created_at",
    "updated_at",
    "metadata",
    "version",
]


class AssistantSearch(LangGraphBody):
    metadata: Metadata = Field(default_factory=dict)
    graph_id: str | None = None
    name: str | None = None
    limit: int = Field(default=10, ge=1, le=1000)
    offset: int = Field(default=0, ge=0)
    sort_by: SortBy | None = None
    sort_order: Literal["asc", "desc"] | None = None
    select: list[AssistantField] | None = None


class AssistantCount(LangGraphBody):
    metadata: Metadata = Field(default_factory=dict)
    graph_id: str | None = None
    name: str | None = None


class VersionSearch(LangGraphBody):
    metadata: Metadata = Field(default_factory=dict)
    limit: int = Field(default=10, ge=1, le=1000)
    offset: int = Field(default=0, ge=0)


class VersionChange(LangGraphBody):
    version: int = Field(ge=1)


@router.post("", response_model=Assistant)
async def create(body: AssistantCreate, tenant: TenantDep, resources: ResourcesDep) -> Assistant:
    return await save_assistant(
        resources,
        tenant,
        assistant_id=body.assistant_id or uuid.uuid4(),
        graph_id=body.graph_id,
        name=body.name,
        description=body.description,
        config=body.config,
        context=body.context,
        metadata=body.metadata,
        if_exists=body.if_exists,
    )


@router.post("/search", response_model=list[dict[str, Any]])
@stops_when_client_leaves
async def search(
    body: AssistantSearch, tenant: TenantDep, resources: ResourcesDep, response: Response
) -> list[dict[str, Any]]:
    """The tenant's assistants (its graphs' own first); ``select`` keeps only those fields."""
    found, total = await search_assistants(
        resources.database.pool,
        tenant,
        graph_ids(resources),
        graph_id=body.graph_id,
        name=body.name,
        metadata=body.metadata,
        limit=body.limit,
        offset=body.offset,
        sort_by=body.sort_by,
        sort_order=body.sort_order,
    )
    return page(response, found, body.offset, total, body.select)


@router.post("/count", response_model=int)
@stops_when_client_leaves
async def count(body: AssistantCount, tenant: TenantDep, resources: ResourcesDep) -> int:
    return await count_assistants(
        resources.database.pool,
        tenant,
        graph_ids(resources),
        graph_id=body.graph_id,
        name=body.name,
        metadata=body.metadata,
    )


@router.get("/agent-spec/schema")
async def agent_spec_schema() -> dict[str, Any]:
    """The JSON Schema of a tenant agent's document (``context.agent_spec`` of an assistant)."""
    return agent_document_schema()


async def _assistant(resources: ResourcesDep, tenant: str, assistant_id: str) -> Assistant:
    assistant = await resolve_assistant(resources.database.pool, tenant, assistant_id, graph_ids(resources))
    if assistant is None:
        raise HTTPException(404, detail=f"Assistant {assistant_id} not found")
    return assistant


@router.get("/{assistant_id}", response_model=Assistant)
@stops_when_client_leaves
async def get(assistant_id: str, tenant: TenantDep, resources: ResourcesDep) -> Assistant:
    return await _assistant(resources, tenant, assistant_id)


@router.patch("/{assistant_id}", response_model=Assistant)
async def patch(
    assistant_id: str, body: AssistantPatch, tenant: TenantDep, resources: ResourcesDep
) -> Assistant:
    current = await _assistant(resources, tenant, assistant_id)
    return await change_assistant(
        resources,
        tenant,
        current,
        graph_id=body.graph_id,
        name=body.name,
        description=body.description,
        config=body.config,
        context=body.context,
        metadata=body.metadata,
    )


@router.delete("/{assistant_id}", status_code=204)
async def delete(
    assistant_id: str,
    tenant: TenantDep,
    resources: ResourcesDep,
    queue: QueueDep,
    delete_threads: bool = Query(
        default=False, description="Also delete the threads whose metadata.assistant_id is this assistant."
    ),
) -> Response:
    """The assistant goes, with its versions and its runs (the active ones cancelled first), as in
    langgraph-api (with ``delete_threads``, its threads are deleted before that)."""
    current = await _assistant(resources, tenant, assistant_id)
    if delete_threads:
        removed = True
        while removed:  # a page at a time, until a page removes nothing
            found, _ = await search_threads(
                resources.database.pool,
                tenant,
                metadata={"assistant_id": str(current.assistant_id)},
                status=None,
                limit=100,
                offset=0,
            )
            removed = False
            for thread in found:
                removed |= await remove_thread(resources, queue, tenant, thread.thread_id)
    await remove_assistant_runs(queue, tenant, current.assistant_id)
    await remove_assistant(resources, tenant, current)
    return Response(status_code=204)


@router.post("/{assistant_id}/versions", response_model=list[AssistantVersion])
@stops_when_client_leaves
async def versions(
    assistant_id: str, tenant: TenantDep, resources: ResourcesDep, body: VersionSearch | None = None
) -> list[AssistantVersion]:
    current = await _assistant(resources, tenant, assistant_id)
    search = body or VersionSearch()
    return await assistant_versions(
        resources.database.pool,
        tenant,
        current.assistant_id,
        metadata=search.metadata,
        limit=search.limit,
        offset=search.offset,
    )


@router.get("/{assistant_id}/versions", response_model=list[AssistantVersion])
@stops_when_client_leaves
async def list_versions(
    assistant_id: str,
    tenant: TenantDep,
    resources: ResourcesDep,
    limit: int = Query(default=10, ge=1, le=1000),
    offset: int = Query(default=0, ge=0),
) -> list[AssistantVersion]:
    return await versions(assistant_id, tenant, resources, VersionSearch(limit=limit, offset=offset))


@router.post("/{assistant_id}/latest", response_model=Assistant)
async def set_latest(
    assistant_id: str, body: VersionChange, tenant: TenantDep, resources: ResourcesDep
) -> Assistant:
    current = await _assistant(resources, tenant, assistant_id)
    return await promote_version(resources, tenant, current, body.version)


def assistant_graph_config(tenant: str, assistant: Assistant) -> RunnableConfig:
    """The config an assistant's graph is built with (a tenant agent: its live version)."""
    configurable = dict(shape_of(assistant.config)["configurable"])
    if assistant.agent_spec() is not None:
        configurable.update(agent_id=str(assistant.assistant_id), agent_version=assistant.version)
    return thread_graph_config(tenant, "graph", configurable)


async def _graph(resources: ResourcesDep, tenant: str, assistant: Assistant) -> CompiledLoop:
    return await graph_for(resources, assistant.graph_id, assistant_graph_config(tenant, assistant))


def xray_depth(xray: str | None) -> bool | int:
    """``xray`` as langgraph-api reads it: true/false, or how many subgraph levels to draw (a positive
    count). Typed ``bool | int``, FastAPI took ``1`` for True and drew every level."""
    if not xray or xray in ("false", "False"):
        return False
    if xray in ("true", "True"):
        return True
    try:
        depth = int(xray)
    except ValueError:
        depth = 0
    if depth <= 0:
        raise HTTPException(
            422, detail=f"xray: expected true, false or a positive count of levels, got {xray!r}"
        )
    return depth


@router.get("/{assistant_id}/graph")
async def get_graph(
    assistant_id: str,
    tenant: TenantDep,
    resources: ResourcesDep,
    xray: str | None = Query(default=None),
) -> dict[str, Any]:
    assistant = await _assistant(resources, tenant, assistant_id)
    drawable = (await _graph(resources, tenant, assistant)).get_graph(xray=xray_depth(xray))
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


def _state_schema(graph: CompiledLoop) -> dict[str, Any]:
    schema: dict[str, Any] = graph.get_output_jsonschema()
    return {**schema, "title": graph.get_name("State")}


def _schema_of(make: Callable[[], dict[str, Any] | None]) -> dict[str, Any] | None:
    # As langgraph-api does: a graph that cannot describe one of its schemas gets null for it.
    try:
        return make()
    except Exception:
        return None


def graph_schemas(
    graph: CompiledLoop, config_schema: Callable[[], dict[str, Any]] | None = None
) -> dict[str, Any]:
    """input, output, state, config and context schemas of a compiled graph (langgraph-api's shape);
    ``config_schema``: the one its registration declares for ``configurable`` (None: the graph's own)."""
    configurable = (
        config_schema()
        if config_schema is not None
        else _schema_of(lambda: graph.get_config_jsonschema().get("properties", {}).get("configurable", {}))
    )
    return {
        "input_schema": _schema_of(graph.get_input_jsonschema),
        "output_schema": _schema_of(graph.get_output_jsonschema),
        "state_schema": _schema_of(lambda: _state_schema(graph)),
        "config_schema": configurable,
        "context_schema": _schema_of(graph.get_context_jsonschema),
    }


@router.get("/{assistant_id}/schemas")
async def schemas(assistant_id: str, tenant: TenantDep, resources: ResourcesDep) -> dict[str, Any]:
    assistant = await _assistant(resources, tenant, assistant_id)
    graph = await _graph(resources, tenant, assistant)
    declared = graph_registration(resources, assistant.graph_id).config_schema
    return {"graph_id": assistant.graph_id, **graph_schemas(graph, declared)}


@router.get("/{assistant_id}/subgraphs")
@router.get("/{assistant_id}/subgraphs/{namespace:path}")
async def subgraphs(
    assistant_id: str,
    tenant: TenantDep,
    resources: ResourcesDep,
    namespace: str | None = None,
    recurse: bool = Query(default=False),
) -> dict[str, Any]:
    """The graphs nested in the assistant's graph by namespace (``a|b``): for the master graph and
    tenant agents, the sub-agents each agent may call, each with its own argument and answer schemas."""
    assistant = await _assistant(resources, tenant, assistant_id)
    graph = await _graph(resources, tenant, assistant)
    if not nested_agents(graph):
        # A graph with compiled graphs as nodes: LangGraph's own subgraphs, as langgraph-api lists them.
        return {
            name: graph_schemas(cast(CompiledLoop, nested))
            async for name, nested in graph.aget_subgraphs(namespace=namespace or None, recurse=recurse)
        }
    prefix = [part for part in (namespace or "").split("|") if part]
    for part in prefix:
        nested = nested_agents(graph).get(part)
        if nested is None:
            raise HTTPException(404, detail=f"namespace: no subgraph {namespace!r}")
        graph = nested.graph
    found: dict[str, Any] = {}
    pending = [(prefix, graph)]
    while pending:
        path, parent = pending.pop(0)
        for name, nested in nested_agents(parent).items():
            key = "|".join([*path, name])
            found[key] = {
                **graph_schemas(nested.graph),
                # What a parent sends it and what it answers (its envelope's ``data``).
                "input_schema": nested.spec["input_schema"].model_json_schema(),
                "output_schema": nested.spec["output_schema"].model_json_schema(),
            }
            if recurse:
                pending.append(([*path, name], nested.graph))
    return found
