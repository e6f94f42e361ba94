"""Evolution benchmarks, printed (never asserted).

1. Village-knowledge search at 100k stored patterns (384-d, the local embedder's size) on synthetic but
   structured data (patterns gathered around 500 topics): latency median / p95 of the approximate
   (HNSW) search through the tenant's row-level-security session, and its recall@10 against exact search.
2. Reuse speed-up: model calls and wall time of the second similar goal (another retailer) before
   and after the first goal's outcome was learned (the short path), on the offline model.
"""

from __future__ import annotations

import statistics
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import Any

import numpy as np
import psycopg
from langchain_core.messages import BaseMessage
from langchain_core.outputs import ChatResult
from psycopg import sql

from master_agent.domains.retail.simulate import simulate_outcome
from master_agent.evolution.clock import FixedClock, SystemClock
from master_agent.evolution.outcomes import list_checks, run_due
from master_agent.models.embeddings import to_pgvector
from master_agent.models.offline import OfflinePlanner
from master_agent.runtime import RuntimeResources, SolveRequest, solve

PATTERNS = 100_000
TOPICS = 500
QUERIES = 200
DIM = 384
MODEL = "bench-synthetic-384"
#: The migration's index (0005), rebuilt after the bulk load.
INDEX_384 = """
CREATE INDEX village_knowledge_embedding_384 ON village_knowledge
    USING hnsw ((embedding::vector(384)) vector_cosine_ops) WHERE embedding_dim = 384
"""
#: Latency per call of a hosted model, for the estimate printed beside the offline figures.
HOSTED_MODEL_CALL_S = 1.0
FIRST_GOAL = "Increase Store 5's accessory attach rate by 20% within 60 days"
SECOND_GOAL = "Help me increase accessory attach rate at my electronics store"


@contextmanager
def scratch_database(server_uri: str) -> Iterator[str]:
    """A new database on the same server, dropped afterwards."""
    name = f"bench_evolution_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(server_uri, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    try:
        head, _, query = server_uri.partition("?")
        yield f"{head.rsplit('/', 1)[0]}/{name}" + (f"?{query}" if query else "")
    finally:
        with psycopg.connect(server_uri, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP DATABASE {} WITH (FORCE)").format(sql.Identifier(name)))


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:8.2f} ms"


def _unit(rows: np.ndarray) -> np.ndarray:
    return rows / np.linalg.norm(rows, axis=-1, keepdims=True)


async def bench_knowledge_search(resources: RuntimeResources) -> None:
    rng = np.random.default_rng(7)
    topics = _unit(rng.normal(size=(TOPICS, DIM)))
    labels = rng.integers(0, TOPICS, PATTERNS)
    vectors = _unit(topics[labels] + rng.normal(scale=0.06, size=(PATTERNS, DIM)))
    pool = resources.database.pool
    started = time.perf_counter()
    async with pool.connection() as conn, conn.transaction():
        # Bulk load the way an operator would: the index is rebuilt once after the COPY, not row by row.
        await conn.execute("DROP INDEX village_knowledge_embedding_384")
        async with (
            conn.cursor() as cursor,
            cursor.copy(
                "COPY village_knowledge (pattern_id, tenant_id, visibility, pattern_name, domain, description, "
                "problem_type, embedding, embedding_model, embedding_dim) FROM STDIN"
            ) as copy,
        ):
            for index in range(PATTERNS):
                await copy.write_row((
                    uuid.uuid4(), "demo-retail", "shared", f"pattern {index}", "bench", f"topic {labels[index]}",
                    f"topic_{labels[index]}", to_pgvector(vectors[index].tolist()), MODEL, DIM,
                ))  # fmt: skip
    loaded = time.perf_counter()
    async with pool.connection() as conn, conn.transaction():
        await conn.execute("SET LOCAL maintenance_work_mem = '1GB'")
        await conn.execute(INDEX_384)
    async with pool.connection() as conn:
        await conn.execute("ANALYZE village_knowledge")
    print(f"knowledge: loaded {PATTERNS} patterns in {loaded - started:.1f} s, "
          f"HNSW index built in {time.perf_counter() - loaded:.1f} s")  # fmt: skip

    queries = _unit(topics[rng.integers(0, TOPICS, QUERIES)] + rng.normal(scale=0.06, size=(QUERIES, DIM)))
    store = resources.evolution.knowledge
    latencies, exact_latencies, recalls = [], [], []
    for query in queries:
        start = time.perf_counter()
        approx = await store.search_vector("demo-retail-2", query.tolist(), limit=10, model=MODEL)
        latencies.append(time.perf_counter() - start)
        start = time.perf_counter()
        exact = await store.search_vector("demo-retail-2", query.tolist(), limit=10, model=MODEL, exact=True)
        exact_latencies.append(time.perf_counter() - start)
        recalls.append(len({m.pattern_id for m in approx} & {m.pattern_id for m in exact}) / 10)
    latencies.sort()
    print(f"knowledge search @{PATTERNS}: median {_ms(statistics.median(latencies))}  "
          f"p95 {_ms(latencies[int(0.95 * (QUERIES - 1))])}  recall@10 {statistics.mean(recalls):.3f}  "
          f"(exact scan median {_ms(statistics.median(exact_latencies))}, "
          f"{statistics.median(exact_latencies) / statistics.median(latencies):.0f}x slower)")  # fmt: skip


