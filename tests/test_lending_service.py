"""Seed 001 over the service: a loan conversation through ``/chat/stream`` on a real server, its
audit trail (``GET /audit``) and its sanction letter (``GET /documents/{id}``, tenant-scoped)."""

from __future__ import annotations

import io
import uuid
from collections.abc import AsyncIterator

import httpx
import pytest
from pypdf import PdfReader

from master_agent.domains.lending import DEMO_TENANT
from tests.conftest import server_settings
from tests.live_server import LiveServer, chat, tenant_clients


@pytest.fixture(scope="module")
async def live(pg_server_uri: str, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[LiveServer]:
    async with LiveServer(server_settings(pg_server_uri, tmp_path_factory, "lendingsvc")) as server:
        yield server


@pytest.fixture(scope="module")
async def clients(live: LiveServer) -> AsyncIterator[dict[str, httpx.AsyncClient]]:
    async with tenant_clients(live, {"lending": DEMO_TENANT, "retail": "demo-retail"}) as made:
        yield made


async def test_a_loan_conversation_over_chat_with_its_audit_and_letter(
    clients: dict[str, httpx.AsyncClient],
) -> None:
    http = clients["lending"]
    first = await chat(http, "Hi, I'd like a personal loan. My mobile is 9000000006")
    thread = first["thread_id"]
    assert first["values"]["current_stage"] == "SALES_EXPLORATION"
    turns = [
        "Can you tell me a joke?",
        "6 lakh for 48 months",
        "My PAN is FGHPR6789Q and I was born on 1990-02-14",
    ]
    for text in turns:
        last = await chat(http, text, thread)
        assert last["thread_id"] == thread
    values = last["values"]
    assert values["current_stage"] == "CLOSURE"
    assert values["turn_count"] == 4
    link = values["record"]["document_links"]["sanction_letter"]

    letter = await http.get(link)
    assert letter.status_code == 200 and letter.headers["content-type"] == "application/pdf"
    text = "\n".join(page.extract_text() for page in PdfReader(io.BytesIO(letter.content)).pages)
    assert "Arjun Rao" in text and "INR 600,000.00" in text and "48 months" in text
    # Another tenant's key does not reach it; a malformed id is a 422 naming the field.
    assert (await clients["retail"].get(link)).status_code == 404
    malformed = await http.get("/documents/not-a-uuid")
    assert malformed.status_code == 422 and "document_id" in malformed.text

    audit = (await http.get("/audit", params={"thread_id": thread})).json()
    assert [event["detail"]["to_stage"] for event in audit if event["kind"] == "transition"] == [
        "INTENT_CAPTURE",
        "SALES_EXPLORATION",
        "VERIFICATION",
        "UNDERWRITING",
        "DOCUMENTATION",
        "CLOSURE",
    ]
    assert any(e["kind"] == "decision" and e["detail"]["decision"] == "fallback" for e in audit)
    assert [e["detail"]["document"] for e in audit if e["kind"] == "document"] == ["sanction_letter"]
    assert (await clients["retail"].get("/audit", params={"thread_id": thread})).json() == []
    bad = await http.get("/audit", params={"kind": "gossip"})
    assert bad.status_code == 422 and "kind" in bad.text
    assert (await http.get("/audit", params={"thread_id": str(uuid.uuid4())})).json() == []
