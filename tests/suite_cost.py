"""What each test costs, as CPU time rather than wall time (a shared machine's load inflates wall time, not
the work done): an opt-in pytest plugin, and its summary per unit (a file; the peer suite as one).

    pytest -n 2 --dist loadfile -p tests.suite_cost          # writes test-artifacts/suite-cost/<worker>.jsonl
    python -m tests.suite_cost test-artifacts/suite-cost     # per unit, the most costly first
    python -m tests.suite_cost test-artifacts/suite-cost 3   # and the wall time on 3 workers, simulated

Each test's setup, call and teardown record their wall time, the CPU time of the test process, of the
subprocesses it waited for (a server is counted when it is stopped), and of the worker's PostgreSQL (its
postmaster, the backends it reaped and the live ones), and how many processes were spawned, databases
created and uvicorn servers started. Measurement only: ``make test`` does not load it.
"""

from __future__ import annotations

import collections
import json
import math
import os
import resource
import subprocess
import sys
import time
from collections.abc import Generator
from pathlib import Path
from typing import IO, Any

import psycopg
import pytest
import uvicorn

OUT = Path(os.environ.get("MASTER_AGENT_TEST_ARTIFACTS", "test-artifacts")) / "suite-cost"
COUNTED = ("popen", "createdb", "uvicorn")
_counts = dict.fromkeys(COUNTED, 0)
_CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def _count_calls(owner: Any, name: str, counter: str, when: Any = None) -> None:
    original = getattr(owner, name)

    def counted(*args: Any, **kwargs: Any) -> Any:
        if when is None or when(*args):
            _counts[counter] += 1
        return original(*args, **kwargs)

    setattr(owner, name, counted)


def _creates_database(connection: Any, query: Any, *args: Any) -> bool:
    return isinstance(query, str) and "CREATE DATABASE" in query.upper()


_count_calls(subprocess.Popen, "__init__", "popen")
_count_calls(psycopg.Connection, "execute", "createdb", _creates_database)
_count_calls(uvicorn.Server, "startup", "uvicorn")


def _proc_stat(pid: int | str) -> list[str]:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


