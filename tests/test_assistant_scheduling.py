"""The assistant's calendar arithmetic: phrases people say, read against a reference day."""

from __future__ import annotations

from datetime import UTC, date, datetime, time
from zoneinfo import ZoneInfo

import pytest

from master_agent.domains.assistant.scheduling import (
    conflicts,
    free_slots,
    resolve_day,
    resolve_hours,
    resolve_minutes,
    resolve_period,
    resolve_time,
)

MONDAY = date(2026, 11, 23)
SATURDAY = date(2026, 11, 28)


@pytest.mark.parametrize(
    ("text", "today", "expected"),
    [
        ("What times am I free next Tuesday", MONDAY, date(2026, 12, 1)),
        ("am I free on Tuesday", MONDAY, date(2026, 11, 24)),
        ("this tuesday", MONDAY, date(2026, 11, 24)),
        ("next monday", MONDAY, date(2026, 11, 30)),
        ("monday", MONDAY, date(2026, 11, 30)),
        ("next tuesday", SATURDAY, date(2026, 12, 1)),
        ("tuesday", SATURDAY, date(2026, 12, 1)),
        ("meet tomorrow at 2pm", MONDAY, date(2026, 11, 24)),
        ("the day after tomorrow", MONDAY, date(2026, 11, 25)),
        ("today", MONDAY, MONDAY),
        ("on 2027-01-15 please", MONDAY, date(2027, 1, 15)),
        ("sometime soon", MONDAY, None),
        ("December 15 at 10am", MONDAY, date(2026, 12, 15)),
        ("on 15 Dec", MONDAY, date(2026, 12, 15)),
        ("the 3rd of January", MONDAY, date(2027, 1, 3)),
        ("Nov 20", MONDAY, date(2027, 11, 20)),  # passed this year: next year's
        ("the 15th at 10", MONDAY, date(2026, 12, 15)),
        ("on the 30th", MONDAY, date(2026, 11, 30)),
        ("February 30", MONDAY, None),
        ("may I have 5 minutes", MONDAY, None),
    ],
)
def test_days(text: str, today: date, expected: date | None) -> None:
    assert resolve_day(text, today) == expected


def test_periods() -> None:
    assert resolve_period("board meeting next month", MONDAY).model_dump() == {  # type: ignore[union-attr]
        "first": date(2026, 12, 1),
        "last": date(2026, 12, 31),
    }
    assert resolve_period("next month", date(2026, 12, 31)).model_dump() == {  # type: ignore[union-attr]
        "first": date(2027, 1, 1),
        "last": date(2027, 1, 31),
    }
    assert resolve_period("this week", SATURDAY).model_dump() == {  # type: ignore[union-attr]
        "first": MONDAY,
        "last": date(2026, 11, 29),
    }
    assert resolve_period("next week", MONDAY).first == date(2026, 11, 30)  # type: ignore[union-attr]
    assert resolve_period("tomorrow", MONDAY).first == date(2026, 11, 24)  # type: ignore[union-attr]
    assert resolve_period("whenever", MONDAY) is None
    # Two weekdays joined as a span, with or without "from": both and the days between.
    span = resolve_period("a 2 hour block sometime Tuesday to Thursday. What are my options?", MONDAY)
    assert span is not None and (span.first, span.last) == (date(2026, 11, 24), date(2026, 11, 26))
    assert resolve_period("between Wednesday and Friday", MONDAY).last == date(2026, 11, 27)  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("at 2pm", time(14)),
        ("at 2:30 pm", time(14, 30)),
        ("12am", time(0)),
        ("12pm", time(12)),
        ("at 09:15", time(9, 15)),
        ("at noon", time(12)),
        ("in the afternoon", None),
        # Without am or pm, the reading nearest the working day (09:00-17:00; a tie is the evening).
        ("tomorrow at 3", time(15)),
        ("at 9", time(9)),
        ("at 8", time(8)),
        ("at 7", time(19)),
        ("at 12", time(12)),
        ("half past 3", time(15, 30)),
        ("quarter to 4", time(15, 45)),
        ("push the budget sync to 3:30", time(15, 30)),
        ("Move my 1:1 with Maria this Thursday to 4pm", time(16)),
        ("at 8am", time(8)),
        ("at 7 pm", time(19)),
        # A span's start (Duckling reads "from 11 to 12" as 11 minutes to 12).
        ("a town hall on Thursday from 11 to 12", time(11)),
        ("from 2:30 to 3pm", time(14, 30)),
        # A length said short is no clock time ("1h" was read as 01:00, so 13:00).
        ("Book 1h with Omar tomorrow at 4 to go through the hiring panel", time(16)),
        # No clock time: a count, a time counted from now, a title.
        ("sandwiches for 3", None),
        ("in 2 hours", None),
        ("my 1:1 with Maria", None),
    ],
)
def test_times(text: str, expected: time | None) -> None:
    assert resolve_time(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("for 60 minutes", 60),
        ("1 hour", 60),
        ("1.5 hours", 90),
        ("90 min", 90),
        ("an hour", 60),
        ("half an hour", 30),
        ("a quick chat", None),
        # Duckling's durations, and a word between a number and its unit.
        ("an hour and a half", 90),
        ("a quarter of an hour", 15),
        ("a two hour block", 120),
        ("90 free minutes", 90),
        ("over the next three days", None),
        # A length said as a compound adjective: the hyphen is no part of the number.
        ("Set up a 45-min planning session this Wednesday at 3", 45),
        ("a 1.5-hour block", 90),
        ("a two-hour review", 120),
        ("meet 3-4pm", None),
    ],
)
def test_durations(text: str, expected: int | None) -> None:
    assert resolve_minutes(text) == expected


