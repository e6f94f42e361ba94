"""The rows a data question keeps by the tenant's own columns, read without a database."""

from __future__ import annotations

import pytest

from master_agent.capabilities.terms import hours_of_day
from master_agent.routing.row_filters import days_of_week_blanked, hours_filter, names_a_column

COLUMNS = ("training_completed", "tenure_months", "accessory_attached", "device_amount", "refunded")


@pytest.mark.parametrize(
    ("text", "blanked"),
    [
        ("average basket at store 4 on Saturdays in July", "Saturdays"),
        ("S03 | attach | Sep 2026 | Mon-Fri only", "Mon-Fri"),
        ("refunds at store 7 over the weekend in August", "over the weekend"),
        ("sales every Tuesday in June", "every Tuesday"),
        # A weekday before the part of the day it keeps each week.
        ("how many sales did store 1 do on Saturday mornings in June", "Saturday"),
        ("refund rate, Friday evenings, Q3, store 2", "Friday"),
        # One date, and months run together, are no days of every week.
        ("attach rate at store 2 on Saturday 4 July", ""),
        ("attach rate month-to-month in Q3", ""),
        ("refunds from June to August", ""),
    ],
)
def test_the_days_of_every_week_are_blanked_for_the_date_readers(text: str, blanked: str) -> None:
    kept = text.replace(blanked, " " * len(blanked)) if blanked else text
    assert days_of_week_blanked(text) == kept


@pytest.mark.parametrize(
    ("word", "named"),
    [
        ("trained", True),
        ("untrained", True),
        ("training", True),
        ("refunded", True),
        ("non-refunded", True),
        ("accessory", True),
        ("tenure", True),
        ("headphones", False),
        ("months", False),  # a unit, not what a column holds
        ("first-time", False),
    ],
)
def test_a_word_names_a_column_by_its_base_form(word: str, named: bool) -> None:
    assert names_a_column(word, COLUMNS) is named


@pytest.mark.parametrize(
    ("text", "condition", "minutes"),
    [
        ("attach at store 2 after 6pm in June", "AND", (18 * 60, 24 * 60)),
        ("sales at store 5 from 10pm to 2am in July", "OR", (22 * 60, 2 * 60)),  # over midnight
    ],
)
def test_the_hours_of_every_day_are_a_condition_on_the_time_of_the_sale(
    text: str, condition: str, minutes: tuple[int, int]
) -> None:
    hours = hours_of_day(text)
    assert hours is not None
    kept = hours_filter("sold_at", hours)
    assert f" {condition} " in kept.condition and "AT TIME ZONE 'UTC'" in kept.condition
    assert (kept.params["from_minute"], kept.params["to_minute"]) == minutes
