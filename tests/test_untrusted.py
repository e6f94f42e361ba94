"""Tenant text that crashes or stalls a parser costs one call, never the service.

The SQL guard's parser segfaulted its process on a long flat expression (and the scheduler leader with
it, at the next cron minute); a 20k-character saved query hit Python's recursion limit (a 500); an 11 KB
PDF whose pages share one huge content stream held a thread for hours. Here: limits before any parser,
parsers in killable worker processes, and the real service in a subprocess still answering afterwards.
"""

from __future__ import annotations

import asyncio
import os
import time
import zlib
from pathlib import Path

import httpx
import pglast
import pytest

from master_agent.capabilities.tools import acheck_select_only, check_select_only
from master_agent.errors import ToolInputError
from master_agent.untrusted import IsolatedFailure, IsolatedPool, IsolatedRefusal, pdf_pool, sql_pool
from master_agent.untrusted.pdf import MAX_PDF_PAGES, pdf_text
from master_agent.untrusted.sql_grammar import MAX_SQL_CHARS, MAX_SQL_NESTING, MAX_SQL_TOKENS
from tests.conftest import create_database, installed_template
from tests.live_server import create_key_cli, start_serve
from tests.test_evolution_units import VALID_PLAYBOOK

#: The issue's crash: libpg_query's tree of a 25,000-term sum overflows the C stack of its process.
FLAT_SUM = "SELECT " + "+".join(["1"] * 25_000)
#: About 20,000 characters: Python's recursion limit in the tree walk (a 500 before).
LONG_SUM = "SELECT " + "+".join(["x"] * 10_000) + " FROM t"


def heavy_pdf(pages: int, operators: int) -> bytes:
    """A small PDF whose ``pages`` pages all draw one compressed stream of ``operators`` text
    operators: every page decodes and interprets the whole stream again."""
    stream = zlib.compress(b"BT /F1 1 Tf " + b"(x) Tj " * operators + b"ET", 9)
    kids = " ".join(f"{4 + index} 0 R" for index in range(pages))
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        f"<< /Type /Pages /Kids [{kids}] /Count {pages} >>".encode(),
        b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(stream) + stream + b"\nendstream",
        *(
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 3 0 R"
            b" /Resources << /Font << /F1 << /Type /Font /Subtype /Type1 /BaseFont /Helvetica >> >> >> >>"
            for _ in range(pages)
        ),
    ]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    return bytes(out)


# -- limits before any parser --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("sql", "words"),
    [
        (FLAT_SUM, f"at most {MAX_SQL_CHARS:,} are read"),
        (LONG_SUM, f"at most {MAX_SQL_CHARS:,} are read"),
        ("SELECT " + "+".join(["1"] * 2_500), f"at most {MAX_SQL_TOKENS:,} are read"),
        ("SELECT " + "(" * (MAX_SQL_NESTING + 1) + "1" + ")" * (MAX_SQL_NESTING + 1), "nest"),
    ],
    ids=["25k-term sum", "20k-character query", "too many tokens", "deep parentheses"],
)
def test_text_too_big_to_parse_safely_is_refused_saying_which_limit(sql: str, words: str) -> None:
    with pytest.raises(ToolInputError, match="SQL refused") as refused:
        check_select_only(sql, tables=["t"])
    assert words in str(refused.value)


def test_the_longest_flat_expression_within_the_limits_is_checked_in_full() -> None:
    # ~2,000 nested operators: deep enough to exhaust the default recursion limit in-process.
    near = "SELECT " + "+".join(["x"] * 1_990) + " FROM t"
    assert check_select_only(near, tables=["t"]).text == near
    with pytest.raises(ToolInputError, match="pg_class is not one of your tables"):
        check_select_only("SELECT " + "+".join(["1"] * 1_990) + " FROM pg_class", tables=["t"])


async def test_the_async_check_answers_like_the_sync_one() -> None:
    assert (await acheck_select_only("SELECT a FROM t", tables=["t"])).text == "SELECT a FROM t"
    with pytest.raises(ToolInputError, match="function pg_sleep"):
        await acheck_select_only("SELECT pg_sleep(1)", tables=["t"])


# -- the worker processes ------------------------------------------------------------------------


def test_a_parser_crash_costs_only_that_call() -> None:
    pool = sql_pool()
    killed = pool.killed
    parent = os.getpid()
    with pytest.raises(IsolatedFailure, match="crashed on it"):
        pool.call(pglast.parse_sql, FLAT_SUM, timeout_s=30)
    assert os.getpid() == parent and pool.killed == killed + 1
    # The next call gets a fresh worker.
    assert check_select_only("SELECT 1", tables=()).text == "SELECT 1"


