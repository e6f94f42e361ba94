"""The meta-orchestrator served as the ``meta`` graph over the LangGraph API (the official SDK against the
real service): bad requests refused before anything is stored, each of the human gate's five answers
given as a run's ``command.resume``, and ``GET /meta/eval``."""

from __future__ import annotations

import uuid
from typing import Any

import httpx
import pytest
from langgraph_sdk.client import LangGraphClient
from langgraph_sdk.errors import UnprocessableEntityError

from master_agent.meta.playbooks import TIER_BUDGET_CEILINGS
from tests.live_server import LiveServer, chat, live_server_fixture, sdk, two_tenant_keys
from tests.test_meta_units import TRIAGE

live = live_server_fixture("meta")
keys = two_tenant_keys


def _gated(name: str, **extra: Any) -> dict[str, Any]:
    """A build request that waits for a human before it is finalized."""
    return {"request": {"text": TRIAGE, "name": name, "autonomous": False, "human_gate": "required", **extra}}


async def _waiting(client: LangGraphClient, thread_id: str) -> dict[str, Any]:
    """The question the human gate asks (the thread's one pending interrupt)."""
    thread = await client.threads.get(thread_id)
    assert thread["status"] == "interrupted", thread["values"].get("routing_trace")
    [[pending]] = thread["interrupts"].values()
    asked: dict[str, Any] = pending["value"]
    assert asked["kind"] == "meta_review"
    return asked


async def _answer(client: LangGraphClient, thread_id: str, answer: dict[str, Any]) -> dict[str, Any]:
    values: dict[str, Any] = await client.runs.wait(thread_id, "meta", command={"resume": answer})  # type: ignore[assignment]
    return values


@pytest.mark.parametrize(
    ("graph_input", "field"),
    [
        ({"goal": "build me a thing"}, "input.request"),
        ({"request": {"text": ""}}, "input.request.text"),
        ({"request": {"text": TRIAGE, "runtime": "crewai"}}, "input.request.runtime"),
        (
            {"request": {"text": TRIAGE, "budgets": {"nobody": {"max_steps": 1}}}},
            "input.request.budgets.nobody",
        ),
        (
            {"request": {"text": TRIAGE, "constraints": {"pass_threshold": "high"}}},
            "input.request.constraints",
        ),
        (
            {"request": {"text": TRIAGE, "artifacts": {"SystemSpec": {"name": "x"}}}},
            "input.request.artifacts.SystemSpec",
        ),
        ({"request": {"text": TRIAGE}, "extra": 1}, "input.extra"),
    ],
)
async def test_a_bad_request_is_refused_before_anything_is_stored(
    live: LiveServer, keys: dict[str, str], graph_input: dict[str, Any], field: str
) -> None:
    client = sdk(live, keys["demo-retail"])
    thread = await client.threads.create()
    with pytest.raises(UnprocessableEntityError) as refused:
        await client.runs.create(thread["thread_id"], "meta", input=graph_input)
    assert field in refused.value.response.json()["detail"]
    assert await client.runs.list(thread["thread_id"]) == []
    assert (await client.threads.get(thread["thread_id"]))["values"] is None


