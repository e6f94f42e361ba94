"""Chat shorthand is written out before a request is read (``domains.assistant.shorthand``)."""

from __future__ import annotations

from datetime import date

import pytest

from master_agent.domains.assistant.scheduling import resolve_day, resolve_time
from master_agent.domains.assistant.shorthand import written_out

MONDAY = date(2026, 12, 7)


@pytest.mark.parametrize(
    ("said", "meant"),
    [
        ("book lunch w/ david thurs 12:30", "book lunch with david thursday 12:30"),
        ("move my 1:1 to fri pls", "move my 1:1 to friday please"),
        ("tues 3pm mtg w/o Ben", "tuesday 3pm meeting without Ben"),
        ("weds planning", "wednesday planning"),
        ("lunch sat at 1", "lunch saturday at 1"),
        # A day that is a word of its own, with a loose or bare time of day after it (Duckling's reading).
        ("coffee sat around 11", "coffee saturday around 11"),
        ("call on sun 10ish", "call on sunday 10ish"),
        ("sync wed morning", "sync wednesday morning"),
    ],
)
def test_shorthand_is_written_out(said: str, meant: str) -> None:
    assert written_out(said) == meant


@pytest.mark.parametrize(
    "said",
    [
        "Tom at 3pm",
        "ask Frida about it",
        "thus the sun was out",
        "a ton of mail",
        "we sat down",
        "Wed Ben",
        "tell him about the sun",
    ],
)
def test_words_that_only_begin_a_day_word_are_left_alone(said: str) -> None:
    assert written_out(said) == said


@pytest.mark.parametrize(
    ("said", "day", "clock"),
    [
        ("pencil in half an hour with Sara on wed at 3", date(2026, 12, 9), "15:00"),
        ("thurs 4ish with Omar", date(2026, 12, 10), "16:00"),
        ("next tues at half 2 for the review", date(2026, 12, 15), "14:30"),
        ("drinks sat around 7pm", date(2026, 12, 12), "19:00"),
        ("fri at quarter past 10", date(2026, 12, 11), "10:15"),
    ],
)
def test_a_shortened_day_with_a_loose_hour_is_a_day_and_a_time(said: str, day: date, clock: str) -> None:
    request = written_out(said)
    found = resolve_time(request)
    assert resolve_day(request, MONDAY) == day
    assert found is not None and found.strftime("%H:%M") == clock


def test_a_shortened_day_is_the_day_it_names() -> None:
    request = written_out("book lunch w/ david thurs 12:30")
    assert resolve_day(request, MONDAY) == date(2026, 12, 10)
    assert resolve_time(request) is not None and resolve_time(request).strftime("%H:%M") == "12:30"
