"""The console's pages: server-rendered, tenant-scoped by the signed-in key, every form checked against
forgery. Live parts (the chat, a run's call tree, stream replay) are a little plain JavaScript over the
JSON API mounted again under ``/console/api`` (see ``service.app``), authenticated by the same cookie."""

from __future__ import annotations

import hmac
import uuid
from pathlib import Path
from typing import Annotated, Any

from fastapi import APIRouter, Form, HTTPException, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from fastapi.templating import Jinja2Templates
from pydantic import ValidationError

from master_agent.errors import ConflictError, NotFoundError, RateLimitedError
from master_agent.evolution import playbooks
from master_agent.evolution.calibration import load_reliability
from master_agent.evolution.learning import list_learnings
from master_agent.evolution.outcomes import list_checks
from master_agent.service.console import present
from master_agent.service.console.charts import outcome_chart, reliability_chart
from master_agent.service.console.failures import failure_sites
from master_agent.service.console.session import (
    CONSOLE_PATH,
    SIGN_IN_COOKIE,
    ConsoleSession,
    SessionDep,
    checked_form,
    safe_next,
)
from master_agent.service.console_sessions import end_session, start_session
from master_agent.service.deps import CONSOLE_COOKIE, QueueDep, ResourcesDep, ServiceDep, count_request
from master_agent.service.routes.goals import StrategicGoalCreate, start_goal
from master_agent.service.solutions import (
    StrategicGoalPublic,
    get_solution,
    goals_of_threads,
    list_solutions,
    outcome_summaries,
)
from master_agent.service.state import ServiceState
from master_agent.service.threads import get_thread, search_threads
from master_agent.storage.rate_limits import Hit, check_not_exceeded, count_hits

HERE = Path(__file__).resolve().parent
templates = Jinja2Templates(directory=HERE / "templates")


templates.env.filters.update(present.FILTERS)
router = APIRouter(prefix=CONSOLE_PATH, include_in_schema=False)

#: Rows on a list page.
PAGE_ROWS = 50
#: Solutions whose outcome checks the outcomes page lists.
OUTCOME_SOLUTIONS = 200


#: Every console page: its own scripts and styles only (no inline script runs: the charts' data are
#: inert JSON blocks), never framed by another site, forms posted back to it only.
PAGE_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; script-src 'self'; style-src 'self'; "
    "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
}


def page(
    request: Request, session: ConsoleSession | None, name: str, status_code: int = 200, **context: Any
) -> HTMLResponse:
    currency = request.app.state.service.resources.settings.currency
    return templates.TemplateResponse(
        request,
        name,
        {"session": session, "currency": currency, **context},
        status_code=status_code,
        headers=PAGE_HEADERS,
    )


def not_found(request: Request, session: ConsoleSession, what: str) -> HTMLResponse:
    """Another tenant's object and a missing one look the same: nothing says which it was."""
    return page(request, session, "error.html", 404, title="Not found", message=f"No {what} for this tenant.")


@router.get("")
async def home() -> RedirectResponse:
    return RedirectResponse(f"{CONSOLE_PATH}/chat", status_code=303)


@router.get("/sign-in")
async def sign_in_page(request: Request, next: str | None = None) -> HTMLResponse:
    token = request.cookies.get(SIGN_IN_COOKIE) or uuid.uuid4().hex
    response = page(request, None, "sign_in.html", sign_in_token=token, next=safe_next(next))
    _set_cookie(request, response, SIGN_IN_COOKIE, token, max_age=3600)
    return response


@router.post("/sign-in")
async def sign_in(
    request: Request,
    service: ServiceDep,
    api_key: Annotated[str, Form(max_length=200)] = "",
    sign_in_token: Annotated[str, Form(max_length=64)] = "",
    next: Annotated[str, Form(max_length=2000)] = "",
) -> Response:
    expected = request.cookies.get(SIGN_IN_COOKIE, "")
    if not expected or not hmac.compare_digest(sign_in_token.encode(), expected.encode()):
        raise HTTPException(403, detail="sign_in_token: reload the sign-in page and try again")
    key = api_key.strip()
    lifetime_s = service.resources.settings.console_session_s
    subjects = sign_in_subjects(request, key)
    try:
        # Checked before the key: once the failures are used up, a right key is refused too, so
        # guessing on stops paying off until the window ends.
        await check_not_exceeded(
            service.resources.database.pool, service.quotas.sign_in_failures, subjects, SIGN_IN_SUBJECTS
        )
        started = await start_session(service.resources.database.pool, key, lifetime_s) if key else None
        if started is None:
            await _count_failure(service, subjects)
            response: Response = page(
                request,
                None,
                "sign_in.html",
                401,
                sign_in_token=expected,
                next=safe_next(next),
                error="api_key: not a valid API key (or it was revoked)",
            )
            return response
    except RateLimitedError as refused:
        response = page(
            request,
            None,
            "sign_in.html",
            429,
            sign_in_token=expected,
            next=safe_next(next),
            error=str(refused),
        )
        response.headers["Retry-After"] = str(refused.retry_after_s)
        return response
    response = RedirectResponse(safe_next(next), status_code=303)
    _set_cookie(request, response, CONSOLE_COOKIE, started.session_id, max_age=lifetime_s)
    response.delete_cookie(SIGN_IN_COOKIE, path=CONSOLE_PATH)
    return response


