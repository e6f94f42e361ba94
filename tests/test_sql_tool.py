"""The read-only SQL tool: a table of hostile inputs run as the tenant against the real database, and
the database-side guards a query would meet if it ever got past the statement check."""

from __future__ import annotations

import asyncio
from typing import Any

import psycopg
import pytest
from psycopg import sql as pgsql
from psycopg.rows import dict_row

from master_agent.capabilities.tools import ReadOnlySql, ToolContext, check_select_only, reader_password
from master_agent.capabilities.tools.readers import reader_secret
from master_agent.errors import ToolInputError
from master_agent.runtime import RuntimeResources

TABLES = ("stores", "staff", "transactions", "interventions")
SCHEMA = "tenant_demo_retail"
SLOW = "SELECT count(*) FROM transactions a, transactions b, transactions c"

#: (hostile text, what must happen): ``refused`` by the check, or ``harmless`` (it runs, or fails in the
#: database, and changes nothing).
HOSTILE: list[tuple[str, str]] = [
    # More than one statement, hidden from a text scanner by literals and comments.
    ("SELECT '--'; COMMIT; SET statement_timeout=0; SELECT pg_sleep(600)", "refused"),
    ("SELECT 1; SELECT 2", "refused"),
    ("SELECT $$'$$; DROP TABLE staff; SELECT $$'$$", "refused"),
    ("SELECT E'\\''; DELETE FROM staff; --'", "refused"),
    ("SELECT 1 /* ; */ ; DELETE FROM staff", "refused"),
    ("SELECT 1 -- '\n; ALTER ROLE CURRENT_USER PASSWORD 'x'", "refused"),
    ("SELECT '/*'; SELECT pg_sleep(10); -- */'", "refused"),
    ("SELECT 1; COMMIT; ALTER ROLE CURRENT_USER SET statement_timeout = 0", "refused"),
    # Not a SELECT at all.
    ("ALTER ROLE CURRENT_USER PASSWORD 'owned'", "refused"),
    ("ALTER ROLE CURRENT_USER SET statement_timeout = 0", "refused"),
    ("SET statement_timeout = 0", "refused"),
    ("RESET ALL", "refused"),
    ("COMMIT", "refused"),
    ("BEGIN", "refused"),
    ("CREATE TEMP TABLE t (x int)", "refused"),
    ("CREATE TABLE stolen AS SELECT * FROM staff", "refused"),
    ("GRANT SELECT ON staff TO PUBLIC", "refused"),
    ("COPY staff TO STDOUT", "refused"),
    ("COPY (SELECT 1) TO PROGRAM 'id'", "refused"),
    ("COPY staff FROM PROGRAM 'id'", "refused"),
    ("DO $$BEGIN PERFORM pg_sleep(10); END$$", "refused"),
    ("PREPARE p AS SELECT 1", "refused"),
    ("LISTEN x", "refused"),
    ("NOTIFY x", "refused"),
    ("LOCK staff", "refused"),
    ("VACUUM", "refused"),
    ("EXPLAIN ANALYZE SELECT 1", "refused"),
    ("DECLARE c CURSOR WITH HOLD FOR SELECT 1", "refused"),
    ("DISCARD ALL", "refused"),
    ("LOAD 'plpgsql'", "refused"),
    ("TRUNCATE staff", "refused"),
    ("DELETE FROM staff", "refused"),
    ("UPDATE staff SET tenure_months = 0", "refused"),
    ("INSERT INTO stores VALUES (99, 'x', 'x', now())", "refused"),
    ("SELECT 1 INTO TEMP t", "refused"),
    ("SELECT * INTO stolen FROM staff", "refused"),
    ("WITH x AS (DELETE FROM staff RETURNING *) SELECT * FROM x", "refused"),
    ("WITH x AS (INSERT INTO stores VALUES (99, 'x', 'x', now()) RETURNING *) SELECT 1", "refused"),
    ("SELECT * FROM staff FOR UPDATE", "refused"),
    ("SELECT * FROM staff FOR KEY SHARE", "refused"),
    # Functions off the allow-list, however they are spelled.
    ("SELECT pg_sleep(600)", "refused"),
    ('SELECT "pg_sleep"(600)', "refused"),
    ('SELECT pg_catalog."pg_sleep"(600)', "refused"),
    ('SELECT U&"\\0070g_sleep"(600)', "refused"),
    ("SELECT pg_sleep_for('1 minute')", "refused"),
    ("SELECT set_config('statement_timeout', '0', false)", "refused"),
    ("SELECT current_setting('data_directory')", "refused"),
    ("SELECT pg_read_file('/etc/passwd')", "refused"),
    ("SELECT pg_read_binary_file('/etc/passwd')", "refused"),
    ("SELECT pg_ls_dir('.')", "refused"),
    ("SELECT lo_import('/etc/passwd')", "refused"),
    ("SELECT lo_create(0)", "refused"),
    ("SELECT lo_from_bytea(0, 'x'::bytea)", "refused"),
    ("SELECT * FROM dblink('dbname=postgres', 'SELECT 1') AS t(x int)", "refused"),
    ("SELECT dblink_exec('dbname=postgres', 'DROP TABLE x')", "refused"),
    ("SELECT pg_advisory_lock(1)", "refused"),
    ("SELECT pg_try_advisory_lock(1)", "refused"),
    ("SELECT pg_terminate_backend(pid) FROM pg_stat_activity", "refused"),
    ("SELECT pg_cancel_backend(1)", "refused"),
    ("SELECT nextval('public.termination_log_id_seq')", "refused"),
    ("SELECT txid_current()", "refused"),
    ("SELECT pg_notify('master_agent_runs', '')", "refused"),
    ("SELECT pg_reload_conf()", "refused"),
    ("SELECT query_to_xml('SELECT 1', true, true, '')", "refused"),
    ("SELECT repeat('x', 100000000)", "refused"),
    ("SELECT lpad('x', 100000000)", "refused"),
    ("SELECT count(*) FROM generate_series(1, 1000000000)", "refused"),
    ("SELECT version()", "refused"),
    ("SELECT has_table_privilege('public.api_keys', 'SELECT')", "refused"),
    ("SELECT public.anything()", "refused"),
    # The catalogue, the app's tables and other tenants' schemas.
    ("SELECT * FROM pg_class", "refused"),
    ("SELECT relname, reltuples FROM pg_catalog.pg_class", "refused"),
    ("SELECT * FROM pg_stat_user_tables", "refused"),
    ("SELECT * FROM information_schema.tables", "refused"),
    ("SELECT rolname FROM pg_roles", "refused"),
    ("SELECT * FROM pg_authid", "refused"),
    ("SELECT * FROM public.api_keys", "refused"),
    ("SELECT * FROM tenant_readers", "refused"),
    ("SELECT * FROM tenant_demo_retail_2.stores", "refused"),
    ("SELECT * FROM otherdb.tenant_demo_retail.stores", "refused"),
    ("SELECT * FROM pg_class, (WITH pg_class AS (SELECT 1) SELECT * FROM pg_class) AS x", "refused"),
    ("WITH a AS (SELECT * FROM pg_roles), pg_roles AS (SELECT 1) SELECT * FROM a", "refused"),
    ("SELECT (SELECT count(*) FROM pg_database)", "refused"),
    # Casts and session values that reach the catalogue or the session.
    ("SELECT 'public.api_keys'::regclass", "refused"),
    ("SELECT 'pg_sleep'::regproc", "refused"),
    ("SELECT '<a/>'::xml", "refused"),
    ("SELECT current_user", "refused"),
    ("SELECT session_user", "refused"),
    ("SELECT current_schema", "refused"),
    ("SELECT xmlelement(name a)", "refused"),
    ("SELECT $1", "refused"),
    # Unicode and byte tricks.
    ("SELECT 1\uff1b DELETE FROM staff", "refused"),
    ("S\u0415LECT 1", "refused"),
    ("SELECT 1\x00; DELETE FROM staff", "refused"),
    ("SELECT '\ud800'", "refused"),
    ("", "refused"),
    ("   -- only a comment", "refused"),
    # Harmless: ordinary reads, tricky but confined.
    ("WITH pg_class AS (SELECT 1 AS x) SELECT * FROM pg_class", "harmless"),
    ("SELECT * FROM staff WHERE name = 'x'' OR 1=1 --'", "harmless"),
    ("SELECT 'update; delete' AS text", "harmless"),
    ("select count(*) from transactions ; -- trailing comment", "harmless"),
    ("TABLE stores", "harmless"),
    ("VALUES (1, 'a'), (2, 'b')", "harmless"),
    ("SELECT true_effect_points FROM interventions", "harmless"),
    ("SELECT * FROM interventions", "harmless"),
    ("SELECT md5(a.tx_id::text) FROM transactions a", "harmless"),
    ("SELECT string_agg(md5(tx_id::text), '') FROM transactions", "harmless"),
    ("SELECT '\u00e9t\u00e9' AS season, length('\u00e9t\u00e9')", "harmless"),
]


