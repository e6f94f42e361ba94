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
    ],
)
def test_shorthand_is_written_out(said: str, meant: str) -> None:
    assert written_out(said) == meant


@pytest.mark.parametrize(
    "said",
    ["Tom at 3pm", "ask Frida about it", "thus the sun was out", "a ton of mail", "we sat down", "Wed Ben"],
)
def test_words_that_only_begin_a_day_word_are_left_alone(said: str) -> None:
    assert written_out(said) == said


def test_a_shortened_day_is_the_day_it_names() -> None:
    request = written_out("book lunch w/ david thurs 12:30")
    assert resolve_day(request, MONDAY) == date(2026, 12, 10)
    assert resolve_time(request) is not None and resolve_time(request).strftime("%H:%M") == "12:30"
