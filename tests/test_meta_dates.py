"""Date arithmetic in the rules of a built system: dates as inputs write them (words, day first,
without a year) read as ISO; a time between dates said in months or years counted in calendar months
(29 February + 12 months is 28 February); a date moved by calendar months; the days of a date range,
both ends included or not. Checked in Python (the EvalSpec's reading), in the built system's SQL, and
a variant without the rule fails its gate."""

from __future__ import annotations

from datetime import date
from typing import Any

import pytest

from master_agent.capabilities.dates import in_iso_dates
from master_agent.meta.design import computed, expected_value, field_rules, months_between
from master_agent.meta.requirements import _weekdays, extract_requirements
from master_agent.runtime import RuntimeResources
from tests.test_meta_conditions import _gate_of
from tests.test_meta_formulas import _answer, _built

TENANCY = (
    "Build an agent system that answers tenants who ask to sublet their flat. Each request gives the request "
    "date, the lease start date, the first and last night of the sublet, and a note. It returns a JSON object "
    "with nights (a number), decision (allow or refuse) and review_by (an ISO date). nights counts the days "
    "from the first to the last night of the sublet. Tenants who moved in less than 12 months before the "
    'request date cannot sublet (decision "refuse"); every other request is allowed (decision "allow"). '
    "review_by is the same day 3 months after the lease start date."
)


@pytest.mark.parametrize(
    ("written", "iso"),
    [
        ("Paid on 5th Nov 2024.", "Paid on 2024-11-05."),
        ("Opened: the 16th of july 2025", "Opened: the 2025-07-16"),
        ("Due 03/12/2024 (DD/MM/YYYY)", "Due 2024-12-03 (DD/MM/YYYY)"),
        ("Due 25/12/2024", "Due 2024-12-25"),
        (
            "sent 3 dec 2024 - away from 20th dec til 5th jan",
            "sent 2024-12-03 - away from 2024-12-20 to 2025-01-05",
        ),
        ("Booked: 2025-03-04, 2pm. One box.", "Booked: 2025-03-04 14:00. One box."),
        ("its thurs 6 march 2025, quarter to two in the afternoon", "its 2025-03-06 13:45"),
        ("Serviced: 2024-11-20 at 20,000 miles", "Serviced: 2024-11-20 at 20,000 miles"),
        ("Serviced 5th Nov 2024 at 10,000 km", "Serviced 2024-11-05 at 10,000 km"),
        ("member since march 2020, in may maybe", "member since march 2020, in may maybe"),
    ],
)
def test_dates_and_clock_times_are_read_as_iso_and_the_rest_kept(written: str, iso: str) -> None:
    assert in_iso_dates(written) == iso


@pytest.mark.parametrize(
    ("event", "reference", "months"),
    [
        (date(2024, 2, 29), date(2025, 2, 28), 12),  # clipped to the month's end: the anniversary
        (date(2024, 2, 29), date(2025, 2, 27), 11),
        (date(2024, 3, 15), date(2024, 9, 15), 6),
        (date(2024, 3, 15), date(2024, 9, 14), 5),
        (date(2024, 1, 31), date(2024, 2, 29), 1),
        (date(2023, 6, 10), date(2024, 6, 9), 11),  # 365 days in a leap year: not yet a year
    ],
)
def test_whole_calendar_months_between_two_days(event: date, reference: date, months: int) -> None:
    assert int(months_between(event, reference)) == months


@pytest.mark.parametrize(
    ("event", "reference", "more_than_twelve"),
    [
        (date(2024, 3, 10), date(2025, 3, 10), False),  # the anniversary itself: exactly 12
        (date(2024, 3, 10), date(2025, 3, 11), True),
        (date(2024, 2, 29), date(2025, 2, 28), False),  # 29 February + 12 months is 28 February
        (date(2024, 2, 29), date(2025, 3, 1), True),
    ],
)
def test_more_than_n_calendar_months_holds_from_the_day_after_the_anniversary(
    event: date, reference: date, more_than_twelve: bool
) -> None:
    assert (months_between(event, reference) > 12) is more_than_twelve


def test_months_and_ranges_are_read_from_the_request_as_calendar_arithmetic() -> None:
    _, requirements = extract_requirements(TENANCY)
    rules = {rule.field: rule for requirement in requirements for rule in requirement.rules}
    assert rules["nights"].computed is not None and rules["nights"].computed.op == "days_between"
    assert rules["nights"].computed.inclusive is False
    refuse = next(r for q in requirements for r in q.rules if r.value == "refuse")
    assert refuse.when is not None and (refuse.when.op, refuse.when.value, refuse.when.unit) == (
        "<",
        12,
        "months",
    )
    assert refuse.when.until == "request date"
    moved = rules["review_by"].computed
    assert moved is not None and (moved.op, moved.right.number) == ("months_after", 3)
    assert computed(moved, "Lease start: 30 Nov 2024. Request date: 2025-01-02.") == "2025-02-28"


