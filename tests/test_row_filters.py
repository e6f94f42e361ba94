"""The rows a data question keeps by the tenant's own columns, read without a database."""

from __future__ import annotations

import pytest

from master_agent.routing.row_filters import days_of_week_blanked, names_a_column

COLUMNS = ("training_completed", "tenure_months", "accessory_attached", "device_amount", "refunded")


@pytest.mark.parametrize(
    ("text", "blanked"),
    [
        ("average basket at store 4 on Saturdays in July", "Saturdays"),
        ("S03 | attach | Sep 2026 | Mon-Fri only", "Mon-Fri"),
        ("refunds at store 7 over the weekend in August", "over the weekend"),
        ("sales every Tuesday in June", "every Tuesday"),
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
