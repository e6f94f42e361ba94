"""Picks the intent head's thresholds on end-to-end routing, not on the head's own probabilities.

``train_routing.py`` picks the temperature, the refusal threshold and the relevance head's floor and
``made_for`` on what each head alone gets right. Session 12 measured that those choices lose end to end: a
retrained head tied the shipped one with the shipped thresholds and lost with its own. Here each head
written with ``train_routing.py --out`` is put behind the front door as the routing runner uses it, and
each threshold of ``GRID`` is moved in turn (coordinate ascent from the head's own values) to the value
under which most messages of the validation splits reach the right intent and target; the choice is
then scored with the splits' follow-ups too. Only totals are printed: the validation splits' texts
and misses are never shown.

A head is written (``--write``) only when, with its chosen thresholds, it beats the shipped head on the
validation splits together and loses on none of the tuning parts (``tuning6.json`` to ``tuning9.json``,
each with its follow-ups). The held-out splits are never read here.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

from benchmarks.routing import (
    TENANT,
    TENANT_OF_KIND,
    _create_tenant_agents,
    _decide,
    _doors,
    _hit,
    expected_target,
)
from benchmarks.service import embedded_server_stopped, exit_on_signals
from benchmarks.train_routing import (
    VALIDATION_FILES,
    VALIDATION_FOLLOW_UPS,
    eval_label,
    eval_label_execute,
    rows_of,
)

from master_agent.routing import intent, intent_head
from master_agent.runtime import RuntimeResources, open_resources
from master_agent.service.graphs import register_graphs
from master_agent.settings import Settings

#: The tuning parts a head must not lose on, each with its follow-ups.
TUNING_PARTS = (
    ("tuning6.json", "followups_tuning6.json"),
    ("tuning7.json", "followups_tuning7.json"),
    ("tuning8.json", "followups_tuning8.json"),
    ("tuning9.json", "followups_tuning9.json"),
)
#: Each threshold tried: where it sits in the head's JSON, and its grid (the head's own value is kept
#: when none is better). Kept small: a pass over the validation splits costs about a CPU-minute, and
#: the machine is shared.
GRID: dict[tuple[str, ...], tuple[float, ...]] = {
    # The temperature first: every confidence the front door compares with its settings
    # (``route_confidence``, ``clarify_below``, the exemplars' second opinion) is read through it, and
    # the fit's own (least log-loss of the head alone) left a retrained head behind end to end.
    ("temperature",): (0.6, 0.7, 0.8),
    ("refuse_from",): (0.7, 0.85, 1.0),
    ("relevance", "made_for"): (0.6, 0.8),
    # The trainer picks the floor on the relevance head alone, where an out-of-scope message left under
    # it counts as caught; end to end the intent head refuses those already, and a floor of 0.4 left
    # three of tuning6's own staff-ranking and returns messages without their agent (0.25: none).
    ("relevance", "floor"): (0.25, 0.4),
}
ROUNDS = 1


def _get(head: dict[str, Any], path: tuple[str, ...]) -> float:
    found: Any = head
    for key in path:
        found = found[key]
    return float(found)


def _set(head: dict[str, Any], path: tuple[str, ...], value: float) -> dict[str, Any]:
    changed = json.loads(json.dumps(head))
    place = changed
    for key in path[:-1]:
        place = place[key]
    place[path[-1]] = value
    return changed


class Bench:
    """The front doors of the demo tenants, rebuilt behind each head tried."""

    def __init__(self, resources: RuntimeResources, scratch: Path) -> None:
        self.resources = resources
        self.scratch = scratch
        self.doors: dict[str, Any] = {}

    async def use(self, head: dict[str, Any]) -> None:
        path = self.scratch / "head.json"
        path.write_text(json.dumps(head))
        # Every reader of the head asks ``load_head()``; pointing it at the scratch copy swaps the head
        # for the whole process without touching the shipped file.
        intent_head.load_head = cache(lambda: _original_load(path))  # type: ignore[assignment]
        self.doors = await _doors(self.resources)
        for tenant_id, door in self.doors.items():
            door.discovery.invalidate(tenant_id)

    async def messages(self, files: tuple[str, ...]) -> int:
        """Messages of ``files`` whose intent and target are right."""
        right = 0
        for row in rows_of(files):
            door = self.doors[TENANT_OF_KIND.get(row["tenant_kind"], TENANT)]
            routing = await _decide(door, row["message"])
            expected = eval_label_execute(eval_label(row["intent"], row.get("target")))
            got = routing.intent if routing.intent != "QUERY" else f"QUERY:{routing.query_kind}"
            kind, name = expected_target(row, {c.name for c in door.cards if c.addressable})
            right += got == expected and _hit(routing, kind, name)
        return right

    async def follow_ups(self, files: tuple[str, ...]) -> int:
        """Follow-ups of ``files`` whose target is right after their previous message."""
        right = 0
        for row in rows_of(files):
            door = self.doors[TENANT_OF_KIND.get(row["tenant_kind"], TENANT)]
            routing = await _decide(door, row["message"], row["previous"])
            expected_row = {**row["expected"], "tenant_kind": row["tenant_kind"]}
            right += _hit(
                routing, *expected_target(expected_row, {c.name for c in door.cards if c.addressable})
            )
        return right

    async def validation(self, head: dict[str, Any]) -> tuple[int, int]:
        await self.use(head)
        return await self.messages(VALIDATION_FILES), await self.follow_ups(VALIDATION_FOLLOW_UPS)

    async def tuning(self, head: dict[str, Any]) -> list[tuple[int, int]]:
        await self.use(head)
        return [
            (await self.messages((part,)), await self.follow_ups((follow,))) for part, follow in TUNING_PARTS
        ]


_original_load = intent_head.load_head.__wrapped__


async def select(bench: Bench, head: dict[str, Any], name: str, say: Callable[[str], None]) -> dict[str, Any]:
    """``head`` with each threshold at the value best end to end on the validation splits' messages (of
    equals, the head's own value; their follow-ups, twice the cost, are scored on the choice only)."""
    await bench.use(head)
    best = await bench.messages(VALIDATION_FILES)
    say(f"{name}: own thresholds: validation messages {best}")
    for _ in range(ROUNDS):
        moved = False
        for path, values in GRID.items():
            current = _get(head, path)
            for value in values:
                if value == current:
                    continue
                tried = _set(head, path, value)
                await bench.use(tried)
                score = await bench.messages(VALIDATION_FILES)
                say(f"  {'.'.join(path)} {value}: validation {score}")
                if score > best:
                    head, best, current, moved = tried, score, value, True
            say(f"{name}: {'.'.join(path)} -> {current} (validation {best})")
        if not moved:
            break
    return head


