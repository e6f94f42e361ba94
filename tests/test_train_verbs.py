"""The verb head trainer's asking floor (``benchmarks/train_verbs.asking_floor``): picked on readings that
hold wrong ones, just above the wrong write reading that costs least, never zero."""

from __future__ import annotations

import numpy as np
import pytest
from benchmarks.train_verbs import WRONG_WRITE_COST, asking_floor

LABELS = ["agenda", "schedule", "send_mail"]


def _readings(rows: list[tuple[str, float, str]]) -> tuple[np.ndarray, np.ndarray]:
    """(guess, its probability, truth) -> probabilities (the rest spread evenly) and truth indices."""
    probs = np.zeros((len(rows), len(LABELS)))
    for index, (guess, share, _) in enumerate(rows):
        probs[index] = (1.0 - share) / (len(LABELS) - 1)
        probs[index, LABELS.index(guess)] = share
    return probs, np.asarray([LABELS.index(truth) for _, _, truth in rows])


def test_the_floor_sits_just_above_the_wrong_write_that_costs_least() -> None:
    # A wrong write at 0.7 costs WRONG_WRITE_COST done; asking below 0.701 costs the two right writes
    # under it. The wrong write at 0.99 would cost every right write below it: it is done.
    rows = [
        ("schedule", 0.6, "schedule"),
        ("send_mail", 0.65, "send_mail"),
        ("schedule", 0.7, "agenda"),
        ("send_mail", 0.8, "send_mail"),
        ("schedule", 0.9, "schedule"),
        ("send_mail", 0.95, "send_mail"),
        ("schedule", 0.97, "schedule"),
        ("send_mail", 0.99, "agenda"),
    ]
    assert WRONG_WRITE_COST > 2
    assert asking_floor(*_readings(rows), LABELS) == pytest.approx(0.701)


def test_the_floor_is_never_zero_even_when_asking_costs_more_than_acting() -> None:
    # Every right write lies below the one wrong one: acting on all would cost least (one wrong write
    # against ten questions), but the floor still sits above the wrong reading.
    rows = [*(("send_mail", 0.35 + 0.004 * n, "send_mail") for n in range(10)), ("schedule", 0.6, "agenda")]
    assert asking_floor(*_readings(rows), LABELS) == pytest.approx(0.601)


def test_wrong_readings_of_no_write_do_not_move_the_floor_and_none_at_all_stops_the_trainer() -> None:
    rows = [("agenda", 0.9, "schedule"), ("send_mail", 0.8, "send_mail")]
    with pytest.raises(SystemExit, match="floor cannot be measured"):
        asking_floor(*_readings(rows), LABELS)
