"""The terms a request states, read against a fixed clock: windows, targets, deadlines, figures.

These pin behaviour on sentences of each form; how well the readers generalise is measured by
``make eval-truth`` on held-out cases, not here."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from master_agent.capabilities.terms import (
    Window,
    ambiguous_date,
    asks_money,
    counted_unknown,
    deadline_window,
    fiscal_quarter,
    fiscal_year_start,
    goal_deadline,
    goal_metric,
    goal_target,
    metric_by_words,
    metric_mention,
    money_source,
    possessed_unknown,
    restated,
    time_mention,
    time_window,
    unread_deadline,
    unread_time,
    written_out,
)
from master_agent.domains.retail import RETAIL
from master_agent.runtime.context import extract_entities
from master_agent.runtime.factory import classify_complexity

NOW = datetime(2026, 11, 25, 12, tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "first", "last"),
    [
        ("What was the attach rate at Store 4 in June 2026?", "2026-06-01", "2026-06-30"),
        ("and in July?", "2026-07-01", "2026-07-31"),  # looking back: this July, not next
        ("last month", "2026-10-01", "2026-10-31"),
        ("last quarter", "2026-07-01", "2026-09-30"),
        ("in Q2", "2026-04-01", "2026-06-30"),
        ("fiscal Q3 2025", "2025-07-01", "2025-09-30"),
        ("between 1 May and 15 June", "2026-05-01", "2026-06-15"),
        ("the first half of August", "2026-08-01", "2026-08-15"),
        ("the week of 7 September", "2026-09-07", "2026-09-13"),
        ("so far this month", "2026-11-01", "2026-11-25"),  # ends now
        ("in 2025", "2025-01-01", "2025-12-31"),
        # Shapes Duckling misreads alone, written so it reads them or read around it.
        ("avg device price at store 2 between the 3rd and 17th of Sept?", "2026-09-03", "2026-09-17"),
        ("between 3 and 17 September", "2026-09-03", "2026-09-17"),
        ("Store 4 txns w/c 14 Sept", "2026-09-14", "2026-09-20"),
        ("week commencing 7 September", "2026-09-07", "2026-09-13"),
        ("the fortnight ending 13 September", "2026-08-31", "2026-09-13"),
        ("the 10 days before 1 August", "2026-07-22", "2026-07-31"),
        ("the week after the week of 14 Sept", "2026-09-21", "2026-09-27"),
        ("the fortnight before last", "2026-10-26", "2026-11-08"),  # calendar weeks from Monday 23 Nov
        ("the month before last", "2026-09-01", "2026-09-30"),
        ("over the summer", "2026-06-01", "2026-08-31"),  # meteorological, as retail reports it
        ("last winter", "2025-12-01", "2026-02-28"),
        ("refunds in H1", "2026-01-01", "2026-06-30"),
        ("the second half of 2025", "2025-07-01", "2025-12-31"),
        ("first half of Sept", "2026-09-01", "2026-09-15"),
        ("since July", "2026-07-01", "2026-11-25"),  # runs to today, also read a year back
        ("since the start of October", "2026-10-01", "2026-11-25"),
        ("device revenue at store 1 from 1st June till date", "2026-06-01", "2026-11-25"),
        ("sales at store 5 02/07/2026 to 16/07/2026", "2026-07-02", "2026-07-16"),  # 16 settles day-first
        ("sales at store 5 on 7/16", "2026-07-16", "2026-07-16"),  # 16 settles month-first
        ("the refund rate at store seven over the last two weeks of August", "2026-08-18", "2026-08-31"),
        ("the first 10 days of Q3", "2026-07-01", "2026-07-10"),
    ],
)
def test_a_question_reads_the_window_it_names_against_the_clock(text: str, first: str, last: str) -> None:
    window = time_window(text, NOW)
    assert window is not None
    assert (window.start.date().isoformat(), window.last_day().date().isoformat()) == (first, last)


def test_numbers_that_are_not_times_name_no_window() -> None:
    assert time_window("How many sales did Store 4 make?", NOW) is None
    assert time_mention("Reduce churn in Region 3 by 15 percent") is None
    assert time_mention("Book a call at 10am") is None  # a time of day is no span of data
    # The count of a length is no clock time ("by two" of "by two hours" is no "by 2 o'clock").
    for moved in (
        "Push back the weekly planning by two hours",
        "Delay the sprint retro by 30 minutes",
        "Push back my 1:1 with Maria by 45 minutes",
        "push the budget sync back by 3 hrs",
    ):
        assert time_mention(moved) is None, moved
    assert time_mention("Increase sales by 10% by 30 June") == "by 30 June"
    assert time_mention("grow the attach rate within 60 days") == "within 60 days"
    # "June 2026" is a month, not a June numbered 2026.
    assert extract_entities("attach rate at Store 4 in June 2026") == {"store_id": 4}


@pytest.mark.parametrize(
    ("text", "form", "value"),
    [
        ("Increase Store 5's attach rate by 20% within 60 days", "relative", 0.2),
        ("Get Store 2's attach rate to 8% by the end of March", "absolute", 0.08),
        ("at least 8% by the end of March", "absolute", 0.08),
        ("lift it by 1.5 percentage points", "points", 1.5),
        ("raise acc attach rte at store 8 by 3 pts", "points", 3.0),
        ("double Store 5's attach rate", "multiple", 2.0),
        ("Halve the refund rate at Store 2", "multiple", 0.5),
        ("Cut accessory refunds at Store 6 by a third", "relative", -1 / 3),
        ("Reduce overtime hours by 15%", "relative", -0.15),
        ("Improve Store 1's NPS to 60", "absolute", 60.0),
    ],
)
def test_a_goal_states_its_target_in_its_own_form(text: str, form: str, value: float) -> None:
    target = goal_target(text)
    assert target is not None and target.form == form and target.value == pytest.approx(value)


def test_a_target_applies_to_a_baseline_as_stated() -> None:
    baseline = 0.05
    assert goal_target("to 8%").applied_to(baseline) == pytest.approx(0.08)  # type: ignore[union-attr]
    assert goal_target("by 20%").applied_to(baseline) == pytest.approx(0.06)  # type: ignore[union-attr]
    assert goal_target("by 2 points").applied_to(baseline) == pytest.approx(0.07)  # type: ignore[union-attr]
    assert goal_target("double it").applied_to(baseline) == pytest.approx(0.10)  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("text", "day"),
    [
        ("within 60 days", "2027-01-24"),
        ("by the end of March", "2027-03-31"),
        ("by Christmas", "2026-12-25"),
        ("by jan 31", "2027-01-31"),
        ("in the next six months", "2027-05-25"),
        ("before February", "2027-01-31"),
        ("this quarter", "2026-12-31"),
        ("in 8 weeks", "2027-01-20"),
        ("in 60 days", "2027-01-24"),
    ],
)
def test_a_deadline_counts_forward_from_today(text: str, day: str) -> None:
    deadline = goal_deadline(f"Increase Store 5's attach rate by 2 points {text}", NOW)
    assert deadline is not None and deadline[0].date().isoformat() == day


@pytest.mark.parametrize(
    ("text", "metric", "unknown"),
    [
        ("Increase Store 5's accessory attach rate by 20%", "attach rate", None),
        ("raise acc attach rte at store 8 by 3 pts", "attach rate", None),
        ("Get the south store's attach rate to 7%", "attach rate", None),
        ("Increase warranty attach rate at Store 5 by 10%", "attach rate", "warranty attach rate"),
        ("Reduce overtime hours at Store 2 by 15%", None, "overtime hours"),
        ("Get Store 3's refund rate down to 2%", "refund rate", None),
        ("Increase average device amount at Store 2 by 10%", "average device amount", None),
    ],
)
def test_a_goal_names_a_figure_the_data_has_or_says_which_it_lacks(
    text: str, metric: str | None, unknown: str | None
) -> None:
    found = goal_metric(text, RETAIL.data_metrics)
    assert (found.metric.name if found.metric else None, found.unknown) == (metric, unknown)


def test_only_the_first_words_of_a_request_are_read_for_a_time() -> None:
    # Duckling's number rules are slow on long digit runs (a fuzzed 4,000-digit goal timed out): long
    # numbers are hidden from it, and it reads the first PARSED_CHARS characters only.
    assert time_mention("0" * 3000 + " in June 2026") is None
    assert time_mention("in June 2026 " + "0" * 3000) == "in June 2026"


@pytest.mark.parametrize(
    ("text", "form", "value"),
    [
        ("Add two percentage points to Store 1's attach rate in 6 weeks", "points", 2.0),
        ("Make Store 7's attach rate one and a half times what it is now", "multiple", 1.5),
        ("Raise it by twelve percent before summer", "relative", 0.12),
        ("3x the attach rate at Store 2 by June", "multiple", 3.0),
        ("Grow Store 4's attach rate by twenty-five percent", "relative", 0.25),
    ],
)
def test_a_target_in_words_reads_as_in_digits(text: str, form: str, value: float) -> None:
    target = goal_target(text)
    assert target is not None and (target.form, target.value) == (form, pytest.approx(value))


def test_the_present_is_no_span_but_a_count_from_it_is() -> None:
    deadline = goal_deadline("Make it 1.5 times what it is now by the end of March", NOW)
    assert deadline is not None and deadline[0].date().isoformat() == "2027-03-31"
    # "today" says what the target is measured against; the deadline is what "by" opens.
    said_twice = goal_deadline("Make Store 5's attach rate 1.4 times what it is today by the end of May", NOW)
    assert said_twice is not None and said_twice[0].date().isoformat() == "2027-05-31"
    within = goal_deadline("Lift Store 2's attach rate by 1 point on last month's within six weeks", NOW)
    assert within is not None and within[0] == datetime(2026, 11, 25, tzinfo=UTC) + timedelta(days=42)
    # A target's number is no day: "by 1.5 percentage points" is not "by 1" (today, so no time left).
    assert deadline_window("Increase store 1's attach rate by 1.5 percentage points", NOW) is None
    later = goal_deadline("Raise it 10% three months from now", NOW)
    assert later is not None and later[0].date().isoformat() == "2027-02-25"
    assert time_window("What is the attach rate right now at Store 4?", NOW) is None


@pytest.mark.parametrize(
    ("text", "first", "last"),
    [
        ("How many refunds did Store 7 have over June and July?", "2026-06-01", "2026-07-31"),
        ("the attach rate in May and June 2026", "2026-05-01", "2026-06-30"),
        ("sales in December 2025 and January 2026", "2025-12-01", "2026-01-31"),
    ],
)
def test_mentions_joined_by_and_are_one_span(text: str, first: str, last: str) -> None:
    window = time_window(text, NOW)
    assert window is not None
    assert (window.start.date().isoformat(), window.last_day().date().isoformat()) == (first, last)


def test_words_saying_how_far_to_move_a_figure_do_not_qualify_it() -> None:
    mention = goal_metric(
        "Get Store 5 three points higher on attach rate by Valentine's Day", RETAIL.data_metrics
    )
    assert mention.metric is not None and mention.metric.name == "attach rate" and mention.unknown is None


def test_a_slip_of_an_entity_noun_hides_its_number_from_dates() -> None:
    window = time_window("What was the attach rate at stroe 2 in August 2026?", NOW)
    assert window is not None and window.start.date().isoformat() == "2026-08-01"
    assert window.last_day().date().isoformat() == "2026-08-31"


@pytest.mark.parametrize(
    ("goal", "complexity"),
    [
        # The target, not the verb, makes a goal strategic.
        ("Get Store 2's attach rate to 8% by the end of March", "strategic"),
        ("Get Store 5 three points higher on attach rate by Valentine's Day", "strategic"),
        ("Store 3 - accessory attach up 25% by Christmas pls", "strategic"),
        ("Increase Store 5's accessory attach rate by 20% within 60 days", "strategic"),
        ("What is the attach rate of Store 5?", "simple"),
        ("Why is Store 4 selling so few accessories?", "standard"),
    ],
)
def test_a_goal_is_strategic_when_its_words_state_a_target(goal: str, complexity: str) -> None:
    assert classify_complexity(goal) == complexity


def test_a_digit_date_either_way_round_is_asked_about_and_an_unread_period_is_said() -> None:
    assert ambiguous_date("how many sales did store 2 do on 8/7?") == ("8 July", "7 August")
    assert ambiguous_date("sales on 16/7") is None and ambiguous_date("sales on 7/7") is None
    assert unread_time("sales at store 6 in the week of the big storm") == "week"
    assert unread_time("How many sales did Store 4 make?") is None


def test_shorthand_is_written_out_before_a_figure_is_named() -> None:
    assert written_out("avg acc rev at store 2") == "average accessory revenue at store 2"
    assert metric_mention("Store 4 txns w/c 14 Sept", RETAIL.data_metrics).metric.name == "transactions"  # type: ignore[union-attr]
    assert metric_mention("store 3 vs store 7 total rev in Jul", RETAIL.data_metrics).unknown is None


def test_a_goal_tied_to_an_event_asks_its_date_and_a_later_message_restates_its_terms() -> None:
    now = datetime(2026, 11, 26, 12, tzinfo=UTC)
    assert unread_deadline("lift store 5's attach by 1.5 points by the time the new manager starts", now) == (
        "by the time the new manager starts"
    )
    assert unread_deadline("Raise attach at store 2 to 8% before Christmas", now) is None
    assert unread_deadline("Raise the attach rate at store 2 by coaching staff", now) is None
    # The target's words are no date: "by a third by the end of March" ends in March.
    deadline = goal_deadline("store 5 - can we get attach up by a third by the end of march?", now)
    assert deadline is not None and deadline[0].date().isoformat() == "2027-03-31"
    changed = restated(
        "could we add 1.5 points to store seven's attach by the end of march?", "actually make it 10 points"
    )
    target = goal_target(changed)
    assert target is not None and (target.form, target.value) == ("points", 10.0)
    later = restated(
        "Can you triple store one's attach rate within a week?", "what if we gave it till the end of March?"
    )
    deadline = goal_deadline(later, now)
    assert deadline is not None and deadline[0].date().isoformat() == "2027-03-31"


def test_a_count_of_a_thing_the_data_has_no_word_for_is_named_as_missing() -> None:
    assert counted_unknown("how many iPhones did store 1 sell in august", RETAIL.data_metrics) == "iphones"
    assert counted_unknown("how many sales did store 2 make", RETAIL.data_metrics) is None
    assert counted_unknown("how many people work at store 2", RETAIL.data_metrics) is None
    mention = goal_metric("Can you triple store one's attach rate within a week?", RETAIL.data_metrics)
    assert mention.metric is not None and mention.unknown is None  # "one" is the store's number


@pytest.mark.parametrize(
    ("said", "quarter", "first", "last"),
    [
        ("Our fiscal year starts on 1 May.", "fiscal Q1", "2026-05-01", "2026-07-31"),
        ("Our FY runs April to March.", "fiscal Q2 of this year", "2026-07-01", "2026-09-30"),
        ("Our financial year ends on 31 March.", "FY Q4", "2026-01-01", "2026-03-31"),
    ],
)
def test_a_financial_quarter_is_read_once_the_year_start_is_said(
    said: str, quarter: str, first: str, last: str
) -> None:
    start = fiscal_year_start(said)
    assert start is not None
    window = fiscal_quarter(quarter, NOW, start)
    assert window is not None
    assert (window.start.date().isoformat(), window.last_day().date().isoformat()) == (first, last)


@pytest.mark.parametrize(
    ("text", "event"),
    [
        ("Lift attach rate at Store 5 to 8% before the spring sale", "before the spring sale"),
        ("get store 1's attach to 7% by the Christmas party", "by the Christmas party"),
        ("ahead of the autumn launch at store 2, get attach to 9%", "ahead of the autumn launch"),
    ],
)
def test_a_deadline_named_by_an_event_called_after_a_season_or_holiday_is_asked(
    text: str, event: str
) -> None:
    """A season or holiday that names an event ("the spring sale") is not that season: the event's
    date is the business's own, so it is asked, like "before the next stocktake"."""
    now = datetime(2026, 11, 26, 12, tzinfo=UTC)
    assert goal_deadline(text, now) is None
    assert unread_deadline(text, now) == event


