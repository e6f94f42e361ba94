"""How the console writes values for people: rates, money, dates, cron schedules, counts, reply lines."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from master_agent.service.console.present import (
    answer_lines,
    day_before,
    figure,
    money,
    percent,
    plural,
    schedule,
    short_id,
    when,
)


@pytest.mark.parametrize(
    ("cron", "words"),
    [
        ("0 9 * * MON", "Mondays at 09:00 UTC"),
        ("30 7 * * 1-5", "Weekdays at 07:30 UTC"),
        ("0 18 * * SAT,SUN", "Saturdays and Sundays at 18:00 UTC"),
        ("0 0 * * 0", "Sundays at 00:00 UTC"),
        ("15 6 * * *", "Every day at 06:15 UTC"),
        ("0 8 1 * *", "Monthly on day 1 at 08:00 UTC"),
        ("*/15 * * * *", "Every 15 minutes"),
        ("5 * * * *", "Every hour at minute 5"),
        ("0 9 * 1 MON", "0 9 * 1 MON"),  # what it cannot say plainly stays as written
        ("0 9 L * *", "0 9 L * *"),
        (None, "not scheduled"),
    ],
)
def test_cron_schedules_read_in_words(cron: str | None, words: str) -> None:
    assert schedule(cron) == words


def test_figures_read_by_what_they_measure() -> None:
    assert percent(0.0326) == "3.3%" and percent(0.45) == "45%" and percent(1.0) == "100%"
    assert figure(0.0405, "accessory_attach_rate") == "4.0%"
    assert figure(0.2, "likelihood") == "20%"
    assert (
        figure(9000.0, "total_budget") == "$9,000"
        and figure(13166.92, "annual_extra_revenue") == "$13,166.92"
    )
    assert money(-1250.5, "EUR") == "-€1,250.50" and money(12, "CHF") == "CHF 12"
    assert figure(653, "observations") == "653" and figure(16856.35) == "16,856.35"
    assert figure(3.5, "attach_rate") == "3.5"  # not a share of 1: left as the number it is
    assert figure(True, "rate") == "True" and figure(None) == "—"


def test_dates_counts_and_ids() -> None:
    assert when(datetime(2026, 11, 30, 9, 0, tzinfo=UTC)) == "Mon 30 Nov 2026, 09:00 UTC"
    assert when("2027-01-25") == "Mon 25 Jan 2027"
    assert day_before("2026-07-01T00:00:00+00:00") == "30 Jun 2026"  # a window's end is excluded
    assert plural(1, "judged solution") == "1 judged solution"
    assert plural(2, "judged solution") == "2 judged solutions" and plural(0, "claim") == "0 claims"
    assert short_id("27b2a410-8951-4e00-ac19-af9da4821708") == "27b2a410" and short_id("run-1") == "run-1"


def test_a_reply_keeps_its_sentences_and_sets_its_technical_lines_apart() -> None:
    said, technical = answer_lines(
        "The attach rate for store 4 in June 2026 was 5.1%, from 653 device sales.\n"
        "Query: SELECT avg(x) FROM transactions\nParameters: {'store_id': '4'}\n"
        'Expected outcome: {"metric": "attach_rate"}\nChecked 3 claims before answering: 3 backed.'
    )
    assert said == [
        "The attach rate for store 4 in June 2026 was 5.1%, from 653 device sales.",
        "Checked 3 claims before answering: 3 backed.",
    ]
    assert [line.split(":")[0] for line in technical] == ["Query", "Parameters", "Expected outcome"]
