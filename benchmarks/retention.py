"""Checkpoint storage after many runs, with and without the retention sweep (printed, never asserted).

Runs of the master graph (offline model, durable) on multi-turn threads: a goal, then follow-up
messages. Then the size of the checkpoint tables as they are, after ``keep_latest`` and after
``delete`` (as if every thread had gone idle). ``BENCH_RETENTION_RUNS`` sets the number of runs.
"""

from __future__ import annotations

import asyncio
import os
import time
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

from langchain_core.messages import HumanMessage

from master_agent.runtime import RuntimeResources, master_graph
from master_agent.storage.retention import RetentionPolicy, sweep_checkpoints

GOAL = "Increase Store 5's accessory attach rate by 20% within 60 days"
RUNS_PER_THREAD = 5
AT_ONCE = 4
SIZE = """
SELECT sum(pg_total_relation_size(name::regclass))::bigint AS bytes,
       (SELECT count(*) FROM checkpoints) AS checkpoints
FROM unnest(ARRAY['checkpoints', 'checkpoint_blobs', 'checkpoint_writes']) AS name
"""


async def _size(resources: RuntimeResources) -> tuple[int, int]:
    async with resources.database.pool.connection() as conn:
        await conn.execute("VACUUM FULL checkpoints, checkpoint_blobs, checkpoint_writes")
        row = await (await conn.execute(SIZE)).fetchone()
    assert row is not None
    return int(row["bytes"]), int(row["checkpoints"])


async def _thread(resources: RuntimeResources, runs: int) -> None:
    config: dict[str, Any] = {
        "configurable": {"tenant_id": "demo-retail", "complexity": "standard", "thread_id": str(uuid.uuid4())}
    }
    graph = await master_graph(resources, config, checkpointer=resources.database.checkpointer)  # type: ignore[arg-type]
    await graph.ainvoke({"goal": GOAL}, config)  # type: ignore[arg-type]
    for turn in range(runs - 1):
        await graph.ainvoke({"messages": [HumanMessage(content=f"Follow-up {turn}: and the risks?")]}, config)  # type: ignore[arg-type]


async def bench_retention(resources: RuntimeResources) -> None:
    runs = int(os.environ.get("BENCH_RETENTION_RUNS", "5000"))
    threads = max(1, runs // RUNS_PER_THREAD)
    start = time.perf_counter()
    for first in range(0, threads, AT_ONCE):
        await asyncio.gather(
            *(_thread(resources, RUNS_PER_THREAD) for _ in range(first, min(first + AT_ONCE, threads)))
        )
    elapsed = time.perf_counter() - start
    kept, checkpoints = await _size(resources)
    later = datetime.now(UTC) + timedelta(minutes=1)
    pool = resources.database.pool
    await sweep_checkpoints(pool, RetentionPolicy(strategy="keep_latest", idle_minutes=0), later)
    latest, latest_checkpoints = await _size(resources)
    await sweep_checkpoints(pool, RetentionPolicy(strategy="delete", idle_minutes=0), later)
    deleted, _ = await _size(resources)
    mib = 1024 * 1024
    print(f"retention after {threads * RUNS_PER_THREAD} runs on {threads} threads ({elapsed:.0f} s): "
          f"no sweep {kept / mib:.1f} MiB ({checkpoints} checkpoints)  keep_latest {latest / mib:.1f} MiB "
          f"({latest_checkpoints})  delete {deleted / mib:.1f} MiB  (none/keep_latest "
          f"{kept / max(latest, 1):.1f}x)")  # fmt: skip
