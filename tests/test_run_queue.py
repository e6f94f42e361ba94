"""Queued runs start the moment they can, by notification and never by the claim loop's poll (the
poll is set to an hour here), in a fair order between tenants, without idling slots one tenant could
use. Runs wait at gates the test opens (``tests/gated_graph.py``): order is asserted, never time."""

from __future__ import annotations

import asyncio
import contextlib
import re
import uuid
from collections.abc import AsyncIterator, Awaitable
from typing import Any

import httpx
import pytest
from langgraph_sdk import get_client
from langgraph_sdk.client import LangGraphClient

from master_agent.capabilities import install_tenant
from master_agent.runtime import RuntimeResources
from master_agent.runtime.runs import RunQueue
from master_agent.service.auth import create_key
from tests import gated_graph
from tests.conftest import server_settings
from tests.live_server import LiveServer

#: Only guards against a hang (the test's subject is order): runs here begin within milliseconds.
HANG_GUARD_S = 120.0


@pytest.fixture(scope="module")
async def live(pg_server_uri: str, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[LiveServer]:
    settings = server_settings(
        pg_server_uri,
        tmp_path_factory,
        "queue",
        graphs=("gated=tests.gated_graph:make_graph",),
        run_concurrency=2,
        run_poll_s=3600,
    )
    async with LiveServer(settings) as server:
        yield server


def _service(live: LiveServer) -> Any:
    return live.server.config.app.state.service


@pytest.fixture(scope="module")
async def clients(live: LiveServer) -> dict[str, LangGraphClient]:
    pool = _service(live).resources.database.pool
    await install_tenant(pool, _service(live).resources.settings, "retail", "second-shop")
    return {
        tenant: get_client(url=live.url, api_key=(await create_key(pool, tenant)).key)
        for tenant in ("demo-retail", "second-shop")
    }


async def _arrived(gate: str) -> None:
    await asyncio.wait_for(gated_graph.ARRIVALS[gate].wait(), HANG_GUARD_S)


async def _queue(client: LangGraphClient, gate: str) -> dict[str, Any]:
    thread = await client.threads.create()
    run: dict[str, Any] = await client.runs.create(thread["thread_id"], "gated", input={"gate": gate})
    return run


async def _status(client: LangGraphClient, run: dict[str, Any]) -> str:
    fetched = await client.runs.get(run["thread_id"], run["run_id"])
    return str(fetched["status"])


async def _claims(live: LiveServer) -> dict[str, float]:
    async with httpx.AsyncClient() as http:
        text = (await http.get(f"{live.url}/metrics")).text
    found = re.findall(r'^master_agent_run_claims_total\{trigger="(\w+)"\} (\S+)$', text, re.M)
    return {trigger: float(value) for trigger, value in found}


async def _finish(client: LangGraphClient, runs: list[dict[str, Any]]) -> list[str]:
    joined: list[Awaitable[Any]] = [client.runs.join(run["thread_id"], run["run_id"]) for run in runs]
    await asyncio.wait_for(asyncio.gather(*joined), HANG_GUARD_S)
    return [await _status(client, run) for run in runs]


async def test_queued_runs_start_when_a_slot_frees_by_wake_up_fairly_between_tenants(
    live: LiveServer, clients: dict[str, LangGraphClient]
) -> None:
    busy, quiet = clients["demo-retail"], clients["second-shop"]
    tag = uuid.uuid4().hex[:8]
    a1, a2, a3, b1 = (f"{tag}-{name}" for name in ("a1", "a2", "a3", "b1"))
    before = await _claims(live)
    first = [await _queue(busy, a1), await _queue(busy, a2)]
    # One tenant alone takes both slots: no capacity idles behind a per-tenant share.
    await _arrived(a1)
    await _arrived(a2)
    later = await _queue(busy, a3)
    other = await _queue(quiet, b1)  # queued after a3
    assert [await _status(busy, later), await _status(quiet, other)] == ["pending", "pending"]

    gated_graph.GATES[a1].set()
    # The freed slot goes to the tenant holding none, though its run is younger; no poll ran.
    await _arrived(b1)
    assert gated_graph.ENTERED[-3:] in ([a1, a2, b1], [a2, a1, b1])
    assert await _status(busy, later) == "pending"

    gated_graph.GATES[a2].set()
    await _arrived(a3)
    assert gated_graph.ENTERED[-1] == a3
    for gate in (a3, b1):
        gated_graph.GATES[gate].set()
    assert await _finish(busy, [*first, later]) == ["success"] * 3
    assert await _finish(quiet, [other]) == ["success"]

    claims = await _claims(live)
    # Every run was claimed from the queue after a wake-up; the hour-long poll never found one.
    assert claims.get("wake", 0) - before.get("wake", 0) == 4
    assert claims.get("poll", 0) == before.get("poll", 0)


async def test_a_run_queued_in_a_full_process_starts_at_once_in_another(
    live: LiveServer, clients: dict[str, LangGraphClient]
) -> None:
    client = clients["demo-retail"]
    resources: RuntimeResources = _service(live).resources
    tag = uuid.uuid4().hex[:8]
    c1, c2, c3 = (f"{tag}-{name}" for name in ("c1", "c2", "c3"))
    held = [await _queue(client, c1), await _queue(client, c2)]
    await _arrived(c1)
    await _arrived(c2)  # the service's two slots are taken
    elsewhere = RunQueue(resources)  # a second worker process on the same database, also polling hourly
    assert elsewhere.poll_s == 3600
    await elsewhere.start()
    try:
        queued = await _queue(client, c3)
        # Its NOTIFY reached the other worker, which claimed it at once.
        await _arrived(c3)
        async with resources.database.pool.connection() as conn:
            row = await (
                await conn.execute("SELECT lease_owner FROM runs WHERE run_id = %s", (queued["run_id"],))
            ).fetchone()
        assert row is not None and row["lease_owner"] == elsewhere.owner
        for gate in (c1, c2, c3):
            gated_graph.GATES[gate].set()
        assert await _finish(client, [*held, queued]) == ["success"] * 3
    finally:
        await elsewhere.stop()


async def test_a_waiter_elsewhere_reads_a_queued_run_again_only_when_its_end_is_notified(
    live: LiveServer, clients: dict[str, LangGraphClient], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``runs.wait`` on a run executing in another process: while that process listens, the waiter is
    woken by the run's end (DONE_CHANNEL), not by polling (re-reading every waiter while runs queued cost
    several reads per run at 100 clients). Its fallback poll is made as fast as can be here, so a
    waiter that polled would read the run many times while it is held at its gate."""
    from master_agent.runtime.runs import queue as queue_module

    monkeypatch.setattr(queue_module, "POLL_S", 0.001)
    client = clients["demo-retail"]
    resources: RuntimeResources = _service(live).resources
    gate = f"{uuid.uuid4().hex[:8]}-waited"
    # A second process on the same database that only listens (no claim loop: the service executes).
    elsewhere = RunQueue(resources)
    elsewhere._tasks = [asyncio.create_task(elsewhere._listen_loop())]
    reads: list[str] = []
    first_read = asyncio.Event()
    read = elsewhere.get

    async def counted(run_id: str) -> Any:
        reads.append(run_id)
        first_read.set()
        return await read(run_id)

    monkeypatch.setattr(elsewhere, "get", counted)
    try:
        await asyncio.wait_for(elsewhere._listening.wait(), HANG_GUARD_S)
        run = await _queue(client, gate)
        await _arrived(gate)
        waiter = asyncio.create_task(elsewhere.wait(run["run_id"]))
        await asyncio.wait_for(first_read.wait(), HANG_GUARD_S)
        await asyncio.sleep(0.05)  # time for a polling waiter to read again; this one must not
        assert len(reads) == 1 and not waiter.done()
        gated_graph.GATES[gate].set()
        finished = await asyncio.wait_for(waiter, HANG_GUARD_S)
        assert finished is not None and finished.status == "success"
        assert len(reads) == 2  # the first look, and the look after the end was notified
    finally:
        await elsewhere.stop()


async def test_a_new_run_queues_behind_queued_runs_instead_of_taking_a_free_slot(
    live: LiveServer, clients: dict[str, LangGraphClient]
) -> None:
    """A run that could start at once in its process (a free slot) queues when runs are queued: a slot
    freed while the claim loop's claim is in flight went to new arrivals, and queued runs starved."""
    client = clients["demo-retail"]
    resources: RuntimeResources = _service(live).resources
    gate = f"{uuid.uuid4().hex[:8]}-late"
    thread = await client.threads.create()
    assistant = (await client.assistants.search(graph_id="gated"))[0]
    # A worker process with every slot free (not started: no claim loop of its own) told by a
    # notification that a run was queued somewhere.
    elsewhere = RunQueue(resources)
    elsewhere._wake_claims("")

    def enqueue() -> Awaitable[Any]:
        return elsewhere.enqueue_graph_run(
            tenant_id="demo-retail",
            thread_id=thread["thread_id"],
            assistant_id=uuid.UUID(assistant["assistant_id"]),
            kwargs={"graph_id": "gated", "input": {"gate": gate}},
            metadata={},
            multitask_strategy="enqueue",
            execute_here=True,
        )

    run = await enqueue()
    assert run.status == "pending" and elsewhere.active == 0
    # It was queued with a wake-up: the service's worker claims it.
    await _arrived(gate)
    gated_graph.GATES[gate].set()
    ended = {"thread_id": thread["thread_id"], "run_id": str(run.run_id)}
    assert await _finish(client, [ended]) == ["success"]


async def test_a_cancel_that_comes_while_its_run_is_being_claimed_stops_the_run(
    live: LiveServer, clients: dict[str, LangGraphClient], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The claim stores the run as running before this process has its task: a cancel request coming
    in between (its notification handled first) still stops the run. The interleaving is forced by
    cancelling inside the claim, through the real API, and waiting until the notice has been handled."""
    client = clients["demo-retail"]
    queue: RunQueue = _service(live).queue
    gate = f"{uuid.uuid4().hex[:8]}-claimed"
    thread = await client.threads.create()
    claim = queue._claim
    cancelled: list[str] = []

    async def claim_then_cancel() -> dict[str, Any] | None:
        row = await claim()
        if row is not None and (row.get("kwargs") or {}).get("input", {}).get("gate") == gate:
            run_id = str(row["run_id"])
            await client.runs.cancel(row["thread_id"], run_id)
            for _ in range(2000):  # until this process's listener has handled the notice
                if run_id in queue._cancels_unplaced:
                    break
                await asyncio.sleep(0.005)
            cancelled.append(run_id)
        return row

    monkeypatch.setattr(queue, "_claim", claim_then_cancel)
    run = await client.runs.create(thread["thread_id"], "gated", input={"gate": gate})
    try:
        # The gate is not opened: only the cancel ends the run.
        await asyncio.wait_for(client.runs.join(thread["thread_id"], run["run_id"]), HANG_GUARD_S)
    finally:
        gated_graph.GATES[gate].set()  # a run the cancel missed must not hold the server's shutdown
    assert cancelled == [run["run_id"]]
    assert await _status(client, run) == "interrupted"


async def test_a_cancel_that_comes_while_a_run_stores_its_end_lets_it_end_as_it_did(
    live: LiveServer, clients: dict[str, LangGraphClient], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run whose work is done is storing its end when a cancel comes (an assistant deleted as its run
    finishes): the end is stored, not cut off (which left the run 'running' under its lease). The
    interleaving is forced by cancelling, through the real API, as the end's storing begins."""
    client = clients["demo-retail"]
    queue: RunQueue = _service(live).queue
    gate = f"{uuid.uuid4().hex[:8]}-ending"
    thread = await client.threads.create()
    storing = queue.events.storing
    cancelled: list[str] = []

    @contextlib.asynccontextmanager
    async def cancel_then_store(run_id: str) -> AsyncIterator[Any]:
        if run_id in queue._finishing and not cancelled:
            cancelled.append(run_id)
            await client.runs.cancel(str(thread["thread_id"]), run_id)
        async with storing(run_id) as batch:
            yield batch

    monkeypatch.setattr(queue.events, "storing", cancel_then_store)
    run = await client.runs.create(thread["thread_id"], "gated", input={"gate": gate})
    gated_graph.GATES[gate].set()
    await asyncio.wait_for(client.runs.join(thread["thread_id"], run["run_id"]), HANG_GUARD_S)
    assert cancelled == [run["run_id"]]
    assert await _status(client, run) == "success"