class _Postgres:
    """CPU seconds of the worker's embedded PostgreSQL so far (0 before it starts)."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.pid: int | None = None

    def cpu(self) -> float:
        if self.pid is None:
            base: Path = self.config._tmp_path_factory.getbasetemp()  # type: ignore[attr-defined]
            found = next(iter(base.glob("pgdata*/postmaster.pid")), None)
            if found is None:
                return 0.0
            self.pid = int(found.read_text().split()[0])
        try:
            # utime, stime, and those of the backends it has reaped
            ticks = sum(int(field) for field in _proc_stat(self.pid)[11:15])
        except (OSError, ValueError):
            return 0.0
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                try:
                    stat = _proc_stat(entry)
                except OSError:
                    continue
                if int(stat[1]) == self.pid:
                    ticks += int(stat[11]) + int(stat[12])
        return ticks / _CLOCK_TICKS


class SuiteCost:
    def __init__(self, config: pytest.Config) -> None:
        self.postgres = _Postgres(config)
        self.out: IO[str] | None = None
        self.phases: dict[str, dict[str, float]] = {}

    def snapshot(self) -> dict[str, float]:
        own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        return {
            "wall": time.perf_counter(),
            "cpu": own.ru_utime + own.ru_stime,
            "child": children.ru_utime + children.ru_stime,
            "pg": self.postgres.cpu(),
            **_counts,
        }

    @staticmethod
    def spent(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
        return {key: after[key] - before[key] for key in before}

    def write(self, record: dict[str, Any]) -> None:
        if self.out is None:
            OUT.mkdir(parents=True, exist_ok=True)
            self.out = (OUT / f"{os.environ.get('PYTEST_XDIST_WORKER', 'main')}.jsonl").open("w")
        self.out.write(json.dumps(record) + "\n")
        self.out.flush()

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item) -> Generator[None]:
        self.phases = {}
        before = self.snapshot()
        yield
        self.write({"id": item.nodeid, "total": self.spent(before, self.snapshot()), **self.phases})

    def _phase(self, name: str) -> Generator[None]:
        before = self.snapshot()
        yield
        self.phases[name] = self.spent(before, self.snapshot())

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_setup(self) -> Generator[None]:
        yield from self._phase("setup")

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_call(self) -> Generator[None]:
        yield from self._phase("call")

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_teardown(self) -> Generator[None]:
        yield from self._phase("teardown")


def pytest_configure(config: pytest.Config) -> None:
    config.pluginmanager.register(SuiteCost(config), "suite-cost")


def _unit(nodeid: str) -> str:
    path = nodeid.split("::", 1)[0]
    return "tests/peer/" if path.startswith("tests/peer/") else path


def summary(directory: Path) -> str:
    """Per unit, the most costly first: tests, wall, CPU of the process, its subprocesses and PostgreSQL,
    and the counts."""
    units: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    for path in sorted(directory.glob("*.jsonl")):
        for line in path.read_text().splitlines():
            record = json.loads(line)
            units[_unit(record["id"])].update({"tests": 1, **record["total"]})
    total: collections.Counter[str] = collections.Counter()
    lines = [
        f"{'unit':44} {'tests':>5} {'wall':>7} {'cpu':>6} {'child':>6} {'pg':>6} {'spawned':>7} {'dbs':>4}"
    ]
    for unit, cost in sorted(
        units.items(), key=lambda item: -(item[1]["cpu"] + item[1]["child"] + item[1]["pg"])
    ):
        total.update(cost)
        lines.append(
            f"{unit[:44]:44} {cost['tests']:5} {cost['wall']:7.1f} {cost['cpu']:6.1f} {cost['child']:6.1f}"
            f" {cost['pg']:6.1f} {cost['popen']:7} {cost['createdb']:4}"
        )
    lines.append(
        f"{'all':44} {total['tests']:5} {total['wall']:7.1f} {total['cpu']:6.1f} {total['child']:6.1f}"
        f" {total['pg']:6.1f} {total['popen']:7} {total['createdb']:4}"
    )
    return "\n".join(lines)


def _costs(directory: Path, stretch: float) -> dict[str, list[tuple[float, float]]]:
    """Each unit's tests in the order they ran, as (CPU seconds, seconds waited): the wall time beyond
    ``stretch`` times the CPU time (1 for a run on idle cores; more for a run the load slowed)."""
    units: dict[str, list[tuple[float, float]]] = collections.defaultdict(list)
    for path in sorted(directory.glob("*.jsonl")):
        for line in path.read_text().splitlines():
            record = json.loads(line)
            total = record["total"]
            cpu = total["cpu"] + total["child"] + total["pg"]
            units[_unit(record["id"])].append((cpu, max(0.0, total["wall"] - stretch * cpu)))
    return units


def simulate(
    units: list[tuple[str, list[tuple[float, float]]]], workers: int, cores: float = 2.0
) -> list[tuple[float, list[str]]]:
    """When each of ``workers`` pytest-xdist workers (``--dist loadfile``) finishes ``units`` handed out in
    this order on ``cores`` cores, and the units it ran: a worker gets a unit at the start and whenever
    two tests or fewer of its own are left (xdist's rule); a test's CPU and waits are spread evenly over
    it, and when the running tests want more than the cores, each gets its share."""
    queue = list(units)
    left: list[list[list[float]]] = [[] for _ in range(workers)]
    ran: list[list[str]] = [[] for _ in range(workers)]
    done = [0.0] * workers
    clock = 0.0

    def hand_out(worker: int, *, first: bool = False) -> None:
        while queue and (first or len(left[worker]) <= 2):
            name, tests = queue.pop(0)
            left[worker].extend([cpu, wait, 1.0] for cpu, wait in tests)
            ran[worker].append(name)
            first = False

    for worker in range(workers):
        hand_out(worker, first=True)
    for worker in range(workers):
        hand_out(worker)
    while any(left):
        running = [worker for worker in range(workers) if left[worker]]
        demand = sum(cpu / (cpu + wait) for cpu, wait, _ in (left[w][0] for w in running) if cpu + wait)
        share = min(1.0, cores / demand) if demand else 1.0

        # How long the rest of each worker's current test takes at this share.
        durations = {
            worker: part * (cpu / share + wait) for worker in running for cpu, wait, part in left[worker][:1]
        }
        step = min(durations.values())
        clock += step
        for worker in running:
            if math.isclose(durations[worker], step, rel_tol=1e-9, abs_tol=1e-9):
                left[worker].pop(0)
                hand_out(worker)
                done[worker] = clock
            else:
                left[worker][0][2] *= 1 - step / durations[worker]
    return [(done[worker], ran[worker]) for worker in range(workers)]


def simulated(directory: Path, workers: int, stretch: float = 1.0) -> str:
    """The wall time of the recorded tests on ``workers`` workers and 2 cores, units in the order
    ``tests/conftest.py`` hands them out (its ``_LONGEST_FIRST``), worker start-up not counted."""
    from tests.conftest import _LONGEST_FIRST

    rank = {name: place for place, name in enumerate(_LONGEST_FIRST)}
    costs = _costs(directory, stretch)
    order = sorted(
        sorted(costs), key=lambda unit: rank.get(unit, rank.get(unit.removeprefix("tests/"), len(rank)))
    )
    finished = simulate([(unit, costs[unit]) for unit in order], workers)
    return "\n".join(
        f"worker {worker}: {end:6.0f} s, {len(names)} units, first {', '.join(names[:3])}"
        for worker, (end, names) in enumerate(finished)
    )


if __name__ == "__main__":
    print(summary(Path(sys.argv[1]) if len(sys.argv) > 1 else OUT))
    if len(sys.argv) > 2:
        print(
            simulated(Path(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]) if len(sys.argv) > 3 else 1.0)
        )