def test_a_read_over_its_time_is_stopped_and_the_worker_replaced() -> None:
    pool = IsolatedPool("test", size=1, memory_bytes=1024**3)
    try:
        started = time.monotonic()
        with pytest.raises(IsolatedFailure, match=r"longer than 0\.5 s"):
            pool.call(pdf_text, heavy_pdf(pages=MAX_PDF_PAGES, operators=150_000), timeout_s=0.5)
        assert time.monotonic() - started < 5 and pool.killed == 1
        assert pool.call(len, "still serving", timeout_s=10) == len("still serving")
    finally:
        pool.close()


async def test_an_abandoned_read_kills_its_worker() -> None:
    pool = IsolatedPool("test", size=1, memory_bytes=1024**3)
    try:
        call = asyncio.create_task(pool.acall(time.sleep, 30, timeout_s=60))
        await asyncio.sleep(0.5)
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call
        assert pool.killed == 1
        assert await pool.acall(len, "again", timeout_s=10) == 5
    finally:
        pool.close()


def test_a_pdf_with_too_many_pages_is_refused_before_any_page_is_read() -> None:
    bomb = heavy_pdf(pages=100, operators=150_000)
    assert len(bomb) < 32_000  # a few kilobytes that would cost minutes of CPU
    started = time.monotonic()
    with pytest.raises(IsolatedRefusal, match=f"at most {MAX_PDF_PAGES} are read"):
        pdf_pool().call(pdf_text, bomb, timeout_s=30)
    assert time.monotonic() - started < 10


# -- the real service ----------------------------------------------------------------------------


def test_hostile_sql_is_refused_when_stored_and_the_service_keeps_answering(
    pg_server_uri: str, tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    uri = create_database(
        pg_server_uri, "untrusted", template=installed_template(pg_server_uri, tmp_path_factory)
    )
    env = {
        **os.environ,
        "DATABASE_URL": uri,
        "MASTER_AGENT_MODEL": "offline",
        "MASTER_AGENT_DATA_DIR": str(tmp_path),
    }
    key = create_key_cli(env, "demo-retail")
    server, url = start_serve(env)
    headers = {"X-API-Key": key}
    try:
        for sql in (FLAT_SUM, LONG_SUM, "SELECT " + "+".join(["1"] * 2_500)):
            spec = {
                **VALID_PLAYBOOK,
                "steps": [{"order": 1, "action": "tool", "tool": "query_tenant_data", "args": {"sql": sql}}],
            }
            stored = httpx.post(f"{url}/playbooks", json={"spec": spec}, headers=headers, timeout=30)
            assert stored.status_code in (400, 422), stored.text
            assert "SQL refused" in stored.text and "step 1" in stored.text
            agent = {
                "name": "flat_sums",
                "description": "Adds up ones.",
                "instructions": "Run the query.",
                "queries": [{"name": "flat_sum", "description": "A sum.", "sql": sql}],
            }
            saved = httpx.post(
                f"{url}/assistants",
                json={"graph_id": "master_agent", "context": {"agent_spec": agent}},
                headers=headers,
                timeout=30,
            )
            assert saved.status_code in (400, 422), saved.text
            assert "queries.0.sql" in saved.text
        assert httpx.get(f"{url}/playbooks", headers=headers, timeout=30).json() == []
        assert server.poll() is None
        assert httpx.get(f"{url}/ok", timeout=10).status_code == 200
    finally:
        server.terminate()
        server.wait(timeout=30)


def test_a_tenants_text_pattern_is_checked_in_bounded_time_and_a_broken_one_is_named() -> None:
    """An output schema's ``pattern`` is the tenant's: one with nested repetition would hold a worker for
    hours under a backtracking engine on a 60-letter answer; it is refused after its time limit instead,
    while a look-ahead pattern (the meta compiler's words to avoid) still decides."""
    from pydantic import ValidationError

    from master_agent.capabilities.agents import model_from_schema, schema_problems
    from master_agent.meta.artifacts import avoided_pattern

    slow = model_from_schema(
        "slow", {"type": "object", "properties": {"reply": {"type": "string", "pattern": "^(a|aa)+$"}}}
    )
    with pytest.raises(ValidationError, match="in time"):
        slow.model_validate({"reply": "a" * 60 + "b"})
    assert slow.model_validate({"reply": "aaaa"}).model_dump() == {"reply": "aaaa"}

    avoiding = model_from_schema(
        "avoiding",
        {
            "type": "object",
            "properties": {"note": {"type": "string", "pattern": avoided_pattern(["policy"])}},
            "required": ["note"],
        },
    )
    with pytest.raises(ValidationError, match="does not match"):
        avoiding.model_validate({"note": "Our POLICY says no"})
    assert avoiding.model_validate({"note": "Approved"}).model_dump() == {"note": "Approved"}

    broken = {"type": "object", "properties": {"note": {"type": "string", "pattern": "(unclosed"}}}
    assert schema_problems(broken) == [
        "not a valid JSON Schema: '(unclosed' is not a 'regex' (at properties/note/pattern)"
    ]
