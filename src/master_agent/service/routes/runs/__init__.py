"""LangGraph-compatible runs, one module per kind of work: ``create`` (a run stored on a thread, on a
thread of its own, in a batch), ``join`` (waiting for the output, joining, reading, listing), ``cancel``
(cancelling, forgetting), ``events`` and ``stream`` (a run's events as server-sent events), and
``thread_stream`` (every run of a thread as it runs). ``request`` is the run request they share."""

from fastapi import APIRouter

from master_agent.service.routes.runs import cancel, create, join, stream, thread_stream
from master_agent.service.routes.runs.cancel import cancel_active_runs, remove_assistant_runs
from master_agent.service.routes.runs.create import (
    enqueue_run,
    new_thread_placeholder,
    prepare_run,
    run_on_thread,
    start_stateless_run,
)
from master_agent.service.routes.runs.events import counted, stream_response
from master_agent.service.routes.runs.join import start_stateless_wait
from master_agent.service.routes.runs.request import KEEPALIVE_S, WAIT_LIMIT_S, RunCreate, StreamMode
from master_agent.service.routes.runs.stream import stream_on_new_thread
from master_agent.service.routes.runs.thread_stream import thread_events

router = APIRouter()
for part in (create, join, cancel, stream, thread_stream):
    router.include_router(part.router)

__all__ = [
    "KEEPALIVE_S",
    "WAIT_LIMIT_S",
    "RunCreate",
    "StreamMode",
    "cancel_active_runs",
    "counted",
    "enqueue_run",
    "new_thread_placeholder",
    "prepare_run",
    "remove_assistant_runs",
    "router",
    "run_on_thread",
    "start_stateless_run",
    "start_stateless_wait",
    "stream_on_new_thread",
    "stream_response",
    "thread_events",
]