def test_both_ends_included_adds_the_last_day() -> None:
    text = TENANCY.replace("of the sublet. Tenants", "of the sublet, both included. Tenants")
    _, requirements = extract_requirements(text)
    nights = next(r.computed for q in requirements for r in q.rules if r.field == "nights")
    assert nights is not None and nights.inclusive
    assert computed(nights, "Sublet from 2024-02-10 to 2024-03-10.") == 30.0
    assert computed(nights, "sent 3 dec 2024. sublet from 20th dec til 5th jan") == 17.0


async def test_the_built_system_counts_calendar_months_and_ranges_in_sql_and_a_variant_without_it_fails(
    resources: RuntimeResources,
) -> None:
    meta, tenant, built, system = await _built(resources, TENANCY, "sublets")
    subject = next(k["name"] for k in built["SystemSpec"]["state_schema"] if k.get("external"))
    for text, nights, decision, review_by in [
        (
            "Request date: 2025-02-28. Lease start: 2024-02-29. Sublet from 2025-03-01 to 2025-03-31.",
            30,
            "allow",
            "2024-05-29",
        ),
        (
            "Request date: 2025-02-27. Lease start: 2024-02-29. Sublet from 2025-03-01 to 2025-03-31.",
            30,
            "refuse",
            "2024-05-29",
        ),
        (
            "Request date: 3 Jan 2025. Lease start: 30/11/2024 (DD/MM/YYYY). Sublet from 10th jan til 12th jan.",
            2,
            "refuse",
            "2025-02-28",
        ),
    ]:
        answer = await _answer(system, tenant, subject, text)
        assert (answer["nights"], answer["decision"], answer["review_by"]) == (nights, decision, review_by), (
            text,
            answer,
        )
    spec: dict[str, Any] = built["SystemSpec"]
    for component in spec["components"]:
        component["decision"] = [
            r for r in component.get("decision") or [] if not (r.get("when") or {}).get("since")
        ]
    spec["name"] = "sublets_without_the_lease_rule"
    quality = await _gate_of(meta, tenant, spec, built["EvalSpec"])
    assert quality["passed"] is False, quality


CAFE = (
    "Set up agents for our bakery's cake orders. Each order gives the order date and time and the cake. "
    "Output: a JSON object with slot (morning, late or closed).\n"
    "slot: morning when ordered Tuesday to Thursday before 11am; late when ordered at 11am or later, "
    "or on a Monday or Friday; closed when ordered at the weekend."
)


def test_days_of_the_week_and_clock_times_are_conditions_not_mentions() -> None:
    _, requirements = extract_requirements(CAFE)
    rules = [rule for requirement in requirements for rule in requirement.rules if rule.field == "slot"]
    morning, *late = [r for r in rules if r.value in ("morning", "late")]
    assert morning.weekdays == [2, 3, 4] and morning.when is not None
    assert (morning.when.op, morning.when.value, morning.when.unit) == ("<", 660, "clock")
    assert not morning.mentions
    assert {(r.when.op if r.when else None, tuple(r.weekdays)) for r in late} == {(">=", ()), (None, (1, 5))}
    weekend = next(r for r in rules if r.value == "closed")
    assert weekend.weekdays == [6, 7] and not weekend.mentions
    rules_of = field_rules(requirements)
    for text, slot in [
        ("Ordered: 2025-03-05 10:59. Cake: lemon.", "morning"),  # a Wednesday
        ("Ordered: 2025-03-05 11:00. Cake: lemon.", "late"),
        ("ordered wed 5 march 2025, half ten in the morning, a lemon cake", "morning"),
        ("Ordered: 2025-03-07 09:00. Cake: lemon. (it's basically Thursday)", "late"),  # a Friday
        ("Ordered: 2025-03-09 09:00. Cake: lemon.", "closed"),
    ]:
        assert expected_value(rules_of["slot"], text, rules_of) == slot, text


@pytest.mark.parametrize(
    ("text", "days"),
    [
        ("booked Monday to Friday before 2pm", [1, 2, 3, 4, 5]),
        ("Mon-Fri only", [1, 2, 3, 4, 5]),
        ("Friday to Monday", [1, 5, 6, 7]),
        ("on Tuesdays and Thursdays", [2, 4]),
        ("at the weekend", [6, 7]),
        ("less than 12 months before", None),  # "months" is no Monday
        ("the parcel sat in the sun", None),
    ],
)
def test_days_of_the_week_are_read_by_their_names_only(text: str, days: list[int] | None) -> None:
    read = _weekdays(text)
    assert (read[0] if read else None) == days


def test_a_rule_on_days_of_the_week_leaves_no_condition_unread() -> None:
    _, requirements = extract_requirements(
        "We'd like a team of agents for laptop handovers. Each handover gives the tag and the hand-over date. "
        'The agents return a JSON object with status (secure or test). status: "test" when the hand-over date '
        'is on a Saturday or Sunday; otherwise "secure".'
    )
    (requirement,) = requirements
    assert requirement.buildable and not requirement.unread
    assert [r.weekdays for r in requirement.rules if r.value == "test"] == [[6, 7]]
