"""The web console end to end: a real service on a socket, a real headless Chromium driven by Playwright.
Sign in, chat a goal and watch the call tree grow, answer clarifications (typed and as buttons), open the
solution, set a goal with the keyboard, run the self-evolution loop and read the outcome chart's points,
disable a playbook, replay and cancel runs, and see another tenant's objects refused. Every page is
checked for unlabelled controls and saved as a screenshot (``test-artifacts/console``)."""

from __future__ import annotations

import hashlib
import io
import re
import uuid
from collections.abc import AsyncIterator
from typing import Any, Literal

import httpx
import pytest
from playwright.async_api import Browser, BrowserContext, Page, expect
from psycopg import sql
from rich.console import Console

from master_agent.capabilities.assistants import resolve_assistant
from master_agent.cli_evolution import FIRST_GOAL, demo_loop
from master_agent.domains.assistant import DEMO_TENANT as ASSISTANT_TENANT
from master_agent.domains.assistant.local_servers import LocalServers
from master_agent.domains.lending import DEMO_TENANT as LENDING_TENANT
from master_agent.evolution.calibration import reliability_bins
from master_agent.evolution.knowledge import tenant_session
from master_agent.evolution.outcomes import OutcomeCheck
from master_agent.meta.artifacts import EvalSpec, ExperimentReport
from master_agent.meta.requests import gate_cases
from master_agent.runtime import RuntimeResources
from master_agent.runtime.graphs import graph_for, graph_ids
from master_agent.runtime.run_events import RunEvent
from master_agent.service.auth import create_key, revoke_key
from master_agent.service.console.charts import outcome_chart
from master_agent.service.console.failures import joined, open_calls
from master_agent.service.console.present import artifact_gist, audit_sentence, figure
from master_agent.service.routes.assistants import assistant_graph_config
from master_agent.service.solutions import list_solutions
from tests import unbuildable_graph
from tests.browser import launch, layout_problems, snap, unlabelled_controls
from tests.conftest import server_settings
from tests.failing_graph import FAILURE
from tests.live_server import LiveServer, chat, sdk, tenant_clients, two_tenant_keys
from tests.test_meta_units import TRIAGE

keys = two_tenant_keys


