"""Which way a goal asks a figure to move (``capabilities.terms.said_down``), read by WordNet: a verb that is
a way to decrease or increase, a comparative of a count, and a sign written on the number."""

from __future__ import annotations

import pytest

from master_agent.capabilities.terms import goal_target, said_down


@pytest.mark.parametrize(
    ("text", "down"),
    [
        ("Trim store 2's refunds by 5% in 60 days", True),  # trim: a way to reduce
        ("Slash the refunds at store 4 by a fifth before March", True),
        ("Help store 3 sell fewer phones that come back, 10% fewer by March", True),  # fewer: not more
        ("we want less refunds at store 6, 15% by Easter", True),
        ("Curb store 8's returns by 2 points by the end of April", True),
        ("Boost store 5 attach by 20% within 60 days", False),
        ("Grow store 1's attach rate by 1 point by March", False),
        ("Get attach to at least 8% by the end of March", False),  # "least" is no count compared
        ("no less than 7% attach at store 2 by February", False),
    ],
)
def test_the_direction_of_a_goal_is_read_by_meaning(text: str, down: bool) -> None:
    assert said_down(text) is down


def test_a_sign_written_on_the_number_wins_over_the_words() -> None:
    # "sell fewer phones" is background; the target is the money, +5%.
    target = goal_target(
        "Store 2: happy to sell fewer phones if we make more money. Takings +5% by end of Feb."
    )
    assert target is not None and (target.form, target.value) == ("relative", 0.05)
    target = goal_target("Trim store 2's refunds by 5% in 60 days")
    assert target is not None and (target.form, target.value) == ("relative", -0.05)