#: Model calls made through ``CountingPlanner`` (module-level: ``bind_tools`` makes copies of it).
MODEL_CALLS = [0]


class CountingPlanner(OfflinePlanner):
    """The offline planner, counting the model calls of every loop it serves (sub-agents included)."""

    async def _agenerate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        MODEL_CALLS[0] += 1
        return await super()._agenerate(messages, *args, **kwargs)


async def _timed_solve(resources: RuntimeResources, tenant: str, goal: str) -> tuple[float, int, Any]:
    before = MODEL_CALLS[0]
    start = time.perf_counter()
    outcome = await solve(resources, SolveRequest(tenant_id=tenant, goal=goal))
    return time.perf_counter() - start, MODEL_CALLS[0] - before, outcome


async def bench_reuse(resources: RuntimeResources, runs: int = 9) -> None:
    """Needs resources opened with ``model=CountingPlanner()`` on a database without learned patterns."""
    before = [await _timed_solve(resources, "demo-retail-2", SECOND_GOAL) for _ in range(runs)]
    assert all(outcome.solution.reused_pattern is None for _, _, outcome in before)
    _, first_calls, first = await _timed_solve(resources, "demo-retail", FIRST_GOAL)
    await simulate_outcome(resources.database.pool, first.solution_id, seed=1)
    checks = await list_checks(resources.evolution, "demo-retail", first.solution_id)
    resources.evolution.clock = FixedClock(checks[-1].due_at + timedelta(hours=1))
    await run_due(resources.evolution)
    resources.evolution.clock = SystemClock()
    after = [await _timed_solve(resources, "demo-retail-2", SECOND_GOAL) for _ in range(runs)]
    reused = sum(1 for _, _, outcome in after if outcome.solution.reused_pattern)
    slow = statistics.median(t for t, _, _ in before)
    fast = statistics.median(t for t, _, _ in after)
    slow_calls, fast_calls = before[0][1], after[0][1]
    print(f"reuse: first goal {first_calls} model calls; second goal before learning {slow_calls} model "
          f"calls, median {_ms(slow)}; after learning {fast_calls} model calls, median {_ms(fast)} "
          f"(short path {reused}/{runs}): {slow_calls / fast_calls:.2f}x fewer model calls, "
          f"wall {slow / fast:.2f}x on the offline model")  # fmt: skip
    hosted_slow = slow + slow_calls * HOSTED_MODEL_CALL_S
    hosted_fast = fast + fast_calls * HOSTED_MODEL_CALL_S
    print(f"reuse: estimated with a hosted model at {HOSTED_MODEL_CALL_S:.1f} s per call (calls in sequence): "
          f"{hosted_slow:.1f} s -> {hosted_fast:.1f} s ({hosted_slow / hosted_fast:.2f}x)")  # fmt: skip
