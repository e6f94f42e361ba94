"""``master-agent`` commands of the evolution loop: knowledge, playbooks, outcomes, learnings, demo."""

from __future__ import annotations

import argparse
import json
import time
from datetime import UTC, datetime, timedelta
from datetime import time as day_time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from master_agent.errors import InputError

if TYPE_CHECKING:
    from rich.console import Console

    from master_agent.settings import Settings

COMMANDS = ("knowledge", "playbooks", "outcomes", "learnings", "demo")


def add_evolution_commands(commands: Any) -> None:
    knowledge = commands.add_parser("knowledge", help="village knowledge").add_subparsers(
        dest="action", required=True
    )
    search = knowledge.add_parser("search", help="patterns nearest in meaning to a problem")
    search.add_argument("query")
    search.add_argument("--tenant", default="demo-retail")
    search.add_argument("--limit", type=int, default=5)
    reembed = knowledge.add_parser("reembed", help="rebuild vectors with the current embedder")
    reembed.add_argument("--all", action="store_true", help="also the ones it made already")

    playbooks = commands.add_parser("playbooks", help="deploy and manage playbooks").add_subparsers(
        dest="action", required=True
    )
    listing = playbooks.add_parser("list", help="a tenant's playbooks")
    listing.add_argument("--tenant", default="demo-retail")
    listing.add_argument("--status", choices=["active", "disabled", "rolled_back"])
    show = playbooks.add_parser("show", help="one playbook with its runs and history")
    show.add_argument("playbook_id")
    show.add_argument("--tenant", default="demo-retail")
    deploy = playbooks.add_parser("deploy", help="validate, store and schedule a playbook")
    deploy.add_argument("--tenant", default="demo-retail")
    source = deploy.add_mutually_exclusive_group(required=True)
    source.add_argument("--solution", help="deploy the playbook of this solution")
    source.add_argument("--file", type=Path, help="a playbook as JSON")
    for action in ("disable", "rollback"):
        change = playbooks.add_parser(action, help=f"{action} a playbook (recorded)")
        change.add_argument("playbook_id")
        change.add_argument("--tenant", default="demo-retail")
        change.add_argument("--reason")
    run = playbooks.add_parser("run", help="execute a playbook's steps now")
    run.add_argument("playbook_id")
    run.add_argument("--tenant", default="demo-retail")

    outcomes = commands.add_parser("outcomes", help="outcome checks").add_subparsers(
        dest="action", required=True
    )
    outcome_list = outcomes.add_parser("list", help="a tenant's outcome checks")
    outcome_list.add_argument("--tenant", default="demo-retail")
    outcome_list.add_argument("--solution")
    run_due = outcomes.add_parser("run-due", help="run every check due by a date, now (the clock seam)")
    run_due.add_argument("--as-of", required=True, help="ISO date (the whole day counts) or date-time")

    learnings = commands.add_parser("learnings", help="what outcomes taught").add_subparsers(
        dest="action", required=True
    )
    learning_list = learnings.add_parser("list", help="a tenant's learnings")
    learning_list.add_argument("--tenant", default="demo-retail")

    demo = commands.add_parser(
        "demo", help="the demos: the retail world and loop, the assistant, a loan conversation"
    ).add_subparsers(dest="action", required=True)
    simulate = demo.add_parser("simulate-outcome", help="write the post-intervention sales of a solution")
    simulate.add_argument("--solution", required=True)
    simulate.add_argument(
        "--seed",
        type=int,
        default=None,
        help="same seed, same simulated sales (default: from the solution id)",
    )
    demo.add_parser("loop", help="the whole loop: solve, deploy, simulate, measure, learn, reuse")
    demo.add_parser("assistant", help="the personal assistant's six scenarios on the local servers")
    demo.add_parser("lending", help="a loan conversation end to end, stage by stage (demo-lending)")


def parse_as_of(text: str) -> datetime:
    """A date means the end of that day (UTC); a date-time without zone is UTC."""
    try:
        if len(text) == 10:
            return datetime.combine(datetime.fromisoformat(text).date(), day_time.max, tzinfo=UTC)
        instant = datetime.fromisoformat(text)
    except ValueError:
        raise InputError("as-of", f"not an ISO date or date-time: {text!r}") from None
    return instant if instant.tzinfo else instant.replace(tzinfo=UTC)


def _dump(value: Any) -> Any:
    from pydantic import BaseModel

    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, list):
        return [_dump(item) for item in value]
    return value


def _print(value: Any) -> None:
    print(json.dumps(_dump(value), default=str))


