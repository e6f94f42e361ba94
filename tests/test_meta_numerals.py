"""Numbers as customers write them: read in digits by the built systems ("fifteen thousand dollars",
"1.5k", "two and a half grand", "€2.000,50", "band six"), and tested by the EvalSpec on each side of
every boundary, so that a system reading digits alone fails its quality gate."""

from __future__ import annotations

from typing import Any

import pytest

from master_agent.capabilities import agents, numerals
from master_agent.capabilities.numerals import (
    DIGITS_SUFFIX,
    digits_parameter,
    digits_read,
    in_digits,
    number_words,
    with_digits,
)
from master_agent.meta.artifacts import MAX_EVAL_CASES, EvalCase
from master_agent.meta.design import _kept, design_eval, design_system, expected_value, field_rules
from master_agent.runtime import RuntimeResources
from tests.test_meta_conditions import _gate_of
from tests.test_meta_rules import _answer, _artifact, _system, built

__all__ = ["built"]  # the built-system fixture of the rule tests

REFUNDS = (
    "Build an agent system that screens refund requests. Each request gives the customer, the order and "
    "the amount asked. It returns a JSON object with route (manager or auto). A refund of more than "
    '$15,000 goes to a manager (route "manager"); every other refund is processed automatically (route '
    '"auto").'
)


def _digits_unread(sql: str, parameters: dict[str, Any]) -> dict[str, Any]:
    """A runner that binds each digits reading to the text as written (numbers in words unread)."""
    return {**parameters, **{f"{name}{DIGITS_SUFFIX}": parameters[name] for name in digits_read(sql)}}


@pytest.mark.parametrize(
    ("text", "read"),
    [
        ("Limit: fifteen thousand dollars.", "Limit: $15000."),
        ("Requested: twenty thousand", "Requested: 20000"),
        ("two and a half grand", "$2500"),
        ("Refund of 1.5k please", "Refund of 1500 please"),
        ("15 thousand", "15000"),
        ("€2.000,50 and 12,50 €", "€2000.5 and 12.5 €"),
        ("1.250.000 EUR", "1250000 EUR"),
        ("thirty-six months", "36 months"),
        ("one at band 6, the other at band six", "1 at band 6, the other at band 6"),
        ("half a million euros", "€500000"),
        ("fifty percent", "50%"),
        ("nine hundred ninety-nine dollars and ninety-nine cents", "$999.99"),
        ("£3.4m", "£3400000"),
        ("about 2.5 grand, grand total $2,500", "about $2500, grand total $2,500"),
        ("Amount: two grand. Matched: €1.200,00.", "Amount: €2000. Matched: €1200."),  # the text's money
        ("Amount: €24,99 or EUR 25,00", "Amount: €24.99 or EUR 25"),
    ],
)
def test_numbers_in_words_suffixes_and_european_decimals_are_read_in_digits(text: str, read: str) -> None:
    assert in_digits(text) == read


@pytest.mark.parametrize(
    "text",
    [
        "Claim date: 2025-03-24. Flight: BA0287. Level L5.",  # dates and identifiers as written
        "Amount: $1,250.75, fee USD 300, 12000 points",  # digits as written
        "2.000 items",  # one dotted group may be a decimal: left alone
        "Coverage fell from 82.5 to 80.4 points",
        "waited: 2h 05m | unacknowledged 16m | 5G",  # a one-letter suffix other than k is a unit
    ],
)
def test_digits_dates_and_identifiers_are_left_as_written(text: str) -> None:
    assert in_digits(text) == text


def test_number_words_are_read_back_as_the_same_number() -> None:
    for number in [*range(0, 130), 999, 1001, 14_999, 15_000, 15_001, 250_000, 1_234_567]:
        assert in_digits(number_words(number)) == str(number), number_words(number)


def test_the_runner_binds_the_digits_reading_only_where_the_sql_asks() -> None:
    sql = f"SELECT {digits_parameter('request')}::text AS a, %(request)s::text AS b"
    assert digits_read(sql) == ["request"]
    assert digits_read("SELECT %(request)s::text") == []
    bound = with_digits(sql, {"request": "Refund: two grand."})
    assert bound == {"request": "Refund: two grand.", "request_in_digits": "Refund: $2000."}


