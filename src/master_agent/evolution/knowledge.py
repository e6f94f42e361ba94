"""Village knowledge: patterns that worked (or did not), searchable by meaning, kept per tenant.

Every tenant query runs in ``tenant_session``: as the ``master_agent_tenant`` role with
``master_agent.tenant_id`` set, so row-level security in Postgres (not a WHERE clause here) limits it
to the tenant's private patterns and the shared ones.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any, Literal

from psycopg import AsyncConnection
from psycopg_pool import AsyncConnectionPool
from pydantic import BaseModel, Field

from master_agent.models.embeddings import Embedder, to_pgvector

TENANT_ROLE = "master_agent_tenant"

INSERT_PATTERN = """
INSERT INTO village_knowledge (pattern_id, tenant_id, visibility, pattern_name, domain, description,
    problem_type, root_cause, intervention, expected_outcome, evidence, applicability, confidence,
    success_rate, source, embedding, embedding_model, embedding_dim, pattern_key)
VALUES (%(pattern_id)s, %(tenant_id)s, %(visibility)s, %(pattern_name)s, %(domain)s, %(description)s,
    %(problem_type)s, %(root_cause)s, %(intervention)s, %(expected_outcome)s, %(evidence)s,
    %(applicability)s, %(confidence)s, %(success_rate)s, %(source)s, %(embedding)s::vector,
    %(embedding_model)s, %(embedding_dim)s, %(pattern_key)s)
"""
#: What a read returns of a pattern; a shared pattern does not say whose it was.
PATTERN_COLUMNS = """pattern_id,
       CASE WHEN tenant_id = current_setting('master_agent.tenant_id', true) THEN tenant_id END AS tenant_id,
       visibility, pattern_name, domain, description, problem_type, root_cause,
       intervention, expected_outcome, evidence, applicability, confidence, reuse_count, success_rate"""
#: Other dimensions: the same search, exact (no index yet for them).
SEARCH_ANY = f"""
SELECT {PATTERN_COLUMNS},
       1 - (embedding <=> %(query)s::vector) AS similarity
FROM village_knowledge
WHERE embedding_dim = %(dim)s AND embedding_model = %(model)s
ORDER BY embedding <=> %(query)s::vector
LIMIT %(limit)s
"""
SEARCH_384 = f"""
SELECT {PATTERN_COLUMNS},
       1 - (embedding::vector(384) <=> %(query)s::vector(384)) AS similarity
