"""Read-only SQL on one tenant's data schema.

Guards, outermost first: one SELECT/WITH statement only (checked here, for a clear message); a
dedicated login role that can only read the tenant's schema (so even a query that escapes the
check cannot write or read other tenants); a read-only transaction; a statement timeout; a row cap.
"""

from __future__ import annotations

import re
from datetime import date, datetime
from decimal import Decimal
from typing import Any

import psycopg
from psycopg.conninfo import make_conninfo
from psycopg.rows import dict_row
from pydantic import BaseModel, ConfigDict, Field

from master_agent.capabilities.tools.context import ToolContext
from master_agent.errors import ToolInputError

SELECT_READER = "SELECT role_name, password FROM tenant_readers WHERE tenant_id = %s"

_COMMENTS = re.compile(r"--[^\n]*|/\*.*?\*/", re.S)
_STRINGS = re.compile(r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"")
_WRITE_WORDS = re.compile(
    r"\b(insert|update|delete|merge|create|alter|drop|truncate|grant|revoke|copy|call|do|"
    r"vacuum|analyze|refresh|lock|set|reset|listen|notify|prepare|execute)\b",
    re.I,
)
_ESCAPE_FUNCTIONS = re.compile(r"\b(set_config|pg_sleep\w*|dblink\w*|lo_\w+|pg_read\w*)\s*\(", re.I)


class SqlResult(BaseModel):
    """Rows returned by the read-only SQL tool."""

    model_config = ConfigDict(extra="forbid")

    columns: list[str]
    rows: list[dict[str, Any]]
    row_count: int = Field(description="Rows returned (at most the row cap).")
    truncated: bool = Field(description="True when more rows existed than the cap.")


def check_select_only(sql: str) -> str:
    """Return the statement without a trailing semicolon, or raise ToolInputError saying why not."""
    if not sql or not sql.strip():
        raise ToolInputError("SQL refused: the query is empty")
    code = _STRINGS.sub("''", _COMMENTS.sub(" ", sql)).strip()
    code = code.rstrip().removesuffix(";").rstrip()
    if ";" in code:
        raise ToolInputError("SQL refused: only one statement is allowed (found ';' inside)")
    first = re.match(r"\(*\s*([A-Za-z]+)", code)
    if first is None or first.group(1).lower() not in ("select", "with"):
        raise ToolInputError(
            "SQL refused: only a SELECT or WITH ... SELECT statement is allowed"
            f" (statement starts with {code.split()[0]!r})"
            if code
            else "SQL refused: the query is empty"
        )
    write = _WRITE_WORDS.search(code)
    if write:
        raise ToolInputError(f"SQL refused: {write.group(1).upper()} is not allowed in a read-only query")
    escape = _ESCAPE_FUNCTIONS.search(code)
    if escape:
        raise ToolInputError(f"SQL refused: function {escape.group(1)}() is not allowed")
    return sql.strip().rstrip(";").rstrip()


def _jsonable(value: Any) -> Any:
    if isinstance(value, Decimal):
        return float(value)
    if isinstance(value, datetime | date):
        return value.isoformat()
    return value


class ReadOnlySql:
    """Runs guarded SELECTs as the tenant's reader role."""

    def __init__(self, context: ToolContext) -> None:
        self._context = context
        self._conninfo: str | None = None

    async def _reader_conninfo(self) -> str:
        if self._conninfo is None:
            async with self._context.pool.connection() as conn:
                cursor = await conn.execute(SELECT_READER, (self._context.tenant_id,))
                row = await cursor.fetchone()
            if row is None:
                raise ToolInputError(
                    f"tenant {self._context.tenant_id!r} has no business-data schema to query"
                )
            settings = self._context.settings
            self._conninfo = make_conninfo(
                self._context.database_uri,
                user=row["role_name"],
                password=row["password"],
                options=(
                    f"-c statement_timeout={settings.sql_timeout_ms} -c default_transaction_read_only=on"
                ),
                application_name="master-agent-sql-reader",
            )
        return self._conninfo

    async def query(self, sql: str, params: dict[str, Any] | tuple[Any, ...] | None = None) -> SqlResult:
        """Run one checked SELECT; ``params`` are bound by the driver, never pasted."""
        statement = check_select_only(sql)
        cap = self._context.settings.sql_row_cap
        conninfo = await self._reader_conninfo()
        try:
            async with (
                await psycopg.AsyncConnection.connect(conninfo, row_factory=dict_row) as conn,
                conn.transaction(),
            ):
                await conn.execute("SET TRANSACTION READ ONLY")
                cursor = await conn.execute(statement, params)
                rows = await cursor.fetchmany(cap + 1)
                columns = [c.name for c in cursor.description or []]
                raise _Rollback(rows, columns)
        except _Rollback as done:
            rows, columns = done.rows, done.columns
        except psycopg.errors.QueryCanceled:
            raise ToolInputError(
                f"SQL refused: the query ran past the {self._context.settings.sql_timeout_ms} ms limit"
            ) from None
        except psycopg.Error as error:
            raise ToolInputError(f"SQL error: {str(error).strip().splitlines()[0]}") from None
        truncated = len(rows) > cap
        rows = rows[:cap]
        return SqlResult(
            columns=columns,
            rows=[{k: _jsonable(v) for k, v in row.items()} for row in rows],
            row_count=len(rows),
            truncated=truncated,
        )


class _Rollback(Exception):  # control flow: leave the transaction without committing
    def __init__(self, rows: list[dict[str, Any]], columns: list[str]) -> None:
        self.rows = rows
        self.columns = columns
