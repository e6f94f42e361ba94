"""The console's Systems pages (the tenant's meta-orchestrator requests: phases, artifacts, the gate case by
case, human decisions, and the human gate's question answered: approve or reject with a note) and
Conversations pages (stage-driven threads: where each stands, and its audit trail in words, read-only).

A decision at the human gate is a run of the ``meta`` graph on the request's thread resuming it
(``command.resume``), stored and checked by the runs API's own path (``run_on_thread``): the gate's
answer is validated as the graph validates it, and the graph records it in the request's history."""

from __future__ import annotations

import uuid
from typing import Any

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from master_agent.errors import InputError, RateLimitedError
from master_agent.meta.graph.human import parse_human_answer
from master_agent.meta.requests import MetaRequestView, list_meta_requests, meta_request_view
from master_agent.runtime.graphs import graph_id_of
from master_agent.service.console.pages import PAGE_ROWS, not_found, page
from master_agent.service.console.session import CONSOLE_PATH, ConsoleSession, SessionDep, checked_form
from master_agent.service.deps import QueueDep, ResourcesDep, ServiceDep, count_request
from master_agent.service.routes.runs.create import run_on_thread
from master_agent.service.routes.runs.request import RunCreate
from master_agent.service.threads import get_thread
from master_agent.workflows.audit import audit_events, conversations

router = APIRouter(prefix=CONSOLE_PATH, include_in_schema=False)

#: Audit events shown on a conversation's page (oldest first).
CONVERSATION_EVENTS = 500


@router.get("/systems")
async def systems_page(request: Request, session: SessionDep, resources: ResourcesDep) -> HTMLResponse:
    requests, total = await list_meta_requests(resources.database.pool, session.tenant_id, PAGE_ROWS)
    return page(request, session, "systems.html", title="Systems", requests=requests, total=total)


#: The human gate's answers the console offers (the others stay with the API and the CLI).
CONSOLE_ANSWERS = ("approve", "reject")
#: Longest note kept with a decision.
NOTE_CHARS = 2000
#: The phase the meta graph records the human gate's answers under.
HUMAN_GATE = "gate_human"


async def gate_question(resources: Any, tenant_id: str, view: MetaRequestView) -> dict[str, Any] | None:
    """What the request's human gate asks, when its thread waits there now (None: nothing waits)."""
    waiting = await _waiting_gate(resources, tenant_id, view)
    return waiting[0] if waiting is not None else None


async def _waiting_gate(
    resources: Any, tenant_id: str, view: MetaRequestView
) -> tuple[dict[str, Any], str] | None:
    """The question the request's gate asks on its thread, and the graph that thread runs (its answer
    resumes that graph); None when no gate of this request waits there (a request the chat started runs
    autonomously)."""
    thread_id = view.request.thread_id
    try:
        key = uuid.UUID(thread_id or "")
    except ValueError:
        return None
    thread = await get_thread(resources.database.pool, tenant_id, key)
    if thread is None or thread.status != "interrupted":
        return None
    for items in thread.interrupts.values():
        for item in items:
            value = item.get("value") if isinstance(item, dict) else None
            if (
                isinstance(value, dict)
                and value.get("kind") == "meta_review"
                and value.get("request_id") == str(view.request.request_id)
            ):
                return value, graph_id_of(thread.config)
    return None


def human_decisions(view: MetaRequestView) -> list[dict[str, Any]]:
    """The answers people gave at the request's human gate (auto-approvals left out), oldest first."""
    return [
        {"decision": entry.decision, "note": entry.outcome, "at": entry.at}
        for entry in view.phases
        if entry.phase == HUMAN_GATE and entry.decision != "auto-approved"
    ]


