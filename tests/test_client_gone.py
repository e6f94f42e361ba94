"""A read whose client has gone stops and gives its pool connection back; a pool exhausted while the
database answers is answered 503 ``busy``, not "the database is unreachable".

A real server on a real socket, on a pool of two connections. The reads are made to hold their
connections by a test transaction holding an exclusive lock on the checkpoints table: each read waits
inside PostgreSQL, on a pool connection, for as long as the test decides."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

import httpx
import psycopg
import pytest

from master_agent.service.auth import create_key
from tests.live_server import LiveServer, live_server_fixture

POOL = 2
#: More dropped reads than connections: the rest wait for a connection when they are dropped.
DROPPED = POOL + 3
POLLS = 200
POLL_EVERY_S = 0.05

live = live_server_fixture("gone", pool_max_size=POOL, pool_timeout_s=3)


@pytest.fixture(scope="module")
async def key(live: LiveServer) -> str:
    return (await create_key(live.server.config.app.state.service.resources.database.pool, "demo-retail")).key


@contextlib.asynccontextmanager
async def checkpoints_locked(live: LiveServer) -> AsyncIterator[None]:
    """Every read of a thread's state waits (inside PostgreSQL, on its pool connection) until exit."""
    uri = live.server.config.app.state.service.resources.database.uri
    async with await psycopg.AsyncConnection.connect(uri) as conn:
        await conn.execute("LOCK TABLE checkpoints IN ACCESS EXCLUSIVE MODE")
        try:
            yield
        finally:
            await conn.rollback()


async def waiting_reads(live: LiveServer) -> int:
    """Statements of the service waiting for the test's lock."""
    uri = live.server.config.app.state.service.resources.database.uri
    async with await psycopg.AsyncConnection.connect(uri, autocommit=True) as conn:
        row = await (
            await conn.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                "AND wait_event_type = 'Lock' AND state = 'active'"
            )
        ).fetchone()
    assert row is not None
    return int(row[0])


async def until_waiting(live: LiveServer, expected: int) -> int:
    """Polled until ``expected`` statements wait for the lock (or the polls run out): the last count."""
    count = await waiting_reads(live)
    for _ in range(POLLS):
        if count == expected:
            break
        await asyncio.sleep(POLL_EVERY_S)
        count = await waiting_reads(live)
    return count


async def new_thread(live: LiveServer, key: str) -> str:
    async with httpx.AsyncClient(base_url=live.url, headers={"X-API-Key": key}) as client:
        created = await client.post("/threads", json={})
    assert created.status_code == 200, created.text
    return str(created.json()["thread_id"])


@pytest.mark.parametrize("route", ["state", "history"])
async def test_a_read_dropped_by_its_client_gives_its_connection_back(
    live: LiveServer, key: str, route: str
) -> None:
    thread_id = await new_thread(live, key)
    async with checkpoints_locked(live):
        dropped = httpx.AsyncClient(base_url=live.url, headers={"X-API-Key": key}, timeout=60)
        reads = [
            asyncio.create_task(
                dropped.get(f"/threads/{thread_id}/state")
                if route == "state"
                else dropped.post(f"/threads/{thread_id}/history", json={"limit": 1000})
            )
            for _ in range(DROPPED)
        ]
        # Every pool connection is held by a read waiting in PostgreSQL, the rest wait for the pool.
        assert await until_waiting(live, POOL) == POOL
        for read in reads:
            read.cancel()
        await asyncio.gather(*reads, return_exceptions=True)
        await dropped.aclose()  # the clients are gone: their sockets closed mid-request

        # Their statements were cancelled on the server while the lock is still held...
        assert await until_waiting(live, 0) == 0
        # ... and their connections returned: a request now gets one.
        async with httpx.AsyncClient(base_url=live.url, headers={"X-API-Key": key}, timeout=60) as client:
            answered = await client.post("/assistants/search", json={})
        assert answered.status_code == 200, answered.text
    async with httpx.AsyncClient(base_url=live.url, headers={"X-API-Key": key}, timeout=60) as client:
        after = await client.get(f"/threads/{thread_id}/state")
    assert after.status_code == 200, after.text


async def test_a_pool_exhausted_while_the_database_answers_is_busy_not_unreachable(
    live: LiveServer, key: str
) -> None:
    thread_id = await new_thread(live, key)
    async with httpx.AsyncClient(base_url=live.url, headers={"X-API-Key": key}, timeout=60) as client:
        async with checkpoints_locked(live):
            holding = [asyncio.create_task(client.get(f"/threads/{thread_id}/state")) for _ in range(POOL)]
            assert await until_waiting(live, POOL) == POOL
            refused = await client.post("/assistants/search", json={})
            assert refused.status_code == 503, refused.text
            assert refused.json() == {
                "detail": "the service is busy: every database connection is in use; retry shortly",
                "status": "busy",
                "database": "ok",
            }
            assert refused.headers["retry-after"] == "1"
            # Busy is not down: the next requests are not refused at the door (DatabaseGate).
            assert live.server.config.app.state.service.resources.database.health.up
        # The lock released, the reads that held the pool finish, and the service answers again.
        assert [read.status_code for read in await asyncio.gather(*holding)] == [200] * POOL
        assert (await client.post("/assistants/search", json={})).status_code == 200
