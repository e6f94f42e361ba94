"""A server killed mid-run: its run's lease expires, a new server claims it, and it finishes from its
last checkpoint with no finished step run again."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections import Counter
from pathlib import Path

import httpx
import psycopg
from psycopg.rows import dict_row

from tests.conftest import database_uri
from tests.durability_pack import SLOW_SECONDS, SLOW_TOOL, TENANT
from tests.test_durability import _INSTALL

GOAL = "Increase Store 5's accessory attach rate by 20% within 60 days"
ROOT = Path(__file__).resolve().parents[1]


def _port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _env(uri: str) -> dict[str, str]:
    env = {**os.environ, "DATABASE_URL": uri, "MASTER_AGENT_MODEL": "offline"}
    env["MASTER_AGENT_DOMAIN_PACKS"] = "tests.durability_pack"
    env["MASTER_AGENT_RUN_LEASE_S"] = "2"
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    return env


def _serve(uri: str, port: int) -> subprocess.Popen[bytes]:
    server = subprocess.Popen(
        [sys.executable, "-m", "master_agent.cli", "serve", "--port", str(port)],
        env=_env(uri),
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/ok", timeout=1).status_code == 200:
                return server
        except httpx.HTTPError:
            time.sleep(0.1)
    server.kill()
    raise AssertionError("server did not start")


def _wait(uri: str, query: str, timeout: float = 60) -> dict[str, object]:
    deadline = time.monotonic() + timeout
    with psycopg.connect(uri, autocommit=True, row_factory=dict_row) as conn:
        while time.monotonic() < deadline:
            row = conn.execute(query).fetchone()  # type: ignore[arg-type]
            if row is not None:
                return row
            time.sleep(0.05)
    raise AssertionError(f"timed out waiting for: {query}")


def test_killed_server_run_is_finished_by_the_next_server(pg_server_uri: str) -> None:
    name = f"svccrash_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(pg_server_uri, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    uri = database_uri(pg_server_uri, name)
    installed = subprocess.run(
        [sys.executable, "-c", _INSTALL], env=_env(uri), capture_output=True, text=True, timeout=120
    )
    assert installed.returncode == 0, installed.stderr
    created = subprocess.run(
        [sys.executable, "-m", "master_agent.cli", "keys", "create", "--tenant", TENANT],
        env=_env(uri),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert created.returncode == 0, created.stderr
    key = json.loads(created.stdout)["api_key"]

    first = _serve(uri, port := _port())
    try:
        accepted = httpx.post(
            f"http://127.0.0.1:{port}/api/cs/strategic-goals",
            json={"goal": GOAL},
            headers={"X-API-Key": key},
            timeout=30,
        )
        assert accepted.status_code == 202
        run_id = accepted.json()["run_id"]
        _wait(uri, f"SELECT 1 FROM crash_tool_runs WHERE tool = '{SLOW_TOOL}' AND phase = 'started'")
        time.sleep(SLOW_SECONDS / 3)  # let finished siblings' checkpoint writes land
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=30)
    finally:
        if first.poll() is None:
            first.kill()

    second = _serve(uri, port := _port())
    try:
        run = _wait(
            uri, f"SELECT status, attempts FROM runs WHERE run_id = '{run_id}' AND status <> 'running'", 120
        )
        assert run == {"status": "success", "attempts": 2}
        link = accepted.json()["links"]["self"]
        state = httpx.get(f"http://127.0.0.1:{port}{link}", headers={"X-API-Key": key}).json()
        assert state["status"] == "success"
        assert state["solution"]["strategy"]["intervention_id"]
    finally:
        second.send_signal(signal.SIGTERM)
        second.wait(timeout=30)
    with psycopg.connect(uri, autocommit=True, row_factory=dict_row) as conn:
        rows = conn.execute("SELECT tool FROM crash_tool_runs WHERE phase = 'completed'").fetchall()
    completed = Counter(row["tool"] for row in rows)
    assert set(completed.values()) == {1}, completed  # nothing finished ran twice
