"""Classes of wording the sixth eval-truth batch found misread, each pinned on sentences of their own:
holidays by the names people use for them (and the country the text points to), a digit date a
holiday settles, "last to last month", a holiday carried into a follow-up, a change between two
periods gone by, counts judged as shares when stores are compared, and closings that continue
nothing."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from master_agent.capabilities.terms import (
    Window,
    ambiguous_date,
    changed_between,
    goal_target,
    time_mention,
    time_window,
)
from master_agent.domains.retail import RETAIL
from master_agent.routing.queries import carried_over, judged_as_share

#: A Saturday.
NOW = datetime(2026, 11, 28, 12, tzinfo=UTC)
METRICS = RETAIL.data_metrics


def _days(text: str) -> tuple[str, str]:
    window = time_window(text, NOW)
    assert window is not None, text
    return window.start.date().isoformat(), window.last_day().date().isoformat()


@pytest.mark.parametrize(
    ("text", "first", "last"),
    [
        ("device revenue on Juneteenth", "2026-06-19", "2026-06-19"),
        ("refunds over the Fourth of July weekend", "2026-07-03", "2026-07-05"),  # observed on Friday 3rd
        ("sales on July 4th at store 2", "2026-07-04", "2026-07-04"),
        ("store 3 on MLK Day", "2026-01-19", "2026-01-19"),
        ("takings on Presidents Day", "2026-02-16", "2026-02-16"),
        ("sales on Gandhi Jayanti", "2026-10-02", "2026-10-02"),
        # A name two calendars share is the one of the country the text names again.
        ("bills on Independence Day, for our I-Day sale review", "2026-08-15", "2026-08-15"),
        ("how did we do on Independence Day?", "2026-07-04", "2026-07-04"),
        # Australia's and Canada's calendars, and the days the US names without a day off.
        ("phones sold on Anzac Day", "2026-04-25", "2026-04-25"),
        ("average sale on Canada Day", "2026-07-01", "2026-07-01"),
        ("attach over the Victoria Day long weekend", "2026-05-16", "2026-05-18"),
        ("transactions on Mother's Day", "2026-05-10", "2026-05-10"),
        ("sales on St Patrick's Day", "2026-03-17", "2026-03-17"),
        ("refund rate for last to last month", "2026-09-01", "2026-09-30"),
        ("attach rate last to last quarter", "2026-04-01", "2026-06-30"),
    ],
)
def test_holidays_by_the_names_people_use_and_last_to_last(text: str, first: str, last: str) -> None:
    assert _days(text) == (first, last)


def test_a_digit_date_said_to_be_a_holiday_is_read_the_way_it_is_one() -> None:
    assert ambiguous_date("sales on 7/4, the holiday") is None
    assert _days("sales on 7/4, the holiday") == ("2026-07-04", "2026-07-04")
    assert _days("sales on 26/1, the holiday") == ("2026-01-26", "2026-01-26")
    # Nothing settles a date that is no holiday either way.
    assert ambiguous_date("sales on 6/5, the holiday") is not None
    assert ambiguous_date("sales on 7/4") is not None


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("what was store 7's attach rate over Labor Day weekend?", "Labor Day weekend"),
        ("takings on the early May bank holiday 2026", "early May bank holiday 2026"),
        ("refunds in Diwali week", "Diwali week"),
        # The year or the days said near the name are part of it; a year said elsewhere is not.
        ("Diwali 2 days off last year, store 2 refunds?", "Diwali 2 days off last year"),
        ("Easter four day weekend this year - store 4 attach?", "Easter four day weekend this year"),
        ("Canada Day and the week after at store 1", "Canada Day"),
    ],
)
def test_a_holiday_is_mentioned_by_its_whole_name(text: str, said: str) -> None:
    assert time_mention(text) == said


@pytest.mark.parametrize(
    "question",
    [
        "Diwali 2 days off last year, store 4's refunds were what?",
        "Easter four day weekend this year - store 4 attach?",
    ],
)
def test_a_follow_up_carries_the_holiday_with_the_days_and_year_said_with_it(question: str) -> None:
    # The year said after the holiday's name ("this year") is carried with it, never alone as the year.
    previous = {"goal": question, "entities": {"store_id": 4}}
    message, _ = carried_over("and store 1 that same holiday?", {"store_id": 1}, previous, METRICS, NOW)
    assert _days(message) == _days(question), message


def test_a_follow_up_carries_the_holiday_said_before() -> None:
    previous = {"goal": "what was store 7's attach rate over Labor Day weekend?", "entities": {"store_id": 7}}
    message, _ = carried_over("ok, and store 3?", {"store_id": 3}, previous, METRICS, NOW)
    assert _days(message) == ("2026-09-05", "2026-09-07")


@pytest.mark.parametrize(
    ("text", "first", "second"),
    [
        ("By how much did store 6's attach rate increase from May to June?", "2026-05", "2026-06"),
        ("did store 3's attach rate go up by a third between May and August?", "2026-05", "2026-08"),
        ("refund rate MoM aug->sep for store 2", "2026-08", "2026-09"),
        ("did refunds drop between Q2 and Q3 at store 1?", "2026-04", "2026-07"),
        ("how did the attach rate change from June 2026 to July 2026?", "2026-06", "2026-07"),
        # A comparative and "than": the periods in either order, the change from the earlier.
        ("were refunds lower in Q3 than in Q2 at store 2?", "2026-04", "2026-07"),
        ("did store 4 sell fewer phones in August than July?", "2026-07", "2026-08"),
        ("how much more accessory revenue did store 3 make in June than May 2026?", "2026-05", "2026-06"),
        ("attach rate June vs July at store 2", "2026-06", "2026-07"),
    ],
)
def test_a_change_between_two_periods_gone_by_names_both(text: str, first: str, second: str) -> None:
    periods = changed_between(text, NOW)
    assert periods is not None, text
    assert (periods[0].start.strftime("%Y-%m"), periods[1].start.strftime("%Y-%m")) == (first, second)


@pytest.mark.parametrize(
    "text",
    [
        "Increase attach rate at store 3 from 5% to 7% by June",
        "attach rate from May to June",  # a span, no change asked
        "did attach go up from October to December?",  # December has not ended
        "raise the refund rate between now and March",
        "is store 5 better than store 6 in June?",  # two stores, one period
        "attach rate more than 5% in June?",
        "store 3 vs store 5 attach rate in June",  # two stores, one period
    ],
)
def test_no_change_is_read_where_none_is_asked_or_a_period_is_ahead(text: str) -> None:
    assert changed_between(text, NOW) is None


def test_stores_judged_on_a_count_of_flagged_sales_are_judged_by_its_share() -> None:
    by_name = {metric.name: metric for metric in METRICS}
    refunds, revenue = by_name["refunds"], by_name["accessory revenue"]
    assert judged_as_share(
        "Which did better on refunds in August, store 1 or store 4?", refunds, METRICS
    ).name == ("refund rate")
    assert judged_as_share("compare refunds at store 1 and store 4", refunds, METRICS) is refunds
    assert (
        judged_as_share("which did better on accessory revenue, store 1 or 2?", revenue, METRICS) is revenue
    )
    previous = {"goal": "Which did better on refunds in August, store 1 or store 4?", "entities": {}}
    message, _ = carried_over("and in September?", {}, previous, METRICS, NOW)
    assert "refund rate" in message and "store 1 or store 4" in message


@pytest.mark.parametrize(
    ("text", "form", "value"),
    [
        ("the target is 8%", "absolute", 0.08),
        ("ok, our goal is 6.5 percent", "absolute", 0.065),
        ("aim for 7% by March", "absolute", 0.07),
        ("make it 9%", "absolute", 0.09),
        ("8% is the target", "absolute", 0.08),
        ("make it 8% higher", "relative", 0.08),
        ("increase it by 8%", "relative", 0.08),
    ],
)
def test_a_percentage_said_to_be_the_target_is_a_level(text: str, form: str, value: float) -> None:
    target = goal_target(text)
    assert target is not None and (target.form, target.value) == (form, pytest.approx(value))


def test_a_weekend_compared_with_the_weekend_before_is_the_same_days_a_week_earlier() -> None:
    periods = changed_between(
        "store 6 device revenue over the UK August bank holiday weekend vs the weekend before", NOW
    )
    assert periods is not None
    before, holiday = periods
    assert _days_of(holiday) == ("2026-08-29", "2026-08-31")
    assert _days_of(before) == ("2026-08-22", "2026-08-24")


def _days_of(window: Window) -> tuple[str, str]:
    return window.start.strftime("%Y-%m-%d"), window.last_day().strftime("%Y-%m-%d")
