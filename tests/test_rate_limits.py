"""Rate limits and cron frequency, against the real service: a tenant's burst of requests is refused 429
with ``Retry-After`` while another tenant is served; two servers on one database share the count; runs
past their limit are refused and nothing of them is stored; failed console sign-ins lock the address
and the key prefix out (the right key too) until the window ends; a seconds field or a schedule firing
more often than the minimum is refused 422 for crons and playbooks, naming the field."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import time
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest

from master_agent.capabilities import install_tenant
from master_agent.evolution.scheduler import check_cron_frequency
from master_agent.runtime import RuntimeResources
from master_agent.service.auth import create_key
from master_agent.service.deps import CONSOLE_COOKIE
from master_agent.settings import Settings
from master_agent.storage.rate_limits import sweep_counters
from tests.conftest import create_database, installed_template
from tests.live_server import LiveServer, create_key_cli, live_server_fixture, start_serve

REQUESTS = 40
RUNS = 3
SIGN_IN_FAILURES = 3
#: Long windows, so a test never straddles a window's end (see ``clear_of_window_end``); a test that needs
#: one to end ends it in the database (``end_windows``) rather than waiting it out.
WINDOW_S = 3600
SIGN_IN_WINDOW_S = WINDOW_S

live = live_server_fixture(
    "ratelimits",
    graphs=("tally=tests.tally_graph:make_graph",),
    embeddings="hashing",
    rate_requests=REQUESTS,
    rate_requests_window_s=WINDOW_S,
    rate_runs=RUNS,
    rate_runs_window_s=WINDOW_S,
    sign_in_failures=SIGN_IN_FAILURES,
    sign_in_window_s=SIGN_IN_WINDOW_S,
)

PLAYBOOK = {
    "name": "monitor",
    "trigger": {"cron": "0 9 * * MON"},
    "steps": [
        {"order": 1, "action": "tool", "tool": "staff_performance", "args": {"store_id": 5}},
        {"order": 2, "action": "notify", "message": "coach staff below 4%"},
    ],
    "integrations": ["outbox"],
    "success_metrics": {"primary": "attach_rate"},
    "rollback": {"steps": ["disable"]},
    "owner": "store manager",
}


def resources_of(server: LiveServer) -> RuntimeResources:
    resources: RuntimeResources = server.server.config.app.state.service.resources
    return resources


@pytest.fixture(scope="module")
async def keys(live: LiveServer) -> dict[str, str]:
    """A key per tenant; each test counts against tenants of its own."""
    resources = resources_of(live)
    made = {}
    for tenant in ("demo-retail", "burst-shop", "calm-shop", "runs-shop", "other-shop"):
        if tenant != "demo-retail":
            await install_tenant(resources.database.pool, resources.settings, "retail", tenant)
        made[tenant] = (await create_key(resources.database.pool, tenant)).key
    return made


@pytest.fixture
async def clients(live: LiveServer, keys: dict[str, str]) -> AsyncIterator[dict[str, httpx.AsyncClient]]:
    made = {
        tenant: httpx.AsyncClient(base_url=live.url, headers={"X-API-Key": key}, timeout=60)
        for tenant, key in keys.items()
    }
    try:
        yield made
    finally:
        for client in made.values():
            await client.aclose()


async def clear_of_window_end(window_s: float, margin_s: float) -> None:
    """Wait for the next window when the current one ends within ``margin_s`` (windows are cut from
    the epoch, on the database's clock: this machine's)."""
    remaining = window_s - time.time() % window_s
    if remaining < margin_s:
        await asyncio.sleep(remaining + 0.05)


async def end_windows(live: LiveServer, bucket: str) -> None:
    """End the current windows of ``bucket``'s counters, as the database's clock passing their end would:
    each window moves back by its own length (windows are read against the database's ``now()``)."""
    async with resources_of(live).database.pool.connection() as conn:
        await conn.execute(
            "UPDATE rate_limit_counters SET window_start = window_start - (window_end - window_start),"
            " window_end = window_start WHERE bucket = %s",
            (bucket,),
        )


def refused(response: httpx.Response, limit: str, window_s: int) -> None:
    assert response.status_code == 429, response.text
    assert 1 <= int(response.headers["retry-after"]) <= window_s
    body = response.json()
    assert body["limit"] == limit and body["retry_after_s"] == int(response.headers["retry-after"])
    assert body["detail"].startswith(f"{limit}: ")


async def count_rows(live: LiveServer, table: str, tenant: str) -> int:
    async with resources_of(live).database.pool.connection() as conn:
        row = await (
            await conn.execute(f"SELECT count(*) AS n FROM {table} WHERE tenant_id = %s", (tenant,))
        ).fetchone()
    assert row is not None
    return int(row["n"])


async def test_a_burst_is_refused_429_while_another_tenant_is_served(
    clients: dict[str, httpx.AsyncClient],
) -> None:
    await clear_of_window_end(WINDOW_S, 10)
    burst = clients["burst-shop"]
    answers = await asyncio.gather(
        *(burst.post("/threads/search", json={"limit": 1}) for _ in range(REQUESTS + 20))
    )
    statuses = [answer.status_code for answer in answers]
    # Counted atomically in the database: exactly the limit is served however the burst interleaves.
    assert statuses.count(200) == REQUESTS and statuses.count(429) == 20
    refused(next(a for a in answers if a.status_code == 429), "requests", WINDOW_S)
    assert "MASTER_AGENT_RATE_REQUESTS" in next(a for a in answers if a.status_code == 429).json()["detail"]
    refused(await burst.get("/assistants/search"), "requests", WINDOW_S)

    assert (await clients["calm-shop"].post("/threads/search", json={"limit": 1})).status_code == 200
    # Liveness and readiness are never limited (a load balancer keeps probing a refused tenant's key).
    assert (await burst.get("/ok")).status_code == 200
    assert (await burst.get("/health")).status_code == 200


def test_two_service_processes_on_one_database_share_the_count(
    pg_server_uri: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    limit = 10
    installed = installed_template(pg_server_uri, tmp_path_factory)
    env = {
        **os.environ,
        "DATABASE_URL": create_database(pg_server_uri, "ratetwo", template=installed),
        "MASTER_AGENT_MODEL": "offline",
        "MASTER_AGENT_EMBEDDINGS": "hashing",
        "MASTER_AGENT_RATE_REQUESTS": str(limit),
        "MASTER_AGENT_RATE_REQUESTS_WINDOW_S": str(WINDOW_S),
    }
    key = create_key_cli(env, "demo-retail")
    servers = [start_serve(env), start_serve(env)]
    try:
        remaining = WINDOW_S - time.time() % WINDOW_S
        if remaining < 10:
            time.sleep(remaining + 0.05)
        clients = [httpx.Client(base_url=url, headers={"X-API-Key": key}, timeout=60) for _, url in servers]
        # Half the limit on each: neither process alone comes near it, together they reach it.
        for _ in range(limit // 2):
            for client in clients:
                assert client.post("/threads/search", json={}).status_code == 200
        for client in clients:
            refused(client.post("/threads/search", json={}), "requests", WINDOW_S)
            client.close()
    finally:
        for server, _ in servers:
            server.send_signal(signal.SIGTERM)
            server.wait(timeout=30)


async def test_runs_past_the_limit_are_refused_and_nothing_is_stored(
    live: LiveServer, clients: dict[str, httpx.AsyncClient]
) -> None:
    await clear_of_window_end(WINDOW_S, 10)
    client = clients["runs-shop"]
    run = {"assistant_id": "tally", "input": []}
    threads = [(await client.post("/threads", json={})).json()["thread_id"] for _ in range(RUNS + 1)]
    for thread_id in threads[:RUNS]:
        started = await client.post(f"/threads/{thread_id}/runs", json=run)
        assert started.status_code == 200, started.text
    runs_before = await count_rows(live, "runs", "runs-shop")
    threads_before = await count_rows(live, "threads", "runs-shop")
    assert runs_before == RUNS

    refused(await client.post(f"/threads/{threads[RUNS]}/runs", json=run), "runs_started", WINDOW_S)
    refused(await client.post(f"/threads/{threads[RUNS]}/runs/wait", json=run), "runs_started", WINDOW_S)
    refused(await client.post("/runs", json=run), "runs_started", WINDOW_S)
    refused(await client.post("/runs/batch", json=[run, run]), "runs_started", WINDOW_S)
    refused(await client.post("/runs/stream", json=run), "runs_started", WINDOW_S)
    refused(await client.post("/chat/stream", json={"message": "hello"}), "runs_started", WINDOW_S)
    refused(
        await client.post(
            f"/threads/{threads[RUNS]}/commands",
            json={"id": 1, "method": "run.start", "params": {"assistant_id": "tally", "input": []}},
        ),
        "runs_started",
        WINDOW_S,
    )
    assert await count_rows(live, "runs", "runs-shop") == runs_before
    assert await count_rows(live, "threads", "runs-shop") == threads_before  # no stateless run's thread

    # Only runs are refused: the tenant still reads, and another tenant still starts runs.
    assert (await client.get(f"/threads/{threads[0]}")).status_code == 200
    other = await clients["calm-shop"].post("/runs", json=run)
    assert other.status_code == 200, other.text
    # A body the counting cannot read is the body validation's to refuse, never a server error.
    for path in ("/runs/batch", f"/threads/{threads[0]}/commands"):
        for content in (b"", b"{not json"):
            answer = await clients["calm-shop"].post(path, content=content)
            assert answer.status_code == 422, answer.text


async def test_the_console_goal_form_counts_its_run(live: LiveServer, keys: dict[str, str]) -> None:
    # runs-shop used up its runs in the test above (the runs window is an hour).
    async with httpx.AsyncClient(base_url=live.url, timeout=60) as client:
        shown = await client.get("/console/sign-in")
        token = re.search(r'name="sign_in_token" value="([^"]+)"', shown.text)
        assert token is not None
        signed = await client.post(
            "/console/sign-in", data={"api_key": keys["runs-shop"], "sign_in_token": token.group(1)}
        )
        assert signed.status_code == 303
        csrf = re.search(r'name="csrf-token" content="([^"]+)"', (await client.get("/console/goals")).text)
        assert csrf is not None
        before = await count_rows(live, "solutions", "runs-shop")
        posted = await client.post(
            "/console/goals", data={"goal": "Raise Store 5's attach rate by 10%", "csrf_token": csrf.group(1)}
        )
        assert posted.status_code == 429 and 1 <= int(posted.headers["retry-after"]) <= WINDOW_S
        assert "runs_started" in posted.text
        assert await count_rows(live, "solutions", "runs-shop") == before


async def test_failed_sign_ins_lock_out_until_the_window_ends(live: LiveServer, keys: dict[str, str]) -> None:
    async def sign_in(client: httpx.AsyncClient, key: str) -> httpx.Response:
        shown = await client.get("/console/sign-in")
        token = re.search(r'name="sign_in_token" value="([^"]+)"', shown.text)
        assert token is not None
        return await client.post("/console/sign-in", data={"api_key": key, "sign_in_token": token.group(1)})

    def from_address(address: str) -> httpx.AsyncClient:
        transport = httpx.AsyncHTTPTransport(local_address=address)
        return httpx.AsyncClient(base_url=live.url, transport=transport, timeout=60)

    right = keys["demo-retail"]
    await clear_of_window_end(SIGN_IN_WINDOW_S, 10)
    async with from_address("127.0.0.1") as client:
        for attempt in range(SIGN_IN_FAILURES):
            failed = await sign_in(client, f"ma_wrong{attempt}")
            assert failed.status_code == 401
        locked = await sign_in(client, right)
        assert locked.status_code == 429 and CONSOLE_COOKIE not in client.cookies
        assert 1 <= int(locked.headers["retry-after"]) <= SIGN_IN_WINDOW_S
        assert "sign_in_failures" in locked.text and "MASTER_AGENT_SIGN_IN_FAILURES" in locked.text
        await end_windows(live, "sign_in_failures")
        signed = await sign_in(client, right)
        # Signed in: a session cookie (an opaque id, never the key itself).
        session = client.cookies.get(CONSOLE_COOKIE)
        assert signed.status_code == 303 and session and right not in session

    # By key prefix: guesses at one key from one address lock that key out from every address, while
    # another key still signs in from there. A fresh window: the lock-outs above have ended.
    await end_windows(live, "sign_in_failures")
    async with from_address("127.0.0.2") as guesser, from_address("127.0.0.3") as owner:
        for attempt in range(SIGN_IN_FAILURES):
            assert (await sign_in(guesser, right[:10] + f"wrong{attempt}")).status_code == 401
        assert (await sign_in(owner, right)).status_code == 429
        assert (await sign_in(owner, keys["other-shop"])).status_code == 303

    # Ended windows are swept (by the scheduler leader on its tick; here at once).
    await end_windows(live, "sign_in_failures")
    await sweep_counters(resources_of(live).database.pool)
    async with resources_of(live).database.pool.connection() as conn:
        left = await (
            await conn.execute(
                "SELECT count(*) AS n FROM rate_limit_counters WHERE bucket = 'sign_in_failures'"
            )
        ).fetchone()
    assert left is not None and left["n"] == 0


async def test_crons_firing_too_often_are_refused_naming_the_schedule(
    live: LiveServer, clients: dict[str, httpx.AsyncClient]
) -> None:
    client = clients["demo-retail"]
    thread_id = (await client.post("/threads", json={})).json()["thread_id"]
    cron = {"assistant_id": "tally", "input": []}
    for schedule, reason in (
        ("* * * * * *", "seconds field"),
        ("*/30 * * * * *", "seconds field"),
        ("* * * * *", "fires 1 min apart"),
        ("0,2 9 * * *", "fires 2 min apart"),
    ):
        for path in (f"/threads/{thread_id}/runs/crons", "/runs/crons"):
            answer = await client.post(path, json={**cron, "schedule": schedule})
            assert answer.status_code == 422, answer.text
            detail = answer.json()["detail"]
            assert detail.startswith("schedule: ") and reason in detail and "5 min" in detail
    assert (await client.post("/runs/crons/count", json={"thread_id": thread_id})).json() == 0

    made = await client.post(f"/threads/{thread_id}/runs/crons", json={**cron, "schedule": "*/5 * * * *"})
    assert made.status_code == 200, made.text
    cron_id = made.json()["cron_id"]
    faster = await client.patch(f"/runs/crons/{cron_id}", json={"schedule": "*/2 * * * *"})
    assert faster.status_code == 422 and "schedule: " in faster.json()["detail"]
    assert (await client.get(f"/runs/crons/{cron_id}")).json()["schedule"] == "*/5 * * * *"
    assert (await client.patch(f"/runs/crons/{cron_id}", json={"enabled": False})).status_code == 200
    assert (await client.delete(f"/runs/crons/{cron_id}")).status_code == 204


async def test_playbooks_firing_too_often_are_refused_naming_the_trigger(
    live: LiveServer, clients: dict[str, httpx.AsyncClient]
) -> None:
    client = clients["demo-retail"]
    before = await count_rows(live, "playbooks", "demo-retail")
    for cron, reason in (("* * * * * *", "seconds field"), ("*/1 * * * *", "fires 1 min apart")):
        spec: dict[str, Any] = {**PLAYBOOK, "trigger": {"cron": cron}}
        answer = await client.post("/playbooks", json={"spec": spec})
        assert answer.status_code == 422, answer.text
        body = answer.json()
        assert body["field"] == "trigger.cron" and reason in body["detail"] and "5 min" in body["detail"]
    assert await count_rows(live, "playbooks", "demo-retail") == before

    # A malformed cron is still the playbook's 400 (every problem listed), not a frequency refusal.
    malformed = await client.post("/playbooks", json={"spec": {**PLAYBOOK, "trigger": {"cron": "soon"}}})
    assert malformed.status_code == 400 and malformed.json()["field"] == "playbook"
    deployed = await client.post("/playbooks", json={"spec": PLAYBOOK})
    assert deployed.status_code == 201, deployed.text
    assert deployed.json()["schedule"] == "0 9 * * MON"


def test_the_closest_firings_are_measured_across_hours_days_and_zones() -> None:
    monday = datetime(2026, 3, 2, 12, tzinfo=UTC)
    check_cron_frequency("*/5 * * * *", 300, now=monday)
    check_cron_frequency("0 9 * * MON", 86_400, now=monday)
    for schedule in ("0,59 * * * *", "*/4 * * * *", "0-4 9 * * *"):
        with pytest.raises(ValueError):
            check_cron_frequency(schedule, 300, now=monday)
    with pytest.raises(ValueError, match="fires 1 h apart"):
        check_cron_frequency("0 0,23 * * *", 7200, now=monday)
    with pytest.raises(ValueError, match="fires 24 h apart"):
        check_cron_frequency("0 0 1,31 * *", 86_400 + 1, now=monday)
    # Across a daylight-saving change the gap is real time: 01:30 and 03:30 on 29 March in Paris are
    # one hour apart, not two.
    with pytest.raises(ValueError, match="fires 1 h apart"):
        check_cron_frequency("30 1,3 29 3 *", 5400, "Europe/Paris", now=monday)
    # 0 lifts the minimum (a seconds field too); under a minute a seconds field is accepted.
    check_cron_frequency("* * * * * *", 0, now=monday)
    check_cron_frequency("* * * * * */10", 10, now=monday)
    with pytest.raises(ValueError, match="seconds field"):
        check_cron_frequency("0 */10 * * * 0", 60, now=monday)


def test_limits_are_read_from_the_environment() -> None:
    settings = Settings.from_env(
        {
            "MASTER_AGENT_RATE_REQUESTS": "0",
            "MASTER_AGENT_RATE_RUNS_WINDOW_S": "10",
            "MASTER_AGENT_SIGN_IN_FAILURES": "5",
            "MASTER_AGENT_CRON_MIN_INTERVAL_S": "60",
        }
    )
    assert settings.rate_requests == 0 and settings.rate_runs == 1200 and settings.rate_runs_window_s == 10
    assert settings.sign_in_failures == 5 and settings.sign_in_window_s == 300
    assert settings.cron_min_interval_s == 60 and Settings().cron_min_interval_s == 300


async def test_a_lower_tier_waits_longer_between_firings(
    live: LiveServer, clients: dict[str, httpx.AsyncClient]
) -> None:
    pool = resources_of(live).database.pool
    async with pool.connection() as conn:
        row = await (await conn.execute("SELECT tier FROM tenants WHERE tenant_id = 'calm-shop'")).fetchone()
        assert row is not None
        await conn.execute("UPDATE tenants SET tier = 'pro' WHERE tenant_id = 'calm-shop'")
    try:
        client = clients["calm-shop"]
        cron = {"assistant_id": "tally", "input": [], "schedule": "*/10 * * * *"}
        refused = await client.post("/runs/crons", json=cron)
        assert refused.status_code == 422 and "15 min" in refused.json()["detail"], refused.text
        spec: dict[str, Any] = {**PLAYBOOK, "trigger": {"cron": "*/10 * * * *"}}
        refused_playbook = await client.post("/playbooks", json={"spec": spec})
        assert refused_playbook.status_code == 422 and "15 min" in refused_playbook.json()["detail"]
        made = await client.post("/runs/crons", json={**cron, "schedule": "*/15 * * * *"})
        assert made.status_code == 200, made.text
        assert (await client.delete(f"/runs/crons/{made.json()['cron_id']}")).status_code == 204
    finally:
        async with pool.connection() as conn:
            await conn.execute("UPDATE tenants SET tier = %s WHERE tenant_id = 'calm-shop'", (row["tier"],))
