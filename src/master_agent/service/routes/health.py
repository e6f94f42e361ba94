"""Liveness, readiness and metrics."""

from __future__ import annotations

from importlib.metadata import version as package_version
from typing import Any

from fastapi import APIRouter, Response
from fastapi.responses import JSONResponse

from master_agent.service.deps import AuthenticatedTenantDep, OperatorDep, ServiceDep
from master_agent.service.limits import StrictJsonRoute
from master_agent.workflows.metrics import workflow_summaries

HEALTH_TIMEOUT_S = 5

router = APIRouter(tags=["health"], route_class=StrictJsonRoute)


@router.get("/ok", response_model=None)
async def ok(service: ServiceDep) -> dict[str, bool] | JSONResponse:
    """Readiness to chat (no authentication): 503 while routing's models and indexes still load
    (``MASTER_AGENT_WARM_ROUTING``), so the first message is as fast as the next."""
    if not service.ready.is_set():
        return JSONResponse({"ok": False, "status": "warming up"}, status_code=503)
    return {"ok": True}


@router.get("/info")
async def info() -> dict[str, Any]:
    """What this server is and supports, in langgraph-api's shape (no authentication, nothing of a
    tenant)."""
    return {
        "version": package_version("master-agent"),
        "langgraph_py_version": package_version("langgraph"),
        "flags": {
            "assistants": True,
            "crons": True,
            "store": True,
            "langsmith": False,
            "langsmith_tracing_replicas": False,
            "langsmith_tracing_session_on_runs": False,
        },
        "host": {"kind": "self-hosted", "project_id": None, "host_revision_id": None, "revision_id": None},
    }


@router.get("/health", responses={503: {"description": "the database is unreachable"}})
async def health(service: ServiceDep, _tenant: AuthenticatedTenantDep) -> JSONResponse:
    """Readiness: the database answers (503 while it does not); the run worker and scheduler state."""
    database = "ok"
    try:
        async with service.resources.database.pool.connection(timeout=HEALTH_TIMEOUT_S) as conn:
            await conn.execute("SELECT 1")
    except Exception as error:
        await service.resources.database.health.suspect(error)
        database = f"unreachable: {type(error).__name__}"
    body: dict[str, Any] = {
        "status": "ok" if database == "ok" else "unavailable",
        "database": database,
        "worker": {"owner": service.queue.owner, "active_runs": service.queue.active},
        "scheduler": scheduler.state if (scheduler := service.resources.evolution.scheduler) else "disabled",
    }
    return JSONResponse(body, status_code=200 if database == "ok" else 503)


@router.get("/metrics", response_class=Response)
async def metrics(service: ServiceDep, _operator: OperatorDep) -> Response:
    """Prometheus text: runs by status, run latency, active streams, pool usage, stage-driven
    conversations (turns, time per stage, worker tasks, completion; every tenant's, so
    for the operator only: ``MASTER_AGENT_OPERATOR_TOKEN``, or a loopback client when it is unset)."""
    body = service.metrics.render(
        await service.queue.counts(),
        dict(service.resources.database.pool.get_stats()),
        service.queue.active,
        await workflow_summaries(service.resources.database.pool),
    )
    return Response(body, media_type="text/plain; version=0.0.4; charset=utf-8")
