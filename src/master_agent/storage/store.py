"""Long-term memory: LangGraph's own Postgres store with its pgvector index, one per process, and the
view of it each tenant gets.

Every namespace a tenant names is stored under a first label of its own (``tenant:<id>``), added on the
way in and removed on the way out, so the same ``TenantStore`` serves the ``/store`` API and the graphs
(``get_store()``, ``Runtime.store``) and no tenant reads another's items, whatever prefix it searches.

The index embeds with the configured embedder (``store.index`` of ``langgraph.json``: dims, embed,
fields). Its vectors are of one embedder: when the embedder (or its size) changes, the vectors are
rebuilt from the stored items on the next start, as village knowledge's are (with the default fields:
the fields an item was put with are not kept by the store).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Iterable, Sequence
from contextlib import asynccontextmanager
from typing import Any

from langgraph.store.base import (
    BaseStore,
    GetOp,
    IndexConfig,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchOp,
    TTLConfig,
)
from langgraph.store.postgres.aio import AsyncPostgresStore
from psycopg_pool import AsyncConnectionPool

from master_agent.models.embeddings import Embedder
from master_agent.storage.migrations import migration_lock

logger = logging.getLogger(__name__)

TENANT_LABEL_PREFIX = "tenant:"
#: Items re-embedded per round trip when the index is rebuilt for a new embedder.
REINDEX_BATCH = 200

STORE_INDEX_STATE = """
CREATE TABLE IF NOT EXISTS store_index_state (
    only_row boolean PRIMARY KEY DEFAULT true CHECK (only_row),
    embedding_model text NOT NULL,
    embedding_dim integer NOT NULL
)
"""


def tenant_label(tenant_id: str) -> str:
    # A namespace label may hold no period (the store joins labels with them).
    return TENANT_LABEL_PREFIX + tenant_id.replace("%", "%25").replace(".", "%2E")


class TenantStore(BaseStore):
    """One tenant's part of the shared store: namespaces are the tenant's own, with no mark of it."""

    def __init__(self, inner: BaseStore, tenant_id: str) -> None:
        self.inner = inner
        self.tenant_id = tenant_id
        self.label = tenant_label(tenant_id)
        self.supports_ttl = inner.supports_ttl
        self.ttl_config = inner.ttl_config

    def _in(self, namespace: tuple[str, ...]) -> tuple[str, ...]:
        return (self.label, *namespace)

    def _out(self, namespace: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(namespace[1:]) if namespace[:1] == (self.label,) else tuple(namespace)

    def _op(self, op: Op) -> Op:
        if isinstance(op, GetOp | PutOp):
            return op._replace(namespace=self._in(op.namespace))
        if isinstance(op, SearchOp):
            return op._replace(namespace_prefix=self._in(op.namespace_prefix))
        if isinstance(op, ListNamespacesOp):
            conditions = list(op.match_conditions or ())
            prefixed = False
            for index, condition in enumerate(conditions):
                if condition.match_type == "prefix" and not prefixed:
                    conditions[index] = MatchCondition("prefix", self._in(tuple(condition.path)))
                    prefixed = True
            if not prefixed:
                conditions.insert(0, MatchCondition("prefix", (self.label,)))
            depth = None if op.max_depth is None else op.max_depth + 1
            return op._replace(match_conditions=tuple(conditions), max_depth=depth)
        raise TypeError(f"unknown store operation {type(op).__name__}")

    def _result(self, result: Any) -> Any:
        if isinstance(result, Item):
            result.namespace = self._out(result.namespace)
            return result
        if isinstance(result, list):
            return [self._result(entry) for entry in result]
        if isinstance(result, tuple):
            return self._out(result)
        return result

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        return [self._result(result) for result in self.inner.batch([self._op(op) for op in ops])]

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        results = await self.inner.abatch([self._op(op) for op in ops])
        return [self._result(result) for result in results]


def store_index(embedder: Embedder, fields: Sequence[str]) -> IndexConfig:
    async def embed(texts: Sequence[str]) -> list[list[float]]:
        return await embedder.embed(list(texts))

    return IndexConfig(dims=embedder.dim, embed=embed, fields=list(fields))


@asynccontextmanager
async def open_store(
    pool: AsyncConnectionPool[Any],
    embedder: Embedder,
    *,
    fields: Sequence[str] = ("$",),
    ttl: TTLConfig | None = None,
    sweep: bool = False,
) -> AsyncIterator[AsyncPostgresStore]:
    """The process's store on ``pool``, its tables set up (under the migration lock), its vectors those
    of ``embedder``; ``sweep``: also delete expired items every ``sweep_interval_minutes``."""
    store = AsyncPostgresStore(pool, index=store_index(embedder, fields), ttl=ttl)  # type: ignore[arg-type]
    async with pool.connection() as conn, migration_lock(conn):
        await store.setup()
        await _match_index_to(conn, store, embedder)
    if sweep and ttl:
        await store.start_ttl_sweeper()
    try:
        yield store
    finally:
        if sweep and ttl:
            await store.stop_ttl_sweeper(timeout=5)


async def _match_index_to(conn: Any, store: AsyncPostgresStore, embedder: Embedder) -> None:
    """Rebuild the vectors when they are not ``embedder``'s (a new model or size)."""
    await conn.execute(STORE_INDEX_STATE)
    row = await (
        await conn.execute("SELECT embedding_model, embedding_dim FROM store_index_state")
    ).fetchone()
    if row is not None and (row["embedding_model"], row["embedding_dim"]) == (
        embedder.model_name,
        embedder.dim,
    ):
        return
    if row is not None:
        logger.info(
            "store index: %s (%d) -> %s (%d), re-embedding the stored items",
            row["embedding_model"],
            row["embedding_dim"],
            embedder.model_name,
            embedder.dim,
        )
        await conn.execute("TRUNCATE store_vectors")
        if row["embedding_dim"] != embedder.dim:
            await conn.execute(
                f"ALTER TABLE store_vectors ALTER COLUMN embedding TYPE vector({int(embedder.dim)})"
            )
        last: tuple[str, str] = ("", "")
        while True:
            items = await (
                await conn.execute(
                    "SELECT prefix, key, value, ttl_minutes FROM store WHERE (prefix, key) > (%s, %s) "
                    "ORDER BY prefix, key LIMIT %s",
                    (*last, REINDEX_BATCH),
                )
            ).fetchall()
            if not items:
                break
            await store.abatch(
                [
                    PutOp(
                        tuple(item["prefix"].split(".")), item["key"], item["value"], ttl=item["ttl_minutes"]
                    )
                    for item in items
                ]
            )
            last = (items[-1]["prefix"], items[-1]["key"])
    await conn.execute(
        "INSERT INTO store_index_state (embedding_model, embedding_dim) VALUES (%s, %s) "
        "ON CONFLICT (only_row) DO UPDATE SET embedding_model = EXCLUDED.embedding_model, "
        "embedding_dim = EXCLUDED.embedding_dim",
        (embedder.model_name, embedder.dim),
    )
