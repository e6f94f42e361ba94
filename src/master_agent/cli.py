"""``master-agent``: solve goals, resume threads, migrate, list terminations."""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import sys
from collections.abc import Sequence
from typing import Any

from rich.console import Console

from master_agent.errors import MasterAgentError
from master_agent.settings import Settings

EXIT_INTERRUPTED = 3
EXIT_ERROR = 1
EXIT_USAGE = 2


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="master-agent", description=__doc__)
    parser.add_argument("-v", "--verbose", action="store_true", help="log to stderr")
    commands = parser.add_subparsers(dest="command", required=True)

    solve = commands.add_parser("solve", help="solve a goal end to end")
    solve.add_argument("goal")
    solve.add_argument("--tenant", default="demo-retail")
    solve.add_argument("--complexity", choices=["simple", "standard", "strategic"])
    solve.add_argument("--variant", default="control", help="control | planner_first | parallel_research")
    solve.add_argument("--timeline-days", type=int)
    solve.add_argument("--max-iterations", type=int)
    solve.add_argument("--sub-agents", help="comma-separated subset of sub-agents")
    solve.add_argument("--json", action="store_true", help="print only the solution as JSON")

    resume = commands.add_parser("resume", help="continue a thread (after an interrupt or a crash)")
    resume.add_argument("--thread", required=True)
    resume.add_argument("--decision", help="approve | reject | guidance text (after an interrupt)")
    resume.add_argument("--json", action="store_true")

    commands.add_parser("migrate", help="apply database migrations and install the demo tenant")

    terminations = commands.add_parser("terminations", help="list recorded agent stops")
    terminations.add_argument("--tenant", default="demo-retail")
    terminations.add_argument("--thread")
    terminations.add_argument("--limit", type=int, default=50)
    terminations.add_argument("--json", action="store_true")
    return parser


class TreePrinter:
    """Prints the call tree live as calls start and end."""

    def __init__(self, console: Console, header: str | None = None) -> None:
        self.console = console
        self.header = header

    def __call__(self, event: dict[str, Any]) -> None:
        if self.header is not None:  # printed once the run has really started
            self.console.print(self.header)
            self.header = None
        indent = "  " * (int(event.get("depth", 0)) + 1)
        kind = "sub-agent" if event.get("kind") == "sub_agent" else "tool"
        if event.get("event") == "call_start":
            self.console.print(f"{indent}[cyan]{event['agent']}[/] -> [bold]{event['tool']}[/] ({kind})")
        elif event.get("event") == "call_end" and event.get("status") != "success":
            self.console.print(f"{indent}[yellow]{event['agent']} <- {event['tool']}: {event['status']}[/]")


def _print_outcome(console: Console, outcome: Any, as_json: bool) -> int:
    if outcome.status == "interrupted":
        if as_json:
            print(
                json.dumps(
                    {
                        "status": "interrupted",
                        "thread_id": outcome.thread_id,
                        "interrupt": outcome.interrupt,
                    }
                )
            )
        else:
            console.print("[bold yellow]The agent escalated to a human.[/]")
            console.print_json(json.dumps(outcome.interrupt, default=str))
            console.print(
                f'Resume with: master-agent resume --thread {outcome.thread_id} --decision approve|reject|"text"'
            )
        return EXIT_INTERRUPTED
    solution = outcome.solution
    if as_json:
        print(solution.model_dump_json())
    else:
        console.rule("Solution")
        console.print_json(solution.model_dump_json(exclude={"steps"}))
        console.print(f"status={solution.status} thread={solution.thread_id} solution={solution.solution_id}")
    return 0 if solution.status in ("success", "partial") else EXIT_ERROR


async def _run(args: argparse.Namespace, settings: Settings, console: Console) -> int:
    from master_agent.runtime import SolveRequest, open_resources, resume, solve
    from master_agent.runtime.termination import PostgresTerminationLog

    if args.command == "solve":
        request = SolveRequest.parse(
            tenant_id=args.tenant,
            goal=args.goal,
            complexity=args.complexity,
            ab_test_variant=args.variant,
            timeline_days=args.timeline_days,
            max_iterations=args.max_iterations,
            sub_agents=[s.strip() for s in args.sub_agents.split(",") if s.strip()]
            if args.sub_agents
            else None,
        )
        async with open_resources(settings) as resources:
            header = (
                f"[bold]Goal:[/] {request.goal}  [dim](tenant {request.tenant_id}, model {settings.model})[/]"
            )
            printer = None if args.json else TreePrinter(console, header)
            outcome = await solve(resources, request, on_event=printer)
            return _print_outcome(console, outcome, args.json)
    if args.command == "resume":
        async with open_resources(settings) as resources:
            outcome = await resume(
                resources,
                args.thread,
                args.decision,
                on_event=None if args.json else TreePrinter(console),
            )
            return _print_outcome(console, outcome, args.json)
    if args.command == "migrate":
        async with open_resources(settings) as resources:
            console.print(f"database ready at {resources.database.uri.split('@')[-1]}")
        return 0
    if args.command == "terminations":
        async with open_resources(settings, install_demo=False) as resources:
            rows = await PostgresTerminationLog(resources.database.pool).list(
                args.tenant, thread_id=args.thread, limit=args.limit
            )
        if args.json:
            print(json.dumps(rows, default=str))
            return 0
        for row in rows:
            console.print(
                f"{row['created_at']:%Y-%m-%d %H:%M:%S} {row['thread_id'][:8]} depth={row['depth']} "
                f"{row['agent']:<24} {row['reason']:<32} it={row['iterations']} "
                f"progress={row['progress']:.2f} confidence={row['confidence']:.2f}",
                soft_wrap=True,
            )
        return 0
    raise AssertionError(args.command)


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING, stream=sys.stderr)
    console = Console(stderr=args.command != "terminations" and getattr(args, "json", False))
    error_console = Console(stderr=True)
    try:
        settings = Settings.from_env()
        return asyncio.run(_run(args, settings, console))
    except MasterAgentError as error:
        error_console.print(f"[bold red]error:[/] {error}")
        return EXIT_USAGE
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
