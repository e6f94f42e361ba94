"""The scale sweep: throughput and tail latency as clients grow past the cores, ours and Aegra's side by side.

At 1/10/50/100 concurrent clients, each doing new thread + ``runs.wait`` on the trivial 3-node graph in a
loop through the official langgraph-sdk client: runs/s, latency p50/p95/p99 and p99/p50, CPU per run of
the server's processes and of Postgres, and the memory of each server worker. When Aegra is installed
beside the project (``make bench-aegra-install``, see ``benchmarks/aegra.py``), the same client script runs
against Aegra's server too, with as many workers, on the same Postgres (its own database), and each level
prints both rows and the ratio. Rounds alternate between the servers (ours first, then Aegra first), so a
change in the machine's load hits both alike. ``BENCH_BASELINE=<checkout>`` measures another tree of ours
(``main``, say) in Aegra's place, in the same way: its own ``serve`` over a scratch database of the same
Postgres, so a change is compared with what it changes within one run on a noisy machine. Printed, never
asserted.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import subprocess
import tempfile
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from benchmarks import aegra
from benchmarks.evolution import scratch_database
from benchmarks.service import (
    CASES,
    ServiceUnderTest,
    _cpu_seconds,
    _new_thread_wait,
    _percentile,
    _postmaster,
    _stateless_wait,
    _thread_first_event,
    _tree,
    _worker_memory,
    serve_log,
    serving,
)
from langgraph_sdk import get_client

#: Concurrent clients of the scale sweep, and the runs measured at each level for each server.
SWEEP_CLIENTS = (1, 10, 50, 100)
SWEEP_RUNS = 200
#: Rounds per level and server, alternating which server goes first.
ROUNDS = 2
#: One client's requests per figure and server for the per-request figures (after WARM_REQUESTS each).
REQUEST_RUNS = 60
WARM_REQUESTS = 5
#: The per-request figures (issue 46's table): one client, one request at a time.
REQUEST_FIGURES: dict[str, Callable[[Any, dict[str, Any]], Awaitable[float]]] = {
    "new thread + runs.wait": _new_thread_wait,
    "stateless runs.wait": _stateless_wait,
    "first SSE event, thread stream": _thread_first_event,
}


@dataclass(frozen=True)
class Target:
    """One server the sweep measures."""

    name: str
    url: str
    key: str
    pid: int
    """The server's root process (uvicorn workers are its children)."""


@dataclass
class LevelFigures:
    """What one server did at one level, summed over its rounds."""

    latencies: list[float] = field(default_factory=list)
    elapsed: float = 0.0
    server_cpu: float = 0.0
    database_cpu: float = 0.0

    @property
    def rate(self) -> float:
        return len(self.latencies) / self.elapsed

    def percentile(self, fraction: float) -> float:
        return _percentile(self.latencies, fraction)


async def _runs_in_turn(client: Any, case: dict[str, Any], count: int, latencies: list[float]) -> None:
    for _ in range(count):
        latencies.append(await _new_thread_wait(client, case))


