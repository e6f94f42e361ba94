"""Run webhooks, as langgraph-api sends them: when a run that asked for one ends, one POST of the run
with its status, times and last values, to the URL it gave.

The message is written to the outbox (channel ``webhook``) in the transaction that stores the run's
end, so no ended run loses its webhook. The process that ran the run tries it at once; a failure that
may pass (no answer, a 5xx, 408 or 429) is tried again after a doubling backoff, by that process or,
if it died, by the scheduler leader's tick. A delivery claims its message until the try's deadline, so
two processes never send the same try.

Against server-side request forgery, a webhook may only reach public addresses: loopback, private,
link-local (cloud metadata), shared and reserved ones are refused, unless a configured network allows
them. An IPv6 address that maps or embeds an IPv4 address (``::ffff:127.0.0.1``, ``::127.0.0.1``, NAT64
``64:ff9b::7f00:1``, 6to4 ``2002:7f00:1::``, Teredo, ISATAP) is judged by that IPv4 address too, so
``64:ff9b::808:808`` (8.8.8.8) may be called and no IPv6 spelling of a refused IPv4 address may. A literal address is refused when the run is created; a host name is resolved at delivery, every
address it resolves to is checked, and the request goes to the checked address (a second lookup cannot
swap it), with the name in ``Host`` and in TLS's server name."""

from __future__ import annotations

import asyncio
import ipaddress
import json
import logging
import socket
import uuid
from collections.abc import Awaitable, Callable, Sequence
from datetime import UTC, datetime
from ipaddress import IPv4Address, IPv4Network, IPv6Address, IPv6Network
from typing import Any, Literal
from urllib.parse import urlsplit, urlunsplit

import httpx
from psycopg import AsyncConnection
from psycopg_pool import AsyncConnectionPool

from master_agent.settings import Settings

logger = logging.getLogger(__name__)

CHANNEL = "webhook"
MAX_URL_CHARS = 4096
MAX_BACKOFF_S = 3600.0
#: Names that are the machine itself or a cloud's metadata service, whatever they resolve to.
_LOOPBACK_NAMES = ("localhost", "localhost.localdomain", "host.docker.internal")
_METADATA_NAMES = ("metadata", "metadata.google.internal", "metadata.amazonaws.com", "instance-data")

Network = IPv4Network | IPv6Network
Address = IPv4Address | IPv6Address
Delivery = Literal["delivered", "retry", "failed"]
#: How a host name becomes addresses at delivery: ``(host, port)`` to the addresses as text.
Resolver = Callable[[str, int], Awaitable[list[str]]]

#: IPv6 prefixes that only carry an IPv4 address (a NAT64 one in its last 32 bits, RFC 6052).
_IPV4_COMPATIBLE = IPv6Network("::/96")  # deprecated, but a stack may still send it as IPv4
_NAT64 = IPv6Network("64:ff9b::/96")
_CARRIER_PREFIXES = (_NAT64, IPv6Network("::ffff:0:0/96"), IPv6Network("2002::/16"), IPv6Network("2001::/32"))
#: RFC 8215 local-use NAT64: unreachable from the internet by definition, so refused unless allowed, and
#: what it carries (in the /96 form deployments use) judged too.
_NAT64_LOCAL = IPv6Network("64:ff9b:1::/48")
#: ISATAP interface identifiers (RFC 5214): ``0:5efe`` or ``200:5efe``, then the IPv4 address.
_ISATAP_IDS = (0x00005EFE, 0x02005EFE)

ENQUEUE = """
INSERT INTO outbox (message_id, tenant_id, channel, subject, body)
SELECT %(message_id)s, tenant_id, 'webhook', %(url)s,
       jsonb_build_object('url', %(url)s::text, 'payload', jsonb_build_object(
           'run_id', run_id, 'thread_id', thread_id, 'assistant_id', assistant_id, 'created_at', created_at,
           'updated_at', updated_at, 'status', status, 'metadata', metadata, 'kwargs', kwargs,
           'multitask_strategy', multitask_strategy, 'run_started_at', started_at, 'run_ended_at', finished_at
       ) || %(extra)s::jsonb)
FROM runs WHERE run_id = %(run_id)s
RETURNING message_id
"""
#: Due webhooks (all, or one), claimed until their try's deadline.
CLAIM = """
UPDATE outbox SET attempts = attempts + 1, next_attempt_at = now() + make_interval(secs => %(lease)s)
WHERE message_id IN (
    SELECT message_id FROM outbox
    WHERE channel = 'webhook' AND status = 'pending' AND (next_attempt_at IS NULL OR next_attempt_at <= now())
      AND (%(message_id)s::uuid IS NULL OR message_id = %(message_id)s::uuid)
    ORDER BY created_at LIMIT %(limit)s
    FOR UPDATE SKIP LOCKED
)
RETURNING message_id, body, attempts
"""
DELIVERED = """
UPDATE outbox SET status = 'delivered', delivered_at = now(), next_attempt_at = NULL, last_error = NULL
WHERE message_id = %s
"""
RETRY = "UPDATE outbox SET next_attempt_at = now() + make_interval(secs => %s), last_error = %s WHERE message_id = %s"
GIVE_UP = "UPDATE outbox SET status = 'failed', next_attempt_at = NULL, last_error = %s WHERE message_id = %s"


