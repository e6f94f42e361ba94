"""Parsing tenant text in child processes: a crash, a runaway or a memory blow-up costs one call.

A parser fed tenant text can segfault (libpg_query's tree on a 25,000-term expression), recurse past
Python's limit, or spin for minutes (a PDF whose pages share one huge content stream). None of that
may reach the service's process or its thread pool. So each such call runs in a worker process:

- workers are fresh interpreters (no copy of the service's threads, pools, sockets or secrets) that
  import only what their calls need, kept warm and reused between calls;
- a call takes an idle worker (or waits for one: ``size`` bounds the CPU a pool can take), sends the
  function and its arguments over a pipe and waits up to its time limit without holding a thread
  (the async path waits on the pipe's descriptor in the event loop);
- a worker that crashed, overran its limit or was abandoned (the caller was cancelled, the client
  left) is killed and replaced, so the work stops with the request and the next call gets a clean one;
- each worker has an address-space limit (``RLIMIT_AS``) and a raised recursion limit, so a memory
  blow-up is a ``MemoryError`` and a deep tree a ``RecursionError`` in the worker, both reported.

The function run must be a module-level function of a module the worker can import; it returns
picklable values. What it raises comes back as ``IsolatedRefusal`` (a ``ValueError`` it raised on
purpose, its message kept) or ``IsolatedFailure`` (anything else: crash, limit, unexpected error).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import resource
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from multiprocessing.connection import Connection
from typing import Any, TypeVar, cast

logger = logging.getLogger(__name__)

T = TypeVar("T")

#: Python frames a worker may nest (parse trees are walked recursively).
WORKER_RECURSION_LIMIT = 20_000
#: The module a worker interpreter runs (``python -m``).
_WORKER_MODULE = "master_agent.untrusted._worker"
#: How long a caller waits for a free worker before the call is refused.
ACQUIRE_WAIT_S = 30.0


class IsolatedFailure(Exception):
    """The isolated call did not finish: the worker crashed, ran out of time or memory, or failed."""


class IsolatedRefusal(ValueError):
    """The isolated function refused its input (a ``ValueError`` raised on purpose in the worker)."""


def serve(conn: Connection, memory_bytes: int) -> None:
    """A worker's loop: one call at a time until the pipe closes."""
    resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
    sys.setrecursionlimit(WORKER_RECURSION_LIMIT)
    while True:
        try:
            function, args = conn.recv()
        except (EOFError, OSError):
            return
        try:
            reply: tuple[str, Any] = ("ok", function(*args))
        except RecursionError:
            reply = ("failure", "the input is nested too deeply to read")
        except MemoryError:
            reply = ("failure", "reading the input needed more memory than allowed")
        except ValueError as error:
            reply = ("refused", str(error))
        except Exception as error:  # the worker reports; the caller decides
            reply = ("failure", f"{type(error).__name__}: {error}")
        conn.send(reply)


class _Worker:
    """A fresh interpreter running ``_serve`` on one end of a socket pair. Not a multiprocessing
    child: those re-import the parent's main module (the CLI, the test runner) in every worker."""

    def __init__(self, memory_bytes: int) -> None:
        ours, theirs = socket.socketpair()
        with ours, theirs:
            self.process = subprocess.Popen(
                [sys.executable, "-m", _WORKER_MODULE, str(theirs.fileno()), str(memory_bytes)],
                pass_fds=(theirs.fileno(),),
                stdin=subprocess.DEVNULL,
                close_fds=True,
            )
            self.conn = Connection(os.dup(ours.fileno()))

    def alive(self) -> bool:
        return self.process.poll() is None

    def exit_code(self) -> int | None:
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(1)
        return self.process.returncode

    def kill(self) -> None:
        with contextlib.suppress(Exception):
            self.process.kill()
            self.process.wait(1)
        with contextlib.suppress(Exception):
            self.conn.close()


