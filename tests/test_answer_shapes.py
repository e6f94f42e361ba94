"""The shape of answer a data question asks for (a statistic of the rows, a breakdown, the first few of
a ranking), read from the words against the retail pack's figures, without a database."""

from __future__ import annotations

import pytest

from master_agent.domains.retail import DATA_METRICS
from master_agent.routing.answer_shapes import (
    breakdown_asked,
    breakdown_unread,
    first_few,
    money_share_asked,
    shape_words_blanked,
    single_row_amount,
    statistic_asked,
    with_statistic,
)

FIGURES = {metric.name: metric for metric in DATA_METRICS}


@pytest.mark.parametrize(
    ("text", "statistic"),
    [
        ("what's the median device price at store 4 in August", "median"),
        ("Median ticket size, store 7, Q3?", "median"),
        ("the 90th percentile basket at store 2", "90th percentile"),
        ("p95 accessory spend last month", "95th percentile"),
        ("upper quartile of device amounts in July", "upper quartile"),
        ("max accessory spend at store 1", "largest"),
        ("minimum device amount in June", "smallest"),
        ("our biggest single sale in August", "largest single"),
        ("the largest transaction at store 2 last quarter", "largest single"),
        ("what was the cheapest phone sold at store 3 in May", "smallest single"),
        ("priciest basket rung up at store 8", "largest single"),
        # The figure itself, ordered or not: no statistic of the rows.
        ("which store had the highest device revenue", None),
        ("which store had the biggest sales in Q3", None),
        ("the highest average basket of any store", None),
        ("the lowest refund rate in September", None),
        ("the biggest sales day in July", None),
        ("What's a typical sale worth at store 3?", "median"),
        ("attach rate on a typical Saturday at store 2", None),
    ],
)
def test_a_statistic_of_the_rows_is_read_from_its_words(text: str, statistic: str | None) -> None:
    found = statistic_asked(text)
    assert (found.name if found else None) == statistic


@pytest.mark.parametrize(
    ("figure", "name", "amount"),
    [
        ("average device amount", "median device amount", "device_amount"),
        # A total and a count are read through the amount each sale has: the basket.
        ("total revenue", "median basket", "device_amount + coalesce(accessory_amount, 0)"),
        ("transactions", "median basket", "device_amount + coalesce(accessory_amount, 0)"),
        ("device revenue", "median device amount", "device_amount"),
        ("average tenure", "median tenure", "tenure_months"),
    ],
)
def test_a_statistic_is_taken_over_the_amount_each_row_has(figure: str, name: str, amount: str) -> None:
    median = statistic_asked("the median")
    assert median is not None
    shaped = with_statistic(FIGURES[figure], median, DATA_METRICS)
    assert shaped is not None
    assert shaped.name == name
    assert shaped.expression.startswith(f"percentile_cont(0.5) WITHIN GROUP (ORDER BY {amount})")


def test_an_accessory_statistic_keeps_the_figures_filter() -> None:
    largest = statistic_asked("max accessory spend")
    assert largest is not None
    shaped = with_statistic(FIGURES["average accessory amount"], largest, DATA_METRICS)
    assert shaped is not None
    assert shaped.expression == "max(accessory_amount) FILTER (WHERE accessory_attached)::float"


@pytest.mark.parametrize("figure", ["refund rate", "attach rate", "trained staff share", "staff count"])
def test_a_share_or_a_count_without_money_has_no_statistic_of_its_rows(figure: str) -> None:
    median = statistic_asked("the median")
    assert median is not None
    assert with_statistic(FIGURES[figure], median, DATA_METRICS) is None


@pytest.mark.parametrize(
    ("text", "figure", "by"),
    [
        ("refund rate for store 2 by month since April", "refund rate", "month"),
        ("month by month attach rate for Q3", "attach rate", "month"),
        ("what did store 3 make each month since May", "total revenue", "month"),
        ("a monthly breakdown of refunds at store 6", "refunds", "month"),
        ("attach rate for each store in Q3", "attach rate", "store_id"),
        ("refunds per shop last quarter", "refunds", "store_id"),
        ("average basket for every staff member at store 3", "average basket", "staff_id"),
        ("sales per weekday at store 2", "transactions", "weekday"),
        ("attach rate by day of the week in August", "attach rate", "weekday"),
        ("revenue by hour of day at store 5", "total revenue", "hour"),
        ("daily figures for store 4's refunds in July", "refunds", "day"),
        ("revenue by region in September", "total revenue", "region"),
        ("headcount by store", "staff count", "store_id"),
        # One figure: an average per unit, a store named after "by", a deadline.
        ("average revenue per day in August", "total revenue", None),
        ("sales by store 3 in July", "transactions", None),
        ("attach rate by the end of the month", "attach rate", None),
        ("total revenue across all our stores in Q3", "total revenue", None),
        ("and across every store together?", "average accessory amount", None),
        ("refunds for all shops combined, each month", "refunds", "month"),
        # The staff list keeps no history; its figures are by store, never by staff member.
        ("trained staff share for every staff member", "trained staff share", None),
    ],
)
def test_a_breakdown_is_read_against_the_figures_own_entities_and_the_units_of_time(
    text: str, figure: str, by: str | None
) -> None:
    found = breakdown_asked(text, FIGURES[figure])
    assert (found.by if found else None) == by


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        ("attach rate per weekday at store 1 in Q3", "attach rate at store 1 in Q3"),
        ("refund rate for each store in August", "refund rate in August"),
        ("biggest single sale at store 6 in July", "biggest sale at store 6 in July"),
        ("month-by-month refunds since April", "refunds since April"),
        ("average revenue per day in August", "average revenue per day in August"),
        ("refunds by region in June", "refunds in June"),
    ],
)
def test_the_words_that_shape_the_answer_are_read_apart_from_the_figure(text: str, kept: str) -> None:
    assert " ".join(shape_words_blanked(text, ("region",)).split()) == kept


