"""Run webhooks, delivered over real sockets to a local receiver: one POST with langgraph-api's payload
when a run ends (background, waited, stateless), retried with backoff on a 5xx or no answer, given up on
a 4xx or after the last try, picked up by the scheduler leader when the process that owed it died; and
the guard against server-side request forgery, at the edge and at delivery (after resolving)."""

from __future__ import annotations

import asyncio
import json
import re
import uuid
from collections.abc import AsyncIterator
from ipaddress import IPv4Network, IPv6Network, ip_address
from typing import Any

import pytest
import uvicorn
from langgraph_sdk.errors import UnprocessableEntityError
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from master_agent.evolution.webhooks import (
    Resolver,
    WebhookRefused,
    check_webhook_url,
    enqueue_webhook,
    pinned_request,
)
from master_agent.service.state import ServiceState
from tests.live_server import LiveServer, free_port, live_server_fixture, sdk, two_tenant_keys

live = live_server_fixture(
    "webhooks",
    graphs=("tally=tests.tally_graph:make_graph",),
    webhook_allowed_networks=("127.0.0.0/8",),
    webhook_backoff_s=0.2,
    webhook_attempts=3,
    scheduler_poll_s=0.5,
)
keys = two_tenant_keys


class Receiver:
    """An HTTP server on loopback that records each POST and answers with the next scripted status
    for its path (then 200)."""

    def __init__(self) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.received: list[tuple[str, dict[str, str], Any]] = []
        self.script: dict[str, list[int]] = {}
        app = Starlette(routes=[Route("/{path:path}", self._receive, methods=["POST"])])
        self.server = uvicorn.Server(
            uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning")
        )

    async def _receive(self, request: Request) -> JSONResponse:
        path = request.url.path
        self.received.append((path, dict(request.headers), json.loads(await request.body())))
        statuses = self.script.get(path) or [200]
        status = statuses.pop(0) if len(statuses) > 1 else statuses[0]
        return JSONResponse({"ok": status < 300}, status_code=status)

    def posts(self, path: str) -> list[Any]:
        return [body for got, _, body in self.received if got == path]

    async def until(self, path: str, count: int, within_s: float = 30.0) -> list[Any]:
        deadline = asyncio.get_running_loop().time() + within_s
        while len(self.posts(path)) < count:
            if asyncio.get_running_loop().time() > deadline:
                raise AssertionError(f"{path}: {len(self.posts(path))} of {count} deliveries")
            await asyncio.sleep(0.05)
        return self.posts(path)


@pytest.fixture(scope="module")
async def receiver() -> AsyncIterator[Receiver]:
    receiving = Receiver()
    task = asyncio.create_task(receiving.server.serve())
    while not receiving.server.started:
        if task.done():
            task.result()
        await asyncio.sleep(0.02)
    yield receiving
    receiving.server.should_exit = True
    await task


async def _outbox(live: LiveServer, url: str) -> dict[str, Any]:
    state: ServiceState = live.server.config.app.state.service
    for _ in range(200):
        async with state.resources.database.pool.connection() as conn:
            row = await (
                await conn.execute(
                    "SELECT status, attempts, last_error FROM outbox WHERE channel = 'webhook' AND subject = %s",
                    (url,),
                )
            ).fetchone()
        if row is not None and row["status"] != "pending":
            return dict(row)
        await asyncio.sleep(0.05)
    raise AssertionError(f"the webhook to {url} is still pending")


