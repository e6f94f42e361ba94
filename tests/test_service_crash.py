"""A server killed mid-run: its run's lease expires, a new server claims it, and it finishes from its
last checkpoint with no finished step run again."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import httpx
import psycopg
from psycopg.rows import dict_row

from tests.conftest import create_database
from tests.durability_pack import SLOW_SECONDS, SLOW_TOOL, TENANT
from tests.live_server import create_key_cli, start_serve
from tests.test_durability import _INSTALL, crash_env, wait_for_row

GOAL = "Increase Store 5's accessory attach rate by 20% within 60 days"
ROOT = Path(__file__).resolve().parents[1]


def _env(uri: str) -> dict[str, str]:
    return {**crash_env(uri), "MASTER_AGENT_RUN_LEASE_S": "2"}


def test_killed_server_run_is_finished_by_the_next_server(pg_server_uri: str) -> None:
    uri = create_database(pg_server_uri, "svccrash")
    installed = subprocess.run(
        [sys.executable, "-c", _INSTALL], env=_env(uri), capture_output=True, text=True, timeout=120
    )
    assert installed.returncode == 0, installed.stderr
    key = create_key_cli(_env(uri), TENANT)

    first, url = start_serve(_env(uri))
    try:
        accepted = httpx.post(
            f"{url}/api/cs/strategic-goals",
            json={"goal": GOAL},
            headers={"X-API-Key": key},
            timeout=30,
        )
        assert accepted.status_code == 202
        run_id = accepted.json()["run_id"]
        wait_for_row(uri, f"SELECT 1 FROM crash_tool_runs WHERE tool = '{SLOW_TOOL}' AND phase = 'started'")
        time.sleep(SLOW_SECONDS / 3)  # let finished siblings' checkpoint writes land
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=30)
    finally:
        if first.poll() is None:
            first.kill()

    second, url = start_serve(_env(uri))
    try:
        run = wait_for_row(
            uri, f"SELECT status, attempts FROM runs WHERE run_id = '{run_id}' AND status <> 'running'", 120
        )
        assert run == {"status": "success", "attempts": 2}
        link = accepted.json()["links"]["self"]
        state = httpx.get(f"{url}{link}", headers={"X-API-Key": key}).json()
        assert state["status"] == "success"
        assert state["solution"]["strategy"]["intervention_id"]
    finally:
        second.send_signal(signal.SIGTERM)
        second.wait(timeout=30)
    with psycopg.connect(uri, autocommit=True, row_factory=dict_row) as conn:
        rows = conn.execute("SELECT tool FROM crash_tool_runs WHERE phase = 'completed'").fetchall()
    completed = Counter(row["tool"] for row in rows)
    assert set(completed.values()) == {1}, completed  # nothing finished ran twice
