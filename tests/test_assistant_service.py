"""Seed 002 over the service's own door: the personal assistant through ``/chat/stream`` on a real
server (uvicorn, the embedded Postgres, the local mail, calendar and contacts servers)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

import httpx
import pytest

from master_agent.domains.assistant import DEMO_TENANT
from master_agent.domains.assistant.local_servers import LocalServers
from tests.conftest import server_settings
from tests.live_server import LiveServer, chat, tenant_clients


@pytest.fixture(scope="module")
async def live(pg_server_uri: str, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[LiveServer]:
    settings = server_settings(pg_server_uri, tmp_path_factory, "assistantsvc")
    async with LiveServer(settings) as server:
        yield server
    LocalServers(settings.data_dir).stop()


@pytest.fixture(scope="module")
async def clients(live: LiveServer) -> AsyncIterator[dict[str, httpx.AsyncClient]]:
    async with tenant_clients(live, {"assistant": DEMO_TENANT, "retail": "demo-retail"}) as made:
        yield made


def _waiting(turn: dict[str, object]) -> list[dict[str, object]]:
    state = turn["state"]
    assert isinstance(state, dict)
    return [item["value"] for item in state["interrupts"]]


async def test_a_waiting_question_is_answered_or_suspended_by_the_next_message(
    clients: dict[str, httpx.AsyncClient],
) -> None:
    http = clients["assistant"]
    first = await chat(http, "Schedule board meeting next month")
    thread = first["thread_id"]
    [question] = _waiting(first)
    assert question["reason"] == "missing_information"

    # "Actually, ..." is not the answer: a new flow on the same thread, the board meeting suspended.
    check = await chat(http, "Actually, check my calendar first", thread)
    assert _waiting(check) == []
    assert check["values"]["solution"]["events"]
    assert [flow["goal"] for flow in check["values"]["suspended"]] == ["Schedule board meeting next month"]
    assert "Paused: 'Schedule board meeting next month'" in check["values"]["reply"]["text"]

    today = datetime.now(ZoneInfo("UTC")).date()
    day = (today.replace(day=1) + timedelta(days=32)).replace(day=17)
    resumed = await chat(http, f"Resume the board meeting on {day.isoformat()} at 4pm", thread)
    [approval] = _waiting(resumed)
    assert approval["kind"] == "approval"
    assert approval["draft"]["day"] == day.isoformat()

    # This one answers the draft (it approves it): the waiting flow goes on.
    done = await chat(http, "approve", thread)
    assert _waiting(done) == []
    reply = done["values"]["reply"]
    assert reply["status"] == "success", reply
    assert f"Created: Board meeting on {day.isoformat()} 16:00-17:00" in reply["text"]
    assert done["values"]["suspended"] == []
    assert len((await http.get(f"/threads/{thread}/runs")).json()) == 4


async def test_pending_previews_are_listed_per_tenant(clients: dict[str, httpx.AsyncClient]) -> None:
    http = clients["assistant"]
    turn = await chat(http, "Email the whole team about the budget freeze")
    thread = turn["thread_id"]
    listed = (await http.get("/proposals", params={"thread_id": thread, "status": "pending"})).json()
    [proposal] = listed
    assert proposal["tool"] == "send_email"
    assert len(proposal["args"]["addresses"]) == 14
    assert proposal["thread_id"] == thread

    # Another tenant sees none of them; a bad filter is a 422 naming it.
    assert (await clients["retail"].get("/proposals", params={"thread_id": thread})).json() == []
    bad = await http.get("/proposals", params={"status": "maybe"})
    assert bad.status_code == 422
    assert "status" in bad.text

    await chat(http, "cancel", thread)
    listed = (await http.get("/proposals", params={"thread_id": thread})).json()
    assert [p["status"] for p in listed] == ["cancelled"]
