"""Service numbers through the official langgraph-sdk client against ``master-agent serve``.

For a trivial 3-node graph and for the retail goal (offline model): new thread + ``runs.wait`` median
and p95, time to the first SSE event, runs per second with 10 concurrent clients, and a background
run joined by ``join_stream`` to its end (the run may execute in the other worker). Then the scale
sweep (``benchmarks/sweep.py``): 1/10/50/100 concurrent clients on the trivial graph, beside Aegra when
it is installed. Printed, never asserted. Reference (Aegra 0.11 on this machine, issue 46): 43.5 ms new
thread + wait, 18.5 ms to first event, 26.3 runs/s with 10 clients, 29.8 with 50, p99 ~0.55 s at 10.
"""

from __future__ import annotations

import asyncio
import contextlib
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
import psutil
from langgraph_sdk import get_client

from master_agent.storage.embedded import stop_embedded_server

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
    pid: int
    """The ``master-agent serve`` process (its uvicorn workers are its children)."""
    data_dir: Path
    urls: tuple[str, ...] = ()
    """Every serve process's address when several share the database (``url`` is the first)."""
    pids: tuple[int, ...] = ()


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


async def _first_event(client: Any, case: dict[str, Any], thread_id: str | None = None) -> float:
    """From the request to the first SSE event of a stream run, stateless or on ``thread_id``."""
    start = time.perf_counter()
    first = 0.0
    async for _ in client.runs.stream(
        thread_id, case["assistant"], input=case["input"], stream_mode="values"
    ):
        if not first:
            first = time.perf_counter() - start
    return first


async def _stateless_wait(client: Any, case: dict[str, Any]) -> float:
    start = time.perf_counter()
    await client.runs.wait(None, case["assistant"], input=case["input"])
    return time.perf_counter() - start


async def _thread_first_event(client: Any, case: dict[str, Any]) -> float:
    """The first SSE event of a stream run on a thread made beforehand (not timed)."""
    thread = await client.threads.create()
    return await _first_event(client, case, thread["thread_id"])


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


def _percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def _worker_memory(pid: int) -> list[Any]:
    """The memory of each uvicorn worker of the ``serve`` process ``pid`` (the process itself with one
    worker). PSS splits the pages workers share (the embedder's memory-mapped weights, native
    libraries) between them; RSS counts them in each."""
    children = psutil.Process(pid).children()
    workers = [child for child in children if "resource_tracker" not in " ".join(child.cmdline())]
    return [worker.memory_full_info() for worker in workers or [psutil.Process(pid)] if worker.is_running()]


def _tree(pid: int) -> list[psutil.Process]:
    with contextlib.suppress(psutil.NoSuchProcess):
        root = psutil.Process(pid)
        return [root, *root.children(recursive=True)]
    return []


def _cpu_seconds(processes: list[psutil.Process]) -> float:
    """CPU time of live processes, plus what their exited (reaped) children used."""
    total = 0.0
    for process in processes:
        with contextlib.suppress(psutil.NoSuchProcess):
            times = process.cpu_times()
            total += times.user + times.system + times.children_user + times.children_system
    return total


def _postmaster(data_dir: Path) -> int | None:
    with contextlib.suppress(FileNotFoundError, IndexError, ValueError):
        return int((data_dir / "pg" / "postmaster.pid").read_text().split()[0])
    return None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@contextmanager
def serving(
    data_dir: str,
    extra_env: dict[str, str] | None = None,
    workers: int = 2,
    tenant: str = "demo-retail",
    *,
    processes: int = 1,
    keep_database: bool = False,
) -> Iterator[ServiceUnderTest]:
    """``processes`` ``master-agent serve`` processes on free ports over the data in ``data_dir`` (one
    embedded Postgres shared by all unless DATABASE_URL is set), with a key of ``tenant``; stopped (and
    the database, unless ``keep_database``) on the way out."""
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
    servers: list[subprocess.Popen[bytes]] = []
    urls: list[str] = []
    try:
        # Inside the try: this command starts the embedded Postgres, which a stop here must not leave behind.
        created = subprocess.run([*cli, "keys", "create", "--tenant", tenant], env=env, capture_output=True, text=True, check=True)  # fmt: skip
        key = json.loads(created.stdout)["api_key"]
        for index in range(processes):
            port = _free_port()
            # Its log is read when a benchmark finds it gone (serve_log).
            with serve_log(Path(data_dir), index).open("wb") as log:
                # One uvicorn worker per core of the reference machine; runs are shared through Postgres.
                servers.append(subprocess.Popen([*cli, "serve", "--port", str(port), "--workers", str(workers)], env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=log))  # fmt: skip
            urls.append(f"http://127.0.0.1:{port}")
        for url in urls:
            _wait_until_ready(url)
        yield ServiceUnderTest(
            url=urls[0],
            key=key,
            env=env,
            pid=servers[0].pid,
            data_dir=Path(data_dir),
            urls=tuple(urls),
            pids=tuple(server.pid for server in servers),
        )
    finally:
        stop_trees(servers)
        if not env.get("DATABASE_URL") and not keep_database:
            stop_embedded_server(Path(data_dir))


def stop_trees(processes: list[subprocess.Popen[bytes]], timeout_s: float = 30) -> None:
    """SIGTERM to each server (uvicorn stops its workers, they their helpers), then SIGKILL to whatever
    of their trees is left after ``timeout_s``: a worker whose parent was killed is no one's to stop."""
    trees: list[psutil.Process] = []
    for process in processes:
        with contextlib.suppress(psutil.NoSuchProcess):
            trees.extend(psutil.Process(process.pid).children(recursive=True))
        process.send_signal(signal.SIGTERM)
    for process in processes:
        try:
            process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    for leftover in trees:
        with contextlib.suppress(psutil.NoSuchProcess):
            leftover.kill()


def serve_log(data_dir: Path, index: int = 0) -> Path:
    """Where the ``index``-th serve process of ``serving`` writes its stderr."""
    return data_dir / f"serve-{index}.log"


def _wait_until_ready(url: str) -> None:
    """Until ``/ok`` answers 200: routing warm for every tenant, seconds alone, minutes on a loaded machine."""
    deadline = time.monotonic() + 600
    while True:
        try:
            if httpx.get(f"{url}/ok", timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            if time.monotonic() > deadline:
                raise
        time.sleep(0.2)


@contextmanager
def embedded_server_stopped(data_dir: str | Path) -> Iterator[Path]:
    """``data_dir``, whose embedded server (if an in-process run started one there) is stopped when the
    block ends, by success, failure or a signal (``exit_on_signals``): closing the pool leaves it
    running, and a removed directory under a running server fails."""
    try:
        yield Path(data_dir)
    finally:
        stop_embedded_server(Path(data_dir))


def exit_on_signals() -> None:
    """Turn SIGTERM and SIGHUP into ``SystemExit``, so the ``finally`` blocks that stop every server a
    benchmark started (the service, Aegra, the embedded Postgres) run when it is stopped by ``timeout``,
    ``kill`` or a closed terminal, not only by Ctrl-C."""
    for number in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(number, lambda signum, _frame: sys.exit(128 + signum))


def main(runs: int = 200, *, measure_requests: bool = True, sweep: bool = True, workers: int = 2) -> None:
    from benchmarks import sweep as scale  # it imports this module

    with (
        tempfile.TemporaryDirectory(prefix="ma-bench-svc-") as data_dir,
        serving(data_dir, workers=workers) as service,
    ):
        if measure_requests:
            asyncio.run(measure(service.url, service.key, runs))
        if sweep:
            scale.run(service, workers)


if __name__ == "__main__":
    exit_on_signals()
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 200)
