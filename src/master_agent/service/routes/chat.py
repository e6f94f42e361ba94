"""Chat over SSE: each message is the next user turn of a thread's run."""

from __future__ import annotations

import uuid

from fastapi import APIRouter, Request
from pydantic import BaseModel, ConfigDict, Field
from sse_starlette import EventSourceResponse

from master_agent.runtime.recovery import answers_question
from master_agent.runtime.solve import MAX_GOAL_CHARS
from master_agent.service.deps import QueueDep, ResourcesDep, RunTenantDep
from master_agent.service.limits import StrictJsonRoute
from master_agent.service.routes.runs import RunCreate, enqueue_run, stream_on_new_thread, stream_response
from master_agent.service.routes.threads import existing_thread

router = APIRouter(tags=["chat"], route_class=StrictJsonRoute)


class ChatMessage(BaseModel):
    model_config = ConfigDict(extra="forbid")

    message: str = Field(min_length=1, max_length=MAX_GOAL_CHARS)
    thread_id: uuid.UUID | None = Field(
        default=None, description="Continue this thread; a new one when absent."
    )


@router.post("/chat/stream")
async def chat_stream(
    body: ChatMessage, request: Request, tenant: RunTenantDep, resources: ResourcesDep, queue: QueueDep
) -> EventSourceResponse:
    """Runs the thread with the message as its next user turn and streams the run (the metadata event
    names the thread). Every message goes through the front door, which routes it (an agent, a query,
    the agent builder, a clarifying question or an honest out-of-scope answer); a message to a thread
    waiting for an answer (a clarification, a draft to approve, a human decision) is that answer,
    unless it changes direction ("actually, check my calendar first"): then it starts a new flow and
    the waiting one is suspended, to be resumed ("resume the board meeting") or dropped later."""
    # The agent's loop runs inside the front door's ``solve`` node: its call tree and tokens are nested.
    modes = {
        "assistant_id": "master_agent",
        "stream_mode": ["updates", "custom", "messages"],
        "stream_subgraphs": True,
    }
    message = {"messages": [{"role": "user", "content": body.message}]}
    if body.thread_id is None:
        first = RunCreate.model_validate({**modes, "input": message})
        return await stream_on_new_thread(
            first, {"channel": "chat"}, request, tenant, resources, queue, cancel_on_disconnect=False
        )
    thread = await existing_thread(resources, tenant, body.thread_id)
    waiting = [item.get("value") for items in thread.interrupts.values() for item in items]
    if thread.status == "interrupted" and any(answers_question(q, body.message) for q in waiting):
        run_input: dict[str, object] = {"command": {"resume": body.message}}
    else:
        # A new message while a flow is active (running, or waiting with a message that changes
        # direction) starts a new flow: the front door keeps the one it cut short as suspended.
        run_input = {"input": message, "multitask_strategy": "interrupt"}
    run = await enqueue_run(
        RunCreate.model_validate({**modes, **run_input}), thread, tenant, resources, queue, execute_here=True
    )
    return stream_response(queue, run, request, None, cancel_on_disconnect=False)
