"""Compound data questions through the real service: every question of the message answered, each
part's figure the one its own query returns on the tenant's rows, and a part the data cannot give named
as not answered (the reply then partial, never a success)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import httpx
import pytest

from tests.live_server import LiveServer, chat, data_schema, live_server_fixture

#: "last month" is then September 2026, the demo data's last month.
NOW = datetime(2026, 10, 14, 12, tzinfo=UTC)
live = live_server_fixture("compound", now=NOW)


@pytest.fixture(scope="module")
async def key(live: LiveServer) -> str:
    from master_agent.service.auth import create_key

    pool = live.server.config.app.state.service.resources.database.pool
    return (await create_key(pool, "demo-retail")).key


async def _ask(live: LiveServer, key: str, message: str) -> dict[str, Any]:
    headers = {"Authorization": f"Bearer {key}"}
    async with httpx.AsyncClient(base_url=live.url, headers=headers, timeout=120) as client:
        reply: dict[str, Any] = (await chat(client, message))["values"]["reply"]
    return reply


async def _rows(live: LiveServer, sql: str, params: dict[str, Any] | None = None) -> float:
    schema = await data_schema(live)
    async with (
        live.server.config.app.state.service.resources.database.pool.connection() as conn,
        conn.transaction(),
    ):
        # The tenant's schema for this statement only: the pool's connection goes back as it came.
        await conn.execute(f"SET LOCAL search_path TO {schema}")
        row = await (await conn.execute(sql, params or {})).fetchone()
    assert row is not None
    return float(row["value"])


async def test_each_figure_of_a_compound_question_is_its_own_querys_value(live: LiveServer, key: str) -> None:
    reply = await _ask(
        live, key, "What was store 3's refund rate in August, and how many phones did it sell?"
    )
    data = reply["data"]
    assert reply["status"] == "success" and data["outcome"] == "answer", reply["text"]
    assert [part["metric"] for part in data["parts"]] == ["refund rate", "transactions"]
    for part in data["parts"]:
        # Each part's query, run again on the rows with its own parameters, gives the part's figure.
        assert part["value"] == pytest.approx(await _rows(live, part["sql"], part["params"]))
        assert part["window"]["start"].startswith("2026-08-01") and part["params"]["store_id"] == "3"
    where = "store_id = 3 AND sold_at >= '2026-08-01' AND sold_at < '2026-09-01'"
    rate = await _rows(live, f"SELECT avg(refunded::int)::float AS value FROM transactions WHERE {where}")
    sold = await _rows(live, f"SELECT count(*) AS value FROM transactions WHERE {where}")
    assert [part["value"] for part in data["parts"]] == pytest.approx([rate, sold])


async def test_a_part_the_data_cannot_give_is_named_and_the_reply_is_partial(
    live: LiveServer, key: str
) -> None:
    reply = await _ask(live, key, "Store 5 takings in July, and what was the footfall?")
    data = reply["data"]
    assert reply["status"] == "partial" and data["outcome"] == "partial", reply["text"]
    takings, footfall = data["parts"]
    where = "store_id = 5 AND sold_at >= '2026-07-01' AND sold_at < '2026-08-01'"
    money = "coalesce(sum(device_amount + coalesce(accessory_amount, 0)), 0)"
    assert takings["value"] == pytest.approx(
        await _rows(live, f"SELECT {money} AS value FROM transactions WHERE {where}")
    )
    assert footfall["outcome"] == "out_of_scope" and footfall.get("value") is None
    assert len(data["missing"]) == 1 and "footfall" in data["missing"][0]


async def test_a_figure_and_its_change_on_another_period_says_the_direction_the_rows_give(
    live: LiveServer, key: str
) -> None:
    reply = await _ask(live, key, "Attach rate at store 2 in July, and was it up or down on June?")
    data = reply["data"]
    assert reply["status"] == "success", reply["text"]
    july, june = [
        await _rows(
            live,
            "SELECT avg(accessory_attached::int)::float AS value FROM transactions "
            "WHERE store_id = 2 AND sold_at >= %(start)s AND sold_at < %(end)s",
            {"start": start, "end": end},
        )
        for start, end in (("2026-07-01", "2026-08-01"), ("2026-06-01", "2026-07-01"))
    ]
    assert data["compare"]["direction"] == ("up" if july > june else "down")
    assert data["compare"]["change"] == pytest.approx(july - june)
