"""Schemathesis fuzzes every operation of our OpenAPI on a live server: no server error, ever.

Schemathesis lives in its own virtualenv (``make install`` creates it): it needs a newer jsonschema-rs
than langgraph-api (used by ``langgraph dev``) accepts, so the two cannot share one environment.
"""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import pytest

from tests.conftest import create_database, installed_template
from tests.live_server import create_key_cli, start_serve

ROOT = Path(__file__).resolve().parents[1]
SCHEMATHESIS = Path(os.environ.get("MASTER_AGENT_SCHEMATHESIS", ROOT / ".venv-schemathesis" / "bin" / "st"))


def test_fuzzing_the_openapi_finds_no_server_error(
    pg_server_uri: str, tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    assert SCHEMATHESIS.exists(), f"{SCHEMATHESIS} is missing: run 'make install'"
    # A copy of the installed database (the demo tenants the server would install at its start).
    uri = create_database(pg_server_uri, "fuzz", template=installed_template(pg_server_uri, tmp_path_factory))
    # Rate limits off: a refused request would leave the logic behind it unfuzzed (tested in
    # test_rate_limits).
    env = {
        **os.environ,
        "DATABASE_URL": uri,
        "MASTER_AGENT_MODEL": "offline",
        "MASTER_AGENT_RATE_REQUESTS": "0",
        "MASTER_AGENT_RATE_RUNS": "0",
    }
    key = create_key_cli(env, "demo-retail")
    server, url = start_serve(env, "-v", log=tmp_path / "server.log")
    log = tmp_path / "server.log"
    try:
        fuzz = subprocess.run(
            [
                str(SCHEMATHESIS),
                "run",
                f"{url}/openapi.json",
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
                # The thread streams follow a thread until the client leaves: a request to one never
                # ends, by design (tested in test_platform_parity and test_thread_protocol).
                "--exclude-path",
                "/threads/{thread_id}/stream",
                "--exclude-path",
                "/threads/{thread_id}/stream/events",
            ],
            env={**os.environ, "SCHEMATHESIS_HOOKS": str(ROOT / "tests" / "schemathesis_hooks.py")},
            capture_output=True,
            text=True,
            timeout=900,
        )
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=30)
    assert fuzz.returncode == 0, fuzz.stdout[-6000:]
    assert "Exception in ASGI application" not in log.read_text()
