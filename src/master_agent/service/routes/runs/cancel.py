"""Cancelling runs (one, a thread's, by id, by status, an assistant's) and forgetting finished ones."""

from __future__ import annotations

import uuid
from typing import Literal

from fastapi import APIRouter, HTTPException, Response
from fastapi.responses import JSONResponse
from pydantic import Field, model_validator

from master_agent.runtime.runs import RunQueue
from master_agent.service.deps import QueueDep, ResourcesDep, TenantDep
from master_agent.service.graph_state import run_output
from master_agent.service.limits import LangGraphBody, StrictJsonRoute
from master_agent.service.routes.runs.request import WAIT_LIMIT_S, location, thread_run

router = APIRouter(tags=["runs"], route_class=StrictJsonRoute)


class RunsCancel(LangGraphBody):
    thread_id: uuid.UUID | None = None
    run_ids: list[uuid.UUID] | None = Field(default=None, max_length=1000)
    status: Literal["pending", "running", "all"] | None = None

    @model_validator(mode="after")
    def _one_selection(self) -> RunsCancel:
        if self.status is not None and (self.thread_id or self.run_ids):
            raise ValueError("status: cancels every run with that status; omit thread_id and run_ids")
        if self.status is None and self.thread_id is None and not self.run_ids:
            raise ValueError("thread_id: name a thread, run_ids, or a status")
        return self


@router.post("/runs/cancel", status_code=204, response_class=Response)
async def cancel_runs(
    body: RunsCancel,
    tenant: TenantDep,
    resources: ResourcesDep,
    queue: QueueDep,
    action: Literal["interrupt", "rollback"] = "interrupt",
) -> Response:
    """Cancel the tenant's active runs: of a thread, by id, or all pending / running ones."""
    await cancel_active_runs(
        queue,
        tenant,
        statuses=["pending", "running"] if body.status in (None, "all") else [body.status],
        thread_id=body.thread_id,
        run_ids=body.run_ids,
        action=action,
    )
    return Response(status_code=204)


ACTIVE_RUNS = """
SELECT run_id FROM runs
WHERE tenant_id = %(tenant)s AND kind = 'graph' AND status = ANY(%(statuses)s)
  AND (%(thread)s::text IS NULL OR thread_id = %(thread)s)
  AND (%(runs)s::uuid[] IS NULL OR run_id = ANY(%(runs)s::uuid[]))
  AND (%(assistant)s::uuid IS NULL OR assistant_id = %(assistant)s::uuid)
"""


async def cancel_active_runs(
    queue: RunQueue,
    tenant: str,
    *,
    statuses: list[str] | None = None,
    thread_id: uuid.UUID | None = None,
    run_ids: list[uuid.UUID] | None = None,
    assistant_id: uuid.UUID | None = None,
    action: Literal["interrupt", "rollback"] = "interrupt",
) -> list[str]:
    """Cancel the tenant's runs with ``statuses`` (default: the active ones) of a thread, by id, or of
    an assistant; their ids."""
    params = {
        "tenant": tenant,
        "statuses": statuses or ["pending", "running"],
        "thread": str(thread_id) if thread_id else None,
        "runs": [str(run_id) for run_id in run_ids] if run_ids else None,
        "assistant": assistant_id,
    }
    async with queue.resources.database.pool.connection() as conn:
        rows = await (await conn.execute(ACTIVE_RUNS, params)).fetchall()
    for row in rows:
        await queue.cancel(str(row["run_id"]), action=action)
    return [str(row["run_id"]) for row in rows]


#: An assistant's runs go with it (langgraph-api's runs reference their assistant ON DELETE CASCADE).
DELETE_ASSISTANT_RUNS = """
DELETE FROM runs
WHERE tenant_id = %(tenant)s AND assistant_id = %(assistant)s AND status NOT IN ('pending', 'running')
"""

#: Longest the deletion of an assistant waits for one of its cancelled runs to stop.
CANCELLED_STOP_S = 30.0


async def remove_assistant_runs(queue: RunQueue, tenant: str, assistant_id: uuid.UUID) -> None:
    """Cancel the assistant's active runs, wait for them to stop, and forget all its runs."""
    for run_id in await cancel_active_runs(queue, tenant, assistant_id=assistant_id):
        await queue.wait(run_id, within_s=CANCELLED_STOP_S)
    async with queue.resources.database.pool.connection() as conn:
        await conn.execute(DELETE_ASSISTANT_RUNS, {"tenant": tenant, "assistant": assistant_id})


@router.post("/threads/{thread_id}/runs/{run_id}/cancel")
async def cancel_run(
    thread_id: uuid.UUID,
    run_id: uuid.UUID,
    tenant: TenantDep,
    resources: ResourcesDep,
    queue: QueueDep,
    wait: bool = False,
    action: Literal["interrupt", "rollback"] = "interrupt",
) -> JSONResponse:
    thread, run = await thread_run(thread_id, run_id, tenant, resources, queue)
    # A run that already finished is left as it is (langgraph-api answers 202 to that too).
    await queue.cancel(str(run.run_id), action=action)
    if not wait:
        return JSONResponse(None, status_code=202, headers=location(run))
    finished = await queue.wait(str(run.run_id), within_s=WAIT_LIMIT_S)
    if finished is None:  # rolled back: the run and its work are gone
        return JSONResponse(None, headers=location(run))
    return JSONResponse(await run_output(resources, tenant, thread, finished), headers=location(run, "/join"))


@router.delete("/threads/{thread_id}/runs/{run_id}", status_code=204, response_class=Response)
async def delete_run(
    thread_id: uuid.UUID, run_id: uuid.UUID, tenant: TenantDep, resources: ResourcesDep, queue: QueueDep
) -> Response:
    """Forget a finished run (its events go with it; the thread's state stays)."""
    _, run = await thread_run(thread_id, run_id, tenant, resources, queue)
    if run.status in ("pending", "running"):
        raise HTTPException(409, detail=f"Run {run_id} is {run.status}; cancel it first")
    async with resources.database.pool.connection() as conn:
        await conn.execute(
            "DELETE FROM runs WHERE run_id = %s AND status NOT IN ('pending', 'running')", (str(run_id),)
        )
    return Response(status_code=204)
