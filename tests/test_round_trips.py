"""A run's bookkeeping costs a fixed, small number of database round trips (issue 46), counted here in the
service's own process (``benchmarks/round_trips.py``): pool checkouts, statements and round trips by where
they come from. Counts, never times. Only the work of the requests under test is counted (they carry a
scope the server marks them with, and the runs and sends they start inherit it), so what else the process
does meanwhile on a loaded machine (an earlier request's late batch, leases renewed, the claim loop) is
not in the tally."""

from __future__ import annotations

import asyncio
import itertools
import uuid
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from benchmarks.round_trips import (
    POOL_CHECK,
    SCOPE_HEADER,
    DatabaseTally,
    RequestScope,
    in_scope,
    new_thread_wait,
)
from langgraph_sdk import get_client
from langgraph_sdk.client import LangGraphClient

from master_agent.errors import RateLimitedError
from master_agent.runtime import run_events
from master_agent.service import auth
from master_agent.service.auth import create_key
from master_agent.storage.rate_limits import Hit, HitCounter, Quota, hit_counter
from tests import gated_graph
from tests.conftest import server_settings
from tests.live_server import LiveServer

#: Only guards against a hang: the runs here end within milliseconds once their gate opens.
HANG_GUARD_S = 120.0
RUNS = 5


@pytest.fixture(scope="module")
def tally() -> Iterator[DatabaseTally]:
    counted = DatabaseTally()
    with counted.installed():
        yield counted


@pytest.fixture(scope="module")
async def live(
    pg_server_uri: str, tmp_path_factory: pytest.TempPathFactory, tally: DatabaseTally
) -> AsyncIterator[LiveServer]:
    settings = server_settings(
        pg_server_uri,
        tmp_path_factory,
        "round_trips",
        graphs=("trivial=benchmarks.trivial_graph:make_graph", "gated=tests.gated_graph:make_graph"),
        run_concurrency=1,
        run_poll_s=3600,
        scheduler="disabled",
    )
    server = LiveServer(settings)
    server.server.config.app.add_middleware(RequestScope)
    async with server:
        yield server


@pytest.fixture(scope="module")
async def api_key(live: LiveServer) -> str:
    pool = live.server.config.app.state.service.resources.database.pool
    return (await create_key(pool, "demo-retail")).key


@pytest.fixture(scope="module")
async def client(live: LiveServer, api_key: str) -> LangGraphClient:
    return get_client(url=live.url, api_key=api_key)


async def _settled(live: LiveServer) -> None:
    """Until what the runs so far left to send in the background is stored: their ends' notifications
    (sent after their waiters have their answers) and the batch of their requests' rate-limit counts."""
    service = live.server.config.app.state.service
    await service.queue.events.notifier.sent()
    await hit_counter(service.resources.database.pool).sent()


