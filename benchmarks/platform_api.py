"""LangGraph-platform numbers through the official langgraph-sdk client against ``master-agent serve``
(two workers, embedded Postgres), printed (never asserted):

1. Store at 100k items in one tenant: the bulk load's rate, then ``store.put_item`` and semantic
   ``store.search_items`` (pgvector HNSW through the tenant's namespaces) median / p95. Embedded with
   the ``hashing`` embedder so the numbers are the store's; the configured embedder's own cost per
   text is printed beside them.
2. Cron firing delay: from each firing's scheduled instant (``cron_firings.scheduled_for``) to its
   run's creation, for 20 thread crons firing every 5 seconds.
3. Webhook delivery delay: from a run's end (``runs.finished_at``) to the POST arriving at a local
   receiver, for background runs of the trivial graph.
"""

from __future__ import annotations

import asyncio
import random
import statistics
import tempfile
import time
from datetime import UTC, datetime
from typing import Any

import psycopg
import uvicorn
from benchmarks.service import ServiceUnderTest, _free_port, _ms, _p95, serving
from langgraph.store.base import PutOp
from langgraph_sdk import get_client
from psycopg.rows import dict_row
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from master_agent.models.embeddings import make_embedder
from master_agent.runtime import open_resources
from master_agent.settings import Settings
from master_agent.storage.embedded import embedded_server_uri

ITEMS = 100_000
LOAD_BATCH = 1_000
TOPICS = 400
SAMPLES = 200
CRONS = 20
CRON_EVERY_S = 5
CRON_WINDOW_S = 32
WEBHOOK_RUNS = 100
_VOCABULARY = [f"w{index}" for index in range(3_000)]


def _topic_words(rng: random.Random) -> list[list[str]]:
    return [rng.sample(_VOCABULARY, 6) for _ in range(TOPICS)]


def _memory(rng: random.Random, topics: list[list[str]], index: int) -> dict[str, Any]:
    """A note about one topic: most of its topic's words and a few others, as remembered text is."""
    topic = index % TOPICS
    words = rng.sample(topics[topic], 4) + rng.sample(_VOCABULARY, 4)
    rng.shuffle(words)
    return {"text": " ".join(words), "topic": topic}


async def _load_store(settings: Settings, items: int) -> float:
    """Items per second of the bulk load into demo-retail's store (the same store the service serves)."""
    rng = random.Random(11)
    topics = _topic_words(rng)
    async with open_resources(settings, install_demo=False) as resources:
        store = resources.tenant_store("demo-retail")
        start = time.perf_counter()
        for first in range(0, items, LOAD_BATCH):
            await store.abatch(
                [
                    PutOp(("memories", f"user{index % 50}"), f"m{index}", _memory(rng, topics, index))
                    for index in range(first, min(first + LOAD_BATCH, items))
                ]
            )
        return items / (time.perf_counter() - start)


async def bench_store(service: ServiceUnderTest, items: int) -> None:
    settings = Settings.from_env(service.env)
    rate = await _load_store(settings, items)
    client = get_client(url=service.url, api_key=service.key)
    rng = random.Random(12)
    topics = _topic_words(random.Random(11))
    puts, searches = [], []
    for index in range(SAMPLES):
        value = _memory(rng, topics, index)
        start = time.perf_counter()
        await client.store.put_item(["memories", "bench"], f"new{index}", value)
        puts.append(time.perf_counter() - start)
    for index in range(SAMPLES):
        query = " ".join(rng.sample(topics[index % TOPICS], 3))
        start = time.perf_counter()
        found = await client.store.search_items(["memories"], query=query, limit=10)
        searches.append(time.perf_counter() - start)
        assert found["items"], "a semantic search over the loaded store found nothing"
    configured = make_embedder(Settings.from_env().embeddings, settings)
    texts = [_memory(rng, topics, index)["text"] for index in range(64)]
    await configured.embed(texts[:8])  # warm: model load
    start = time.perf_counter()
    for text in texts:
        await configured.embed([text])
    per_text = (time.perf_counter() - start) / len(texts)
    print(
        f"store at {items} items: bulk load {rate:7.0f} items/s | put_item median {_ms(statistics.median(puts))} "
        f"p95 {_ms(_p95(puts))} | search_items (semantic, limit 10) median {_ms(statistics.median(searches))} "
        f"p95 {_ms(_p95(searches))} (n={SAMPLES}, hashing embedder) | {configured.model_name} embeds one text "
        f"in {_ms(per_text)}"
    )


