"""The front door, measured offline: ``make eval-routing`` scores the labelled routing set
(``benchmarks/routing_set.py``); ``make bench`` times intent analysis, discovery and the whole routing
decision (p50/p95, printed, never asserted)."""

from __future__ import annotations

import asyncio
import statistics
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from benchmarks.routing_set import ROUTING_SET
from langchain_core.messages import HumanMessage

from master_agent.capabilities import load_tenant
from master_agent.routing.intent import forget_message_vectors
from master_agent.runtime import RuntimeResources, master_graph, open_resources
from master_agent.runtime.factory import front_door
from master_agent.settings import Settings

TENANT = "demo-retail"
HANDLERS = ["solve", "answer_query", "build_agent", "out_of_scope"]


async def route_once(resources: RuntimeResources, message: str, after: str | None) -> dict[str, Any]:
    """The routing decision the real chat graph makes for ``message`` (stopped before its handler)."""
    config: Any = {"configurable": {"tenant_id": TENANT, "thread_id": str(uuid.uuid4())}}
    graph = await master_graph(resources, config, checkpointer=resources.database.checkpointer)
    if after is not None:
        await graph.ainvoke({"messages": [HumanMessage(after)]}, config)
    state = await graph.ainvoke({"messages": [HumanMessage(message)]}, config, interrupt_before=HANDLERS)
    routing: dict[str, Any] = state["routing"]
    return routing


async def evaluate(resources: RuntimeResources, verbose: bool = False) -> dict[str, float]:
    intents = targets = 0
    clarified = clarified_right = 0
    misses: list[str] = []
    for row in ROUTING_SET:
        routing = await route_once(resources, row["message"], row["after"])
        target = routing["target"]
        intents += routing["intent"] == row["intent"]
        hit = target["kind"] == row["kind"] and (row["name"] is None or target["name"] == row["name"])
        targets += hit
        if target["kind"] == "clarification":
            clarified += 1
            clarified_right += row["kind"] == "clarification"
        if not hit or routing["intent"] != row["intent"]:
            misses.append(
                f"  {row['message']!r}: expected {row['intent']}/{row['kind']}:{row['name']}, got "
                f"{routing['intent']}({routing['confidence']:.2f})/{target['kind']}:{target['name']} - {routing['reason']}"
            )
    total = len(ROUTING_SET)
    figures = {
        "messages": float(total),
        "intent_accuracy": intents / total,
        "target_accuracy": targets / total,
        "clarification_precision": clarified_right / clarified if clarified else 1.0,
    }
    print(
        f"routing eval (offline, {total} labelled messages): intent accuracy {figures['intent_accuracy']:.1%}  "
        f"target accuracy {figures['target_accuracy']:.1%}  clarification precision "
        f"{figures['clarification_precision']:.1%} ({clarified} clarifications)"
    )
    if verbose and misses:
        print("misses:\n" + "\n".join(misses))
    return figures


def _p(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * (len(ordered) - 1) + 0.5))] * 1000


async def bench_routing(resources: RuntimeResources, rounds: int = 3) -> None:
    tenant = await load_tenant(resources.database.pool, TENANT)
    door = front_door(resources, tenant)
    messages = [row["message"] for row in ROUTING_SET if row["after"] is None]
    await door.analyzer.analyze(messages[0], [])  # warm: the model weights and the exemplars' vectors
    intent_s, discovery_s, decision_s = [], [], []
    for _ in range(rounds):
        for message in messages:
            # Each step embeds the message itself (a decision embeds it once for both of its parts).
            forget_message_vectors()
            start = time.perf_counter()
            intent = await door.analyzer.analyze(message, [])
            intent_s.append(time.perf_counter() - start)
            forget_message_vectors()
            start = time.perf_counter()
            await door.discovery.discover(
                tenant.tenant_id, tenant.capability_version, door.cards, message, intent
            )
            discovery_s.append(time.perf_counter() - start)
            forget_message_vectors()
            start = time.perf_counter()
            await door.decide(message, [], {})
            decision_s.append(time.perf_counter() - start)
    for name, values in (
        ("intent analysis", intent_s),
        ("discovery", discovery_s),
        ("routing decision", decision_s),
    ):
        print(
            f"front door {name:17s} p50 {_p(values, 0.5):7.2f} ms  p95 {_p(values, 0.95):7.2f} ms  "
            f"(offline, n={len(values)}; discovery cache hits after the first)"
        )
    print(
        f"front door discovery index builds: {door.discovery.builds} (cached {resources.settings.discovery_ttl_s:g} s)"
    )


async def main(verbose: bool) -> None:
    with tempfile.TemporaryDirectory(prefix="ma-routing-") as data_dir:
        base = Settings.from_env()
        settings = base.with_overrides(
            model="offline", data_dir=Path(data_dir) if base.database_url is None else base.data_dir
        )
        async with open_resources(settings) as resources:
            started = time.perf_counter()
            await evaluate(resources, verbose)
            print(f"  ({statistics.fmean([time.perf_counter() - started]):.1f} s)")
        if base.database_url is None:
            from pgserver import get_server  # type: ignore[attr-defined]

            get_server(Path(data_dir) / "pg", cleanup_mode="stop").cleanup()


if __name__ == "__main__":
    import sys

    asyncio.run(main(verbose="--quiet" not in sys.argv))
