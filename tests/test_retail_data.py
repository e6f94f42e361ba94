"""The demo data resembles the walkthrough, computed from the generated rows."""

from __future__ import annotations

import numpy as np

from master_agent.domains.retail.data import generate
from master_agent.domains.retail.goals import missing_information


def test_store_5_resembles_the_walkthrough() -> None:
    rows = generate()
    staff = {s[0]: s for s in rows["staff"] if s[1] == 5}
    tx = [t for t in rows["transactions"] if t[1] == 5]
    attach = np.mean([t[5] for t in tx])
    assert 0.025 <= attach <= 0.035
    assert 420 <= len(tx) / 6 <= 480  # transactions per month over the 180-day history
    rates, tenures = [], []
    for staff_id, member in staff.items():
        mine = [t[5] for t in tx if t[2] == staff_id]
        rates.append(np.mean(mine))
        tenures.append(member[3])
    assert 0.015 <= min(rates) <= 0.025 and 0.07 <= max(rates) <= 0.09
    r = np.corrcoef(tenures, rates)[0, 1]
    assert -0.8 <= r <= -0.6


def test_generation_is_deterministic() -> None:
    a, b = generate(), generate()
    assert a["transactions"][:50] == b["transactions"][:50]
    assert len(a["transactions"]) == len(b["transactions"])


def test_a_goal_tied_to_an_event_is_asked_its_date_until_an_answer_gives_one() -> None:
    known = {
        "known_stores": [1, 2, 5],
        "store_id": 5,
        "deadline_unread": "by the time the new manager starts",
    }
    asked = missing_information(known)
    assert asked is not None and asked.fields == ["deadline"]
    assert "by the time the new manager starts" in asked.question
    # The answer ("She starts on 1 February.") is read as a deadline: nothing is left to ask.
    assert missing_information({**known, "deadline": "2027-02-01", "timeline_days": 67}) is None
    assert (
        missing_information({**known, "deadline_unread": None, "deadline_passed": "by 20 November"})
        is not None
    )


def test_a_goal_for_a_store_named_by_a_property_the_data_does_not_settle_asks_which() -> None:
    known = {
        "known_stores": [1, 2, 7, 8],
        "store_unsettled": {
            "words": "our biggest store",
            "readings": [
                {"measure": "staff count", "store_id": None},
                {"measure": "number of sales", "store_id": 2},
            ],
        },
    }
    asked = missing_information(known)
    assert asked is not None and asked.fields == ["store_id"]
    assert "'our biggest store'" in asked.question and "by number of sales, Store 2" in asked.question
    assert "by staff count, a tie" in asked.question
    assert missing_information({**known, "store_id": 7}) is None
