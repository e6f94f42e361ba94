"""The read-only SQL tool: refused statements, and the database-side guards behind the check."""

from __future__ import annotations

import pytest

from master_agent.capabilities.tools import ReadOnlySql, ToolContext, check_select_only
from master_agent.errors import ToolInputError
from master_agent.runtime import RuntimeResources


@pytest.mark.parametrize(
    ("sql", "reason"),
    [
        ("", "empty"),
        ("DELETE FROM staff", "only a SELECT"),
        ("SELECT 1; DROP TABLE staff", "one statement"),
        ("WITH x AS (DELETE FROM staff RETURNING *) SELECT * FROM x", "DELETE is not allowed"),
        ("SELECT * FROM staff FOR UPDATE", "UPDATE is not allowed"),
        ("SELECT set_config('role', 'postgres', false)", "set_config"),
        ("SELECT pg_sleep(10)", "pg_sleep"),
    ],
)
def test_refused_statements_say_why(sql: str, reason: str) -> None:
    with pytest.raises(ToolInputError, match=reason):
        check_select_only(sql)


def test_allowed_statements_pass() -> None:
    assert check_select_only("  select 1 ; ") == "select 1"
    assert check_select_only("WITH a AS (SELECT 1) SELECT * FROM a -- 'delete'")
    assert check_select_only("SELECT 'update; delete' AS text")


def _sql(resources: RuntimeResources, **overrides: object) -> ReadOnlySql:
    return ReadOnlySql(
        ToolContext(
            pool=resources.database.pool,
            database_uri=resources.database.uri,
            tenant_id="demo-retail",
            data_schema="tenant_demo_retail",
            settings=resources.settings.with_overrides(**overrides),
        )
    )


async def test_reads_the_tenant_schema_with_a_row_cap(resources: RuntimeResources) -> None:
    result = await _sql(resources, sql_row_cap=5).query("SELECT tx_id FROM transactions ORDER BY tx_id")
    assert result.row_count == 5 and result.truncated
    assert result.columns == ["tx_id"]


async def test_reader_role_cannot_see_app_tables(resources: RuntimeResources) -> None:
    with pytest.raises(ToolInputError, match=r"permission denied|does not exist"):
        await _sql(resources).query("SELECT * FROM public.solutions")
    with pytest.raises(ToolInputError, match="permission denied"):
        await _sql(resources).query("SELECT * FROM public.tenant_readers")


async def test_writes_fail_in_the_database_even_past_the_check(resources: RuntimeResources) -> None:
    sql = _sql(resources)
    # A data-modifying function call is not caught by the keyword check; the read-only
    # transaction and the role still stop it.
    with pytest.raises(ToolInputError, match="SQL error"):
        await sql.query("SELECT nextval('public.termination_log_id_seq')")


async def test_statement_timeout(resources: RuntimeResources) -> None:
    slow = "SELECT count(*) FROM transactions a, transactions b, transactions c"
    with pytest.raises(ToolInputError, match="ms limit"):
        await _sql(resources, sql_timeout_ms=50).query(slow)