def test_the_hostile_table_covers_every_form_the_issue_names() -> None:
    assert len(HOSTILE) >= 60
    text = " ".join(sql for sql, _ in HOSTILE)
    for form in (
        "pg_read_file",
        "PROGRAM",
        "dblink",
        "set_config",
        "pg_advisory_lock",
        "pg_terminate_backend",
    ):
        assert form in text
    assert "nextval" in text and "--" in text and "/*" in text and "\\u" not in text


@pytest.mark.parametrize(("sql", "verdict"), [case for case in HOSTILE if case[1] == "refused"])
def test_the_check_refuses_hostile_text_and_says_why(sql: str, verdict: str) -> None:
    with pytest.raises(ToolInputError, match="SQL refused"):
        check_select_only(sql, tables=TABLES, schema=SCHEMA)


def test_the_check_keeps_what_it_accepted_and_drops_trailing_noise() -> None:
    assert check_select_only("  select 1 ; -- bye", tables=TABLES).text == "  select 1"
    assert check_select_only("SELECT 'a;b' /* c */ ;", tables=TABLES).text == "SELECT 'a;b'"
    accepted = "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 3) SELECT * FROM n"
    assert check_select_only(accepted, tables=()).text == accepted
    named = "SELECT * FROM transactions WHERE store_id = %(store_id)s AND x LIKE '%%a'"
    assert check_select_only(named, tables=TABLES, with_params=True).text == named
    assert check_select_only("SELECT * FROM tenant_demo_retail.staff", tables=TABLES, schema=SCHEMA)