#: What the sign-in failures are counted by, as the refusal names it.
SIGN_IN_SUBJECTS = "client address or key prefix"
#: The characters of a key counted as its prefix: what ``master-agent keys list`` shows of it.
KEY_PREFIX_CHARS = 10


def sign_in_subjects(request: Request, key: str) -> list[str]:
    """Who a sign-in's failures count against: the client's address (one source guessing many keys)
    and the key's prefix (many sources guessing one key)."""
    subjects = [f"address:{request.client.host if request.client else 'unknown'}"]
    if key:
        subjects.append(f"key:{key[:KEY_PREFIX_CHARS]}")
    return subjects


async def _count_failure(service: ServiceState, subjects: list[str]) -> None:
    quota = service.quotas.sign_in_failures
    await count_hits(
        service.resources.database.pool, [Hit(quota, subject) for subject in subjects], SIGN_IN_SUBJECTS
    )


@router.post("/sign-out")
async def sign_out(request: Request, session: SessionDep, service: ServiceDep) -> RedirectResponse:
    await checked_form(request, session)
    if session.signed_in:
        # Server-side first: a copy of the cookie kept elsewhere must stop working too.
        await end_session(service.resources.database.pool, session.tenant_id, request.cookies[CONSOLE_COOKIE])
    response = RedirectResponse(f"{CONSOLE_PATH}/sign-in", status_code=303)
    response.delete_cookie(CONSOLE_COOKIE, path=CONSOLE_PATH)
    return response


def _set_cookie(request: Request, response: Response, name: str, value: str, *, max_age: int) -> None:
    response.set_cookie(
        name,
        value,
        max_age=max_age,
        path=CONSOLE_PATH,
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
    )


@router.get("/chat")
async def chat_page(
    request: Request, session: SessionDep, resources: ResourcesDep, thread: uuid.UUID | None = None
) -> HTMLResponse:
    if thread is not None and await get_thread(resources.database.pool, session.tenant_id, thread) is None:
        return not_found(request, session, f"thread {thread}")
    return page(request, session, "chat.html", title="Chat", thread_id=str(thread) if thread else "")


@router.get("/goals")
async def goals_page(
    request: Request, session: SessionDep, resources: ResourcesDep, offset: Annotated[int, Query(ge=0)] = 0
) -> HTMLResponse:
    goals = await list_solutions(resources.database.pool, session.tenant_id, PAGE_ROWS, offset)
    return page(request, session, "goals.html", title="Goals", goals=goals, form={}, error=None)


@router.post("/goals")
async def create_goal(
    request: Request, session: SessionDep, service: ServiceDep, resources: ResourcesDep, queue: QueueDep
) -> Response:
    form = await checked_form(request, session)
    fields = {
        "goal": str(form.get("goal") or "").strip(),
        "timeline_days": form.get("timeline_days") or None,
        "complexity": form.get("complexity") or None,
        "deploy_playbook": form.get("deploy_playbook") == "on",
    }
    try:
        body = StrategicGoalCreate.model_validate(fields)
    except ValidationError as error:
        first = error.errors()[0]
        field = ".".join(str(part) for part in first["loc"]) or "goal"
        goals = await list_solutions(resources.database.pool, session.tenant_id, PAGE_ROWS, 0)
        return page(
            request,
            session,
            "goals.html",
            422,
            title="Goals",
            goals=goals,
            form=fields,
            error=f"{field}: {first['msg']}",
        )
    try:
        await count_request(service, session.tenant_id, runs=1)
    except RateLimitedError as refused:
        goals = await list_solutions(resources.database.pool, session.tenant_id, PAGE_ROWS, 0)
        response = page(
            request, session, "goals.html", 429, title="Goals", goals=goals, form=fields, error=str(refused)
        )
        response.headers["Retry-After"] = str(refused.retry_after_s)
        return response
    accepted = await start_goal(body, session.tenant_id, resources, queue)
    return RedirectResponse(f"{CONSOLE_PATH}/goals/{accepted.solution_id}", status_code=303)


