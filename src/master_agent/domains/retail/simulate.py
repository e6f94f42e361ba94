"""The world after an intervention, for the demo and tests: post-delivery transactions of a solved
store whose attach rate moves by the chosen intervention's true effect (hidden in the catalogue,
never read by agents), ramping up over its weeks to effect, with noise.

Each staff member keeps their share of sales and their own historical attach rate; on top comes the
realised effect (the true effect times a noisy factor, one draw per simulation) and binomial noise of
the individual sales. The outcome tracker then measures these rows like any other.
"""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta
from typing import Any

import numpy as np
from psycopg import sql
from psycopg_pool import AsyncConnectionPool
from pydantic import BaseModel

from master_agent.errors import ConflictError, InputError

#: Relative spread of the realised effect around the true effect (one draw per simulation).
EFFECT_NOISE = 0.15

SELECT_SOLUTION = """
SELECT s.tenant_id, s.solution, s.delivered_at, t.data_schema
FROM solutions s JOIN tenants t USING (tenant_id) WHERE s.solution_id = %s
"""
STAFF_HISTORY = """
SELECT staff_id, count(*) AS sales, avg(accessory_attached::int)::float AS rate
FROM {schema}.transactions WHERE store_id = %(store_id)s AND sold_at < %(since)s
GROUP BY staff_id ORDER BY staff_id
"""
SPAN = "SELECT min(sold_at) AS first, max(sold_at) AS last FROM {schema}.transactions WHERE store_id = %(store_id)s AND sold_at < %(since)s"
#: One simulation per solution (a second would double its post-delivery sales).
MARKER = """
CREATE TABLE IF NOT EXISTS {schema}.simulations (
    solution_id uuid PRIMARY KEY, created_at timestamptz NOT NULL DEFAULT now()
)
"""
MARK = (
    "INSERT INTO {schema}.simulations (solution_id) VALUES (%s) ON CONFLICT DO NOTHING RETURNING solution_id"
)
INTERVENTION = (
    "SELECT true_effect_points, weeks_to_effect FROM {schema}.interventions WHERE intervention_id = %s"
)
NEXT_TX = "SELECT coalesce(max(tx_id), 0) + 1 AS next FROM {schema}.transactions"


class SimulatedOutcome(BaseModel):
    solution_id: str
    tenant_id: str
    store_id: int
    intervention_id: str
    true_effect_points: float
    realised_effect_points: float
    transactions: int
    attach_rate: float
    """Attach rate of the written transactions (after the ramp-up, the effect is in full)."""
    start: datetime
    end: datetime


async def simulate_outcome(
    pool: AsyncConnectionPool[Any], solution_id: str, *, seed: int | None = None
) -> SimulatedOutcome:
    """Write the post-intervention transactions of a delivered solution (once).

    With a ``seed`` the draws depend on it alone (a test or a replayed demo gets the same world
    whatever id its solution was given); without one, on the solution id, so two solutions of one
    demo do not share their noise."""
    try:
        solution_uuid = uuid.UUID(solution_id)
    except ValueError:
        raise InputError("solution_id", f"not a UUID: {solution_id!r}") from None
    async with pool.connection() as conn:
        row = await (await conn.execute(SELECT_SOLUTION, (solution_uuid,))).fetchone()
    if row is None:
        raise InputError("solution_id", f"unknown solution {solution_id}")
    solution = row["solution"] or {}
    outcome = solution.get("expected_outcome") or {}
    strategy = solution.get("strategy") or {}
    if row["delivered_at"] is None or "store_id" not in outcome or "intervention_id" not in strategy:
        raise InputError("solution_id", "the solution was not delivered with a store outcome and a strategy")
    schema = sql.Identifier(row["data_schema"])
    store_id, since = int(outcome["store_id"]), row["delivered_at"]
    timeline = int(outcome.get("timeline_days") or 60)
    params = {"store_id": store_id, "since": since}

    def q(text: str) -> sql.Composed:
        return sql.SQL(text).format(schema=schema)

    async with pool.connection() as conn, conn.transaction():
        await conn.execute(q(MARKER))
        if await (await conn.execute(q(MARK), (solution_uuid,))).fetchone() is None:
            raise ConflictError(f"solution {solution_id}: its outcome was simulated already")
        effect = await (await conn.execute(q(INTERVENTION), (strategy["intervention_id"],))).fetchone()
        if effect is None:
            raise InputError(
                "solution_id", f"intervention {strategy['intervention_id']!r} is not in the catalogue"
            )
        staff = await (await conn.execute(q(STAFF_HISTORY), params)).fetchall()
        span = await (await conn.execute(q(SPAN), params)).fetchone()
        first_tx = (await (await conn.execute(q(NEXT_TX))).fetchone() or {"next": 1})["next"]
        if not staff or span is None or span["first"] is None:
            raise InputError("solution_id", f"store {store_id} has no sales history to continue")
        rng = np.random.default_rng(seed if seed is not None else solution_uuid.int % 2**32)
        history_days = max((span["last"] - span["first"]).days, 1)
        total_sales = sum(member["sales"] for member in staff)
        count = round(total_sales / history_days * timeline)
        shares = np.array([member["sales"] for member in staff], float) / total_sales
        realised = float(effect["true_effect_points"]) * float(1 + rng.normal(0, EFFECT_NOISE))
        ramp_days = max(int(effect["weeks_to_effect"]) * 7, 1)
        offsets = np.sort(rng.uniform(0, timeline * 86400, count))
        who = rng.choice(len(staff), size=count, p=shares)
        rows = []
        attached_total = 0
        for index in range(count):
            member = staff[int(who[index])]
            day = offsets[index] / 86400
            p = min(max(member["rate"] + realised / 100 * min(1.0, day / ramp_days), 0.0), 1.0)
            attached = bool(rng.random() < p)
            attached_total += attached
            rows.append((
                first_tx + index, store_id, member["staff_id"], since + timedelta(seconds=float(offsets[index])),
                round(float(rng.uniform(250, 1300)), 2), attached,
                round(float(rng.uniform(15, 120)), 2) if attached else 0.0,
            ))  # fmt: skip
        statement = sql.SQL(
            "COPY {}.transactions (tx_id, store_id, staff_id, sold_at, device_amount, accessory_attached,"
            " accessory_amount) FROM STDIN"
        ).format(schema)
        async with conn.cursor() as cursor, cursor.copy(statement) as copy:
            for values in rows:
                await copy.write_row(values)
    return SimulatedOutcome(
        solution_id=solution_id,
        tenant_id=row["tenant_id"],
        store_id=store_id,
        intervention_id=strategy["intervention_id"],
        true_effect_points=float(effect["true_effect_points"]),
        realised_effect_points=round(realised, 3),
        transactions=count,
        attach_rate=round(attached_total / count, 4) if count else 0.0,
        start=since,
        end=since + timedelta(days=timeline),
    )