def test_a_refusal_names_what_to_use_instead() -> None:
    with pytest.raises(ToolInputError, match="use interventions, staff, stores, transactions"):
        check_select_only("SELECT * FROM pg_class", tables=TABLES, schema=SCHEMA)
    with pytest.raises(ToolInputError, match=r"function pg_sleep\(\) is not allowed"):
        check_select_only('SELECT "pg_sleep"(1)', tables=TABLES)


def _sql(resources: RuntimeResources, **overrides: object) -> ReadOnlySql:
    return ReadOnlySql(
        ToolContext(
            pool=resources.database.pool,
            database_uri=resources.database.uri,
            tenant_id="demo-retail",
            data_schema=SCHEMA,
            settings=resources.settings.with_overrides(**overrides),
        )
    )


async def _reader_role(resources: RuntimeResources) -> str:
    async with resources.database.pool.connection() as conn:
        row = await (
            await conn.execute("SELECT role_name FROM tenant_readers WHERE tenant_id = 'demo-retail'")
        ).fetchone()
    assert row is not None
    return str(row["role_name"])


async def _server_state(resources: RuntimeResources, role: str) -> dict[str, Any]:
    """What a hostile query could have changed: the role, its settings, the catalogue, locks, sessions."""
    async with resources.database.pool.connection() as conn:
        row = await (
            await conn.execute(
                """
                SELECT (SELECT rolpassword FROM pg_authid WHERE rolname = %(role)s) AS password,
                       (SELECT row(rolsuper, rolinherit, rolcreaterole, rolcreatedb, rolcanlogin, rolconnlimit)::text
                        FROM pg_roles WHERE rolname = %(role)s) AS attributes,
                       (SELECT setconfig FROM pg_db_role_setting WHERE setrole = %(role)s::regrole) AS settings,
                       (SELECT count(*) FROM pg_class WHERE relpersistence = 't') AS temp_tables,
                       (SELECT count(*) FROM pg_largeobject_metadata) AS large_objects,
                       (SELECT array_agg(relname::text || coalesce(relacl::text, '') ORDER BY relname)
                        FROM pg_class WHERE relnamespace = 'tenant_demo_retail'::regnamespace) AS tables,
                       (SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'
                          AND pid IN (SELECT pid FROM pg_stat_activity WHERE usename = %(role)s)) AS locks,
                       (SELECT count(*) FROM pg_prepared_xacts) AS prepared
                """,
                {"role": role},
            )
        ).fetchone()
    assert row is not None
    return dict(row)


