"""What an input mentions by meaning: a category a request names, found in an input that words it
otherwise (the local MiniLM embedder, at the threshold measured on the tuning requests), never through
a negated segment or a look-alike that shares the category's words; an embedder with no measured
threshold senses nothing."""

from __future__ import annotations

from typing import Any

import pytest

from master_agent.capabilities.tools.senses import phrases, sensed, sensed_items, sensed_sql
from master_agent.meta.design import design_system, design_tools, expected_value, field_rules, mentioned
from master_agent.models.embeddings import HashingEmbedder, LocalMiniLMEmbedder
from master_agent.runtime import RuntimeResources
from tests.test_meta_rules import _passing, built

__all__ = ["built"]  # the built-system fixture of the rule tests


def test_phrases_skip_negated_segments_and_function_word_edges() -> None:
    offered = phrases("Client dinner (3 people, no alcohol): $180.00. Receipt: not attached | Wine and beer")
    assert "no alcohol" not in offered and "alcohol" not in offered
    assert "attached" not in offered
    assert {"Wine", "beer", "Wine and beer", "Client dinner"} <= set(offered)
    assert "and beer" not in offered  # a run never starts or ends with a function word


def test_the_sql_asks_for_each_item_and_the_runner_reads_them_back() -> None:
    odd = "o'brien 5%"
    sql = f"SELECT CASE WHEN {sensed_sql('alcohol')} OR {sensed_sql(odd)} THEN 1 END"
    assert sensed_items(sql) == ["alcohol", "o'brien 5%"]


async def test_an_embedder_without_a_measured_threshold_senses_nothing() -> None:
    assert await sensed(HashingEmbedder(), "alcohol alcohol", ["alcohol"]) == []
    assert await sensed(None, "wine and beer", ["alcohol"]) == []


@pytest.mark.parametrize(
    ("text", "items", "found"),
    [
        ("Team celebration: wine and beer, $120.00", ["alcohol"], ["alcohol"]),
        ("Total due: USD 4,300.00", ["us dollars"], ["us dollars"]),
        ("timeouts connecting to primary MySQL", ["database"], ["database"]),
        ("Client dinner, no wine or beer ordered", ["alcohol"], []),  # negated where it is said
        ("Vendor: Globex Consulting Ltd", ["globex corporation"], []),  # a look-alike shares its words
        ("The legal name on the invoice is wrong", ["lawyer"], []),  # under the measured threshold
        ("Coffee and pastries for the workshop", ["alcohol"], []),
    ],
)
async def test_the_local_embedder_senses_categories_worded_otherwise(
    text: str, items: list[str], found: list[str]
) -> None:
    assert LocalMiniLMEmbedder.available(), "the local embedder is missing: run 'make install'"
    assert await sensed(LocalMiniLMEmbedder(), text, items) == found


def test_the_eval_specs_reading_counts_what_was_sensed() -> None:
    request = (
        "Build an agent system that reviews expense claims. It returns a JSON object with decision (approve or "
        'reject). A claim for alcohol is rejected (decision "reject"); all other claims are approved '
        '(decision "approve").'
    )
    system = design_system(request, "claims_review", "langgraph")
    rules = field_rules(system.requirements)["decision"]
    text = "Claim: wine and beer, $120."
    assert not mentioned("alcohol", text)
    assert mentioned("alcohol", text, {text: ["alcohol"]})
    assert expected_value(rules, text) == "approve"
    assert expected_value(rules, text, senses={text: ["alcohol"]}) == "reject"
    (tool,) = [t for t in design_tools(system).tools if "decision" in t.returns]
    assert sensed_items(tool.implementation.sql) == ["alcohol"]


async def test_the_built_system_rejects_a_category_its_input_words_otherwise(
    built: tuple[Any, str], resources: RuntimeResources
) -> None:
    graph, tenant = built
    request = (
        "Build an agent system that checks catering orders. It returns a JSON object with route (bar or "
        'kitchen). Orders for alcohol go to route "bar"; all other orders go to route "kitchen".'
    )
    system = await _passing(resources, graph, tenant, request, "catering_check")
    for text, route in [
        ("Order 17: two crates of lager and a case of red wine", "bar"),
        ("Order 18: sandwiches and fruit juice", "kitchen"),
        ("Order 19: sandwiches, no wine or beer please", "kitchen"),
    ]:
        out = await system.ainvoke(
            {"goal": text, "context": {"order": text, "catering_order": text}},
            {"configurable": {"tenant_id": tenant}},
        )
        assert out["solution"]["route"] == route, (text, out["solution"])