@router.get("/goals/{solution_id}")
async def goal_page(
    solution_id: uuid.UUID, request: Request, session: SessionDep, resources: ResourcesDep, queue: QueueDep
) -> HTMLResponse:
    goal = await get_solution(resources.database.pool, session.tenant_id, solution_id)
    if goal is None:
        return not_found(request, session, f"goal {solution_id}")
    runs = await queue.list_for_thread(goal.thread_id, limit=1, offset=0, status=None)
    thread = await get_thread(resources.database.pool, session.tenant_id, uuid.UUID(goal.thread_id))
    return page(
        request,
        session,
        "goal.html",
        title="Goal",
        goal=goal,
        solution=goal.solution.model_dump() if goal.solution else None,
        run=runs[0] if runs else None,
        interrupts=_questions(thread.interrupts if thread else {}),
    )


@router.get("/outcomes")
async def outcomes_page(request: Request, session: SessionDep, resources: ResourcesDep) -> HTMLResponse:
    rows = await outcome_summaries(resources.database.pool, session.tenant_id, OUTCOME_SOLUTIONS)
    return page(request, session, "outcomes.html", title="Outcomes", rows=rows)


@router.get("/outcomes/{solution_id}")
async def outcome_page(
    solution_id: uuid.UUID, request: Request, session: SessionDep, resources: ResourcesDep
) -> HTMLResponse:
    goal = await get_solution(resources.database.pool, session.tenant_id, solution_id)
    if goal is None:
        return not_found(request, session, f"solution {solution_id}")
    checks = await list_checks(resources.evolution, session.tenant_id, str(solution_id))
    learnings = await list_learnings(resources.evolution, session.tenant_id, solution_id=str(solution_id))
    expected = (goal.solution.expected_outcome if goal.solution else None) or {}
    return page(
        request,
        session,
        "outcome.html",
        title="Outcome",
        goal=goal,
        checks=checks,
        expected=expected,
        chart=outcome_chart(expected, checks, resources.settings.currency),
        learning=learnings[0] if learnings else None,
    )


@router.get("/playbooks")
async def playbooks_page(request: Request, session: SessionDep, resources: ResourcesDep) -> HTMLResponse:
    found = await playbooks.list_playbooks(resources.evolution, session.tenant_id, limit=PAGE_ROWS)
    return page(request, session, "playbooks.html", title="Playbooks", playbooks=found)


@router.get("/playbooks/{playbook_id}")
async def playbook_page(
    playbook_id: uuid.UUID, request: Request, session: SessionDep, resources: ResourcesDep
) -> HTMLResponse:
    return await _playbook_page(request, session, resources, playbook_id)


async def _playbook_page(
    request: Request,
    session: ConsoleSession,
    resources: Any,
    playbook_id: uuid.UUID,
    *,
    status_code: int = 200,
    notice: str | None = None,
    error: str | None = None,
) -> HTMLResponse:
    found = await playbooks.get_playbook(resources.evolution, session.tenant_id, playbook_id)
    if found is None:
        return not_found(request, session, f"playbook {playbook_id}")
    history = await playbooks.playbook_history(resources.evolution, playbook_id)
    versions = []
    if found.solution_id is not None:
        siblings = await playbooks.list_playbooks(resources.evolution, session.tenant_id, limit=100)
        versions = [p for p in siblings if p.solution_id == found.solution_id]
    return page(
        request,
        session,
        "playbook.html",
        status_code,
        title="Playbook",
        playbook=found,
        runs=history["runs"],
        events=history["events"],
        versions=versions or [found],
        notice=notice,
        error=error,
    )


