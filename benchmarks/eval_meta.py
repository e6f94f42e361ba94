"""``make eval-meta``: the meta-orchestrator's examples through the real service, and its figures.

``master-agent serve`` on the embedded Postgres (offline model), a ``demo-retail`` key; each example is
a run of the ``meta`` graph over the official langgraph-sdk (``runs.wait``): the README's build request
compiled for LangGraph and for DeepAgents, the debug playbook on a deliberately broken SystemSpec
(fixed through a promotion), the evaluate playbook on the same spec, and the optimize playbook on a
sound one. Printed: each example's status, playbook, runtime, quality gate, loops, promotions and time;
then the tenant's meta-evaluation (``GET /meta/eval``). Exit status 1 when an example ends otherwise
than expected.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
import time
from typing import Any

import httpx
from benchmarks.service import serving
from langgraph_sdk import get_client

from master_agent.meta.artifacts import Change, apply_changes
from master_agent.meta.design import design_system

TRIAGE = "Build an agent system that triages incoming support tickets by urgency and drafts replies"


def _broken() -> dict[str, Any]:
    """A SystemSpec with an unbounded loop and a component without a budget (rule 8's failures)."""
    system = design_system(TRIAGE, "broken_desk", "langgraph").model_dump(mode="json")
    return apply_changes(
        system,
        [
            Change(op="append", path="edges", value={"source": "draft", "target": "triage"}),
            Change(op="set", path="components.triage.max_iterations", value=None),
            Change(op="set", path="components.draft.max_iterations", value=None),
            Change(op="set", path="safety_reliability.loop_breakers", value={}),
            Change(op="set", path="components.draft.budget", value=None),
        ],
    )


EXAMPLES: list[tuple[str, dict[str, Any], str]] = [
    ("build, LangGraph", {"text": TRIAGE, "name": "ticket_desk"}, "done"),
    # A deepagents harness whose components are spawned through its task tool.
    ("build, DeepAgents", {"text": TRIAGE, "name": "ticket_desk_deep", "runtime": "deepagent"}, "done"),
    (
        "debug a broken spec",
        {"text": "Fix the broken desk system: it loops forever", "artifacts": {"SystemSpec": _broken()}},
        "done",
    ),
    (
        "evaluate a broken spec",
        {"text": "Evaluate the desk system", "playbook": "evaluate", "artifacts": {"SystemSpec": _broken()}},
        "done",
    ),
    (
        "optimize a sound spec",
        {
            "text": "Optimize the desk system: make it cheaper",
            "artifacts": {
                "SystemSpec": design_system(TRIAGE, "lean_desk", "langgraph").model_dump(mode="json")
            },
        },
        "done",
    ),
]


async def evaluate(url: str, key: str) -> int:
    client = get_client(url=url, api_key=key)
    failures = 0
    print(f"{len(EXAMPLES)} meta requests through {url} (graph 'meta', tenant demo-retail)\n")
    for label, request, expected in EXAMPLES:
        thread = await client.threads.create()
        started = time.perf_counter()
        values: Any = await client.runs.wait(thread["thread_id"], "meta", input={"request": request})
        seconds = time.perf_counter() - started
        result = values.get("result") or {}
        quality = (result.get("gates") or {}).get("quality") or {}
        promotions = ", ".join(
            f"{p['target_artifact']} {p['status']}" for p in result.get("promotions") or []
        )
        ok = result.get("status") == expected
        failures += not ok
        print(
            f"{'ok  ' if ok else 'FAIL'} {label:<24} {result.get('status')!s:<8} playbook {result.get('playbook')!s:<9}"
            f" runtime {result.get('runtime_target')!s:<10} pass rate {quality.get('pass_rate', '-')!s:<5}"
            f" loops {sum((result.get('loops') or {}).values())}  promotions [{promotions}]  {seconds:6.2f} s"
        )
        for undone in result.get("left_undone") or []:
            print(f"       left undone: {undone}")
    async with httpx.AsyncClient(base_url=url, headers={"X-API-Key": key}) as http:
        figures = (await http.get("/meta/eval")).json()
    print(f"\nmeta-evaluation (GET /meta/eval): requests {figures['requests']}")
    for f in figures["figures"]:
        print(
            f"  {f['playbook']:<9} {f['metric']:<28} n={f['requests']:<3} mean={f['mean']:<9g}"
            f" min={f['min']:g} max={f['max']:g}"
        )
    rate = figures["promotion_acceptance_rate"]
    print(
        f"  promotions: {figures['promotions_accepted']} accepted, {figures['promotions_rejected']} rejected"
        + (f" (acceptance {rate:.0%})" if rate is not None else "")
    )
    return 1 if failures else 0


def main() -> int:
    with (
        tempfile.TemporaryDirectory(prefix="ma-eval-meta-") as data_dir,
        serving(data_dir, workers=1) as service,
    ):
        return asyncio.run(evaluate(service.url, service.key))


if __name__ == "__main__":
    sys.exit(main())