async def _reader_sessions(resources: RuntimeResources, role: str) -> int:
    """The role's sessions once those its closed connections leave have ended: a server process ends just
    after its client closes (later on a loaded machine); one still there after 30 s was left open."""
    for _ in range(300):
        async with resources.database.pool.connection() as conn:
            row = await (
                await conn.execute("SELECT count(*) AS n FROM pg_stat_activity WHERE usename = %s", (role,))
            ).fetchone()
        assert row is not None
        if row["n"] == 0:
            break
        await asyncio.sleep(0.1)
    return int(row["n"])


async def test_hostile_inputs_are_refused_or_harmless_as_the_tenant(resources: RuntimeResources) -> None:
    role = await _reader_role(resources)
    tool = _sql(resources, sql_timeout_ms=2000)
    before = await _server_state(resources, role)
    refused, harmless = 0, 0
    for sql, verdict in HOSTILE:
        try:
            result = await tool.query(sql)
        except ToolInputError as error:
            if verdict == "refused":
                assert str(error).startswith("SQL refused"), (sql, error)
                refused += 1
            else:  # a harmless read may still fail in the database (a hidden column)
                assert "permission denied" in str(error), (sql, error)
                harmless += 1
            continue
        assert verdict == "harmless", f"ran although it should be refused: {sql!r}"
        assert result.row_count <= 500
        harmless += 1
    assert refused + harmless == len(HOSTILE)
    assert await _server_state(resources, role) == before
    assert await _reader_sessions(resources, role) == 0
    # The statement timeout still holds for the role after all of it.
    with pytest.raises(ToolInputError, match="ms limit"):
        await _sql(resources, sql_timeout_ms=100).query(SLOW)


async def test_a_query_over_the_temp_file_limit_is_a_tool_error_read_once(
    resources: RuntimeResources,
) -> None:
    """SQLSTATE class 53 from a statement is the statement's failure: the model reads it, nothing
    waits for the database to come back and nothing repeats it."""
    role = pgsql.Identifier(await _reader_role(resources))
    async with resources.database.pool.connection() as conn:
        await conn.execute(pgsql.SQL("ALTER ROLE {} SET temp_file_limit = '64kB'").format(role))
        await conn.execute(pgsql.SQL("ALTER ROLE {} SET work_mem = '64kB'").format(role))
    try:
        with pytest.raises(ToolInputError, match="temp_file_limit") as refused:
            await _sql(resources, sql_timeout_ms=60_000).query(
                "SELECT a.tx_id FROM transactions a, transactions b"
                " ORDER BY md5(a.tx_id::text || b.tx_id::text) LIMIT 5"
            )
        assert str(refused.value).startswith("SQL error:")
    finally:
        async with resources.database.pool.connection() as conn:
            await conn.execute(pgsql.SQL("ALTER ROLE {} SET temp_file_limit = '64MB'").format(role))
            await conn.execute(pgsql.SQL("ALTER ROLE {} SET work_mem = '4MB'").format(role))
    assert resources.database.health.up


