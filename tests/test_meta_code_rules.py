"""Rules a request writes as code or as "field: rule" lines: read as requirements like prose rules,
traced to the words as written, each with EvalSpec cases."""

from __future__ import annotations

from master_agent.meta.code_rules import code_as_prose
from master_agent.meta.design import design_eval, design_system, expected_value, field_rules

CODE = (
    "Build an agent system that screens web orders. Each order gives the customer, the order total in dollars "
    "and the item count. It returns a JSON object with action (escalate, hold or accept). Our rules, in code:\n"
    "```\n"
    "if order.total > 1000:\n"
    '    return "escalate"\n'
    'elif order.item_count >= 20 and order.total < 50: action = "hold"\n'
    "else:\n"
    "    accept()\n"
    "```\n"
)


def test_rules_written_as_code_are_requirements_traced_to_the_code() -> None:
    system = design_system(CODE, None, "langgraph")
    rules = field_rules(system.requirements)["action"]
    escalate = [r for r in rules if r.value == "escalate"]
    assert [(r.when.op, r.when.value) for r in escalate if r.when] == [(">", 1000.0)]
    (hold,) = [r for r in rules if r.value == "hold"]
    assert hold.when is not None and [(c.op, c.value) for c in [hold.when, *hold.also]] == [
        (">=", 20),
        ("<", 50),
    ]
    assert any(r.default and r.value == "accept" for r in rules)
    traced = [CODE[r.start : r.end] for r in system.requirements if r.fields == ["action"]]
    assert any("order.total > 1000" in t for t in traced) and any("accept()" in t for t in traced), traced
    assert expected_value(rules, "Order total: $1,200. Item count: 1.") == "escalate"
    assert expected_value(rules, "Order total: $40. Item count: 25.") == "hold"
    assert expected_value(rules, "Order total: $999. Item count: 2.") == "accept"
    # Each rule read from the code gets its cases, the boundary on both sides.
    cases = design_eval(system).cases
    for requirement in system.requirements:
        assert any(c.id.startswith(f"{requirement.id}_") for c in cases), requirement.id
    assert {c.expect.get("action") for c in cases} >= {"escalate", "hold", "accept"}


def test_code_that_states_no_plain_rule_stays_as_written() -> None:
    fields = {"action": ["escalate", "accept"]}
    for line in (
        "if order.country == 'FR': escalate()",  # no number compared
        "if order.total > 1000: notify_team()",  # no declared value given
        "If the total is over $1,000: escalate.",  # prose, read by the prose grammar
    ):
        assert code_as_prose(line, fields) == line
    said = code_as_prose("    if (amount >= 2_500) { escalate(); }", fields)
    assert said == '    When the amount is at least 2500, action is "escalate".'


def test_a_field_rule_line_gives_its_values_bare() -> None:
    request = (
        "Spin up agents for our bakery's catering orders. Each order gives the event date, the number of "
        "guests and the budget in dollars. Return JSON: tier (standard or premium) and staff (one or two).\n"
        "tier: premium when the budget is $2,000 or more and there are no more than 40 guests; otherwise "
        "standard.\n"
    )
    system = design_system(request, None, "langgraph")
    rules = field_rules(system.requirements)["tier"]
    (premium,) = [r for r in rules if r.value == "premium"]
    assert premium.when is not None and (premium.when.op, premium.when.value) == (">=", 2000.0)
    assert [(c.op, c.value) for c in premium.also] == [("<=", 40.0)]
    assert not premium.absent and not premium.mentions  # "no more than" is a bound, not an absence
    assert any(r.default and r.value == "standard" for r in rules)


def test_on_a_field_line_for_opens_the_values_condition() -> None:
    request = (
        "Spin up agents for our museum cloakroom. Each request gives the visitor, the number of items and what "
        "they are. Return JSON: desk (main or secure).\n"
        "desk: secure for valuables such as laptops, cameras or jewellery; otherwise main."
    )
    system = design_system(request, None, "langgraph")
    rules = field_rules(system.requirements)["desk"]
    (secure,) = [r for r in rules if r.value == "secure"]
    assert secure.mentions == ["valuables", "laptops", "cameras", "jewellery"]
    assert all(r.buildable for r in system.requirements)
    assert expected_value(rules, "Request: Ana leaves a camera and a coat.") == "secure"
