"""A solve killed with SIGKILL inside a sub-agent finishes on resume from its last checkpoint, with the
same solution as an uninterrupted run and no tool step run twice."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import psycopg
import pytest
from psycopg.rows import dict_row

from tests.cli_call import run_cli
from tests.conftest import create_database
from tests.durability_pack import SLOW_SECONDS, SLOW_TOOL, TENANT

GOAL = "Increase Store 5's accessory attach rate by 20% within 60 days"


def crash_env(uri: str) -> dict[str, str]:
    env = {**os.environ, "DATABASE_URL": uri, "MASTER_AGENT_MODEL": "offline"}
    env["MASTER_AGENT_DOMAIN_PACKS"] = "tests.durability_pack"
    env["PYTHONPATH"] = os.pathsep.join([str(Path(__file__).resolve().parents[1]), env.get("PYTHONPATH", "")])
    return env


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "master_agent.cli", *args]


def _install(uri: str) -> None:
    """Create the crash tenant (the pack's installer) through the real start-up path."""
    done = subprocess.run(
        [sys.executable, "-c", _INSTALL], env=crash_env(uri), capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr


_INSTALL = """
import asyncio
from master_agent.settings import Settings
from master_agent.runtime import open_resources
from master_agent.capabilities import install_tenant
from tests import durability_pack

async def main():
    async with open_resources(Settings.from_env()) as resources:
        await install_tenant(
            resources.database.pool, resources.settings, "retail-crash", durability_pack.TENANT
        )

asyncio.run(main())
"""


@pytest.fixture
def crash_database(pg_server_uri: str) -> str:
    uri = create_database(pg_server_uri, "crash")
    _install(uri)
    return uri


def wait_for_row(uri: str, query: str, timeout: float = 60) -> dict[str, object]:
    deadline = time.monotonic() + timeout
    with psycopg.connect(uri, autocommit=True, row_factory=dict_row) as conn:
        while time.monotonic() < deadline:
            row = conn.execute(query).fetchone()  # type: ignore[arg-type]
            if row is not None:
                return row
            time.sleep(0.02)
    raise AssertionError(f"timed out waiting for: {query}")


def _runs(uri: str) -> list[dict[str, object]]:
    with psycopg.connect(uri, autocommit=True, row_factory=dict_row) as conn:
        return conn.execute("SELECT tool, phase, args FROM crash_tool_runs ORDER BY id").fetchall()


def test_sigkill_inside_a_sub_agent_then_resume(crash_database: str) -> None:
    uri = crash_database
    process = subprocess.Popen(
        _cli("solve", GOAL, "--tenant", TENANT, "--json"),
        env=crash_env(uri),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_for_row(uri, f"SELECT 1 FROM crash_tool_runs WHERE tool = '{SLOW_TOOL}' AND phase = 'started'")
        # A sibling has finished (on a loaded machine that can take a while: wait for it, not a guess);
        # its checkpoint write is saved in the background (durability "async"), so give it a moment,
        # then kill well inside the slow tool's sleep.
        wait_for_row(
            uri, "SELECT 1 FROM crash_tool_runs WHERE tool = 'attach_rate_metrics' AND phase = 'completed'"
        )
        time.sleep(SLOW_SECONDS / 4)
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == -signal.SIGKILL
    thread = wait_for_row(uri, "SELECT thread_id, status FROM solutions")
    assert thread["status"] == "running"
    before = Counter((r["tool"], r["phase"]) for r in _runs(uri))
    assert (SLOW_TOOL, "completed") not in before  # killed while the slow tool ran
    assert before[("attach_rate_metrics", "completed")] == 1  # a sibling had finished

    # The resume and the uninterrupted run are the same command in a new process: ``main`` called here.
    resumed = run_cli(crash_env(uri), "resume", "--thread", str(thread["thread_id"]), "--json")
    assert resumed.returncode == 0, resumed.stderr
    solution = json.loads(resumed.stdout)
    assert solution["status"] == "success"

    completed = Counter(r["tool"] for r in _runs(uri) if r["phase"] == "completed")
    assert completed and set(completed.values()) == {1}, completed  # no tool step ran twice
    assert completed[SLOW_TOOL] == 1

    # the same solution as an uninterrupted run of the same goal on the same tenant
    fresh = run_cli(crash_env(uri), "solve", GOAL, "--tenant", TENANT, "--json")
    assert fresh.returncode == 0, fresh.stderr
    uninterrupted = json.loads(fresh.stdout)
    ignore = {"solution_id", "thread_id", "termination", "outcome_checks"}  # ids differ per solution
    assert {k: v for k, v in solution.items() if k not in ignore} == {
        k: v for k, v in uninterrupted.items() if k not in ignore
    }


def test_pack_module_is_importable() -> None:
    # guards the PYTHONPATH assumption the subprocesses rely on
    assert asyncio.iscoroutinefunction(__import__("tests.durability_pack", fromlist=["install"]).install)