async def run_evolution_command(args: argparse.Namespace, settings: Settings, console: Console) -> int:
    from master_agent.domains.retail.simulate import simulate_outcome
    from master_agent.evolution import learning, outcomes, playbooks
    from master_agent.evolution.clock import FixedClock
    from master_agent.runtime import open_resources
    from master_agent.runtime.resources import SchedulerRole

    if args.command == "demo" and args.action == "loop":
        return await demo_loop(settings, console)
    if args.command == "demo" and args.action == "assistant":
        from master_agent.domains.assistant.demo import demo_assistant

        return await demo_assistant(settings, console)
    if args.command == "demo" and args.action == "lending":
        from master_agent.domains.lending.demo import demo_lending

        return await demo_lending(settings, console)
    role: SchedulerRole = (
        "add" if (args.command, args.action) in (("playbooks", "deploy"), ("outcomes", "run-due")) else "none"
    )
    async with open_resources(settings, scheduler=role) as resources:
        evolution = resources.evolution
        match (args.command, args.action):
            case ("knowledge", "search"):
                _print(await evolution.knowledge.search(args.tenant, args.query, limit=args.limit))
            case ("knowledge", "reembed"):
                rebuilt = await evolution.knowledge.reembed(everything=args.all)
                _print({"rebuilt": rebuilt, "model": evolution.knowledge.embedder.model_name})
            case ("playbooks", "list"):
                _print(await playbooks.list_playbooks(evolution, args.tenant, status=args.status))
            case ("playbooks", "show"):
                found = await playbooks.get_playbook(
                    evolution, args.tenant, _uuid(args.playbook_id, "playbook_id")
                )
                if found is None:
                    raise InputError("playbook_id", f"unknown playbook {args.playbook_id}")
                history = await playbooks.playbook_history(evolution, found.playbook_id)
                _print({**found.model_dump(mode="json"), **history})
            case ("playbooks", "deploy"):
                spec, solution_id = await _playbook_source(resources, args)
                _print(await playbooks.deploy_playbook(evolution, args.tenant, spec, solution_id=solution_id))
            case ("playbooks", "disable" | "rollback"):
                _print(
                    await playbooks.change_status(
                        evolution,
                        args.tenant,
                        _uuid(args.playbook_id, "playbook_id"),
                        args.action,
                        args.reason,
                    )
                )
            case ("playbooks", "run"):
                playbook_id = _uuid(args.playbook_id, "playbook_id")
                if await playbooks.get_playbook(evolution, args.tenant, playbook_id) is None:
                    raise InputError("playbook_id", f"unknown playbook {args.playbook_id}")
                _print(await playbooks.execute_playbook(evolution, playbook_id, evolution.clock.now()))
            case ("outcomes", "list"):
                solution = str(_uuid(args.solution, "solution")) if args.solution else None
                _print(await outcomes.list_checks(evolution, args.tenant, solution))
            case ("outcomes", "run-due"):
                evolution.clock = FixedClock(parse_as_of(args.as_of))
                _print(await outcomes.run_due(evolution))
            case ("learnings", "list"):
                _print(await learning.list_learnings(evolution, args.tenant))
            case ("demo", "simulate-outcome"):
                _print(await simulate_outcome(resources.database.pool, args.solution, seed=args.seed))
            case _:
                raise AssertionError((args.command, args.action))
    return 0


def _uuid(text: str, field: str) -> Any:
    import uuid

    try:
        return uuid.UUID(text)
    except ValueError:
        raise InputError(field, f"not a UUID: {text!r}") from None


async def _playbook_source(resources: Any, args: argparse.Namespace) -> tuple[dict[str, Any], str | None]:
    if args.file is not None:
        try:
            spec = json.loads(args.file.read_text())
        except (OSError, json.JSONDecodeError) as error:
            raise InputError("file", f"cannot read a JSON playbook from {args.file}: {error}") from None
        if not isinstance(spec, dict):
            raise InputError("file", "the playbook must be a JSON object")
        return spec, None
    from master_agent.evolution.playbooks import solution_playbook

    solution_id = str(_uuid(args.solution, "solution"))
    return await solution_playbook(resources.evolution, args.tenant, solution_id), solution_id


FIRST_GOAL = "Increase Store 5's accessory attach rate by 20% within 60 days"
SECOND_GOAL = "Help me increase accessory attach rate at my electronics store"
SECOND_TENANT = "demo-retail-2"


