"""A date the input writes compared with a date the answer computes ("fine "late" when the return
date is after the due_date", "the due_date is 3 working days or fewer after the return date"): the
rule counts the days between the input's date and the computed one, in Python (the EvalSpec's
reading) and in the built system's SQL, and a variant without the rule fails its gate."""

from __future__ import annotations

from typing import Any

import pytest

from master_agent.meta.design import expected_value, field_rules
from master_agent.meta.requirements import extract_requirements
from master_agent.runtime import RuntimeResources
from tests.test_meta_conditions import _gate_of
from tests.test_meta_formulas import _answer, _built

LIBRARY = (
    "Build an agent system that checks books coming back to our library. Each return gives the loan date, "
    "the return date and the loan period (in days or weeks). It returns a JSON object with due_date (an ISO "
    "date), fine (late or none) and reminder (send or wait). due_date is the loan date plus the loan period. "
    'fine is "late" when the return date is after the due_date; otherwise "none". reminder is "send" when the '
    'due_date is 3 working days or fewer after the return date (Mon-Fri, no holidays); otherwise "wait".'
)

CASES = [
    # (input, due_date, fine, reminder)
    ("Loan date: 2025-03-01. Loan period: 3 weeks. Return date: 2025-03-22.", "2025-03-22", "none", "send"),
    ("Loan date: 2025-03-01. Loan period: 3 weeks. Return date: 2025-03-23.", "2025-03-22", "late", "send"),
    # Friday 14 March: Monday 17 to Friday 21 are 5 working days before a Saturday due date.
    ("Loan date: 2025-03-01. Loan period: 21 days. Return date: 2025-03-14.", "2025-03-22", "none", "wait"),
    ("Loan date: 2025-03-01. Loan period: 21 days. Return date: 2025-03-19.", "2025-03-22", "none", "send"),
    ("Loan date: 2024-02-08. Loan period: 3 weeks. Return date: 2024-03-01.", "2024-02-29", "late", "send"),
]


def _rules() -> dict[str, list[Any]]:
    _, requirements = extract_requirements(LIBRARY)
    return field_rules(requirements)


def test_two_dates_in_order_with_no_number_compare_the_days_between_them_with_zero() -> None:
    fine = next(r for r in _rules()["fine"] if r.value == "late")
    assert fine.when is not None
    assert (fine.when.op, fine.when.value, fine.when.since, fine.when.until) == (
        ">",
        0,
        "due_date",
        "return date",
    )
    assert fine.mentions == []  # the dates' own words are no thing the input mentions


def test_a_time_counted_to_a_computed_date_keeps_no_words_of_its_counting_as_mentions() -> None:
    send = next(r for r in _rules()["reminder"] if r.value == "send")
    assert send.when is not None
    assert (send.when.unit, send.when.since, send.when.until) == ("working days", "return date", "due_date")
    assert send.mentions == [] and send.absent == []


@pytest.mark.parametrize(("text", "due_date", "fine", "reminder"), CASES)
def test_the_spec_reads_the_computed_date_on_either_side(
    text: str, due_date: str, fine: str, reminder: str
) -> None:
    rules = _rules()
    got = {f: expected_value(r, text, {k: v for k, v in rules.items() if k != f}) for f, r in rules.items()}
    assert got == {"due_date": due_date, "fine": fine, "reminder": reminder}


def test_an_earlier_order_said_with_on_or_before_counts_the_day_itself() -> None:
    text = LIBRARY.replace(
        "when the return date is after the due_date", "unless the return date is on or before the due_date"
    )
    _, requirements = extract_requirements(text.replace('"late" unless', '"none" unless'))
    rules = field_rules(requirements)
    kept = next(r for r in rules["fine"] if r.when is not None)
    assert (kept.when.op, kept.when.since, kept.when.until) == (">=", "return date", "due_date")


async def test_the_built_system_compares_with_the_computed_date_in_sql_and_a_variant_without_it_fails(
    resources: RuntimeResources,
) -> None:
    meta, tenant, built, system = await _built(resources, LIBRARY, "library_returns")
    subject = next(k["name"] for k in built["SystemSpec"]["state_schema"] if k.get("external"))
    for text, due_date, fine, reminder in CASES:
        answer = await _answer(system, tenant, subject, text)
        assert (answer["due_date"], answer["fine"], answer["reminder"]) == (due_date, fine, reminder), (
            text,
            answer,
        )
    assert built["result"]["gates"]["quality"]["passed"] is True, built["result"]["gates"]
    spec: dict[str, Any] = built["SystemSpec"]
    for component in spec["components"]:
        component["decision"] = [
            r for r in component.get("decision") or [] if (r.get("when") or {}).get("until") != "return date"
        ]
    spec["name"] = "library_returns_without_the_late_rule"
    quality = await _gate_of(meta, tenant, spec, built["EvalSpec"])
    assert quality["passed"] is False, quality


def test_a_rule_on_two_dates_in_order_is_judged_buildable_again_once_its_loose_words_are_gone() -> None:
    text = (
        "Build an agent system that answers warranty claims. Each claim gives the purchase date, the claim date "
        "and the warranty period. It returns a JSON object with expiry (an ISO date) and covered (yes or no). "
        'expiry is the purchase date plus the warranty period. covered "no" when the claim date is after the '
        'expiry; otherwise "yes".'
    )
    _, requirements = extract_requirements(text)
    (refused,) = [q for q in requirements if any(r.value == "no" for r in q.rules)]
    assert refused.buildable, refused.why_not
    rules = field_rules(requirements)
    claim = "Bought: 2023-03-01. Warranty period: 2 years. Claim date: 2025-03-02."
    assert expected_value(rules["covered"], claim, rules) == "no"  # "Bought" is the purchase date
