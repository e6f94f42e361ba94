"""Scale-out: the same client load against 1, 2 and 4 ``master-agent serve`` processes on one Postgres.

Each level starts that many serve processes (one uvicorn worker each) over one database and spreads the
clients over them in turn, as a round-robin proxy would. Every client runs new thread + ``runs.wait`` on the
trivial graph in a loop. Printed per level: runs/s, p50/p95 latency, CPU per run of the serve processes
and of Postgres, and the most Postgres connections seen at once (client backends, sampled). Printed,
never asserted; every process started is stopped, the embedded Postgres last.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import psutil
from benchmarks.service import CASES, _cpu_seconds, _new_thread_wait, _percentile, _postmaster, _tree, serving
from langgraph_sdk import get_client

from master_agent.storage.embedded import stop_embedded_server

LEVELS = (1, 2, 4)
CLIENTS = 40
RUNS = 400


def client_backends(postmaster: psutil.Process) -> int:
    """Postgres backends serving a client now (TCP or Unix socket), not its background processes."""
    count = 0
    for child in postmaster.children():
        with contextlib.suppress(psutil.Error):
            title = " ".join(child.cmdline())
            if "[local]" in title or "(" in title:
                count += 1
    return count


async def _sample_backends(postmaster: psutil.Process | None, most: list[int], stop: asyncio.Event) -> None:
    while postmaster is not None and not stop.is_set():
        most[0] = max(most[0], client_backends(postmaster))
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), 0.1)


async def _client(url: str, key: str, case: dict[str, Any], count: int, latencies: list[float]) -> None:
    client = get_client(url=url, api_key=key)
    try:
        for _ in range(count):
            latencies.append(await _new_thread_wait(client, case))
    finally:
        await client.aclose()


async def measure_level(
    urls: tuple[str, ...], key: str, pids: tuple[int, ...], data_dir: Path, clients: int, runs: int
) -> str:
    case = CASES["trivial"]
    postmaster_pid = _postmaster(data_dir)
    postmaster = psutil.Process(postmaster_pid) if postmaster_pid else None
    servers = [process for pid in pids for process in _tree(pid)]
    database = _tree(postmaster_pid) if postmaster_pid else []
    # One warm run per process: each graph is built and each pool filled before the clock starts.
    for url in urls:
        await _client(url, key, case, 1, [])
    server_cpu, database_cpu = _cpu_seconds(servers), _cpu_seconds(database)
    latencies: list[float] = []
    most = [0]
    stop = asyncio.Event()
    sampler = asyncio.create_task(_sample_backends(postmaster, most, stop))
    per_client = max(1, -(-runs // clients))
    start = time.perf_counter()
    await asyncio.gather(
        *(_client(urls[index % len(urls)], key, case, per_client, latencies) for index in range(clients))
    )
    elapsed = time.perf_counter() - start
    stop.set()
    await sampler
    done = len(latencies)
    server_ms = (_cpu_seconds(servers) - server_cpu) / done * 1000
    database_ms = (_cpu_seconds(database) - database_cpu) / done * 1000 if database else float("nan")
    p50, p95 = (_percentile(latencies, q) for q in (0.5, 0.95))
    return (
        f"{len(urls):>9} {done / elapsed:>8.1f} {p50 * 1000:>8.1f} {p95 * 1000:>8.1f} "
        f"{server_ms:>17.1f} {database_ms:>13.1f} {most[0] if postmaster else 'n/a':>11}"
    )


def main(levels: tuple[int, ...] = LEVELS, clients: int = CLIENTS, runs: int = RUNS) -> None:
    print(f"scale-out (trivial graph, new thread + runs.wait, {clients} clients spread over the processes, "
          f"{runs} runs per level, one uvicorn worker per process, one Postgres)")  # fmt: skip
    print(f"{'processes':>9} {'runs/s':>8} {'p50 ms':>8} {'p95 ms':>8} {'server CPU ms/run':>17} "
          f"{'PG CPU ms/run':>13} {'connections':>11}")  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="ma-bench-scale-") as data_dir:
        try:
            for count in levels:
                with serving(data_dir, workers=1, processes=count, keep_database=True) as service:
                    line = asyncio.run(
                        measure_level(service.urls, service.key, service.pids, Path(data_dir), clients, runs)
                    )
                print(line, flush=True)
        finally:
            stop_embedded_server(Path(data_dir))


if __name__ == "__main__":
    main(runs=int(sys.argv[1]) if len(sys.argv) > 1 else RUNS)
