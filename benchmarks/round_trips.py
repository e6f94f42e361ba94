"""What a run costs the database: connection-pool checkouts, statements and round trips per run.

``DatabaseTally`` counts, in this process, every checkout of the shared pool (``storage.database.Pool``),
every statement a cursor sends, and every round trip: an exchange in which the client waited for the
server's answer (psycopg's generators yield ``Wait.R`` then; a pipeline's queued statements share the
one its results come back in). Each is counted by where it came from (the module and function of the
project, or LangGraph's checkpointer), so a change shows which step it saved.

``python -m benchmarks.round_trips [runs] [clients]`` (``make bench PARTS=roundtrips``: 200 runs at 1, 10
and 50 clients) runs the service
in-process on the trivial 3-node graph with ``clients`` concurrent clients, each doing new thread +
``runs.wait`` through the SDK (the sweep's request), and prints the figures per run, by source. The counts
of one client alone are deterministic (``tests/test_round_trips.py`` asserts them); under concurrency, runs
queue and their counts depend on timing.

A tally can count one scope only (``counting(scope)``): the work done in the context of requests that
carry ``SCOPE_HEADER`` with that scope (``RequestScope``, an ASGI middleware, marks them; the tasks they
start, such as their runs, inherit the mark) or of code run ``in_scope``. The process's other work (other
clients' requests, batches a request of theirs started, the claim loop, leases renewed) is not counted,
however the machine's load interleaves it.
"""

from __future__ import annotations

import asyncio
import collections
import sys
import tempfile
import traceback
from collections.abc import Generator, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any

from benchmarks.service import _free_port
from psycopg import AsyncConnection, AsyncCursor
from psycopg.waiting import Wait
from starlette.types import ASGIApp, Receive, Scope, Send

from master_agent.storage.database import Pool

#: Runs counted, and the concurrent clients, of ``make bench PARTS=roundtrips``.
RUNS = 200
CLIENT_LEVELS = (1, 10, 50)
#: The request each client makes, as the sweep does (``benchmarks/service.py``).
CASE_ASSISTANT, CASE_INPUT = "trivial", {"count": 0}


#: The generators of a pipeline that wait for the server's answers (the others only send).
PIPELINE_WAITS = frozenset({"_fetch_gen", "_sync_gen", "_exit_gen"})


#: The header whose value marks a request's work as that scope's (``RequestScope``).
SCOPE_HEADER = "x-tally-scope"
_SCOPE: ContextVar[str | None] = ContextVar("tally_scope", default=None)
#: Of the pool's own functions, the one sending a statement: the check of a connection idle for a while.
POOL_CHECK = "_check_connection"


@contextmanager
def in_scope(scope: str) -> Iterator[None]:
    """The work of this block (and of the tasks it starts) is ``scope``'s."""
    token = _SCOPE.set(scope)
    try:
        yield
    finally:
        _SCOPE.reset(token)


class RequestScope:
    """ASGI middleware: a request carrying ``SCOPE_HEADER`` does its work (and starts its tasks) in that
    scope."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        marked = (
            dict(scope.get("headers") or ()).get(SCOPE_HEADER.encode()) if scope["type"] == "http" else None
        )
        if marked is None:
            await self.app(scope, receive, send)
            return
        with in_scope(marked.decode()):
            await self.app(scope, receive, send)


def _source() -> str:
    """The innermost project function (or checkpointer method) on the stack; the pool's check of an idle
    connection is a source of its own, whoever's checkout it delays."""
    for frame in reversed(traceback.extract_stack()[:-2]):
        path = frame.filename.replace("\\", "/")
        if path.endswith("storage/database.py") and frame.name == POOL_CHECK:
            return f"database.{POOL_CHECK}"
        if "/master_agent/" in path and not path.endswith(("storage/database.py",)):
            return f"{Path(path).stem}.{frame.name}"
        if "/langgraph/checkpoint/" in path:
            return f"checkpointer.{frame.name}"
    return "other"


