"""What an input mentions by meaning: a category a request names, found in an input that words it
otherwise (the local MiniLM embedder, at the threshold measured on the tuning requests), never through
a negated segment or a look-alike that shares the category's words; an embedder with no measured
threshold senses nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from master_agent.capabilities.tools import lexicon
from master_agent.capabilities.tools.senses import phrases, sensed, sensed_items, sensed_sql
from master_agent.meta.design import (
    design_system,
    design_tools,
    expected_value,
    field_rules,
    mentioned,
    sensed_eval,
)
from master_agent.models.embeddings import HashingEmbedder, LocalMiniLMEmbedder
from master_agent.runtime import RuntimeResources
from tests.test_meta_conditions import _gate_of
from tests.test_meta_rules import _artifact, _system, built

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
    # WordNet alone knows no "MySQL": what the embedder would sense stays unsensed without it.
    assert await sensed(None, "timeouts connecting to primary MySQL", ["database"]) == []


@pytest.mark.parametrize(
    ("text", "items", "found"),
    [
        ("Two pints of lager and a gin and tonic", ["alcohol"], ["alcohol"]),  # kinds of alcohol
        ("My attorney will be in touch", ["lawyer", "regulator"], ["lawyer"]),  # the same sense
        ("Carry-on: a handgun case", ["weapons"], ["weapons"]),
        ("Carry-on: a fishing rod", ["weapons"], []),  # "gat" is rod's sixth sense: not counted
        ("Order: no lager this time, only juice", ["alcohol"], []),  # negated where it is said
        ("Order: a wooden chair", ["material"], []),  # a category too broad to sense by its kinds
    ],
)
async def test_wordnet_senses_a_kind_of_the_category_without_any_embedder(
    text: str, items: list[str], found: list[str]
) -> None:
    assert lexicon.available(), "WordNet is missing: run 'make install' (Debian wordnet-base, nltk)"
    assert await sensed(None, text, items) == found


@pytest.mark.parametrize(
    ("text", "items", "found"),
    [
        # "charger" is first a war horse in WordNet: the words around it pick its sense.
        ("Receipts: phone charger $35.00; tax $2.80. Description: two days without my bag.", ["horse"], []),
        ("Contents: a laptop charger and a power bank", ["horse"], []),
        ("He rode his charger into battle", ["horse"], ["horse"]),
        ("The artillery battery fired its guns", ["military unit"], ["military unit"]),
    ],
)
async def test_a_word_is_read_in_the_sense_its_context_picks(
    text: str, items: list[str], found: list[str]
) -> None:
    assert lexicon.available(), "WordNet is missing: run 'make install' (Debian wordnet-base, nltk)"
    assert lexicon.kind_named(items[0], ["charger", "battery"]) is not None  # either sense, out of context
    assert lexicon.kind_named("alcohol", ["lager"], "Two pints of lager at the pub") == "lager"
    assert await sensed(None, text, items) == found


def test_missing_wordnet_files_say_how_to_install_them(tmp_path: Path) -> None:
    with pytest.raises(lexicon.WordNetMissing, match="wordnet-base"):
        lexicon.wordnet(tmp_path)


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
    result, system = await _system(resources, graph, tenant, request, "catering_check")
    assert result["gates"]["quality"]["passed"] is True, result["gates"]
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
    # Its EvalSpec words the category by one of its kinds; the same system reading the word alone (an
    # exact text: no sense) fails its gate on that EvalSpec.
    evaluation = await _artifact(resources, result, "EvalSpec")
    assert any("_kind_" in c["id"] and c["expect"] == {"route": "bar"} for c in evaluation["cases"])
    spec = await _artifact(resources, result, "SystemSpec")
    for component in spec["components"]:
        for rule in component["decision"]:
            rule["mentions"] = [f'"{m}"' for m in rule.get("mentions") or []]
    spec["name"] = "catering_check_broken"
    quality = await _gate_of(graph, tenant, spec, evaluation)
    assert quality["passed"] is False and any("not met" in u for u in quality["unmet"]), quality


MOBILITY = (
    "Build an agent system that sorts delayed-luggage claims. Each claim gives the flight and the passenger's "
    "description. It returns a JSON object with queue (special or standard). Claims mentioning a wheelchair, a "
    'mobility scooter or another mobility aid go to queue "special"; every other claim goes to queue "standard".'
)
SPIRITS = (
    "Build an agent system that screens expense claims. Each claim gives the employee and what was bought. It "
    'returns a JSON object with decision (hold or pay). A claim for alcohol is held (decision "hold"); every '
    'other claim is paid (decision "pay").'
)


def test_wordnet_gives_a_category_another_name_and_a_near_miss_beside_it() -> None:
    assert lexicon.a_synonym("lawyer") == "attorney"
    assert lexicon.a_near_miss("alcohol") in ("coffee", "tobacco")
    assert lexicon.a_near_miss("wheelchair") == "armchair"
    assert lexicon.knows_kinds("alcohol") and not lexicon.knows_kinds("mobility aid")
    # A near miss is no kind of the category; a synonym is the category itself.
    assert lexicon.kind_named("alcohol", ["coffee"]) is None
    assert lexicon.kind_named("alcohol", [lexicon.a_synonym("alcohol") or ""]) is not None


def test_an_open_category_wordnet_knows_no_kinds_of_is_reported_unread() -> None:
    (requirement,) = [
        r for r in design_system(MOBILITY, None, "langgraph").requirements if "queue" in r.fields
    ][:1]
    assert "another mobility aid" in requirement.unread, requirement
    # A category WordNet knows kinds of is sensed, so nothing is left unread.
    held = [r for r in design_system(SPIRITS, None, "langgraph").requirements if "decision" in r.fields]
    assert not any(u.startswith("another") for r in held for u in r.unread)


async def test_the_eval_words_a_category_by_a_synonym_and_tests_a_near_miss() -> None:
    # As the Eval lead reads its cases: what WordNet senses in each input counted (no embedder).
    cases = (await sensed_eval(design_system(SPIRITS, None, "langgraph"), 0.8, None)).cases
    said = {str(next(iter(c.inputs.values()))): c.expect["decision"] for c in cases if "decision" in c.expect}
    assert said["Claim about intoxicant, please help."] == "hold"
    assert said["Claim about coffee, please help."] == "pay"


async def test_the_gate_fails_a_system_that_cannot_tell_an_open_categorys_members(
    built: tuple[Any, str], resources: RuntimeResources
) -> None:
    graph, tenant = built
    result, _ = await _system(resources, graph, tenant, MOBILITY, "luggage_mobility")
    quality = result["gates"]["quality"]
    assert quality["passed"] is False, quality
    assert any("another mobility aid" in u and "needs a model" in u for u in quality["unmet"]), quality