class WebhookRefused(ValueError):
    """The URL may not be called (not http(s), no host, or an address that is not public)."""


def _literal(host: str) -> Address | None:
    try:
        return ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return None


def carried_ipv4(address: IPv6Address) -> list[IPv4Address]:
    """The IPv4 addresses an IPv6 address maps or embeds: a connection to it may end at any of them
    (this machine's stack, a NAT64 translator, a 6to4 or Teredo relay, an ISATAP tunnel)."""
    value = int(address)
    last32 = IPv4Address(value & 0xFFFFFFFF)
    carried: list[IPv4Address] = []
    if address.ipv4_mapped is not None:
        carried.append(address.ipv4_mapped)
    if _is_ipv4_compatible(address) or address in _NAT64 or address in _NAT64_LOCAL:
        carried.append(last32)
    if address.sixtofour is not None:
        carried.append(address.sixtofour)
    if address.teredo is not None:
        carried.extend(address.teredo)  # the Teredo server, and the client (its bits inverted)
    if (value >> 32) & 0xFFFFFFFF in _ISATAP_IDS:
        carried.append(last32)
    return carried


def _is_ipv4_compatible(address: IPv6Address) -> bool:
    # :: and ::1 are the unspecified and loopback addresses, not IPv4-compatible ones (RFC 4291).
    return address in _IPV4_COMPATIBLE and int(address) > 1


def _is_carrier(address: Address) -> bool:
    """In a prefix whose only meaning is the IPv4 address it carries."""
    return isinstance(address, IPv6Address) and (
        _is_ipv4_compatible(address) or any(address in prefix for prefix in _CARRIER_PREFIXES)
    )


def _may_call(address: Address, allowed: Sequence[Network]) -> bool:
    if any(address.version == network.version and address in network for network in allowed):
        return True
    return address.is_global and not address.is_multicast and address not in _NAT64_LOCAL


def _kind(address: Address) -> str:
    if address.is_loopback:
        return "a loopback address"
    if address.is_link_local:
        return "a link-local address"
    return "a private address" if address.is_private else "not a public address"


def _refusal(address: Address, allowed: Sequence[Network]) -> str | None:
    """Why ``address`` may not be called (None: it may). An IPv6 address is judged by every IPv4
    address it carries as well as by itself, except that a prefix that only carries IPv4 (mapped,
    compatible, NAT64 64:ff9b::/96, 6to4, Teredo) is judged by what it carries alone: Python's own
    verdict on those prefixes changes between versions, and says nothing about where they lead."""
    hint = " (allow its network in MASTER_AGENT_WEBHOOK_ALLOWED_NETWORKS to call it)"
    if not _is_carrier(address) and not _may_call(address, allowed):
        return f"{address} is {_kind(address)}{hint}"
    if isinstance(address, IPv6Address):
        for carried in carried_ipv4(address):
            if not _may_call(carried, allowed):
                return f"{address} carries the IPv4 address {carried}, which is {_kind(carried)}{hint}"
    return None


def check_webhook_url(url: str, allowed: Sequence[Network]) -> None:
    """What can be refused before a run is stored (a host name's addresses are checked at delivery)."""
    if len(url) > MAX_URL_CHARS:
        raise WebhookRefused(f"longer than {MAX_URL_CHARS} characters")
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https"):
        raise WebhookRefused("an absolute http:// or https:// URL")
    host = (parts.hostname or "").rstrip(".").lower()
    if not host:
        raise WebhookRefused("the URL has no host")
    try:
        parts.port  # noqa: B018 - raises on a port out of range
    except ValueError as error:
        raise WebhookRefused(str(error)) from None
    if host in _METADATA_NAMES or host.endswith(".internal"):
        raise WebhookRefused(f"{host} is a cloud metadata or internal name")
    literal = _literal(host)
    if literal is None and (host in _LOOPBACK_NAMES or host.endswith(".localhost")):
        literal = IPv4Address("127.0.0.1")
    if literal is not None and (reason := _refusal(literal, allowed)) is not None:
        raise WebhookRefused(reason)


async def resolve_host(host: str, port: int) -> list[str]:
    """Every address ``host`` resolves to (the system resolver)."""
    try:
        infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except OSError as error:
        raise ConnectionError(f"{host} does not resolve: {error}") from None
    return [str(info[4][0]) for info in infos]


