"""The words a manager uses for a figure or for some of the staff: a compound noun that is a kind of
the figure's own noun ("grand total"), a count ranked by what was sold ("shifted the most handsets"),
and a kind of worker no column records ("the temps"), read against the retail pack's figures."""

from __future__ import annotations

import pytest

from master_agent.capabilities.terms import counted_rows, metric_mention, rows_narrowed_by
from master_agent.domains.retail import DATA_METRICS
from master_agent.routing.answer_shapes import Breakdown, breakdown_sql
from master_agent.routing.row_filters import days_of_week_blanked, week_parts

FIGURES = {metric.name: metric for metric in DATA_METRICS}


@pytest.mark.parametrize(
    ("text", "figure", "unknown"),
    [
        ("grand total takings for the east stores in Q2?", "total revenue", None),
        ("what were our gross sales in June", "total revenue", None),
        # A qualifier that is no kind of the figure's noun stays data the tenant lacks.
        ("net sales at store 4 in June", "transactions", "net transactions"),
        ("extended-warranty attach rate at store 1", "attach rate", "extended-warranty attach rate"),
    ],
)
def test_a_compound_noun_that_is_a_kind_of_the_figures_noun_is_no_qualifier(
    text: str, figure: str, unknown: str | None
) -> None:
    said = metric_mention(text, DATA_METRICS)
    assert said.metric is not None and said.metric.name == figure
    assert said.unknown == unknown


@pytest.mark.parametrize(
    "text",
    [
        "which shop flogged the most mobiles in May?",
        "who sold the fewest handsets at store 6 last month",
        "which region moved the most units over the summer",
    ],
)
def test_things_ranked_by_how_many_were_sold_are_the_count_of_sales(text: str) -> None:
    counted = counted_rows(text, DATA_METRICS)
    assert counted is not None and counted.metric is not None
    assert counted.metric.expression == "count(*)"


@pytest.mark.parametrize(
    ("text", "narrowed"),
    [
        ("how many phones did the temps at store 5 sell in May?", ("temps",)),
        ("did the part-time staff at store 2 attach more in May?", ("part-time",)),
        ("Were the part-timers at store 6 better on refunds than everyone else?", ("part-timers",)),
        # The staff as a whole, a person said by their role, or a population the data has.
        ("how many sales did the employees at store 3 make in May", ()),
        ("my area manager asks: attach rate at store 4 in May?", ()),
        ("attach rate of the trained staff at store 4 in May", ()),
    ],
)
def test_a_kind_of_worker_no_column_records_narrows_beyond_the_data(
    text: str, narrowed: tuple[str, ...]
) -> None:
    figure = FIGURES["transactions" if "phones" in text or "sales" in text else "attach rate"]
    found = rows_narrowed_by(text, figure, DATA_METRICS)
    assert all(any(words in phrase for phrase in found) for words in narrowed), found
    assert bool(found) == bool(narrowed), found


def test_a_week_is_keyed_by_its_first_day_in_the_window() -> None:
    statement = breakdown_sql(FIGURES["transactions"], Breakdown("week"), " WHERE sold_at >= %(start)s")
    assert statement is not None
    assert "greatest(date_trunc('week', sold_at AT TIME ZONE 'UTC'), date_trunc('day', %(start)s" in statement


@pytest.mark.parametrize(
    ("text", "parts", "blanked"),
    [
        ("store 2, June: weekday takings against weekend takings", ["weekday", "weekend"], "store 2, June:"),
        ("Weekend refunds at store 4 since July", ["weekend"], "refunds at store 4 since July"),
        ("attach rate at store 3 last weekend", ["weekend"], "attach rate at store 3 last weekend"),
        # A holiday's weekend is its days, not every weekend's.
        (
            "units over the Easter long weekend back in April",
            ["weekend"],
            "units over the Easter long weekend",
        ),
    ],
)
def test_parts_of_the_week_said_of_a_figure_are_its_days_not_data_or_a_period(
    text: str, parts: list[str], blanked: str
) -> None:
    assert week_parts(text) == parts
    assert " ".join(days_of_week_blanked(text).split()).startswith(blanked)