@pytest.mark.parametrize(
    ("text", "day"),
    [
        ("raise store 5 attach rate to 6% before spring at last", "2027-03-19"),
        ("store 5 attach to 7% by Christmas, please", "2026-12-25"),
        ("by the end of March at store 6 raise attach by 1 point", "2027-03-31"),
    ],
)
def test_a_season_or_holiday_followed_by_no_noun_is_still_the_deadline(text: str, day: str) -> None:
    now = datetime(2026, 11, 26, 12, tzinfo=UTC)
    deadline = goal_deadline(text, now)
    assert deadline is not None and deadline[0].date().isoformat() == day
    assert unread_deadline(text, now) is None


@pytest.mark.parametrize(
    ("text", "money"),
    [
        ("sorry, I meant in dollars", True),
        ("What's store 4 taken since the start of October?", True),
        ("how much did store 3 bring in during August", True),
        ("store 2's sales in money terms, August", True),
        ("what did store 1 make last month?", True),
        ("How many transactions did store 5 make in August?", False),
        ("What were store 4's sales in August?", False),
        ("Which store has the fewest staff who've taken the training?", False),
        # Money named by a noun whose WordNet sense is income or a cashbox, after a determiner.
        ("how did the tills do at store 6 over the May bank holiday", True),
        ("what were the proceeds at store 2 in the second week of May", True),
        ("what's the take looking like for store 7 in June", True),
        # Selling itself is a count, and a bank holiday or a store is no money.
        ("the sales on the bank holiday at store 2", False),
        ("how many people worked the registers at store 1 in May", False),
        ("which of the stores refunded most in June", False),
    ],
)
def test_a_question_asking_for_money_is_told_from_one_asking_a_count(text: str, money: bool) -> None:
    assert asks_money(text) is money


