"""``master-agent`` called as a user runs it, in the test process: its entry point ``main`` with the
command line, the environment and stdout/stderr a process of its own would have, its exit code.

A subprocess would pay the CLI's imports, its models and its SQL guard's workers again for every command
(seconds each); the command's code, from argument parsing to the exit code, is the same."""

from __future__ import annotations

import contextlib
import io
import logging
import os
import subprocess
import threading
import traceback
from collections.abc import Mapping
from unittest import mock

from master_agent.capabilities import agents
from master_agent.cli import main
from master_agent.service import auth


def _forget_what_a_new_process_would_not_know() -> None:
    """Empty this process's caches of what a database holds: they are keyed by tenant, not by database,
    and other tests' databases have tenants of the same names (a process of its own starts without them)."""
    agents._live.clear()
    agents._versions.clear()
    auth._key_cache.clear()


def run_cli(env: Mapping[str, str], *args: str, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    """``master-agent *args`` with exactly ``env`` as its environment."""
    _forget_what_a_new_process_would_not_know()
    stdout, stderr = io.StringIO(), io.StringIO()
    codes: list[int] = []

    def command() -> None:
        # Its own thread, so that ``asyncio.run`` in ``main`` owns that thread's event loop, as in a process.
        try:
            codes.append(main(list(args)))
        except SystemExit as exit_:  # argparse's usage errors
            codes.append(exit_.code if isinstance(exit_.code, int) else 1)
        except Exception:  # what the interpreter does with an uncaught error
            traceback.print_exc()
            codes.append(1)

    # Its log records reach its stderr as ``logging.basicConfig`` in ``main`` sends a process's there (in the
    # test process the root logger already has pytest's handlers, and ``basicConfig`` leaves it alone).
    root = logging.getLogger()
    level, root_level = logging.INFO if {"-v", "--verbose"} & set(args) else logging.WARNING, root.level
    to_stderr = logging.StreamHandler(stderr)
    to_stderr.setFormatter(logging.Formatter(logging.BASIC_FORMAT))
    to_stderr.setLevel(level)
    root.addHandler(to_stderr)
    root.setLevel(level)
    try:
        with (
            mock.patch.dict(os.environ, env, clear=True),
            contextlib.redirect_stdout(stdout),
            contextlib.redirect_stderr(stderr),
        ):
            thread = threading.Thread(target=command, name="master-agent")
            thread.start()
            thread.join(timeout)
    finally:
        root.removeHandler(to_stderr)
        root.setLevel(root_level)
    assert not thread.is_alive(), f"master-agent {' '.join(args)} did not finish in {timeout} s"
    return subprocess.CompletedProcess(
        ["master-agent", *args], codes[0], stdout.getvalue(), stderr.getvalue()
    )