async def pinned_request(
    url: str, allowed: Sequence[Network], resolve: Resolver = resolve_host
) -> tuple[str, dict[str, str], dict[str, Any]]:
    """The URL to call with the host replaced by its checked address, the ``Host`` header, and the
    request extensions (TLS's server name)."""
    check_webhook_url(url, allowed)
    parts = urlsplit(url)
    host = (parts.hostname or "").rstrip(".")
    port = parts.port or (443 if parts.scheme == "https" else 80)
    literal = _literal(host)
    if literal is not None:
        addresses: list[Address] = [literal]
    else:
        resolved = await resolve(host, port)
        addresses = list(dict.fromkeys(ipaddress.ip_address(found.split("%")[0]) for found in resolved))
    for address in addresses:
        reason = _refusal(address, allowed)
        if reason is not None:
            raise WebhookRefused(f"{host} resolves to {reason}")
    address = addresses[0]
    netloc = f"[{address}]" if address.version == 6 else str(address)
    if parts.port:
        netloc = f"{netloc}:{parts.port}"
    headers = {"Host": parts.netloc.rpartition("@")[2]}
    extensions: dict[str, Any] = {"sni_hostname": host} if parts.scheme == "https" and literal is None else {}
    return urlunsplit(parts._replace(netloc=netloc)), headers, extensions


async def enqueue_webhook(
    conn: AsyncConnection[Any], run_id: str, url: str, values: Any, error: dict[str, Any] | None
) -> uuid.UUID | None:
    """The webhook of a run whose end ``conn`` is storing (in the same transaction)."""
    extra: dict[str, Any] = {"values": values}
    if error is not None:
        extra["error"] = error
    row = await (
        await conn.execute(
            ENQUEUE,
            {
                "message_id": uuid.uuid4(),
                "url": url,
                "run_id": run_id,
                "extra": json.dumps(extra, default=str),
            },
        )
    ).fetchone()
    return row["message_id"] if row else None


def backoff_s(settings: Settings, attempts: int) -> float:
    return float(min(settings.webhook_backoff_s * 2 ** max(attempts - 1, 0), MAX_BACKOFF_S))


async def _post(
    client: httpx.AsyncClient, settings: Settings, body: dict[str, Any]
) -> tuple[Delivery, str | None]:
    payload = {**body["payload"], "webhook_sent_at": datetime.now(UTC).isoformat()}
    try:
        url, headers, extensions = await pinned_request(body["url"], settings.webhook_allowed_networks)
        response = await client.post(url, json=payload, headers=headers, extensions=extensions)
    except WebhookRefused as refused:
        return "failed", f"refused: {refused}"
    except (httpx.TransportError, ConnectionError) as failure:
        return "retry", f"{type(failure).__name__}: {failure}"
    if response.is_success:
        return "delivered", None
    reason = f"HTTP {response.status_code}"
    if response.status_code in (408, 429) or response.status_code >= 500:
        return "retry", reason
    return "failed", reason


async def deliver_webhooks(
    pool: AsyncConnectionPool[Any],
    settings: Settings,
    *,
    message_id: uuid.UUID | None = None,
    limit: int = 20,
) -> list[tuple[uuid.UUID, Delivery]]:
    """Try the due webhooks (or the one named) once each; what became of each."""
    lease = settings.webhook_timeout_s + 30
    async with pool.connection() as conn:
        claimed = await (
            await conn.execute(CLAIM, {"lease": lease, "message_id": message_id, "limit": limit})
        ).fetchall()
    if not claimed:
        return []
    done: list[tuple[uuid.UUID, Delivery]] = []
    async with httpx.AsyncClient(
        timeout=settings.webhook_timeout_s, follow_redirects=False, trust_env=False
    ) as client:
        for row in claimed:
            outcome, reason = await _post(client, settings, row["body"])
            if outcome == "retry" and row["attempts"] >= settings.webhook_attempts:
                outcome = "failed"
                reason = f"{reason} (gave up after {row['attempts']} tries)"
            async with pool.connection() as conn:
                if outcome == "delivered":
                    await conn.execute(DELIVERED, (row["message_id"],))
                elif outcome == "retry":
                    await conn.execute(
                        RETRY, (backoff_s(settings, row["attempts"]), reason, row["message_id"])
                    )
                else:
                    logger.warning("webhook %s given up: %s", row["body"]["url"], reason)
                    await conn.execute(GIVE_UP, (reason, row["message_id"]))
            done.append((row["message_id"], outcome))
    return done


async def deliver_webhook_now(
    pool: AsyncConnectionPool[Any], settings: Settings, message_id: uuid.UUID
) -> None:
    """Try a run's webhook at once, and again after each backoff while this process lives (if it dies,
    the scheduler leader takes the message up when it is due)."""
    attempts = 0
    while True:
        done = await deliver_webhooks(pool, settings, message_id=message_id, limit=1)
        if not done or done[0][1] != "retry":
            return  # delivered, given up, or taken by another process
        attempts += 1
        await asyncio.sleep(backoff_s(settings, attempts) + 0.05)