@pytest.mark.parametrize(
    ("text", "thing"),
    [
        ("What's the average age of store 4's customers?", "customers"),
        ("What share of Store 2's customers came back for a second purchase in Q3?", "customers"),
        ("What share of Store 3's sales in the first week of June had an accessory?", None),
        ("How many of store four's staff have finished their training?", None),
        ("how big is store 2's team", None),
    ],
)
def test_a_figure_of_something_the_data_has_no_rows_for_is_named(text: str, thing: str | None) -> None:
    assert possessed_unknown(text, RETAIL.data_metrics) == thing


@pytest.mark.parametrize(
    ("text", "figure", "unknown"),
    [
        ("mean device revenue at store 2 in July", "average device amount", None),
        ("the average total revenue at store 1 last month", "average basket", None),
        ("avg acc rev at stores 3 and 7 last qtr", "accessory revenue", "average accessory revenue"),
        ("what were the typical refunds at store 2 in August", "refunds", "typical refunds"),
        ("average refunds at store 2 in August", "refunds", "average refunds"),
        ("mean tenure at store 3", "average tenure", None),
        ("the average refund rate at store 4", "refund rate", None),
        ("total revenue at store 4 in July", "total revenue", None),
    ],
)
def test_an_average_asked_of_a_total_is_its_per_sale_figure_or_none(
    text: str, figure: str, unknown: str | None
) -> None:
    # An average is never answered with the total it averages: the per-sale figure where the data
    # defines one, else a figure the data does not have (per sale, per accessory or per week?).
    mention = metric_mention(text, RETAIL.data_metrics)
    assert mention.metric is not None and mention.metric.name == figure
    assert mention.unknown == unknown


