"""Rules written as lines (bullets, field lines of the inputs, tables), fields declared without a verb,
date arithmetic between labelled dates (working days, calendar months, a date less a time the input
writes), activity words used as values, and precedence between rules (issue 41)."""

from __future__ import annotations

from typing import Any

import pytest

from master_agent.meta.design import expected_value, field_rules, working_days_after
from master_agent.meta.requirements import declared_fields, extract_requirements
from master_agent.runtime import RuntimeResources
from tests.test_meta_conditions import _gate_of
from tests.test_meta_formulas import _answer, _built

#: Inputs written as key: value lines, a rule per input line, an activity word ("test") as a value.
LOANS = (
    "Please build agents that screen equipment loan requests from our lab staff. Each request arrives as "
    "key: value lines - submitted, pickup, return, purpose, building.\n"
    'For each one we need a JSON object back with outcome ("lend", "decline" or "check").\n\n'
    '    return:   at most 21 days after pickup, otherwise "decline"\n'
    '    purpose:  "test" or "calibrate" -> "lend"; every other purpose -> "check"\n\n'
    'The "decline" line wins over the purpose line.\n'
)

#: Bullets defining values by dates: a date less a time the input writes, calendar months, working days.
VISAS = (
    "Notes from the mobility call - agents for work visa renewals:\n"
    "* each case gives the check date, the permit expiry date, the processing time (in days or months) "
    "and the last trip date.\n"
    "* JSON back: file_by (YYYY-MM-DD), urgency (late | soon | fine)\n"
    "* file_by = permit expiry date minus the processing time.\n"
    "- late = last trip date more than 6 months before the check date. calendar months, exactly 6 months "
    "is NOT late\n"
    "- soon = check date more than 4 working days after the permit expiry date\n"
    "- fine = everything else\n"
)

#: VISAS's inputs with the file_by and urgency each should get.
VISA_CASES = [
    # 2025-03-07 is a Friday: the 14th is 5 working days after it, the 13th 4.
    (
        "Check date: 2025-03-14. Permit expiry date: 2025-03-07. Processing time: 2 months. Last trip date: 2024-10-01.",
        "2025-01-07",
        "soon",
    ),
    (
        "Check date: 2025-03-13. Permit expiry date: 2025-03-07. Processing time: 45 days. Last trip date: 2024-09-13.",
        "2025-01-21",
        "fine",
    ),
    (
        "Check date: 2025-03-13. Permit expiry date: 2025-03-07. Processing time: 45 days. Last trip date: 2024-09-12.",
        "2025-01-21",
        "late",
    ),
    # 31 May less 3 months is 29 February in a leap year.
    (
        "Check date: 2024-03-12. Permit expiry date: 2024-05-31. Processing time: 3 months. Last trip date: 2024-01-12.",
        "2024-02-29",
        "fine",
    ),
]

#: A limit said alone, what goes beyond it, and a rule on a value the answer computes.
RETURNS = (
    "Hello - could you set up agents for our garden-tool returns? Each return gives the delivery date, "
    "the return date, the price paid and the restocking fee.\n"
    'We need a JSON object back with outcome ("auto", "manager" or "refused") and amount (a plain number '
    "of dollars).\n"
    "1. We take returns within 10 days of delivery, i.e. the return date is at most 10 days after the "
    'delivery date. Anything later is declined: outcome "refused", amount 0.\n'
    "2. amount is the price paid minus the restocking fee.\n"
    '3. If the amount comes to more than forty dollars the outcome is "manager"; otherwise "auto".\n'
)


@pytest.mark.parametrize(
    ("text", "fields"),
    [
        (
            'For each one we need a JSON object back with verdict ("keep", "drop") and score (a number).',
            {"verdict": ["keep", "drop"], "score": []},
        ),
        (
            "* JSON back: due (YYYY-MM-DD), tier (gold, silver or bronze)\n* due = ...",
            {"due": [], "tier": ["gold", "silver", "bronze"]},
        ),
        (
            "output JSON w/ band (low | mid | high) + flag (true or false).",
            {"band": ["low", "mid", "high"], "flag": ["true", "false"]},
        ),
        (
            'Return a JSON object with state: "open", "held" or "closed" (held means a person looks).',
            {"state": ["open", "held", "closed"]},
        ),
    ],
)
def test_fields_declared_without_a_verb_or_with_values_after_a_colon(
    text: str, fields: dict[str, list[str]]
) -> None:
    assert declared_fields(text) == fields


def test_a_line_of_an_input_reads_its_dates_and_its_value_after_its_label() -> None:
    fields, requirements = extract_requirements(LOANS)
    assert fields == {"outcome": ["lend", "decline", "check"]}
    assert all(r.buildable for r in requirements), [(r.text, r.why_not) for r in requirements]
    rules = field_rules(requirements)["outcome"]
    decline = next(r for r in rules if r.value == "decline")
    assert decline.when is not None
    assert (decline.when.op, decline.when.value, decline.when.since, decline.when.until) == (
        ">",
        21,
        "pickup",
        "return",
    )
    lend = next(r for r in rules if r.value == "lend")
    assert lend.mentions == ["test", "calibrate"] and lend.within == {
        "test": "purpose",
        "calibrate": "purpose",
    }
    head = "submitted: 2025-02-01\npickup: 2025-02-03\n"
    for written, outcome in [
        ("return: 2025-02-24\npurpose: test\nbuilding: B2", "lend"),  # 21 days: at most 21
        ("return: 2025-02-25\npurpose: test\nbuilding: B2", "decline"),  # 22 days, whatever the purpose
        ("return: 2025-02-10\npurpose: teaching, not a test\nbuilding: B2", "check"),
        ("return: 2025-02-10\npurpose: teaching\nbuilding: test-lab", "check"),  # "test" elsewhere
        ("return: 2025-02-10\npurpose: calibrate\nbuilding: B2", "lend"),
    ]:
        assert expected_value(rules, head + written) == outcome, written