@router.post("/playbooks/{playbook_id}/{action}")
async def change_playbook(
    playbook_id: uuid.UUID, action: str, request: Request, session: SessionDep, resources: ResourcesDep
) -> Response:
    form = await checked_form(request, session)
    if action not in ("disable", "rollback"):
        return not_found(request, session, f"action {action!r}")
    reason = str(form.get("reason") or "").strip()
    if not reason:
        return await _playbook_page(
            request, session, resources, playbook_id, status_code=422, error="reason: say why"
        )
    try:
        await playbooks.change_status(
            resources.evolution,
            session.tenant_id,
            playbook_id,
            "disable" if action == "disable" else "rollback",
            reason[:2000],
        )
    except NotFoundError:
        return not_found(request, session, f"playbook {playbook_id}")
    except ConflictError as error:
        return await _playbook_page(
            request, session, resources, playbook_id, status_code=409, error=str(error)
        )
    return RedirectResponse(f"{CONSOLE_PATH}/playbooks/{playbook_id}", status_code=303)


@router.get("/knowledge")
async def knowledge_page(request: Request, session: SessionDep, resources: ResourcesDep) -> HTMLResponse:
    patterns = await resources.evolution.knowledge.list_patterns(session.tenant_id, limit=PAGE_ROWS)
    reliability = await load_reliability(resources.database.pool, session.tenant_id)
    return page(
        request,
        session,
        "knowledge.html",
        title="Knowledge and calibration",
        patterns=patterns,
        reliability=reliability,
        chart=reliability_chart(reliability),
    )


@router.get("/threads")
async def threads_page(
    request: Request, session: SessionDep, resources: ResourcesDep, offset: Annotated[int, Query(ge=0)] = 0
) -> HTMLResponse:
    threads, total = await search_threads(
        resources.database.pool,
        session.tenant_id,
        metadata={},
        status=None,
        limit=PAGE_ROWS,
        offset=offset,
        sort_by="updated_at",
        sort_order="desc",
    )
    goals = await goals_of_threads(
        resources.database.pool, session.tenant_id, [str(thread.thread_id) for thread in threads]
    )
    rows = [
        {
            "thread": thread,
            "title": thread_title(thread, goals.get(str(thread.thread_id))),
            "kind": thread_kind(thread, goals.get(str(thread.thread_id))),
        }
        for thread in threads
    ]
    return page(request, session, "threads.html", title="Runs and threads", threads=rows, total=total)


@router.get("/threads/{thread_id}")
async def thread_page(
    thread_id: uuid.UUID, request: Request, session: SessionDep, resources: ResourcesDep, queue: QueueDep
) -> HTMLResponse:
    thread = await get_thread(resources.database.pool, session.tenant_id, thread_id)
    if thread is None:
        return not_found(request, session, f"thread {thread_id}")
    runs = await queue.list_for_thread(str(thread_id), limit=PAGE_ROWS, offset=0, status=None)
    values = thread.values if isinstance(thread.values, dict) else {}
    goal = (await goals_of_threads(resources.database.pool, session.tenant_id, [str(thread_id)])).get(
        str(thread_id)
    )
    solution = _thread_solution(values)
    if solution is None and goal is not None and goal.solution is not None:
        solution = goal.solution.model_dump()  # a goal solved outside the chat keeps its answer on the goal
    failures = await failure_sites(resources, queue.events, session.tenant_id, runs)
    return page(
        request,
        session,
        "thread.html",
        title="Thread",
        title_text=thread_title(thread, goal),
        kind=thread_kind(thread, goal),
        thread=thread,
        goal=goal,
        runs=runs,
        failures=failures,
        values=values,
        solution=solution,
        interrupts=_questions(thread.interrupts),
    )


#: What a thread's last reply was, in words (the front door's reply kinds).
REPLY_KINDS = {
    "query": "data question",
    "agent": "goal",
    "builder": "agent builder",
    "meta": "agent system",
    "out_of_scope": "out of scope",
}
#: Longest thread title shown.
TITLE_CHARS = 90


def _mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def thread_title(thread: Any, goal: StrategicGoalPublic | None = None) -> str:
    """What a thread is about: its goal or system request, else its first message, else its short id."""
    values = thread.values if isinstance(thread.values, dict) else {}
    said = goal.goal if goal is not None else values.get("goal")
    if not isinstance(said, str) or not said.strip():  # a system request's text
        said = _mapping(values.get("request")).get("text")
    if not isinstance(said, str) or not said.strip():
        said = next(
            (
                message.get("content")
                for message in values.get("messages") or []
                if isinstance(message, dict)
                and message.get("type") == "human"
                and isinstance(message.get("content"), str)
            ),
            None,
        )
    if isinstance(said, str) and said.strip():
        text = " ".join(said.split())
        return text if len(text) <= TITLE_CHARS else text[: TITLE_CHARS - 1] + "…"
    return f"Thread {present.short_id(thread.thread_id)}"