def test_the_eval_writes_each_boundary_in_words_and_with_a_suffix_on_both_sides() -> None:
    system = design_system(REFUNDS, None, "langgraph")
    cases = {c.id: c for c in design_eval(system).cases}
    worded = {k: c for k, c in cases.items() if "_worded_" in k or "_suffixed_" in k}
    said = {str(next(iter(c.inputs.values()))): c.expect["route"] for c in worded.values()}
    assert said == {
        "Request: fifteen thousand one dollars.": "manager",
        "Request: fourteen thousand nine hundred ninety-nine dollars.": "auto",
        "Request: $16.5k.": "manager",
        "Request: $13.5k.": "auto",
    }, said
    # The request's meaning read from the same words: a grand is a thousand dollars.
    rules = field_rules(system.requirements)["route"]
    assert expected_value(rules, "Request: 15 grand.") == "auto"
    assert expected_value(rules, "Request: 15 grand and a cent.") == "manager"
    assert expected_value(rules, "Request: sixteen grand.") == "manager"


def test_a_computed_field_compared_is_written_through_its_formula_and_in_words() -> None:
    request = (
        "Build an agent system that checks overtime requests. Each request gives the hours worked this week "
        "and the extra hours asked. It returns a JSON object with hours_after and decision (deny or approve).\n"
        "- hours_after is the hours worked this week plus the extra hours asked.\n"
        '- Deny the request (decision "deny") when hours_after is more than 48.\n'
        '- Every other request is approved (decision "approve").'
    )
    cases = design_eval(design_system(request, None, "langgraph")).cases
    decided = {
        str(next(iter(c.inputs.values()))): c.expect["decision"] for c in cases if "decision" in c.expect
    }
    worded = {text: v for text, v in decided.items() if "thirty" in text or "forty" in text}
    assert sorted(worded.values()) == ["approve", "deny"], decided
    assert any(v == "deny" and ": 39." in t for t, v in decided.items()), decided  # 39 + 10 is past 48


async def test_a_system_reading_digits_alone_fails_the_gate_a_reading_one_passes(
    built: tuple[Any, str], resources: RuntimeResources, monkeypatch: pytest.MonkeyPatch
) -> None:
    graph, tenant = built
    result, system = await _system(resources, graph, tenant, REFUNDS, "refund_words")
    assert result["gates"]["quality"]["passed"] is True, result["gates"]
    for text, route in [
        ("Customer Ana, order 7781, asks for fifteen thousand and fifty dollars back.", "manager"),
        ("Customer Ana, order 7781, refund of 14.9k dollars.", "auto"),
        ("Customer Ana, order 7781, two and a half grand.", "auto"),
        ("Customer Ana, order 7781, $15,000.00 exactly.", "auto"),
    ]:
        assert (await _answer(system, tenant, text))["route"] == route, text
    spec = await _artifact(resources, result, "SystemSpec")
    evaluation = await _artifact(resources, result, "EvalSpec")
    # The same system whose query runner reads digits only: the worded cases fail its gate.
    monkeypatch.setattr(agents, "with_digits", _digits_unread)
    spec["name"] = "refund_words_digits_only"
    quality = await _gate_of(graph, tenant, spec, evaluation)
    assert quality["passed"] is False and any("not met" in u for u in quality["unmet"]), quality
    assert numerals.in_digits("fifteen thousand dollars") == "$15000"  # the module itself untouched


