"""Classes of wording the eighth eval-truth batch found misread, each pinned on sentences of its own:
dates said in another language's words or dotted digits, whole calendar units counted back, the tax
year, holidays of calendars the text names (or, named by no usual calendar, read as a guess that is
said and claims nothing), spans counted from a holiday, retail figures by their trade names, and a
closing in slang."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from master_agent.capabilities.terms import (
    fiscal_quarter,
    fiscal_year_start,
    guessed_deadline,
    metric_by_words,
    metric_mention,
    restated,
    time_mention,
    time_window,
)
from master_agent.domains.retail import RETAIL
from master_agent.domains.retail.goals import missing_information
from master_agent.models.embeddings import LocalMiniLMEmbedder
from master_agent.routing.graph.follow_ups import is_closing
from master_agent.routing.queries import _FISCAL, carried_over
from master_agent.runtime.context import extract_entities
from master_agent.runtime.verification import verify_answer

#: A Monday.
NOW = datetime(2026, 11, 30, 12, tzinfo=UTC)
METRICS = RETAIL.data_metrics


def _days(text: str, direction: str = "past") -> tuple[str, str] | None:
    window = time_window(text, NOW, direction=direction)  # type: ignore[arg-type]
    return (window.start.date().isoformat(), window.last_day().date().isoformat()) if window else None


@pytest.mark.parametrize(
    ("text", "start", "end"),
    [
        ("combien le magasin 4 a vendu le 3 août ?", "2026-08-03", "2026-08-03"),
        ("Umsatz am 9. September, Filiale 2", "2026-09-09", "2026-09-09"),
        ("ventas de la tienda 1 en junio de 2026", "2026-06-01", "2026-06-30"),
        ("attach at store 3, 01.07.2026 - 05.07.2026", "2026-07-01", "2026-07-05"),
        # Day first, even when both parts could be months.
        ("refunds at store 6 on 02.08.26", "2026-08-02", "2026-08-02"),
    ],
)
def test_dates_in_other_languages_and_dotted_digits(text: str, start: str, end: str) -> None:
    assert _days(text) == (start, end)


def test_a_foreign_word_that_is_no_date_stays_none() -> None:
    # "mars" without a day or a year beside it is no month.
    assert _days("how are the mars bars selling at store 2") is None


@pytest.mark.parametrize(
    ("text", "start", "end"),
    [
        ("store 1 sales, last two complete months", "2026-09-01", "2026-10-31"),
        ("attach over the previous 3 full weeks", "2026-11-09", "2026-11-29"),
        ("refund rate for the last full quarter", "2026-07-01", "2026-09-30"),
    ],
)
def test_whole_calendar_units_counted_back(text: str, start: str, end: str) -> None:
    assert _days(text) == (start, end)


def test_the_tax_year_is_the_named_countrys_or_a_stated_reading() -> None:
    aussie = time_window("store 4 revenue last tax year, Australian one", NOW)
    assert aussie is not None and aussie.reading is None
    assert (aussie.start.date().isoformat(), aussie.last_day().date().isoformat()) == (
        "2025-07-01",
        "2026-06-30",
    )
    unnamed = time_window("takings for the tax year to date", NOW)
    assert unnamed is not None and unnamed.start.date().isoformat() == "2026-04-06"
    assert unnamed.reading is not None and "6 April" in unnamed.reading


def test_a_country_named_picks_its_calendar() -> None:
    # The US Thanksgiving is the usual one; said Canadian, it is October's.
    assert _days("sales on canadian thanksgiving") == ("2026-10-12", "2026-10-12")
    assert _days("sales on Thanksgiving") == ("2026-11-26", "2026-11-26")
    # A country said that keeps no day of the name: the usual calendars, as if none were said.
    assert _days("our US stores on Boxing Day") == ("2025-12-26", "2025-12-26")
    irish = time_window("attach at store 5 on Irish St Stephen's Day last year", NOW)
    assert irish is not None and irish.reading is None


@pytest.mark.parametrize(
    ("text", "start", "reading"),
    [
        ("units at store 2 on Youth Day", "2026-06-16", "South Africa"),
        ("refunds at store 3 on the October bank holiday", "2026-10-26", "Ireland"),
        ("attach at store 4 on National Day", "2026-08-09", "Singapore"),
    ],
)
def test_a_holiday_no_usual_calendar_has_is_a_stated_guess(text: str, start: str, reading: str) -> None:
    window = time_window(text, NOW)
    assert window is not None and window.start.date().isoformat() == start
    assert window.reading is not None and reading in window.reading


@pytest.mark.parametrize(
    ("text", "start"),
    [("revenue on Matariki", "2026-07-10"), ("refunds on Waitangi Day", "2026-02-06"),
     ("attach rate at the Mid-Autumn Festival", "2026-09-25")],
)  # fmt: skip
def test_a_holiday_every_calendar_that_keeps_it_dates_alike_is_no_guess(text: str, start: str) -> None:
    """Matariki and Waitangi Day are New Zealand's alone; the Mid-Autumn Festival falls on one lunar day
    wherever it is kept: the name settles the days (unlike "National Day" or "Youth Day")."""
    window = time_window(text, NOW)
    assert window is not None and window.start.date().isoformat() == start
    assert window.reading is None


def test_a_holiday_of_several_days_is_one_window_and_the_day_not_its_stand_in() -> None:
    assert _days("device revenue over Chinese New Year 2026") == ("2026-02-17", "2026-02-19")
    # Anzac Day 2026 fell on a Saturday, its day off on Monday: the day itself is meant.
    assert _days("store 7 sales on Anzac Day, NZ") == ("2026-04-25", "2026-04-25")


@pytest.mark.parametrize(
    ("text", "start", "end"),
    [
        ("sales in the fortnight before Diwali", "2026-10-25", "2026-11-07"),
        ("attach rate in the week after Labor Day", "2026-09-08", "2026-09-14"),
    ],
)
def test_a_span_counted_from_a_holiday(text: str, start: str, end: str) -> None:
    assert _days(text) == (start, end)


def test_the_verification_step_marks_a_guessed_window_weak() -> None:
    asked = {
        "window": {
            "label": "Heritage Day",
            "start": "2026-09-24T00:00:00+00:00",
            "end": "2026-09-25T00:00:00+00:00",
            "reading": "Heritage Day as South Africa's calendar has it",
        }
    }
    answer = {"value": 3, "window": {k: v for k, v in asked["window"].items() if k != "reading"}}
    checks = verify_answer(answer, asked)
    guessed = [check for check in checks if "South Africa" in check.evidence]
    assert [check.verdict for check in guessed] == ["weak"]
    # Read from words that settle it, the same window is backed.
    settled = verify_answer(answer, {"window": answer["window"]})
    assert all(check.verdict == "backed" for check in settled)


def test_a_goal_deadline_read_by_a_guess_is_asked_for() -> None:
    guess = guessed_deadline("Lift store 2's attach 1 point before Youth Day", NOW)
    assert guess is not None and "South Africa" in guess[1] and "15 June 2027" in guess[1]
    assert guessed_deadline("Lift store 2's attach 1 point before Christmas", NOW) is None
    assert guessed_deadline("Lift store 2's attach 1 point before Youth Day in South Africa", NOW) is None
    question = missing_information(
        {"known_stores": [1, 2], "store_id": 2, "deadline_unread": guess[0], "deadline_guess": guess[1]}
    )
    assert question is not None and "South Africa" in question.question


@pytest.mark.parametrize(
    ("text", "metric"),
    [
        ("what's the AOV at store 3 in July", "average basket"),
        ("ASP on phones at store 1", "average device amount"),
    ],
)
def test_retail_figures_by_their_trade_names(text: str, metric: str) -> None:
    found = metric_mention(text, METRICS).metric
    assert found is not None and found.name == metric


def test_a_trade_name_lends_no_word_to_another_question() -> None:
    # Only the acronyms are names: "orders" or "selling" alone would otherwise be read as them.
    for text in ("How many orders were placed yesterday?", "how many phones is store 2 selling"):
        found = metric_by_words(text, METRICS)
        assert (
            found is None
            or found.metric is None
            or found.metric.name
            not in (
                "average basket",
                "average device amount",
            )
        )


async def test_a_closing_in_slang_closes_and_a_request_does_not() -> None:
    embedder = LocalMiniLMEmbedder()
    assert await is_closing("sound, that'll do me, thanks a mill", embedder, METRICS)
    assert not await is_closing("ok lets do that", embedder, METRICS)


def test_a_feast_many_calendars_keep_alike_is_no_guess() -> None:
    window = time_window("phones sold at store 4 on Ascension Day", NOW)
    assert window is not None and window.reading is None
    assert window.start.date().isoformat() == "2026-05-14"


def test_a_new_deadline_no_calendar_places_replaces_the_old_one() -> None:
    goal = restated(
        "Add a point to Store 1's attach rate by Pancake Day.", "Actually, give them until Eisteddfod week."
    )
    assert "Pancake" not in goal and "until Eisteddfod week" in goal
    # A pointer names no new moment: the deadline stays.
    assert "Pancake Day" in restated(
        "Add a point to Store 1's attach rate by Pancake Day.", "ok, keep it until then"
    )


@pytest.mark.parametrize(
    ("follow_up", "before", "start", "end"),
    [
        (
            "same pair, the week prior?",
            "store 3 v store 5, gross takings, w/c 21/9",
            "2026-09-14",
            "2026-09-20",
        ),
        ("and the month following?", "attach at store 2 in June", "2026-07-01", "2026-07-31"),
    ],
)
def test_a_follow_up_counts_prior_and_following_from_the_period_before(
    follow_up: str, before: str, start: str, end: str
) -> None:
    message, _ = carried_over(follow_up, {}, {"goal": before, "entities": {}}, METRICS, NOW)
    assert _days(message) == (start, end)


@pytest.mark.parametrize(
    ("said", "quarter", "start", "end"),
    [
        # A financial year is named by the calendar year it ends in.
        ("Our fiscal year starts on 1 October.", "Q4 of FY26", "2026-07-01", "2026-09-30"),
        ("Our FY runs April to March.", "Q1 FY2026", "2025-04-01", "2025-06-30"),
        ("Our fiscal year starts in January.", "fiscal Q2 2026", "2026-04-01", "2026-06-30"),
    ],
)
def test_a_named_financial_year_is_the_one_ending_that_year(
    said: str, quarter: str, start: str, end: str
) -> None:
    starts = fiscal_year_start(said)
    assert starts is not None
    window = fiscal_quarter(quarter, NOW, starts)
    assert window is not None
    assert (window.start.date().isoformat(), window.last_day().date().isoformat()) == (start, end)


@pytest.mark.parametrize(
    ("text", "metric"),
    [("hardware revenue at store 2 in May", "device revenue"), ("S07 | hardware rev | Q3", "device revenue")],
)
def test_hardware_is_the_devices(text: str, metric: str) -> None:
    found = metric_mention(text, METRICS).metric
    assert found is not None and found.name == metric


def test_a_follow_up_to_a_pair_said_with_v_keeps_the_pair() -> None:
    message, _ = carried_over(
        "same pair, the week prior?",
        {},
        {"goal": "store 3 v store 5, gross takings, w/c 21/9", "entities": {"store_id": 3}},
        METRICS,
        NOW,
    )
    assert "store 3 v store 5" in message


@pytest.mark.parametrize(
    ("text", "store"),
    [("last 12 wks attach s7", 7), ("S07 | hardware rev | Q3", 7), ("it's S02", 2), ("s4 units in June", 4)],
)
def test_a_store_by_its_code(text: str, store: int) -> None:
    assert extract_entities(text).get("store_id") == store


def test_a_letter_inside_a_word_is_no_store_code() -> None:
    assert "store_id" not in extract_entities("iPhone 15s sold in June")


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("last 12 wks attach s7", "last 12 wks"),
        ("refund rate over the past three full months", "the past three full months"),
        ("takings this tax year so far", "this tax year"),
    ],
)
def test_the_time_of_a_question_is_its_words_not_a_qualifier_of_its_figure(text: str, said: str) -> None:
    assert time_mention(text) == said


def test_a_financial_year_said_with_its_year_is_fiscal() -> None:
    assert _FISCAL.search("Q4 of FY26") and _FISCAL.search("FY2026") and not _FISCAL.search("fyi, Q3 2026")


@pytest.mark.parametrize(
    ("text", "unknown"),
    [
        ("Store 2: fine to sell fewer phones if we make more money. Takings +5% by end of Feb.", None),
        ("We sell phones. Warranty attach rate at store 2?", "warranty attach rate"),
    ],
)
def test_a_word_of_the_sentence_before_qualifies_no_figure(text: str, unknown: str | None) -> None:
    """A sentence's end ends what can qualify a figure's name: "money. Takings" is the takings."""
    mention = metric_mention(text, RETAIL.data_metrics)
    assert mention.metric is not None and mention.unknown == unknown


def test_a_bank_holiday_another_calendar_names_is_read_by_that_calendar() -> None:
    """Scotland's "Summer Bank Holiday" (the first Monday of August) is no unnamed bank holiday: said
    Scottish, it is Scotland's day, not England's late-August one."""
    window = time_window("refunds at store 2 on the Scottish summer bank holiday", NOW)
    assert window is not None and window.start.date().isoformat() == "2026-08-03"
    assert time_window("sales on the Whitsun bank holiday", NOW) is None


def test_a_holiday_only_one_country_of_the_world_keeps_is_read_by_its_calendar() -> None:
    """No calendar read here keeps Tiradentes' Day or Chuseok; the holidays package's calendars of the
    world each keep them on one day (Brazil's, Korea's), so the name settles it. An English word said
    alone for a name ("summer" for Albania's "Summer Day") names no holiday."""
    tiradentes = time_window("device revenue on Tiradentes", NOW)
    assert tiradentes is not None and tiradentes.start.date().isoformat() == "2026-04-21"
    assert tiradentes.reading is None
    chuseok = time_window("store 6 accessory money on Chuseok", NOW)
    assert chuseok is not None and chuseok.start.date().isoformat() == "2026-09-25"
    summer = time_window("sales at store 2 over the summer", NOW)
    assert summer is not None and summer.start.date().isoformat() == "2026-06-01"


@pytest.mark.parametrize(
    ("text", "start", "end"),
    [
        ("accessory revenue at store 6 over Chuseok", "2026-09-24", "2026-09-26"),
        ("Chuseok 3 days holiday, store 2 sales?", "2026-09-24", "2026-09-26"),
        ("attach rate at store 2 on Chuseok", "2026-09-25", "2026-09-25"),
    ],
)
def test_a_holiday_kept_over_the_days_its_calendar_names_after_it_is_all_of_them_when_said(
    text: str, start: str, end: str
) -> None:
    """Korea's calendar names three days after Chuseok (the day before, the day, the second day): "over
    Chuseok" or "Chuseok 3 days" is all three, "on Chuseok" the day itself."""
    assert _days(text) == (start, end)


@pytest.mark.parametrize(
    ("text", "start"),
    [
        ("Pour la Saint-Jean (Fête nationale), store 7 attach rate was what?", "2026-06-24"),
        ("refunds at store 3 around la Saint-Jean", "2026-06-24"),
        ("attach at store 5 on the Fête nationale du Québec", "2026-06-24"),  # France's name is inside it
    ],
)
def test_a_holiday_named_in_a_regions_own_language_is_read_from_its_calendar(text: str, start: str) -> None:
    """Quebec's 24 June is "Fête nationale du Québec" in French and "Saint Jean Baptiste Day" in Canadian
    English: a name said in any language the ``holidays`` package keeps for a region is read there."""
    window = time_window(text, NOW)
    assert window is not None and window.start.date().isoformat() == start and window.reading is None


def test_a_name_several_countries_keep_on_different_days_settles_no_day() -> None:
    # "Fête nationale" alone is France's 14 July and Quebec's 24 June.
    assert time_window("attach at store 2 on Fête nationale", NOW) is None