async def main(heads: list[Path], write: bool, search_shipped: bool) -> None:
    register_graphs()
    intent.QUERY_VECTORS_KEPT = 1_000_000  # every pass embeds the same messages: embed each once
    shipped = json.loads(intent_head.HEAD_PATH.read_text())
    with (
        tempfile.TemporaryDirectory(prefix="ma-select-") as directory,
        embedded_server_stopped(directory) as scratch,
    ):
        base = Settings.from_env()
        settings = base.with_overrides(
            model="offline", data_dir=scratch if base.database_url is None else base.data_dir
        )
        async with open_resources(settings) as resources:
            await _create_tenant_agents(resources)
            bench = Bench(resources, scratch)
            say = lambda line: print(line, flush=True)  # noqa: E731
            shipped_validation = await bench.validation(shipped)
            shipped_tuning = await bench.tuning(shipped)
            say(f"shipped head: validation messages+follow-ups {shipped_validation}; tuning {shipped_tuning}")
            chosen: list[tuple[str, dict[str, Any]]] = []
            tried = [("shipped", shipped)] if search_shipped else []
            for name, raw in [*tried, *((str(p), json.loads(p.read_text())) for p in heads)]:
                head = await select(bench, raw, name, say)
                figures = await bench.validation(head), await bench.tuning(head)
                say(
                    f"{name} at its end-to-end thresholds: validation {figures[0]} (shipped {shipped_validation}); "
                    f"tuning {figures[1]} (shipped {shipped_tuning})"
                )
                beats = sum(figures[0]) > sum(shipped_validation)
                holds = all(
                    sum(after) >= sum(before)
                    for after, before in zip(figures[1], shipped_tuning, strict=True)
                )
                say(f"  beats the shipped head on validation: {beats}; loses on no tuning part: {holds}")
                if beats and holds:
                    chosen.append((name, head))
    if write and chosen:
        name, head = chosen[-1]
        intent_head.HEAD_PATH.write_text(json.dumps(head, separators=(",", ":")) + "\n")
        print(f"wrote {intent_head.HEAD_PATH} ({name} at its end-to-end thresholds)")
    elif write:
        print("nothing written: no head beat the shipped one on validation without losing on a tuning part")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("heads", nargs="*", type=Path, help="heads written by train_routing.py --out")
    parser.add_argument("--write", action="store_true", help="ship the head that passes (see above)")
    parser.add_argument(
        "--search-shipped", action="store_true", help="search the shipped head's thresholds too"
    )
    arguments = parser.parse_args()
    exit_on_signals()
    asyncio.run(main(arguments.heads, arguments.write, arguments.search_shipped))
