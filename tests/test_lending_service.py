"""Seed 001 over the service: a loan conversation through ``/chat/stream`` on a real server, its
audit trail (``GET /audit``) and its sanction letter (``GET /documents/{id}``, tenant-scoped)."""

from __future__ import annotations

import asyncio
import io
import uuid
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families
from pypdf import PdfReader

from master_agent.domains.lending import DEMO_TENANT
from master_agent.domains.lending.letters import SALARY_SLIP_MAX_BYTES, salary_slip_pdf
from tests.conftest import server_settings
from tests.live_server import LiveServer, chat, tenant_clients
from tests.test_untrusted import heavy_pdf


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


async def test_a_salary_slip_is_uploaded_checked_and_read_by_underwriting(
    clients: dict[str, httpx.AsyncClient],
) -> None:
    http = clients["lending"]
    first = await chat(http, "I want a loan of 5 lakh for 36 months, mobile 9000000002")
    thread = first["thread_id"]
    waiting = await chat(http, "PAN BCDPM2345L, born 03/09/1991", thread)
    assert waiting["values"]["record"]["underwriting_result"]["decision"] == "NEEDS_SALARY_SLIP"
    assert f"/threads/{thread}/files" in waiting["values"]["reply"]["text"]
    url = f"/threads/{thread}/files"
    slip = salary_slip_pdf("Rohan Mehta", "Acme Corp", "October 2026", 70_000)

    def form(
        content: bytes, media_type: str = "application/pdf", kind: str = "salary_slip"
    ) -> dict[str, Any]:
        return {"data": {"kind": kind}, "files": {"file": ("slip.pdf", content, media_type)}}

    refused = {
        "kind": await http.post(url, **form(slip, kind="passport")),
        "type": await http.post(url, **form(b"Net salary: INR 70,000", "text/plain")),
        "content": await http.post(url, **form(b"Net salary: INR 70,000")),
        "size": await http.post(url, **form(slip + b"\0" * (SALARY_SLIP_MAX_BYTES + 1))),
        "missing": await http.post(url, data={"kind": "salary_slip"}),
    }
    assert {name: answer.status_code for name, answer in refused.items()} == {
        "kind": 422,
        "type": 415,
        "content": 422,
        "size": 413,
        "missing": 422,
    }
    assert "kind" in refused["kind"].json()["detail"] and "salary_slip" in refused["kind"].json()["detail"]
    for name in ("type", "content", "size"):
        assert refused[name].json()["detail"].startswith("file:")
    assert "file" in refused["missing"].text
    # Another tenant's key cannot upload to the thread; nothing refused was kept.
    assert (await clients["retail"].post(url, **form(slip))).status_code == 404
    still = await chat(http, "I have uploaded my salary slip", thread)
    assert still["values"]["record"]["underwriting_result"]["decision"] == "NEEDS_SALARY_SLIP"

    stored = await http.post(url, **form(slip))
    assert stored.status_code == 201, stored.text
    assert stored.json()["monthly_salary"] == 70_000 and stored.json()["kind"] == "salary_slip"
    approved = await chat(http, "Done, I have uploaded my salary slip", thread)
    values = approved["values"]
    assert values["record"]["underwriting_result"]["rule"] == "emi_within_half_salary"
    assert values["record"]["salary_slip"] == {
        "document_id": stored.json()["document_id"],
        "monthly_salary": 70_000,
        "employee": "Rohan Mehta",
    }
    assert values["current_stage"] == "CLOSURE"
    audit = (await http.get("/audit", params={"thread_id": thread, "kind": "document"})).json()
    assert [(e["detail"]["document"], e["detail"].get("direction")) for e in audit] == [
        ("salary_slip", "uploaded"),
        ("sanction_letter", None),
    ]


async def test_a_pdf_that_would_cost_minutes_of_cpu_is_refused_and_others_are_served(
    clients: dict[str, httpx.AsyncClient],
) -> None:
    """A few kilobytes whose 100 pages share one stream of 150,000 text operators held a thread for
    hours; six filled the thread pool. Refused at once now, while another tenant is answered."""
    http = clients["lending"]
    thread = (await chat(http, "I want a loan of 5 lakh for 36 months, mobile 9000000002"))["thread_id"]
    bomb = heavy_pdf(pages=100, operators=150_000)
    uploads = [
        http.post(
            f"/threads/{thread}/files",
            data={"kind": "salary_slip"},
            files={"file": ("slip.pdf", bomb, "application/pdf")},
        )
        for _ in range(6)
    ]
    meanwhile = clients["retail"].get("/knowledge", params={"q": "attach rate"}, timeout=10)
    *refused, other = await asyncio.gather(*uploads, meanwhile)
    assert other.status_code == 200
    for answer in refused:
        assert answer.status_code == 422, answer.text
        assert answer.json()["detail"].startswith("file:") and "at most 20 are read" in answer.text