async def _system_page(
    request: Request,
    session: ConsoleSession,
    resources: Any,
    request_id: uuid.UUID,
    *,
    status_code: int = 200,
    error: str | None = None,
    note: str = "",
) -> HTMLResponse:
    view = await meta_request_view(resources.database.pool, session.tenant_id, request_id)
    if view is None:
        return not_found(request, session, f"request {request_id}")
    failed = sum(1 for case in view.gate if case.passed is False)
    return page(
        request,
        session,
        "system.html",
        status_code,
        title="System request",
        view=view,
        failed=failed,
        question=await gate_question(resources, session.tenant_id, view),
        human=human_decisions(view),
        answers=CONSOLE_ANSWERS,
        error=error,
        note=note,
    )


@router.get("/systems/{request_id}")
async def system_page(
    request_id: uuid.UUID, request: Request, session: SessionDep, resources: ResourcesDep
) -> HTMLResponse:
    return await _system_page(request, session, resources, request_id)


@router.post("/systems/{request_id}/decision")
async def decide_at_the_gate(
    request_id: uuid.UUID,
    request: Request,
    session: SessionDep,
    service: ServiceDep,
    resources: ResourcesDep,
    queue: QueueDep,
) -> Response:
    """Approve or reject, with a note, what the request's human gate asks: a run of the ``meta`` graph
    resuming its thread, through the runs API's own path."""
    form = await checked_form(request, session)
    view = await meta_request_view(resources.database.pool, session.tenant_id, request_id)
    if view is None:
        return not_found(request, session, f"request {request_id}")
    action = str(form.get("action") or "")
    note = str(form.get("note") or "").strip()

    async def refused(status_code: int, error: str) -> HTMLResponse:
        return await _system_page(
            request, session, resources, request_id, status_code=status_code, error=error, note=note
        )

    if action not in CONSOLE_ANSWERS:
        return await refused(422, f"action: choose {' or '.join(CONSOLE_ANSWERS)}")
    if len(note) > NOTE_CHARS:
        return await refused(422, f"note: at most {NOTE_CHARS} characters")
    if action == "reject" and not note:
        return await refused(422, "note: say what to change (it goes back to the architect)")
    waiting = await _waiting_gate(resources, session.tenant_id, view)
    if waiting is None:
        return await refused(409, "action: the request is not waiting at its human gate (decided already?)")
    try:
        answer = parse_human_answer({"action": action, "feedback": note or None})
        await count_request(service, session.tenant_id, runs=1)
        await run_on_thread(
            uuid.UUID(str(view.request.thread_id)),
            RunCreate(assistant_id=waiting[1], command={"resume": answer.model_dump(exclude_none=True)}),
            session.tenant_id,
            resources,
            queue,
        )
    except InputError as invalid:
        return await refused(422, str(invalid))
    except RateLimitedError as limited:
        response = await refused(429, str(limited))
        response.headers["Retry-After"] = str(limited.retry_after_s)
        return response
    except HTTPException as rejected:  # the runs API's refusals (e.g. the thread stopped waiting meanwhile)
        return await refused(rejected.status_code, str(rejected.detail))
    return RedirectResponse(f"{CONSOLE_PATH}/systems/{request_id}", status_code=303)


@router.get("/conversations")
async def conversations_page(request: Request, session: SessionDep, resources: ResourcesDep) -> HTMLResponse:
    found, total = await conversations(resources.database.pool, session.tenant_id, PAGE_ROWS)
    return page(
        request, session, "conversations.html", title="Conversations", conversations=found, total=total
    )


@router.get("/conversations/{thread_id}")
async def conversation_page(
    thread_id: uuid.UUID, request: Request, session: SessionDep, resources: ResourcesDep
) -> HTMLResponse:
    events = await audit_events(
        resources.database.pool, session.tenant_id, thread_id=str(thread_id), limit=CONVERSATION_EVENTS
    )
    if not events:
        return not_found(request, session, f"conversation {thread_id}")
    stages = [event.stage for event in events if event.stage]
    return page(
        request,
        session,
        "conversation.html",
        title="Conversation",
        thread_id=str(thread_id),
        workflow=events[0].workflow,
        stage=stages[-1] if stages else None,
        events=events,
        shown_all=len(events) < CONVERSATION_EVENTS,
    )