FROM village_knowledge
WHERE embedding_dim = 384 AND embedding_model = %(model)s
ORDER BY embedding::vector(384) <=> %(query)s::vector(384)
LIMIT %(limit)s
"""


class PatternCreate(BaseModel):
    """A pattern to store."""

    pattern_name: str = Field(min_length=1, max_length=200)
    domain: str
    description: str = Field(min_length=1)
    problem_type: str
    root_cause: str | None = None
    intervention: dict[str, Any] = Field(default_factory=dict)
    expected_outcome: str | None = None
    evidence: list[Any] = Field(default_factory=list)
    applicability: dict[str, Any] = Field(default_factory=dict)
    confidence: float = Field(default=0.5, ge=0, le=1)
    success_rate: float | None = Field(default=None, ge=0, le=1)
    source: str | None = None
    visibility: Literal["private", "shared"] = "private"


class PatternMatch(BaseModel):
    """A stored pattern found by a search."""

    pattern_id: uuid.UUID
    tenant_id: str | None
    """The owner, when it is the caller (None on another tenant's shared pattern)."""
    visibility: str
    pattern_name: str
    domain: str
    description: str
    problem_type: str
    root_cause: str | None
    intervention: dict[str, Any]
    expected_outcome: str | None
    evidence: list[Any]
    applicability: dict[str, Any]
    confidence: float
    reuse_count: int
    success_rate: float | None
    similarity: float


@asynccontextmanager
async def tenant_session(
    pool: AsyncConnectionPool[Any], tenant_id: str
) -> AsyncIterator[AsyncConnection[Any]]:
    """A transaction acting as ``tenant_id`` under row-level security."""
    async with pool.connection() as conn, conn.transaction():
        await conn.execute(f"SET LOCAL ROLE {TENANT_ROLE}")
        await conn.execute("SELECT set_config('master_agent.tenant_id', %s, true)", (tenant_id,))
        yield conn


def pattern_text(pattern: PatternCreate) -> str:
    """What is embedded: the words a goal would share with the pattern."""
    return " ".join(
        part for part in (pattern.pattern_name, pattern.problem_type.replace("_", " "), pattern.description,
                          pattern.root_cause or "") if part
    )  # fmt: skip


SELECT_ONE = f"""
SELECT {PATTERN_COLUMNS},
       1.0 AS similarity
FROM village_knowledge WHERE pattern_id = %s
"""

LIST_PATTERNS = f"""
SELECT {PATTERN_COLUMNS},
       1.0 AS similarity
FROM village_knowledge ORDER BY confidence DESC, reuse_count DESC, pattern_name, pattern_id LIMIT %s OFFSET %s
"""

STALE_VECTORS = """
SELECT pattern_id FROM village_knowledge
WHERE %(everything)s OR embedding IS NULL OR embedding_model IS DISTINCT FROM %(model)s
   OR embedding_dim IS DISTINCT FROM %(dim)s
ORDER BY pattern_id
"""
PATTERN_TEXTS = """
SELECT pattern_id, pattern_name, domain, description, problem_type, root_cause
FROM village_knowledge WHERE pattern_id = ANY(%s)
"""
REEMBED = """
UPDATE village_knowledge SET embedding = %s::vector, embedding_model = %s, embedding_dim = %s
WHERE pattern_id = %s
"""


class KnowledgeStore:
    def __init__(self, pool: AsyncConnectionPool[Any], embedder: Embedder) -> None:
        self.pool = pool
        self.embedder = embedder

    async def add(self, tenant_id: str, pattern: PatternCreate) -> uuid.UUID:
        """Store a pattern as the tenant (row-level security checks it is the tenant's own)."""
        async with tenant_session(self.pool, tenant_id) as conn:
            return await self.insert(conn, tenant_id, pattern)

    async def insert(
        self, conn: AsyncConnection[Any], tenant_id: str, pattern: PatternCreate, *, key: str | None = None
    ) -> uuid.UUID:
        """Embed and store a pattern on ``conn`` (in its transaction); ``key`` names it for later
        reinforcement (one pattern per key)."""
        [vector] = await self.embedder.embed([pattern_text(pattern)])
        pattern_id = uuid.uuid4()
        row = {
            **pattern.model_dump(),
            "pattern_id": pattern_id,
            "tenant_id": tenant_id,
            "intervention": json.dumps(pattern.intervention),
            "evidence": json.dumps(pattern.evidence),
            "applicability": json.dumps(pattern.applicability),
            "embedding": to_pgvector(vector),
            "embedding_model": self.embedder.model_name,
            "embedding_dim": self.embedder.dim,
            "pattern_key": key,
        }
        await conn.execute(INSERT_PATTERN, row)
        return pattern_id

    async def get(self, tenant_id: str, pattern_id: uuid.UUID) -> PatternMatch | None:
        """One pattern the tenant may see (its own or a shared one), else None."""
        async with tenant_session(self.pool, tenant_id) as conn:
            row = await (await conn.execute(SELECT_ONE, (pattern_id,))).fetchone()
        return PatternMatch.model_validate(row) if row else None

    async def list_patterns(self, tenant_id: str, *, limit: int = 50, offset: int = 0) -> list[PatternMatch]:
        """The patterns the tenant may see (its own and the shared ones), most confident first."""
        async with tenant_session(self.pool, tenant_id) as conn:
            rows = await (await conn.execute(LIST_PATTERNS, (limit, offset))).fetchall()
        return [PatternMatch.model_validate(row) for row in rows]

    async def reembed(self, *, batch: int = 64, everything: bool = False) -> int:
        """Rebuild the vectors not made by the current embedder (all of them with ``everything``), so a
        change of provider or dimension never mixes spaces; returns how many were rebuilt. Runs as the
        app role: it maintains every tenant's rows."""
        async with self.pool.connection() as conn:
            cursor = await conn.execute(
                STALE_VECTORS,
                {"model": self.embedder.model_name, "dim": self.embedder.dim, "everything": everything},
            )
            ids = [row["pattern_id"] for row in await cursor.fetchall()]
        for start in range(0, len(ids), batch):
            chunk = ids[start : start + batch]
            async with self.pool.connection() as conn:
                rows = await (await conn.execute(PATTERN_TEXTS, (chunk,))).fetchall()
            vectors = await self.embedder.embed(
                [pattern_text(PatternCreate.model_validate(row)) for row in rows]
            )
            async with self.pool.connection() as conn, conn.transaction():
                for row, vector in zip(rows, vectors, strict=True):
                    await conn.execute(
                        REEMBED,
                        (to_pgvector(vector), self.embedder.model_name, self.embedder.dim, row["pattern_id"]),
                    )
        return len(ids)

    async def search(self, tenant_id: str, query: str, *, limit: int = 5) -> list[PatternMatch]:
        """Patterns nearest in meaning to ``query`` among the tenant's private and the shared ones."""
        [vector] = await self.embedder.embed([query])
        return await self.search_vector(tenant_id, vector, limit=limit)

    async def search_vector(
        self,
        tenant_id: str,
        vector: Sequence[float],
        *,
        limit: int = 5,
        model: str | None = None,
        exact: bool = False,
    ) -> list[PatternMatch]:
        """Patterns nearest to ``vector`` (made by ``model``, the store's embedder by default);
        ``exact`` scans every row instead of using the approximate HNSW index."""
        params = {
            "query": to_pgvector(vector),
            "model": model or self.embedder.model_name,
            "dim": len(vector),
            "limit": limit,
        }
        # The 384-d query repeats the index expression so the HNSW index serves it.
        statement = SEARCH_384 if len(vector) == 384 and not exact else SEARCH_ANY
        async with tenant_session(self.pool, tenant_id) as conn:
            cursor = await conn.execute(statement, params)
            rows = await cursor.fetchall()
        return [PatternMatch.model_validate(row) for row in rows]
