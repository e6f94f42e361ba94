"""A hostile tenant against a real server: SQL escapes through a run's input and a playbook step, and
one tenant's runs filling every run slot of a process."""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

import pytest
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.graph import START, StateGraph
from langgraph_sdk import get_client
from langgraph_sdk.client import LangGraphClient
from langgraph_sdk.errors import ConflictError, NotFoundError

from master_agent.capabilities import install_tenant
from master_agent.evolution.playbooks import deploy_playbook, execute_playbook
from master_agent.runtime import RuntimeResources, SolveRequest, solve
from master_agent.service.auth import create_key
from tests.conftest import server_settings
from tests.live_server import LiveServer
from tests.sleepy_graph import Nap
from tests.test_evolution_units import VALID_PLAYBOOK

GOAL = "Increase Store 5's accessory attach rate by 20% within 60 days"
ESCAPE = "SELECT '--'; COMMIT; SET statement_timeout=0; SELECT pg_sleep(600)"
#: Passes the statement check, then runs into the statement timeout.
SLOW = "SELECT count(*) FROM transactions a, transactions b, transactions c"


@pytest.fixture(scope="module")
async def live(pg_server_uri: str, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[LiveServer]:
    settings = server_settings(
        pg_server_uri,
        tmp_path_factory,
        "hard",
        graphs=("sleepy=tests.sleepy_graph:make_graph",),
        run_concurrency=2,
        tenant_slots=1,
        sql_timeout_ms=300,
    )
    async with LiveServer(settings) as server:
        yield server


def _resources(live: LiveServer) -> RuntimeResources:
    resources: RuntimeResources = live.server.config.app.state.service.resources
    return resources


@pytest.fixture(scope="module")
async def clients(live: LiveServer) -> dict[str, LangGraphClient]:
    resources = _resources(live)
    pool = resources.database.pool
    await install_tenant(pool, resources.settings, "retail", "noisy-shop")
    return {
        tenant: get_client(url=live.url, api_key=(await create_key(pool, tenant)).key)
        for tenant in ("demo-retail", "noisy-shop")
    }


async def _sleeping_reader_queries(resources: RuntimeResources) -> int:
    async with resources.database.pool.connection() as conn:
        row = await (
            await conn.execute(
                "SELECT count(*) AS n FROM pg_stat_activity"
                " WHERE application_name = 'master-agent-sql-reader' AND query ILIKE '%pg_sleep%'"
            )
        ).fetchone()
    assert row is not None
    return int(row["n"])


def _tool_texts(values: dict[str, Any]) -> list[str]:
    return [str(m.get("content")) for m in values.get("messages", []) if m.get("type") == "tool"]


async def test_an_sql_escape_in_a_runs_input_is_refused(
    live: LiveServer, clients: dict[str, LangGraphClient]
) -> None:
    client = clients["noisy-shop"]
    for sql, answer in ((ESCAPE, "SQL refused: send exactly one statement"), (SLOW, "300 ms limit")):
        thread = await client.threads.create()
        output = await client.runs.wait(
            thread["thread_id"], "master_agent", input={"goal": GOAL, "context": {"sql": sql}}
        )
        assert isinstance(output, dict)
        runs = await client.runs.list(thread["thread_id"])
        assert [run["status"] for run in runs] == ["success"]
        texts = _tool_texts(output)
        assert any(answer in text for text in texts), texts
    assert await _sleeping_reader_queries(_resources(live)) == 0


async def test_an_sql_escape_in_a_playbook_step_is_refused(live: LiveServer) -> None:
    resources = _resources(live)
    evolution = dataclasses.replace(resources.evolution, scheduler=None)
    for number, (sql, answer) in enumerate(((ESCAPE, "SQL refused"), (SLOW, "300 ms limit"))):
        spec = {
            **VALID_PLAYBOOK,
            "name": f"escape {number}",
            "steps": [{"order": 1, "action": "tool", "tool": "query_tenant_data", "args": {"sql": sql}}],
        }
        deployed = await deploy_playbook(evolution, "demo-retail", spec)
        run = await execute_playbook(evolution, deployed.playbook_id, datetime(2026, 12, 7, 9, tzinfo=UTC))
        (step,) = run.results
        assert step.status == "error" and answer in str(step.result), step
    assert await _sleeping_reader_queries(resources) == 0


async def test_one_tenant_cannot_hold_every_run_slot(
    live: LiveServer, clients: dict[str, LangGraphClient]
) -> None:
    noisy, quiet = clients["noisy-shop"], clients["demo-retail"]
    hogs = []
    for _ in range(3):
        thread = await noisy.threads.create()
        hogs.append(await noisy.runs.create(thread["thread_id"], "sleepy", input={"seconds": 1.5}))
    await asyncio.sleep(0.3)  # the first has started and holds the tenant's one slot
    thread = await quiet.threads.create()
    answer = await quiet.runs.wait(thread["thread_id"], "sleepy", input={"seconds": 0})
    assert answer == {"seconds": 0, "slept": True}
    async with _resources(live).database.pool.connection() as conn:
        rows = await (
            await conn.execute(
                "SELECT run_id::text, status, started_at, finished_at FROM runs WHERE run_id = ANY(%s::uuid[])"
                " ORDER BY created_at",
                ([hog["run_id"] for hog in hogs],),
            )
        ).fetchall()
    # The quiet tenant did not wait for the noisy one's queue: two of its runs had not started yet.
    assert sum(row["started_at"] is None for row in rows) >= 1
    for hog in hogs:
        await noisy.runs.join(hog["thread_id"], hog["run_id"])
    async with _resources(live).database.pool.connection() as conn:
        rows = await (
            await conn.execute(
                "SELECT started_at, finished_at FROM runs WHERE run_id = ANY(%s::uuid[]) ORDER BY started_at",
                ([hog["run_id"] for hog in hogs],),
            )
        ).fetchall()
    # Never two of the noisy tenant's runs at once in this process.
    for earlier, later in itertools.pairwise(rows):
        assert later["started_at"] >= earlier["finished_at"]


async def _checkpoint_rows(resources: RuntimeResources, thread_id: str) -> int:
    async with resources.database.pool.connection() as conn:
        row = await (
            await conn.execute(
                "SELECT (SELECT count(*) FROM checkpoints WHERE thread_id = %(t)s)"
                " + (SELECT count(*) FROM checkpoint_writes WHERE thread_id = %(t)s)"
                " + (SELECT count(*) FROM checkpoint_blobs WHERE thread_id = %(t)s) AS n",
                {"t": thread_id},
            )
        ).fetchone()
    assert row is not None
    return int(row["n"])


async def test_a_goal_thread_is_owned_from_the_start(
    live: LiveServer, clients: dict[str, LangGraphClient]
) -> None:
    owner, other = clients["demo-retail"], clients["noisy-shop"]
    response = await owner.http.post("/api/cs/strategic-goals?wait=true", json={"goal": GOAL})
    thread_id = response["thread_id"]
    assert (await owner.threads.get(thread_id))["metadata"]["solution_id"] == response["solution_id"]
    with pytest.raises(ConflictError):
        await other.threads.create(thread_id=thread_id)
    with pytest.raises(NotFoundError):
        await other.threads.get_state(thread_id)
    # The command line's goals (solve) too.
    solved = await solve(_resources(live), SolveRequest.parse(tenant_id="demo-retail", goal=GOAL))
    assert (await owner.threads.get(solved.thread_id))["metadata"]["solution_id"] == solved.solution_id
    with pytest.raises(ConflictError):
        await other.threads.create(thread_id=solved.thread_id)


async def test_state_nobody_owns_is_never_adopted(
    live: LiveServer, clients: dict[str, LangGraphClient]
) -> None:
    resources = _resources(live)
    thread_id = str(uuid.uuid4())
    graph = StateGraph(Nap)
    graph.add_node("sleep", lambda state: {"slept": True})
    graph.add_edge(START, "sleep")
    compiled = graph.compile(checkpointer=resources.database.checkpointer)
    await compiled.ainvoke({"seconds": 0}, {"configurable": {"thread_id": thread_id}})
    assert await _checkpoint_rows(resources, thread_id) > 0
    with pytest.raises(ConflictError):
        await clients["noisy-shop"].threads.create(thread_id=thread_id)


async def test_deleting_a_thread_stops_its_run_and_nothing_is_written_after(
    live: LiveServer, clients: dict[str, LangGraphClient]
) -> None:
    resources = _resources(live)
    client = clients["demo-retail"]
    thread = await client.threads.create()
    thread_id = thread["thread_id"]
    run = await client.runs.create(thread_id, "sleepy", input={"seconds": 1.0})
    await asyncio.sleep(0.3)
    await client.threads.delete(thread_id)
    with pytest.raises(NotFoundError):
        await client.threads.get(thread_id)
    assert await _checkpoint_rows(resources, thread_id) == 0
    async with resources.database.pool.connection() as conn:
        left = await (await conn.execute("SELECT 1 FROM runs WHERE run_id = %s", (run["run_id"],))).fetchone()
    assert left is None
    await asyncio.sleep(1.2)  # past the node's end: had the run gone on, it would have checkpointed
    assert await _checkpoint_rows(resources, thread_id) == 0
    # Even a writer that never heard of the deletion stores nothing for the thread.
    await resources.database.checkpointer.aput(
        {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}},
        empty_checkpoint(),
        {"source": "input", "step": -1, "parents": {}},
        {},
    )
    assert await _checkpoint_rows(resources, thread_id) == 0
    with pytest.raises(ConflictError):
        await client.threads.create(thread_id=thread_id)
