"""Schemathesis fuzzes every operation of our OpenAPI on a live server: no server error, ever.

Schemathesis lives in its own virtualenv (``make install`` creates it): it needs a newer jsonschema-rs
than langgraph-api (used by ``langgraph dev``) accepts, so the two cannot share one environment.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import httpx
import psycopg

from tests.conftest import database_uri

ROOT = Path(__file__).resolve().parents[1]
SCHEMATHESIS = Path(os.environ.get("MASTER_AGENT_SCHEMATHESIS", ROOT / ".venv-schemathesis" / "bin" / "st"))


def test_fuzzing_the_openapi_finds_no_server_error(pg_server_uri: str, tmp_path: Path) -> None:
    assert SCHEMATHESIS.exists(), f"{SCHEMATHESIS} is missing: run 'make install'"
    name = f"fuzz_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(pg_server_uri, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    env = {**os.environ, "DATABASE_URL": database_uri(pg_server_uri, name), "MASTER_AGENT_MODEL": "offline"}
    created = subprocess.run(
        [sys.executable, "-m", "master_agent.cli", "keys", "create", "--tenant", "demo-retail"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert created.returncode == 0, created.stderr
    key = json.loads(created.stdout)["api_key"]
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    log = tmp_path / "server.log"
    with log.open("w") as out:
        server = subprocess.Popen(
            [sys.executable, "-m", "master_agent.cli", "-v", "serve", "--port", str(port)],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/ok", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                assert time.monotonic() < deadline, log.read_text()[-2000:]
                time.sleep(0.2)
        fuzz = subprocess.run(
            [
                str(SCHEMATHESIS),
                "run",
                f"http://127.0.0.1:{port}/openapi.json",
                "-H",
                f"X-API-Key: {key}",
                "--checks",
                "not_a_server_error",
                "--max-examples",
                "10",
                "--seed",
                "20261122",
                "--request-timeout",
                "60",
            ],
            capture_output=True,
            text=True,
            timeout=900,
        )
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=30)
    assert fuzz.returncode == 0, fuzz.stdout[-6000:]
    assert "Exception in ASGI application" not in log.read_text()