async def _round(target: Target, case: dict[str, Any], clients: int, runs: int, postmaster: int | None,
                 figures: LevelFigures) -> None:  # fmt: skip
    # No warm-up round: a client idle while the others finish theirs could find its connection
    # closed by the server's keep-alive timeout. Each client opens its connection in its first run.
    sdk_clients = [get_client(url=target.url, api_key=target.key) for _ in range(clients)]
    per_client = max(2, -(-runs // clients))
    server = _tree(target.pid)
    database = _tree(postmaster) if postmaster else []
    server_cpu, database_cpu = _cpu_seconds(server), _cpu_seconds(database)
    loop = asyncio.get_running_loop()
    start = loop.time()
    try:
        await asyncio.gather(
            *(_runs_in_turn(client, case, per_client, figures.latencies) for client in sdk_clients)
        )
    except httpx.HTTPError as error:
        alive = "running" if server and server[0].is_running() else "exited"
        raise RuntimeError(
            f"{target.name} at {target.url} ({alive}) failed at {clients} clients: {error!r}"
        ) from error
    finally:
        for client in sdk_clients:
            await client.aclose()
    figures.elapsed += loop.time() - start
    figures.server_cpu += _cpu_seconds(server) - server_cpu
    figures.database_cpu += _cpu_seconds(database) - database_cpu if database else float("nan")


def _row(label: str, clients: int, figures: LevelFigures, pid: int) -> str:
    runs = len(figures.latencies)
    p50, p95, p99 = (figures.percentile(q) for q in (0.5, 0.95, 0.99))
    memory = " ".join(f"{info.rss / 2**20:.0f}/{info.pss / 2**20:.0f}" for info in _worker_memory(pid))
    return (f"{label:<12} {clients:>7} {figures.rate:>8.1f} {p50 * 1000:>8.1f} {p95 * 1000:>8.1f} "
            f"{p99 * 1000:>8.1f} {p99 / p50:>7.1f} {figures.server_cpu / runs * 1000:>17.1f} "
            f"{figures.database_cpu / runs * 1000:>13.1f} {memory:>23}")  # fmt: skip


def _ratio_row(clients: int, ours: LevelFigures, peer: LevelFigures) -> str:
    """Ours against the peer, each figure read as "times better": runs/s ours/peer, latency peer/ours."""
    p50, p95, p99 = (peer.percentile(q) / ours.percentile(q) for q in (0.5, 0.95, 0.99))
    return (f"{'ratio':<12} {clients:>7} {ours.rate / peer.rate:>7.2f}x {p50:>7.2f}x {p95:>7.2f}x "
            f"{p99:>7.2f}x")  # fmt: skip


async def per_request(targets: list[Target], case: dict[str, Any], runs: int = REQUEST_RUNS) -> None:
    """Issue 46's per-request figures, medians of one client's requests in turn: each request goes to
    every target before the next (the first target alternating), so the machine's load hits all alike."""
    clients = [get_client(url=target.url, api_key=target.key) for target in targets]
    times: dict[tuple[str, str], list[float]] = {}
    try:
        for figure, request in REQUEST_FIGURES.items():
            for index in range(WARM_REQUESTS + runs):
                pairs = list(zip(targets, clients, strict=True))
                for target, client in pairs if index % 2 == 0 else pairs[::-1]:
                    elapsed = await request(client, case)
                    if index >= WARM_REQUESTS:
                        times.setdefault((figure, target.name), []).append(elapsed)
    finally:
        for client in clients:
            await client.aclose()
    names = [target.name for target in targets]
    print(f"per request ({case['assistant']} graph, one client, medians of {runs} each, interleaved; load "
          f"average {' '.join(f'{load:.1f}' for load in os.getloadavg())})")  # fmt: skip
    ratio = f" {f'{names[1]}/{names[0]}':>14}" if len(targets) == 2 else ""
    print(f"{'figure':<32}" + "".join(f" {name + ' ms':>14}" for name in names) + ratio)
    for figure in REQUEST_FIGURES:
        medians = [statistics.median(times[figure, name]) for name in names]
        row = f"{figure:<32}" + "".join(f" {median * 1000:>14.1f}" for median in medians)
        if len(targets) == 2:
            row += f" {medians[1] / medians[0]:>13.2f}x"
        print(row)


async def scale_sweep(
    targets: list[Target],
    case: dict[str, Any],
    postmaster: int | None,
    levels: tuple[int, ...] = SWEEP_CLIENTS,
) -> None:
    """Every level for every target, in alternating rounds; ``targets[0]`` is ours."""
    print(f"sweep ({case['assistant']} graph, new thread + runs.wait, {SWEEP_RUNS} runs per level and server "
          f"in {ROUNDS} alternating rounds; Postgres CPU {'measured' if postmaster else 'not measured: external server'}; "
          f"load average {' '.join(f'{load:.1f}' for load in os.getloadavg())} on {os.cpu_count()} cores)")  # fmt: skip
    print(f"{'server':<12} {'clients':>7} {'runs/s':>8} {'p50 ms':>8} {'p95 ms':>8} {'p99 ms':>8} {'p99/p50':>7} "
          f"{'server CPU ms/run':>17} {'PG CPU ms/run':>13} {'RSS/PSS MiB per worker':>23}")  # fmt: skip
    for clients in levels:
        figures = {target.name: LevelFigures() for target in targets}
        for index in range(ROUNDS):
            for target in targets if index % 2 == 0 else targets[::-1]:
                await _round(target, case, clients, SWEEP_RUNS // ROUNDS, postmaster, figures[target.name])
        for target in targets:
            print(_row(target.name, clients, figures[target.name], target.pid))
        if len(targets) == 2:
            print(_ratio_row(clients, figures[targets[0].name], figures[targets[1].name]))
    print(f"load average after the sweep {' '.join(f'{load:.1f}' for load in os.getloadavg())}")


def database_uri(service: ServiceUnderTest) -> str:
    """The server the service uses: DATABASE_URL, or the embedded one's socket (pgserver's postmaster.pid)."""
    if uri := service.env.get("DATABASE_URL"):
        return uri
    from pgserver.utils import PostmasterInfo

    info = PostmasterInfo.read_from_pgdata(Path(service.data_dir) / "pg")
    if info is None:
        raise RuntimeError(f"no embedded Postgres running in {service.data_dir / 'pg'}")
    uri_: str = info.get_uri()
    return uri_


def run(service: ServiceUnderTest, workers: int) -> None:
    """The sweep against ``service`` (``workers`` uvicorn workers), and against Aegra when installed."""
    ours = Target("ours", service.url, service.key, service.pid)
    postmaster = _postmaster(service.data_dir)
    case = CASES["trivial"]
    if baseline := os.environ.get("BENCH_BASELINE"):
        _against_baseline(service, workers, ours, case, postmaster, Path(baseline).resolve())
        return
    venv = aegra.aegra_venv()
    if aegra.installed_version(venv) is None:
        print(f"Aegra: not installed in {venv} (`make bench-aegra-install`); ours alone")
        asyncio.run(per_request([ours], case))
        asyncio.run(scale_sweep([ours], case, postmaster))
        return
    try:
        _against_aegra(service, workers, ours, case, postmaster, venv)
    except RuntimeError:
        print(f"ours' log, last lines:\n{serve_log(service.data_dir).read_text()[-3000:]}")
        raise


def _against_aegra(service: ServiceUnderTest, workers: int, ours: Target, case: dict[str, Any],
                   postmaster: int | None, venv: Path) -> None:  # fmt: skip
    with aegra.serving_aegra(database_uri(service), workers, venv) as peer:
        print(f"Aegra {peer.version} at {peer.url}, {workers} uvicorn workers, on the same Postgres")
        targets = [ours, Target(f"aegra {peer.version}", peer.url, service.key, peer.pid)]
        asyncio.run(per_request(targets, case))
        asyncio.run(scale_sweep(targets, case, postmaster))


def _against_baseline(service: ServiceUnderTest, workers: int, ours: Target, case: dict[str, Any],
                      postmaster: int | None, tree: Path) -> None:  # fmt: skip
    """Ours beside the checkout ``tree`` (its ``src`` first on the path), on a scratch database."""
    head = subprocess.run(["git", "-C", str(tree), "log", "-1", "--format=%h %s"], capture_output=True, text=True)  # fmt: skip
    path = os.pathsep.join([str(tree / "src"), str(tree)])
    with (
        scratch_database(database_uri(service)) as uri,
        tempfile.TemporaryDirectory(prefix="ma-bench-baseline-") as data_dir,
        serving(data_dir, {"DATABASE_URL": uri, "PYTHONPATH": path}, workers=workers) as base,
    ):
        print(f"baseline: {tree} at {head.stdout.strip()}, {workers} uvicorn workers, on the same Postgres")
        targets = [ours, Target("baseline", base.url, base.key, base.pid)]
        asyncio.run(per_request(targets, case))
        asyncio.run(scale_sweep(targets, case, postmaster))
