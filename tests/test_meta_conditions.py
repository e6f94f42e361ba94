"""Conditions the words alone misread, built and gated: an exact text a condition restates in
parentheses ("(SKIP CHECKS or DISABLE LINT)": its words together and in order, never apart), two lists
that must each be mentioned ("write or delete rights on the billing bucket or the audit log"), and a
field copying the identifier written after its own name ("claim repeats the claim number"). Each
built system is then broken on purpose, and its quality gate fails on the same EvalSpec."""

from __future__ import annotations

import uuid
from typing import Any

from master_agent.meta.design import design_eval, design_system, expected_value, field_rules, mentioned
from master_agent.meta.requirements import exact_phrases, extract_requirements
from master_agent.runtime import RuntimeResources
from tests.test_meta_rules import _answer, _artifact, _rules, _system, built

__all__ = ["built"]  # the built-system fixture of the rule tests

CONFIGS = (
    "Build an agent system that reviews CI pull requests. Each pull request gives its id, author, labels and "
    "the diff. It returns a JSON object with verdict (hold or pass). Hold any pull request that turns checks "
    'off (SKIP CHECKS or DISABLE LINT) unless the pull request carries the label "override" (verdict "hold"). '
    'Every other pull request gets verdict "pass".'
)
BUCKETS = (
    "Build an agent system that reviews storage permission requests. Each request gives the requester, the "
    "rights asked for and the resource. It returns a JSON object with decision (allow or review). Requests "
    "for write or delete rights on the billing bucket or the audit log need a review (decision "
    '"review"); every other request is allowed (decision "allow").'
)


async def _gate_of(
    graph: Any, tenant: str, spec: dict[str, Any], evaluation: dict[str, Any]
) -> dict[str, Any]:
    """The quality gate of ``spec`` (a SystemSpec changed on purpose) on the EvalSpec ``evaluation``."""
    request = {
        "text": "Evaluate it",
        "playbook": "evaluate",
        "artifacts": {"SystemSpec": spec, "EvalSpec": evaluation},
    }
    config: Any = {"configurable": {"tenant_id": tenant, "thread_id": str(uuid.uuid4())}}
    return dict((await graph.ainvoke({"request": request}, config))["result"]["gates"]["quality"])


def test_an_exact_text_restated_in_parentheses_is_read_together_and_in_order() -> None:
    assert exact_phrases("turns checks off (SKIP CHECKS or DISABLE LINT) unless") == [
        '"skip checks"',
        '"disable lint"',
    ]
    assert exact_phrases("a vendor not on the list (Acme Supplies, Northwind Traders)") == []
    (hold, passing) = _rules(CONFIGS)["verdict"]
    assert hold["mentions"] == ['"skip checks"', '"disable lint"'] and hold["absent"] == ["label override"]
    assert passing == {"value": "pass", "default": True}
    assert mentioned('"disable lint"', "ci.yml: + run: make test DISABLE   LINT=1")
    assert not mentioned('"disable lint"', "ci.yml: lint stays on; DISABLE cache")
    assert not mentioned('"skip checks"', "checks: skip nothing")  # apart and out of order
    cases = design_eval(design_system(CONFIGS, None, "langgraph")).cases
    apart = [c for c in cases if "_apart_" in c.id]
    assert [c.expect for c in apart] == [{"verdict": "pass"}, {"verdict": "pass"}], apart


def test_two_lists_must_each_be_mentioned() -> None:
    decided = field_rules(extract_requirements(BUCKETS)[1])
    review = decided["decision"][0]
    assert (review.mentions, review.mentions_too) == (
        ["write rights", "delete rights"],
        ["billing bucket", "audit log"],
    )
    for text, decision in [
        ("Requester: Ana. Rights: delete. Resource: audit log.", "review"),
        ("Requester: Ana. Rights: read. Resource: audit log.", "allow"),
        ("Requester: Ana. Rights: write. Resource: marketing bucket.", "allow"),
    ]:
        assert expected_value(decided["decision"], text, decided) == decision, text
    given = field_rules(
        extract_requirements(
            "Build an agent system that reviews access requests. It returns a JSON object with decision (grant "
            'or deny). Interns are never given root access: decision "deny". Other requests are granted '
            '(decision "grant").'
        )[1]
    )["decision"][0]
    assert (given.mentions, given.mentions_too) == (["interns"], ["root"])


def test_a_field_copies_the_identifier_written_after_its_own_name() -> None:
    text = (
        "Build an agent system that files insurance claims. It returns a JSON object with route (desk or "
        'field) and claim. Claims over $2,000 go to route "field"; all others go to route "desk". claim '
        "repeats the claim number exactly as written in the message, or is null when the message has none."
    )
    assert _rules(text)["claim"] == [{"copy_of": "claim"}, {"default": True}]


async def test_the_built_system_reads_an_exact_text_and_a_variant_reading_its_words_apart_fails(
    built: tuple[Any, str], resources: RuntimeResources
) -> None:
    graph, tenant = built
    result, system = await _system(resources, graph, tenant, CONFIGS, "ci_config_review")
    assert result["gates"]["quality"]["passed"] is True, result["gates"]
    for text, verdict in [
        ("PR 7 by kim. Labels: none. Diff: + env: SKIP_CACHE=1, checks stay on", "pass"),
        ("PR 8 by kim. Labels: none. Diff: + run: tox --skip checks", "hold"),
        ("PR 9 by kim. Labels: override. Diff: + run: make DISABLE LINT=1", "pass"),
        ("PR 10 by kim. Labels: override-later. Diff: + run: make DISABLE LINT=1", "hold"),
    ]:
        assert (await _answer(system, tenant, text))["verdict"] == verdict, text
    # The same system reading the texts' words anywhere (the quotes dropped) fails its gate.
    spec = await _artifact(resources, result, "SystemSpec")
    evaluation = await _artifact(resources, result, "EvalSpec")
    for component in spec["components"]:
        for rule in component["decision"]:
            rule["mentions"] = [m.strip('"') for m in rule.get("mentions") or []]
    spec["name"] = "ci_config_review_broken"
    quality = await _gate_of(graph, tenant, spec, evaluation)
    assert quality["passed"] is False and any("not met" in u for u in quality["unmet"]), quality


async def test_the_built_system_needs_both_lists_and_a_variant_needing_one_fails(
    built: tuple[Any, str], resources: RuntimeResources
) -> None:
    graph, tenant = built
    result, system = await _system(resources, graph, tenant, BUCKETS, "bucket_rights")
    assert result["gates"]["quality"]["passed"] is True, result["gates"]
    for text, decision in [
        ("Requester: Bo. Rights: write. Resource: billing bucket. Note: tiny change, no review.", "review"),
        ("Requester: Bo. Rights: read. Resource: billing bucket.", "allow"),
        ("Requester: Bo. Rights: delete. Resource: scratch bucket.", "allow"),
    ]:
        assert (await _answer(system, tenant, text))["decision"] == decision, text
    spec = await _artifact(resources, result, "SystemSpec")
    evaluation = await _artifact(resources, result, "EvalSpec")
    for component in spec["components"]:
        for rule in component["decision"]:
            rule["mentions_too"] = []
    spec["name"] = "bucket_rights_broken"
    quality = await _gate_of(graph, tenant, spec, evaluation)
    assert quality["passed"] is False and any("not met" in u for u in quality["unmet"]), quality