def test_the_edge_refuses_addresses_that_are_not_public() -> None:
    nothing: tuple[IPv4Network, ...] = ()
    for url in (
        "http://127.0.0.1:8080/hook",
        "http://10.1.2.3/hook",
        "http://172.16.0.9/hook",
        "http://192.168.1.1/hook",
        "http://100.64.0.1/hook",
        "http://169.254.169.254/latest/meta-data",
        "http://[::1]/hook",
        "http://[fe80::1]/hook",
        "http://[fd00::5]/hook",
        "http://[::ffff:127.0.0.1]/hook",
        "http://0.0.0.0/hook",
        "http://localhost:9/hook",
        "http://api.localhost/hook",
        "http://metadata.google.internal/computeMetadata",
        "ftp://example.com/hook",
        "/threads",
        "http:///nohost",
        "http://example.com:99999/hook",
        "http://example.com/" + "x" * 5000,
    ):
        with pytest.raises(WebhookRefused):
            check_webhook_url(url, nothing)
    check_webhook_url("https://hooks.example.com/run-done", nothing)  # a name: resolved at delivery
    check_webhook_url("http://93.184.216.34/hook", nothing)
    check_webhook_url("http://127.0.0.1:8080/hook", (IPv4Network("127.0.0.0/8"),))
    check_webhook_url("http://localhost:8080/hook", (IPv4Network("127.0.0.0/8"),))


#: IPv6 forms that carry a refused IPv4 address (loopback, private, metadata), and what they carry.
IPV6_CARRYING_REFUSED = [
    pytest.param("::127.0.0.1", "127.0.0.1", id="ipv4-compatible"),
    pytest.param("::ffff:127.0.0.1", "127.0.0.1", id="ipv4-mapped"),
    pytest.param("::ffff:169.254.169.254", "169.254.169.254", id="ipv4-mapped-metadata"),
    pytest.param("64:ff9b::7f00:1", "127.0.0.1", id="nat64-well-known"),
    pytest.param("64:ff9b::a00:7", "10.0.0.7", id="nat64-well-known-private"),
    pytest.param("64:ff9b:1::7f00:1", "64:ff9b:1::", id="nat64-local-use"),
    pytest.param("2002:7f00:1::", "127.0.0.1", id="6to4"),
    pytest.param("2002:a9fe:a9fe::1", "169.254.169.254", id="6to4-metadata"),
    # Teredo: server 65.54.227.120 (public), client 127.0.0.1 stored with its bits inverted.
    pytest.param("2001:0:4136:e378:8000:63bf:80ff:fffe", "127.0.0.1", id="teredo-client"),
    pytest.param("2001:0:7f00:1:8000:63bf:f7f7:f7f7", "127.0.0.1", id="teredo-server"),
    pytest.param("2600::5efe:127.0.0.1", "127.0.0.1", id="isatap"),
    pytest.param("2600::200:5efe:10.1.2.3", "10.1.2.3", id="isatap-global-id"),
]
#: The same forms carrying a public IPv4 address (8.8.8.8): judged by it, so they may be called.
IPV6_CARRYING_PUBLIC = [
    pytest.param("::ffff:8.8.8.8", id="ipv4-mapped"),
    pytest.param("::8.8.8.8", id="ipv4-compatible"),
    pytest.param("64:ff9b::808:808", id="nat64-well-known"),
    pytest.param("2002:808:808::1", id="6to4"),
    pytest.param("2001:0:4136:e378:8000:63bf:f7f7:f7f7", id="teredo"),
    pytest.param("2600::5efe:8.8.8.8", id="isatap"),
]


@pytest.mark.parametrize(("address", "carried"), IPV6_CARRYING_REFUSED)
async def test_ipv6_forms_are_judged_by_the_ipv4_address_they_carry(address: str, carried: str) -> None:
    nothing: tuple[IPv4Network, ...] = ()
    with pytest.raises(WebhookRefused, match=re.escape(carried)):
        check_webhook_url(f"http://[{address}]:8080/hook", nothing)
    # At delivery, a name resolving to the address is refused as well.
    with pytest.raises(WebhookRefused, match=re.escape(carried)):
        await pinned_request("http://hooks.example.com:8080/hook", nothing, resolve=_resolving_to(address))


@pytest.mark.parametrize("address", IPV6_CARRYING_PUBLIC)
async def test_ipv6_forms_carrying_a_public_ipv4_address_may_be_called(address: str) -> None:
    nothing: tuple[IPv4Network, ...] = ()
    check_webhook_url(f"http://[{address}]/hook", nothing)
    url, headers, _ = await pinned_request(
        "http://hooks.example.com/hook", nothing, resolve=_resolving_to(address)
    )
    assert url == f"http://[{ip_address(address)}]/hook" and headers == {"Host": "hooks.example.com"}


