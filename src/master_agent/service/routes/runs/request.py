"""The run request as the LangGraph SDKs send it, and what every runs route shares (where a run is read
again, the run of a thread a path names)."""

from __future__ import annotations

import uuid
from typing import Any, Literal

from fastapi import HTTPException
from pydantic import Field

from master_agent.runtime.runs import Run
from master_agent.service.deps import QueueDep, ResourcesDep
from master_agent.service.limits import LangGraphBody, Metadata
from master_agent.service.routes.threads import existing_thread
from master_agent.service.threads import Thread

RunField = Literal[
    "run_id",
    "thread_id",
    "assistant_id",
    "created_at",
    "updated_at",
    "status",
    "metadata",
    "kwargs",
    "multitask_strategy",
]
StreamMode = Literal[
    "values", "updates", "messages", "messages-tuple", "custom", "debug", "tasks", "checkpoints", "events"
]
#: Longest a wait or join holds the request open.
WAIT_LIMIT_S = 600.0
#: A wait's newline and a stream's ping come this often while a run goes on.
KEEPALIVE_S = 10


class RunCreate(LangGraphBody):
    """The run request the langgraph-sdk client sends (fields it may send; others are refused)."""

    assistant_id: str
    input: dict[str, Any] | list[Any] | str | int | float | bool | None = None
    command: dict[str, Any] | None = None
    config: dict[str, Any] | None = None
    context: dict[str, Any] | None = None
    metadata: Metadata | None = None
    stream_mode: StreamMode | list[StreamMode] = "values"
    stream_subgraphs: bool = False
    stream_resumable: bool = False
    multitask_strategy: Literal["reject", "enqueue", "interrupt", "rollback"] | None = None
    if_not_exists: Literal["create", "reject"] | None = None
    on_disconnect: Literal["cancel", "continue"] | None = None
    on_completion: Literal["delete", "keep"] | None = None
    after_seconds: int | None = Field(default=None, ge=0, le=365 * 24 * 3600)
    checkpoint: dict[str, Any] | None = None
    checkpoint_id: str | None = None
    checkpoint_during: bool | None = None
    durability: Literal["sync", "async", "exit"] | None = None
    interrupt_before: list[str] | Literal["*"] | None = None
    interrupt_after: list[str] | Literal["*"] | None = None
    webhook: str | None = None
    feedback_keys: list[str] | None = None
    langsmith_tracer: dict[str, Any] | None = None
    strict_resume: bool | None = None


def location(run: Run, then: str = "") -> dict[str, str]:
    """``Content-Location``: the run; ``Location``: where its result is read again (``then``: ``/join``)."""
    path = f"/threads/{run.thread_id}/runs/{run.run_id}"
    return {"Content-Location": path, **({"Location": path + then} if then else {})}


async def thread_run(
    thread_id: uuid.UUID, run_id: uuid.UUID, tenant: str, resources: ResourcesDep, queue: QueueDep
) -> tuple[Thread, Run]:
    """The thread and the run a path names (404 when the run is not the thread's or the tenant's)."""
    thread = await existing_thread(resources, tenant, thread_id)
    run = await queue.get(str(run_id))
    if run is None or run.thread_id != str(thread_id) or run.tenant_id != tenant:
        raise HTTPException(404, detail=f"Run {run_id} not found")
    return thread, run
