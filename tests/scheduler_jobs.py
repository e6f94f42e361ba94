"""A job APScheduler can store by reference: records that it ran."""

from __future__ import annotations

import psycopg

CREATE = "CREATE TABLE IF NOT EXISTS job_hits (marker text NOT NULL, at timestamptz NOT NULL DEFAULT now())"


async def record(uri: str, marker: str) -> None:
    async with await psycopg.AsyncConnection.connect(uri, autocommit=True) as conn:
        await conn.execute(CREATE)
        await conn.execute("INSERT INTO job_hits (marker) VALUES (%s)", (marker,))
