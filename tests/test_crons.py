"""Crons, through the official langgraph-sdk against the real service and its real scheduler (the
APScheduler job store in the same PostgreSQL): a thread's cron and a stateless one fire ordinary runs,
once per instant, only while enabled, and survive a restart; search, count, update and delete behave as
langgraph-api's; another tenant sees none of them; bad input is refused naming the field."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from langgraph_sdk.client import LangGraphClient
from langgraph_sdk.errors import BadRequestError, NotFoundError, UnprocessableEntityError

from master_agent.evolution.scheduler import crontab_trigger
from master_agent.service.auth import create_key
from master_agent.service.crons import fire_cron
from master_agent.service.state import ServiceState
from tests.conftest import server_settings
from tests.live_server import LiveServer, live_server_fixture, sdk, two_tenant_keys

# Firings every second, to watch several within a test: the deployment's minimum interval (5 minutes
# by default, which refuses a seconds field; see test_rate_limits) is lifted for these servers.
ANY_FREQUENCY = {"cron_min_interval_s": 0}
live = live_server_fixture("crons", graphs=("tally=tests.tally_graph:make_graph",), **ANY_FREQUENCY)
keys = two_tenant_keys

EVERY_SECOND = "* * * * * *"  # six fields: seconds last, as croniter (and langgraph-api) reads them
NEVER_SOON = "0 0 1 1 *"


async def eventually(check: Callable[[], Awaitable[bool]], within_s: float = 40.0) -> None:
    deadline = asyncio.get_running_loop().time() + within_s
    while not await check():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError("the condition did not hold in time")
        await asyncio.sleep(0.2)


def service(live: LiveServer) -> ServiceState:
    state: ServiceState = live.server.config.app.state.service
    return state


def test_weekdays_are_counted_as_cron_counts_them() -> None:
    monday_nine = crontab_trigger("0 9 * * 1")
    saturday = datetime(2026, 1, 3, 12, tzinfo=UTC)
    assert monday_nine.get_next_fire_time(None, saturday) == datetime(2026, 1, 5, 9, tzinfo=UTC)
    weekend = crontab_trigger("0 9 * * 0,6")  # 0 is Sunday in cron (Monday in APScheduler 3)
    assert weekend.get_next_fire_time(None, saturday) == datetime(2026, 1, 4, 9, tzinfo=UTC)
    sunday_too = crontab_trigger("0 9 * * 7")
    assert sunday_too.get_next_fire_time(None, saturday) == datetime(2026, 1, 4, 9, tzinfo=UTC)
    weekdays = crontab_trigger("30 8 * * 1-5")
    assert weekdays.get_next_fire_time(None, saturday) == datetime(2026, 1, 5, 8, 30, tzinfo=UTC)
    every_other = crontab_trigger("0 0 * * */2")  # Sunday, Tuesday, Thursday, Saturday
    assert every_other.get_next_fire_time(None, saturday) == datetime(2026, 1, 4, tzinfo=UTC)
    seconds = crontab_trigger("* * * * * */10")
    assert seconds.get_next_fire_time(None, saturday + timedelta(seconds=1)) == saturday + timedelta(
        seconds=10
    )
    for bad in ("* * * *", "61 * * * *", "0 9 * * 8", "0 9 * * 1-mon"):
        with pytest.raises(ValueError):
            crontab_trigger(bad)


async def _runs(client: LangGraphClient, thread_id: str) -> list[dict[str, Any]]:
    return [dict(run) for run in await client.runs.list(thread_id, limit=100)]


async def test_a_thread_cron_fires_ordinary_runs_until_disabled_and_then_deleted(
    live: LiveServer, keys: dict[str, str]
) -> None:
    client = sdk(live, keys["demo-retail"])
    thread = await client.threads.create()
    thread_id = thread["thread_id"]
    cron = await client.crons.create_for_thread(
        thread_id, "tally", schedule=EVERY_SECOND, input=[], metadata={"suite": "crons"}
    )
    assert cron["thread_id"] == thread_id and cron["enabled"] is True and cron["next_run_date"]
    assert cron["payload"]["input"] == [] and cron["metadata"] == {"suite": "crons"}

    async def fired_twice() -> bool:
        finished = [run for run in await _runs(client, thread_id) if run["status"] == "success"]
        return len(finished) >= 2

    await eventually(fired_twice)
    runs = await _runs(client, thread_id)
    assert all(run["metadata"]["cron_id"] == cron["cron_id"] for run in runs)
    assert all(run["metadata"]["suite"] == "crons" for run in runs)
    values = (await client.threads.get_state(thread_id))["values"]
    assert values[:2] == ["run 1", "run 2"]  # each firing a run of the same thread

    disabled = await client.crons.update(cron["cron_id"], enabled=False)
    assert disabled["enabled"] is False
    await asyncio.sleep(1.5)  # a firing under way when it was disabled ends
    count = len(await _runs(client, thread_id))
    await asyncio.sleep(2.5)
    assert len(await _runs(client, thread_id)) == count

    # One row per instant fired, each with the run it made.
    pool = service(live).resources.database.pool
    async with pool.connection() as conn:
        firings = await (
            await conn.execute(
                "SELECT scheduled_for, run_id, error FROM cron_firings WHERE cron_id = %s", (cron["cron_id"],)
            )
        ).fetchall()
    assert len(firings) == count and all(row["run_id"] and row["error"] is None for row in firings)
    assert {str(row["run_id"]) for row in firings} == {
        run["run_id"] for run in await _runs(client, thread_id)
    }

    await client.crons.delete(cron["cron_id"])
    with pytest.raises(NotFoundError):
        await client.crons.delete(cron["cron_id"])
    assert not service(live).resources.evolution.scheduler.scheduler.get_job(f"cron:{cron['cron_id']}")  # type: ignore[union-attr]


async def test_a_stateless_cron_gives_each_run_a_thread_kept_or_deleted(
    live: LiveServer, keys: dict[str, str]
) -> None:
    client = sdk(live, keys["demo-retail"])
    tag = uuid.uuid4().hex
    kept = await client.crons.create(
        "tally", schedule=EVERY_SECOND, input=[], metadata={"tag": tag}, on_run_completed="keep"
    )
    assert kept["thread_id"] is None and kept["on_run_completed"] == "keep"
    pool = service(live).resources.database.pool

    async def kept_threads() -> list[str]:
        async with pool.connection() as conn:
            rows = await (
                await conn.execute(
                    "SELECT DISTINCT thread_id FROM runs WHERE metadata ->> 'cron_id' = %s AND status = 'success'",
                    (kept["cron_id"],),
                )
            ).fetchall()
        return [row["thread_id"] for row in rows]

    async def two_kept() -> bool:
        return len(await kept_threads()) >= 2

    await eventually(two_kept)
    await client.crons.delete(kept["cron_id"])
    for thread_id in await kept_threads():
        assert (await client.threads.get_state(thread_id))["values"] == ["run 1"]  # a new thread each time

    deleted = await client.crons.create("tally", schedule=EVERY_SECOND, input=[])
    assert deleted["on_run_completed"] == "delete"

    async def runs_of_deleted() -> list[dict[str, Any]]:
        async with pool.connection() as conn:
            rows = await (
                await conn.execute(
                    "SELECT f.run_id, r.thread_id FROM cron_firings f LEFT JOIN runs r ON r.run_id = f.run_id "
                    "WHERE f.cron_id = %s",
                    (deleted["cron_id"],),
                )
            ).fetchall()
        return [dict(row) for row in rows]

    async def fired_and_cleaned() -> bool:
        firings = await runs_of_deleted()
        # The run and its thread go when the run ends.
        return len(firings) >= 2 and all(row["run_id"] and row["thread_id"] is None for row in firings[:2])

    await eventually(fired_and_cleaned)
    await client.crons.delete(deleted["cron_id"])


async def test_an_instant_fires_once_however_often_its_job_runs(
    live: LiveServer, keys: dict[str, str]
) -> None:
    client = sdk(live, keys["demo-retail"])
    thread = await client.threads.create()
    cron = await client.crons.create_for_thread(thread["thread_id"], "tally", schedule=NEVER_SOON, input=[])
    state = service(live)
    pool = state.resources.database.pool
    instant = datetime.now(UTC).replace(microsecond=0) - timedelta(seconds=5)
    async with pool.connection() as conn:  # as if its instant had just come (and the leader were late)
        await conn.execute(
            "UPDATE crons SET next_run_date = %s WHERE cron_id = %s", (instant, cron["cron_id"])
        )
    firings = await asyncio.gather(
        *(fire_cron(state.resources, state.queue, cron["cron_id"]) for _ in range(4))
    )
    assert sorted(firing.status for firing in firings).count("fired") == 1
    assert {firing.status for firing in firings} <= {"fired", "already_fired", "not_due"}
    assert [firing.scheduled_for for firing in firings if firing.status == "fired"] == [instant]
    assert len(await _runs(client, thread["thread_id"])) == 1
    again = await fire_cron(state.resources, state.queue, cron["cron_id"])
    assert again.status == "not_due" and again.scheduled_for is not None and again.scheduled_for > instant
    await client.crons.delete(cron["cron_id"])
    assert (await fire_cron(state.resources, state.queue, cron["cron_id"])).status == "gone"


async def test_search_count_get_update_and_tenants(live: LiveServer, keys: dict[str, str]) -> None:
    client = sdk(live, keys["demo-retail"])
    other = sdk(live, keys["other-shop"])
    tag = uuid.uuid4().hex
    thread = await client.threads.create()
    first = await client.crons.create_for_thread(
        thread["thread_id"], "tally", schedule="0 9 * * 1", input=[], metadata={"tag": tag, "n": 1}
    )
    second = await client.crons.create(
        "tally", schedule="0 18 * * *", input=[], metadata={"tag": tag, "n": 2}, timezone="Europe/Paris"
    )
    monday = datetime.fromisoformat(first["next_run_date"])
    assert monday.weekday() == 0 and monday.hour == 9  # cron's 1 is Monday
    evening = datetime.fromisoformat(second["next_run_date"])
    assert evening.astimezone(UTC).hour in (16, 17)  # 18:00 in Paris

    assert await client.crons.count(metadata={"tag": tag}) == 2
    assert await client.crons.count(thread_id=thread["thread_id"]) == 1
    oldest = await client.crons.search(metadata={"tag": tag}, sort_by="created_at", sort_order="asc")
    assert [cron["cron_id"] for cron in oldest] == [first["cron_id"], second["cron_id"]]
    selected = await client.crons.search(metadata={"tag": tag}, select=["cron_id", "schedule"])
    assert all(set(cron) == {"cron_id", "schedule"} for cron in selected)
    assert [c["cron_id"] for c in await client.crons.search(thread_id=thread["thread_id"])] == [
        first["cron_id"]
    ]
    assert await client.crons.search(metadata={"tag": tag}, enabled=False) == []
    fetched = await client.http.get(f"/runs/crons/{first['cron_id']}")
    assert fetched["cron_id"] == first["cron_id"] and fetched["schedule"] == "0 9 * * 1"

    updated = await client.crons.update(
        second["cron_id"], schedule="15 6 * * *", timezone="UTC", input=["x"], metadata={"owner": "ana"}
    )
    assert updated["schedule"] == "15 6 * * *" and updated["timezone"] == "UTC"
    assert datetime.fromisoformat(updated["next_run_date"]).astimezone(UTC).strftime("%H:%M") == "06:15"
    assert updated["payload"]["input"] == ["x"] and updated["payload"]["assistant_id"] == "tally"
    assert updated["metadata"] == {"tag": tag, "n": 2, "owner": "ana"}
    assert updated["end_time"] is None
    ended = await client.crons.update(second["cron_id"], end_time=datetime.now(UTC) - timedelta(minutes=1))
    assert ended["next_run_date"] is None  # nothing left to fire

    # Another tenant sees none of it, and cannot change or remove it.
    assert await other.crons.count(metadata={"tag": tag}) == 0
    assert await other.crons.search(metadata={"tag": tag}) == []
    with pytest.raises(NotFoundError):
        await other.crons.update(first["cron_id"], enabled=False)
    with pytest.raises(NotFoundError):
        await other.crons.delete(first["cron_id"])
    with pytest.raises(NotFoundError):
        await other.crons.create_for_thread(thread["thread_id"], "tally", schedule="0 9 * * *", input=[])
    assert (await client.http.get(f"/runs/crons/{first['cron_id']}"))["enabled"] is True

    # The thread's deletion takes its crons with it.
    await client.threads.delete(thread["thread_id"])
    assert await client.crons.count(metadata={"tag": tag}) == 1
    await client.crons.delete(second["cron_id"])


async def test_bad_crons_are_refused_naming_the_field(live: LiveServer, keys: dict[str, str]) -> None:
    client = sdk(live, keys["demo-retail"])
    thread = await client.threads.create()
    tid = thread["thread_id"]
    refused: list[tuple[dict[str, Any], type[Exception], str]] = [
        ({"schedule": "every monday"}, UnprocessableEntityError, "schedule"),
        ({"schedule": "0 9 * * *", "timezone": "Mars/Olympus"}, UnprocessableEntityError, "timezone"),
        (
            {"schedule": "0 9 * * *", "assistant_id": "master_agent", "input": {"goal": 3}},
            UnprocessableEntityError,
            "input.goal",
        ),
        (
            {"schedule": "0 9 * * *", "webhook": "http://169.254.169.254/latest", "input": []},
            UnprocessableEntityError,
            "",
        ),
        ({"schedule": "0 9 * * *", "assistant_id": "nope", "input": []}, NotFoundError, "nope"),
    ]
    for fields, error, named in refused:
        body = {"assistant_id": "tally", "input": [], **fields}
        with pytest.raises(error) as raised:
            await client.http.post(f"/threads/{tid}/runs/crons", json=body)
        assert named in str(raised.value.response.json())  # type: ignore[attr-defined]
    with pytest.raises(UnprocessableEntityError):  # a thread's runs stay on it
        await client.http.post(
            f"/threads/{tid}/runs/crons",
            json={"assistant_id": "tally", "schedule": "0 9 * * *", "input": [], "on_run_completed": "keep"},
        )
    with pytest.raises(NotFoundError):
        await client.crons.create_for_thread(str(uuid.uuid4()), "tally", schedule="0 9 * * *", input=[])
    assert await client.crons.count(thread_id=tid) == 0  # nothing stored

    cron = await client.crons.create_for_thread(tid, "tally", schedule="0 9 * * *", input=[])
    with pytest.raises(BadRequestError):
        await client.http.patch(f"/runs/crons/{cron['cron_id']}", json={})
    with pytest.raises(UnprocessableEntityError):
        await client.crons.update(cron["cron_id"], schedule="99 * * * *")
    with pytest.raises(UnprocessableEntityError):
        await client.http.patch(f"/runs/crons/{cron['cron_id']}", json={"enabled": None})
    assert (await client.http.get(f"/runs/crons/{cron['cron_id']}"))["schedule"] == "0 9 * * *"  # unchanged
    with pytest.raises(UnprocessableEntityError):
        await client.crons.search(sort_by="secret")  # type: ignore[arg-type]
    with pytest.raises(NotFoundError):
        await client.http.get(f"/runs/crons/{uuid.uuid4()}")
    await client.crons.delete(cron["cron_id"])


async def test_a_cron_survives_a_restart(
    pg_server_uri: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    settings = server_settings(
        pg_server_uri,
        tmp_path_factory,
        "cronrestart",
        graphs=("tally=tests.tally_graph:make_graph",),
        **ANY_FREQUENCY,
    )
    async with LiveServer(settings) as first:
        pool = service(first).resources.database.pool
        key = (await create_key(pool, "demo-retail")).key
        client = sdk(first, key)
        thread = await client.threads.create()
        cron = await client.crons.create_for_thread(
            thread["thread_id"], "tally", schedule=EVERY_SECOND, input=[]
        )
    stopped = datetime.now(UTC)
    async with LiveServer(settings) as second:  # a new process: the cron's job is in the job store
        client = sdk(second, key)
        pool = service(second).resources.database.pool

        async def fired_since_restart() -> bool:
            async with pool.connection() as conn:
                row = await (
                    await conn.execute(
                        "SELECT count(*) AS n FROM cron_firings f JOIN runs r ON r.run_id = f.run_id "
                        "WHERE f.cron_id = %s AND f.fired_at > %s AND r.status = 'success'",
                        (cron["cron_id"], stopped),
                    )
                ).fetchone()
            return row is not None and row["n"] >= 1

        await eventually(fired_since_restart)
        await client.crons.delete(cron["cron_id"])
