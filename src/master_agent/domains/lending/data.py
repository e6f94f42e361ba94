"""The demo lending tenant: generated customer records (KYC details, a credit score, a pre-approved
limit, a monthly salary) in the tenant's schema. The first customers are the simulator's personas."""

from __future__ import annotations

import random
from datetime import date, timedelta
from typing import Any

from psycopg import sql
from psycopg_pool import AsyncConnectionPool

from master_agent.domains.lending.records import CustomerRecord
from master_agent.storage.tenants import tenant_to_install

DEMO_TENANT = "demo-lending"
SEED = 1001
INSTALL_LOCK_KEY = 0x6C65_6E64  # "lend"

DDL = """
CREATE SCHEMA IF NOT EXISTS {schema};
CREATE TABLE IF NOT EXISTS {schema}.customers (
    customer_id text PRIMARY KEY,
    name text NOT NULL,
    phone text NOT NULL UNIQUE,
    pan text NOT NULL,
    dob date NOT NULL,
    city text NOT NULL,
    age integer NOT NULL,
    credit_score integer NOT NULL,
    preapproved_limit numeric NOT NULL,
    monthly_salary numeric NOT NULL
);
"""
INSERT_TENANT = """
INSERT INTO tenants (tenant_id, name, tier, data_schema, domain)
VALUES (%s, %s, 'pro', %s, 'lending')
"""

#: Customers the simulator's personas are (phone numbers 90000000NN).
PERSONAS: tuple[CustomerRecord, ...] = (
    CustomerRecord(
        customer_id="C001",
        name="Asha Verma",
        phone="9000000001",
        pan="ABCPV1234K",
        dob=date(1988, 4, 12),
        city="Mumbai",
        age=38,
        credit_score=782,
        preapproved_limit=500_000,
        monthly_salary=95_000,
    ),
    CustomerRecord(
        customer_id="C002",
        name="Rohan Mehta",
        phone="9000000002",
        pan="BCDPM2345L",
        dob=date(1991, 9, 3),
        city="Pune",
        age=35,
        credit_score=741,
        preapproved_limit=300_000,
        monthly_salary=70_000,
    ),
    CustomerRecord(
        customer_id="C003",
        name="Priya Nair",
        phone="9000000003",
        pan="CDEPN3456M",
        dob=date(1985, 1, 27),
        city="Kochi",
        age=41,
        credit_score=655,
        preapproved_limit=400_000,
        monthly_salary=80_000,
    ),
    CustomerRecord(
        customer_id="C004",
        name="Vikram Singh",
        phone="9000000004",
        pan="DEFPS4567N",
        dob=date(1979, 6, 18),
        city="Delhi",
        age=47,
        credit_score=765,
        preapproved_limit=200_000,
        monthly_salary=60_000,
    ),
    CustomerRecord(
        customer_id="C005",
        name="Neha Gupta",
        phone="9000000005",
        pan="EFGPG5678P",
        dob=date(1994, 11, 8),
        city="Jaipur",
        age=32,
        credit_score=718,
        preapproved_limit=250_000,
        monthly_salary=22_000,
    ),
    CustomerRecord(
        customer_id="C006",
        name="Arjun Rao",
        phone="9000000006",
        pan="FGHPR6789Q",
        dob=date(1990, 2, 14),
        city="Bengaluru",
        age=36,
        credit_score=810,
        preapproved_limit=800_000,
        monthly_salary=150_000,
    ),
)

FIRST = ("Aditi", "Kabir", "Meera", "Ishaan", "Sana", "Dev", "Tara", "Nikhil", "Riya", "Sameer")
LAST = ("Iyer", "Kapoor", "Das", "Joshi", "Khan", "Bose", "Pillai", "Chopra", "Reddy", "Malhotra")
CITIES = ("Mumbai", "Delhi", "Chennai", "Hyderabad", "Kolkata", "Ahmedabad", "Lucknow", "Indore")


def schema_name(tenant_id: str) -> str:
    return "tenant_" + tenant_id.replace("-", "_")


def generate(count: int = 40, seed: int = SEED) -> list[CustomerRecord]:
    """The personas, then ``count`` more customers, deterministic for a seed."""
    rng = random.Random(seed)
    customers = list(PERSONAS)
    for index in range(count):
        first, last = rng.choice(FIRST), rng.choice(LAST)
        born = date(1965, 1, 1) + timedelta(days=rng.randrange(0, 365 * 38))
        salary = float(rng.randrange(25, 250) * 1000)
        customers.append(
            CustomerRecord(
                customer_id=f"C{index + 100:03d}",
                name=f"{first} {last}",
                phone=f"98{rng.randrange(10**7, 10**8)}",
                pan=f"{''.join(rng.choice('ABCDEFGHJKLMNPQRSTUVWXYZ') for _ in range(3))}P"
                f"{last[0]}{rng.randrange(1000, 9999)}{rng.choice('ABCDEFGHJKLMNPQRSTUVWXYZ')}",
                dob=born,
                city=rng.choice(CITIES),
                age=(date(2026, 1, 1) - born).days // 365,
                credit_score=rng.randrange(600, 850),
                preapproved_limit=float(round(salary * rng.uniform(2, 6), -4)),
                monthly_salary=salary,
            )
        )
    return customers


async def install(pool: AsyncConnectionPool[Any], tenant_id: str = DEMO_TENANT) -> None:
    """Create a lending tenant with its customer records, once (safe to call concurrently)."""
    schema = schema_name(tenant_id)
    async with tenant_to_install(pool, tenant_id, INSTALL_LOCK_KEY) as conn:
        if conn is None:
            return
        async with conn.transaction():
            await conn.execute(INSERT_TENANT, (tenant_id, f"Personal loans ({tenant_id})", schema))
            await conn.execute(sql.SQL(DDL.replace("{schema}", "{s}")).format(s=sql.Identifier(schema)))
            statement = sql.SQL("COPY {}.customers FROM STDIN").format(sql.Identifier(schema))
            async with conn.cursor() as cur, cur.copy(statement) as copy:
                for customer in generate():
                    await copy.write_row(tuple(customer.model_dump().values()))


async def customer_by_phone(pool: AsyncConnectionPool[Any], schema: str, phone: str) -> CustomerRecord | None:
    return await _one(pool, schema, "phone", phone)


async def customer_by_id(
    pool: AsyncConnectionPool[Any], schema: str, customer_id: str
) -> CustomerRecord | None:
    return await _one(pool, schema, "customer_id", customer_id)


async def _one(pool: AsyncConnectionPool[Any], schema: str, column: str, value: str) -> CustomerRecord | None:
    query = sql.SQL("SELECT * FROM {}.customers WHERE {} = %s").format(
        sql.Identifier(schema), sql.Identifier(column)
    )
    async with pool.connection() as conn:
        row = await (await conn.execute(query, (value,))).fetchone()
    return CustomerRecord.model_validate(row) if row else None
