"""The FastAPI application: lifespan (database, run workers), limits, error bodies, routes."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import partial
from typing import Any

import psycopg
from fastapi import FastAPI, Request
from fastapi.middleware.cors import CORSMiddleware
from fastapi.responses import JSONResponse

from master_agent.errors import (
    ConflictError,
    InputError,
    InvalidAgentError,
    MasterAgentError,
    NotFoundError,
    RateLimitedError,
    ScheduleTooFrequentError,
    UnknownTenantError,
    UnknownThreadError,
)
from master_agent.evolution.jobs import use_cron_firer
from master_agent.routing.warm import warm_routing
from master_agent.runtime import open_resources
from master_agent.runtime.resources import RuntimeResources, SchedulerRole
from master_agent.runtime.runs import RunQueue
from master_agent.service.console import mount_console
from master_agent.service.crons import fire_cron
from master_agent.service.graphs import register_graphs
from master_agent.service.http_config import cors_options, custom_app, http_section
from master_agent.service.limits import BodySizeLimit, DatabaseGate, database_unavailable, service_busy
from master_agent.service.memory import return_free_memory
from master_agent.service.metrics import RequestClock, ServiceMetrics
from master_agent.service.protocol_servers import ProtocolServers
from master_agent.service.routes import (
    a2a,
    assistants,
    chat,
    crons,
    documents,
    goals,
    health,
    knowledge,
    mcp,
    meta,
    outcomes,
    playbooks,
    proposals,
    protocol,
    runs,
    store,
    threads,
)
from master_agent.service.state import ServiceState
from master_agent.settings import Settings
from master_agent.storage.outages import is_outage, is_pool_timeout
from master_agent.storage.rate_limits import Quotas
from master_agent.untrusted import close_pools

VERSION = "0.1.0"


def _error_body(error: MasterAgentError) -> dict[str, Any]:
    body: dict[str, Any] = {"detail": str(error)}
    if isinstance(error, InputError):
        body["field"] = error.field
    if isinstance(error, InvalidAgentError):
        body["errors"] = error.problems
    return body


async def _warm(resources: RuntimeResources, ready: asyncio.Event) -> None:
    """Routing's models and indexes loaded, then ready; a failure leaves them to load on first use.

    What is loaded by then (modules, models, indexes: some 600k objects) is moved out of the garbage
    collector's sight (``gc.freeze``): a full collection scanned it all, about a second during which
    every request and run of the process stood still (measured on the warmed service)."""
    try:
        if resources.settings.warm_routing:
            await warm_routing(resources)
    except Exception:  # never keep a working service unready: routing loads lazily as before
        logging.getLogger(__name__).exception("routing warm-up failed; loading on first use")
    finally:
        gc.collect()
        return_free_memory()
        gc.freeze()
        ready.set()


def create_app(settings: Settings | None = None) -> FastAPI:
    """The service app; its lifespan opens the database (migrated), starts the run workers."""
    configured = settings or Settings.from_env()
    register_graphs()
    http = http_section(configured)
    extra = custom_app(configured, http)
    protocols = ProtocolServers(version=VERSION)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        opened = configured
        role: SchedulerRole = "lead" if opened.scheduler == "enabled" else "add"
        async with open_resources(opened, scheduler=role) as resources:
            metrics = ServiceMetrics()
            queue = RunQueue(
                resources,
                on_finished=metrics.observe_run,
                on_stage=metrics.observe_stage,
                on_claim=metrics.count_claim,
            )
            resources.database.pool.on_wait = metrics.observe_pool_wait
            app.state.service = ServiceState(
                resources=resources,
                queue=queue,
                metrics=metrics,
                quotas=Quotas.from_settings(resources.settings),
            )
            embedder = resources.evolution.knowledge.embedder
            scheduler = resources.evolution.scheduler
            # uvicorn's logger, so the line shows wherever uvicorn's own start-up lines do.
            logging.getLogger("uvicorn.error").info(
                "master-agent: embeddings %s (%d dimensions); scheduler %s; model %s",
                embedder.model_name,
                embedder.dim,
                scheduler.state if scheduler else "disabled",
                resources.settings.model,
            )
            if role == "lead":
                use_cron_firer(partial(fire_cron, resources, queue))
            await queue.start()
            warming = asyncio.create_task(_warm(resources, app.state.service.ready))
            try:
                async with contextlib.AsyncExitStack() as stack:
                    await stack.enter_async_context(protocols.running())
                    if extra is not None:
                        await stack.enter_async_context(extra.router.lifespan_context(extra))
                    yield
            finally:
                warming.cancel()
                use_cron_firer(None)
                await queue.stop()
                close_pools()
                gc.unfreeze()  # what was frozen at ready is collectable again

    app = FastAPI(
        title="Master Agent",
        version=VERSION,
        description="Goal-driven agents on LangGraph: strategic goals, chat and a LangGraph-compatible API.",
        lifespan=lifespan,
    )
    app.add_middleware(BodySizeLimit, limit=configured.max_body_bytes)
    app.add_middleware(DatabaseGate)
    app.add_middleware(RequestClock)
    cors = cors_options(configured, http)
    if cors is not None:
        # Outermost: a preflight is answered before any other layer (none of them knows OPTIONS).
        app.add_middleware(CORSMiddleware, **cors)

    @app.exception_handler(MasterAgentError)
    async def master_agent_error(_request: Request, error: MasterAgentError) -> JSONResponse:
        status = 400
        if isinstance(error, UnknownTenantError | UnknownThreadError | NotFoundError):
            status = 404
        elif isinstance(error, ConflictError):
            status = 409
        elif isinstance(error, ScheduleTooFrequentError):
            status = 422
        return JSONResponse(_error_body(error), status_code=status)

    @app.exception_handler(RateLimitedError)
    async def rate_limited(_request: Request, error: RateLimitedError) -> JSONResponse:
        return JSONResponse(
            {"detail": str(error), "limit": error.limit, "retry_after_s": error.retry_after_s},
            status_code=429,
            headers={"Retry-After": str(error.retry_after_s)},
        )

    @app.exception_handler(psycopg.DataError)
    async def unstorable_value(_request: Request, error: psycopg.DataError) -> JSONResponse:
        # e.g. a NUL character in JSON, or a number beyond bigint: nothing was stored.
        message = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        return JSONResponse({"detail": f"body: a value cannot be stored: {message}"}, status_code=422)

    @app.exception_handler(psycopg.OperationalError)
    @app.exception_handler(psycopg.InterfaceError)
    async def database_outage(request: Request, error: psycopg.Error) -> JSONResponse:
        if not is_outage(error):
            raise error
        # Probed now, so the requests after this one are answered 503 at once (DatabaseGate).
        health = request.app.state.service.resources.database.health
        await health.suspect(error)
        if health.up and is_pool_timeout(error):
            # The probe was answered: the wait was for a connection of our own, all in use.
            return service_busy()
        return database_unavailable()

    app.include_router(health.router)
    app.include_router(goals.router)
    app.include_router(assistants.router)
    app.include_router(threads.router)
    app.include_router(runs.router)
    app.include_router(protocol.router)
    app.include_router(crons.router)
    app.include_router(chat.router)
    app.include_router(knowledge.router)
    app.include_router(playbooks.router)
    app.include_router(outcomes.router)
    app.include_router(proposals.router)
    app.include_router(documents.router)
    app.include_router(store.router)
    app.include_router(meta.router)
    app.include_router(mcp.router)
    app.include_router(a2a.router)
    app.state.protocols = protocols
    # The console's scripts use the chat, run and thread routes under /console/api with its cookie.
    mount_console(app, api_routers=[chat.router, runs.router, threads.router])
    if extra is not None:
        # Before the service's own, as langgraph-api mounts them (a custom route may shadow one).
        app.router.routes[0:0] = extra.routes
    return app