async def demo_loop(settings: Settings, console: Console) -> int:
    """The self-evolution loop end to end on the demo tenants, printing each stage."""
    from master_agent.domains.retail.data import DEMO_TENANT
    from master_agent.domains.retail.simulate import simulate_outcome
    from master_agent.evolution import learning, outcomes, playbooks
    from master_agent.evolution.clock import FixedClock
    from master_agent.runtime import SolveRequest, open_resources, solve

    async with open_resources(settings, scheduler="add") as resources:
        evolution = resources.evolution
        console.rule("1. Solve")
        started = time.perf_counter()
        request = SolveRequest(tenant_id=DEMO_TENANT, goal=FIRST_GOAL, deploy_playbook=True)
        first = await solve(resources, request)
        first_s = time.perf_counter() - started
        if first.solution is None or first.status not in ("success", "partial"):
            raise InputError(
                "goal", f"the first goal ended {first.status}; the loop needs a delivered solution"
            )
        solution = first.solution
        strategy = solution.strategy or {}
        outcome = solution.expected_outcome or {}
        console.print(
            f"{FIRST_GOAL!r} -> {strategy.get('name')} (expected {outcome.get('baseline', 0):.2%} -> "
            f"{outcome.get('expected', 0):.2%}, target {outcome.get('target', 0):.2%}); confidence "
            f"{solution.confidence:.2f}, calibrated {solution.calibrated_confidence}; {first_s:.2f} s; "
            f"reused pattern: {(solution.reused_pattern or {}).get('pattern_name')}"
        )
        console.print(f"{len(solution.outcome_checks)} outcome checks scheduled")

        console.rule("2. Deploy the playbook (the agent did, as the goal asked)")
        playbook_id = (solution.deployed_playbook or {}).get("playbook_id")
        deployed = await playbooks.get_playbook(evolution, DEMO_TENANT, playbook_id) if playbook_id else None
        if deployed is None:
            raise InputError("goal", "the agent did not deploy the playbook")
        console.print(
            f"playbook {deployed.playbook_id} v{deployed.version} {deployed.status}, cron {deployed.schedule!r}, "
            f"next run {deployed.next_run_at}"
        )
        run = await playbooks.execute_playbook(evolution, deployed.playbook_id, evolution.clock.now())
        notified = sum(1 for step in run.results if step.action == "notify" and step.status == "success")
        console.print(
            f"first execution: {run.status}, condition held: {run.triggered}, {notified} notifications"
        )

        console.rule("3. Simulate the world after the intervention")
        simulated = await simulate_outcome(resources.database.pool, solution.solution_id, seed=1)
        console.print(
            f"{simulated.transactions} sales over {outcome.get('timeline_days')} days; true effect "
            f"{simulated.true_effect_points:+.1f} points, realised {simulated.realised_effect_points:+.2f}"
        )

        console.rule("4. Measure (outcomes run-due after the final day)")
        checks = await outcomes.list_checks(evolution, DEMO_TENANT, solution.solution_id)
        present = evolution.clock
        evolution.clock = FixedClock(max(check.due_at for check in checks) + timedelta(hours=1))
        measured = await outcomes.run_due(evolution)
        evolution.clock = present  # back to the present: the next goal is delivered today
        for result in measured:
            console.print(
                f"check {result.check_id}: {result.status}, measured {result.measured}, expected {result.expected}"
                + (" -> learned" if result.learned else "")
            )

        console.rule("5. Learn")
        for item in await learning.list_learnings(evolution, DEMO_TENANT, limit=1):
            console.print(
                f"success={item.success} predicted {item.confidence_predicted:.2f} actual "
                f"{item.confidence_actual:.2f} (delta {item.confidence_delta:+.2f}) for {item.solution_pattern}"
            )
        for pattern in await evolution.knowledge.search(SECOND_TENANT, SECOND_GOAL, limit=1):
            console.print(
                f"village knowledge: {pattern.pattern_name!r} ({pattern.visibility}), confidence "
                f"{pattern.confidence:.2f}, success rate {pattern.success_rate}, evidence {len(pattern.evidence)}"
            )

        console.rule("6. Reuse (another retailer, a similar goal)")
        started = time.perf_counter()
        second = await solve(resources, SolveRequest(tenant_id=SECOND_TENANT, goal=SECOND_GOAL))
        second_s = time.perf_counter() - started
        reused = (second.solution.reused_pattern if second.solution else None) or {}
        console.print(
            f"{SECOND_GOAL!r} ({SECOND_TENANT}) -> {second.status}; short path: "
            f"{'yes, ' + repr(reused.get('pattern_name')) if reused else 'no'}; {second_s:.2f} s vs {first_s:.2f} s; "
            f"strategy {((second.solution.strategy if second.solution else None) or {}).get('name')}; calibrated "
            f"confidence {second.solution.calibrated_confidence if second.solution else None}"
        )
    return 0 if reused else 1