class DatabaseTally:
    """Checkouts, statements and round trips counted while ``counting`` (by source)."""

    def __init__(self) -> None:
        self.checkouts: collections.Counter[str] = collections.Counter()
        self.statements: collections.Counter[str] = collections.Counter()
        self.round_trips: collections.Counter[str] = collections.Counter()
        self.on = False
        #: Counting only this scope's work (None: all of this process's).
        self.scope: str | None = None

    def counts_here(self) -> bool:
        return self.on and (self.scope is None or _SCOPE.get() == self.scope)

    def totals(self) -> dict[str, int]:
        return {
            "checkouts": sum(self.checkouts.values()),
            "statements": sum(self.statements.values()),
            "round_trips": sum(self.round_trips.values()),
        }

    def reset(self) -> None:
        self.checkouts.clear()
        self.statements.clear()
        self.round_trips.clear()

    def _counted_gen(self, gen: Generator[Any, Any, Any], source: str) -> Generator[Any, Any, Any]:
        waited = False
        try:
            state = next(gen)
            while True:
                if not waited and self.on and state == Wait.R:
                    waited = True
                    self.round_trips[source] += 1
                ready = yield state
                state = gen.send(ready)
        except StopIteration as stop:
            return stop.value

    @contextmanager
    def installed(self) -> Iterator[DatabaseTally]:
        """Patch the pool, cursors and connections of this process while the block runs."""
        tally = self
        getconn, execute, executemany, wait = (
            Pool.getconn,
            AsyncCursor.execute,
            AsyncCursor.executemany,
            AsyncConnection.wait,
        )

        async def counted_getconn(pool: Pool, timeout: float | None = None) -> Any:  # noqa: ASYNC109
            if tally.counts_here():
                tally.checkouts[_source()] += 1
            return await getconn(pool, timeout)

        async def counted_execute(cursor: Any, query: Any, params: Any = None, **kwargs: Any) -> Any:
            if tally.counts_here():
                tally.statements[_source()] += 1
            return await execute(cursor, query, params, **kwargs)

        async def counted_executemany(cursor: Any, query: Any, params_seq: Any, **kwargs: Any) -> Any:
            if tally.counts_here():
                tally.statements[_source()] += 1
            return await executemany(cursor, query, params_seq, **kwargs)

        async def counted_wait(conn: Any, gen: Any, *args: Any, **kwargs: Any) -> Any:
            name = getattr(gen, "__name__", "")
            # A listener's wait for notifications is no exchange; a pipeline's statements are sent
            # without waiting, and their answers come back at its fetches and syncs.
            exchange = name != "notifies" and (conn._pipeline is None or name in PIPELINE_WAITS)
            if not (tally.counts_here() and exchange):
                return await wait(conn, gen, *args, **kwargs)
            return await wait(conn, tally._counted_gen(gen, _source()), *args, **kwargs)

        Pool.getconn = counted_getconn  # type: ignore[method-assign]
        AsyncCursor.execute = counted_execute  # type: ignore[method-assign,assignment]
        AsyncCursor.executemany = counted_executemany  # type: ignore[method-assign]
        AsyncConnection.wait = counted_wait  # type: ignore[method-assign]
        try:
            yield self
        finally:
            Pool.getconn = getconn  # type: ignore[method-assign]
            AsyncCursor.execute = execute  # type: ignore[method-assign]
            AsyncCursor.executemany = executemany  # type: ignore[method-assign]
            AsyncConnection.wait = wait  # type: ignore[method-assign]

    @contextmanager
    def counting(self, scope: str | None = None) -> Iterator[None]:
        """Count while the block runs: ``scope``'s work only, or (None) all of this process's."""
        self.on, self.scope = True, scope
        try:
            yield
        finally:
            self.on, self.scope = False, None

    def report(self, runs: int) -> str:
        lines = [
            f"per run ({runs} runs): {self.totals()['checkouts'] / runs:.2f} pool checkouts, "
            f"{self.totals()['statements'] / runs:.2f} statements, {self.totals()['round_trips'] / runs:.2f} round trips"
        ]
        for label, counter in (
            ("checkouts", self.checkouts),
            ("statements", self.statements),
            ("round trips", self.round_trips),
        ):
            lines.append(f"  {label} by source:")
            for source, count in counter.most_common():
                lines.append(f"    {count / runs:6.2f}  {source}")
        return "\n".join(lines)


async def new_thread_wait(client: Any) -> None:
    thread = await client.threads.create()
    await client.runs.wait(thread["thread_id"], CASE_ASSISTANT, input=CASE_INPUT)


async def tally_runs(url: str, key: str, tally: DatabaseTally, runs: int, clients: int) -> int:
    """``runs`` new thread + wait (spread over ``clients`` concurrent clients, after one warm-up each),
    counted in ``tally``; the runs made. Counting stops once the service has no run left to end."""
    from langgraph_sdk import get_client

    sdk_clients = [get_client(url=url, api_key=key) for _ in range(clients)]
    per_client = max(1, runs // clients)
    try:
        await asyncio.gather(*(new_thread_wait(client) for client in sdk_clients))
        await asyncio.sleep(0.3)  # the warm-up's notifications and event batches are sent
        with tally.counting():

            async def one_client(client: Any) -> None:
                for _ in range(per_client):
                    await new_thread_wait(client)

            await asyncio.gather(*(one_client(client) for client in sdk_clients))
            # What a run does after its waiter has its answer (its notifications) counts too.
            await asyncio.sleep(0.3)
    finally:
        for client in sdk_clients:
            await client.aclose()
    return per_client * clients


async def main(runs: int, clients: int) -> None:
    import uvicorn

    from master_agent.service.app import create_app
    from master_agent.service.auth import create_key
    from master_agent.service.limits import uvicorn_options
    from master_agent.settings import Settings
    from master_agent.storage.embedded import stop_embedded_server

    with tempfile.TemporaryDirectory(prefix="ma-bench-rt-") as data_dir:
        base = Settings.from_env()
        settings = base.with_overrides(
            model="offline",
            data_dir=Path(data_dir) if base.database_url is None else base.data_dir,
            graphs=("trivial=benchmarks.trivial_graph:make_graph",),
            run_concurrency=16,
            warm_routing=False,
        )
        tally = DatabaseTally()
        try:
            with tally.installed():
                app = create_app(settings)
                port = _free_port()
                config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", **uvicorn_options(settings))  # fmt: skip
                server = uvicorn.Server(config)
                task = asyncio.create_task(server.serve())
                try:
                    while not server.started:
                        if task.done():
                            task.result()
                        await asyncio.sleep(0.05)
                    await app.state.service.ready.wait()
                    key = (await create_key(app.state.service.resources.database.pool, "demo-retail")).key
                    made = await tally_runs(f"http://127.0.0.1:{port}", key, tally, runs, clients)
                finally:
                    server.should_exit = True
                    await task
            print(f"database work per run, new thread + runs.wait on the trivial graph, {clients} client(s), "
                  f"one process with 16 run slots and a pool of {settings.pool_max_size}")  # fmt: skip
            print(tally.report(made))
        finally:
            if base.database_url is None:
                stop_embedded_server(Path(data_dir))


if __name__ == "__main__":
    asyncio.run(
        main(int(sys.argv[1]) if len(sys.argv) > 1 else 50, int(sys.argv[2]) if len(sys.argv) > 2 else 1)
    )