def test_an_average_of_a_misspelt_total_is_read_the_same_way() -> None:
    by_words = metric_by_words("mean devce revnue at store 2 in July", RETAIL.data_metrics)
    assert by_words is not None and by_words.metric is not None
    assert by_words.metric.name == "average device amount" and by_words.unknown is None
    by_words = metric_by_words("avrage refnds at store 2", RETAIL.data_metrics)
    assert by_words is not None and by_words.unknown == "average refunds"


@pytest.mark.parametrize(
    ("label", "said"),
    [
        ("in during october", "october"),
        ("in August", "August"),
        ("over June and July", "June and July"),
        ("last month", "last month"),
    ],
)
def test_a_window_is_described_without_the_prepositions_its_label_carries(label: str, said: str) -> None:
    window = Window(
        start=datetime(2026, 10, 1, tzinfo=UTC), end=datetime(2026, 11, 1, tzinfo=UTC), label=label
    )
    assert window.describe() == f"{said} (2026-10-01 to 2026-10-31)"


@pytest.mark.parametrize(
    ("text", "source"),
    [
        ("how much did store 7 make from accessories in the first half of september", "accessories"),
        ("What did store 4 take on phones last week?", "phones"),
        ("how much did we make from the phone cases at store 3 in august", "phone cases"),
        # A day or a store after "on"/"from" is no part of the sales.
        ("how much money did store 2 make on Saturday?", None),
        ("What has store 4 taken since October?", None),
        ("revenue from store 5 in July", None),
    ],
)
def test_what_money_is_said_to_come_from(text: str, source: str | None) -> None:
    assert money_source(text) == source


@pytest.mark.parametrize(
    "message",
    [
        "from now on have it list exchanges apart",
        "and from now on, leave out store 11",
        "From now, skip the trainees",
    ],
)
def test_a_span_from_now_on_runs_ahead_and_is_no_window_of_data(message: str) -> None:
    assert time_mention(message) is not None  # a time is said ...
    assert time_mention(message, horizons=False) is None  # ... but no data is read over it
    # A follow-up saying it changes how a request is done, not when: the request keeps its time.
    goal = "run the returns digest for store 1 for October"
    assert restated(goal, message) == goal
    assert restated(goal, "and for November?") == "run the returns digest for store 1 for November"