def test_an_allowed_network_covers_the_ipv6_forms_of_its_addresses() -> None:
    loopback = (IPv4Network("127.0.0.0/8"),)
    for address in (
        "::ffff:127.0.0.1",
        "::127.0.0.1",
        "64:ff9b::7f00:1",
        "2002:7f00:1::",
        "2600::5efe:127.0.0.1",
    ):
        check_webhook_url(f"http://[{address}]/hook", loopback)
    # The local-use NAT64 prefix is not public itself: allowing the IPv4 network is not enough.
    with pytest.raises(WebhookRefused, match="64:ff9b:1::"):
        check_webhook_url("http://[64:ff9b:1::7f00:1]/hook", loopback)
    check_webhook_url("http://[64:ff9b:1::808:808]/hook", (IPv6Network("64:ff9b:1::/48"),))
    with pytest.raises(WebhookRefused, match=re.escape("10.0.0.1")):
        check_webhook_url("http://[64:ff9b:1::a00:1]/hook", (IPv6Network("64:ff9b:1::/48"),))


def _resolving_to(address: str) -> Resolver:
    async def resolve(host: str, port: int) -> list[str]:
        assert host == "hooks.example.com"
        return [address]

    return resolve


async def test_delivery_resolves_the_name_checks_every_address_and_pins_it() -> None:
    nothing: tuple[IPv4Network, ...] = ()
    with pytest.raises(WebhookRefused, match="loopback"):
        await pinned_request("http://2130706433:8080/hook", nothing)  # 127.0.0.1 spelt as a number
    with pytest.raises(WebhookRefused):
        await pinned_request("http://0x7f.1:8080/hook", nothing)
    url, headers, extensions = await pinned_request(
        "http://2130706433:8080/hook?x=1", (IPv4Network("127.0.0.0/8"),)
    )
    assert url == "http://127.0.0.1:8080/hook?x=1" and headers == {"Host": "2130706433:8080"}
    assert extensions == {}
    url, headers, extensions = await pinned_request("https://93.184.216.34/x", nothing)
    assert url == "https://93.184.216.34/x" and extensions == {}


async def test_a_finished_run_posts_its_webhook_once_with_langgraph_apis_payload(
    live: LiveServer, keys: dict[str, str], receiver: Receiver
) -> None:
    client = sdk(live, keys["demo-retail"])
    thread = await client.threads.create()
    hook = f"{receiver.url}/done/{uuid.uuid4().hex}"
    run = await client.runs.create(thread["thread_id"], "tally", input=[], webhook=hook)
    await client.runs.join(thread["thread_id"], run["run_id"])
    [payload] = await receiver.until(hook.removeprefix(receiver.url), 1)
    assert payload["run_id"] == run["run_id"] and payload["thread_id"] == thread["thread_id"]
    assert payload["status"] == "success" and payload["values"] == ["run 1"]
    assert payload["assistant_id"] == run["assistant_id"] and payload["kwargs"]["webhook"] == hook
    for field in ("created_at", "updated_at", "run_started_at", "run_ended_at", "webhook_sent_at"):
        assert payload[field], field
    assert payload["metadata"]["assistant_id"] == run["assistant_id"]
    assert "error" not in payload
    assert await _outbox(live, hook) == {"status": "delivered", "attempts": 1, "last_error": None}
    await asyncio.sleep(0.5)
    assert len(receiver.posts(hook.removeprefix(receiver.url))) == 1  # once

    # A waited run and a stateless one (its thread deleted after it) post theirs too.
    waited_hook = f"{receiver.url}/waited/{uuid.uuid4().hex}"
    assert await client.runs.wait(thread["thread_id"], "tally", input=[], webhook=waited_hook) == [
        "run 1",
        "run 2",
    ]
    [waited] = await receiver.until(waited_hook.removeprefix(receiver.url), 1)
    assert waited["values"] == ["run 1", "run 2"]
    stateless_hook = f"{receiver.url}/stateless/{uuid.uuid4().hex}"
    stateless = await client.runs.create(None, "tally", input=[], webhook=stateless_hook)
    [alone] = await receiver.until(stateless_hook.removeprefix(receiver.url), 1)
    assert alone["run_id"] == stateless["run_id"] and alone["values"] == ["run 1"]


