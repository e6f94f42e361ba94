"""The official JS SDK (``@langchain/langgraph-sdk``, installed from npm by ``make test``) against the
real service: ``tests/js/sdk_check.mjs`` drives every method of its assistants, threads, runs, store and
crons clients (runs.stream with sub-graphs, joinStream after ``lastEventId``, the thread's own stream,
cancel, batches, copies, checkpoints), each a named check; every one must pass and none be left out."""

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


async def test_every_method_of_the_js_sdk_works(live: LiveServer, keys: dict[str, str]) -> None:
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
    lines = out.decode().strip().splitlines()
    assert lines, err.decode()[-4000:]
    seen = json.loads(lines[-1])
    assert seen["failed"] == {} and seen["undriven"] == [], json.dumps(
        seen["failed"] or seen["undriven"], indent=1
    )
    assert process.returncode == 0 and seen["ok"] is True, err.decode()[-4000:]
    assert len(seen["passed"]) >= 40
    assert any(name.startswith("updates|writer:") for name in seen["stream_events"])