class IsolatedPool:
    """Warm worker processes for one kind of untrusted work (one pool per kind, so a slow kind never
    queues the others)."""

    def __init__(self, name: str, *, size: int, memory_bytes: int) -> None:
        self.name = name
        self.size = size
        self.memory_bytes = memory_bytes
        self._idle: list[_Worker] = []
        self._lock = threading.Lock()
        self._slots = threading.BoundedSemaphore(size)
        self.killed = 0
        """Workers killed so far (crashed, over time, abandoned): for tests and metrics."""

    # -- workers -------------------------------------------------------------------------------

    def _take(self) -> _Worker:
        with self._lock:
            while self._idle:
                worker = self._idle.pop()
                if worker.alive():
                    return worker
                worker.kill()
        return _Worker(self.memory_bytes)

    def _give_back(self, worker: _Worker) -> None:
        with self._lock:
            self._idle.append(worker)

    def _discard(self, worker: _Worker) -> None:
        self.killed += 1
        worker.kill()

    def warm(self, count: int = 1) -> None:
        """Start ``count`` workers now, in a background thread: a process's first check then waits for
        nothing (a worker interpreter takes a few tenths of a second to start); more start on demand."""

        def start() -> None:
            started = [_Worker(self.memory_bytes) for _ in range(min(count, self.size) - len(self._idle))]
            with self._lock:
                self._idle.extend(started)

        threading.Thread(target=start, name=f"{self.name}-workers", daemon=True).start()

    def close(self) -> None:
        """Stop every idle worker (busy ones stop when their call ends or is abandoned)."""
        with self._lock:
            idle, self._idle = self._idle, []
        for worker in idle:
            worker.kill()

    # -- calls ---------------------------------------------------------------------------------

    def call(self, function: Callable[..., T], *args: Any, timeout_s: float) -> T:
        """``function(*args)`` in a worker, waiting in this thread (for synchronous callers)."""
        if not self._slots.acquire(timeout=ACQUIRE_WAIT_S):
            raise IsolatedFailure(f"every {self.name} worker stayed busy for {ACQUIRE_WAIT_S:g} s")
        try:
            worker = self._take()
            with self._lease(worker) as finished:
                worker.conn.send((function, args))
                if not worker.conn.poll(timeout_s):
                    raise IsolatedFailure(f"reading it took longer than {timeout_s:g} s")
                reply = worker.conn.recv()
                finished.append(True)
        finally:
            self._slots.release()
        return cast(T, _unwrap(reply))

    async def acall(self, function: Callable[..., T], *args: Any, timeout_s: float) -> T:
        """``function(*args)`` in a worker; the event loop waits on the pipe, no thread is held. A
        cancelled caller kills the worker, so abandoned work stops."""
        deadline = time.monotonic() + ACQUIRE_WAIT_S
        while not self._slots.acquire(blocking=False):
            if time.monotonic() > deadline:
                raise IsolatedFailure(f"every {self.name} worker stayed busy for {ACQUIRE_WAIT_S:g} s")
            await asyncio.sleep(0.005)
        try:
            worker = await asyncio.to_thread(self._take) if not self._idle else self._take()
            with self._lease(worker) as finished:
                worker.conn.send((function, args))
                try:
                    await asyncio.wait_for(_readable(worker.conn), timeout_s)
                except TimeoutError:
                    raise IsolatedFailure(f"reading it took longer than {timeout_s:g} s") from None
                reply = worker.conn.recv()
                finished.append(True)
        finally:
            self._slots.release()
        return cast(T, _unwrap(reply))

    @contextlib.contextmanager
    def _lease(self, worker: _Worker) -> Iterator[list[bool]]:
        """One call on ``worker``: given back when the body marks it finished, killed otherwise (it
        crashed, overran, or its caller was cancelled); a closed pipe is the worker's crash."""
        finished: list[bool] = []
        try:
            yield finished
        except (EOFError, OSError):
            raise IsolatedFailure(self._crash_words(worker)) from None
        finally:
            if finished:
                self._give_back(worker)
            else:
                self._discard(worker)

    def _crash_words(self, worker: _Worker) -> str:
        code = worker.exit_code()
        if code is not None and code < 0:
            return f"the {self.name} reader crashed on it (signal {-code})"
        return f"the {self.name} reader stopped on it (exit code {code})"


async def _readable(conn: Connection) -> None:
    loop = asyncio.get_running_loop()
    ready: asyncio.Future[None] = loop.create_future()
    fd = conn.fileno()

    def _wake() -> None:
        if not ready.done():
            ready.set_result(None)

    loop.add_reader(fd, _wake)
    try:
        await ready
    finally:
        loop.remove_reader(fd)


def _unwrap(reply: tuple[str, Any]) -> Any:
    kind, value = reply
    if kind == "ok":
        return value
    if kind == "refused":
        raise IsolatedRefusal(value)
    raise IsolatedFailure(value)
