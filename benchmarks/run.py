"""``make bench``: runtime-core numbers, printed (never asserted).

1. Median time per solve of the retail goal on the offline model (full durable run).
2. Added cost per super-step of Postgres checkpoints vs no checkpointer (same graph, interleaved runs).
3. Graph-factory cost on a cache hit vs a fresh build.
4. Village-knowledge reuse and search (``benchmarks/evolution.py``).
5. Checkpoint storage after 5,000 runs with and without retention (``benchmarks/retention.py``).
6. The chat front door: intent analysis, discovery and the routing decision (``benchmarks/routing.py``).
7. Tenant agents: create to first run, and the rebuild a create costs (``benchmarks/agents.py``).
8. The HTTP service through the official SDK (``benchmarks/service.py``): per-request figures
   (``service``) and the 1/10/50/100-client scale sweep (``sweep``); then its store at 100k items, cron
   firing delay and webhook delivery delay (``benchmarks/platform_api.py``, ``platform``).
9. Scale-out (``benchmarks/scale_out.py``, ``scaleout``): one client load against 1, 2 and 4 serve
   processes on one Postgres.
10. The database work of a run (``benchmarks/round_trips.py``, ``roundtrips``): pool checkouts, statements and
   round trips per run at 1, 10 and 50 clients; the claim statement's time and plan at 1,000 and 5,000 queued
   runs (``benchmarks/claim_query.py``, ``claim``).

``make bench PARTS=service,routing`` (or ``python benchmarks/run.py sweep``) runs only the parts named
(see ``PARTS``). Every server a part starts (embedded Postgres, the service) is stopped when it ends.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from benchmarks import agents, evolution, retention, routing

from master_agent.runtime import RuntimeResources, SolveRequest, master_graph, open_resources, solve
from master_agent.runtime.factory import graph_cache
from master_agent.service.graphs import register_graphs
from master_agent.settings import Settings
from master_agent.storage.embedded import stop_embedded_server

GOAL = "Increase Store 5's accessory attach rate by 20% within 60 days"


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:8.2f} ms"


async def bench_solve(resources: RuntimeResources, runs: int) -> None:
    request = SolveRequest.parse(tenant_id="demo-retail", goal=GOAL)
    await solve(resources, request)  # warm: graph cache, pool, tenant reader
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        await solve(resources, request)
        times.append(time.perf_counter() - start)
    times.sort()
    print(f"solve retail goal (offline, durable)  median {_ms(statistics.median(times))}  "
          f"p95 {_ms(times[int(0.95 * (len(times) - 1))])}  n={runs}")  # fmt: skip


async def bench_checkpoints(resources: RuntimeResources, runs: int) -> None:
    config: dict[str, Any] = {"configurable": {"tenant_id": "demo-retail", "complexity": "strategic"}}
    durable = await master_graph(resources, config, checkpointer=resources.database.checkpointer)  # type: ignore[arg-type]
    plain = await master_graph(resources, config)  # type: ignore[arg-type]
    graph_input = {"goal": GOAL}
    with_cp: list[float] = []
    without: list[float] = []
    supersteps = 0
    for index in range(runs):  # interleaved, so machine noise hits both alike
        durable_thread = ""
        for graph, sink in ((durable, with_cp), (plain, without)):
            thread_id = str(uuid.uuid4())
            durable_thread = durable_thread or thread_id
            run_config = {**config, "configurable": {**config["configurable"], "thread_id": thread_id}}
            start = time.perf_counter()
            await graph.ainvoke(graph_input, run_config)
            sink.append(time.perf_counter() - start)
        if index == 0:
            # super-steps of one run, nested sub-agents included: one checkpoint each
            async with resources.database.pool.connection() as conn:
                cursor = await conn.execute(
                    "SELECT count(*) AS n FROM checkpoints WHERE thread_id = %s",
                    (durable_thread,),
                )
            row = await cursor.fetchone()
            supersteps = int(row["n"]) if row else 0
    added = (statistics.median(with_cp) - statistics.median(without)) / max(supersteps, 1)
    print(f"checkpoints: run with {_ms(statistics.median(with_cp))}  without {_ms(statistics.median(without))}  "
          f"super-steps/run {supersteps}  added per super-step {_ms(added)}")  # fmt: skip


async def bench_factory(resources: RuntimeResources, runs: int) -> None:
    config: dict[str, Any] = {"configurable": {"tenant_id": "demo-retail", "complexity": "strategic"}}
    cache = graph_cache(resources)
    fresh, hit = [], []
    for _ in range(runs):
        cache.clear()
        start = time.perf_counter()
        await master_graph(resources, config)  # type: ignore[arg-type]
        fresh.append(time.perf_counter() - start)
        start = time.perf_counter()
        await master_graph(resources, config)  # type: ignore[arg-type]
        hit.append(time.perf_counter() - start)
    ratio = statistics.median(fresh) / statistics.median(hit)
    print(f"graph factory: fresh build {_ms(statistics.median(fresh))}  cache hit {_ms(statistics.median(hit))}  "
          f"(fresh/hit {ratio:.1f}x)")  # fmt: skip


#: The parts of ``make bench`` in the order they run; ``PARTS=a,b`` (``make bench PARTS=service,routing``)
#: runs only those.
CORE_PARTS = ("solve", "checkpoints", "factory", "routing", "agents", "evolution", "retention")
SERVICE_PARTS = ("roundtrips", "claim", "service", "sweep", "platform", "scaleout")
PARTS = (*CORE_PARTS, *SERVICE_PARTS)


def chosen_parts(text: str) -> list[str]:
    """The parts named in ``text`` (comma-separated; empty: all), in run order."""
    names = {name.strip() for name in text.split(",") if name.strip()}
    unknown = sorted(names - set(PARTS))
    if unknown:
        raise SystemExit(f"unknown bench part(s) {', '.join(unknown)}: choose from {', '.join(PARTS)}")
    return [name for name in PARTS if name in names or not names]


async def core(parts: list[str]) -> None:
    with tempfile.TemporaryDirectory(prefix="ma-bench-") as data_dir:
        base = Settings.from_env()
        embedded = base.database_url is None
        settings = base.with_overrides(
            model="offline", data_dir=Path(data_dir) if embedded else base.data_dir
        )
        try:
            async with open_resources(settings) as resources:
                if "solve" in parts:
                    await bench_solve(resources, runs=20)
                if "checkpoints" in parts:
                    await bench_checkpoints(resources, runs=15)
                if "factory" in parts:
                    await bench_factory(resources, runs=30)
                if "routing" in parts:
                    await routing.bench_routing(resources)
                if "agents" in parts:
                    await agents.bench_agents(resources)
                server_uri = resources.database.uri
            if "evolution" in parts:
                # The reuse benchmark needs a database where nothing was learned yet: a scratch one.
                with evolution.scratch_database(server_uri) as scratch_uri:
                    scratch = settings.with_overrides(database_url=scratch_uri)
                    async with open_resources(scratch, model=evolution.CountingPlanner()) as resources:
                        await evolution.bench_reuse(resources)
                        await evolution.bench_knowledge_search(resources)
            if "retention" in parts:
                with evolution.scratch_database(server_uri) as scratch_uri:
                    async with open_resources(settings.with_overrides(database_url=scratch_uri)) as resources:
                        await retention.bench_retention(resources)
        finally:
            if embedded:
                stop_embedded_server(Path(data_dir))


def main(argv: list[str]) -> None:
    from benchmarks.service import exit_on_signals

    exit_on_signals()
    register_graphs()
    parts = chosen_parts(",".join(argv) or os.environ.get("PARTS", ""))
    if any(part in CORE_PARTS for part in parts):
        asyncio.run(core(parts))
    from benchmarks import claim_query, platform_api, round_trips, scale_out, service

    if "roundtrips" in parts:
        for clients in round_trips.CLIENT_LEVELS:
            asyncio.run(round_trips.main(round_trips.RUNS, clients))
    if "claim" in parts:
        claim_query.main()
    # The HTTP service, in its own server process.
    if "service" in parts or "sweep" in parts:
        service.main(measure_requests="service" in parts, sweep="sweep" in parts)
    if "platform" in parts:
        platform_api.main()
    if "scaleout" in parts:
        scale_out.main()


if __name__ == "__main__":
    main(sys.argv[1:])