@pytest.fixture(scope="module")
async def live(pg_server_uri: str, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[LiveServer]:
    settings = server_settings(
        pg_server_uri,
        tmp_path_factory,
        "console",
        graphs=("failing=tests.failing_graph:make_graph", "unbuildable=tests.unbuildable_graph:make_graph"),
    )
    async with LiveServer(settings) as server:
        yield server
    LocalServers(settings.data_dir).stop()  # the assistant tenant's mail, calendar and contacts servers


#: Long enough for a full strategic solve on a loaded 2-core machine.
RUN_TIMEOUT_MS = 240_000
GOAL = "Increase Store 5's accessory attach rate by 20% within 60 days"


@pytest.fixture(scope="module")
async def browser() -> AsyncIterator[Browser]:
    async with launch() as launched:
        yield launched


@pytest.fixture(scope="module")
async def demo_world(live: LiveServer) -> dict[str, Any]:
    """``master-agent demo loop`` on the service's database: a solved goal, its playbook deployed, the
    world simulated, every checkpoint measured, a pattern learned and reused."""
    resources: RuntimeResources = live.server.config.app.state.service.resources
    assert await demo_loop(resources.settings, Console(file=io.StringIO(), width=120)) == 0
    page = await list_solutions(resources.database.pool, "demo-retail", 100, 0)
    # (The same goal said in the chat is a solution too, with no playbook deployed.)
    [goal] = [
        item
        for item in page.items
        if item.goal == FIRST_GOAL and item.solution is not None and item.solution.deployed_playbook
    ]
    assert goal.solution is not None and goal.solution.deployed_playbook is not None
    return {
        "solution_id": str(goal.solution_id),
        "thread_id": goal.thread_id,
        "playbook_id": str(goal.solution.deployed_playbook["playbook_id"]),
        "checks": len(goal.solution.outcome_checks),
    }


@pytest.fixture(scope="module")
async def built_and_conversed(live: LiveServer, keys: dict[str, str]) -> dict[str, Any]:
    """A system the meta-orchestrator built for the demo tenant (a run of the ``meta`` graph), and a loan
    conversation of the lending tenant two messages in, as their users start them."""
    client = sdk(live, keys["demo-retail"])
    thread = await client.threads.create()
    built: dict[str, Any] = await client.runs.wait(  # type: ignore[assignment]
        thread["thread_id"], "meta", input={"request": {"text": TRIAGE, "name": "console_ticket_triage"}}
    )
    async with tenant_clients(live, {"lending": LENDING_TENANT}) as made:
        first = await chat(made["lending"], "Hi, I'd like a personal loan. My mobile is 9000000006")
        last = await chat(made["lending"], "6 lakh for 48 months", first["thread_id"])
        audit = (await made["lending"].get("/audit", params={"thread_id": first["thread_id"]})).json()
    return {
        "request_id": built["result"]["request_id"],
        "meta_thread": thread["thread_id"],
        "loan_thread": first["thread_id"],
        "loan_stage": last["values"]["current_stage"],
        "loan_events": len(audit),
    }


@pytest.fixture(scope="module")
async def failed_run(live: LiveServer, keys: dict[str, str]) -> dict[str, str]:
    """A run of the ``failing`` graph, which raises two subgraphs down (``tests/failing_graph.py``)."""
    async with httpx.AsyncClient(base_url=live.url, headers={"X-API-Key": keys["demo-retail"]}) as client:
        thread_id = (await client.post("/threads", json={})).json()["thread_id"]
        waited = await client.post(
            f"/threads/{thread_id}/runs/wait", json={"assistant_id": "failing", "input": {"store": 99}}
        )
        assert waited.status_code == 200, waited.text
        [run] = (await client.get(f"/threads/{thread_id}/runs")).json()
    assert run["status"] == "error"
    return {"thread_id": thread_id, "run_id": run["run_id"]}


def page_errors(page: Page) -> list[str]:
    """Script errors and refused resources (the content security policy's refusals among them)."""
    found: list[str] = getattr(page, "_console_errors", [])
    return found


def watch_errors(page: Page) -> Page:
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
    page._console_errors = errors  # type: ignore[attr-defined]
    return page


async def sign_in(browser: Browser, live: LiveServer, key: str) -> tuple[BrowserContext, Page]:
    context = await browser.new_context(viewport={"width": 1280, "height": 900})
    page = watch_errors(await context.new_page())
    await page.goto(f"{live.url}/console/sign-in")
    await page.get_by_label("API key").fill(key)
    await page.get_by_role("button", name="Sign in").click()
    await page.wait_for_url(re.compile(r"/console/chat"))
    return context, page


async def accessible(page: Page) -> None:
    assert await unlabelled_controls(page) == []
    assert page_errors(page) == []


async def tab_to(page: Page, selector: str, presses: int = 30) -> None:
    """Move the focus with the Tab key only until ``selector`` has it."""
    for _ in range(presses):
        await page.keyboard.press("Tab")
        if await page.evaluate(f"document.activeElement.matches({selector!r})"):
            return
    raise AssertionError(f"Tab never reached {selector}")


WATCH_TREE = """() => {
  window.treeCounts = [];
  const tree = document.querySelector('[data-call-tree]');
  const chat = document.querySelector('[data-chat]');
  new MutationObserver(() => window.treeCounts.push([tree.querySelectorAll('li').length, chat.dataset.state]))
    .observe(tree, {childList: true, subtree: true});
}"""


async def run_and_watch(page: Page, send: Any) -> list[int]:
    """Send a message (``send()``), wait for the run to end; the call tree's sizes while it ran."""
    await page.evaluate(WATCH_TREE)
    await send()
    await expect(page.locator("[data-chat]")).to_have_attribute("data-state", "idle", timeout=RUN_TIMEOUT_MS)
    counts: list[list[Any]] = await page.evaluate("window.treeCounts")
    return [count for count, state in counts if state == "running"]


async def test_sign_in_keeps_the_key_in_a_strict_http_only_cookie(
    live: LiveServer, keys: dict[str, str], browser: Browser
) -> None:
    context = await browser.new_context()
    page = watch_errors(await context.new_page())
    await page.goto(f"{live.url}/console/goals")
    assert "/console/sign-in" in page.url
    await accessible(page)
    await snap(page, "sign-in")
    await page.get_by_label("API key").fill("ma_not-a-key")
    await page.keyboard.press("Enter")
    await expect(page.get_by_role("alert")).to_contain_text("api_key")
    await page.get_by_label("API key").fill(keys["demo-retail"])
    await page.get_by_role("button", name="Sign in").click()
    await page.wait_for_url(re.compile(r"/console/goals$"))  # back where the sign-in began
    await expect(page.get_by_test_id("tenant")).to_have_text("demo-retail")
    [cookie] = [c for c in await context.cookies() if c["name"] == "ma_console_session"]
    assert cookie["httpOnly"] and cookie["sameSite"] == "Strict" and cookie["path"] == "/console"
    assert "ma_console_session" not in await page.evaluate("document.cookie")
    # The cookie is an opaque session id: no cookie of the console carries the key, whole or in part.
    assert all(keys["demo-retail"][3:13] not in c["value"] for c in await context.cookies())
    await page.get_by_role("button", name="Sign out").click()
    await page.wait_for_url(re.compile(r"/console/sign-in"))
    await page.goto(f"{live.url}/console/playbooks")
    assert "/console/sign-in" in page.url
    await context.close()


async def test_forms_and_console_calls_need_the_session_token(live: LiveServer, keys: dict[str, str]) -> None:
    async with httpx.AsyncClient(base_url=live.url, timeout=60) as client:
        shown = await client.get("/console/sign-in")
        token = re.search(r'name="sign_in_token" value="([^"]+)"', shown.text)
        assert token is not None
        forged = await client.post("/console/sign-in", data={"api_key": keys["demo-retail"]})
        assert forged.status_code == 403 and "sign_in_token" in forged.json()["detail"]
        signed = await client.post(
            "/console/sign-in", data={"api_key": keys["demo-retail"], "sign_in_token": token.group(1)}
        )
        session_id = client.cookies.get("ma_console_session")
        assert signed.status_code == 303 and session_id and keys["demo-retail"] not in session_id
        goals = await client.get("/console/goals")
        assert "frame-ancestors 'none'" in goals.headers["content-security-policy"]
        csrf = re.search(r'name="csrf-token" content="([^"]+)"', goals.text)
        assert csrf is not None
        before = await client.get("/api/cs/strategic-goals", headers={"X-API-Key": keys["demo-retail"]})

        no_token = await client.post("/console/goals", data={"goal": GOAL})
        assert no_token.status_code == 403 and "csrf_token" in no_token.json()["detail"]
        bad = await client.post(
            "/console/goals", data={"goal": GOAL, "timeline_days": "3", "csrf_token": csrf.group(1)}
        )
        assert bad.status_code == 422 and "timeline_days" in bad.text
        call = await client.post("/console/api/chat/stream", json={"message": "hello"})
        assert call.status_code == 403 and "X-CSRF-Token" in call.json()["detail"]
        wrong = await client.post(
            "/console/api/chat/stream", json={"message": "hello"}, headers={"X-CSRF-Token": "0" * 64}
        )
        assert wrong.status_code == 403
        after = await client.get("/api/cs/strategic-goals", headers={"X-API-Key": keys["demo-retail"]})
        assert after.json()["total"] == before.json()["total"]  # nothing was stored

        # The cookie opens the console only, never the API at the root.
        root = await client.get(
            "/api/cs/strategic-goals", headers={"Cookie": f"ma_console_session={session_id}"}
        )
        assert root.status_code == 401


async def console_sign_in(client: httpx.AsyncClient, key: str) -> tuple[str, str]:
    """Sign ``client`` in with ``key`` as the form does: its session cookie and the pages' CSRF token."""
    shown = await client.get("/console/sign-in")
    token = re.search(r'name="sign_in_token" value="([^"]+)"', shown.text)
    assert token is not None
    signed = await client.post("/console/sign-in", data={"api_key": key, "sign_in_token": token.group(1)})
    assert signed.status_code == 303, signed.text
    page = await client.get("/console/goals")
    csrf = re.search(r'name="csrf-token" content="([^"]+)"', page.text)
    assert page.status_code == 200 and csrf is not None
    return client.cookies["ma_console_session"], csrf.group(1)


async def new_thread(live: LiveServer, key: str) -> str:
    async with httpx.AsyncClient(base_url=live.url, headers={"X-API-Key": key}) as client:
        made = await client.post("/threads", json={})
        assert made.status_code == 200, made.text
        return str(made.json()["thread_id"])


async def refused(live: LiveServer, session_id: str, thread_id: str) -> bool:
    """Whether the console, pages and API alike, refuses a session cookie (as a copy held elsewhere)."""
    async with httpx.AsyncClient(base_url=live.url, cookies={"ma_console_session": session_id}) as client:
        page = await client.get("/console/goals")
        api = await client.get(f"/console/api/threads/{thread_id}")
    if page.status_code == 200 and api.status_code == 200:
        return False
    assert page.status_code == 303 and page.headers["location"].startswith("/console/sign-in"), page.text
    assert api.status_code == 401, api.text
    return True


async def session_row(live: LiveServer, session_id: str) -> dict[str, Any] | None:
    resources: RuntimeResources = live.server.config.app.state.service.resources
    digest = hashlib.sha256(session_id.encode()).hexdigest()
    async with resources.database.pool.connection() as conn:
        row = await (
            await conn.execute("SELECT * FROM console_sessions WHERE session_hash = %s", (digest,))
        ).fetchone()
    return dict(row) if row is not None else None


async def age_session(
    live: LiveServer, session_id: str, column: Literal["expires_at", "last_seen_at"], seconds: float
) -> None:
    """Move a session's ``expires_at`` or ``last_seen_at`` ``seconds`` into the past, as time would."""
    resources: RuntimeResources = live.server.config.app.state.service.resources
    digest = hashlib.sha256(session_id.encode()).hexdigest()
    statement = sql.SQL(
        "UPDATE console_sessions SET {} = now() - %s * interval '1 second' WHERE session_hash = %s"
    ).format(sql.Identifier(column))
    async with resources.database.pool.connection() as conn:
        await conn.execute(statement, (seconds, digest))


async def test_a_copied_cookie_stops_working_after_sign_out(live: LiveServer, keys: dict[str, str]) -> None:
    key = keys["demo-retail"]
    thread_id = await new_thread(live, key)
    async with httpx.AsyncClient(base_url=live.url) as client:
        session_id, csrf = await console_sign_in(client, key)
        # The cookie is an opaque id, neither the key nor anything made from it; the row keeps its hash only.
        assert key not in session_id and key[3:13] not in session_id and len(session_id) >= 40
        row = await session_row(live, session_id)
        assert row is not None and row["tenant_id"] == "demo-retail" and row["revoked_at"] is None
        assert session_id not in {str(value) for value in row.values()}
        assert row["expires_at"] > row["created_at"]
        assert not await refused(live, session_id, thread_id)  # the copy works while the session lasts
        out = await client.post("/console/sign-out", data={"csrf_token": csrf})
        assert out.status_code == 303
    assert await refused(live, session_id, thread_id)
    row = await session_row(live, session_id)
    assert row is not None and row["revoked_at"] is not None


async def test_revoking_the_key_ends_its_console_sessions(live: LiveServer) -> None:
    resources: RuntimeResources = live.server.config.app.state.service.resources
    key = await create_key(resources.database.pool, "demo-retail", "console revocation test")
    thread_id = await new_thread(live, key.key)
    async with httpx.AsyncClient(base_url=live.url) as client:
        session_id, _ = await console_sign_in(client, key.key)
    assert not await refused(live, session_id, thread_id)
    await revoke_key(resources.database.pool, str(key.key_id))
    assert await refused(live, session_id, thread_id)


async def test_an_expired_or_idle_session_is_refused(live: LiveServer, keys: dict[str, str]) -> None:
    settings = live.server.config.app.state.service.resources.settings
    thread_id = await new_thread(live, keys["demo-retail"])
    async with httpx.AsyncClient(base_url=live.url) as client:
        ending, _ = await console_sign_in(client, keys["demo-retail"])
    async with httpx.AsyncClient(base_url=live.url) as client:
        idle, _ = await console_sign_in(client, keys["demo-retail"])
    await age_session(live, ending, "expires_at", 1)  # past its absolute expiry, although just used
    assert await refused(live, ending, thread_id)
    await age_session(live, idle, "last_seen_at", settings.console_idle_s - 30)
    assert not await refused(live, idle, thread_id)  # used within the idle time: still on, and touched
    row = await session_row(live, idle)
    assert row is not None and row["last_seen_at"] > row["created_at"]
    await age_session(live, idle, "last_seen_at", settings.console_idle_s + 1)
    assert await refused(live, idle, thread_id)


async def test_a_tenant_sees_and_revokes_only_its_own_sessions(
    live: LiveServer, keys: dict[str, str]
) -> None:
    """Row-level security on the sessions table: acting as another tenant, a session is invisible and
    cannot be revoked."""
    resources: RuntimeResources = live.server.config.app.state.service.resources
    thread_id = await new_thread(live, keys["demo-retail"])
    async with httpx.AsyncClient(base_url=live.url) as client:
        session_id, _ = await console_sign_in(client, keys["demo-retail"])
    digest = hashlib.sha256(session_id.encode()).hexdigest()
    for tenant, visible in [("other-shop", 0), ("demo-retail", 1)]:
        async with tenant_session(resources.database.pool, tenant) as conn:
            seen = await (
                await conn.execute(
                    "SELECT count(*) AS n FROM console_sessions WHERE session_hash = %s", (digest,)
                )
            ).fetchone()
            assert seen is not None and seen["n"] == visible, tenant
    async with tenant_session(resources.database.pool, "other-shop") as conn:
        await conn.execute(
            "UPDATE console_sessions SET revoked_at = now() WHERE session_hash = %s", (digest,)
        )
    assert not await refused(live, session_id, thread_id)


async def test_the_chat_page_of_another_tenants_thread_is_not_found(
    live: LiveServer, keys: dict[str, str]
) -> None:
    theirs = await new_thread(live, keys["demo-retail"])
    mine = await new_thread(live, keys["other-shop"])
    async with httpx.AsyncClient(base_url=live.url) as client:
        await console_sign_in(client, keys["other-shop"])
        for thread_id in (theirs, str(uuid.uuid4())):
            shown = await client.get("/console/chat", params={"thread": thread_id})
            assert shown.status_code == 404 and f"No thread {thread_id}" in shown.text
            assert "data-chat" not in shown.text  # not the chat page's shell
        own = await client.get("/console/chat", params={"thread": mine})
        assert own.status_code == 200 and "data-chat" in own.text


async def test_chat_grows_the_call_tree_answers_a_question_and_opens_the_solution(
    live: LiveServer, keys: dict[str, str], browser: Browser
) -> None:
    context, page = await sign_in(browser, live, keys["demo-retail"])
    await accessible(page)
    # Keyboard only: Tab to the message box, type, Enter sends.
    await tab_to(page, "#chat-message")
    await page.keyboard.type("Improve things at my store")
    await page.keyboard.press("Enter")
    question = page.locator("[data-waiting] .question")
    await expect(question).to_contain_text("Which store", timeout=RUN_TIMEOUT_MS)
    await snap(page, "chat-clarification")
    assert await page.evaluate("document.activeElement.id") == "chat-message"  # ready for the answer

    async def answer() -> None:
        await page.keyboard.type("Store 5, raise attach rate by 20% in 60 days")
        await page.keyboard.press("Enter")

    sizes = await run_and_watch(page, answer)
    tree = page.locator("[data-call-tree]")
    final = await tree.locator("li").count()
    assert final >= 10
    # It grew while the run streamed, not all at once at the end.
    assert len(set(sizes)) >= 3 and min(sizes) < final, sizes
    # Sub-agents' calls sit under the sub-agent call that made them.
    assert await tree.locator("li[data-tool='research'] > ul > li[data-agent='research']").count() >= 1
    assert await tree.locator("li[data-depth='1'] li[data-depth='2']").count() >= 1
    assert await tree.locator("li.running").count() == 0
    await expect(page.locator("[data-messages] li.ai").last).to_contain_text("Strategy")
    await snap(page, "chat-call-tree")

    await page.get_by_role("link", name="Open the solution").click()
    await page.wait_for_url(re.compile(r"/console/threads/"))
    solution = page.get_by_test_id("solution")
    for part in ("root_cause", "strategy", "implementation_plan", "playbook", "expected_outcome", "risks"):
        await expect(solution.locator(f"[data-part={part}]")).to_be_visible()
    await expect(solution.locator("[data-part=steps] li").first).to_be_visible()
    await expect(solution.locator("[data-part=termination]")).to_contain_text("completed")
    await accessible(page)
    await snap(page, "chat-solution")
    await context.close()


async def test_a_clarification_with_options_is_answered_with_a_button(
    live: LiveServer, keys: dict[str, str], browser: Browser
) -> None:
    context, page = await sign_in(browser, live, keys["demo-retail"])
    await page.get_by_label("Message").fill(f"@strategy_generator {GOAL}")
    await page.get_by_role("button", name="Send").click()
    option = page.locator("[data-waiting] button[data-answer='master_agent']")
    await expect(option).to_be_visible(timeout=RUN_TIMEOUT_MS)
    await expect(option).to_be_focused()  # the first option takes the focus: Enter answers
    await snap(page, "chat-options")
    sizes = await run_and_watch(page, lambda: page.keyboard.press("Enter"))
    assert sizes and await page.locator("[data-call-tree] li").count() >= 10
    await expect(page.locator("[data-messages] li.human").last).to_have_text("master_agent")
    await expect(page.locator("[data-messages] li.ai").last).to_contain_text("Strategy")
    await context.close()


async def test_a_preview_of_a_risky_action_has_accept_revise_and_cancel(
    live: LiveServer, browser: Browser
) -> None:
    resources: RuntimeResources = live.server.config.app.state.service.resources
    key = (await create_key(resources.database.pool, ASSISTANT_TENANT)).key
    context, page = await sign_in(browser, live, key)
    await page.get_by_label("Message").fill("Email the whole team about the budget freeze")
    await page.get_by_label("Message").press("Enter")
    preview = page.locator("[data-waiting] .preview")
    await expect(preview).to_contain_text("send_email", timeout=RUN_TIMEOUT_MS)
    await expect(preview.get_by_role("button", name="Accept")).to_be_focused()
    await accessible(page)
    await snap(page, "chat-preview")
    # Revise: the message box takes the focus with the form of a change to fill in.
    await preview.get_by_role("button", name="Revise").click()
    composer = page.get_by_label("Message")
    await expect(composer).to_be_focused()
    await expect(composer).to_have_value(re.compile(r"^change .* in the proposal$"))
    await composer.fill("")
    thread = re.search(r"thread=([0-9a-f-]{36})", page.url)
    assert thread is not None
    await preview.get_by_role("button", name="Cancel").click()
    await expect(page.locator("[data-messages] li.human").last).to_have_text("cancel")
    await expect(page.locator("[data-chat]")).to_have_attribute("data-state", "idle", timeout=RUN_TIMEOUT_MS)
    async with httpx.AsyncClient(base_url=live.url, headers={"X-API-Key": key}) as client:
        proposals = (await client.get("/proposals", params={"thread_id": thread.group(1)})).json()
    assert [p["status"] for p in proposals] == ["cancelled"]
    await context.close()


async def test_a_goal_set_with_the_keyboard_is_solved_and_shown(
    live: LiveServer, keys: dict[str, str], browser: Browser
) -> None:
    context, page = await sign_in(browser, live, keys["demo-retail"])
    await page.goto(f"{live.url}/console/goals")
    await accessible(page)
    await tab_to(page, "#goal")
    await page.keyboard.type("Increase Store 5's accessory attach rate by 15% within 45 days")
    await page.keyboard.press("Tab")
    await page.keyboard.type("45")
    await page.keyboard.press("Tab")
    await page.keyboard.press("Tab")
    await page.keyboard.press("Space")  # deploy its playbook
    await page.keyboard.press("Tab")
    assert await page.evaluate("document.activeElement.textContent") == "Solve"
    await page.keyboard.press("Enter")
    await page.wait_for_url(re.compile(r"/console/goals/[0-9a-f-]{36}$"))
    # The page follows the run live, then shows the solution.
    await expect(page.get_by_test_id("solution")).to_be_visible(timeout=RUN_TIMEOUT_MS)
    await expect(page.get_by_test_id("goal-status")).to_have_text("success")
    solution = page.get_by_test_id("solution")
    await expect(solution.locator("[data-part=root_cause]")).to_contain_text("Evidence")
    await expect(solution.locator("[data-part=deployed_playbook]")).to_be_visible()
    await expect(solution.locator("[data-part=termination]")).to_be_visible()
    await snap(page, "goal")
    await page.goto(f"{live.url}/console/goals")
    await expect(page.get_by_test_id("goals")).to_contain_text("Store 5")
    await snap(page, "goals")
    await context.close()


async def test_the_outcome_chart_shows_each_measured_checkpoint(
    live: LiveServer, keys: dict[str, str], browser: Browser, demo_world: dict[str, Any]
) -> None:
    context, page = await sign_in(browser, live, keys["demo-retail"])
    await page.goto(f"{live.url}/console/outcomes")
    await snap(page, "outcomes-list")
    await page.get_by_test_id("outcomes").get_by_role("link", name=FIRST_GOAL).first.click()
    await page.wait_for_url(re.compile(rf"/console/outcomes/{demo_world['solution_id']}$"))
    chart = await page.evaluate(
        "Object.fromEntries(window.consoleCharts['outcome-chart'].data.datasets.map((d) => [d.label, d.data]))"
    )
    metric = await page.evaluate("window.consoleCharts['outcome-chart'].options.scales.y.title.text")
    measured = chart["Measured"]
    assert len(measured) == demo_world["checks"] >= 3
    rows = page.get_by_test_id("checkpoints").locator("tbody tr[data-status=measured]")
    await expect(rows).to_have_count(demo_world["checks"])
    # The chart's points are the table's numbers.
    for point, row in zip(measured, await rows.all(), strict=True):
        cells = await row.locator("td").all_text_contents()
        assert int(cells[0]) == point["x"] and cells[4].strip() == figure(point["y"], metric)
    assert len(chart["Expected trajectory"]) == demo_world["checks"] + 1 and len(chart["Target"]) == 2
    ticks = await page.evaluate("window.consoleCharts['outcome-chart'].scales.y.ticks.map((t) => t.label)")
    assert ticks and all(re.fullmatch(r"\d+(\.\d)?%", tick) for tick in ticks), ticks  # a rate's axis
    await expect(page.get_by_test_id("learning")).to_contain_text("target met")
    # What it taught reads in the metric's units: a rate's values as percentages, the miss in points.
    evidence = await page.get_by_test_id("evidence").inner_text()
    assert re.fullmatch(
        r"measured \d+(\.\d)?% against a baseline of \d+(\.\d)?%; \d+(\.\d)?% of the lift asked for",
        evidence.strip(),
    ), evidence
    miss = await page.get_by_test_id("expected-error").inner_text()
    assert re.fullmatch(r"[+-]\d+\.\d\d percentage points", miss.strip()), miss
    await accessible(page)
    await snap(page, "outcomes")
    await context.close()


async def test_a_playbook_is_disabled_with_a_reason(
    live: LiveServer, keys: dict[str, str], browser: Browser, demo_world: dict[str, Any]
) -> None:
    context, page = await sign_in(browser, live, keys["demo-retail"])
    await page.goto(f"{live.url}/console/playbooks")
    await accessible(page)
    await snap(page, "playbooks")
    await page.locator(f"a[href='/console/playbooks/{demo_world['playbook_id']}']").click()
    await expect(page.get_by_test_id("playbook-status")).to_have_text("active")
    await accessible(page)
    await page.get_by_label("Reason").fill("The store manager paused the programme")
    await page.get_by_role("button", name="Disable").click()
    await expect(page.get_by_test_id("playbook-status")).to_have_text("disabled")
    await expect(page.get_by_test_id("playbook-events")).to_contain_text(
        "The store manager paused the programme"
    )
    await snap(page, "playbook")
    async with httpx.AsyncClient(base_url=live.url, headers={"X-API-Key": keys["demo-retail"]}) as client:
        stored = (await client.get(f"/playbooks/{demo_world['playbook_id']}")).json()
    assert stored["status"] == "disabled"
    await context.close()


async def test_knowledge_and_the_reliability_diagram(
    live: LiveServer, keys: dict[str, str], browser: Browser, demo_world: dict[str, Any]
) -> None:
    context, page = await sign_in(browser, live, keys["demo-retail"])
    await page.goto(f"{live.url}/console/knowledge")
    await expect(page.get_by_test_id("patterns").locator("tbody tr")).not_to_have_count(0)
    await expect(page.get_by_test_id("patterns")).to_contain_text("tenure months")
    kinds = await page.get_by_test_id("reliability").locator("tbody tr td:nth-child(2)").all_text_contents()
    assert {"raw", "calibrated"} <= set(kinds)
    points = await page.evaluate("window.consoleCharts['reliability-chart'].data.datasets[0].data.length")
    assert points >= 1
    await accessible(page)
    await snap(page, "knowledge")
    await context.close()


async def test_runs_are_replayed_and_cancelled(
    live: LiveServer, keys: dict[str, str], browser: Browser
) -> None:
    async with httpx.AsyncClient(
        base_url=live.url, headers={"X-API-Key": keys["demo-retail"]}, timeout=RUN_TIMEOUT_MS / 1000
    ) as client:
        done = await chat(client, GOAL)
        thread_id = done["thread_id"]
        later = await client.post(
            f"/threads/{thread_id}/runs",
            json={"assistant_id": "master_agent", "input": {"messages": [{"role": "user", "content": GOAL}]},
                  "after_seconds": 3600},
        )  # fmt: skip
        assert later.status_code == 200, later.text
        pending = later.json()["run_id"]
    context, page = await sign_in(browser, live, keys["demo-retail"])
    await page.goto(f"{live.url}/console/threads")
    await page.locator(f"a[href='/console/threads/{thread_id}']").click()
    await accessible(page)
    finished = page.locator("[data-testid=runs] tbody tr").filter(has_text="success").first
    await finished.get_by_role("button", name="Replay stream").click()
    replay = page.locator("#replay")
    await expect(replay).to_have_attribute("data-done", "yes", timeout=RUN_TIMEOUT_MS)
    assert await replay.locator("[data-call-tree] li").count() >= 10
    assert await replay.locator("[data-events] li").count() >= 10
    await snap(page, "thread-replay")
    row = page.locator(f"[data-testid=runs] tbody tr[data-run='{pending}']")
    await expect(row).to_contain_text("pending")
    await row.get_by_role("button", name="Cancel").click()
    await page.wait_for_url(re.compile(rf"/console/threads/{thread_id}$"))
    await expect(page.locator(f"[data-testid=runs] tbody tr[data-run='{pending}']")).not_to_contain_text(
        "pending"
    )
    await page.goto(f"{live.url}/console/threads")
    await snap(page, "threads")
    await context.close()


async def test_another_tenants_objects_are_refused(
    live: LiveServer, keys: dict[str, str], browser: Browser, demo_world: dict[str, Any]
) -> None:
    async with httpx.AsyncClient(base_url=live.url, headers={"X-API-Key": keys["demo-retail"]}) as client:
        events_before = len((await client.get(f"/playbooks/{demo_world['playbook_id']}")).json()["events"])
    context, page = await sign_in(browser, live, keys["other-shop"])
    await expect(page.get_by_test_id("tenant")).to_have_text("other-shop")
    for path, what in [
        (f"/console/goals/{demo_world['solution_id']}", "No goal"),
        (f"/console/outcomes/{demo_world['solution_id']}", "No solution"),
        (f"/console/playbooks/{demo_world['playbook_id']}", "No playbook"),
        (f"/console/threads/{demo_world['thread_id']}", "No thread"),
        (f"/console/chat?thread={demo_world['thread_id']}", "No thread"),
    ]:
        response = await page.goto(f"{live.url}{path}")
        assert response is not None and response.status == 404, path
        await expect(page.get_by_role("alert")).to_contain_text(what)
    await snap(page, "other-tenant-refused")
    state = await page.request.get(f"{live.url}/console/api/threads/{demo_world['thread_id']}/state")
    assert state.status == 404
    await page.goto(f"{live.url}/console/goals")
    await expect(page.locator("main")).not_to_contain_text(FIRST_GOAL)
    # A forged change of the other tenant's playbook, with this session's own token: refused, nothing changed.
    token = await page.locator("meta[name=csrf-token]").get_attribute("content")
    changed = await page.request.post(
        f"{live.url}/console/playbooks/{demo_world['playbook_id']}/rollback",
        form={"csrf_token": token or "", "reason": "not mine"},
    )
    assert changed.status == 404
    async with httpx.AsyncClient(base_url=live.url, headers={"X-API-Key": keys["demo-retail"]}) as client:
        events_after = len((await client.get(f"/playbooks/{demo_world['playbook_id']}")).json()["events"])
    assert events_after == events_before
    await context.close()


def test_the_outcome_chart_is_built_from_the_checks() -> None:
    solution = uuid.uuid4()

    def check(day: int, measured: float | None) -> OutcomeCheck:
        return OutcomeCheck.model_validate(
            {"check_id": uuid.uuid4(), "tenant_id": "t", "solution_id": solution, "checkpoint_day": day,
             "due_at": "2027-01-01T00:00:00Z", "metric_query": {}, "expected": None, "measured": measured,
             "observations": 10, "status": "measured" if measured is not None else "scheduled",
             "is_final": day == 60, "measured_at": None, "error": None}
        )  # fmt: skip

    chart = outcome_chart(
        {"baseline": 0.03, "target": 0.036, "expected": 0.07, "timeline_days": 60, "metric": "attach_rate"},
        [check(30, 0.05), check(14, 0.04), check(60, None)],
    )
    sets = {d["label"]: d["data"] for d in chart["data"]["datasets"]}
    assert sets["Measured"] == [{"x": 14, "y": 0.04}, {"x": 30, "y": 0.05}]  # by day; the unmeasured left out
    assert sets["Expected trajectory"][0] == {"x": 0.0, "y": 0.03}
    assert sets["Expected trajectory"][-1] == {"x": 60.0, "y": 0.07}
    assert sets["Target"] == [{"x": 0, "y": 0.036}, {"x": 60, "y": 0.036}]
    assert chart["options"]["scales"]["y"]["title"]["text"] == "attach rate"
    assert chart["options"]["scales"]["y"]["ticks"]["format"]["style"] == "percent"  # 3.0%, not 0.03
    revenue = outcome_chart({"metric": "accessory_revenue", "baseline": 900.0}, [], "GBP")
    assert revenue["options"]["scales"]["y"]["ticks"]["format"] == {
        "style": "currency",
        "currency": "GBP",
        "minimumFractionDigits": 0,
        "maximumFractionDigits": 0,
    }
    assert outcome_chart({"metric": "transactions"}, [])["options"]["scales"]["y"]["ticks"] == {}


def test_reliability_bins_compare_predicted_with_observed() -> None:
    bins = reliability_bins([(0.1, False), (0.15, True), (0.82, True), (0.9, True), (1.0, False)], bins=5)
    assert [(b.low, b.count) for b in bins] == [(0.0, 2), (0.8, 3)]
    assert bins[0].mean_predicted == 0.125 and bins[0].observed == 0.5
    assert bins[1].observed == pytest.approx(0.6667, abs=1e-4)
    assert reliability_bins([]) == []


#: The widths every page must fit: a laptop and a phone.
VIEWPORTS = {"1280": {"width": 1280, "height": 900}, "390": {"width": 390, "height": 844}}


@pytest.fixture(scope="module")
async def chat_threads(live: LiveServer, keys: dict[str, str]) -> dict[str, str]:
    """Conversations of the demo tenant as a new user starts them: a figure, a ranking and a goal."""
    async with httpx.AsyncClient(
        base_url=live.url, headers={"X-API-Key": keys["demo-retail"]}, timeout=RUN_TIMEOUT_MS / 1000
    ) as client:
        figure = await chat(client, "What was the attach rate at Store 4 in June 2026?")
        ranking = await chat(client, "Which of our stores attaches accessories most often?")
        money = await chat(client, "How much accessory revenue did store 2 make in August 2026?")
        solved = await chat(client, GOAL)
    assert figure["values"]["reply"]["data"]["outcome"] == "answer"
    assert solved["values"]["solution"]
    return {
        "figure": figure["thread_id"],
        "ranking": ranking["thread_id"],
        "money": money["thread_id"],
        "solved": solved["thread_id"],
    }


async def test_every_page_fits_a_laptop_and_a_phone_and_reads_for_people(
    live: LiveServer,
    keys: dict[str, str],
    browser: Browser,
    demo_world: dict[str, Any],
    chat_threads: dict[str, str],
    built_and_conversed: dict[str, Any],
    failed_run: dict[str, str],
) -> None:
    """Every page on the demo data at 1,280 and 390 px: nothing wider than the screen, no text broken a
    character per line, no raw JSON before a click, no script error; a screenshot of each."""
    async with httpx.AsyncClient(base_url=live.url, headers={"X-API-Key": keys["demo-retail"]}) as client:
        agents = (await client.post("/assistants/search", json={})).json()
    agent_id = agents[0]["assistant_id"]
    async with httpx.AsyncClient(base_url=live.url) as client:  # another tenant's agent is not found
        await console_sign_in(client, keys["other-shop"])
        assert (await client.get(f"/console/agents/{agent_id}")).status_code == 404
    pages = {
        "chat": "/console/chat",
        "chat-figure": f"/console/chat?thread={chat_threads['figure']}",
        "chat-ranking": f"/console/chat?thread={chat_threads['ranking']}",
        "chat-money": f"/console/chat?thread={chat_threads['money']}",
        "chat-goal": f"/console/chat?thread={chat_threads['solved']}",
        "goals": "/console/goals",
        "goal": f"/console/goals/{demo_world['solution_id']}",
        "outcomes": "/console/outcomes",
        "outcome": f"/console/outcomes/{demo_world['solution_id']}",
        "playbooks": "/console/playbooks",
        "playbook": f"/console/playbooks/{demo_world['playbook_id']}",
        "knowledge": "/console/knowledge",
        "agents": "/console/agents",
        "agent": f"/console/agents/{agent_id}",
        "threads": "/console/threads",
        "thread-goal": f"/console/threads/{demo_world['thread_id']}",
        "thread-figure": f"/console/threads/{chat_threads['figure']}",
        "thread-chat-goal": f"/console/threads/{chat_threads['solved']}",
        "thread-failed": f"/console/threads/{failed_run['thread_id']}",
        "systems": "/console/systems",
        "system": f"/console/systems/{built_and_conversed['request_id']}",
        "conversations": "/console/conversations",
    }
    failures: dict[str, list[str]] = {}
    for width, viewport in VIEWPORTS.items():
        context = await browser.new_context(viewport=viewport)  # type: ignore[arg-type]
        page = watch_errors(await context.new_page())
        await page.goto(f"{live.url}/console/sign-in")
        found = await layout_problems(page) + page_errors(page)
        await snap(page, f"layout-sign-in-{width}")
        await page.get_by_label("API key").fill(keys["demo-retail"])
        await page.get_by_role("button", name="Sign in").click()
        await page.wait_for_url(re.compile(r"/console/chat"))
        for name, path in pages.items():
            response = await page.goto(f"{live.url}{path}", wait_until="networkidle")
            assert response is not None and response.status == 200, path
            if name.startswith("chat"):  # its conversation is read by the page's script
                await expect(page.locator("[data-chat]")).to_have_attribute("data-loaded", "yes")
            found += await layout_problems(page) + page_errors(page)
            page_errors(page).clear()
            await snap(page, f"layout-{name}-{width}")
            if found:
                failures[f"{name} at {width} px"] = found
            found = []
        await context.close()
    assert not failures, "\n".join(
        f"{where}: {problem}" for where, found in failures.items() for problem in found
    )


async def test_answers_read_as_sentences_with_the_raw_answer_one_click_away(
    live: LiveServer, keys: dict[str, str], browser: Browser, chat_threads: dict[str, str]
) -> None:
    context, page = await sign_in(browser, live, keys["demo-retail"])
    await page.goto(f"{live.url}/console/chat?thread={chat_threads['figure']}")
    answer = page.locator("[data-messages] li.ai").last
    await expect(answer.locator(".sentence")).to_contain_text(re.compile(r"attach rate .* was \d+(\.\d+)?%"))
    raw = answer.locator("details.raw")
    await expect(raw.locator("pre")).to_be_hidden()
    await raw.locator("summary").click()
    await expect(raw.locator("pre")).to_contain_text('"sql"')
    await page.goto(f"{live.url}/console/chat?thread={chat_threads['money']}")
    # The sentence says the amount as the table does, with its currency.
    await expect(page.locator("[data-messages] li.ai").last.locator(".sentence")).to_contain_text(
        re.compile(r"accessory revenue .* was \$\d{1,3}(,\d{3})*\.\d\d")
    )
    money = page.locator("[data-messages] li.ai").last.locator("details.figures")
    await money.locator("summary").click()
    await expect(money.locator("tbody td").first).to_have_text(re.compile(r"^\$\d{1,3}(,\d{3})*(\.\d\d)?$"))
    await page.goto(f"{live.url}/console/chat?thread={chat_threads['ranking']}")
    table = page.locator("[data-messages] li.ai").last.locator("details.figures")
    await table.locator("summary").click()
    assert await table.locator("tbody tr").count() >= 2
    await page.goto(f"{live.url}/console/chat?thread={chat_threads['solved']}")
    solved = page.locator("[data-messages] li.ai").last
    for part in ("Root cause", "Strategy", "Plan", "Expected outcome"):
        await expect(solved.get_by_role("heading", name=part)).to_be_visible()
    await context.close()


async def test_threads_have_titles_and_a_goal_thread_shows_its_solution(
    live: LiveServer, keys: dict[str, str], browser: Browser, demo_world: dict[str, Any]
) -> None:
    context, page = await sign_in(browser, live, keys["demo-retail"])
    await page.goto(f"{live.url}/console/threads")
    row = (
        page.get_by_test_id("threads")
        .locator("tr")
        .filter(has=page.locator(f"a[href='/console/threads/{demo_world['thread_id']}']"))
    )
    await expect(row.locator("td").first).to_have_text(FIRST_GOAL)  # its goal, not its UUID
    await expect(row.locator("td").nth(1)).to_contain_text("goal")
    await row.get_by_role("link").click()
    await expect(page.get_by_role("heading", level=1)).to_have_text(FIRST_GOAL)
    # Solved by the demo (no queued run): the thread says so and shows the goal's solution.
    await expect(page.locator("main")).to_contain_text("solved directly")
    await expect(page.get_by_test_id("solution").locator("[data-part=expected_outcome]")).to_contain_text("%")
    # Its id is shown shortened, and its button copies the whole id.
    await context.grant_permissions(["clipboard-read", "clipboard-write"], origin=live.url)
    shown = page.locator("main > p").first.locator("span.id")
    assert len(await shown.locator("code").inner_text()) < len(demo_world["thread_id"])
    await shown.get_by_role("button", name=re.compile("Copy")).click()
    await expect(shown.get_by_role("button")).to_have_text("Copied")
    assert await page.evaluate("navigator.clipboard.readText()") == demo_world["thread_id"]
    # The playbook list and its page give the same next run, in words.
    await page.goto(f"{live.url}/console/playbooks")
    listed = page.locator("tr").filter(
        has=page.locator(f"a[href='/console/playbooks/{demo_world['playbook_id']}']")
    )
    next_run = await listed.get_by_test_id("next-run").inner_text()
    schedule = await listed.locator("td").nth(3).inner_text()
    await listed.get_by_role("link").click()
    if await page.get_by_test_id("playbook-status").inner_text() == "active":
        assert re.match(r"^\w{3} \d{1,2} \w{3} \d{4}, \d\d:\d\d UTC$", next_run), next_run
    await expect(page.get_by_test_id("next-run")).to_have_text(next_run)
    assert not re.search(r"\d+ \d+ [*\d]", schedule), schedule  # a cron schedule in words
    await context.close()


async def test_a_built_system_shows_its_gate_case_by_case_and_a_loan_its_stage_and_audit(
    live: LiveServer, keys: dict[str, str], browser: Browser, built_and_conversed: dict[str, Any]
) -> None:
    """The Systems page against what the database holds of the request (every EvalSpec case, each with
    the newest ExperimentReport's verdict); the Conversations page against ``GET /audit``; another
    tenant finds neither."""
    resources: RuntimeResources = live.server.config.app.state.service.resources
    request_id = built_and_conversed["request_id"]
    async with resources.database.pool.connection() as conn:
        newest = {
            row["artifact_type"]: row["payload"]
            for row in await (
                await conn.execute(
                    "SELECT DISTINCT ON (artifact_type) artifact_type, payload FROM meta_artifacts "
                    "WHERE request_id = %s ORDER BY artifact_type, version DESC",
                    (request_id,),
                )
            ).fetchall()
        }
    cases = [case["id"] for case in newest["EvalSpec"]["cases"]]
    verdicts = {r["case_id"]: r["passed"] for r in newest["ExperimentReport"]["results"]}
    context, page = await sign_in(browser, live, keys["demo-retail"])
    await page.goto(f"{live.url}/console/systems")
    await page.get_by_test_id("systems").locator(f"a[href='/console/systems/{request_id}']").click()
    await expect(page.get_by_role("heading", level=1)).to_have_text("console ticket triage")
    rows = page.get_by_test_id("gate").locator("tbody tr")
    await expect(rows).to_have_count(len(cases))
    for index, case_id in enumerate(cases):
        row = rows.nth(index)
        await expect(row.locator("td").first).to_have_text(case_id.replace("_", " "))
        shown = {True: "passed", False: "failed", None: "not run"}[verdicts.get(case_id)]
        await expect(row.locator("td").nth(3)).to_have_text(shown)
    await expect(page.get_by_test_id("gates")).to_contain_text("quality gate")
    await expect(page.get_by_test_id("phases").locator("tbody tr").first).to_be_visible()
    await accessible(page)

    lending_key = (await create_key(resources.database.pool, LENDING_TENANT)).key
    await context.close()
    context, page = await sign_in(browser, live, lending_key)
    loan = built_and_conversed["loan_thread"]
    await page.goto(f"{live.url}/console/conversations")
    await page.get_by_test_id("conversations").locator(f"a[href='/console/conversations/{loan}']").click()
    stage = built_and_conversed["loan_stage"].replace("_", " ")
    await expect(page.get_by_test_id("current-stage")).to_have_text(stage)
    events = page.get_by_test_id("audit").locator("tbody tr")
    await expect(events).to_have_count(built_and_conversed["loan_events"])
    await expect(page.locator("tr[data-kind=message]").first).to_contain_text("Customer wrote")
    await expect(page.locator("details.raw pre").first).to_be_hidden()
    await accessible(page)
    for width, viewport in VIEWPORTS.items():
        await page.set_viewport_size(viewport)  # type: ignore[arg-type]
        assert await layout_problems(page) == [], width
        await snap(page, f"layout-conversation-{width}")
    await context.close()

    async with httpx.AsyncClient(base_url=live.url) as client:  # each tenant sees only its own
        await console_sign_in(client, keys["other-shop"])
        assert (await client.get(f"/console/systems/{request_id}")).status_code == 404
        assert (await client.get(f"/console/conversations/{loan}")).status_code == 404
        assert (await client.get("/console/systems/not-a-uuid")).status_code == 422


def test_audit_events_read_as_sentences() -> None:
    assert audit_sentence("transition", {"from_stage": "SALES_EXPLORATION", "to_stage": "VERIFICATION",
                                         "guard": "amount and tenure stated", "final": False}) == (
        "Stage SALES_EXPLORATION \u2192 VERIFICATION (amount and tenure stated)"
    )  # fmt: skip
    assert audit_sentence("read", {"source": "customers", "fields": ["pan", "date_of_birth"]}) == (
        "Read pan, date of birth from customers"
    )
    assert audit_sentence("refused", {"by": "underwriting_agent", "reason": "not verified"}) == (
        "Refused by underwriting_agent: not verified"
    )
    assert audit_sentence("message", {"text": "6 lakh", "stated": ["amount"]}) == (
        "Customer wrote \u201c6 lakh\u201d (stated amount)"
    )
    assert audit_sentence("something_new", {}) == "Something new"


def test_an_artifact_summary_in_json_reads_as_its_fields_counted() -> None:
    payload = {
        "version": 2,
        "cases": [{}, {}, {}],
        "pass_threshold": 0.8,
        "metrics": ["pass_rate"],
        "extra": {},
    }
    assert artifact_gist('{"cases": []}', payload) == "3 cases; pass threshold 80%; 1 metric"
    assert (
        artifact_gist("SystemSpec triage v1: sorts tickets", payload) == "SystemSpec triage v1: sorts tickets"
    )
    assert artifact_gist("{}", {"version": 1}) == "no fields set"


def test_the_gate_lists_every_case_with_its_verdict_or_not_run() -> None:
    spec = EvalSpec.model_validate(
        {"cases": [{"id": "urgent", "inputs": {"t": "down"}, "expect": {"urgency": "high"}, "hard": True},
                   {"id": "no_promises", "inputs": {"t": "refund?"}, "avoid": {"reply": ["guarantee"]}},
                   {"id": "later", "inputs": {"t": "x"}}]}
    )  # fmt: skip
    report = ExperimentReport.model_validate(
        {"system_version": 1, "runtime": "langgraph", "pass_rate": 0.5, "latency_p95_ms": 3.0, "tokens": 0,
         "results": [{"case_id": "urgent", "passed": True, "metric": "instruction_following"},
                     {"case_id": "no_promises", "passed": False, "metric": "instruction_following",
                      "mismatches": ["reply contains 'guarantee'"]}]}
    )  # fmt: skip
    gate = gate_cases(spec, report)
    assert [(c.case_id, c.passed, c.hard, c.adversarial) for c in gate] == [
        ("urgent", True, True, False),
        ("no_promises", False, False, True),
        ("later", None, False, False),
    ]
    assert gate[1].mismatches == ["reply contains 'guarantee'"]
    assert [c.passed for c in gate_cases(spec, None)] == [None, None, None]
    assert gate_cases(None, report) == []


async def test_a_goal_said_in_the_chat_is_one_of_the_goals_with_its_outcome_checks(
    live: LiveServer, keys: dict[str, str], browser: Browser, chat_threads: dict[str, str]
) -> None:
    """Whatever door a goal came in by, it is in the one list of goals, and the loop measures it later."""
    async with httpx.AsyncClient(base_url=live.url, headers={"X-API-Key": keys["demo-retail"]}) as client:
        listed = (await client.get("/api/cs/strategic-goals", params={"limit": 100})).json()["items"]
    [goal] = [item for item in listed if item["thread_id"] == chat_threads["solved"]]
    assert goal["goal"] == GOAL and goal["status"] in ("success", "partial")
    assert not [
        item for item in listed if item["thread_id"] in (chat_threads["figure"], chat_threads["money"])
    ]
    checks = goal["solution"]["outcome_checks"]
    resources: RuntimeResources = live.server.config.app.state.service.resources
    async with resources.database.pool.connection() as conn:
        stored = await (
            await conn.execute(
                "SELECT count(*) AS n FROM outcome_checks WHERE solution_id = %s", (goal["solution_id"],)
            )
        ).fetchone()
    assert stored is not None and stored["n"] == len(checks) > 0
    context, page = await sign_in(browser, live, keys["demo-retail"])
    await page.goto(f"{live.url}/console/goals")
    await expect(page.locator(f"a[href='/console/goals/{goal['solution_id']}']")).to_be_visible()
    await page.goto(f"{live.url}/console/outcomes")
    await expect(page.locator(f"a[href='/console/outcomes/{goal['solution_id']}']")).to_be_visible()
    await context.close()


async def expect_the_drawn_graph(page: Page, live: LiveServer, tenant_id: str, agent_id: str) -> None:
    """The agent page's diagram has one node per node and one edge per edge of its compiled graph's
    ``get_graph(xray=1)``, dashed where conditional; the edge table is behind a click."""
    resources: RuntimeResources = live.server.config.app.state.service.resources
    agent = await resolve_assistant(resources.database.pool, tenant_id, agent_id, graph_ids(resources))
    assert agent is not None
    compiled = await graph_for(resources, agent.graph_id, assistant_graph_config(tenant_id, agent))
    drawable = compiled.get_graph(xray=1)
    graph = {
        "nodes": [{"id": node_id} for node_id in drawable.nodes],
        "edges": [
            {"source": edge.source, "target": edge.target, "conditional": edge.conditional}
            for edge in drawable.edges
        ],
    }
    drawing = page.get_by_test_id("agent-diagram")
    await expect(drawing).to_be_visible()
    shown = await drawing.locator("[data-node]").evaluate_all("(nodes) => nodes.map((n) => n.dataset.node)")
    assert sorted(shown) == sorted(node["id"] for node in graph["nodes"])
    edges = await drawing.locator("[data-edge]").evaluate_all(
        "(paths) => paths.map((p) => [p.dataset.edge, p.classList.contains('conditional')])"
    )
    assert sorted(edges) == sorted(
        [f"{edge['source']} -> {edge['target']}", bool(edge.get("conditional"))] for edge in graph["edges"]
    )
    table = page.get_by_test_id("agent-graph")
    await expect(table).to_be_hidden()
    await page.locator("details.edges > summary").click()
    await expect(table.locator("tbody tr")).to_have_count(len(graph["edges"]))


async def test_an_agent_version_is_rolled_back_and_promoted_from_its_page_with_its_changes_and_graph(
    live: LiveServer, keys: dict[str, str], browser: Browser
) -> None:
    """Two versions of an assistant: the second's changes from the first behind a click, its graph's edges,
    and Roll back / Promote making the other version live (what ``GET /assistants/{id}`` says after)."""
    client = sdk(live, keys["demo-retail"])
    made = await client.assistants.create(
        graph_id="master_agent", config={"configurable": {"complexity": "simple"}}, name="console_versions"
    )
    agent_id = made["assistant_id"]
    await client.assistants.update(agent_id, config={"configurable": {"complexity": "standard"}})
    assert (await client.assistants.get(agent_id))["version"] == 2
    context, page = await sign_in(browser, live, keys["demo-retail"])
    await page.goto(f"{live.url}/console/agents/{agent_id}")
    await expect(page.get_by_test_id("live-version")).to_have_text("v2")
    second = page.locator("tr[data-version='2']")
    diff = second.locator("details.diff")
    await expect(diff.locator("pre")).to_be_hidden()
    await diff.locator("summary").click()
    await expect(diff.locator("pre")).to_contain_text('-      "complexity": "simple"')
    await expect(diff.locator("pre")).to_contain_text('+      "complexity": "standard"')
    await expect_the_drawn_graph(page, live, "demo-retail", agent_id)
    await snap(page, "agent-graph")
    await page.locator("tr[data-version='1']").get_by_role("button", name="Roll back to v1").click()
    await expect(page.get_by_test_id("live-version")).to_have_text("v1")
    assert (await client.assistants.get(agent_id))["version"] == 1
    await page.locator("tr[data-version='2']").get_by_role("button", name="Promote to v2").click()
    await expect(page.get_by_test_id("live-version")).to_have_text("v2")
    assert (await client.assistants.get(agent_id))["version"] == 2
    await accessible(page)
    await context.close()
    async with httpx.AsyncClient(base_url=live.url) as http:
        _, csrf = await console_sign_in(http, keys["demo-retail"])
        forged = await http.post(f"/console/agents/{agent_id}/versions/1", data={})
        assert forged.status_code == 403
        missing = await http.post(f"/console/agents/{agent_id}/versions/9", data={"csrf_token": csrf})
        assert missing.status_code == 422 and "version" in missing.text
        await console_sign_in(http, keys["other-shop"])
        theirs = await http.get(f"/console/agents/{agent_id}")
        assert theirs.status_code == 404
    assert (await client.assistants.get(agent_id))["version"] == 2  # nothing changed by the refusals


async def test_a_failed_run_shows_its_message_and_where_in_the_call_tree_it_failed(
    live: LiveServer, keys: dict[str, str], browser: Browser, failed_run: dict[str, str]
) -> None:
    """Read from what the run stored: its message, and the path down to the task that raised (its
    checkpoint's error writes, subgraph by subgraph)."""
    context, page = await sign_in(browser, live, keys["demo-retail"])
    await page.goto(f"{live.url}/console/threads/{failed_run['thread_id']}")
    row = page.locator(f"[data-testid=runs] tbody tr[data-run='{failed_run['run_id']}']")
    await expect(row.get_by_test_id("run-error")).to_contain_text(f"LookupError: {FAILURE}")
    await expect(row.get_by_test_id("run-failed-at").locator("code")).to_have_text(
        "solve > analyst > query_sales"
    )
    await accessible(page)
    await snap(page, "thread-failed")
    await context.close()


def test_the_calls_under_way_when_a_run_failed_are_its_innermost_path() -> None:
    """The loop's call events (``runtime.core``): a call ended is no longer under way; a sub-agent's call
    is under the sub-agent call of the depth above."""

    def call(event: str, agent: str, depth: int, tool: str, **more: Any) -> RunEvent:
        data = {"event": event, "agent": agent, "depth": depth, "tool": tool, "kind": "tool", **more}
        return RunEvent(seq=0, event="custom", data=data)

    events = [
        call("call_start", "master_agent", 0, "describe_data"),
        call("call_end", "master_agent", 0, "describe_data", status="success"),
        call("call_start", "master_agent", 0, "analyst"),
        RunEvent(seq=0, event="updates", data={"agent": {}}),
        call("call_start", "analyst", 1, "load_rows"),
        call("call_end", "analyst", 1, "load_rows", status="error"),
        call("call_start", "analyst", 1, "query_sales"),
        call("call_start", "helper", 1, "unrelated"),
    ]
    assert open_calls(events) == ["master_agent", "analyst", "query_sales"]
    assert open_calls(events[:6]) == ["master_agent", "analyst"]
    assert open_calls(events[:2]) == []
    assert joined(["tools"], ["master_agent", "analyst"]) == ["tools", "master_agent", "analyst"]
    assert joined(["solve", "analyst"], ["analyst", "query_sales"]) == ["solve", "analyst", "query_sales"]


async def test_a_request_waiting_at_the_human_gate_is_decided_from_its_page(
    live: LiveServer, keys: dict[str, str], browser: Browser
) -> None:
    """Rejected with a note, then approved: each a run of the ``meta`` graph resuming the request's thread
    (the runs API's own path), recorded by the graph and listed as a human decision; a forged, another
    tenant's or a second decision changes nothing."""
    client = sdk(live, keys["demo-retail"])
    thread = await client.threads.create()
    request = {"text": TRIAGE, "name": "console_gated_desk", "autonomous": False, "human_gate": "required"}
    await client.runs.wait(thread["thread_id"], "meta", input={"request": request})
    waiting = await client.threads.get(thread["thread_id"])
    assert waiting["status"] == "interrupted"
    [[asked]] = waiting["interrupts"].values()
    request_id = asked["value"]["request_id"]
    resources: RuntimeResources = live.server.config.app.state.service.resources

    async def gate_entries() -> list[tuple[str, str]]:
        async with resources.database.pool.connection() as conn:
            rows = await (
                await conn.execute(
                    "SELECT decision, outcome FROM meta_history WHERE request_id = %s AND phase = 'gate_human' "
                    "ORDER BY entry_id",
                    (request_id,),
                )
            ).fetchall()
        return [(row["decision"], row["outcome"]) for row in rows]

    async with httpx.AsyncClient(base_url=live.url) as http:
        _, other_csrf = await console_sign_in(http, keys["other-shop"])
        theirs = await http.post(
            f"/console/systems/{request_id}/decision", data={"csrf_token": other_csrf, "action": "approve"}
        )
        assert theirs.status_code == 404
        _, csrf = await console_sign_in(http, keys["demo-retail"])
        forged = await http.post(f"/console/systems/{request_id}/decision", data={"action": "approve"})
        assert forged.status_code == 403
        unknown = await http.post(
            f"/console/systems/{request_id}/decision", data={"csrf_token": csrf, "action": "terminate"}
        )
        assert unknown.status_code == 422 and "action" in unknown.text
        bare = await http.post(
            f"/console/systems/{request_id}/decision", data={"csrf_token": csrf, "action": "reject"}
        )
        assert bare.status_code == 422 and "note" in bare.text
    assert await gate_entries() == []
    assert (await client.threads.get(thread["thread_id"]))["status"] == "interrupted"

    context, page = await sign_in(browser, live, keys["demo-retail"])

    async def decide(action: str, note: str) -> None:
        await page.goto(f"{live.url}/console/systems/{request_id}")
        gate = page.get_by_test_id("human-gate")
        await expect(gate).to_contain_text("Waiting for your decision")
        await accessible(page)
        for width, viewport in VIEWPORTS.items():
            await page.set_viewport_size(viewport)  # type: ignore[arg-type]
            assert await layout_problems(page) == [], width
            await snap(page, f"layout-system-waiting-{action}-{width}")
        await gate.get_by_label(re.compile(rf"{action.capitalize()}:")).check()
        await gate.get_by_label(re.compile("Note")).fill(note)
        await gate.get_by_role("button", name="Send the decision").click()
        await page.wait_for_url(re.compile(rf"/console/systems/{request_id}$"))
        runs = await client.runs.list(thread["thread_id"])
        await client.runs.join(thread["thread_id"], runs[0]["run_id"])

    await decide("reject", "Name the queue each ticket goes to")
    await decide("approve", "Looks right now")
    assert await gate_entries() == [
        ("reject", "Name the queue each ticket goes to"),
        ("approve", "Looks right now"),
    ]
    assert (await client.threads.get(thread["thread_id"]))["status"] == "idle"
    await page.reload()
    await expect(page.get_by_test_id("human-gate")).to_have_count(0)
    rows = page.get_by_test_id("gate-decisions").locator("tbody tr")
    await expect(rows).to_have_count(2)
    await expect(rows.nth(0)).to_contain_text("reject")
    await expect(rows.nth(0)).to_contain_text("Name the queue each ticket goes to")
    await expect(rows.nth(1)).to_contain_text("approve")
    await snap(page, "system-decided")
    token = await page.locator("meta[name=csrf-token]").get_attribute("content")
    again = await page.request.post(
        f"{live.url}/console/systems/{request_id}/decision",
        form={"csrf_token": token or "", "action": "approve"},
    )
    assert again.status == 409
    assert len(await gate_entries()) == 2
    await context.close()


async def test_an_agent_whose_graph_cannot_be_built_says_why_without_building_it_on_every_view(
    live: LiveServer, keys: dict[str, str], browser: Browser, failed_run: dict[str, str]
) -> None:
    """``tests/unbuildable_graph.py`` returns no graph: its page says so, and a second view remembers
    the failure instead of building it again. A graph drawn in subgraph boxes fits a phone (its box
    scrolls when the drawing is wider)."""
    client = sdk(live, keys["demo-retail"])
    [broken] = await client.assistants.search(graph_id="unbuildable")
    [failing] = await client.assistants.search(graph_id="failing")
    context, page = await sign_in(browser, live, keys["demo-retail"])
    before = unbuildable_graph.BUILDS
    for _ in range(2):
        await page.goto(f"{live.url}/console/agents/{broken['assistant_id']}")
        await expect(page.get_by_test_id("graph-error")).to_contain_text("must return a StateGraph")
    assert before + 1 == unbuildable_graph.BUILDS
    await expect(page.get_by_test_id("agent-no-runs")).to_be_visible()  # the unbuildable one never ran
    await page.goto(f"{live.url}/console/agents/{failing['assistant_id']}")
    # Its recent runs: the failed one, with its message, where it failed, and a link to its thread.
    row = page.locator(f"[data-testid=agent-runs] tbody tr[data-run='{failed_run['run_id']}']")
    await expect(row.get_by_test_id("run-error")).to_contain_text(f"LookupError: {FAILURE}")
    await expect(row.get_by_test_id("run-failed-at").locator("code")).to_have_text(
        "solve > analyst > query_sales"
    )
    await expect(row.locator(f"a[href='/console/threads/{failed_run['thread_id']}']")).to_be_visible()
    await expect_the_drawn_graph(page, live, "demo-retail", failing["assistant_id"])
    await expect(page.locator("[data-group=solve]")).to_be_visible()
    await accessible(page)
    for width, viewport in VIEWPORTS.items():
        await page.set_viewport_size(viewport)  # type: ignore[arg-type]
        assert await layout_problems(page) == [], width
        await snap(page, f"layout-agent-subgraphs-{width}")
    await context.close()
