"""The long-term memory store, as langgraph-api serves it (``/store/*``), over the caller's tenant's
part of LangGraph's Postgres store: the namespaces a tenant sees are its own, unmarked."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, HTTPException, Query, Response
from pydantic import BaseModel, Field, field_validator

from master_agent.service.client_gone import stops_when_client_leaves
from master_agent.service.deps import ResourcesDep, TenantDep
from master_agent.service.limits import LangGraphBody, StrictJsonRoute

#: The longest TTL an item may have: beyond this, expiry times leave the calendar.
MAX_TTL_MINUTES = 100 * 366 * 24 * 60

router = APIRouter(prefix="/store", tags=["store"], route_class=StrictJsonRoute)

MAX_LABELS = 20


def _check_namespace(value: list[str] | None) -> list[str] | None:
    for label in value or ():
        if not label or "." in label or "\x00" in label:
            raise ValueError(f"namespace label {label!r} must be a non-empty string without periods or NUL")
    if value is not None and len(value) > MAX_LABELS:
        raise ValueError(f"at most {MAX_LABELS} labels")
    return value


class StoreItem(BaseModel):
    namespace: list[str]
    key: str
    value: dict[str, Any]
    created_at: str
    updated_at: str


class StoreSearchItem(StoreItem):
    score: float | None = None


class StorePut(LangGraphBody):
    namespace: list[str] = Field(min_length=1)
    key: str = Field(min_length=1, max_length=1024)
    value: dict[str, Any]
    index: Literal[False] | list[str] | None = Field(
        default=None,
        description="JSON paths of the value to embed for semantic search; false: not indexed; unset: "
        "the store's default fields.",
    )
    ttl: float | None = Field(
        default=None,
        gt=0,
        le=MAX_TTL_MINUTES,
        description="Minutes until the item expires (at most 100 years).",
    )

    _namespace = field_validator("namespace")(_check_namespace)


class StoreDelete(LangGraphBody):
    namespace: list[str] = Field(min_length=1)
    key: str = Field(min_length=1, max_length=1024)

    _namespace = field_validator("namespace")(_check_namespace)


#: The comparisons a store search's ``filter`` may make on a field.
FILTER_OPERATORS = frozenset({"$eq", "$ne", "$gt", "$gte", "$lt", "$lte"})


class StoreSearch(LangGraphBody):
    namespace_prefix: list[str] = Field(default_factory=list)
    filter: dict[str, Any] | None = None
    limit: int = Field(default=10, ge=1, le=1000)
    offset: int = Field(default=0, ge=0)
    query: str | None = Field(default=None, max_length=20_000, description="Semantic search text.")
    refresh_ttl: bool | None = None

    _namespace = field_validator("namespace_prefix")(_check_namespace)

    @field_validator("filter")
    @classmethod
    def _known_operators(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        # A value that is an object is a comparison: LangGraph's store knows only these operators
        # (anything else failed inside it).
        for key, condition in (value or {}).items():
            if isinstance(condition, dict):
                unknown = sorted(set(condition) - FILTER_OPERATORS)
                if unknown:
                    raise ValueError(f"{key!r}: unknown operators {unknown}; use {sorted(FILTER_OPERATORS)}")
        return value


class StoreListNamespaces(LangGraphBody):
    prefix: list[str] | None = None
    suffix: list[str] | None = None
    max_depth: int | None = Field(default=None, ge=1)
    limit: int = Field(default=100, ge=1, le=1000)
    offset: int = Field(default=0, ge=0)

    _namespaces = field_validator("prefix", "suffix")(_check_namespace)


class StoreSearchResult(BaseModel):
    items: list[StoreSearchItem]


class StoreNamespaces(BaseModel):
    namespaces: list[list[str]]


@router.put("/items", status_code=204, response_class=Response)
async def put_item(body: StorePut, tenant: TenantDep, resources: ResourcesDep) -> Response:
    """Store or replace an item (re-embedded for semantic search unless ``index`` is false)."""
    await resources.tenant_store(tenant).aput(
        tuple(body.namespace), body.key, body.value, index=body.index, ttl=body.ttl
    )
    return Response(status_code=204)


@router.get("/items", response_model=StoreItem | None)
@stops_when_client_leaves
async def get_item(
    tenant: TenantDep,
    resources: ResourcesDep,
    key: Annotated[str, Query(min_length=1, max_length=1024)],
    namespace: Annotated[str, Query(description="Labels joined by '.'.")] = "",
    refresh_ttl: bool | None = None,
) -> dict[str, Any] | None:
    """One item, or null when there is none (as langgraph-api answers)."""
    labels = namespace.split(".") if namespace else []
    try:
        _check_namespace(labels)
    except ValueError as error:
        raise HTTPException(422, detail=f"namespace: {error}") from None
    item = await resources.tenant_store(tenant).aget(tuple(labels), key, refresh_ttl=refresh_ttl)
    return None if item is None else item.dict()


@router.delete("/items", status_code=204, response_class=Response)
async def delete_item(body: StoreDelete, tenant: TenantDep, resources: ResourcesDep) -> Response:
    await resources.tenant_store(tenant).adelete(tuple(body.namespace), body.key)
    return Response(status_code=204)


@router.post("/items/search", response_model=StoreSearchResult)
@stops_when_client_leaves
async def search_items(body: StoreSearch, tenant: TenantDep, resources: ResourcesDep) -> dict[str, Any]:
    """Items under a namespace prefix: by value ``filter``, and nearest in meaning to ``query``."""
    items = await resources.tenant_store(tenant).asearch(
        tuple(body.namespace_prefix),
        query=body.query,
        filter=body.filter,
        limit=body.limit,
        offset=body.offset,
        refresh_ttl=body.refresh_ttl,
    )
    return {"items": [item.dict() for item in items]}


@router.post("/namespaces", response_model=StoreNamespaces)
@stops_when_client_leaves
async def list_namespaces(
    body: StoreListNamespaces, tenant: TenantDep, resources: ResourcesDep
) -> dict[str, Any]:
    found = await resources.tenant_store(tenant).alist_namespaces(
        prefix=tuple(body.prefix) if body.prefix else None,
        suffix=tuple(body.suffix) if body.suffix else None,
        max_depth=body.max_depth,
        limit=body.limit,
        offset=body.offset,
    )
    return {"namespaces": [list(namespace) for namespace in found]}