async def test_a_run_started_at_once_costs_a_fixed_count_of_round_trips(
    live: LiveServer,
    client: LangGraphClient,
    api_key: str,
    tally: DatabaseTally,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Runs nobody streams store their events with their end, however slow this machine is today.
    monkeypatch.setattr(run_events, "HOLD_UNWATCHED_S", 3600.0)
    monkeypatch.setattr(auth, "KEY_CACHE_S", 3600.0)
    await new_thread_wait(client)  # the API key's tenant cached, the graph built
    await _settled(live)
    scope = f"runs-{uuid.uuid4().hex[:8]}"
    counted = get_client(url=live.url, api_key=api_key, headers={SCOPE_HEADER: scope})
    tally.reset()
    with tally.counting(scope):
        for _ in range(RUNS):
            await new_thread_wait(counted)
        await _settled(live)
    await counted.aclose()
    per_run = {name: count / RUNS for name, count in tally.checkouts.items()}
    # Each request is counted against the rate limits: far below them, in batches sent every
    # ``BATCH_EVERY_S`` (how many depends on the time the runs take; the last test counts them).
    assert 0 < per_run.pop("rate_limits._store") <= 2
    # The request's bookkeeping: the thread made, then read by the run request; the run stored with its
    # thread marked busy (one checkout, two round trips: the lock and look, then the write and its
    # commit); its end stored with its events and its thread's values in one statement; the end announced
    # to other processes.
    assert per_run == {
        "threads.create_thread": 1,
        "threads.get_thread": 1,
        "queue.enqueue_graph_run": 1,
        "execution.store_end": 1,
        "notifications._send_pending": 1,
        # LangGraph's checkpointer: the thread's last checkpoint read, and a checkpoint per step (the
        # input, the start and three nodes), each step's writes carried by the next one's statement.
        "checkpointer.get_connection": 6,
    }
    assert tally.totals()["checkouts"] - tally.checkouts["rate_limits._store"] == 11 * RUNS
    # The enqueue's statements: the thread locked, the look at its runs, the run written with the thread
    # busy (and a look for other tenants' queued runs while this tenant held a slot here, in the same
    # round trip as the first look).
    enqueue = tally.statements.pop("queue.enqueue_graph_run")
    assert 3 * RUNS <= enqueue <= 4 * RUNS
    assert tally.statements.pop("rate_limits._store") == tally.checkouts["rate_limits._store"]
    # The pool checks a connection new to it, or idle for a while, before it hands it out: the pool's
    # statement, not the run's, and how many depends on how many connections this machine's pace opened.
    tally.statements.pop(f"database.{POOL_CHECK}", None)
    assert sum(tally.statements.values()) == 10 * RUNS


async def test_a_queued_run_executed_here_answers_its_waiter_without_reading_the_database(
    live: LiveServer, client: LangGraphClient, tally: DatabaseTally, monkeypatch: pytest.MonkeyPatch
) -> None:
    queue = live.server.config.app.state.service.queue
    stored = asyncio.Event()
    enqueue = queue.enqueue_graph_run

    async def enqueue_then_tell(**kwargs: Any) -> Any:
        run = await enqueue(**kwargs)
        stored.set()
        return run

    monkeypatch.setattr(queue, "enqueue_graph_run", enqueue_then_tell)
    gate = f"{uuid.uuid4().hex[:8]}-hold"
    holder_thread = await client.threads.create()
    holder = await client.runs.create(holder_thread["thread_id"], "gated", input={"gate": gate})
    await asyncio.wait_for(gated_graph.ARRIVALS[gate].wait(), HANG_GUARD_S)
    thread = await client.threads.create()
    tally.reset()
    with tally.counting():
        # The only slot is held: this run is queued, and starts here when the gate opens.
        waited = asyncio.ensure_future(client.runs.wait(thread["thread_id"], "trivial", input={"count": 0}))
        await asyncio.wait_for(stored.wait(), HANG_GUARD_S)
        gated_graph.GATES[gate].set()
        output: Any = await asyncio.wait_for(waited, HANG_GUARD_S)
    await client.runs.join(holder_thread["thread_id"], holder["run_id"])
    assert output == {"count": 3}
    # The waiter was answered from the worker's memory: no read of the run, nor of the thread and its
    # state after it (the thread is read once, by the run request itself).
    assert tally.checkouts["queue.get"] == 0
    assert tally.checkouts["threads.get_thread"] == 1
    assert tally.statements["bookkeeping._ended_elsewhere"] == 0
    assert tally.statements["claims._claim"] >= 1  # it was queued, and claimed when the slot freed


async def _stored_events(live: LiveServer, run_id: str) -> int:
    pool = live.server.config.app.state.service.resources.database.pool
    async with pool.connection() as conn:
        row = await (
            await conn.execute("SELECT count(*) AS n FROM run_events WHERE run_id = %s", (run_id,))
        ).fetchone()
    return int(row["n"]) if row else 0


async def _until_stored(live: LiveServer, run_id: str) -> None:
    for _ in itertools.count():
        if await _stored_events(live, run_id):
            return
        await asyncio.sleep(0.02)


async def test_a_run_nobody_streams_stores_its_events_with_its_end_and_a_stream_stores_them_at_once(
    live: LiveServer, client: LangGraphClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Runs nobody streams keep their events for as long as this test takes.
    monkeypatch.setattr(run_events, "HOLD_UNWATCHED_S", 3600.0)
    unwatched, watched = (f"{uuid.uuid4().hex[:8]}-{name}" for name in ("unwatched", "watched"))
    first_thread = await client.threads.create()
    first = await client.runs.create(first_thread["thread_id"], "gated", input={"gate": unwatched})
    await asyncio.wait_for(gated_graph.ARRIVALS[unwatched].wait(), HANG_GUARD_S)
    await asyncio.sleep(5 * run_events.FLUSH_EVERY_S)  # a batch would have been written by now
    assert await _stored_events(live, first["run_id"]) == 0
    gated_graph.GATES[unwatched].set()
    await client.runs.join(first_thread["thread_id"], first["run_id"])
    # Its end wrote them all, with its status: the input's values, the node's, the end.
    assert await _stored_events(live, first["run_id"]) >= 3

    second_thread = await client.threads.create()
    second = await client.runs.create(second_thread["thread_id"], "gated", input={"gate": watched})
    await asyncio.wait_for(gated_graph.ARRIVALS[watched].wait(), HANG_GUARD_S)
    assert await _stored_events(live, second["run_id"]) == 0
    events: list[str] = []

    async def follow() -> None:
        async for part in client.runs.join_stream(second_thread["thread_id"], second["run_id"]):
            events.append(part.event)

    streaming = asyncio.ensure_future(follow())
    # A stream follows the run: what it published so far is stored at once, before its end.
    await asyncio.wait_for(_until_stored(live, second["run_id"]), HANG_GUARD_S)
    gated_graph.GATES[watched].set()
    await asyncio.wait_for(streaming, HANG_GUARD_S)
    assert events[0] == "metadata" and "values" in events


async def test_hits_far_below_a_limit_are_counted_in_batches_and_exactly_near_it(
    live: LiveServer, tally: DatabaseTally
) -> None:
    pool = live.server.config.app.state.service.resources.database.pool
    limit = 200
    quota = Quota("requests", limit, 3600, "MASTER_AGENT_RATE_REQUESTS")
    hit = Hit(quota, f"batch-{uuid.uuid4().hex[:8]}")
    counter = HitCounter(pool)
    # The server's own batch of an earlier test's requests, stored late on a loaded machine, is no
    # statement of this counter's.
    tally.reset()
    scope = f"counter-{uuid.uuid4().hex[:8]}"
    # Only this counter's statements are counted, not the server's batches of earlier tests' requests.
    with tally.counting(scope), in_scope(scope):
        # The first learns the window; up to half the limit, the hits are admitted here and sent later.
        for _ in range(limit // 2):
            await counter.count([hit])
    assert sum(tally.statements.values()) == 1
    for _ in range(limit // 2):
        await counter.count([hit])  # counted at once, with the hits not sent yet
    async with pool.connection() as conn:
        row = await (
            await conn.execute("SELECT count FROM rate_limit_counters WHERE subject = %s", (hit.subject,))
        ).fetchone()
    assert row is not None and row["count"] == limit
    with pytest.raises(RateLimitedError):
        await counter.count([hit])


async def test_a_scoped_tally_counts_only_the_work_of_its_scope(
    live: LiveServer, api_key: str, tally: DatabaseTally
) -> None:
    pool = live.server.config.app.state.service.resources.database.pool
    scope = f"mine-{uuid.uuid4().hex[:8]}"
    outside = get_client(url=live.url, api_key=api_key)
    tally.reset()
    with tally.counting(scope):
        await outside.threads.create()  # a request of another client
        async with pool.connection() as conn:
            await conn.execute("SELECT 1")  # this process's own work
        with in_scope(scope):
            async with pool.connection() as conn:
                await conn.execute("SELECT 2")
    await outside.aclose()
    tally.statements.pop(f"database.{POOL_CHECK}", None)
    # Named by where they come from in the project: a test's own work is "other".
    assert tally.checkouts == {"other": 1}
    assert tally.statements == {"other": 1}
