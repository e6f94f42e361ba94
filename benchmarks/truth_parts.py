"""Batch 13's ``expect.parts`` / ``expect.compare`` for ``eval_truth``: a message that asks more than one
thing of the data is answered only when every part with a value is found in the answer's evidence (its
figure, attributed to the part's store and window), every part without one is named as not answered and
given no number, and a comparison's direction agrees with the rows (README-thirteenth-batch.md, "Schema:
parts").

The evidence is the reply's structured data (what the run's queries returned), never its prose: a figure
is read with the store and window the data gives it, so a value said for the wrong store or month is no
answer to the part.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from typing import Any

#: Kinds of a part that carry a value.
VALUED = ("answer", "partial")


@dataclass(frozen=True)
class Stated:
    """One figure the answer's data states, with what it is attributed to (None: not said)."""

    value: float | None
    store: int | None
    window: tuple[date, date] | None
    partial: bool
    leader: int | None = None
    rank: int | None = None
    missing: tuple[str, ...] = ()
    direction: str | None = None
    change: float | None = None


@dataclass
class PartsScore:
    """What one compound case's answer did with its parts."""

    answered: int = 0
    valued: int = 0
    named: int = 0
    unanswerable: int = 0
    direction_right: int = 0
    directions: int = 0
    problems: list[str] = field(default_factory=list)


def _days(window: Any) -> tuple[date, date] | None:
    if not isinstance(window, dict) or not window.get("start") or not window.get("end"):
        return None
    start = datetime.fromisoformat(window["start"]).astimezone(UTC).date()
    last = (datetime.fromisoformat(window["end"]).astimezone(UTC) - timedelta(seconds=1)).date()
    return start, last


def _store(data: dict[str, Any]) -> int | None:
    raw = (data.get("params") or {}).get("store_id")
    return int(raw) if raw is not None and str(raw).isdigit() else None


def stated(data: dict[str, Any], inherited: tuple[date, date] | None = None) -> Iterator[Stated]:
    """Every figure ``data`` (a reply's ``data``, or one of its ``parts``) states."""
    window = _days(data.get("window")) or inherited
    store = _store(data)
    partial = data.get("outcome") == "partial" or data.get("answered") is False or bool(data.get("missing"))
    missing = tuple(str(item) for item in data.get("missing") or ())
    each = data.get("each") or {}
    periods = data.get("periods") or {}
    if data.get("outcome") in ("no_data", "out_of_scope", "clarify") and data.get("value") is None:
        yield Stated(None, store, window, True, missing=missing)
    elif not each and not periods and data.get("value") is not None:
        yield Stated(float(data["value"]), store, window, partial, missing=missing)
    for key, value in each.items():
        if value is not None and str(key).isdigit():
            yield Stated(float(value), int(key), window, partial)
    for value in periods.values():
        if value is not None:
            yield Stated(float(value), store, None, partial)
    breakdown = data.get("breakdown") or {}
    if breakdown.get("by") == "store" and isinstance(breakdown.get("values"), dict):
        for key, value in breakdown["values"].items():
            if value is not None and str(key).isdigit():
                yield Stated(float(value), int(key), window, partial)
    leader = (data.get("leader") or {}).get("store")
    if leader is not None:
        yield Stated(None, None, window, partial, leader=int(leader))
    if data.get("rank") is not None:
        yield Stated(None, store, window, partial, rank=int(data["rank"]))
    compare = data.get("compare") or {}
    if compare:
        change = compare.get("change")
        yield Stated(
            None,
            None,
            None,
            partial,
            direction=compare.get("direction"),
            change=None if change is None else float(change),
        )
    for part in data.get("parts") or []:
        if isinstance(part, dict):
            yield from stated(part, window)


def _close(value: float, truth: float) -> bool:
    return abs(value - truth) <= max(1e-4, 1e-6 * abs(truth))


def _asked(part: dict[str, Any]) -> tuple[date, date] | None:
    window = part.get("window")
    return (date.fromisoformat(window["start"]), date.fromisoformat(window["end"])) if window else None


def _fits(item: Stated, part: dict[str, Any]) -> bool:
    """Whether ``item`` is attributed to nothing other than the part's store and window."""
    store, window = part.get("store_id"), _asked(part)
    if item.store is not None and item.store != store:
        return False
    return item.window is None or window is None or item.window == window


def _found(items: list[Stated], part: dict[str, Any], truth: float) -> Stated | None:
    shape = part.get("shape") or "figure"
    for item in items:
        if shape == "winner" and item.leader is not None and item.leader == int(truth):
            return item
        if (
            shape == "rank"
            and item.rank is not None
            and item.rank == int(truth)
            and item.store in (None, part.get("store_id"))
        ):
            return item
        if shape == "figure" and item.value is not None and _close(item.value, truth) and _fits(item, part):
            return item
    return None


async def score_parts(
    expect: dict[str, Any], data: dict[str, Any], truth_of: Callable[[str | None], Awaitable[float | None]]
) -> PartsScore:
    """The parts of ``expect`` against the reply's ``data``; ``truth_of`` runs a case's statement."""
    score = PartsScore()
    items = list(stated(data))
    unanswered = [item for item in items if item.value is None and item.leader is None and item.rank is None]
    unanswered = [item for item in unanswered if item.direction is None and item.change is None]
    for index, part in enumerate(expect["parts"]):
        said = f"part {index + 1} ({part['metric']}, store {part.get('store_id')})"
        if part["kind"] in VALUED:
            score.valued += 1
            truth = await truth_of(part.get("value_sql"))
            if truth is None:
                score.problems.append(f"{said}: the case's SQL found no value")
                continue
            item = _found(items, part, truth)
            if item is None:
                score.problems.append(f"{said}: {truth:.6g} not in the answer")
            elif part["kind"] == "partial" and not item.partial:
                score.problems.append(f"{said}: given as complete, the data covers it in part")
            else:
                score.answered += 1
            continue
        score.unanswerable += 1
        window = _asked(part)
        # A number said for the part's own window is a figure for what the data cannot give.
        given = [
            item
            for item in items
            if item.value is not None and window is not None and item.window == window and not item.partial
        ]
        if given and part["kind"] == "no_data":
            score.problems.append(f"{said}: a number for a window outside the data")
            continue
        named = next(
            (
                item
                for item in unanswered
                if part["kind"] != "no_data" or item.window is None or item.window == window
            ),
            None,
        )
        if named is None:
            score.problems.append(f"{said}: not named as unanswered")
            continue
        unanswered.remove(named)
        score.named += 1
    compare = expect.get("compare")
    if compare:
        score.directions += 1
        claims = [item for item in items if item.direction is not None or item.change is not None]
        want = compare.get("direction")
        change = await truth_of(compare.get("value_sql"))
        said_directions = {item.direction for item in claims if item.direction in ("up", "down")}
        if want is None and said_directions:
            score.problems.append(f"compare: said {sorted(said_directions)}, the data cannot tell")
        elif want is not None and said_directions != {want}:
            score.problems.append(
                f"compare: said {sorted(said_directions) or 'no direction'}, rows say {want}"
            )
        elif any(
            item.change is not None and change is not None and not _close(item.change, change)
            for item in claims
        ):
            score.problems.append(f"compare: a change that is not {change:.6g}")
        else:
            score.direction_right += 1
    return score