async def test_conversations_are_measured_in_the_summary_and_in_metrics(
    live: LiveServer, clients: dict[str, httpx.AsyncClient]
) -> None:
    http = clients["lending"]

    async def summary() -> dict[str, Any]:
        answer = await http.get("/workflows/summary")
        assert answer.status_code == 200
        (loan,) = answer.json()
        return dict(loan)

    before = await summary()
    # One conversation completes in four turns; one is abandoned at verification after two.
    done = await chat(http, "Hello, I need a personal loan")
    for text in ("My mobile number is 9000000001", "3 lakh for 24 months", "PAN ABCPV1234K dob 1988-04-12"):
        closed = await chat(http, text, done["thread_id"])
    assert closed["values"]["current_stage"] == "CLOSURE"
    left = await chat(http, "I want a loan of 2 lakh for 12 months, mobile 9000000006")
    await chat(http, "What documents do I need?", left["thread_id"])
    after = await summary()

    assert after["workflow"] == "personal_loan" and after["tenant_id"] == DEMO_TENANT
    assert after["conversations"] - before["conversations"] == 2
    assert after["completed"] - before["completed"] == 1
    assert after["turns"] - before["turns"] == 6
    assert after["completion_rate"] == round(after["completed"] / after["conversations"], 4)
    visits = {stage["stage"]: stage["visits"] for stage in after["stages"]}
    visited_before = {stage["stage"]: stage["visits"] for stage in before["stages"]}
    assert visits["VERIFICATION"] - visited_before.get("VERIFICATION", 0) == 1  # the abandoned one stays
    assert all(stage["total_seconds"] >= 0 for stage in after["stages"])
    workers = {worker["worker"]: worker for worker in after["workers"]}
    assert {"sales_agent", "verification_agent", "underwriting_agent", "sanction_letter_generator"} <= set(
        workers
    )
    assert sum(worker["utilisation"] for worker in after["workers"]) == pytest.approx(1.0, abs=0.001)
    assert workers["verification_agent"]["needs_input"] >= 1
    # Another tenant has no stage-driven conversations.
    assert (await clients["retail"].get("/workflows/summary")).json() == []

    async with httpx.AsyncClient(base_url=live.url) as operator:
        metrics = (await operator.get("/metrics")).text
    samples = {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(metrics)
        for sample in family.samples
    }
    key = (("tenant", DEMO_TENANT), ("workflow", "personal_loan"))

    def sample(name: str, *extra: tuple[str, str]) -> float:
        return samples[(name, tuple(sorted((*key, *extra))))]

    assert sample("master_agent_workflow_conversations") == after["conversations"]
    assert sample("master_agent_workflow_completion_ratio") == after["completion_rate"]
    assert sample("master_agent_workflow_stage_visits", ("stage", "VERIFICATION")) == visits["VERIFICATION"]
    assert (
        sample("master_agent_workflow_worker_tasks", ("status", "COMPLETED"), ("worker", "sales_agent"))
        == (workers["sales_agent"]["completed"])
    )


async def test_the_langgraph_api_runs_the_same_conversation(clients: dict[str, httpx.AsyncClient]) -> None:
    """A LangGraph client (threads and ``runs/wait`` on ``master_agent``) advances the loan stages on
    one thread, as chat does."""
    http = clients["lending"]
    thread = (await http.post("/threads", json={})).json()["thread_id"]

    async def turn(text: str) -> dict[str, Any]:
        answer = await http.post(
            f"/threads/{thread}/runs/wait",
            json={"assistant_id": "master_agent", "input": {"messages": [{"role": "user", "content": text}]}},
        )
        assert answer.status_code == 200, answer.text
        return dict(answer.json())

    first = await turn("I'd like a loan of 2 lakh for 24 months, my mobile is 9000000004")
    assert first["current_stage"] == "VERIFICATION" and first["active_agent"] == "verification_agent"
    done = await turn("PAN DEFPS4567N, born 1979-06-18")
    assert done["current_stage"] == "CLOSURE" and done["turn_count"] == 2
    assert done["record"]["underwriting_result"]["rule"] == "within_preapproved_limit"
    assert [task["assignment"]["task_type"] for task in done["tasks"]] == [
        "LOAN_OFFER",
        "KYC_VERIFICATION",
        "KYC_VERIFICATION",
        "UNDERWRITING",
        "SANCTION_LETTER",
    ]
    assert {task["response"]["status"] for task in done["tasks"]} <= {"COMPLETED", "NEEDS_INPUT"}


