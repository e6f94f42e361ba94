"""Figures over the distinct units of a figure's rows (different staff, days with a sale), a count or a
total per unit, and a statistic of every unit's own figure, read against the retail pack's figures
without a database."""

from __future__ import annotations

import pytest

from master_agent.domains.retail import DATA_METRICS
from master_agent.routing.per_unit import (
    clock_units,
    distinct_count,
    over_units_sql,
    per_unit_rate,
    statistic_over_units,
    unit_unmet,
)

FIGURES = {metric.name: metric for metric in DATA_METRICS}


@pytest.mark.parametrize(
    ("text", "counted"),
    [
        ("how many separate salespeople processed a sale at store 4 last week?", "staff_id"),
        ("How many unique members of staff sold a handset in Q2?", "staff_id"),
        ("how many employees actually closed a deal at store 1 in May", "staff_id"),
        ("How many of the days in June did store 8 see at least one sale?", None),
        ("how many days in May did store 8 see at least one sale?", "(sold_at AT TIME ZONE 'UTC')::date"),
        ("how many trading days had a transaction at store 2 in Q3?", "(sold_at AT TIME ZONE 'UTC')::date"),
        ("how many distinct branches sold something last month", "store_id"),
        # The staff list, or a count of sales: no units counted.
        ("how many staff does store 5 employ?", None),
        ("how many people at store 2 have finished their training?", None),
        ("how many sales did store 2 ring up in June?", None),
    ],
)
def test_a_count_of_different_units_counts_them_once_each(text: str, counted: str | None) -> None:
    figure = distinct_count(text, DATA_METRICS)
    if counted is None:
        assert figure is None, figure
        return
    assert figure is not None and figure.expression == f"count(DISTINCT {counted})"
    assert figure.table == "transactions" and figure.unit == "count" and figure.money is None


@pytest.mark.parametrize(
    ("text", "narrowed"),
    [
        # What was sold names a yes/no column of the rows by its word or a noun of one sense with it.
        ("how many distinct reps sold an add-on at store 7 in July?", True),
        ("number of different staff members who sold accessories at store 2 in May", True),
        ("how many different people sold a phone at store 3 in May?", False),
        ("how many different branches rang up a sale in May?", False),
    ],
)
def test_a_count_of_different_units_is_narrowed_to_the_rows_with_what_they_sold(
    text: str, narrowed: bool
) -> None:
    figure = distinct_count(text, DATA_METRICS)
    assert figure is not None
    assert figure.expression.endswith(" FILTER (WHERE accessory_attached)") is narrowed


@pytest.mark.parametrize(
    ("text", "total", "unit"),
    [
        ("What did store 5 take on average per trading day in June?", "total revenue", "::date"),
        ("average takings per working day at store 5 in June", "total revenue", "::date"),
        ("mean accessory revenue per staff member at store 3 in Q3", "accessory revenue", "staff_id"),
        # A unit of the clock, unqualified, is the window's clock hours or days, not those with a sale.
        ("What are the average daily refunds at store 6?", "refunds", "/ 86400"),
        ("On average how many sales per hour does store 2 do?", "transactions", "/ 3600"),
        ("roughly what does store 2 take an hour in May", "total revenue", "/ 3600"),
        ("how many phones a day did store 4 get through in August", "transactions", "/ 86400"),
        ("typical weekly device revenue at store 1 over the summer", "device revenue", "'week'"),
        # A rate per day is each day's rate (a breakdown); a sum per unit without an average is one too.
        ("attach rate per day on average in August", None, None),
        ("takings per day in August", None, None),
        # Per sale is the average basket, read elsewhere.
        ("average spend per transaction at store 2", None, None),
        # An article before a span of time is the span, not what the amount is per.
        ("what did store 3 take in a week in August", None, None),
        ("takings at store 2 a week ago", None, None),
    ],
)
def test_a_count_or_total_per_unit_is_shared_out_over_the_units_its_rows_have(
    text: str, total: str | None, unit: str | None
) -> None:
    figure = per_unit_rate(text, DATA_METRICS)
    if total is None:
        assert figure is None, figure
        return
    assert figure is not None, text
    assert figure.expression.startswith(f"({FIGURES[total].expression})::float / nullif(")
    assert unit is not None and unit in figure.expression
    assert figure.name.startswith(f"{total} per ")


@pytest.mark.parametrize(
    ("text", "figure", "unit"),
    [
        (
            "what's the median of each seller's average device price at store 4?",
            "average device amount",
            "staff_id",
        ),
        ("the typical shop's monthly accessory revenue in Q3", None, "store_id"),
        ("the 75th percentile of the stores' attach rates in July", "attach rate", "store_id"),
        ("refund rate at store 1, median across the staff", "refund rate", "staff_id"),
        ("the typical day's takings at store 7 in August", "total revenue", "day"),
        # A statistic of the rows: the middle sale, whoever made it.
        ("median basket across the stores in August", "average basket", None),
        ("median basket at store 2 in August", "average basket", None),
        ("the largest single sale of the staff at store 3", "average basket", None),
    ],
)
def test_a_statistic_of_every_units_own_figure_is_read_apart_from_one_of_the_rows(
    text: str, figure: str | None, unit: str | None
) -> None:
    metric = per_unit_rate(text, DATA_METRICS) if figure is None else FIGURES[figure]
    assert metric is not None
    over = statistic_over_units(text, metric, rows_have_amount=metric.unit != "ratio")
    if unit is None:
        assert over is None, over
        return
    assert over is not None and over.unit == unit, over
    statement = over_units_sql(metric, over, " WHERE store_id = %(store_id)s")
    assert f"{metric.expression} AS unit_value" in statement and "GROUP BY 1) AS per_unit" in statement
    assert statement.startswith(f"SELECT {over.statistic.aggregate.format(x='unit_value')}")


@pytest.mark.parametrize(
    ("text", "figure", "unmet"),
    [
        # A count or a total of all the rows is not the figure asked per a unit.
        ("Refunds per head at store 1 in July?", "refunds", "per head"),
        ("what did accessories bring in per sale at store 4 in May", "accessory revenue", "per sale"),
        ("store 3's daily device revenue in August", "device revenue", "daily"),
        ("how many handsets does store 2 move an hour", "transactions", "an hour"),
        # A figure shared out over the unit asked, an average or a rate, or no unit asked: met.
        ("Roughly what did store 1 take an hour in May?", None, None),
        ("average basket per sale at store 4 in May", "average basket", None),
        ("the refund rate per day in May", "refund rate", None),
        ("accessory revenue at store 4 in May", "accessory revenue", None),
        ("device revenue at store 3 over a week in August", "device revenue", None),
    ],
)
def test_a_figure_asked_per_a_unit_is_met_only_by_a_figure_per_that_unit(
    text: str, figure: str | None, unmet: str | None
) -> None:
    metric = FIGURES[figure] if figure is not None else per_unit_rate(text, DATA_METRICS)
    assert metric is not None
    assert unit_unmet(text, metric) == unmet


def test_a_unit_of_the_clock_is_counted_over_the_window_cut_to_the_days_its_rows_reach() -> None:
    sql = clock_units("hour", "sold_at")
    assert sql.endswith("/ 3600") and "%(start)s" in sql and "%(end)s" in sql
    assert "max(sold_at)" in sql and "min(sold_at)" in sql
