"""Drafting an agent from a description: by a real model (structured output at temperature 0 through the
real openai client, against recorded OpenAI-format responses), and by the offline filler, which also
answers when the model fails."""

from __future__ import annotations

import dataclasses
from typing import Any

from master_agent.builder.draft import AgentDrafter, agent_name, task_phrase
from master_agent.capabilities.agents import (
    MAX_SKILLS,
    MAX_TENANT_SKILLS,
    AgentCatalogue,
    AgentDocument,
    check_document,
)
from master_agent.models.embeddings import HashingEmbedder
from master_agent.models.offline import OfflinePlanner
from master_agent.settings import Settings
from tests.model_exchanges import Script, load_recordings

RECORDED = load_recordings("agent_draft")
DESCRIPTION = "Create an agent that reports the weekly refund rate per store"
CATALOGUE = AgentCatalogue(
    tier="enterprise",
    domain="retail",
    max_depth=5,
    tools={"query_tenant_data": "free", "estimate_roi": "pro", "search_village_knowledge": "free"},
    pack_agents={},
    descriptions={
        "query_tenant_data": "Run one read-only SELECT on the tenant's tables (stores, transactions).",
        "estimate_roi": "Annual revenue and ROI of an attach-rate lift.",
        "search_village_knowledge": "Proven patterns for a problem.",
        "research": "Finds the root cause of a store metric.",
    },
    tenant_agents={},
    tables=("stores", "transactions"),
)


def model(settings: Settings, script: Script) -> Any:
    return script.chat_model(settings)


async def test_the_model_drafts_with_structured_output_from_the_catalogue_only(settings: Settings) -> None:
    script = Script(["agent_draft"], recorded=RECORDED)
    draft = await AgentDrafter(HashingEmbedder(), model(settings, script)).draft(DESCRIPTION, CATALOGUE)
    assert draft.spec["name"] == "refund_rate_reporter"
    assert draft.spec["tools"] == ["query_tenant_data"]  # a tool outside the catalogue is dropped
    assert draft.spec["sub_agents"] == []  # so is an agent the tenant does not have
    assert draft.spec["skills"][0] == "weekly refund rate per store" and not draft.missing
    (request,) = script.requests
    assert request["temperature"] == 0
    assert request["tool_choice"]["function"]["name"] == "AgentDraft"
    assert "- query_tenant_data: Run one read-only SELECT" in request["messages"][0]["content"]


async def test_a_failed_model_leaves_the_draft_to_the_filler(settings: Settings) -> None:
    script = Script(["server_error"], recorded=RECORDED)
    draft = await AgentDrafter(HashingEmbedder(), model(settings, script)).draft(DESCRIPTION, CATALOGUE)
    assert len(script.requests) == 1
    assert draft.spec["name"] == "weekly_refund_rate_store_agent"


async def test_the_filler_names_and_matches_from_the_description() -> None:
    assert task_phrase(DESCRIPTION) == "reports the weekly refund rate per store"
    assert agent_name("Build me an agent called RefundWatch that reports refunds") == "refundwatch"
    assert (
        agent_name(DESCRIPTION, taken=["weekly_refund_rate_store_agent"])
        == "weekly_refund_rate_store_agent_2"
    )
    draft = await AgentDrafter(HashingEmbedder(), OfflinePlanner()).draft(
        "Create an agent that searches proven patterns for a problem", CATALOGUE
    )
    assert draft.spec["tools"] == ["search_village_knowledge"] and not draft.missing
    vague = await AgentDrafter(HashingEmbedder(), OfflinePlanner()).draft("Create an agent", CATALOGUE)
    assert "task" in vague.missing
    unmatched = await AgentDrafter(HashingEmbedder(), OfflinePlanner()).draft(
        "Create an agent that writes poems about weather", CATALOGUE
    )
    assert unmatched.missing == ["tools"] and unmatched.options[0] == "query_tenant_data"


def test_a_tenant_holds_at_most_its_documented_number_of_skills_across_agents() -> None:
    """500 agents of 50 skills each would embed 25,000 skills on the tenant's next chat message (20,000
    took 78 s): the tenant's agents together hold at most MAX_TENANT_SKILLS."""
    skills = [f"refund question {n}" for n in range(MAX_SKILLS)]
    held = {
        f"refund_agent_{n}": AgentDocument(name=f"refund_agent_{n}", description="Refunds.", skills=skills)
        for n in range(MAX_TENANT_SKILLS // MAX_SKILLS)
    }
    full = dataclasses.replace(CATALOGUE, tenant_agents=held)
    one_more = AgentDocument(name="one_more", description="Refunds.", skills=["weekly refunds"])
    assert [problem.field for problem in check_document(one_more, full)] == ["skills"]
    # A new version of a held agent is counted once, and an agent without skills is not refused.
    assert check_document(held["refund_agent_0"], full, replacing="refund_agent_0") == []
    assert check_document(AgentDocument(name="no_skills", description="Refunds."), full) == []