async def test_a_state_update_that_skips_a_guard_is_refused_or_audited_as_an_override(
    live: LiveServer, clients: dict[str, httpx.AsyncClient]
) -> None:
    """``threads.update_state`` setting the stage or a decision is refused with a 409 naming the
    fields, stored nowhere; an operator's override is applied and audited with who and why."""
    http = clients["lending"]
    thread = (await chat(http, "I want a loan of 1 lakh for 12 months, mobile 9000000003"))["thread_id"]
    before = (await http.get(f"/threads/{thread}/state")).json()["values"]
    bypass = {
        "current_stage": "DOCUMENTATION",
        "record": {
            "underwriting_result": {"decision": "APPROVED"},
            "verification_status": {"verified": True},
        },
    }
    refused = await http.post(f"/threads/{thread}/state", json={"values": bypass})
    assert refused.status_code == 409, refused.text
    detail = refused.json()["detail"]
    assert "values.current_stage" in detail and "values.record.underwriting_result" in detail
    after = (await http.get(f"/threads/{thread}/state")).json()["values"]
    assert after["current_stage"] == before["current_stage"] == "VERIFICATION"
    assert after["record"] == before["record"]
    # What the customer's own words may set goes through, as a patch: the fields not named are kept.
    patched = await http.post(
        f"/threads/{thread}/state", json={"values": {"record": {"stated": {"dob": "1985-01-27"}}}}
    )
    assert patched.status_code == 200, patched.text
    record = (await http.get(f"/threads/{thread}/state")).json()["values"]["record"]
    assert record["stated"] == {**before["record"]["stated"], "dob": "1985-01-27"}
    assert record["loan_details"] == before["record"]["loan_details"]
    assert record["customer_profile"] == before["record"]["customer_profile"] != {}
    # A patch that names a guarded field is refused like a whole record would be.
    sneaky = {"record": {"stated": {"pan": "CDEPN3456M"}, "verification_status": {"verified": True}}}
    assert (await http.post(f"/threads/{thread}/state", json={"values": sneaky})).status_code == 409
    assert (await http.get(f"/threads/{thread}/state")).json()["values"]["record"] == record

    override = {"X-Operator": "ops@bank", "X-Override-Reason": "customer verified at the branch"}
    applied = await http.post(
        f"/threads/{thread}/state",
        json={"values": {"record": {**record, "verification_status": {"verified": True}}}},
        headers=override,
    )
    assert applied.status_code == 200, applied.text
    audit = (await http.get("/audit", params={"thread_id": thread})).json()
    assert [
        e["detail"]["by"] for e in audit if e["kind"] == "refused" and e["detail"].get("by") == "api"
    ] == ["api", "api"]
    (overridden,) = [e["detail"] for e in audit if e["kind"] == "override"]
    assert overridden == {
        "by": "ops@bank",
        "reason": "customer verified at the branch",
        "fields": ["values.record.verification_status"],
    }
    # Even verified by hand, a score of 655 gets no letter: the rules decide again.
    closed = await chat(http, "PAN CDEPN3456M", thread)
    assert closed["values"]["record"]["document_links"] == {}
    assert closed["values"]["record"]["underwriting_result"]["rule"] == "credit_score_below_minimum"


async def test_wrong_pans_alone_lock_verification_and_an_api_unlock_is_refused(
    clients: dict[str, httpx.AsyncClient],
) -> None:
    """Five wrong PANs while the date of birth is still asked for are five failed checks (each
    detail is checked as it is given); a client clearing the lock through ``threads.update_state`` is
    refused and audited, and the right details after it issue nothing."""
    http = clients["lending"]
    thread = (await chat(http, "1 lakh over 12 months please, my number is 9000000006"))["thread_id"]
    asked = await chat(http, "PAN FGHPR6780Q", thread)
    assert asked["values"]["record"]["verification_status"]["failures"] == 1
    # The same wrong PAN said again is no new failed check.
    again = await chat(http, "FGHPR6780Q", thread)
    assert again["values"]["record"]["verification_status"]["failures"] == 1
    for wrong in ("FGHPR6781Q", "FGHPR6782Q", "FGHPR6783Q", "FGHPR6784Q"):
        last = await chat(http, f"my PAN is {wrong}", thread)
    status = last["values"]["record"]["verification_status"]
    assert (status["locked"], status["failures"], last["values"]["current_stage"]) == (True, 5, "CLOSURE")
    unlock = {"record": {"verification_status": {"locked": False, "failures": 0, "attempts": 0}}}
    refused = await http.post(f"/threads/{thread}/state", json={"values": unlock})
    assert refused.status_code == 409, refused.text
    assert "values.record.verification_status" in refused.json()["detail"]
    right = await chat(http, "FGHPR6789Q, born 14 Feb 1990", thread)
    record = right["values"]["record"]
    assert record["verification_status"]["locked"] is True
    assert record["document_links"] == {} and record["underwriting_result"]["decision"] is None
    audit = (await http.get("/audit", params={"thread_id": thread})).json()
    assert [
        e["detail"]["fields"] for e in audit if e["kind"] == "refused" and e["detail"].get("by") == "api"
    ] == [["values.record.verification_status"]]
    assert not [e for e in audit if e["kind"] == "document"]
