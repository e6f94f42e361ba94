"""``langgraph dev`` serves the graph-making function; the official SDK solves the retail goal."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from langgraph_sdk import get_client

from tests.conftest import create_database, installed_template
from tests.live_server import free_port

ROOT = Path(__file__).resolve().parents[1]
GOAL = "Increase Store 5's accessory attach rate by 20% within 60 days"


@pytest.fixture(scope="module")
def langgraph_dev(pg_server_uri: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    # A copy of the installed database (the demo tenants the server would install at its start).
    uri = create_database(
        pg_server_uri, "lgdev", template=installed_template(pg_server_uri, tmp_path_factory)
    )
    port = free_port()
    env = {
        **os.environ,
        "DATABASE_URL": uri,
        "MASTER_AGENT_MODEL": "offline",
        "LANGGRAPH_CLI_NO_ANALYTICS": "1",
    }
    log = tmp_path_factory.mktemp("lgdev") / "server.log"
    langgraph = Path(sys.executable).with_name("langgraph")
    with log.open("w") as out:
        server = subprocess.Popen(
            [
                str(langgraph),
                "dev",
                "--no-browser",
                "--no-reload",
                "--port",
                str(port),
                "--host",
                "127.0.0.1",
            ],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            if server.poll() is not None:
                raise AssertionError(f"langgraph dev exited: {log.read_text()[-3000:]}")
            try:
                if httpx.get(f"{url}/ok", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.3)
        else:
            raise AssertionError(f"langgraph dev did not start: {log.read_text()[-3000:]}")
        yield url
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)


async def test_sdk_solves_the_retail_goal_through_langgraph_dev(langgraph_dev: str) -> None:
    client = get_client(url=langgraph_dev)
    assistants = await client.assistants.search(graph_id="master_agent")
    assert assistants, "master_agent is not served"
    thread = await client.threads.create()
    config = {"configurable": {"tenant_id": "demo-retail", "goal": GOAL}}
    state = await client.runs.wait(thread["thread_id"], "master_agent", input={"goal": GOAL}, config=config)
    assert isinstance(state, dict)
    assert state["envelope"]["status"] == "success"
    solution = state["solution"]
    assert solution["root_cause"]["driver"] == "tenure_months"
    assert solution["strategy"]["intervention_id"]
    assert solution["playbook"]["trigger"]["cron"]
    assert state["termination"]["reason"] == "completed"
    saved = await client.threads.get_state(thread["thread_id"])
    assert saved["values"]["solution"] == solution


async def test_without_configurable_the_graph_classifies_the_goal(langgraph_dev: str) -> None:
    client = get_client(url=langgraph_dev)
    state = await client.runs.wait(None, "master_agent", input={"goal": GOAL})
    assert isinstance(state, dict)
    assert state["envelope"]["status"] == "success"
    assert state["solution"]["expected_outcome"]["timeline_days"] == 60


async def test_client_id_names_the_tenant_and_an_unknown_one_is_refused(langgraph_dev: str) -> None:
    client = get_client(url=langgraph_dev)
    config = {"configurable": {"client_id": "demo-retail", "complexity": "standard"}}
    state = await client.runs.wait(None, "master_agent", input={"goal": GOAL}, config=config)
    assert isinstance(state, dict)
    assert state["envelope"]["status"] == "success"
    thread = await client.threads.create()
    unknown = {"configurable": {"client_id": "no-such-tenant", "complexity": "standard"}}
    run = await client.runs.create(thread["thread_id"], "master_agent", input={"goal": GOAL}, config=unknown)
    await client.runs.join(thread["thread_id"], run["run_id"])
    finished = await client.runs.get(thread["thread_id"], run["run_id"])
    assert finished["status"] == "error"
