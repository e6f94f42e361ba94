"""Dependency shortcuts for routes: the process resources, the run queue, the caller's tenant."""

from __future__ import annotations

import hmac
from collections.abc import Awaitable, Callable
from typing import Annotated, Any

from fastapi import Depends, HTTPException, Request

from master_agent.runtime import RuntimeResources
from master_agent.runtime.runs import RunQueue
from master_agent.service.auth import tenant_for_key
from master_agent.service.console_sessions import csrf_token_for_session, session_tenant
from master_agent.service.state import ServiceState
from master_agent.settings import is_loopback
from master_agent.storage.rate_limits import Hit, count_hits

AUTH_DISABLED_TENANT = "demo-retail"
#: The web console's cookie: an opaque session id (HttpOnly, SameSite=Strict, sent to /console only).
CONSOLE_COOKIE = "ma_console_session"
#: The JSON API again, for the console's own pages: authenticated by the console cookie.
CONSOLE_API_PREFIX = "/console/api"
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


# Dependencies are ``async``: FastAPI runs plain functions in a thread pool, a thread hop per request.
async def service_state(request: Request) -> ServiceState:
    state: ServiceState = request.app.state.service
    return state


ServiceDep = Annotated[ServiceState, Depends(service_state)]


async def resources(service: ServiceDep) -> RuntimeResources:
    return service.resources


async def run_queue(service: ServiceDep) -> RunQueue:
    return service.queue


ResourcesDep = Annotated[RuntimeResources, Depends(resources)]
QueueDep = Annotated[RunQueue, Depends(run_queue)]


def auth_disabled_here(request: Request, service: ServiceState) -> bool:
    """Authentication is disabled and the request came to a loopback address: it acts as the demo tenant."""
    if service.resources.settings.auth != "disabled":
        return False
    server = request.scope.get("server")
    return server is not None and is_loopback(server[0])


async def current_tenant(request: Request, service: ServiceDep) -> str:
    """The tenant of the request's API key (``Authorization: Bearer`` or ``X-API-Key``)."""
    if auth_disabled_here(request, service):
        return AUTH_DISABLED_TENANT
    header = request.headers.get("authorization", "")
    key = header[7:].strip() if header.lower().startswith("bearer ") else request.headers.get("x-api-key", "")
    if (
        not key
        and request.url.path.startswith(CONSOLE_API_PREFIX + "/")
        and CONSOLE_COOKIE in request.cookies
    ):
        return await console_tenant(request, service)
    if not key:
        raise HTTPException(
            401,
            detail="missing API key: send 'Authorization: Bearer <key>' or 'X-API-Key: <key>'",
            headers={"WWW-Authenticate": "Bearer"},
        )
    tenant = await tenant_for_key(service.resources.database.pool, key)
    if tenant is None:
        raise HTTPException(401, detail="invalid or revoked API key", headers={"WWW-Authenticate": "Bearer"})
    return tenant


AuthenticatedTenantDep = Annotated[str, Depends(current_tenant)]
"""The caller's tenant, its request not counted (readiness: a load balancer's probes must not use up a
tenant's requests, nor be refused when the tenant is)."""


async def count_request(service: ServiceState, tenant: str, runs: int = 0) -> None:
    """Count the request, and the runs it starts, against the tenant's limits in one statement;
    RateLimitedError (429) when one is exceeded, before anything of the request is done."""
    quotas = service.quotas
    await count_hits(
        service.resources.database.pool,
        [Hit(quotas.requests, tenant), Hit(quotas.runs_started, tenant, runs)],
    )


async def counted_tenant(service: ServiceDep, tenant: AuthenticatedTenantDep) -> str:
    await count_request(service, tenant)
    return tenant


TenantDep = Annotated[str, Depends(counted_tenant)]
"""The caller's tenant, its request counted against ``MASTER_AGENT_RATE_REQUESTS``."""


def run_starting_tenant(runs: Callable[[Any], int] | None = None) -> Callable[..., Awaitable[str]]:
    """A dependency like ``TenantDep`` for a route starting runs: the request and its runs (one, or
    ``runs(body)`` of the parsed JSON body) are counted together, so a refused run stores nothing."""

    async def dependency(request: Request, service: ServiceDep, tenant: AuthenticatedTenantDep) -> str:
        started = 1
        if runs is not None:
            try:
                # FastAPI parsed a JSON body before solving dependencies: json() returns that parse.
                started = runs(await request.json())
            except (ValueError, TypeError, AttributeError):
                # No JSON body, or one of another shape (empty, a list, a number where an object
                # goes): its validation refuses it next, with the field.
                started = 0
        await count_request(service, tenant, started)
        return tenant

    return dependency


RunTenantDep = Annotated[str, Depends(run_starting_tenant())]
"""The caller's tenant of a route starting one run: the request and the run counted."""


async def console_tenant(request: Request, service: ServiceState) -> str:
    """The tenant of the console cookie's session; a state-changing request must also send the page's
    token (``X-CSRF-Token``), which a page of another site cannot know."""
    session_id = request.cookies.get(CONSOLE_COOKIE, "")
    settings = service.resources.settings
    tenant = await session_tenant(service.resources.database.pool, session_id, settings.console_idle_s)
    if tenant is None:
        raise HTTPException(
            401, detail="console session ended (signed out, expired or its key revoked): sign in again"
        )
    if request.method not in SAFE_METHODS:
        sent = request.headers.get("x-csrf-token", "")
        if not hmac.compare_digest(sent.encode(), csrf_token_for_session(session_id).encode()):
            raise HTTPException(403, detail="X-CSRF-Token: missing or not this session's token")
    return tenant


async def operator(request: Request, service: ServiceDep) -> None:
    """Operator endpoints: the operator token when one is set, else loopback clients only. A tenant's
    API key never opens them (they show every tenant's numbers)."""
    token = service.resources.settings.operator_token
    if token is None:
        client = request.client
        if client is None or not is_loopback(client.host):
            raise HTTPException(
                403, detail="operator: set MASTER_AGENT_OPERATOR_TOKEN to read this from another host"
            )
        return
    header = request.headers.get("authorization", "")
    sent = header[7:].strip() if header.lower().startswith("bearer ") else ""
    if not hmac.compare_digest(sent.encode(), token.get_secret_value().encode()):
        raise HTTPException(
            403, detail="operator: send 'Authorization: Bearer <MASTER_AGENT_OPERATOR_TOKEN>'"
        )


OperatorDep = Annotated[None, Depends(operator)]
