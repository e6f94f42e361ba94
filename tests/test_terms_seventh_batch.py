"""Classes of wording the seventh eval-truth batch found misread, each pinned on sentences of its own:
rows counted by what people call them ("phones", "units"), the average of a count (the money of a
sale), a period "to date", a count asked again as a share, a store judged by how it is "doing", a
lone number answering "which store?", fractions with a slash and counts per count as targets (and the
share they are of), a way of working carried to another store, a lifting plan against a level below
its baseline, two periods one beside the other, praise that closes a thread, and a figure question
about data the tenant lacks."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from master_agent.capabilities.terms import (
    changed_between,
    counted_rows,
    counted_unknown,
    goal_metric,
    goal_target,
    metric_by_words,
    metric_mention,
    time_mention,
    time_window,
)
from master_agent.domains.retail import RETAIL
from master_agent.domains.retail.schemas import TargetTerms
from master_agent.domains.retail.tools import _asks_a_cut
from master_agent.evolution.reuse import unknown_by_meaning
from master_agent.models.embeddings import LocalMiniLMEmbedder
from master_agent.routing.graph.decide import _lone_number
from master_agent.routing.graph.follow_ups import is_closing
from master_agent.routing.queries import carried_over, judged_as_share

#: A Sunday.
NOW = datetime(2026, 11, 29, 12, tzinfo=UTC)
METRICS = RETAIL.data_metrics


def _figure(text: str) -> str | None:
    mention = metric_mention(text, METRICS)
    if mention.metric is None and mention.unknown is None:
        mention = metric_by_words(text, METRICS) or mention
    if mention.metric is None and mention.unknown is None:
        mention = counted_rows(text, METRICS) or mention
    assert mention.unknown is None, (text, mention.unknown)
    return mention.metric.name if mention.metric else None


@pytest.mark.parametrize(
    ("text", "figure"),
    [
        ("how many handsets did store 6 shift over Easter weekend?", "transactions"),
        ("number of mobiles store 2 got out the door in June", "transactions"),
        ("units sold at store 1 in May", "transactions"),
        ("what was the average handset price at store 3 in July", "average device amount"),
        ("store 8's mobile sales revenue last quarter", "device revenue"),
        ("the average sale at store 4 on Canada Day", "average basket"),
        ("mean transaction at store 2 in August", "average basket"),
        ("Q3-to-date accessory revenue, store 5", "accessory revenue"),
    ],
)
def test_rows_and_averages_are_read_by_the_words_people_use(text: str, figure: str) -> None:
    assert _figure(text) == figure


def test_a_model_of_phone_is_still_data_the_tenant_lacks() -> None:
    assert counted_unknown("how many Galaxies did store 1 sell in May", METRICS) == "galaxies"
    assert counted_unknown("how many iPhones did store 1 sell in May", METRICS) == "iphones"
    assert counted_rows("how many iPhones did store 1 sell in May", METRICS) is None


def test_to_date_is_part_of_the_time_said() -> None:
    assert time_mention("H1 to date refunds at store 3") == "H1 to date"


def test_a_count_asked_again_as_a_share_is_its_rate() -> None:
    previous = {"goal": "returns at store 4 from 1 to 19 July", "entities": {"store_id": 4}}
    message, carried = carried_over("and as a percentage of sales?", {}, previous, METRICS, NOW)
    assert "(the refund rate)" in message
    assert carried["store_id"] == 4


def test_how_a_store_is_doing_on_a_count_of_flagged_sales_is_its_share() -> None:
    refunds = next(m for m in METRICS if m.name == "refunds")
    assert (
        judged_as_share("how is store 5 performing on returns lately", refunds, METRICS).name == "refund rate"
    )
    assert judged_as_share("how many returns did store 5 have", refunds, METRICS).name == "refunds"
    previous = {"goal": "how's the Bristol branch faring on refunds in May", "entities": {}}
    message, _ = carried_over("Bristol = store 3", {"store_id": 3}, previous, METRICS, NOW)
    assert message.endswith("(the refund rate)")


@pytest.mark.parametrize(
    ("answer", "number"),
    [("ah, my bad - store number is 4", 4), ("six", None), ("store six", 6), ("#12", 12), ("3 or 4", None)],
)
def test_a_lone_number_answers_which_store(answer: str, number: int | None) -> None:
    assert _lone_number(answer) == number


def test_a_lone_number_is_no_time_or_share() -> None:
    assert _lone_number("at 9am") is None
    assert _lone_number("about 5% I think") is None


@pytest.mark.parametrize(
    ("text", "form", "value"),
    [
        ("raise store 2's attach by 1/4 before June", "relative", 0.25),
        ("cut store 6 refunds by 1/3rd by the end of April", "relative", -1 / 3),
        ("store 4 should sell 9 cases per 100 handsets by May", "absolute", 0.09),
        ("get store 1 to 1 accessory for every 12 phones by Easter", "absolute", 1 / 12),
        # How many of how many: a level, whatever the counted words.
        ("Get store 4's attach rate to 1 in 12 sales by end of Feb", "absolute", 1 / 12),
        (
            "store 2 should see one in every fifteen transactions come with a case by March",
            "absolute",
            1 / 15,
        ),
        ("refunds at store 6 down to 3 out of 40 sales by June", "absolute", 3 / 40),
    ],
)
def test_slash_fractions_and_counts_per_count_are_targets(text: str, form: str, value: float) -> None:
    target = goal_target(text)
    assert target is not None and target.form == form
    assert target.value == pytest.approx(value)


@pytest.mark.parametrize(
    "text",
    [
        "lift store 3's attach rate by 5 in 6 weeks",  # a time, not how many of how many
        "grow store 2's refunds down by 2 in 3 months",
    ],
)
def test_how_many_of_how_many_is_no_time(text: str) -> None:
    target = goal_target(text)
    assert target is None or target.value not in (pytest.approx(5 / 6), pytest.approx(2 / 3))


def test_a_count_per_count_is_the_share_of_what_is_counted() -> None:
    assert (
        goal_metric("store 4 should sell 9 cases per 100 handsets by May", METRICS).metric.name
        == "attach rate"
    )  # type: ignore[union-attr]
    assert (
        goal_metric("store 3 down to 2 refunds per 100 sales by June", METRICS).metric.name == "refund rate"
    )  # type: ignore[union-attr]


def test_phones_said_as_context_are_no_figure_of_a_goal() -> None:
    mention = goal_metric("Store 2 must get better at adding chargers to phones by Easter.", METRICS)
    assert mention.metric is None or mention.metric.name != "transactions"


def test_a_way_of_working_carried_to_another_store_is_no_figure() -> None:
    text = "Copy the playbook from Store 2 over to Store 8: a 2-point attach lift in ten weeks."
    assert goal_metric(text, METRICS).unknown is None
    target = goal_target(text)
    assert target is not None and (target.form, target.value) == ("points", 2.0)


def test_a_lifting_plan_never_meets_a_cut() -> None:
    assert _asks_a_cut(TargetTerms(form="relative", value=-0.2, words="by 20%"))
    assert _asks_a_cut(TargetTerms(form="multiple", value=0.5, words="halve"))
    assert not _asks_a_cut(TargetTerms(form="absolute", value=0.05, words="back at 5%"))
    assert not _asks_a_cut(TargetTerms(form="points", value=1.0, words="by a point"))


def test_a_period_beside_another_and_last_to_last() -> None:
    periods = changed_between("store 3 sales in the week of 7 September compared with the week after", NOW)
    assert periods is not None
    assert [p.start.date().isoformat() for p in periods] == ["2026-09-07", "2026-09-14"]
    periods = changed_between("compare store 1 refunds between last to last quarter and last quarter", NOW)
    assert periods is not None
    assert [p.start.date().isoformat() for p in periods] == ["2026-04-01", "2026-07-01"]
    periods = changed_between("how did store 2 do on Canada Day compared with the day before?", NOW)
    assert periods is not None
    assert [p.start.date().isoformat() for p in periods] == ["2026-06-30", "2026-07-01"]


async def test_praise_closes_a_thread_and_a_request_does_not() -> None:
    embedder = LocalMiniLMEmbedder()
    assert await is_closing("awesome, good job", embedder, METRICS)
    assert not await is_closing("ok lets do that", embedder, METRICS)


async def test_footfall_is_named_as_data_the_tenant_lacks() -> None:
    found = await unknown_by_meaning(
        "what was the footfall at store 2 last Sunday?",
        LocalMiniLMEmbedder(),
        RETAIL.problems,
        RETAIL.problem_metrics,
        METRICS,
    )
    assert found is not None and found.unknown == "footfall"


@pytest.mark.parametrize(
    ("text", "start", "end"),
    [
        ("refunds at store 2, trailing 6 wks", "2026-10-18", "2026-11-29"),
        ("store 4 sales two months ago", "2026-09-01", "2026-10-01"),
        ("attach at store 1 a week ago", "2026-11-16", "2026-11-23"),
        ("store 3 takings 4 days ago", "2026-11-25", "2026-11-26"),
    ],
)
def test_trailing_weeks_and_units_ago(text: str, start: str, end: str) -> None:
    window = time_window(text, NOW)
    assert window is not None, text
    assert (window.start.date().isoformat(), window.end.date().isoformat()) == (start, end)