async def test_budgets_above_the_tenants_tier_are_refused_naming_the_cap(
    live: LiveServer, keys: dict[str, str]
) -> None:
    """400 cases with budgets of 10^9 ran 221 s while another tenant waited: a budget is capped by the
    tenant's tier, and a request above it is refused before anything runs."""
    pool = live.server.config.app.state.service.resources.database.pool
    client = sdk(live, keys["other-shop"])
    async with pool.connection() as conn:
        tier = (
            await (await conn.execute("SELECT tier FROM tenants WHERE tenant_id = 'other-shop'")).fetchone()
        )["tier"]
        await conn.execute("UPDATE tenants SET tier = 'free' WHERE tenant_id = 'other-shop'")
    try:
        thread = await client.threads.create()
        free_spawns = TIER_BUDGET_CEILINGS["free"]["max_spawns"]
        with pytest.raises(UnprocessableEntityError) as refused:
            await client.runs.create(
                thread["thread_id"],
                "meta",
                input={"request": {"text": TRIAGE, "budgets": {"eval": {"max_spawns": free_spawns + 1}}}},
            )
        detail = refused.value.response.json()["detail"]
        assert (
            "input.request.budgets.eval.max_spawns" in detail
            and f"free tier allows at most {free_spawns}" in detail
        )
        assert await client.runs.list(thread["thread_id"]) == []
        # Beyond every tier: refused whoever asks.
        with pytest.raises(UnprocessableEntityError):
            await sdk(live, keys["demo-retail"]).runs.create(
                None,
                "meta",
                input={"request": {"text": TRIAGE, "budgets": {"global": {"max_tokens": 10**9}}}},
            )
    finally:
        async with pool.connection() as conn:
            await conn.execute("UPDATE tenants SET tier = %s WHERE tenant_id = 'other-shop'", (tier,))


async def test_approve_after_a_refused_answer(live: LiveServer, keys: dict[str, str]) -> None:
    client = sdk(live, keys["demo-retail"])
    thread_id = (await client.threads.create())["thread_id"]
    await client.runs.wait(thread_id, "meta", input=_gated("approved_desk"))
    asked = await _waiting(client, thread_id)
    assert {"SystemSpec", "EvalSpec", "CompiledSpec"} <= set(asked["artifacts"])
    assert asked["gates"]["quality"]["passed"] is True
    assert asked["answers"] == ["approve", "reject", "budget_override", "terminate", "inject_constraints"]

    for answer, field in [
        ({"action": "maybe"}, "command.resume.action"),
        ({"action": "budget_override", "caps": {"max_hours": 3}}, "command.resume.caps.max_hours"),
        ({"action": "inject_constraints"}, "command.resume.constraints"),
    ]:
        with pytest.raises(UnprocessableEntityError) as refused:
            await client.runs.create(thread_id, "meta", command={"resume": answer})
        assert field in refused.value.response.json()["detail"]
    assert (await client.threads.get(thread_id))["status"] == "interrupted"

    values = await _answer(client, thread_id, {"action": "approve"})
    assert values["result"]["status"] == "done"
    assert values["result"]["registered_agent"] == "approved_desk"
    assert [e["decision"] for e in values["history"][-3:-1]] == ["approve", "compiler.register"]


async def test_reject_sends_feedback_to_the_named_role_then_terminate(
    live: LiveServer, keys: dict[str, str]
) -> None:
    client = sdk(live, keys["demo-retail"])
    thread_id = (await client.threads.create())["thread_id"]
    await client.runs.wait(thread_id, "meta", input=_gated("rejected_desk"))
    await _waiting(client, thread_id)
    await _answer(
        client, thread_id, {"action": "reject", "role": "prompt_policy", "feedback": "replies must be warmer"}
    )
    # The owner revised its artifact, everything after it ran again, and the gate asks once more.
    asked = await _waiting(client, thread_id)
    values = (await client.threads.get(thread_id))["values"]
    assert any(t["why"] == "rejected: back to prompt_policy" for t in values["routing_trace"])
    assert values["artifacts"]["PromptPack"]["version"] == 2
    assert values["loops"] == {"prompt_policy": 1}
    assert asked["gates"]["quality"]["passed"] is True

    values = await _answer(client, thread_id, {"action": "terminate", "feedback": "enough for today"})
    assert values["result"]["status"] == "partial"
    assert values["history"][-2]["decision"] == "terminate"