def thread_kind(thread: Any, goal: StrategicGoalPublic | None = None) -> str:
    """How the thread came in (chat, a goal, a graph) and what its last reply was."""
    values = thread.values if isinstance(thread.values, dict) else {}
    metadata = thread.metadata if isinstance(thread.metadata, dict) else {}
    reply = _mapping(values.get("reply"))
    parts = [str(metadata.get("channel") or "")]
    if reply.get("kind"):
        parts.append(REPLY_KINDS.get(str(reply["kind"]), str(reply["kind"]).replace("_", " ")))
    elif goal is not None or isinstance(values.get("solution"), dict) or values.get("goal"):
        parts.append("goal")
    elif metadata.get("graph_id"):
        parts.append(str(metadata["graph_id"]).replace("_", " "))
    return " · ".join(part for part in parts if part) or "—"


@router.get("/threads/{thread_id}/transcript")
async def thread_transcript(
    thread_id: uuid.UUID, request: Request, session: SessionDep, resources: ResourcesDep
) -> HTMLResponse:
    """The conversation's messages as HTML list items, for the chat page's script to put in place."""
    thread = await get_thread(resources.database.pool, session.tenant_id, thread_id)
    if thread is None:
        return not_found(request, session, f"thread {thread_id}")
    values = thread.values if isinstance(thread.values, dict) else {}
    return page(
        request,
        session,
        "transcript.html",
        values=values,
        solution=_thread_solution(values),
        messages=transcript(values),
    )


def transcript(values: dict[str, Any]) -> list[dict[str, Any]]:
    """The human and AI messages of a thread (tool calls left out); the one that gave the thread's last
    answer is marked ``rich``: the page renders that answer from its data instead of its text."""
    shown = [
        {"type": message["type"], "content": message["content"], "rich": False}
        for message in values.get("messages") or []
        if isinstance(message, dict)
        and message.get("type") in ("human", "ai")
        and isinstance(message.get("content"), str)
        and message["content"]
        and not message.get("tool_calls")
    ]
    reply = _mapping(values.get("reply"))
    answered = [item for item in shown if item["type"] == "ai"]
    if (
        answered
        and reply.get("text")
        and (isinstance(values.get("solution"), dict) or reply.get("kind") == "query")
    ):
        last = answered[-1]
        first_line = str(reply["text"]).splitlines()[0]
        last["rich"] = bool(last["content"].splitlines()) and last["content"].splitlines()[0] == first_line
    return shown


@router.post("/threads/{thread_id}/runs/{run_id}/cancel")
async def cancel_run(
    thread_id: uuid.UUID,
    run_id: uuid.UUID,
    request: Request,
    session: SessionDep,
    resources: ResourcesDep,
    queue: QueueDep,
) -> Response:
    await checked_form(request, session)
    thread = await get_thread(resources.database.pool, session.tenant_id, thread_id)
    run = await queue.get(str(run_id)) if thread is not None else None
    if thread is None or run is None or run.thread_id != str(thread_id):
        return not_found(request, session, f"run {run_id}")
    await queue.cancel(str(run_id))
    return RedirectResponse(f"{CONSOLE_PATH}/threads/{thread_id}", status_code=303)


def _questions(interrupts: dict[str, list[dict[str, Any]]]) -> list[dict[str, Any]]:
    return [
        item["value"]
        for items in interrupts.values()
        for item in items
        if isinstance(item, dict) and isinstance(item.get("value"), dict)
    ]


def _thread_solution(values: dict[str, Any]) -> dict[str, Any] | None:
    """A chat thread's answer in the shape of a goal's solution (its parts, step tree, termination)."""
    solution = values.get("solution")
    if not isinstance(solution, dict):
        return None
    shaped = dict(solution)
    envelope = _mapping(values.get("envelope"))
    # The answer's own status, confidence and checks live on the envelope the front door returned.
    for key in ("status", "confidence", "confidence_band", "verification", "handoff", "limitations"):
        if shaped.get(key) is None and envelope.get(key) is not None:
            shaped[key] = envelope[key]
    shaped.setdefault("steps", values.get("steps") or [])
    shaped.setdefault("termination", values.get("termination") or {})
    if values.get("reused_pattern"):
        shaped.setdefault("reused_pattern", values["reused_pattern"])
    return shaped
