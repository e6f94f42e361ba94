"""The console's Systems pages (the tenant's meta-orchestrator requests: phases, artifacts, the gate case by
case, human decisions) and Conversations pages (stage-driven threads: where each stands, and its audit
trail in words). Read-only: requests run through the ``meta`` graph, conversations through the chat."""

from __future__ import annotations

import uuid

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from master_agent.meta.requests import list_meta_requests, meta_request_view
from master_agent.service.console.pages import PAGE_ROWS, not_found, page
from master_agent.service.console.session import CONSOLE_PATH, SessionDep
from master_agent.service.deps import ResourcesDep
from master_agent.workflows.audit import audit_events, conversations

router = APIRouter(prefix=CONSOLE_PATH, include_in_schema=False)

#: Audit events shown on a conversation's page (oldest first).
CONVERSATION_EVENTS = 500


@router.get("/systems")
async def systems_page(request: Request, session: SessionDep, resources: ResourcesDep) -> HTMLResponse:
    requests, total = await list_meta_requests(resources.database.pool, session.tenant_id, PAGE_ROWS)
    return page(request, session, "systems.html", title="Systems", requests=requests, total=total)


@router.get("/systems/{request_id}")
async def system_page(
    request_id: uuid.UUID, request: Request, session: SessionDep, resources: ResourcesDep
) -> HTMLResponse:
    view = await meta_request_view(resources.database.pool, session.tenant_id, request_id)
    if view is None:
        return not_found(request, session, f"request {request_id}")
    failed = sum(1 for case in view.gate if case.passed is False)
    return page(request, session, "system.html", title="System request", view=view, failed=failed)


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