def _at(hour: int, minute: int = 0) -> datetime:
    return datetime(2026, 12, 1, hour, minute, tzinfo=UTC)


def test_free_slots_count_a_conflict_once_and_keep_to_working_hours() -> None:
    busy = [
        (_at(9, 30), _at(9, 45)),
        (_at(10), _at(11)),
        (_at(13), _at(14, 30)),
        (_at(14), _at(15)),
        (_at(18), _at(19)),
    ]
    slots = free_slots(busy, date(2026, 12, 1), 60, ZoneInfo("UTC"))
    assert [(s.start.strftime("%H:%M"), s.end.strftime("%H:%M")) for s in slots] == [
        ("11:00", "13:00"),
        ("15:00", "17:00"),
    ]
    assert [s.minutes for s in free_slots(busy, date(2026, 12, 1), 15, ZoneInfo("UTC"))] == [30, 15, 120, 120]
    assert conflicts(
        [("call", _at(13), _at(14, 30)), ("budget", _at(14), _at(15)), ("review", _at(10), _at(11))]
    ) == [("call", "budget")]


def test_free_slots_are_in_the_users_zone() -> None:
    berlin = ZoneInfo("Europe/Berlin")
    # 08:00-09:00 UTC is 09:00-10:00 in Berlin in winter: the morning's first hour is taken.
    slots = free_slots([(_at(8), _at(9)), (_at(12), _at(13))], date(2026, 12, 1), 60, berlin)
    assert [(s.start.strftime("%H:%M"), s.end.strftime("%H:%M")) for s in slots] == [
        ("10:00", "13:00"),
        ("14:00", "17:00"),
    ]


def test_a_day_misspelt_by_a_letter_is_read_and_other_words_are_not() -> None:
    monday = date(2026, 12, 7)
    assert resolve_day("thursdy morning", monday) == date(2026, 12, 10)
    assert resolve_day("wensday at 2", monday) == date(2026, 12, 9)
    assert resolve_day("tomorow", monday) == date(2026, 12, 8)
    assert resolve_day("the money is late", monday) is None


def test_a_span_between_two_days_is_every_day_of_it_and_plural_day_parts_are_hours() -> None:
    monday = date(2026, 12, 7)
    span = resolve_period("Are there any free afternoons between Wednesday and Friday?", monday)
    assert span is not None and (span.first, span.last) == (date(2026, 12, 9), date(2026, 12, 11))
    assert resolve_hours("any free afternoons this week") == (time(12, 0), time(17, 0))
    # Hours between two times are no span of days.
    one = resolve_period("When am I free on Tuesday between 10 and 4?", monday)
    assert one is not None and one.first == one.last == date(2026, 12, 8)
