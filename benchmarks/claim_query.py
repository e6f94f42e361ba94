"""The claim statement with thousands of pending runs: its time and its plan.

A scratch database (migrated) gets ``FINISHED`` finished runs, ``RUNNING`` runs held by live leases and a
queue of pending runs spread over tenants and threads (most threads with one run, some with a few queued
behind each other). For each queue length the claim (``CLAIM_RUN``, as the worker sends it, with this
process holding slots of some tenants) runs inside a transaction that is rolled back, so every
measurement sees the same queue. Printed: the median and p95 execution time PostgreSQL reports
(``EXPLAIN ANALYZE``; no client round trip in it) and the plan's shape (its nodes, one line each).

``python -m benchmarks.claim_query [pending ...]`` (``make bench PARTS=claim``), default 1,000 and 5,000.
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg
from benchmarks.evolution import scratch_database
from psycopg.rows import dict_row

from master_agent.runtime.runs.statements import CLAIM_RUN

FINISHED = 100_000
RUNNING = 16
TENANTS = 8
#: Claims measured per queue length (after two unmeasured, which warm the caches).
REPEATS = 25
DEFAULT_PENDING = (1_000, 5_000)


def _fill(conn: psycopg.Connection[Any], pending: int) -> None:
    """Tenants, finished runs, live running runs and ``pending`` queued runs (every 10th thread has 3)."""
    conn.execute("TRUNCATE runs CASCADE")
    tenants = [f"bench-tenant-{index}" for index in range(TENANTS)]
    for tenant in tenants:
        conn.execute(
            "INSERT INTO tenants (tenant_id, name, tier) VALUES (%s, %s, 'pro') ON CONFLICT DO NOTHING",
            (tenant, tenant),
        )
    conn.execute(
        """INSERT INTO runs (run_id, tenant_id, thread_id, kind, status, created_at, finished_at)
           SELECT gen_random_uuid(), (%(tenants)s::text[])[1 + i %% %(count)s], gen_random_uuid()::text, 'graph',
                  'success', now() - make_interval(secs => 100000 - i), now()
           FROM generate_series(1, %(n)s) AS i""",
        {"tenants": tenants, "count": TENANTS, "n": FINISHED},
    )
    conn.execute(
        """INSERT INTO runs (run_id, tenant_id, thread_id, kind, status, lease_owner, lease_expires_at,
                             started_at, attempts, created_at)
           SELECT gen_random_uuid(), (%(tenants)s::text[])[1 + i %% 2], gen_random_uuid()::text, 'graph', 'running',
                  'bench:1', now() + interval '1 hour', now(), 1, now() - interval '10 minutes'
           FROM generate_series(1, %(n)s) AS i""",
        {"tenants": tenants, "n": RUNNING},
    )
    # Pending: one thread per 3 runs for every 10th group, one run per thread otherwise.
    conn.execute(
        """INSERT INTO runs (run_id, tenant_id, thread_id, kind, status, created_at)
           SELECT gen_random_uuid(), (%(tenants)s::text[])[1 + (i / 3) %% %(count)s],
                  CASE WHEN (i / 3) %% 10 = 0 THEN 'queued-' || (i / 3) ELSE gen_random_uuid()::text END,
                  'graph', 'pending', now() - make_interval(secs => %(n)s - i)
           FROM generate_series(1, %(n)s) AS i""",
        {"tenants": tenants, "count": TENANTS, "n": pending},
    )
    conn.execute("ANALYZE runs")


def _claim_params() -> dict[str, Any]:
    # This process holds slots of two tenants: their runs go after the others'.
    return {
        "owner": "bench:2",
        "lease": 30,
        "full_tenants": [],
        "held": json.dumps({"bench-tenant-0": 3, "bench-tenant-1": 1}),
    }


def measure(conn: psycopg.Connection[Any], pending: int) -> tuple[list[float], list[str]]:
    """Execution times (ms) of the claim over ``pending`` queued runs, and its plan's nodes."""
    _fill(conn, pending)
    times: list[float] = []
    plan_lines: list[str] = []
    for index in range(REPEATS + 2):
        with conn.transaction(force_rollback=True):
            rows = conn.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + CLAIM_RUN, _claim_params()).fetchall()
        plan = rows[0]["QUERY PLAN"][0]
        if index >= 2:
            times.append(float(plan["Execution Time"]))
        plan_lines = list(_nodes(plan["Plan"]))
    return times, plan_lines


def _nodes(node: dict[str, Any], depth: int = 0) -> Iterator[str]:
    name = node["Node Type"] + (f" on {node['Relation Name']}" if "Relation Name" in node else "")
    if "Index Name" in node:
        name += f" using {node['Index Name']}"
    yield f"{'  ' * depth}{name}  rows={node.get('Actual Rows')} loops={node.get('Actual Loops')}"
    for child in node.get("Plans", ()):
        yield from _nodes(child, depth + 1)


@contextmanager
def _server() -> Iterator[str]:
    """DATABASE_URL's server, or an embedded one in a temporary directory (stopped after)."""
    import os

    if uri := os.environ.get("DATABASE_URL"):
        yield uri
        return
    from master_agent.storage.embedded import _start, stop_embedded_server

    with tempfile.TemporaryDirectory(prefix="ma-bench-claim-") as data_dir:
        try:
            yield _start((Path(data_dir) / "pg").resolve())
        finally:
            stop_embedded_server(Path(data_dir))


def main(pending_levels: tuple[int, ...] = DEFAULT_PENDING) -> None:
    import asyncio

    from master_agent.settings import Settings
    from master_agent.storage.database import open_database

    with _server() as server_uri, scratch_database(server_uri) as uri:

        async def migrate() -> None:
            settings = Settings(database_url=uri, data_dir=Path(tempfile.gettempdir()), model="offline")
            async with open_database(settings):
                pass

        asyncio.run(migrate())
        with psycopg.connect(uri, autocommit=True, row_factory=dict_row) as conn:
            print(f"claim statement, {FINISHED:,} finished runs, {RUNNING} running, {TENANTS} tenants "
                  f"(EXPLAIN ANALYZE execution time, {REPEATS} claims each, rolled back)")  # fmt: skip
            for pending in pending_levels:
                times, plan = measure(conn, pending)
                ordered = sorted(times)
                p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
                print(
                    f"  {pending:>6,} pending: median {statistics.median(times):7.2f} ms  p95 {p95:7.2f} ms"
                )
                for line in plan:
                    print(f"      {line}")


if __name__ == "__main__":
    main(tuple(int(arg) for arg in sys.argv[1:]) or DEFAULT_PENDING)
