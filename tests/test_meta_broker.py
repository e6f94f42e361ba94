"""The state broker on the real database (ownership and reads enforced in code, versions, tenant scope),
and a compiled system registered as tenant agents that run at once on the offline model."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import pytest

from master_agent.capabilities import install_tenant, load_tenant
from master_agent.capabilities.agents import live_agents
from master_agent.errors import ArtifactAccessError, InputError, NotFoundError
from master_agent.meta.artifacts import (
    Change,
    PromotionDecision,
    PromptPack,
    SystemSpec,
    apply_changes,
    diff_changes,
)
from master_agent.meta.broker import StateBroker
from master_agent.meta.compiler import compile_system
from master_agent.meta.design import design_eval, design_prompts, design_system, design_tools
from master_agent.meta.evaluation import meta_evaluation
from master_agent.meta.playbooks import STANDARD_ROLES, ConstraintPack
from master_agent.meta.roles import TASKS, RoleContext, RoleResult
from master_agent.meta.systems import register_system
from master_agent.runtime import RuntimeResources
from master_agent.runtime.factory import master_graph
from tests.test_meta_units import TRIAGE

TENANT = "meta-lab"


def _now() -> datetime:
    return datetime.now(UTC)


async def test_only_the_owner_writes_and_reads_are_checked_by_role(resources: RuntimeResources) -> None:
    pool = resources.database.pool
    await install_tenant(pool, resources.settings, "retail", TENANT)
    broker = await StateBroker.open_request(pool, TENANT, TRIAGE, _now)
    system = design_system(TRIAGE, None, "langgraph")
    first = await broker.write("architect", system)
    second = await broker.write("architect", system.model_copy(update={"description": "Triage tickets."}))
    assert (first.version, second.version) == (1, 2) and first.summary_hash != second.summary_hash
    for role in ("prompt_policy", "optimizer", "compiler", "eval"):
        with pytest.raises(ArtifactAccessError, match=f"{role} may not write SystemSpec"):
            await broker.write(role, system)  # type: ignore[arg-type]
    assert await broker.versions("SystemSpec") == [1, 2]

    await broker.write("prompt_policy", design_prompts(system))
    with pytest.raises(ArtifactAccessError, match="tooling may not read whole PromptPack"):
        await broker.read_full("tooling", "PromptPack")
    with pytest.raises(ArtifactAccessError):
        await broker.read_section("orchestrator", "SystemSpec", "components")
    assert isinstance(await broker.read_full("compiler", "PromptPack"), PromptPack)
    assert "triage" in await broker.read_summary("PromptPack")
    whole = await broker.read_full("tooling", "SystemSpec", version=1)
    assert (
        isinstance(whole, SystemSpec)
        and whole.version == 1
        and whole.description.startswith("Triages incoming")
    )
    assert await broker.read_section("eval", "SystemSpec", "components.draft.outputs") == ["reply"]
    with pytest.raises(NotFoundError):
        await broker.read_summary("CompiledSpec")

    # Another tenant naming the same request sees nothing and can write nothing.
    await install_tenant(pool, resources.settings, "retail", "meta-other")
    stranger = StateBroker(pool, "meta-other", broker.request_id, _now)
    with pytest.raises(NotFoundError):
        await stranger.read_summary("SystemSpec")
    with pytest.raises(NotFoundError):
        await stranger.write("architect", system)
    assert await broker.versions("SystemSpec") == [1, 2]


async def test_a_compiled_system_is_registered_and_runs_at_once(resources: RuntimeResources) -> None:
    pool = resources.database.pool
    await install_tenant(pool, resources.settings, "retail", TENANT)
    system = design_system(TRIAGE, "triage_desk", "langgraph")
    compiled = compile_system(system, design_prompts(system), design_tools(system))
    names = await register_system(resources, TENANT, compiled, uuid.uuid4())
    assert names == ["triage_desk_triage", "triage_desk_draft", "triage_desk"]
    # Registering it again makes new versions of the same agents, not duplicates.
    assert await register_system(resources, TENANT, compiled, uuid.uuid4()) == names
    tenant = await load_tenant(pool, TENANT)
    agents = await live_agents(pool, TENANT, tenant.capability_version)
    supervisor = agents["triage_desk"]
    assert supervisor.version == 2
    for case in design_eval(system).cases:
        config = {"configurable": {"tenant_id": TENANT, "agent_id": supervisor.assistant_id}}
        graph = await master_graph(resources, config)  # type: ignore[arg-type]
        result = await graph.ainvoke(
            {"goal": str(case.inputs["ticket"]), "context": case.inputs},
            config,  # type: ignore[arg-type]
        )
        solution = result["solution"]
        assert solution["urgency"] == case.expect["urgency"], (case.id, solution)
        assert case.expect["urgency"] in solution["reply"]


async def test_a_promotion_is_decided_only_by_its_owner_and_every_decision_is_kept(
    resources: RuntimeResources,
) -> None:
    pool = resources.database.pool
    await install_tenant(pool, resources.settings, "retail", TENANT)
    broker = await StateBroker.open_request(pool, TENANT, TRIAGE, _now)
    system = design_system(TRIAGE, None, "langgraph")
    await broker.write("architect", system)
    before = system.model_dump(mode="json")

    def proposal(*changes: Change) -> PromotionDecision:
        return PromotionDecision(
            target_artifact="SystemSpec",
            base_version=1,
            proposed_changes=list(changes),
            justification="cheaper",
        )

    tighter = proposal(
        *diff_changes(before, apply_changes(before, [_set("components.triage.budget.max_tool_calls", 2)]))
    )
    with pytest.raises(ArtifactAccessError, match="architect may not write PromotionDecision"):
        await broker.propose("architect", tighter)
    _, pending = await broker.propose("optimizer", tighter)
    assert pending.status == "pending" and pending.proposer == "optimizer"
    with pytest.raises(ArtifactAccessError, match="tooling may not decide a promotion of SystemSpec"):
        await broker.decide("tooling", pending.decision_id, "accepted", "not mine to say")

    async def owner_decides(decision_id: uuid.UUID) -> RoleResult:
        ctx = RoleContext(
            resources=resources,
            broker=broker,
            tenant_id=TENANT,
            request=TRIAGE,
            runtime_target="langgraph",
            constraints=ConstraintPack(),
            budget=STANDARD_ROLES["architect"],
            promotion_id=str(decision_id),
        )
        return await TASKS[("architect", "apply")](ctx)

    accepted = await owner_decides(pending.decision_id)
    assert accepted.promotion is not None and accepted.promotion.status == "accepted"
    assert [ref.version for ref in accepted.wrote] == [2]
    applied = await broker.read_full("architect", "SystemSpec")
    assert isinstance(applied, SystemSpec) and applied.components[0].budget is not None
    assert applied.components[0].budget.max_tool_calls == 2
    with pytest.raises(InputError, match="already accepted"):
        await broker.decide("architect", pending.decision_id, "rejected", "changed my mind")

    # Changes that do not apply are refused with the reason; the artifact stays as it was.
    _, stale = await broker.propose("optimizer", proposal(Change(op="remove", path="components.nope")))
    rejected = await owner_decides(stale.decision_id)
    assert rejected.promotion is not None and rejected.promotion.status == "rejected"
    assert "no 'nope'" in (rejected.promotion.reason or "") and rejected.wrote == []
    # Changes that leave a compile error are applied with the owner's own repair.
    _, unbudgeted = await broker.propose("optimizer", proposal(_set("components.draft.budget", None)))
    modified = await owner_decides(unbudgeted.decision_id)
    assert modified.promotion is not None and modified.promotion.status == "modified"
    assert "missing_budget" in (modified.promotion.reason or "")
    assert await broker.versions("SystemSpec") == [1, 2, 3]
    assert [(p.status, p.applied_version) for p in await broker.promotions()] == [
        ("accepted", 2),
        ("rejected", None),
        ("modified", 3),
    ]
    figures = await meta_evaluation(pool, TENANT)
    assert figures.promotions_accepted >= 2 and figures.promotions_rejected >= 1


def _set(path: str, value: object) -> Change:
    return Change(op="set", path=path, value=value)
