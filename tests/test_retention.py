"""Checkpoint retention: idle threads keep only their latest checkpoints (still readable and
resumable) or are deleted; busy and recent threads are untouched; the leader sweeps on its interval."""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from langgraph.types import Command

from master_agent.evolution.clock import FixedClock
from master_agent.evolution.jobs import sweep_checkpoints_if_due
from master_agent.runtime import RuntimeResources, SolveRequest, open_resources, solve
from master_agent.runtime.factory import master_graph
from master_agent.settings import Settings
from master_agent.storage.retention import RetentionPolicy, sweep_checkpoints
from tests.cli_call import run_cli

GOAL = "Increase Store 5's accessory attach rate by 20% within 60 days"


@pytest.fixture
async def fresh(fresh_database_uri: str, tmp_path: Path) -> AsyncIterator[RuntimeResources]:
    settings = Settings(database_url=fresh_database_uri, data_dir=tmp_path, model="offline")
    async with open_resources(settings) as resources:
        yield resources


async def _counts(resources: RuntimeResources) -> dict[str, int]:
    counts = {}
    async with resources.database.pool.connection() as conn:
        for table in ("checkpoints", "checkpoint_writes", "checkpoint_blobs", "threads"):
            row = await (await conn.execute(f"SELECT count(*) AS n FROM {table}")).fetchone()  # type: ignore[arg-type]
            assert row is not None
            counts[table] = int(row["n"])
        row = await (
            await conn.execute(
                "SELECT count(*) AS n FROM (SELECT DISTINCT thread_id, checkpoint_ns FROM checkpoints) AS s"
            )
        ).fetchone()
        assert row is not None
        counts["namespaces"] = int(row["n"])
    return counts


async def _values(resources: RuntimeResources, options: dict[str, Any], thread_id: str) -> dict[str, Any]:
    config = {"configurable": {**options, "thread_id": thread_id}}
    graph = await master_graph(resources, config, checkpointer=resources.database.checkpointer)
    return dict((await graph.aget_state(config)).values)


async def test_keep_latest_drops_history_and_the_thread_still_reads_and_resumes(
    fresh: RuntimeResources,
) -> None:
    done = await solve(fresh, SolveRequest.parse(tenant_id="demo-retail", goal=GOAL, complexity="standard"))
    waiting = await solve(
        fresh,
        SolveRequest.parse(tenant_id="demo-retail", goal=GOAL, complexity="strategic", max_iterations=1),
    )
    assert done.status == "success" and waiting.status == "interrupted"
    standard = {"tenant_id": "demo-retail", "complexity": "standard", "goal": GOAL}
    strategic = {**standard, "complexity": "strategic", "max_iterations": 1}
    before = await _values(fresh, standard, done.thread_id)
    counts = await _counts(fresh)
    assert counts["checkpoints"] > counts["namespaces"]

    policy = RetentionPolicy(strategy="keep_latest", idle_minutes=60)
    recent = await sweep_checkpoints(fresh.database.pool, policy, datetime.now(UTC))
    assert recent.threads == 0  # nothing has been idle for an hour yet
    later = datetime.now(UTC) + timedelta(days=1)
    swept = await sweep_checkpoints(fresh.database.pool, policy, later)
    assert swept.threads == 2
    assert swept.checkpoints == counts["checkpoints"] - counts["namespaces"]
    after = await _counts(fresh)
    assert after["checkpoints"] == after["namespaces"] == counts["namespaces"]
    assert after["checkpoint_blobs"] < counts["checkpoint_blobs"]
    assert after["threads"] == counts["threads"]
    assert (await sweep_checkpoints(fresh.database.pool, policy, later)).threads == 0

    # The finished thread reads the same; the waiting one resumes and finishes.
    assert await _values(fresh, standard, done.thread_id) == before
    config = {"configurable": {**strategic, "thread_id": waiting.thread_id}}
    graph = await master_graph(fresh, config, checkpointer=fresh.database.checkpointer)
    final = await graph.ainvoke(Command(resume="approve"), config)
    assert final["termination"]["reason"] == "escalated:max_iterations:approve"


async def test_delete_removes_idle_threads_and_spares_busy_ones(fresh: RuntimeResources) -> None:
    idle = await solve(fresh, SolveRequest.parse(tenant_id="demo-retail", goal=GOAL, complexity="standard"))
    busy = await solve(fresh, SolveRequest.parse(tenant_id="demo-retail", goal=GOAL, complexity="standard"))
    async with fresh.database.pool.connection() as conn:
        await conn.execute(
            "INSERT INTO runs (run_id, tenant_id, thread_id, kind, status)"
            " VALUES (gen_random_uuid(), 'demo-retail', %s, 'graph', 'running')",
            (busy.thread_id,),
        )
    policy = RetentionPolicy(strategy="delete", idle_minutes=60)
    swept = await sweep_checkpoints(fresh.database.pool, policy, datetime.now(UTC) + timedelta(days=1))
    assert swept.threads == 1
    async with fresh.database.pool.connection() as conn:
        left = await (await conn.execute("SELECT DISTINCT thread_id FROM checkpoints")).fetchall()
        rows = await (await conn.execute("SELECT thread_id::text AS thread_id FROM threads")).fetchall()
        solutions = await (await conn.execute("SELECT count(*) AS n FROM solutions")).fetchone()
    assert {row["thread_id"] for row in left} == {busy.thread_id}
    assert {row["thread_id"] for row in rows} == {busy.thread_id}
    assert solutions is not None and solutions["n"] == 2  # the answers outlive their threads
    assert idle.thread_id != busy.thread_id


async def test_the_leader_sweeps_on_its_interval(fresh: RuntimeResources) -> None:
    await solve(fresh, SolveRequest.parse(tenant_id="demo-retail", goal=GOAL, complexity="standard"))
    start = datetime.now(UTC) + timedelta(days=8)  # past the default seven idle days
    context = dataclasses.replace(fresh.evolution, clock=FixedClock(start))
    first = await sweep_checkpoints_if_due(context)
    assert first is not None and first.strategy == "keep_latest" and first.threads == 1
    assert await sweep_checkpoints_if_due(context) is None  # not due again yet
    context.clock = FixedClock(start + timedelta(minutes=61))
    again = await sweep_checkpoints_if_due(context)
    assert again is not None and again.threads == 0
    off = dataclasses.replace(context, settings=fresh.settings.model_copy(update={"checkpoint_ttl": "off"}))
    off.checkpoints_swept_at = None
    assert await sweep_checkpoints_if_due(off) is None


def test_threads_prune_cli(fresh_database_uri: str, tmp_path: Path) -> None:
    env = {**os.environ, "DATABASE_URL": fresh_database_uri, "MASTER_AGENT_DATA_DIR": str(tmp_path)}
    solved = run_cli(env, "solve", GOAL, "--complexity", "standard", "--json")
    assert solved.returncode == 0, solved.stderr
    pruned = run_cli(env, "threads", "prune", "--strategy", "keep_latest", "--idle-minutes", "0")
    assert pruned.returncode == 0, pruned.stderr
    result = json.loads(pruned.stdout)
    assert result["strategy"] == "keep_latest" and result["threads"] == 1 and result["checkpoints"] > 0
    refused = run_cli(env, "threads", "prune", "--idle-minutes", "-5")
    assert refused.returncode != 0 and "idle-minutes" in refused.stderr