async def bench_crons(service: ServiceUnderTest) -> None:
    client = get_client(url=service.url, api_key=service.key)
    threads = [await client.threads.create() for _ in range(CRONS)]
    crons = [
        await client.crons.create_for_thread(
            thread["thread_id"], "trivial", schedule=f"* * * * * */{CRON_EVERY_S}", input={"count": 0}
        )
        for thread in threads
    ]
    await asyncio.sleep(CRON_WINDOW_S)
    # Read before deleting: a cron's firings go with it.
    rows = await _fetch(
        service,
        "SELECT extract(epoch FROM r.created_at - f.scheduled_for) AS delay FROM cron_firings f "
        "JOIN runs r ON r.run_id = f.run_id WHERE f.cron_id = ANY(%s::uuid[])",
        ([cron["cron_id"] for cron in crons],),
    )
    for cron in crons:
        await client.crons.delete(cron["cron_id"])
    delays = [float(row["delay"]) for row in rows]
    print(
        f"cron firing delay (scheduled instant -> run created): median {_ms(statistics.median(delays))} "
        f"p95 {_ms(_p95(delays))} max {_ms(max(delays))} ({len(delays)} firings of {CRONS} crons every "
        f"{CRON_EVERY_S} s)"
    )


async def _fetch(service: ServiceUnderTest, query: str, params: tuple[Any, ...]) -> list[dict[str, Any]]:
    """Rows of the service's own database (the embedded server it started, unless DATABASE_URL is set)."""
    settings = Settings.from_env(service.env)
    uri = settings.database_url or await embedded_server_uri(settings.data_dir)
    async with await psycopg.AsyncConnection.connect(uri, row_factory=dict_row) as conn:
        return await (await conn.execute(query, params)).fetchall()


async def bench_webhooks(service: ServiceUnderTest) -> None:
    received: dict[str, datetime] = {}
    arrived = asyncio.Event()

    async def receive(request: Request) -> Response:
        payload = await request.json()
        received[payload["run_id"]] = datetime.now(UTC)
        if len(received) >= WEBHOOK_RUNS:
            arrived.set()
        return Response(status_code=204)

    port = _free_port()
    app = Starlette(routes=[Route("/hook", receive, methods=["POST"])])
    receiver = uvicorn.Server(uvicorn.Config(app, port=port, log_level="warning"))
    serving_task = asyncio.create_task(receiver.serve())
    # uvicorn offers no event for "socket bound"; its lifespan startup runs before the bind.
    while not receiver.started:  # noqa: ASYNC110
        await asyncio.sleep(0.05)
    try:
        client = get_client(url=service.url, api_key=service.key)
        hook = f"http://127.0.0.1:{port}/hook"
        for _ in range(WEBHOOK_RUNS):
            thread = await client.threads.create()
            await client.runs.create(thread["thread_id"], "trivial", input={"count": 0}, webhook=hook)
        await asyncio.wait_for(arrived.wait(), timeout=120)
    finally:
        receiver.should_exit = True
        await serving_task
    rows = await _fetch(
        service,
        "SELECT run_id::text AS run_id, finished_at FROM runs WHERE run_id = ANY(%s::uuid[])",
        (list(received),),
    )
    delays = [(received[row["run_id"]] - row["finished_at"]).total_seconds() for row in rows]
    print(
        f"webhook delivery delay (run end -> POST received): median {_ms(statistics.median(delays))} "
        f"p95 {_ms(_p95(delays))} max {_ms(max(delays))} (n={len(delays)})"
    )


def main(items: int = ITEMS) -> None:
    settings = {
        "MASTER_AGENT_EMBEDDINGS": "hashing",
        # The receiver is on loopback, which webhooks may not reach by default.
        "MASTER_AGENT_WEBHOOK_ALLOWED_NETWORKS": "127.0.0.0/8",
        # The crons measured fire every few seconds, under the deployment's 5-minute minimum.
        "MASTER_AGENT_CRON_MIN_INTERVAL_S": "0",
    }
    with (
        tempfile.TemporaryDirectory(prefix="ma-bench-platform-") as data_dir,
        serving(data_dir, settings) as service,
    ):
        asyncio.run(bench_store(service, items))
        asyncio.run(bench_crons(service))
        asyncio.run(bench_webhooks(service))


if __name__ == "__main__":
    import sys

    main(int(sys.argv[1]) if len(sys.argv) > 1 else ITEMS)
