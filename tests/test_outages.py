"""Postgres outages lose nothing: the real embedded server is stopped while runs execute inside a
tool, and started again. Meanwhile requests are answered 503 at once and ``/health`` is 503; after,
every run ends ``success`` with the same solution as a run without the outage, and every stream has
every event, numbered without a gap, ending with ``end``."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
from pgserver import get_server  # type: ignore[attr-defined]
from pgserver._commands import pg_ctl  # type: ignore[attr-defined]
from psycopg.rows import dict_row

from master_agent.capabilities import install_tenant
from master_agent.runtime import SolveRequest, open_resources, solve
from master_agent.service.auth import create_key
from master_agent.settings import Settings
from master_agent.storage.embedded import require_passwords
from master_agent.storage.outages import DatabaseHealth, is_outage
from tests import durability_pack
from tests.conftest import create_database
from tests.durability_pack import SLOW_TOOL, TENANT
from tests.live_server import LiveServer, sse_events

GOAL = "Increase Store 5's accessory attach rate by 20% within 60 days"
RUNS = 3
OUTAGE_S = 4.0
#: Keys of a solution that name the run rather than describe the answer.
RUN_KEYS = {"solution_id", "thread_id", "run_id", "steps", "outcome_checks", "termination"}


class StoppableServer:
    """An embedded PostgreSQL of its own (the session's server keeps serving the other tests)."""

    def __init__(self, pgdata: Path) -> None:
        self.server = get_server(pgdata, cleanup_mode="stop")
        require_passwords(self.server)
        self.uri: str = self.server.get_uri()
        self.socket_dir = self.server.get_postmaster_info().socket_dir

    def stop(self) -> None:
        # ``immediate``: no shutdown checkpoint, sessions dropped at once, as a crash leaves it.
        pg_ctl(["-w", "-m", "immediate", "stop"], pgdata=self.server.pgdata, user=self.server.system_user)

    def start(self) -> None:
        pg_ctl(
            ["-w", "-o", '-h ""', "-o", f"-k {self.socket_dir}", "-l", str(self.server.log), "start"],
            pgdata=self.server.pgdata,
            user=self.server.system_user,
            timeout=60,
        )


@pytest.fixture(scope="module")
def stoppable(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StoppableServer]:
    server = StoppableServer(tmp_path_factory.mktemp("outage-pg"))
    yield server
    # The test started the postmaster again with pg_ctl: pgserver's own cleanup does not know that one.
    with contextlib.suppress(Exception):
        server.stop()
    server.server.cleanup()


def _answer(solution: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in solution.items() if key not in RUN_KEYS}


async def _streamed_run(client: httpx.AsyncClient, thread_id: str) -> list[tuple[str | None, str, Any]]:
    body = {"assistant_id": "master_agent", "input": {"goal": GOAL}, "stream_mode": ["custom", "values"]}
    async with client.stream("POST", f"/threads/{thread_id}/runs/stream", json=body) as response:
        assert response.status_code == 200
        return [item async for item in sse_events(response)]


async def _count(uri: str, sql: str) -> int:
    async with await psycopg.AsyncConnection.connect(uri, autocommit=True, row_factory=dict_row) as conn:
        row = await (await conn.execute(sql)).fetchone()
    return int(row["n"]) if row else 0


async def _is_down(health: DatabaseHealth) -> int:
    return 0 if health.up else 1


async def _until(measure: Callable[[], Awaitable[int]], at_least: int) -> None:
    value = await measure()
    while value < at_least:
        await asyncio.sleep(0.05)
        value = await measure()


async def test_runs_and_streams_ride_through_a_stopped_database(
    stoppable: StoppableServer, tmp_path_factory: pytest.TempPathFactory
) -> None:
    uri = create_database(stoppable.uri, "outage")
    settings = Settings(
        database_url=uri,
        data_dir=tmp_path_factory.mktemp("outage"),
        model="offline",
        domain_packs=("tests.durability_pack",),
        outage_wait_s=120,
    )
    async with LiveServer(settings) as live:
        resources = live.server.config.app.state.service.resources
        await install_tenant(resources.database.pool, settings, "retail-crash", TENANT)
        key = (await create_key(resources.database.pool, TENANT)).key
        async with httpx.AsyncClient(
            base_url=live.url, headers={"Authorization": f"Bearer {key}"}, timeout=120
        ) as client:
            reference_thread = (await client.post("/threads", json={})).json()["thread_id"]
            reference = await client.post(
                f"/threads/{reference_thread}/runs/wait",
                json={"assistant_id": "master_agent", "input": {"goal": GOAL}},
            )
            assert reference.status_code == 200, reference.text
            expected = _answer(reference.json()["solution"])
            started_before = await _count(
                uri, "SELECT count(*) AS n FROM crash_tool_runs WHERE phase = 'started'"
            )

            threads = [(await client.post("/threads", json={})).json()["thread_id"] for _ in range(RUNS)]
            streams = [asyncio.create_task(_streamed_run(client, thread)) for thread in threads]
            # Every run is inside the slow tool (two levels down) when the server goes away.
            await _until(
                lambda: _count(uri, "SELECT count(*) AS n FROM crash_tool_runs WHERE phase = 'started'"),
                started_before + RUNS,
            )
            await asyncio.to_thread(stoppable.stop)
            try:
                health = resources.database.health
                await _until(lambda: _is_down(health), 1)
                # Answered at once, not after the pool's 30 s checkout timeout.
                async with httpx.AsyncClient(base_url=live.url, timeout=10) as anonymous:
                    down = await anonymous.get("/health")
                assert down.status_code == 503
                assert down.json()["database"] == "unreachable"
                refused = await client.get(f"/threads/{threads[0]}", timeout=10)
                assert refused.status_code == 503
                assert refused.headers["retry-after"] == "1"
                assert (await client.get("/ok", timeout=10)).status_code == 200
                await asyncio.sleep(OUTAGE_S)
            finally:
                await asyncio.to_thread(stoppable.start)
            streamed = await asyncio.wait_for(asyncio.gather(*streams), 240)

            assert (await client.get("/health")).status_code == 200
            for thread_id, events in zip(threads, streamed, strict=True):
                names = [event for _, event, _ in events]
                assert "error" not in names, events
                assert names[-1] == "end"
                numbered = [int(event_id) for event_id, _, _ in events if event_id is not None]
                # The metadata event is 0; the run's events count on from 1 with no gap.
                assert numbered == list(range(len(numbered))), numbered
                runs = (await client.get(f"/threads/{thread_id}/runs")).json()
                assert [run["status"] for run in runs] == ["success"]
                values = (await client.get(f"/threads/{thread_id}/state")).json()["values"]
                assert _answer(values["solution"]) == expected
                stored = await _count(
                    uri,
                    f"SELECT count(*) AS n FROM run_events WHERE run_id = '{runs[0]['run_id']}'",
                )
                assert stored == len(numbered) - 1  # all but the metadata event, made per connection
                tool_text = json.dumps(values.get("messages", []))
                assert "connection" not in tool_text.lower(), "an outage reached the model"


async def test_a_goal_is_error_only_after_its_retries_are_spent(
    pg_server_uri: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """A connection lost under a goal is waited out: its status never reads ``error`` on the way."""
    uri = create_database(pg_server_uri, "goalretry")
    settings = Settings(
        database_url=uri,
        data_dir=tmp_path_factory.mktemp("goalretry"),
        model="offline",
        domain_packs=("tests.durability_pack",),
    )
    async with open_resources(settings) as resources:
        await install_tenant(resources.database.pool, settings, "retail-crash", TENANT)
        async with resources.database.pool.connection() as conn:
            await conn.execute(STATUS_LOG)
        durability_pack.LOSE_CONNECTION_ONCE.add(SLOW_TOOL)
        try:
            outcome = await solve(resources, SolveRequest(goal=GOAL, tenant_id=TENANT))
        finally:
            durability_pack.LOSE_CONNECTION_ONCE.clear()
        async with resources.database.pool.connection() as conn:
            rows = await (await conn.execute("SELECT status FROM solution_status_log ORDER BY id")).fetchall()
    assert outcome.status == "success"
    statuses = [row["status"] for row in rows]
    assert "error" not in statuses and statuses[-1] == "success", statuses
    assert statuses.count("running") == 2  # started, then continued after the lost connection


#: Every status a solution row takes, in order (a trigger: what any reader could have seen).
STATUS_LOG = """
CREATE TABLE solution_status_log (id bigserial PRIMARY KEY, status text NOT NULL);
CREATE FUNCTION log_solution_status() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN INSERT INTO solution_status_log (status) VALUES (NEW.status); RETURN NEW; END $$;
CREATE TRIGGER solution_status_log AFTER UPDATE OF status ON solutions
FOR EACH ROW EXECUTE FUNCTION log_solution_status();
"""


@pytest.mark.parametrize(
    ("error", "outage"),
    [
        (psycopg.OperationalError("connection failed: Connection refused"), True),
        (psycopg.InterfaceError("the connection is closed"), True),
        (psycopg.errors.AdminShutdown("terminating connection due to administrator command"), True),
        (psycopg.errors.TooManyConnections("sorry, too many clients already"), True),
        (psycopg.errors.CannotConnectNow("the database system is starting up"), True),
        (psycopg.errors.QueryCanceled("canceling statement due to statement timeout"), False),
        # A statement's own limits are not outages: repeating it fails the same way.
        (psycopg.errors.ConfigurationLimitExceeded("temporary file size exceeds temp_file_limit"), False),
        (psycopg.errors.OutOfMemory("out of memory"), False),
        (psycopg.errors.DiskFull("could not write to file"), False),
        (psycopg.errors.StatementTooComplex("stack depth limit exceeded"), False),
        (psycopg.errors.NumericValueOutOfRange("integer out of range"), False),
        (psycopg.errors.UniqueViolation("duplicate key"), False),
        (psycopg.errors.SyntaxError("syntax error"), False),
        (ValueError("not a database error"), False),
    ],
)
def test_outages_are_told_from_failed_queries(error: Exception, outage: bool) -> None:
    assert is_outage(error) is outage


def test_an_outage_behind_another_error_is_an_outage() -> None:
    try:
        try:
            raise psycopg.OperationalError("server closed the connection unexpectedly")
        except psycopg.OperationalError as lost:
            raise RuntimeError("the step failed") from lost
    except RuntimeError as wrapped:
        assert is_outage(wrapped)