def test_a_threshold_the_request_writes_in_words_is_read_as_a_comparison() -> None:
    request = (
        "Build an agent system that checks loan requests. Each request gives the customer and the amount. It "
        "returns a JSON object with route (review or auto). A loan of more than fifteen thousand dollars goes to "
        'review (route "review"); every other loan is automatic (route "auto").'
    )
    rules = field_rules(design_system(request, None, "langgraph").requirements)["route"]
    (review,) = [r for r in rules if r.value == "review"]
    assert review.when is not None and (review.when.op, review.when.value) == (">", 15000.0)
    assert expected_value(rules, "Amount: $15,000.50.") == "review"
    assert expected_value(rules, "Amount: fourteen grand.") == "auto"
    # A number word with no comparison beside it is no threshold ("two lists", "one of").
    plain = request.replace("more than fifteen thousand dollars", "two parts")
    assert all(
        r.when is None for r in field_rules(design_system(plain, None, "langgraph").requirements)["route"]
    )


def test_past_the_case_cap_every_requirement_keeps_its_first_cases() -> None:
    def made(requirement: str, n: int) -> list[EvalCase]:
        return [
            EvalCase(id=f"{requirement}_{i}", inputs={"m": "x"}, expect={"f": 1}, requirement=requirement)
            for i in range(n)
        ]

    cases = made("r1", MAX_EVAL_CASES) + made("r2", 3)
    kept = _kept(cases)
    assert len(kept) == MAX_EVAL_CASES
    assert [c.id for c in kept if c.requirement == "r2"] == ["r2_0", "r2_1", "r2_2"]
    assert kept[0].id == "r1_0" and kept.index(next(c for c in kept if c.requirement == "r2")) > 0


@pytest.mark.parametrize(
    ("text", "read"),
    [
        (
            "if the estimate is over two hundred and fifty pounds, route",
            "if the estimate is over £250, route",
        ),
        ("more than three thousand euros", "more than €3000"),
        ("at least two thousand dollars", "at least $2000"),
        ("orders under a grand are approved", "orders under $1000 are approved"),
        ("a grand total of 5 and a grand piano", "a grand total of 5 and a grand piano"),
    ],
)
def test_a_bound_said_in_words_is_read_in_digits_with_its_comparison(text: str, read: str) -> None:
    assert in_digits(text) == read


@pytest.mark.parametrize(
    ("said", "value", "unit"),
    [
        ("over two hundred and fifty pounds", 250.0, "£"),
        ("more than three thousand euros", 3000.0, "EUR"),
        ("over a grand", 1000.0, "$"),
        ("over €1.500,00", 1500.0, "EUR"),
        ("over two and a half grand", 2500.0, "$"),
    ],
)
def test_a_threshold_said_as_customers_write_numbers_is_read_with_its_currency(
    said: str, value: float, unit: str
) -> None:
    request = (
        "Build an agent system that checks deposit refunds. Each claim gives the guest and the damage "
        f"estimate. It returns a JSON object with route (manager or auto). A claim {said} goes to a "
        'manager (route "manager"); every other claim is automatic (route "auto").'
    )
    system = design_system(request, None, "langgraph")
    rules = field_rules(system.requirements)["route"]
    (manager,) = [r for r in rules if r.value == "manager"]
    assert manager.when is not None and (manager.when.op, manager.when.value, manager.when.unit) == (
        ">",
        value,
        unit,
    )
    # The trace points at the request's own words.
    (requirement,) = [r for r in system.requirements if r.fields == ["route"]]
    assert said.split()[-1] in request[requirement.start : requirement.end]


def test_steps_of_a_request_without_fields_are_named_from_their_concepts_not_number_words() -> None:
    request = (
        "Set up an agent system that screens hotel damage deposits: if the damage estimate is over two "
        "hundred and fifty pounds, route the case to the duty manager; otherwise refund the deposit."
    )
    system = design_system(request, None, "langgraph")
    named = " ".join([system.name, *system.skills, *(c.id for c in system.components)])
    assert not any(word in named for word in ("two", "hundred", "fifty", "pound")), named
    (requirement,) = system.requirements
    (rule, default) = requirement.rules
    assert (rule.field, rule.value) == ("route_to", "duty_manager")
    assert rule.when is not None and (rule.when.op, rule.when.value, rule.when.unit) == (">", 250.0, "£")
    assert default.default and request[requirement.start : requirement.end].startswith("if the damage")
