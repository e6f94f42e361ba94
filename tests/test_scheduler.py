"""The evolution scheduler on real Postgres and the real APScheduler: jobs survive restarts and fire
once, overdue checks run once at start-up, and only one process leads."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import textwrap
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import psycopg
import pytest

from master_agent.evolution.scheduler import EvolutionScheduler
from master_agent.runtime import open_resources
from master_agent.settings import Settings
from tests.conftest import create_database
from tests.live_server import ROOT
from tests.scheduler_jobs import CREATE

JOB = "tests.scheduler_jobs:record"


def _hits(uri: str, marker: str) -> int:
    with psycopg.connect(uri, autocommit=True) as conn:
        conn.execute(CREATE)
        row = conn.execute("SELECT count(*) FROM job_hits WHERE marker = %s", (marker,)).fetchone()
    assert row is not None
    return int(row[0])


async def _until(condition: Callable[[], bool], limit_s: float = 20.0) -> None:
    deadline = asyncio.get_running_loop().time() + limit_s
    while not condition():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError("condition not met in time")
        await asyncio.sleep(0.1)


async def test_a_job_survives_a_scheduler_restart_and_fires_once(pg_server_uri: str) -> None:
    uri = create_database(pg_server_uri, "sched")
    first = EvolutionScheduler(uri, poll_s=0.2, lock_key=11)
    await first.start()
    assert first.state == "leader"
    first.add_date_job("restart-job", JOB, datetime.now(UTC) + timedelta(seconds=1.5), [uri, "restart"])
    await first.stop()  # the process goes away before the job is due
    await asyncio.sleep(2.0)
    assert _hits(uri, "restart") == 0

    second = EvolutionScheduler(uri, poll_s=0.2, lock_key=11)
    await second.start()
    try:
        assert second.next_run("restart-job") is not None  # it was in the Postgres job store all along
        await _until(lambda: _hits(uri, "restart") == 1)
        await asyncio.sleep(1.0)
        assert _hits(uri, "restart") == 1
        assert second.next_run("restart-job") is None  # a date job is gone once it ran
    finally:
        await second.stop()


async def test_an_overdue_check_runs_once_after_start_up(
    pg_server_uri: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    uri = create_database(pg_server_uri, "overdue")
    settings = Settings(
        database_url=uri,
        data_dir=tmp_path_factory.mktemp("overdue"),
        embeddings="hashing",
        scheduler_poll_s=0.2,
    )
    solution_id, check_id = uuid.uuid4(), uuid.uuid4()
    async with open_resources(settings) as resources, resources.database.pool.connection() as conn:
        # A check stored while no scheduler ran, due two days ago.
        await conn.execute(
            "INSERT INTO solutions (solution_id, tenant_id, thread_id, goal, status, solution)"
            " VALUES (%s, 'demo-retail', %s, 'g', 'success', '{}')",
            (solution_id, str(uuid.uuid4())),
        )
        await conn.execute(
            "INSERT INTO outcome_checks (check_id, tenant_id, solution_id, checkpoint_day, due_at, metric_query,"
            " expected) VALUES (%s, 'demo-retail', %s, 14, now() - interval '2 days', %s, 0.05)",
            (
                check_id,
                solution_id,
                '{"sql": "SELECT avg(accessory_attached::int)::float AS value, count(*)::int AS observations'
                ' FROM transactions WHERE sold_at < %(window_end)s", "params": {}, "window_days": 14}',
            ),
        )

    async def measured() -> tuple[str, int]:
        async with await psycopg.AsyncConnection.connect(uri) as conn:
            status = await (
                await conn.execute("SELECT status FROM outcome_checks WHERE check_id = %s", (check_id,))
            ).fetchone()
            sent = await (
                await conn.execute(
                    "SELECT count(*) FROM outbox WHERE body->>'solution_id' = %s", (str(solution_id),)
                )
            ).fetchone()
        assert status is not None and sent is not None
        return status[0], sent[0]

    for _ in range(2):  # start-up, then a restart: it ran once, and only once
        async with open_resources(settings, scheduler="lead") as resources:
            assert resources.evolution.scheduler is not None
            assert resources.evolution.scheduler.state == "leader"
            for _ in range(100):
                if (await measured())[0] != "scheduled":
                    break
                await asyncio.sleep(0.1)
            await asyncio.sleep(0.5)
    assert await measured() == ("measured", 1)
    # The leader also hands the outbox to the notifier (the default one records delivery).
    with psycopg.connect(uri) as conn:
        statuses = conn.execute(
            "SELECT DISTINCT status FROM outbox WHERE body->>'solution_id' = %s", (str(solution_id),)
        ).fetchall()
    assert statuses == [("delivered",)]


LEADER_SCRIPT = textwrap.dedent(
    """
    import asyncio, sys
    from master_agent.evolution.scheduler import EvolutionScheduler

    async def main():
        scheduler = EvolutionScheduler(sys.argv[1], poll_s=0.2, lock_key=12)
        await scheduler.start()
        print(scheduler.state, flush=True)
        await asyncio.sleep(3600)

    asyncio.run(main())
    """
)


async def test_two_processes_never_both_lead_and_a_survivor_takes_over(pg_server_uri: str) -> None:
    uri = create_database(pg_server_uri, "leader")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    other = await asyncio.to_thread(
        subprocess.Popen,
        [sys.executable, "-c", LEADER_SCRIPT, uri],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert other.stdout is not None
        assert (await asyncio.to_thread(other.stdout.readline)).strip() == "leader"
        here = EvolutionScheduler(uri, poll_s=0.2, lock_key=12)
        await here.start()
        try:
            for _ in range(10):  # polls keep finding the lock taken
                assert here.state == "standby"
                await asyncio.sleep(0.2)
            other.send_signal(signal.SIGKILL)
            other.wait(timeout=10)
            await _until(lambda: here.state == "leader", limit_s=15)
        finally:
            await here.stop()
    finally:
        if other.poll() is None:
            other.kill()
