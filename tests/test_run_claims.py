"""The claiming statement picks the oldest runnable run, and notifications follow the commits they announce."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import psycopg
import pytest

from master_agent.runtime import RuntimeResources, open_resources
from master_agent.runtime.runs import RunQueue
from master_agent.storage.notifications import Notifier
from tests.conftest import server_settings

TENANT = "demo-retail"
#: (label, thread, status, created seconds from now, lease seconds from now for running runs)
RUNS = [
    ("busy", "a", "running", -50, 60),  # its thread's live run
    ("behind-busy", "a", "pending", -40, None),  # the oldest pending run, but its thread is busy
    ("oldest-free", "b", "pending", -30, None),
    ("newer", "c", "pending", -20, None),
    ("lease-out", "e", "running", -10, -5),  # its worker died: taken over
    ("delayed", "d", "pending", 600, None),  # not due yet
    ("after-delayed", "d", "pending", 700, None),
]


@pytest.fixture
async def queue(pg_server_uri: str, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[RunQueue]:
    settings = server_settings(pg_server_uri, tmp_path_factory, "claims")
    async with open_resources(settings) as resources:
        yield RunQueue(resources)


async def _insert(resources: RuntimeResources) -> dict[str, str]:
    ids = {label: str(uuid.uuid4()) for label, *_ in RUNS}
    async with resources.database.pool.connection() as conn:
        for label, thread, status, created_s, lease_s in RUNS:
            await conn.execute(
                "INSERT INTO runs (run_id, tenant_id, thread_id, kind, status, lease_owner, lease_expires_at,"
                " created_at) VALUES (%s, %s, %s, 'graph', %s, %s,"
                " now() + make_interval(secs => %s), now() + make_interval(secs => %s))",
                (
                    ids[label],
                    TENANT,
                    f"claims-{thread}",
                    status,
                    "elsewhere" if lease_s else None,
                    lease_s,
                    created_s,
                ),
            )
    return ids


async def test_the_claim_takes_the_oldest_runnable_run_first(queue: RunQueue) -> None:
    ids = await _insert(queue.resources)
    labels = {run_id: label for label, run_id in ids.items()}
    claimed = []
    while (row := await queue._claim()) is not None:
        claimed.append(labels[str(row["run_id"])])
    # The oldest pending run waits behind its thread's live run; runs not due yet are left alone.
    assert claimed == ["oldest-free", "newer", "lease-out"]


async def test_notifications_go_out_after_their_commit_once_each(queue: RunQueue) -> None:
    pool = queue.resources.database.pool
    async with await psycopg.AsyncConnection.connect(
        queue.resources.database.uri, autocommit=True
    ) as listener:
        await listener.execute("LISTEN claims_test")
        notifier = Notifier(pool)
        for payload in ("first", "first", "second"):
            notifier.send("claims_test", payload)
        await notifier.aclose()
        received = []
        async for notice in listener.notifies(timeout=30, stop_after=2):
            received.append(notice.payload)
    assert received == ["first", "second"]
