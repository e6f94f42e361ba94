"""Service numbers through the official langgraph-sdk client against ``master-agent serve``.

For a trivial 3-node graph and for the retail goal (offline model): new thread + ``runs.wait`` median
and p95, time to the first SSE event, runs per second with 10 concurrent clients, and a background
run joined by ``join_stream`` to its end (the run may execute in the other worker). Printed, never
asserted. Reference (Aegra on this machine): 85.6 ms new thread + wait, 19.1 ms to first event,
16.5 runs/s with 10 clients, trivial graph.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from langgraph_sdk import get_client

ROOT = Path(__file__).resolve().parents[1]
GOAL = "Increase Store 5's accessory attach rate by 20% within 60 days"
CASES: dict[str, dict[str, Any]] = {
    "trivial": {"assistant": "trivial", "input": {"count": 0}},
    "retail": {"assistant": "master_agent", "input": {"goal": GOAL}},
}


@dataclass(frozen=True)
class ServiceUnderTest:
    url: str
    key: str
    env: dict[str, str]


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:8.2f} ms"


def _p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[int(0.95 * (len(ordered) - 1))]


async def _new_thread_wait(client: Any, case: dict[str, Any]) -> float:
    start = time.perf_counter()
    thread = await client.threads.create()
    await client.runs.wait(thread["thread_id"], case["assistant"], input=case["input"])
    return time.perf_counter() - start


async def _first_event(client: Any, case: dict[str, Any]) -> float:
    start = time.perf_counter()
    first = 0.0
    async for _ in client.runs.stream(None, case["assistant"], input=case["input"], stream_mode="values"):
        if not first:
            first = time.perf_counter() - start
    return first


async def _create_join_stream(client: Any, case: dict[str, Any]) -> float:
    """A background run followed by ``join_stream`` to its end (either worker may execute it)."""
    thread = await client.threads.create()
    start = time.perf_counter()
    run = await client.runs.create(thread["thread_id"], case["assistant"], input=case["input"])
    async for _ in client.runs.join_stream(thread["thread_id"], run["run_id"]):
        pass
    return time.perf_counter() - start


async def _throughput(url: str, key: str, case: dict[str, Any], clients: int, per_client: int) -> float:
    """Steady state: each client has its connection open (one run first) before the clock starts."""
    sdk_clients = [get_client(url=url, api_key=key) for _ in range(clients)]
    await asyncio.gather(*(_new_thread_wait(client, case) for client in sdk_clients))

    async def one_client(client: Any) -> None:
        for _ in range(per_client):
            await _new_thread_wait(client, case)

    start = time.perf_counter()
    await asyncio.gather(*(one_client(client) for client in sdk_clients))
    return clients * per_client / (time.perf_counter() - start)


async def measure(url: str, key: str, runs: int) -> None:
    client = get_client(url=url, api_key=key)
    for name, case in CASES.items():
        for _ in range(5):  # warm: graph caches, pool
            await _new_thread_wait(client, case)
        waits = [await _new_thread_wait(client, case) for _ in range(runs)]
        firsts = [await _first_event(client, case) for _ in range(min(runs, 50))]
        joins = [await _create_join_stream(client, case) for _ in range(min(runs, 50))]
        per_client = max(runs // 10, 2)
        rate = await _throughput(url, key, case, clients=10, per_client=per_client)
        print(
            f"service {name:<8} new thread + runs.wait median {_ms(statistics.median(waits))} "
            f"p95 {_ms(_p95(waits))} (n={runs}) | first SSE event median {_ms(statistics.median(firsts))} "
            f"| {rate:6.1f} runs/s with 10 clients | runs.create + join_stream to the end median "
            f"{_ms(statistics.median(joins))}"
        )


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@contextmanager
def serving(
    data_dir: str, extra_env: dict[str, str] | None = None, workers: int = 2, tenant: str = "demo-retail"
) -> Iterator[ServiceUnderTest]:
    """``master-agent serve`` on a free port over the data in ``data_dir`` (the embedded Postgres unless
    DATABASE_URL is set), with a key of ``tenant``; stopped (and its database) on the way out."""
    env = {
        **os.environ,
        "MASTER_AGENT_MODEL": "offline",
        "MASTER_AGENT_DATA_DIR": data_dir,
        "MASTER_AGENT_GRAPHS": "trivial=benchmarks.trivial_graph:make_graph",
        "MASTER_AGENT_RUN_CONCURRENCY": "16",
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
        **(extra_env or {}),
    }
    cli = [sys.executable, "-m", "master_agent.cli"]
    created = subprocess.run([*cli, "keys", "create", "--tenant", tenant], env=env, capture_output=True, text=True, check=True)  # fmt: skip
    key = json.loads(created.stdout)["api_key"]
    port = _free_port()
    # One uvicorn worker per core of the reference machine; runs are shared through Postgres.
    server = subprocess.Popen([*cli, "serve", "--port", str(port), "--workers", str(workers)], env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    try:
        url = f"http://127.0.0.1:{port}"
        # Ready only once routing is warm for every tenant: seconds alone, minutes on a loaded machine.
        deadline = time.monotonic() + 600
        while True:
            try:
                if httpx.get(f"{url}/ok", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
        yield ServiceUnderTest(url=url, key=key, env=env)
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=30)
        if not env.get("DATABASE_URL"):
            from pgserver import get_server  # type: ignore[attr-defined]

            get_server(Path(data_dir) / "pg", cleanup_mode="stop").cleanup()


def main(runs: int = 200) -> None:
    with tempfile.TemporaryDirectory(prefix="ma-bench-svc-") as data_dir, serving(data_dir) as service:
        asyncio.run(measure(service.url, service.key, runs))


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 200)
