"""The meta graph end to end on the real database and checkpointer with the offline model: the build
playbook from a request to a registered, evaluated system; a broken SystemSpec classified by the table
and repaired by its owner; the human gate interrupting and resuming; budgets exhausted."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from langgraph.types import Command

from master_agent.capabilities import install_tenant, load_tenant
from master_agent.capabilities.agents import live_agents
from master_agent.meta.artifacts import Change, apply_changes
from master_agent.meta.design import design_system
from master_agent.meta.evaluation import meta_evaluation
from master_agent.meta.graph import build_meta_graph
from master_agent.runtime import RuntimeResources
from master_agent.runtime.resources import use_shared_resources
from tests.test_meta_units import TRIAGE

TENANT = "meta-lab"


@pytest.fixture
async def meta(resources: RuntimeResources) -> Any:
    await install_tenant(resources.database.pool, resources.settings, "retail", TENANT)
    use_shared_resources(resources)
    return build_meta_graph().compile(checkpointer=resources.database.checkpointer)


def _config() -> Any:
    return {"configurable": {"tenant_id": TENANT, "thread_id": str(uuid.uuid4())}}


async def test_the_build_playbook_compiles_evaluates_and_registers_a_system(
    meta: Any, resources: RuntimeResources
) -> None:
    state = await meta.ainvoke({"request": {"text": TRIAGE, "name": "ticket_desk"}}, _config())
    result = state["result"]
    assert result["status"] == "done", state["routing_trace"]
    assert (result["intent"], result["runtime_target"], result["playbook"]) == ("build", "langgraph", "build")
    assert result["registered_agent"] == "ticket_desk"
    assert result["gates"]["quality"] == {"passed": True, "pass_rate": 1.0, "threshold": 0.8}
    assert result["gates"]["production"]["passed"] is True
    assert set(result["artifacts"]) == {
        "SystemSpec",
        "PromptPack",
        "ToolContract",
        "EvalSpec",
        "TelemetrySpec",
        "SLOReport",
        "CompiledSpec",
        "ExperimentReport",
    }
    assert all(set(ref) == {"type", "version", "summary_hash"} for ref in result["artifacts"].values())
    phases = [entry["phase"] for entry in state["history"]]
    assert phases[:2] == ["intake", "select_playbook"] and phases[-1] == "finalize"
    for phase in (
        "architect",
        "prompts",
        "tools",
        "eval_spec",
        "instrument",
        "compile",
        "eval_smoke",
        "ops_check",
    ):
        assert phase in phases
    assert state["budgets"]["spent"]["eval"]["spawns"] == 3
    figures = await meta_evaluation(resources.database.pool, TENANT)
    assert figures.requests.get("done", 0) >= 1
    assert {f.metric for f in figures.figures} >= {"loop_count", "phases_to_compile", "budget_utilization"}


def _broken_spec() -> dict[str, Any]:
    system = design_system(TRIAGE, "broken_desk", "langgraph")
    return apply_changes(
        system.model_dump(mode="json"),
        [
            Change(op="append", path="edges", value={"source": "draft", "target": "triage"}),
            Change(op="set", path="components.triage.max_iterations", value=None),
            Change(op="set", path="components.draft.max_iterations", value=None),
            Change(op="set", path="safety_reliability.loop_breakers", value={}),
            Change(op="set", path="components.draft.budget", value=None),
        ],
    )


@pytest.mark.parametrize(
    ("text", "playbook"),
    [("Evaluate the desk system", "evaluate"), ("Fix the broken desk system: it loops forever", "debug")],
)
async def test_a_broken_spec_is_classified_by_the_table_and_repaired_by_its_owner(
    meta: Any, text: str, playbook: str
) -> None:
    request = {"text": text, "artifacts": {"SystemSpec": _broken_spec()}}
    if playbook == "evaluate":
        request["playbook"] = playbook
    state = await meta.ainvoke({"request": request}, _config())
    assert state["result"]["status"] == "done", state["routing_trace"]
    assert state["result"]["playbook"] == playbook
    classified = [t for t in state["routing_trace"] if t["node"] == "classify_failure"]
    assert len(classified) == 1 and classified[0]["route_to"] == "architect"
    assert [m["priority"] for m in classified[0]["matched"]] == [8]
    assert state["loops"] == {"architect": 1}
    assert state["artifacts"]["SystemSpec"]["version"] == 2
    assert state["result"]["gates"]["quality"]["passed"] is True
    applied = [t for t in state["routing_trace"] if t["node"] == "apply_promotion"]
    if playbook == "debug":
        # The Optimizer proposed the repair; the Architect, owner of the SystemSpec, applied it.
        assert [(t["owner"], t["decision"]) for t in applied] == [("architect", "accepted")]
        assert "PromotionDecision" in state["artifacts"]
        assert [p["status"] for p in state["result"]["promotions"]] == ["accepted"]
    else:
        assert applied == [] and state["result"]["promotions"] == []


async def test_the_optimize_playbook_promotes_an_experiment_and_measures_it_again(meta: Any) -> None:
    system = design_system(TRIAGE, "lean_desk", "langgraph")
    # Eval's spawns held to 5: the second swarm needs spawns reallocated from the other roles.
    request = {
        "text": "Optimize the lean desk system: make it cheaper",
        "artifacts": {"SystemSpec": system},
        "budgets": {"eval": {"max_spawns": 5}},
    }
    state = await meta.ainvoke(
        {"request": {**request, "artifacts": {"SystemSpec": system.model_dump()}}}, _config()
    )
    result = state["result"]
    assert (result["status"], result["playbook"]) == ("done", "optimize"), state["routing_trace"]
    assert {"ExperimentSpec", "PromotionDecision"} <= set(result["artifacts"])
    assert [(p["proposer"], p["status"], p["applied_version"]) for p in result["promotions"]] == [
        ("optimizer", "accepted", 2)
    ]
    ran = [entry["phase"] for entry in state["history"]]
    # The baseline ran again on the promoted spec (its second swarm needed spawns reallocated to Eval)
    # before the recompile and the production gate.
    assert ran.index("apply_promotion") < len(ran) - 1 - ran[::-1].index("baseline") < ran.index("recompile")
    assert [t["why"] for t in state["routing_trace"] if t["why"].startswith("reallocated")] == [
        "reallocated to eval"
    ]
    assert result["gates"]["production"]["passed"] is True


async def _live_names(resources: RuntimeResources) -> set[str]:
    tenant = await load_tenant(resources.database.pool, TENANT)
    return set(await live_agents(resources.database.pool, TENANT, tenant.capability_version))


async def test_the_human_gate_waits_for_an_answer_and_nothing_is_routable_before_it(
    meta: Any, resources: RuntimeResources
) -> None:
    config = _config()
    request = {"text": TRIAGE, "name": "gated_desk", "autonomous": False, "human_gate": "required"}
    state = await meta.ainvoke({"request": request}, config)
    snapshot = await meta.aget_state(config)
    asked = snapshot.tasks[0].interrupts[0].value
    assert asked["kind"] == "meta_review" and "SystemSpec" in asked["artifacts"]
    assert "result" not in state
    # Evaluated (the gates ran on the unregistered system), yet nothing of it is an agent yet.
    assert asked["gates"]["quality"]["passed"] is True
    assert not {name for name in await _live_names(resources) if name.startswith("gated_desk")}
    state = await meta.ainvoke(Command(resume={"action": "approve"}), config)
    assert state["result"]["status"] == "done"
    assert [e["decision"] for e in state["history"][-3:]] == ["approve", "compiler.register", "done"]
    assert state["result"]["registered_agent"] == "gated_desk"
    assert "gated_desk" in await _live_names(resources)


async def test_an_exhausted_budget_is_reallocated_once_then_ends_partial(meta: Any) -> None:
    request = {"text": TRIAGE, "name": "thrifty_desk", "budgets": {"architect": {"max_steps": 0}}}
    state = await meta.ainvoke({"request": request}, _config())
    reallocated = [t for t in state["routing_trace"] if t["why"].startswith("reallocated")]
    assert len(reallocated) == 1 and reallocated[0]["gained"]["max_steps"] > 0
    assert state["result"]["status"] == "done"

    # Too few spawns for the eval's swarm, and none the request's global budget could move to it.
    budgets = {"eval": {"max_spawns": 1}, "global": {"max_spawns": 1}}
    request = {"text": TRIAGE, "name": "starved_desk", "budgets": budgets}
    state = await meta.ainvoke({"request": request}, _config())
    assert state["result"]["status"] == "partial"
    assert state["result"]["left_undone"] == ["eval case urgency_medium", "eval case urgency_low"]
    assert "ExperimentReport" not in state["result"]["artifacts"]
