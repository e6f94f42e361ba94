"""``master-agent meta``: run the meta-orchestrator on a request, and its meta-evaluation figures."""

from __future__ import annotations

import argparse
import json
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

from master_agent.errors import InputError

if TYPE_CHECKING:
    from rich.console import Console

    from master_agent.settings import Settings


def add_meta_commands(commands: Any) -> None:
    meta = commands.add_parser("meta", help="the meta-orchestrator: build, debug, evaluate agent systems")
    actions = meta.add_subparsers(dest="action", required=True)
    run = actions.add_parser("run", help="work a request through its playbook")
    run.add_argument("request", help='e.g. "Build an agent system that triages tickets by urgency"')
    run.add_argument("--tenant", default="demo-retail")
    run.add_argument("--runtime", choices=["langgraph", "deepagent", "hybrid"])
    run.add_argument("--playbook", choices=["build", "debug", "optimize", "evaluate", "harden", "incident"])
    run.add_argument("--name", help="the system's (and its agent's) name")
    run.add_argument("--spec", type=Path, help="a SystemSpec (JSON) to start from (debug, evaluate...)")
    run.add_argument("--json", action="store_true", help="print the result as JSON")
    evaluation = actions.add_parser("eval", help="meta-evaluation figures of a tenant's requests")
    evaluation.add_argument("--tenant", default="demo-retail")
    evaluation.add_argument("--json", action="store_true")


def _request(args: argparse.Namespace) -> dict[str, Any]:
    request: dict[str, Any] = {"text": args.request}
    for key in ("runtime", "playbook", "name"):
        if getattr(args, key):
            request[key] = getattr(args, key)
    if args.spec is not None:
        try:
            request["artifacts"] = {"SystemSpec": json.loads(args.spec.read_text())}
        except (OSError, json.JSONDecodeError) as error:
            raise InputError("spec", f"cannot read a JSON SystemSpec from {args.spec}: {error}") from None
    return request


async def run_meta_command(args: argparse.Namespace, settings: Settings, console: Console) -> int:
    from master_agent.capabilities import load_tenant
    from master_agent.meta.evaluation import meta_evaluation
    from master_agent.meta.graph import build_meta_graph, parse_request
    from master_agent.meta.registration import META_GRAPH_ID
    from master_agent.runtime import open_resources
    from master_agent.runtime.resources import use_shared_resources
    from master_agent.storage.threads import record_thread

    request = parse_request(_request(args)) if args.action == "run" else None
    async with open_resources(settings) as resources:
        await load_tenant(resources.database.pool, args.tenant)  # an unknown tenant is an error
        if request is None:
            figures = await meta_evaluation(resources.database.pool, args.tenant)
            if args.json:
                print(figures.model_dump_json())
                return 0
            console.print(f"requests by status: {figures.requests}")
            for f in figures.figures:
                console.print(
                    f"{f.playbook:<9} {f.metric:<28} n={f.requests:<4} mean={f.mean:<10g} min={f.min:g} max={f.max:g}"
                )
            rate = figures.promotion_acceptance_rate
            console.print(
                f"promotions: {figures.promotions_accepted} accepted, {figures.promotions_rejected} rejected"
                + (f" (acceptance {rate:.0%})" if rate is not None else "")
            )
            return 0
        use_shared_resources(resources)
        graph = build_meta_graph().compile(checkpointer=resources.database.checkpointer)
        thread_id = str(uuid.uuid4())
        async with resources.database.pool.connection() as conn:
            await record_thread(conn, args.tenant, thread_id, {"graph_id": META_GRAPH_ID})
        config: Any = {"configurable": {"tenant_id": args.tenant, "thread_id": thread_id}}
        state = await graph.ainvoke({"request": request.model_dump(mode="json")}, config)
    result = state["result"]
    if args.json:
        print(json.dumps(result, default=str))
        return 0 if result["status"] in ("done", "partial") else 1
    console.print(
        f"[bold]{result['intent']}[/] playbook, runtime {result['runtime_target']}, request {result['request_id']}"
    )
    for entry in state["history"]:
        console.print(
            f"  {entry['phase']:<18} {entry['decision']:<28} {entry['outcome'][:90]}", soft_wrap=True
        )
    for trace in state["routing_trace"]:
        if trace["node"] == "classify_failure":
            console.print(
                f"  failure -> {trace['route_to']} ({trace['why']}); matched rules "
                f"{[m['priority'] for m in trace['matched']]}"
            )
    for gate, outcome in result["gates"].items():
        console.print(f"  gate {gate}: {'passed' if outcome['passed'] else 'failed'} {outcome}")
    for name, summary in result["summaries"].items():
        console.print(f"[dim]{name}[/]: {summary.splitlines()[0][:140]}", soft_wrap=True)
    for warning in result["warnings"]:
        console.print(f"[yellow]warning:[/] {warning}")
    for item in result["left_undone"]:
        console.print(f"[yellow]left undone:[/] {item}")
    if result.get("error"):
        console.print(f"[red]failed:[/] {result['error']}")
    agent = result["registered_agent"]
    console.print(
        f"[bold]{result['status']}[/]"
        + (
            f": registered as the tenant agent {agent!r} (run it, or chat: the front door routes to it)"
            if agent
            else ""
        )
    )
    return 0 if result["status"] in ("done", "partial") else 1
