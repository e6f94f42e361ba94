"""``make eval-meta``: system requests through the meta-orchestrator, and what the built systems do.

The requests are ``benchmarks/eval_meta/tuning.json`` (10), ``tuning2.json`` (8), ``tuning3.json``
(4, from the evaluation set rm5's ``meta_tuning3.json``), ``tuning4.json`` (5, from meta4's
``meta_tuning4.json``, its README ``README4.md``), ``tuning5.json`` (6, from meta5's ``meta_tuning5.json``,
its README ``README5.md``) and ``tuning6.json`` (6, meta6's, ``README6.md``), tuned on, and ``heldout.json`` (3), ``heldout2.json`` (4),
``heldout3.json`` (5, rm5's ``meta_heldout3.json``), ``heldout4.json`` (5, meta4's), ``heldout5.json``
(6, meta5's) and ``heldout6.json`` (6, meta6's), never read while
tuning: only their aggregates are
printed. Each file is reported apart. They were copied from the evaluation sets separate helpers wrote
without reading the code (their READMEs there: ``README.md``, ``README2.md``). ``--only tuning2``
(repeatable) runs only the named splits; ``--tuning-only`` only the tuning files; ``--request m-t-05``
(repeatable) only those tuning requests; ``--misses`` prints each tuning case the built system
missed. ``--help`` prints this and runs nothing; an unknown option or split is an error (exit 2). Each request is built by the ``meta`` graph (embedded Postgres, offline model, one tenant),
then:

- **constraints captured**: a constraint of the set counts when requirements of the SystemSpec cover
  at least half of its words and name every field its cases read;
- **constraint cases passed**: each case's input is sent to the compiled system (the registered agent,
  or the unregistered candidate when the gates kept it from registering) and its answer matched with
  the set's own matcher (``check.match``);
- **gate verdicts right**: the quality gate of the intact system must pass exactly when the system
  passes every case of the set, and a broken variant (its decision rules removed: thresholds, routes,
  escalations gone, only the defaults kept) evaluated with the same EvalSpec must fail its gate;
- **requests left running**: meta requests whose row is still ``running`` at the end.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
import sys
import tempfile
import uuid
from pathlib import Path
from typing import Any

from benchmarks.service import exit_on_signals

from master_agent.capabilities import install_tenant, load_tenant
from master_agent.capabilities.agents import AgentDocument, live_agents
from master_agent.runtime import RuntimeResources, open_resources
from master_agent.runtime.resources import use_shared_resources
from master_agent.service.graphs import register_graphs
from master_agent.settings import Settings
from master_agent.storage.embedded import stop_embedded_server

HERE = Path(__file__).parent / "eval_meta"
TENANT = "meta-eval"
#: (label, file, shown case by case): the held-out files are only ever reported as aggregates.
SPLITS = (
    ("tuning", "tuning.json", True),
    ("tuning2", "tuning2.json", True),
    ("tuning3", "tuning3.json", True),
    ("tuning4", "tuning4.json", True),
    ("tuning5", "tuning5.json", True),
    ("tuning6", "tuning6.json", True),
    ("held-out", "heldout.json", False),
    ("held-out2", "heldout2.json", False),
    ("held-out3", "heldout3.json", False),
    ("held-out4", "heldout4.json", False),
    ("held-out5", "heldout5.json", False),
    ("held-out6", "heldout6.json", False),
)


def _matcher() -> Any:
    spec = importlib.util.spec_from_file_location("meta_check", HERE / "check.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.match


async def _artifacts(resources: RuntimeResources, request_id: str) -> dict[str, Any]:
    async with resources.database.pool.connection() as conn:
        rows = await (
            await conn.execute(
                "SELECT DISTINCT ON (artifact_type) artifact_type, payload FROM meta_artifacts "
                "WHERE request_id = %s ORDER BY artifact_type, version DESC",
                (uuid.UUID(request_id),),
            )
        ).fetchall()
    return {row["artifact_type"]: row["payload"] for row in rows}


async def _system_graph(resources: RuntimeResources, compiled: dict[str, Any]) -> Any:
    """The compiled system as a graph: its registered agent, else its unregistered candidate."""
    registered = compiled.get("registered_agent")
    if registered:
        from master_agent.runtime.factory import master_graph

        tenant = await load_tenant(resources.database.pool, TENANT)
        agents = await live_agents(resources.database.pool, TENANT, tenant.capability_version)
        config: Any = {"configurable": {"tenant_id": TENANT, "agent_id": agents[registered].assistant_id}}
        return await master_graph(resources, config)
    documents = [AgentDocument.model_validate(d) for d in (compiled.get("config") or {}).get("agents") or []]
    if not documents:
        return None
    from master_agent.runtime.factory import candidate_graph

    return await candidate_graph(resources, TENANT, documents)


def _captured(request: str, constraint: dict[str, Any], requirements: list[dict[str, Any]]) -> bool:
    start = request.find(constraint["text"])
    end = start + len(constraint["text"])
    covered: set[int] = set()
    fields: set[str] = set()
    for requirement in requirements:
        lo, hi = max(start, requirement["start"]), min(end, requirement["end"])
        if lo < hi:
            covered.update(range(lo, hi))
            fields.update(requirement.get("fields") or [])
    read = {case["expect"]["field"] for case in constraint["cases"]}
    return len(covered) >= 0.5 * (end - start) and read <= fields


def _broken(system: dict[str, Any]) -> dict[str, Any]:
    """The system with its decision rules removed (only each field's default kept)."""
    broken = json.loads(json.dumps(system))
    for component in broken["components"]:
        if "decision" in component:
            component["decision"] = [rule for rule in component["decision"] if rule.get("default")]
    broken["name"] = f"{system['name']}_broken"[:60]
    return broken


async def _run(meta: Any, request: dict[str, Any]) -> dict[str, Any]:
    config: Any = {"configurable": {"tenant_id": TENANT, "thread_id": str(uuid.uuid4())}}
    try:
        state = await meta.ainvoke({"request": request}, config)
    except Exception as error:  # measured, not fatal: a crash is a request that did not finish
        return {"status": "crashed", "error": str(error)[:200]}
    return dict(state.get("result") or {})


async def _one(resources: RuntimeResources, meta: Any, item: dict[str, Any], match: Any) -> dict[str, Any]:
    result = await _run(meta, {"text": item["request"]})
    artifacts = await _artifacts(resources, result["request_id"]) if result.get("request_id") else {}
    system = artifacts.get("SystemSpec") or {}
    requirements = system.get("requirements") or []
    captured = [_captured(item["request"], c, requirements) for c in item["constraints"]]
    subject = next((k["name"] for k in system.get("state_schema") or [] if k.get("external")), "message")
    graph = await _system_graph(resources, artifacts["CompiledSpec"]) if "CompiledSpec" in artifacts else None
    passed: list[bool] = []
    constraint_ok: list[bool] = []
    misses: list[str] = []
    for constraint in item["constraints"]:
        results = []
        for case in constraint["cases"]:
            output: dict[str, Any] = {}
            if graph is not None:
                config: Any = {"configurable": {"tenant_id": TENANT}}
                try:
                    state = await graph.ainvoke(
                        {"goal": case["input"], "context": {subject: case["input"]}}, config
                    )
                    output = dict(state.get("solution") or {})
                except Exception as error:  # a system that crashes fails the case, the run goes on
                    output = {"error": str(error)}
            ok, detail = match(case["expect"], output)
            results.append(bool(ok))
            if not ok:
                want = {k: v for k, v in case["expect"].items() if k != "field"}
                misses.append(
                    f"{constraint['id']} {constraint['kind']}: got {detail} want {want} <- {case['input'][:90]}"
                )
        passed.extend(results)
        constraint_ok.append(all(results))
    quality = (result.get("gates") or {}).get("quality") or {}
    gate_passed = bool(quality.get("passed"))
    honoured = all(passed)
    broken_failed = True
    if system and "EvalSpec" in artifacts:
        broken = await _run(
            meta,
            {
                "text": f"Evaluate {system['name']}_broken",
                "playbook": "evaluate",
                "artifacts": {"SystemSpec": _broken(system), "EvalSpec": artifacts["EvalSpec"]},
            },
        )
        broken_failed = not ((broken.get("gates") or {}).get("quality") or {}).get("passed")
    return {
        "id": item["id"],
        "status": result.get("status"),
        "captured": captured,
        "cases": passed,
        "constraints_ok": constraint_ok,
        "gate_passed": gate_passed,
        "gate_right": gate_passed == honoured,
        "broken_failed": broken_failed,
        "unmet": quality.get("unmet") or [],
        "misses": misses,
        "error": result.get("error"),
    }


def _rate(values: list[bool]) -> str:
    return f"{sum(values)}/{len(values)} ({sum(values) / len(values):.0%})" if values else "0/0"


def parse_options(argv: list[str]) -> argparse.Namespace:
    """The runner's options, parsed: an option it does not know is an error, never "run everything"
    (which would run the held-out splits)."""
    parser = argparse.ArgumentParser(
        prog="eval_meta.py", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--only",
        action="append",
        choices=[label for label, _, _ in SPLITS],
        help="run only this split (repeatable); without it, every split, held-out ones included",
    )
    parser.add_argument("--tuning-only", action="store_true", help="only the tuning splits")
    parser.add_argument(
        "--request", action="append", default=[], help="only this tuning request, by id (repeatable)"
    )
    parser.add_argument("--misses", action="store_true", help="print each tuning case the system missed")
    return parser.parse_args(argv)


def _chosen(options: argparse.Namespace) -> list[tuple[str, str, bool]]:
    """The splits the options pick, in the runner's order."""
    return [
        (label, file, show)
        for label, file, show in SPLITS
        if (show or not options.tuning_only) and (not options.only or label in options.only)
    ]


async def evaluate(data_dir: str, options: argparse.Namespace) -> int:
    match = _matcher()
    settings = Settings(data_dir=Path(data_dir), model="offline")
    async with open_resources(settings) as resources:
        await install_tenant(resources.database.pool, settings, "retail", TENANT)
        use_shared_resources(resources)
        from master_agent.meta.graph import build_meta_graph

        meta = build_meta_graph().compile(checkpointer=resources.database.checkpointer)
        for label, file, show in _chosen(options):
            items = json.loads((HERE / file).read_text())
            # "--request m-t-05" (repeatable): only those tuning requests (held-out ones are never picked).
            picked = options.request
            if picked:
                items = [item for item in items if show and item["id"] in picked]
                if not items:
                    continue
            rows = [await _one(resources, meta, item, match) for item in items]
            print(f"\n{label}: {len(rows)} requests")
            if show:
                for row in rows:
                    print(
                        f"  {row['id']} {row['status']!s:<8} captured {_rate(row['captured']):<12} cases "
                        f"{_rate(row['cases']):<13} gate {'pass' if row['gate_passed'] else 'fail'} "
                        f"({'right' if row['gate_right'] else 'WRONG'}), broken variant gate "
                        f"{'failed (right)' if row['broken_failed'] else 'PASSED (wrong)'}"
                    )
                    if row["error"]:
                        print(f"         failed: {str(row['error'])[:160]}")
                    if options.misses:
                        for miss in row["misses"]:
                            print(f"         miss {miss}")
                    if row["unmet"]:
                        print(f"         gate unmet: {', '.join(map(str, row['unmet']))[:300]}")
            captured = [c for row in rows for c in row["captured"]]
            cases = [c for row in rows for c in row["cases"]]
            constraints = [c for row in rows for c in row["constraints_ok"]]
            verdicts = [row["gate_right"] for row in rows] + [row["broken_failed"] for row in rows]
            print(f"  constraints captured:        {_rate(captured)}")
            print(f"  constraint cases passed:     {_rate(cases)}")
            print(f"  constraints honoured (all cases): {_rate(constraints)}")
            print(f"  gate verdicts right:         {_rate(verdicts)} (intact and broken variant of each)")
        async with resources.database.pool.connection() as conn:
            row = await (
                await conn.execute("SELECT count(*) AS n FROM meta_requests WHERE status = 'running'")
            ).fetchone()
        assert row is not None
        print(f"\nrequests left running: {row['n']}")
    return 0


def main(argv: list[str] | None = None) -> int:
    options = parse_options(sys.argv[1:] if argv is None else argv)
    register_graphs()
    with tempfile.TemporaryDirectory(prefix="ma-eval-meta-") as data_dir:
        try:
            return asyncio.run(evaluate(data_dir, options))
        finally:
            # The embedded server outlives the pool (pgserver keeps it for the next process) and
            # writes into the directory while it is removed: stopped first, the removal cannot fail.
            stop_embedded_server(Path(data_dir))


if __name__ == "__main__":
    exit_on_signals()
    sys.exit(main())
