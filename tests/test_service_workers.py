"""Two ``serve`` processes on one database share the runs, and no run executes twice."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
from psycopg.rows import dict_row

from tests.conftest import create_database, installed_template
from tests.live_server import create_key_cli, start_serve

ROOT = Path(__file__).resolve().parents[1]
#: A request waits this long (httpx's default of 5 s, on cores two servers and their runs keep busy, is
#: a read timeout of its own, not an answer).
TIMEOUT_S = 60
QUESTION = "What is the attach rate of Store 5?"


def test_two_servers_share_the_runs_and_none_runs_twice(
    pg_server_uri: str, tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    uri = create_database(
        pg_server_uri, "workers", template=installed_template(pg_server_uri, tmp_path_factory)
    )
    env = {
        **os.environ,
        "DATABASE_URL": uri,
        "MASTER_AGENT_MODEL": "offline",
        "MASTER_AGENT_RUN_CONCURRENCY": "2",
    }
    key = create_key_cli(env, "demo-retail")
    logs = [tmp_path / "first.log", tmp_path / "second.log"]
    servers = [start_serve(env, log=logs[0]), start_serve(env, log=logs[1])]
    try:
        # One evolution scheduler leads; the other process stands by. Both say so at start-up.
        states = [
            httpx.get(f"{url}/health", headers={"X-API-Key": key}, timeout=TIMEOUT_S).json()["scheduler"]
            for _, url in servers
        ]
        assert sorted(states) == ["leader", "standby"]
        for log, state in zip(logs, states, strict=True):
            assert f"embeddings all-MiniLM-L6-v2 (384 dimensions); scheduler {state}" in log.read_text()
        run_ids = []
        for _ in range(16):  # all submitted to the first server
            response = httpx.post(
                f"{servers[0][1]}/threads", json={}, headers={"X-API-Key": key}, timeout=TIMEOUT_S
            )
            thread_id = response.json()["thread_id"]
            run = httpx.post(
                f"{servers[0][1]}/threads/{thread_id}/runs",
                json={"assistant_id": "master_agent", "input": {"goal": QUESTION}},
                headers={"X-API-Key": key},
                timeout=TIMEOUT_S,
            ).json()
            run_ids.append(run["run_id"])
        deadline = time.monotonic() + 120
        with psycopg.connect(uri, autocommit=True, row_factory=dict_row) as conn:
            while time.monotonic() < deadline:
                rows = conn.execute(
                    "SELECT status, attempts, lease_owner FROM runs WHERE run_id = ANY(%s)", (run_ids,)
                ).fetchall()
                if all(row["status"] == "success" for row in rows) and len(rows) == len(run_ids):
                    break
                time.sleep(0.2)
        # A run the client waits for is executed by the process holding the request, whichever it is.
        waited = {}
        for server, url in servers:
            response = httpx.post(
                f"{url}/runs/wait",
                json={"assistant_id": "master_agent", "input": {"goal": QUESTION}, "on_completion": "keep"},
                headers={"X-API-Key": key},
                timeout=TIMEOUT_S,
            )
            assert response.status_code == 200 and response.json()["envelope"]["status"] in (
                "success",
                "partial",
            )
            run_id = response.headers["content-location"].rsplit("/", 1)[1]
            waited[server.pid] = run_id
        # A background run followed from both servers (at most one executes it) streams the same
        # events to its end on each.
        thread_id = httpx.post(
            f"{servers[0][1]}/threads", json={}, headers={"X-API-Key": key}, timeout=TIMEOUT_S
        ).json()["thread_id"]
        run = httpx.post(
            f"{servers[0][1]}/threads/{thread_id}/runs",
            json={
                "assistant_id": "master_agent",
                "input": {"goal": QUESTION},
                "stream_mode": ["values", "updates"],
            },
            headers={"X-API-Key": key},
            timeout=TIMEOUT_S,
        ).json()
        followed = [
            _follow(url, key, f"/threads/{thread_id}/runs/{run['run_id']}/stream")
            for _, url in reversed(servers)
        ]
        assert followed[0] == followed[1]
        assert followed[0][-1] == ("end", None) and "values" in [name for name, _ in followed[0]]
        with psycopg.connect(uri, autocommit=True, row_factory=dict_row) as conn:
            owners = {
                pid: conn.execute(
                    "SELECT lease_owner, attempts FROM runs WHERE run_id = %s", (run_id,)
                ).fetchone()
                for pid, run_id in waited.items()
            }
    finally:
        for server, _ in servers:
            server.send_signal(signal.SIGTERM)
            server.wait(timeout=30)
    assert [row["status"] for row in rows] == ["success"] * len(run_ids)
    assert {row["attempts"] for row in rows} == {1}  # no run executed twice
    assert len({row["lease_owner"] for row in rows}) == 2  # both servers took runs
    for pid, row in owners.items():
        assert f":{pid}:" in row["lease_owner"] and row["attempts"] == 1


def _follow(url: str, key: str, path: str) -> list[tuple[str, Any]]:
    """A stream's events after its metadata, as (event, data)."""
    events: list[tuple[str, Any]] = []
    with httpx.stream("GET", f"{url}{path}", headers={"X-API-Key": key}, timeout=60) as response:
        name = ""
        for line in response.iter_lines():
            if line.startswith("event: "):
                name = line[7:]
            elif line.startswith("data: ") and name != "metadata":
                events.append((name, json.loads(line[6:])))
    return events
