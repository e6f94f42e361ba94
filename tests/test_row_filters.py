"""The rows a data question keeps by the tenant's own columns, read without a database."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from master_agent.capabilities.terms import hours_of_day
from master_agent.domains.retail import RETAIL
from master_agent.errors import ToolInputError
from master_agent.routing.row_filters import (
    days_of_week_blanked,
    figure_of_flag,
    hours_filter,
    names_a_column,
    populations_compared,
    row_filters,
)

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
        # Weekdays said in the plural in the languages the date readers read.
        ("Solo los sábados: accessory revenue at store 2 across July?", "sábados"),
        ("les dimanches, attach rate store 3 en août", "dimanches"),
        # Said of a figure after a possessive or a store's number: every such day.
        ("store 3's weekend attach rate in August", "weekend"),
        ("s2 weekday refunds, July", "weekday"),
        # One date, and months run together, are no days of every week.
        ("attach rate at store 2 on Saturday 4 July", ""),
        ("attach rate month-to-month in Q3", ""),
        ("refunds from June to August", ""),
        # One weekend picked out by a word before it.
        ("attach rate at store 3 the weekend before Easter", ""),
        ("takings over the Whitsun weekend", ""),
        ("store 1 sales last weekend", ""),
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


class _OneSale:
    """The read-only SQL tool over one sale and one staff member: enough to tell the columns' kinds."""

    async def query(self, statement: str, params: object = None) -> SimpleNamespace:
        if "FROM transactions" in statement:
            row = {"tx_id": 1, "store_id": 1, "staff_id": 1, "device_amount": 500.0}
            row |= {"accessory_attached": True, "accessory_amount": 20.0, "refunded": False}
            return SimpleNamespace(rows=[row])
        if "FROM staff" in statement:
            return SimpleNamespace(rows=[{"staff_id": 1, "store_id": 1, "training_completed": True}])
        raise ToolInputError("no such table")


@pytest.mark.parametrize(
    ("message", "figure"),
    [
        # A count of a thing a yes/no column says the sale had counts those sales, not their money.
        ("How many accessories did store 3 sell in August?", "transactions"),
        ("number of accessories store 5 shifted last month", "transactions"),
        # The data's own count of the flagged sales when it has one.
        ("how many refunds did store 4 have in July?", "refunds"),
        # A share of the rows with a flag is the figure averaging it, whatever narrows the rows.
        ("Of the sales store 7 refunded in Q3, what fraction had an accessory?", "attach rate"),
        ("what percentage of store 2's sales were refunded in June", "refund rate"),
        # Nothing a column says: no reading of ours.
        ("how many phones did store 1 sell in May", None),
        ("what share of the stores are in the north", None),
    ],
)
async def test_a_figure_is_read_from_the_yes_no_column_a_count_or_a_share_is_of(
    message: str, figure: str | None
) -> None:
    found = await figure_of_flag(_OneSale(), RETAIL.data_metrics, message)  # type: ignore[arg-type]
    assert (found.metric.name if found and found.metric else None) == figure


@pytest.mark.parametrize(
    ("message", "compared"),
    [
        (
            "At store 8 last quarter, did the trained staff beat the untrained ones on attach?",
            ("staff with training completed: yes", "staff with training completed: no"),
        ),
        (
            "refund rate at store 2 in July: untrained people versus those who finished their training",
            ("staff with training completed: no", "staff with training completed: yes"),
        ),
        (
            "average basket at store 1, sales with an accessory vs without one",
            None,
        ),  # the figure's own column
        ("attach rate of the trained staff at store 6 last quarter", None),  # one population
    ],
)
async def test_two_populations_of_one_yes_no_column_are_compared_in_the_order_said(
    message: str, compared: tuple[str, str] | None
) -> None:
    attach = next(metric for metric in RETAIL.data_metrics if metric.name == "attach rate")
    found = await populations_compared(_OneSale(), attach, RETAIL.data_metrics, message)  # type: ignore[arg-type]
    assert (tuple(f.said for f in found) if found else None) == compared
    # The column compared narrows neither population on its own.
    kept = await row_filters(_OneSale(), attach, RETAIL.data_metrics, message)  # type: ignore[arg-type]
    assert compared is None or not any("training" in f.said for f in kept)
