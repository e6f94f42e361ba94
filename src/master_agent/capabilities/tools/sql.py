"""Read-only SQL on one tenant's data schema: no text can do more than one bounded read of it.

Guards, outermost first:

1. the statement check (``sql_check``): PostgreSQL's own grammar, one SELECT over the tenant's
   visible tables with allow-listed functions and casts;
2. the tenant's reader role (``readers``): reads its schema's visible columns only, no TEMP, no
   CREATE, no large objects, bounded ``work_mem`` and temporary files;
3. the execution: the extended protocol through a server-side cursor (one statement, whatever the
   text), a ``READ ONLY`` transaction that is always rolled back, ``SET LOCAL statement_timeout`` and
   ``idle_in_transaction_session_timeout``;
4. the result: each row is turned into JSON text by the server, a row larger than the byte cap is not
   sent, and rows are fetched in pieces until the row or byte cap (``truncated: true``).
"""

from __future__ import annotations

import json
from typing import Any

import psycopg
from psycopg.conninfo import make_conninfo
from psycopg.rows import tuple_row
from pydantic import BaseModel, ConfigDict, Field

from master_agent.capabilities.tools.context import ToolContext
from master_agent.capabilities.tools.readers import (
    SELECT_READER,
    load_reader_secret,
    reader_password,
    set_reader_password,
)
from master_agent.capabilities.tools.sql_check import acheck_select_only
from master_agent.errors import ToolInputError
from master_agent.storage.outages import is_outage

#: Rows fetched per round trip from the server-side cursor.
FETCH_ROWS = 100
LIMITS = """
SELECT set_config('statement_timeout', %(timeout)s, true),
       set_config('idle_in_transaction_session_timeout', %(idle)s, true)
"""
#: The checked statement, each row as JSON text unless it is larger than the byte cap, and its size.
WRAPPED = """
SELECT CASE WHEN octet_length(r.j) <= {cap} THEN r.j END, octet_length(r.j)
FROM (SELECT row_to_json(q)::text AS j FROM (
{statement}
) AS q) AS r
"""
AUTH_FAILED = "28P01"


class SqlResult(BaseModel):
    """Rows returned by the read-only SQL tool."""

    model_config = ConfigDict(extra="forbid")

    columns: list[str]
    rows: list[dict[str, Any]]
    row_count: int = Field(description="Rows returned (at most the row cap).")
    truncated: bool = Field(description="True when more rows (or bytes) existed than the caps.")


class ReadOnlySql:
    """Runs checked SELECTs as the tenant's reader role."""

    def __init__(self, context: ToolContext) -> None:
        self._context = context
        self._reader: tuple[str, str, list[str]] | None = None

    async def _reader_login(self) -> tuple[str, str, list[str]]:
        """The reader role, the tenant's schema and the tables the role may read."""
        if self._reader is None:
            async with self._context.pool.connection() as conn:
                row = await (await conn.execute(SELECT_READER, (self._context.tenant_id,))).fetchone()
            if row is None:
                raise ToolInputError(
                    f"tenant {self._context.tenant_id!r} has no business-data schema to query"
                )
            self._reader = (row["role_name"], row["data_schema"], list(row["tables"]))
        return self._reader

    async def _connect(self, role: str) -> psycopg.AsyncConnection[Any]:
        settings = self._context.settings
        password = reader_password(await load_reader_secret(settings), self._context.tenant_id)
        conninfo = make_conninfo(
            self._context.database_uri,
            user=role,
            password=password,
            options="-c default_transaction_read_only=on",
            application_name="master-agent-sql-reader",
        )
        try:
            return await psycopg.AsyncConnection.connect(conninfo, row_factory=tuple_row)
        except psycopg.OperationalError as error:
            if AUTH_FAILED not in str(error) and "password authentication failed" not in str(error):
                raise
        # The role was keyed with another secret (rotated, or another process's): key it with ours.
        async with self._context.pool.connection() as conn:
            await set_reader_password(conn, role, password)
        return await psycopg.AsyncConnection.connect(conninfo, row_factory=tuple_row)

    async def query(self, sql: str, params: dict[str, Any] | tuple[Any, ...] | None = None) -> SqlResult:
        """Run one checked SELECT; ``params`` are bound by the driver, never pasted."""
        role, schema, tables = await self._reader_login()
        statement = await acheck_select_only(
            sql, tables=tables, schema=schema, with_params=params is not None
        )
        settings = self._context.settings
        cap, max_bytes = settings.sql_row_cap, settings.sql_max_bytes
        rows: list[dict[str, Any]] = []
        columns: list[str] = []
        truncated = False
        try:
            conn = await self._connect(role)
            try:
                await conn.execute("SET TRANSACTION READ ONLY")
                await conn.execute(
                    LIMITS,
                    {
                        "timeout": f"{settings.sql_timeout_ms}ms",
                        "idle": f"{settings.sql_timeout_ms + 5000}ms",
                    },
                )
                cursor = conn.cursor("tool_query", row_factory=tuple_row)
                await cursor.execute(WRAPPED.format(cap=max_bytes, statement=statement.text), params)
                size = 0
                while not truncated:
                    batch = await cursor.fetchmany(FETCH_ROWS)
                    if not batch:
                        break
                    for text, length in batch:
                        size += length or 0
                        if text is None or size > max_bytes or len(rows) == cap:
                            truncated = True
                            break
                        rows.append(json.loads(text))
                await cursor.close()
                if rows:
                    columns = list(rows[0])
                else:
                    # Declared, never fetched: the statement's columns without running it.
                    described = conn.cursor("tool_columns")
                    await described.execute(statement.text, params)
                    columns = [column.name for column in described.description or []]
            finally:
                await conn.close()  # the transaction ends unfinished: rolled back
        except psycopg.errors.QueryCanceled:
            raise ToolInputError(
                f"SQL refused: the query ran past the {settings.sql_timeout_ms} ms limit"
            ) from None
        except psycopg.Error as error:
            if is_outage(error):
                raise  # the database is unreachable: not something the model can fix

            raise ToolInputError(f"SQL error: {str(error).strip().splitlines()[0]}") from None
        return SqlResult(columns=columns, rows=rows, row_count=len(rows), truncated=truncated)
