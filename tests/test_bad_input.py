"""Bad input against a real server is refused before anything is stored: run configs, metadata, JSON
that is not strict JSON, oversized bodies and heads, and /metrics for anyone but the operator."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from master_agent.service.auth import create_key
from tests.conftest import server_settings
from tests.live_server import LiveServer

GOAL = "Increase Store 5's accessory attach rate by 20% within 60 days"


@pytest.fixture(scope="module")
async def live(pg_server_uri: str, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[LiveServer]:
    async with LiveServer(server_settings(pg_server_uri, tmp_path_factory, "bad")) as server:
        yield server


@pytest.fixture(scope="module")
async def http(live: LiveServer) -> AsyncIterator[httpx.AsyncClient]:
    pool = live.server.config.app.state.service.resources.database.pool
    key = (await create_key(pool, "demo-retail")).key
    async with httpx.AsyncClient(
        base_url=live.url, headers={"Authorization": f"Bearer {key}"}, timeout=60
    ) as client:
        yield client


async def _thread(http: httpx.AsyncClient) -> str:
    response = await http.post("/threads", json={})
    assert response.status_code == 200, response.text
    return str(response.json()["thread_id"])


@pytest.mark.parametrize(
    ("config", "field"),
    [
        ({"configurable": {"complexity": "zzz"}}, "complexity"),
        ({"configurable": {"max_iterations": 10**9}}, "max_iterations"),
        ({"configurable": {"max_tokens": 5}}, "max_tokens"),
        ({"configurable": {"sub_agents": ["no_such_agent"]}}, "sub_agents"),
        ({"configurable": {"ab_test_variant": "telepathy"}}, "ab_test_variant"),
        ({"configurable": "all of them"}, "configurable"),
        ({"recursion_limit": "abc"}, "recursion_limit"),
        ({"recursion_limit": 3}, "recursion_limit"),
    ],
)
async def test_an_invalid_run_config_is_refused_and_the_thread_stays_usable(
    http: httpx.AsyncClient, config: dict[str, Any], field: str
) -> None:
    thread_id = await _thread(http)
    before = (await http.get(f"/threads/{thread_id}")).json()
    body = {"assistant_id": "master_agent", "input": {"goal": GOAL}, "config": config}
    refused = await http.post(f"/threads/{thread_id}/runs", json=body)
    assert refused.status_code == 422, refused.text
    assert field in refused.json()["detail"]
    assert (await http.get(f"/threads/{thread_id}/runs")).json() == []
    assert (await http.get(f"/threads/{thread_id}")).json()["config"] == before["config"]
    # The thread was left as it was: a valid run on it works, and so does reading its state.
    valid = {"assistant_id": "master_agent", "input": {"goal": GOAL}, "config": {"configurable": {}}}
    done = await http.post(f"/threads/{thread_id}/runs/wait", json=valid)
    assert done.status_code == 200, done.text
    assert done.json()["envelope"]["status"] == "success"
    assert (await http.get(f"/threads/{thread_id}/state")).status_code == 200


async def test_a_client_id_of_another_tenant_is_refused(http: httpx.AsyncClient) -> None:
    thread_id = await _thread(http)
    body = {"assistant_id": "master_agent", "input": {"goal": GOAL}}
    other = {**body, "config": {"configurable": {"client_id": "someone-else"}}}
    refused = await http.post(f"/threads/{thread_id}/runs", json=other)
    assert refused.status_code == 403
    assert "client_id" in refused.json()["detail"]


def _nested(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {"leaf": 1}
    for _ in range(depth - 1):
        value = {"n": value}
    return value


@pytest.mark.parametrize(
    ("metadata", "problem"),
    [
        (_nested(300), "deeper"),
        (_nested(17), "deeper"),
        ({"blob": "x" * 70_000}, "bytes"),
    ],
)
async def test_metadata_is_bounded_in_depth_and_size(
    http: httpx.AsyncClient, metadata: dict[str, Any], problem: str
) -> None:
    count = (await http.post("/threads/search", json={"limit": 1000})).json()
    refused = await http.post("/threads", json={"metadata": metadata})
    assert refused.status_code == 422, refused.text
    assert "metadata" in refused.text and problem in refused.text
    assert (await http.post("/threads/search", json={"limit": 1000})).json() == count
    thread_id = await _thread(http)
    run = {"assistant_id": "master_agent", "input": {"goal": GOAL}, "metadata": metadata}
    assert (await http.post(f"/threads/{thread_id}/runs", json=run)).status_code == 422
    fine = await http.post("/threads", json={"metadata": _nested(16)})
    assert fine.status_code == 200
    assert (await http.get(f"/threads/{fine.json()['thread_id']}")).json()["metadata"] == _nested(16)


@pytest.mark.parametrize(
    ("path", "raw"),
    [
        ("/threads", b'{"metadata": {"score": NaN}}'),
        ("/threads", b'{"metadata": {"score": Infinity}}'),
        ("/threads", b'{"metadata": {"score": -Infinity}}'),
        ("/threads", b'{"metadata": {"name": "\\ud800"}}'),
        ("/threads", b'{"metadata": {"\\udfff": 1}}'),
        ("/api/cs/strategic-goals", b'{"goal": "Increase Store 5 sales by 5% \\ud83d"}'),
        ("/threads/search", b'{"limit": NaN}'),
        ("/threads", b"[" * 100_000),
    ],
)
async def test_json_that_is_not_strict_json_is_a_422(http: httpx.AsyncClient, path: str, raw: bytes) -> None:
    count = (await http.post("/threads/search", json={"limit": 1000})).json()
    response = await http.post(path, content=raw, headers={"content-type": "application/json"})
    assert response.status_code == 422, response.text
    assert response.json()["detail"]
    assert (await http.post("/threads/search", json={"limit": 1000})).json() == count


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-le", "utf-16-be", "utf-32"])
@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/threads", {"metadata": {"name": "caf\u00e9"}}),
        ("/api/cs/strategic-goals", {"goal": "Increase Store 5 sales by 5% within 30 days"}),
    ],
)
async def test_a_body_that_is_not_utf8_is_refused(
    http: httpx.AsyncClient, encoding: str, path: str, body: dict[str, Any]
) -> None:
    count = (await http.post("/threads/search", json={"limit": 1000})).json()
    raw = json.dumps(body).encode(encoding)
    response = await http.post(path, content=raw, headers={"content-type": "application/json"})
    assert response.status_code == 422, response.text
    assert "UTF-8" in response.json()["detail"] and response.json()["detail"].startswith("body")
    assert (await http.post("/threads/search", json={"limit": 1000})).json() == count


async def test_a_body_declaring_another_charset_is_refused(http: httpx.AsyncClient) -> None:
    raw = json.dumps({"metadata": {}}).encode()
    response = await http.post(
        "/threads", content=raw, headers={"content-type": "application/json; charset=utf-16"}
    )
    assert response.status_code == 422 and "UTF-8" in response.json()["detail"]
    # UTF-8 said out loud, and a UTF-8 byte order mark (RFC 8259 lets a parser ignore it), are fine.
    fine = await http.post(
        "/threads", content=raw, headers={"content-type": "application/json; charset=UTF-8"}
    )
    assert fine.status_code == 200, fine.text
    marked = await http.post(
        "/threads", content=b"\xef\xbb\xbf" + raw, headers={"content-type": "application/json"}
    )
    assert marked.status_code == 200, marked.text


@pytest.mark.parametrize(
    "number",
    [
        "1" + "0" * 400,
        "-" + "9" * 30,
        str(2**63),
        str(-(2**63) - 1),
        "7" * 5000,  # beyond Python's own 4300-digit cap on int()
        "1e400",
        "-1" + "0" * 5000 + ".5",
    ],
)
async def test_absurd_numbers_are_refused_naming_the_field(http: httpx.AsyncClient, number: str) -> None:
    count = (await http.post("/threads/search", json={"limit": 1000})).json()
    raw = f'{{"metadata": {{"n": {number}}}}}'.encode()
    refused = await http.post("/threads", content=raw, headers={"content-type": "application/json"})
    assert refused.status_code == 422, refused.text
    assert "body.metadata.n: " in refused.json()["detail"]
    assert (await http.post("/threads/search", json={"limit": 1000})).json() == count
    thread_id = await _thread(http)
    for field in ("input", "config", "metadata", "context"):
        # The number goes in as the request's text: json.dumps could not write 1e400 or 5000 digits.
        fields = {"assistant_id": '"master_agent"', "input": json.dumps({"goal": GOAL})}
        fields[field] = (
            f'{{"goal": {json.dumps(GOAL)}, "n": {number}}}' if field == "input" else f'{{"n": {number}}}'
        )
        raw = ("{" + ", ".join(f'"{key}": {value}' for key, value in fields.items()) + "}").encode()
        refused = await http.post(
            f"/threads/{thread_id}/runs", content=raw, headers={"content-type": "application/json"}
        )
        assert refused.status_code == 422, refused.text
        assert f"body.{field}.n: " in refused.json()["detail"]
    assert (await http.get(f"/threads/{thread_id}/runs")).json() == []


async def test_the_edges_of_the_number_bounds_are_accepted(http: httpx.AsyncClient) -> None:
    metadata = {"big": 2**63 - 1, "small": -(2**63), "float": 1.7976931348623157e308, "tiny": 5e-324}
    created = await http.post("/threads", json={"metadata": metadata})
    assert created.status_code == 200, created.text
    stored = (await http.get(f"/threads/{created.json()['thread_id']}")).json()["metadata"]
    # jsonb keeps numbers as decimals: the largest double comes back written out as an integer.
    assert {key: float(value) if key == "float" else value for key, value in stored.items()} == metadata


async def test_a_chunked_body_over_the_limit_is_a_413(http: httpx.AsyncClient) -> None:
    async def chunks() -> AsyncIterator[bytes]:
        yield b'{"metadata": {"blob": "'
        for _ in range(160):
            yield b"x" * 65_536
        yield b'"}}'

    response = await http.post("/threads", content=chunks(), headers={"content-type": "application/json"})
    assert response.status_code == 413
    assert "MASTER_AGENT_MAX_BODY_BYTES" in response.json()["detail"]


async def _raw_request(live: LiveServer, head: bytes) -> bytes:
    reader, writer = await asyncio.open_connection("127.0.0.1", live.port)
    try:
        # The server may close the connection while the head is still being sent.
        with contextlib.suppress(ConnectionError):
            writer.write(head)
            await writer.drain()
        return await asyncio.wait_for(reader.read(), 30)
    finally:
        writer.close()


async def test_a_huge_header_is_a_431_and_the_connection_is_closed(live: LiveServer) -> None:
    head = b"GET /ok HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 8_000_000 + b"\r\n\r\n"
    answer = await _raw_request(live, head)
    assert answer.startswith(b"HTTP/1.1 431"), answer[:200]
    assert b"MASTER_AGENT_MAX_HEADER_BYTES" in answer
    # Ordinary requests, keep-alive ones included, are untouched.
    twice = b"GET /ok HTTP/1.1\r\nHost: x\r\n\r\nGET /ok HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    answer = await _raw_request(live, twice)
    assert answer.count(b"HTTP/1.1 200") == 2


async def test_metrics_are_for_the_operator_only(
    live: LiveServer, http: httpx.AsyncClient, pg_server_uri: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    # No operator token set: a loopback client reads them, any other host is refused, key or not.
    assert (await http.get("/metrics")).status_code == 200
    app = live.server.config.app
    remote = httpx.ASGITransport(app=app, client=("203.0.113.7", 40000))
    async with httpx.AsyncClient(transport=remote, base_url="http://service", headers=http.headers) as far:
        refused = await far.get("/metrics")
        assert refused.status_code == 403
        assert "MASTER_AGENT_OPERATOR_TOKEN" in refused.json()["detail"]
    settings = server_settings(pg_server_uri, tmp_path_factory, "ops", operator_token="op-secret-1")
    async with LiveServer(settings) as guarded:
        pool = guarded.server.config.app.state.service.resources.database.pool
        key = (await create_key(pool, "demo-retail")).key
        async with httpx.AsyncClient(base_url=guarded.url) as client:
            as_tenant = await client.get("/metrics", headers={"Authorization": f"Bearer {key}"})
            assert as_tenant.status_code == 403
            wrong = await client.get("/metrics", headers={"Authorization": "Bearer op-secret-2"})
            assert wrong.status_code == 403
            operator = await client.get("/metrics", headers={"Authorization": "Bearer op-secret-1"})
            assert operator.status_code == 200
            assert "master_agent" in operator.text


def test_strict_json_parser_names_the_place() -> None:
    from master_agent.service.limits import JsonInputError, parse_json_body

    with pytest.raises(JsonInputError, match=r"body.a\[1\].b"):
        parse_json_body(json.dumps({"a": [0, {"b": "\ud800"}]}).encode())
    assert parse_json_body(b'{"a": [1.5, "\\u00e9"]}') == {"a": [1.5, "é"]}
    with pytest.raises(JsonInputError, match=r"body.a\[0\]: .*64-bit"):
        parse_json_body(b'{"a": [' + b"9" * 5000 + b"]}")
    with pytest.raises(JsonInputError, match="UTF-8"):
        parse_json_body(json.dumps({"a": 1}).encode("utf-16-le"))


async def test_reads_never_fail_on_stored_deep_metadata(live: LiveServer, http: httpx.AsyncClient) -> None:
    # A row stored before the bound existed (written here straight to the database).
    thread_id = await _thread(http)
    pool = live.server.config.app.state.service.resources.database.pool
    async with pool.connection() as conn:
        await conn.execute(
            "UPDATE threads SET metadata = %s::jsonb WHERE thread_id = %s",
            (json.dumps(_nested(300)), thread_id),
        )
    assert (await http.get(f"/threads/{thread_id}")).status_code == 200
    assert (await http.post("/threads/search", json={"limit": 1000})).status_code == 200