async def test_injected_constraints_run_their_owners_phases_again(
    live: LiveServer, keys: dict[str, str]
) -> None:
    client = sdk(live, keys["demo-retail"])
    thread_id = (await client.threads.create())["thread_id"]
    await client.runs.wait(thread_id, "meta", input=_gated("strict_desk"))
    before = await _waiting(client, thread_id)
    assert before["gates"]["production"]["passed"] is True
    # A latency ceiling no system meets: Ops sets it in the SLO and measures again; the production
    # gate now fails and the table (rule 6) routes it to Ops.
    values = await _answer(
        client, thread_id, {"action": "inject_constraints", "constraints": {"latency_p95_ms_ceiling": 0.001}}
    )
    assert values["constraint_pack"]["ops_constraints"]["latency_p95_ms_ceiling"] == 0.001
    assert values["constraint_pack"]["user_constraints"] == {"latency_p95_ms_ceiling": 0.001}
    assert [p["id"] for p in values["phases"] if p["id"].endswith("_again")] == [
        "instrument_again",
        "ops_check_again",
    ]
    assert values["gates"]["production"]["passed"] is False
    classified = [t for t in values["routing_trace"] if t["node"] == "classify_failure"]
    assert classified[-1]["route_to"] == "ops" and classified[-1]["why"].startswith("rule 6")


async def test_a_budget_override_lets_an_exhausted_request_finish(
    live: LiveServer, keys: dict[str, str]
) -> None:
    client = sdk(live, keys["demo-retail"])
    thread_id = (await client.threads.create())["thread_id"]
    # No steps at all for the whole request: the first phase is exhausted, nothing can be reallocated.
    request = _gated("funded_desk", human_gate="skip", budgets={"global": {"max_steps": 0}})
    await client.runs.wait(thread_id, "meta", input=request)
    asked = await _waiting(client, thread_id)
    assert asked["questions"] == ["architect exhausted its budget in architect; no reallocation possible"]

    values = await _answer(client, thread_id, {"action": "budget_override", "caps": {"max_steps": 40}})
    assert values["result"]["status"] == "done", values["routing_trace"]
    assert values["budgets"]["per_role"]["architect"]["max_steps"] == 40
    assert values["budgets"]["global"]["max_steps"] == 40
    assert values["result"]["registered_agent"] == "funded_desk"

    # Autonomous, the same request ends partial with what was left undone.
    autonomous = {"request": {**request["request"], "autonomous": True}}
    values = await client.runs.wait((await client.threads.create())["thread_id"], "meta", input=autonomous)  # type: ignore[assignment]
    assert values["result"]["status"] == "partial"
    assert values["result"]["left_undone"] == ["architect"]


async def test_a_built_system_takes_chat_messages_and_the_figures_are_served(
    live: LiveServer, keys: dict[str, str]
) -> None:
    client = sdk(live, keys["other-shop"])
    thread_id = (await client.threads.create())["thread_id"]
    name = f"desk_{uuid.uuid4().hex[:6]}"
    values: dict[str, Any] = await client.runs.wait(  # type: ignore[assignment]
        thread_id, "meta", input={"request": {"text": TRIAGE, "name": name}}
    )
    assert values["result"]["status"] == "done"
    headers = {"x-api-key": keys["other-shop"]}
    async with httpx.AsyncClient(base_url=live.url, headers=headers, timeout=120) as http:
        # The front door routes a ticket to the new system, whose input is the message itself.
        answered = (
            await chat(http, "Please triage this support ticket: my order never arrived, this is urgent")
        )["values"]
        mine = (await http.get("/meta/eval")).json()
    assert answered["reply"]["agent"] == name, answered["routing"]
    assert answered["solution"]["urgency"] == "high" and answered["solution"]["reply"]
    async with httpx.AsyncClient(base_url=live.url) as http:
        unauthenticated = await http.get("/meta/eval")
    assert mine["requests"] == {"done": 1}
    assert {f["metric"] for f in mine["figures"]} >= {"loop_count", "phases_to_compile", "budget_utilization"}
    assert unauthenticated.status_code == 401
