"""The official JS SDK (``@langchain/langgraph-sdk``, installed from npm by ``make test``) against the
real service: ``tests/js/sdk_check.mjs`` drives threads, runs.stream with sub-graphs, joinStream with
``lastEventId``, the store and crons, and fails on the first check that does not hold."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
from pathlib import Path

from tests.live_server import LiveServer, live_server_fixture, two_tenant_keys

live = live_server_fixture("jssdk", graphs=("chat=tests.chat_model_graph:make_graph",))
keys = two_tenant_keys
SCRIPT_DIR = Path(__file__).resolve().parent / "js"


async def test_the_js_sdk_drives_threads_runs_store_and_crons(live: LiveServer, keys: dict[str, str]) -> None:
    node = shutil.which("node")
    assert node is not None, "node is needed (Debian's nodejs); make test installs the JS SDK with npm"
    assert (SCRIPT_DIR / "node_modules" / "@langchain" / "langgraph-sdk").is_dir(), "run: make js-deps"
    env = {**os.environ, "MASTER_AGENT_URL": live.url, "MASTER_AGENT_KEY": keys["demo-retail"]}
    process = await asyncio.create_subprocess_exec(
        node,
        "sdk_check.mjs",
        cwd=SCRIPT_DIR,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(), 300)
    assert process.returncode == 0, err.decode()[-4000:]
    seen = json.loads(out.decode().strip().splitlines()[-1])
    assert seen["ok"] is True
    assert any(name.startswith("updates|writer:") for name in seen["stream_events"])