@pytest.mark.parametrize(
    ("text", "few"),
    [
        ("bottom three stores by refund rate", 3),
        ("top 5 stores by attach rate", 5),
        ("the best two shops last month", 2),
        ("the best store", None),
        ("top store in Q3", None),
    ],
)
def test_the_first_few_of_a_ranking(text: str, few: int | None) -> None:
    assert first_few(text) == few


@pytest.mark.parametrize(
    ("text", "unread"),
    [
        ("Break store 4's July sales down by phone model - how many of each?", "phone model"),
        ("Attach rate by customer age band at store 1 last quarter?", "customer age band"),
        ("sales split by payment method in July", "payment method"),
        ("refunds by channel last month", "channel"),
        # A breakdown the data can give, an idiom, a store, a deadline: nothing unread.
        ("attach rate by month", None),
        ("which is by far the best store", None),
        ("raise attach by way of coaching", None),
        ("sales by store 3", None),
        ("attach rate by the end of June", None),
        # The figure a ranking is by; an average per person; people.
        ("list the stores by refund rate for July", None),
        ("avg training hrs per person at store 7?", None),
        ("sales by person at store 2", None),
    ],
)
def test_a_breakdown_by_what_no_row_says_is_named(text: str, unread: str | None) -> None:
    assert breakdown_unread(text, FIGURES["transactions"], DATA_METRICS) == unread


@pytest.mark.parametrize(
    ("text", "store", "part"),
    [
        (
            "how much of the takings at store 2 in May came from cases and chargers... i mean accessories",
            2,
            "accessory",
        ),
        ("what fraction of our june turnover was handsets?", None, "device_amount)"),
        ("percentage of store 7's revenue that ended up refunded in august", 7, "WHERE refunded"),
        ("Store 1's slice of the whole company's takings last month?", 1, "store_id = 1"),
        ("what share of store 6's accessory money was handed back as refunds", 6, "WHERE refunded"),
    ],
)
def test_a_share_of_money_is_a_part_of_the_money_over_all_of_it(
    text: str, store: int | None, part: str
) -> None:
    share = money_share_asked(text, DATA_METRICS, store)
    assert share is not None and share.unit == "ratio"
    numerator, _, denominator = share.expression.partition(" / ")
    assert part in numerator and ("accessory_amount" in denominator)


@pytest.mark.parametrize(
    "text",
    [
        "what share of store 1's sales came with an add-on in July",  # a share of the sales: the attach rate
        "What share of store 2's revenue came from trained staff?",  # a part no figure of the data names
        "store 3 revenue in july",  # no share asked
        "what percentage of store 4's staff are trained",  # no money
        "how much of store 5's accessory revenue in June was screen protectors",  # a part of a part, unnamed
    ],
)
def test_no_share_of_money_is_read_where_none_is_asked(text: str) -> None:
    assert money_share_asked(text, DATA_METRICS, 2) is None


@pytest.mark.parametrize(
    ("text", "figure"),
    [
        ("the cheapest accessory add-on anybody bought at store 4 in May", "average accessory amount"),
        ("what was the biggest add-on rung up in June?", "average accessory amount"),
        ("dearest handset sale at store 5 last month", "average device amount"),
        ("our lowest single sale in May", "average basket"),
        # No superlative of one row: the words name the figure, or nothing is read here.
        ("the average accessory spend at store 2", None),
        ("which store had the biggest accessory revenue", None),
    ],
)
def test_a_superlative_of_one_row_is_of_the_part_of_the_sale_it_names(text: str, figure: str | None) -> None:
    found = single_row_amount(text, DATA_METRICS)
    assert (found.name if found else None) == figure