async def test_rows_are_bounded_by_count_and_by_bytes(resources: RuntimeResources) -> None:
    by_rows = await _sql(resources, sql_row_cap=5).query("SELECT tx_id FROM transactions ORDER BY tx_id")
    assert by_rows.row_count == 5 and by_rows.truncated and by_rows.columns == ["tx_id"]
    by_bytes = await _sql(resources, sql_max_bytes=2048).query(
        "SELECT md5(tx_id::text) AS h FROM transactions ORDER BY tx_id"
    )
    assert by_bytes.truncated and 0 < by_bytes.row_count < 100
    assert sum(len(row["h"]) + 8 for row in by_bytes.rows) <= 2048
    # One row larger than the cap is never sent.
    huge = await _sql(resources, sql_max_bytes=2048).query(
        "SELECT string_agg(md5(tx_id::text), '') AS blob FROM transactions"
    )
    assert huge.truncated and huge.rows == []
    empty = await _sql(resources).query("SELECT store_id, name FROM stores WHERE store_id < 0")
    assert empty.rows == [] and empty.columns == ["store_id", "name"] and not empty.truncated


async def test_values_come_back_as_json_types(resources: RuntimeResources) -> None:
    result = await _sql(resources).query(
        "SELECT store_id, name, opened_on, 2.5::numeric AS ratio, true AS flag, ARRAY[1, 2] AS items"
        " FROM stores WHERE store_id = %(store)s",
        {"store": 5},
    )
    assert result.rows == [
        {
            "store_id": 5,
            "name": "Store 5",
            "opened_on": "2019-05-01",
            "ratio": 2.5,
            "flag": True,
            "items": [1, 2],
        }
    ]


async def _as_reader(resources: RuntimeResources) -> psycopg.AsyncConnection[Any]:
    """A session of the reader role opened directly: what a query past the check would run in."""
    role = await _reader_role(resources)
    password = reader_password(reader_secret(resources.settings), "demo-retail")
    head, _, query = resources.database.uri.partition("?")
    return await psycopg.AsyncConnection.connect(
        f"{head}?{query}", user=role, password=password, autocommit=True, row_factory=dict_row
    )


@pytest.mark.parametrize(
    "statement",
    [
        "CREATE TEMP TABLE t (x int)",
        "CREATE TABLE tenant_demo_retail.t (x int)",
        "CREATE TABLE public.t (x int)",
        "SELECT lo_create(0)",
        "SELECT lo_from_bytea(0, 'x'::bytea)",
        "SELECT true_effect_points FROM interventions",
        "SELECT * FROM public.api_keys",
        "SELECT * FROM public.tenant_readers",
        "SELECT * FROM tenant_demo_retail_2.stores",
    ],
)
async def test_the_reader_role_cannot_past_the_check(resources: RuntimeResources, statement: str) -> None:
    async with await _as_reader(resources) as conn:
        await conn.execute("SET default_transaction_read_only = off")  # the role's own default, lifted
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            await conn.execute(statement)


async def test_the_reader_role_is_bounded_and_pinned(resources: RuntimeResources) -> None:
    async with await _as_reader(resources) as conn:
        shown = {}
        for name in ("search_path", "work_mem", "temp_file_limit", "idle_in_transaction_session_timeout"):
            row = await (await conn.execute(f"SHOW {name}")).fetchone()
            assert row is not None
            shown[name] = row[name]
        assert shown == {
            "search_path": SCHEMA,
            "work_mem": "4MB",
            "temp_file_limit": "64MB",
            "idle_in_transaction_session_timeout": "10s",
        }
        visible = await (await conn.execute("SELECT evidence FROM interventions LIMIT 1")).fetchone()
        assert visible is not None


async def test_the_reader_password_is_derived_and_never_stored(resources: RuntimeResources) -> None:
    async with resources.database.pool.connection() as conn:
        columns = await (
            await conn.execute(
                "SELECT column_name FROM information_schema.columns WHERE table_name = 'tenant_readers'"
            )
        ).fetchall()
        assert {c["column_name"] for c in columns} == {"tenant_id", "role_name"}
    role = await _reader_role(resources)
    head, _, query = resources.database.uri.partition("?")
    with pytest.raises(psycopg.OperationalError, match="password authentication failed"):
        await psycopg.AsyncConnection.connect(f"{head}?{query}", user=role, password="guess")
    # A rotated secret: the tool keys the role again and goes on.
    rotated = _sql(resources, secret_key="another secret")
    assert (await rotated.query("SELECT count(*) AS n FROM stores")).rows == [{"n": 8}]
    assert (await _sql(resources).query("SELECT count(*) AS n FROM stores")).rows == [{"n": 8}]