def test_values_defined_by_dates_on_bullet_lines() -> None:
    fields, requirements = extract_requirements(VISAS)
    assert fields == {"file_by": [], "urgency": ["late", "soon", "fine"]}
    assert all(r.buildable for r in requirements), [(r.text, r.why_not) for r in requirements]
    rules = field_rules(requirements)
    for written, file_by, urgency in VISA_CASES:
        answer = {field: expected_value(listed, written, rules) for field, listed in rules.items()}
        assert answer == {"file_by": file_by, "urgency": urgency}, written


@pytest.mark.parametrize(
    ("event", "reference", "days"),
    [
        ("2025-03-07", "2025-03-21", 10),  # Friday to Friday two weeks later
        ("2025-03-07", "2025-03-10", 1),  # Friday to Monday
        ("2025-03-07", "2025-03-07", 0),  # the day itself is day 0
        ("2025-03-10", "2025-03-07", -1),  # earlier: negative
        ("2024-12-20", "2025-01-03", 10),  # no holidays removed
    ],
)
def test_working_days_after_a_date(event: str, reference: str, days: int) -> None:
    from datetime import date

    assert working_days_after(date.fromisoformat(event), date.fromisoformat(reference)) == days


def test_a_limit_said_alone_then_what_goes_beyond_it_and_a_rule_on_a_computed_value() -> None:
    fields, requirements = extract_requirements(RETURNS)
    assert fields == {"outcome": ["auto", "manager", "refused"], "amount": []}
    rules = field_rules(requirements)
    refused = next(r for r in rules["outcome"] if r.value == "refused")
    assert refused.when is not None and (refused.when.op, refused.when.value) == (">", 10)
    assert not refused.mentions
    manager = next(r for r in rules["outcome"] if r.value == "manager")
    assert manager.when is not None and manager.when.label == "amount"
    for written, outcome, amount in [
        (
            "Delivery date: 2025-05-01. Return date: 2025-05-11. Price paid: $89.00. Restocking fee: $9.00.",
            "manager",
            80,
        ),
        (
            "Delivery date: 2025-05-01. Return date: 2025-05-11. Price paid: $49.00. Restocking fee: $9.00.",
            "auto",
            40,
        ),
        (
            "Delivery date: 2025-05-01. Return date: 2025-05-12. Price paid: $89.00. Restocking fee: $9.00.",
            "refused",
            0,
        ),
    ]:
        answer = {field: expected_value(listed, written, rules) for field, listed in rules.items()}
        assert answer == {"outcome": outcome, "amount": amount}, written


def test_a_rule_said_to_beat_another_comes_first() -> None:
    text = (
        "pls create agents for our safety-drill tracker. per employee record: report date, the drill date "
        'and their last drill score. output JSON w/ status (lapsed | ok) + assign ("retest", "drill" or "none").\n'
        "- lapsed = drill date more than 6 months before the report date\n"
        "- ok = everything else\n"
        '- drill score below 60% -> assign "retest"\n'
        '- lapsed people get assign "drill" whatever their score (beats the score rule); everyone else "none"\n'
    )
    _, requirements = extract_requirements(text)
    rules = field_rules(requirements)
    assert [r.value for r in rules["assign"] if not r.default][:2] == ["drill", "retest"]
    written = "Report date: 2025-06-15. Drill date: 2024-11-02. Last drill score: 40%."
    assert expected_value(rules["assign"], written, rules) == "drill"
    written = "Report date: 2025-06-15. Drill date: 2025-02-02. Last drill score: 40%."
    assert expected_value(rules["assign"], written, rules) == "retest"


async def test_the_built_systems_compute_these_dates_in_sql_and_a_variant_without_them_fails(
    resources: RuntimeResources,
) -> None:
    meta, tenant, built, system = await _built(resources, VISAS, "visa_renewals")
    subject = next(k["name"] for k in built["SystemSpec"]["state_schema"] if k.get("external"))
    for written, file_by, urgency in VISA_CASES:
        answer = await _answer(system, tenant, subject, written)
        assert (answer["file_by"], answer["urgency"]) == (file_by, urgency), (written, answer)
    spec: dict[str, Any] = built["SystemSpec"]
    for component in spec["components"]:
        component["decision"] = [
            r for r in component.get("decision") or [] if not (r.get("when") or {}).get("since")
        ]
    spec["name"] = "visa_renewals_without_dates"
    quality = await _gate_of(meta, tenant, spec, built["EvalSpec"])
    assert quality["passed"] is False, quality
    _, _, loans, lending = await _built(resources, LOANS, "equipment_loans")
    subject = next(k["name"] for k in loans["SystemSpec"]["state_schema"] if k.get("external"))
    head = "submitted: 2025-02-01\npickup: 2025-02-03\n"
    for written, outcome in [
        ("return: 2025-02-24\npurpose: test\nbuilding: B2", "lend"),
        ("return: 2025-02-25\npurpose: test\nbuilding: B2", "decline"),
        ("return: 2025-02-10\npurpose: teaching\nbuilding: test-lab", "check"),
    ]:
        answer = await _answer(lending, tenant, subject, head + written)
        assert answer["outcome"] == outcome, (written, answer)
