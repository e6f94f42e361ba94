"""Money per a period of time: a rule on a "yearly income" reads "$3,500 per month" as $42,000 (in
Python, the EvalSpec's reading, and in the built system's SQL); the EvalSpec writes the amount per
another period, so a system reading the number alone fails its gate. Also the readings that state
such a rule: "field value if ..., else other" and "; other when it is further out"."""

from __future__ import annotations

from typing import Any

import pytest

from master_agent.capabilities.numerals import input_digits, with_digits
from master_agent.capabilities.rates import names_a_period, per_parameter, per_period, period_named
from master_agent.meta.design import design_eval, design_system, expected_value, field_rules
from master_agent.meta.requirements import extract_requirements
from master_agent.runtime import RuntimeResources
from tests.test_meta_conditions import _gate_of
from tests.test_meta_formulas import _answer, _built

RENTALS = (
    "Build an agent system that screens rental applications. Each application gives the applicant's "
    "name, income and the flat's rent. It returns a JSON object with check (pass or refer).\n"
    "* check pass if the yearly income is $40,000 or more, else refer."
)


@pytest.mark.parametrize(
    ("written", "period", "read"),
    [
        ("Rent: £1,200 pcm, deposit £1,500.", "year", "Rent: £14400, deposit £1,500."),
        ("Pay: $400 a week", "month", "Pay: $1733.33"),
        ("Salary 52000 per annum", "week", "Salary 1000"),
        ("Budget EUR 90.00 per quarter", "month", "Budget EUR 30"),
        # Durations and clock times are no rates.
        ("Notice: 3 days. Call at 15:00.", "year", "Notice: 3 days. Call at 15:00."),
        ("Paid $2,000 on 2024-03-01", "year", "Paid $2,000 on 2024-03-01"),
    ],
)
def test_an_amount_per_a_period_is_read_per_another(written: str, period: str, read: str) -> None:
    assert per_period(written, period) == read


@pytest.mark.parametrize(
    ("before", "after", "period"),
    [
        ("if the yearly income is $", " or more", "year"),
        ("when rent is over $", " a month", "month"),
        ("a fee of at least $", " or more per week", "week"),
        ("an invoice over $", ", else", None),
    ],
)
def test_the_period_a_request_says_an_amount_is_per(before: str, after: str, period: str | None) -> None:
    assert period_named(before, after) == period


def test_a_query_parameter_per_a_period_is_bound_from_its_input() -> None:
    sql = f"SELECT %({per_parameter('application', 'year')}_in_digits)s, %(application_in_digits)s"
    bound = with_digits(sql, {"application": "Income: three thousand dollars a month"})
    assert bound["application_per_year_in_digits"] == "Income: $36000"
    assert bound["application_in_digits"] == input_digits("Income: three thousand dollars a month")


def _rules() -> dict[str, list[Any]]:
    _, requirements = extract_requirements(RENTALS)
    return field_rules(requirements)


def test_a_line_opened_by_a_field_and_its_value_gives_the_value_after_else_by_default() -> None:
    passing, refer = _rules()["check"]
    assert passing.value == "pass" and passing.when is not None and passing.when.per == "year"
    assert refer.value == "refer" and refer.default


@pytest.mark.parametrize(
    ("text", "check"),
    [
        ("Name: Ana. Income: $3,500 per month. Rent: $1,100.", "pass"),
        ("Name: Ben. Income: $3,200/mo. Rent: $900.", "refer"),
        ("Name: Cy. Income: 45k a year.", "pass"),
        ("Name: Di. Income: $800 weekly.", "pass"),
        ("Name: Ed. Income: $39,999.99.", "refer"),
    ],
)
def test_the_spec_reads_income_per_year(text: str, check: str) -> None:
    assert expected_value(_rules()["check"], text) == check


def test_the_eval_spec_writes_the_amount_per_another_period_on_each_side() -> None:
    evaluation = design_eval(design_system(RENTALS, "rentals", "langgraph"))
    monthly = {c.expect["check"] for c in evaluation.cases if "per_month" in c.id}
    assert monthly == {"pass", "refer"}


def test_a_value_when_it_is_further_out_is_the_other_side_of_the_comparison_before_it() -> None:
    text = (
        "Build an agent system that sorts parcels for pickup. Each parcel gives its weight. It returns a JSON "
        "object with van (small or large).\n* van small when the weight is 20 kg or less; large when it is more."
    )
    _, requirements = extract_requirements(text)
    large = next(r for r in field_rules(requirements)["van"] if r.value == "large")
    assert large.when is not None and (large.when.op, large.when.value) == (">", 20)


async def test_the_built_system_reads_income_per_year_in_sql_and_a_variant_without_the_rate_fails(
    resources: RuntimeResources,
) -> None:
    meta, tenant, built, system = await _built(resources, RENTALS, "rentals")
    assert built["result"]["gates"]["quality"]["passed"] is True, built["result"]["gates"]
    subject = next(k["name"] for k in built["SystemSpec"]["state_schema"] if k.get("external"))
    for text, check in [
        ("Name: Ana. Income: $3,500 per month. Rent: $1,100.", "pass"),
        ("Name: Ben. Income: $3,200/mo. Rent: $900.", "refer"),
        ("Name: Cy. Income: forty-five thousand dollars a year.", "pass"),
        ("Name: Di. Income: $800 weekly.", "pass"),
    ]:
        answer = await _answer(system, tenant, subject, text)
        assert answer["check"] == check, (text, answer)
    spec: dict[str, Any] = built["SystemSpec"]
    for component in spec["components"]:
        for rule in component.get("decision") or []:
            if rule.get("when"):
                rule["when"]["per"] = None
    spec["name"] = "rentals_without_the_rate"
    quality = await _gate_of(meta, tenant, spec, built["EvalSpec"])
    assert quality["passed"] is False, quality


def test_only_brackets_saying_a_period_are_read_by_a_rate() -> None:
    _, requirements = extract_requirements(
        RENTALS.replace("$40,000 or more, else", "$40,000 or more (a monthly income times 12), else")
    )
    assert all(not q.unread for q in requirements)
    assert names_a_period("(a monthly price times 12)") and names_a_period("(quoted per month)")
    assert not names_a_period("(unless a guarantor co-signs the lease)")
    assert not names_a_period("(within 3 days)")
