"""What a meta request ends as, on the real database with the offline model: every failure ends it
``failed`` with the reason (none stays ``running``); names never collide within a tenant; a request
to debug, optimize, evaluate, harden or handle an incident works on a system the tenant built (or
asks which, or says there is none) and never builds one in its place."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from langgraph.types import Command

from master_agent.capabilities import install_tenant, load_tenant
from master_agent.capabilities.agents import live_agents
from master_agent.meta.design import design_system
from master_agent.meta.graph import build_meta_graph, intent_of
from master_agent.runtime import RuntimeResources
from master_agent.runtime.resources import use_shared_resources

EXPENSES = "Build an agent system that reviews expense reports for policy violations and flags them"
TRIAGE = "Build an agent system that triages incoming support tickets by urgency and drafts replies"


@pytest.fixture
async def tenant(resources: RuntimeResources) -> str:
    name = f"meta-{uuid.uuid4().hex[:8]}"
    await install_tenant(resources.database.pool, resources.settings, "retail", name)
    use_shared_resources(resources)
    return name


@pytest.fixture
def meta(resources: RuntimeResources) -> Any:
    return build_meta_graph().compile(checkpointer=resources.database.checkpointer)


def _config(tenant: str) -> Any:
    return {"configurable": {"tenant_id": tenant, "thread_id": str(uuid.uuid4())}}


async def _row_status(resources: RuntimeResources, request_id: str) -> str:
    async with resources.database.pool.connection() as conn:
        row = await (
            await conn.execute("SELECT status FROM meta_requests WHERE request_id = %s", (request_id,))
        ).fetchone()
    assert row is not None
    return str(row["status"])


async def test_a_taken_name_is_renamed_and_the_other_system_is_left_alone(
    meta: Any, tenant: str, resources: RuntimeResources
) -> None:
    first = (await meta.ainvoke({"request": {"text": EXPENSES}}, _config(tenant)))["result"]
    second = (await meta.ainvoke({"request": {"text": EXPENSES}}, _config(tenant)))["result"]
    assert (first["status"], second["status"]) == ("done", "done")
    assert first["registered_agent"] == "policy_violation_review"
    assert second["registered_agent"] == "policy_violation_review_2"
    record = await load_tenant(resources.database.pool, tenant)
    agents = await live_agents(resources.database.pool, tenant, record.capability_version)
    assert agents["policy_violation_review"].version == 1  # never overwritten by the second build
    # A name the tenant's pack uses is renamed too, never refused.
    taken = next(iter(await _pack_names(resources, tenant)))
    named = (await meta.ainvoke({"request": {"text": TRIAGE, "name": taken}}, _config(tenant)))["result"]
    assert named["status"] == "done" and named["registered_agent"] == f"{taken}_2"


async def _pack_names(resources: RuntimeResources, tenant: str) -> list[str]:
    from master_agent.meta.systems import taken_names

    return sorted(n for n in await taken_names(resources, tenant) if 3 <= len(n) <= 30 and "_" in n)


async def test_a_failure_ends_the_request_failed_with_the_reason(
    meta: Any, tenant: str, resources: RuntimeResources
) -> None:
    spec = design_system(TRIAGE, "dbg_desk", "langgraph").model_dump(mode="json")
    spec["components"][1]["inputs"].append("customer_tier")
    spec["state_schema"].append({"name": "customer_tier", "type": "string"})
    request = {"text": "Debug the desk: its replies are wrong", "artifacts": {"SystemSpec": spec}}
    state = await meta.ainvoke({"request": request}, _config(tenant))
    result = state["result"]
    assert result["status"] == "failed"
    assert "customer_tier" in result["error"] or "schema_inconsistency" in result["error"]
    assert result["registered_agent"] is None
    assert await _row_status(resources, result["request_id"]) == "failed"


async def test_a_step_that_raises_ends_the_request_failed_not_running(
    meta: Any, tenant: str, resources: RuntimeResources
) -> None:
    # Its stored artifacts are damaged while it waits for the human: registering them cannot work.
    config = _config(tenant)
    state = await meta.ainvoke(
        {"request": {"text": TRIAGE, "autonomous": False, "human_gate": "required"}}, config
    )
    async with resources.database.pool.connection() as conn:
        await conn.execute("UPDATE meta_artifacts SET payload = '{}'::jsonb WHERE tenant_id = %s", (tenant,))
    state = await meta.ainvoke(Command(resume={"action": "approve"}), config)
    assert state["result"]["status"] == "failed"
    assert state["result"]["error"].startswith("register:")
    assert await _row_status(resources, state["result"]["request_id"]) == "failed"


async def test_work_on_a_system_needs_one_and_never_builds(
    meta: Any, tenant: str, resources: RuntimeResources
) -> None:
    none = (await meta.ainvoke({"request": {"text": "Debug the ticket desk"}}, _config(tenant)))["result"]
    assert none["status"] == "failed" and none["intent"] == "debug"
    assert "no system built" in none["error"] and none["registered_agent"] is None

    await meta.ainvoke({"request": {"text": TRIAGE, "name": "ticket_desk"}}, _config(tenant))
    await meta.ainvoke({"request": {"text": EXPENSES, "name": "expense_check"}}, _config(tenant))
    optimized = (await meta.ainvoke({"request": {"text": "Make the ticket desk cheaper"}}, _config(tenant)))[
        "result"
    ]
    assert (optimized["intent"], optimized["status"]) == ("optimize", "done")
    assert optimized["registered_agent"] == "ticket_desk"  # the same system, a new version

    ambiguous = (await meta.ainvoke({"request": {"text": "Evaluate my agent"}}, _config(tenant)))["result"]
    assert ambiguous["status"] == "failed" and ambiguous["intent"] == "evaluate"
    assert "expense_check" in ambiguous["error"] and "ticket_desk" in ambiguous["error"]

    config = _config(tenant)
    await meta.ainvoke({"request": {"text": "Evaluate my agent", "autonomous": False}}, config)
    asked = (await meta.aget_state(config)).tasks[0].interrupts[0].value
    assert asked["kind"] == "meta_target" and set(asked["answers"]) == {"expense_check", "ticket_desk"}
    state = await meta.ainvoke(Command(resume={"system": "expense_check"}), config)
    assert state["result"]["status"] == "done" and state["result"]["playbook"] == "evaluate"
    assert state["request"]["name"] == "expense_check"


@pytest.mark.parametrize(
    ("text", "intent"),
    [
        ("Build an agent system that flags failing payments", "build"),
        ("Make the ticket desk faster", "optimize"),
        ("The desk is broken since the outage: fix it", "debug"),
        ("We had an incident: the desk crashed", "incident"),
        ("Harden the refund system", "harden"),
        ("Route invoices by amount", "build"),
    ],
)
def test_the_intent_is_the_first_named_and_a_build_only_when_asked(text: str, intent: str) -> None:
    assert intent_of(text)[0] == intent


async def test_a_request_saying_nothing_is_asked_about_never_built(
    meta: Any, tenant: str, resources: RuntimeResources
) -> None:
    result = (await meta.ainvoke({"request": {"text": "x"}}, _config(tenant)))["result"]
    assert result["status"] == "failed" and "does not say what is wanted" in result["error"]
    assert result["registered_agent"] is None
    assert await _row_status(resources, result["request_id"]) == "failed"

    config = _config(tenant)
    await meta.ainvoke({"request": {"text": "asdf", "autonomous": False}}, config)
    asked = (await meta.aget_state(config)).tasks[0].interrupts[0].value
    assert asked["kind"] == "meta_request" and "does not say what is wanted" in asked["questions"][0]
    state = await meta.ainvoke(Command(resume={"text": TRIAGE}), config)
    assert state["result"]["status"] == "done" and state["result"]["intent"] == "build"
    assert state["request"]["text"] == TRIAGE
