"""With a chat model configured, the role leads draft their artifacts as structured output: recorded
OpenAI chat-completion answers (tests/recordings/meta_drafts.json) through the real client. A
schema-refused answer is asked for once more; a failing model leaves the offline draft, said so."""

from __future__ import annotations

import dataclasses
import uuid

import pytest

from master_agent.capabilities import install_tenant
from master_agent.meta.artifacts import PromptPack, SystemSpec
from master_agent.meta.broker import StateBroker
from master_agent.meta.playbooks import STANDARD_ROLES, ConstraintPack
from master_agent.meta.roles import RoleContext, architect_design, prompts_design
from master_agent.runtime import RuntimeResources
from tests.model_exchanges import Script, load_recordings
from tests.test_meta_requirements import PURCHASES

RECORDED = load_recordings("meta_drafts")


async def _context(resources: RuntimeResources, script: Script, role: str) -> RoleContext:
    tenant = f"meta-{uuid.uuid4().hex[:8]}"
    await install_tenant(resources.database.pool, resources.settings, "retail", tenant)
    broker = await StateBroker.open_request(
        resources.database.pool, tenant, PURCHASES, resources.evolution.clock.now
    )
    modelled = dataclasses.replace(resources, model=script.chat_model(resources.settings))
    return RoleContext(
        resources=modelled,
        broker=broker,
        tenant_id=tenant,
        request=PURCHASES,
        runtime_target="langgraph",
        constraints=ConstraintPack(),
        budget=STANDARD_ROLES[role],
        system_name="orders_desk",
    )


async def test_the_architect_drafts_with_the_model_and_is_asked_again_once(
    resources: RuntimeResources,
) -> None:
    script = Script(["system_spec_without_components", "system_spec"], recorded=RECORDED)
    ctx = await _context(resources, script, "architect")
    result = await architect_design(ctx)
    assert result.note.startswith("SystemSpec drafted by the model after one refusal")
    assert result.fallback is None
    system = await ctx.broker.read_full("architect", "SystemSpec")
    assert isinstance(system, SystemSpec)
    assert system.description.startswith("Routes each purchase order")  # the model's words
    assert [r.id for r in system.requirements] == ["r1", "r2"]  # read from the request, kept
    assert len(script.requests) == 2
    assert script.requests[0]["tools"][0]["function"]["name"] == "SystemSpec"
    assert "was refused" in script.requests[1]["messages"][-1]["content"]


async def test_prompts_drafted_by_the_model_carry_every_requirement(resources: RuntimeResources) -> None:
    ctx = await _context(resources, Script(["system_spec"], recorded=RECORDED), "architect")
    await architect_design(ctx)
    ctx.resources = dataclasses.replace(
        ctx.resources, model=Script(["prompt_pack"], recorded=RECORDED).chat_model(resources.settings)
    )
    result = await prompts_design(ctx)
    assert result.note == "PromptPack drafted by the model"
    pack = await ctx.broker.read_full("prompt_policy", "PromptPack")
    assert isinstance(pack, PromptPack)
    decider = pack.prompts["decide_approver"]
    assert decider.system_prompt.startswith("You are decide_approver of the orders desk")
    assert any(p.startswith("Requirement r1: Orders over EUR 20,000") for p in decider.policies)


@pytest.mark.parametrize("steps", [["server_error"], ["system_spec_without_components"]])
async def test_a_failing_model_leaves_the_offline_draft_and_says_so(
    resources: RuntimeResources, steps: list[str]
) -> None:
    ctx = await _context(resources, Script(steps, recorded=RECORDED), "architect")
    result = await architect_design(ctx)
    assert result.fallback is not None and "the model's draft failed" in result.fallback
    system = await ctx.broker.read_full("architect", "SystemSpec")
    assert isinstance(system, SystemSpec) and system.description.startswith("Reviews purchase orders")
