"""Tenant agents, timed (printed, never asserted): from a checked create to the end of the first run that
uses the new agent, and the rebuild each create costs the tenant's next run (other tenants' cached
graphs stay hits)."""

from __future__ import annotations

import statistics
import time
import uuid
from typing import Any

from master_agent.capabilities import install_tenant
from master_agent.capabilities.assistants import AGENT_SPEC_KEY, GRAPH_ID
from master_agent.runtime import RuntimeResources, master_graph
from master_agent.runtime.factory import graph_cache
from master_agent.runtime.tenant_agents import save_assistant

TENANT, OTHER = "demo-retail", "bench-other-shop"


def _spec(index: int) -> dict[str, Any]:
    return {
        "name": f"bench_refunds_{index}_{uuid.uuid4().hex[:6]}",
        "description": "Reports the weekly refund rate of every store.",
        "skills": ["weekly refund rate per store"],
        "queries": [
            {
                "name": f"bench_weekly_{index}_{uuid.uuid4().hex[:6]}",
                "description": "Refund rate per store and week.",
                "sql": "SELECT store_id, date_trunc('week', sold_at)::date AS week, "
                "avg(refunded::int)::float AS refund_rate FROM transactions GROUP BY 1, 2 ORDER BY 2 DESC LIMIT 20",
            }
        ],
        "output_schema": {"type": "object", "properties": {"rows": {"type": "array"}}, "required": ["rows"]},
    }


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:8.2f} ms"


async def bench_agents(resources: RuntimeResources, runs: int = 8) -> None:
    await install_tenant(resources.database.pool, resources.settings, "retail", OTHER)
    chat: Any = {"configurable": {"tenant_id": TENANT}}
    other: Any = {"configurable": {"tenant_id": OTHER}}
    await master_graph(resources, chat)
    await master_graph(resources, other)
    cache = graph_cache(resources)
    create, first_build, first_run, total, rebuild, hit, other_hits = [], [], [], [], [], [], 0
    for index in range(runs):
        start = time.perf_counter()
        made = await save_assistant(
            resources,
            TENANT,
            assistant_id=uuid.uuid4(),
            graph_id=GRAPH_ID,
            name=None,
            description=None,
            config={},
            context={AGENT_SPEC_KEY: _spec(index)},
            metadata={"created_by": "bench"},
        )
        created = time.perf_counter()
        config: Any = {
            "configurable": {"tenant_id": TENANT, "agent_id": str(made.assistant_id), "agent_version": 1},
            "recursion_limit": 25,
        }
        graph = await master_graph(resources, config)
        built = time.perf_counter()
        out = await graph.ainvoke({"goal": "weekly refund rate per store"}, config)
        done = time.perf_counter()
        assert out["solution"]["rows"], out["envelope"]
        create.append(created - start)
        first_build.append(built - created)
        first_run.append(done - built)
        total.append(done - start)
        # The tenant's chat graph (front door, every loop behind it) is rebuilt once after the change...
        start = time.perf_counter()
        await master_graph(resources, chat)
        rebuild.append(time.perf_counter() - start)
        start = time.perf_counter()
        await master_graph(resources, chat)
        hit.append(time.perf_counter() - start)
        # ...and another tenant's cached graph is untouched.
        before = cache.hits
        await master_graph(resources, other)
        other_hits += cache.hits - before
    median = statistics.median
    print(
        f"tenant agent: create (checked, stored, hot-loaded) {_ms(median(create))}  first graph build "
        f"{_ms(median(first_build))}  first run {_ms(median(first_run))}  create->first run done "
        f"{_ms(median(total))}  n={runs}"
    )
    print(
        f"tenant agent: chat graph rebuild after a create {_ms(median(rebuild))}  cache hit {_ms(median(hit))}  "
        f"(rebuild/hit {median(rebuild) / median(hit):.0f}x); other tenant's graph stayed cached {other_hits}/{runs}"
    )
