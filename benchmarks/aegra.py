"""Aegra beside the service: the peer server the sweep compares against, when it is installed.

``make bench-aegra-install`` puts ``aegra-api`` (pinned as ``AEGRA_VERSION`` in the Makefile; 0.7 and later
need Python 3.12) in its own virtualenv, ``.venv-aegra``, so its pins never touch the project's. When that
virtualenv is there, ``serving_aegra`` runs Aegra's own server (uvicorn, as many workers as ours) on a free
port over a scratch database in the same Postgres as ours, serving ``benchmarks/trivial_graph.py:graph``
(the graph ours runs, compiled once). Aegra's Redis broker is off by default (runs execute in the worker
that accepted them, streams through Postgres), so no other service is needed. Aegra's auth is ``noop``: the
SDK's API key is ignored there. The server and the scratch database are removed on the way out, also on
failure.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
from benchmarks.evolution import scratch_database
from benchmarks.service import _free_port, stop_trees

ROOT = Path(__file__).resolve().parents[1]
#: Where ``make bench-aegra-install`` puts Aegra; ``AEGRA_VENV`` (the Makefile's variable) moves it.
DEFAULT_VENV = ROOT / ".venv-aegra"
GRAPH = ROOT / "benchmarks" / "trivial_graph.py"


@dataclass(frozen=True)
class AegraServer:
    url: str
    pid: int
    """The uvicorn process (its workers are its children)."""
    version: str


def aegra_venv() -> Path:
    return Path(os.environ.get("AEGRA_VENV") or DEFAULT_VENV)


def installed_version(venv: Path) -> str | None:
    """The ``aegra-api`` version installed in ``venv``, or None when it is not there."""
    for metadata in venv.glob("lib/python3*/site-packages/aegra_api-*.dist-info/METADATA"):
        for line in metadata.read_text().splitlines():
            if line.startswith("Version: "):
                return line.removeprefix("Version: ").strip()
    return None


def _wait_until_healthy(url: str, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 300
    while True:
        if process.poll() is not None:
            raise RuntimeError(
                f"Aegra exited with {process.returncode} while starting: {log.read_text()[-2000:]}"
            )
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(f"{url}/health", timeout=1).status_code == 200:
                return
        if time.monotonic() > deadline:
            raise RuntimeError(f"Aegra did not answer {url}/health within 300 s: {log.read_text()[-2000:]}")
        time.sleep(0.2)


@contextmanager
def serving_aegra(server_uri: str, workers: int, venv: Path | None = None) -> Iterator[AegraServer]:
    """Aegra's server with ``workers`` uvicorn workers over a scratch database on ``server_uri``'s server,
    serving the trivial graph as ``trivial``; stopped, and its database dropped, on the way out."""
    venv = venv or aegra_venv()
    version = installed_version(venv)
    if version is None:
        raise RuntimeError(f"no aegra-api in {venv}: run `make bench-aegra-install`")
    with tempfile.TemporaryDirectory(prefix="ma-bench-aegra-") as home, scratch_database(server_uri) as uri:
        config = Path(home) / "aegra.json"
        config.write_text(json.dumps({"graphs": {"trivial": f"{GRAPH}:graph"}}))
        log = Path(home) / "aegra.log"
        port = _free_port()
        env = {
            "PATH": os.environ.get("PATH", ""),
            "HOME": home,
            "DATABASE_URL": uri,
            "AEGRA_CONFIG": str(config),
            "AUTH_TYPE": "noop",
            "LOG_LEVEL": "WARNING",
        }
        python = str(venv / "bin" / "python")

        def start(count: int) -> subprocess.Popen[bytes]:
            command = [python, "-m", "uvicorn", "aegra_api.main:app", "--host", "127.0.0.1", "--port",
                       str(port), "--workers", str(count), "--log-level", "warning", "--no-access-log"]  # fmt: skip
            with log.open("ab") as output:
                return subprocess.Popen(command, env=env, cwd=home, stdout=output, stderr=subprocess.STDOUT)

        url = f"http://127.0.0.1:{port}"
        if workers > 1:
            # One worker first sets the fresh database up (Aegra's migrations, LangGraph's checkpointer
            # and store tables): several workers doing it at once race (a deadlock on CREATE INDEX
            # CONCURRENTLY, a duplicate checkpoint_migrations key), and uvicorn stops the server.
            process = start(1)
            try:
                _wait_until_healthy(url, process, log)
            finally:
                stop_trees([process])
        env["RUN_MIGRATIONS_ON_STARTUP"] = "false"
        process = start(workers)
        try:
            _wait_until_healthy(url, process, log)
            yield AegraServer(url=url, pid=process.pid, version=version)
        except BaseException:
            print(f"Aegra's log, last lines:\n{log.read_text()[-3000:]}")
            raise
        finally:
            stop_trees([process])