async def test_a_failing_receiver_is_retried_with_backoff_and_a_4xx_is_given_up(
    live: LiveServer, keys: dict[str, str], receiver: Receiver
) -> None:
    client = sdk(live, keys["demo-retail"])
    flaky = f"/flaky/{uuid.uuid4().hex}"
    receiver.script[flaky] = [500, 503, 200]
    await client.runs.wait(None, "tally", input=[], webhook=receiver.url + flaky)
    deliveries = await receiver.until(flaky, 3)
    assert len({body["webhook_sent_at"] for body in deliveries}) == 3
    assert len({body["run_id"] for body in deliveries}) == 1
    assert await _outbox(live, receiver.url + flaky) == {
        "status": "delivered",
        "attempts": 3,
        "last_error": None,
    }

    gone = f"/gone/{uuid.uuid4().hex}"
    receiver.script[gone] = [404]
    await client.runs.wait(None, "tally", input=[], webhook=receiver.url + gone)
    stored = await _outbox(live, receiver.url + gone)
    assert stored["status"] == "failed" and stored["attempts"] == 1 and stored["last_error"] == "HTTP 404"

    down = f"/down/{uuid.uuid4().hex}"
    receiver.script[down] = [503]
    await client.runs.wait(None, "tally", input=[], webhook=receiver.url + down)
    stored = await _outbox(live, receiver.url + down)
    assert stored["status"] == "failed" and stored["attempts"] == 3  # MASTER_AGENT_WEBHOOK_ATTEMPTS
    assert "gave up" in stored["last_error"] and len(receiver.posts(down)) == 3

    nobody = f"http://127.0.0.1:{free_port()}/nobody"
    await client.runs.wait(None, "tally", input=[], webhook=nobody)
    stored = await _outbox(live, nobody)
    assert stored["status"] == "failed" and stored["attempts"] == 3 and "ConnectError" in stored["last_error"]


async def test_the_scheduler_leader_delivers_what_a_dead_process_owed(
    live: LiveServer, keys: dict[str, str], receiver: Receiver
) -> None:
    client = sdk(live, keys["demo-retail"])
    thread = await client.threads.create()
    run = await client.runs.create(thread["thread_id"], "tally", input=[])
    await client.runs.join(thread["thread_id"], run["run_id"])
    owed = f"/owed/{uuid.uuid4().hex}"
    state: ServiceState = live.server.config.app.state.service
    async with state.resources.database.pool.connection() as conn:
        # As a process leaves it that stored the run's end and died before its first try.
        await enqueue_webhook(conn, run["run_id"], receiver.url + owed, ["run 1"], None)
    [payload] = await receiver.until(owed, 1)
    assert payload["run_id"] == run["run_id"] and payload["status"] == "success"


async def test_webhooks_to_addresses_that_are_not_allowed_are_refused_naming_the_field(
    live: LiveServer, keys: dict[str, str]
) -> None:
    client = sdk(live, keys["demo-retail"])
    thread = await client.threads.create()
    for hook in (
        "http://169.254.169.254/latest/meta-data",
        "http://10.0.0.7/hook",
        "file:///etc/passwd",
        "http://[::ffff:169.254.169.254]/latest/meta-data",
        "http://[64:ff9b::a00:7]/hook",
        "http://[2002:a9fe:a9fe::1]/latest/meta-data",
    ):
        with pytest.raises(UnprocessableEntityError) as raised:
            await client.runs.create(thread["thread_id"], "tally", input=[], webhook=hook)
        assert "webhook" in raised.value.response.json()["detail"]  # type: ignore[attr-defined]
    assert await client.runs.list(thread["thread_id"]) == []  # nothing stored
