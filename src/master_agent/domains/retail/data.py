"""The retail demo tenant: its schema and generated data (the engine gives it a reader role).

Everything is generated from a fixed seed; Store 5 is drawn to resemble the seed walkthrough (an attach
rate near 3 %, staff between about 2 % and 8 %, tenure negatively correlated with attach rate, about
450 transactions a month). Figures the agents report are computed from these rows, never stored.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
from psycopg import AsyncConnection, sql
from psycopg_pool import AsyncConnectionPool

from master_agent.storage.tenants import tenant_to_install

DEMO_TENANT = "demo-retail"
#: A second retailer with one store: the demo's "another client with a similar problem".
SECOND_DEMO_TENANT = "demo-retail-2"
DEMO_TIER = "enterprise"
SEED = 20251011


@dataclass(frozen=True)
class DemoProfile:
    name: str
    seed: int
    store_ids: tuple[int, ...]
    driver: str = "tenure_months"
    """The staff attribute attach rate follows at the generated stores (longer tenure, lower rate; or
    more ``training_hours``, higher rate, tenure unrelated)."""


DEMO_PROFILES = {
    DEMO_TENANT: DemoProfile("Demo electronics retailer", SEED, tuple(range(1, 9))),
    SECOND_DEMO_TENANT: DemoProfile("Second electronics retailer (one store)", SEED + 7, (1,)),
}
#: History window: the 180 days up to this instant (fixed so every install is identical).
HISTORY_END = datetime(2026, 10, 1, tzinfo=UTC)
HISTORY_DAYS = 180
#: Generation profile of the walkthrough store: (tenure months, attach rate, share of store sales).
STORE5_STAFF = [
    (38, 0.020, 14), (33, 0.026, 14), (30, 0.036, 13), (27, 0.030, 13), (25, 0.022, 12),
    (22, 0.024, 11), (16, 0.046, 8), (8, 0.030, 6), (5, 0.080, 5), (2, 0.058, 4),
]  # fmt: skip
STORE5_MONTHLY = 450

INTERVENTIONS: list[dict[str, Any]] = [
    {
        "intervention_id": "peer_coaching", "name": "Peer coaching by top performers", "kind": "coaching",
        "cost": 2000, "lift_low_points": 1.5, "lift_high_points": 2.5, "weeks_to_effect": 2,
        "addresses": ["tenure_months"], "evidence_strength": 0.65, "true_effect_points": 2.1,
        "evidence": "Coaching pairs lifted accessory attach in 6 of 9 pilot stores.",
    },
    {
        "intervention_id": "gamified_leaderboard", "name": "Gamified attach-rate leaderboard",
        "kind": "gamification", "cost": 3500, "lift_low_points": 1.0, "lift_high_points": 2.0,
        "weeks_to_effect": 3, "addresses": ["tenure_months"], "evidence_strength": 0.6,
        "true_effect_points": 1.4, "evidence": "Leaderboards re-engaged long-tenured staff in 4 of 7 pilots.",
    },
    {
        "intervention_id": "pos_upsell_prompts", "name": "POS upsell prompts", "kind": "automation",
        "cost": 7000, "lift_low_points": 2.5, "lift_high_points": 3.5, "weeks_to_effect": 4,
        "addresses": ["tenure_months", "training_hours"], "evidence_strength": 0.75,
        "true_effect_points": 2.9, "evidence": "Real-time prompts raised attach in 8 of 10 rollouts.",
    },
    {
        "intervention_id": "hybrid_coaching_pos", "name": "Hybrid: peer coaching + POS upsell prompts",
        "kind": "hybrid", "cost": 9000, "lift_low_points": 3.5, "lift_high_points": 4.5,
        "weeks_to_effect": 4, "addresses": ["tenure_months", "training_hours"], "evidence_strength": 0.82,
        "true_effect_points": 4.2, "evidence": "Coaching plus prompts beat either alone in 5 of 6 stores.",
    },
    {
        "intervention_id": "product_training", "name": "Accessory product-training refresh",
        "kind": "training", "cost": 1500, "lift_low_points": 0.5, "lift_high_points": 1.5,
        "weeks_to_effect": 2, "addresses": ["training_hours"], "evidence_strength": 0.6,
        "true_effect_points": 0.9, "evidence": "Refresher courses helped mainly untrained staff.",
    },
    {
        "intervention_id": "bundle_pricing", "name": "Device + accessory bundle pricing", "kind": "pricing",
        "cost": 5000, "lift_low_points": 1.0, "lift_high_points": 2.0, "weeks_to_effect": 1,
        "addresses": [], "evidence_strength": 0.55, "true_effect_points": 1.1,
        "evidence": "Bundles lifted attach but cut accessory margin by a third.",
    },
]  # fmt: skip

DDL = """
CREATE SCHEMA {schema};
CREATE TABLE {schema}.stores (
    store_id integer PRIMARY KEY, name text NOT NULL, region text NOT NULL, opened_on date NOT NULL
);
CREATE TABLE {schema}.staff (
    staff_id integer PRIMARY KEY, store_id integer NOT NULL REFERENCES {schema}.stores,
    name text NOT NULL, tenure_months integer NOT NULL, training_completed boolean NOT NULL,
    training_hours integer NOT NULL
);
CREATE TABLE {schema}.transactions (
    tx_id bigint PRIMARY KEY, store_id integer NOT NULL, staff_id integer NOT NULL,
    sold_at timestamptz NOT NULL, device_amount numeric(10, 2) NOT NULL,
    accessory_attached boolean NOT NULL, accessory_amount numeric(10, 2) NOT NULL,
    refunded boolean NOT NULL DEFAULT false
);
CREATE INDEX ON {schema}.transactions (store_id, sold_at);
CREATE INDEX ON {schema}.transactions (staff_id);
CREATE TABLE {schema}.interventions (
    intervention_id text PRIMARY KEY, name text NOT NULL, kind text NOT NULL, cost numeric NOT NULL,
    lift_low_points double precision NOT NULL, lift_high_points double precision NOT NULL,
    weeks_to_effect integer NOT NULL, addresses text[] NOT NULL,
    evidence_strength double precision NOT NULL, evidence text NOT NULL,
    -- Hidden from agents (not granted to the reader role): only simulates the world after an intervention.
    true_effect_points double precision NOT NULL
);
"""

#: Ground truth the agents must not read: only the simulated world uses it.
HIDDEN_COLUMNS: dict[str, tuple[str, ...]] = {"interventions": ("true_effect_points",)}

INSERT_TENANT = """
INSERT INTO tenants (tenant_id, name, tier, data_schema, domain)
VALUES (%s, %s, %s, %s, 'retail')
"""
INSTALL_LOCK_KEY = 0x7265_7461_696C  # "retail"


def schema_name(tenant_id: str) -> str:
    return "tenant_" + tenant_id.replace("-", "_")


def generate(
    rng_seed: int = SEED,
    store_ids: tuple[int, ...] = DEMO_PROFILES[DEMO_TENANT].store_ids,
    driver: str = "tenure_months",
) -> dict[str, list[tuple[Any, ...]]]:
    """All rows of a demo tenant, deterministic for a seed."""
    rng = np.random.default_rng(rng_seed)
    stores, staff, transactions = [], [], []
    regions = ["north", "south", "east", "west"]
    staff_id = 0
    tx_id = 0
    months = HISTORY_DAYS / 30
    for store_id in store_ids:
        preset_hours: list[int] | None = None
        stores.append(
            (
                store_id,
                f"Store {store_id}",
                regions[store_id % 4],
                datetime(2019, store_id, 1).date(),
            )
        )
        if store_id == 5:
            profile = STORE5_STAFF
            monthly = STORE5_MONTHLY
        elif driver == "training_hours":
            count = int(rng.integers(8, 14))
            tenures = rng.integers(1, 48, count)
            hours = np.where(rng.random(count) < 0.7, rng.integers(4, 20, count), 0)
            rates = np.clip(0.025 + 0.0028 * hours + rng.normal(0, 0.008, count), 0.01, 0.12)
            shares = rng.integers(6, 14, count)
            profile = list(zip(tenures.tolist(), rates.tolist(), shares.tolist(), strict=True))
            preset_hours = hours.tolist()
            monthly = int(rng.integers(300, 800))
        else:
            count = int(rng.integers(8, 14))
            tenures = rng.integers(1, 48, count)
            rates = np.clip(0.075 - 0.0006 * tenures + rng.normal(0, 0.012, count), 0.02, 0.12)
            shares = rng.integers(6, 14, count)
            profile = list(zip(tenures.tolist(), rates.tolist(), shares.tolist(), strict=True))
            monthly = int(rng.integers(300, 800))
        total = round(monthly * months)
        weights = np.array([share for _, _, share in profile], float)
        counts = np.round(weights / weights.sum() * total).astype(int)
        for index, ((tenure, rate, _), n) in enumerate(zip(profile, counts, strict=True)):
            staff_id += 1
            if preset_hours is None:
                trained = bool(rng.random() < 0.7)
                training_hours = int(rng.integers(4, 20)) if trained else 0
            else:
                training_hours = int(preset_hours[index])
                trained = training_hours > 0
            staff.append((staff_id, store_id, f"Staff {staff_id}", int(tenure), trained, training_hours))
            attached = np.zeros(n, bool)
            attached[rng.choice(n, size=round(rate * n), replace=False)] = True
            offsets = np.sort(rng.uniform(0, HISTORY_DAYS * 86400, n))
            device = rng.uniform(250, 1300, n).round(2)
            accessory = rng.uniform(15, 120, n).round(2)
            for i in range(n):
                tx_id += 1
                transactions.append((
                    tx_id, store_id, staff_id,
                    HISTORY_END - timedelta(days=HISTORY_DAYS) + timedelta(seconds=float(offsets[i])),
                    float(device[i]), bool(attached[i]), float(accessory[i]) if attached[i] else 0.0,
                ))  # fmt: skip
    # Refunds are drawn from a stream of their own, so the sales above stay what they were for a seed.
    refunds = np.random.default_rng(rng_seed + 1)
    store_refund_rate = {store_id: float(refunds.uniform(0.01, 0.06)) for store_id in store_ids}
    sales = [(*tx, bool(refunds.random() < store_refund_rate[tx[1]])) for tx in transactions]
    interventions = [
        (
            item["intervention_id"], item["name"], item["kind"], item["cost"], item["lift_low_points"],
            item["lift_high_points"], item["weeks_to_effect"], item["addresses"],
            item["evidence_strength"], item["evidence"], item["true_effect_points"],
        )
        for item in INTERVENTIONS
    ]  # fmt: skip
    return {
        "stores": stores,
        "staff": staff,
        "transactions": sales,
        "interventions": interventions,
    }


async def _copy(conn: AsyncConnection[Any], schema: str, table: str, rows: list[tuple[Any, ...]]) -> None:
    statement = sql.SQL("COPY {}.{} FROM STDIN").format(sql.Identifier(schema), sql.Identifier(table))
    async with conn.cursor() as cursor, cursor.copy(statement) as copy:
        for row in rows:
            await copy.write_row(row)


async def install(
    pool: AsyncConnectionPool[Any], tenant_id: str = DEMO_TENANT, profile: DemoProfile | None = None
) -> None:
    """Create a demo tenant (by default its ``DEMO_PROFILES`` entry; another id gets the first
    profile's data), its schema and data, once (safe to call concurrently)."""
    profile = profile or DEMO_PROFILES.get(tenant_id, DEMO_PROFILES[DEMO_TENANT])
    schema = schema_name(tenant_id)
    async with tenant_to_install(pool, tenant_id, INSTALL_LOCK_KEY) as conn:
        if conn is None:
            return
        rows = generate(profile.seed, profile.store_ids, profile.driver)
        async with conn.transaction():
            await conn.execute(INSERT_TENANT, (tenant_id, profile.name, DEMO_TIER, schema))
            await conn.execute(sql.SQL(DDL.replace("{schema}", "{s}")).format(s=sql.Identifier(schema)))
            for table in ("stores", "staff", "transactions", "interventions"):
                await _copy(conn, schema, table, rows[table])
            await conn.execute(sql.SQL("ANALYZE {}.transactions").format(sql.Identifier(schema)))
