"""``master-agent``: solve goals, resume threads, migrate, manage tenants, keys and agents, list terminations
and audit trails."""

from __future__ import annotations

import argparse
import json
import logging
import re
import sys
import uuid
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, get_args

from master_agent.cli_evolution import COMMANDS as EVOLUTION_COMMANDS
from master_agent.cli_evolution import add_evolution_commands, run_evolution_command
from master_agent.cli_meta import add_meta_commands, run_meta_command
from master_agent.errors import InputError, MasterAgentError

if TYPE_CHECKING:  # the help and a bad argument never load them: each command imports what it runs
    from rich.console import Console

    from master_agent.settings import Settings

EXIT_INTERRUPTED = 3
EXIT_ERROR = 1
EXIT_USAGE = 2
#: The master agent's model failed (after retries); the solution is still printed, with the reason.
EXIT_MODEL_ERROR = 4


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
    solve.add_argument("--deploy-playbook", action="store_true", help="the agent deploys the playbook too")
    solve.add_argument("--json", action="store_true", help="print only the solution as JSON")

    resume = commands.add_parser("resume", help="continue a thread (after an interrupt or a crash)")
    resume.add_argument("--thread", required=True)
    resume.add_argument("--decision", help="approve | reject | guidance text (after an interrupt)")
    resume.add_argument("--json", action="store_true")

    commands.add_parser("migrate", help="apply database migrations and install the demo tenant")

    serve = commands.add_parser("serve", help="run the HTTP service (uvicorn)")
    serve.add_argument("--host", help="default MASTER_AGENT_HOST (127.0.0.1)")
    serve.add_argument("--port", type=int, help="default MASTER_AGENT_PORT (8000)")
    serve.add_argument("--workers", type=int, default=1, help="uvicorn worker processes")

    console_ = commands.add_parser(
        "console", help="print the web console's address and a new sign-in key of a tenant"
    )
    console_.add_argument("--tenant", default="demo-retail")
    console_.add_argument(
        "--host", help="where `master-agent serve` listens: default MASTER_AGENT_HOST (127.0.0.1)"
    )
    console_.add_argument("--port", type=int, help="default MASTER_AGENT_PORT (8000), as `serve` uses")

    tenants = commands.add_parser("tenants", help="manage tenants").add_subparsers(
        dest="action", required=True
    )
    tenant_create = tenants.add_parser(
        "create", help="create a tenant (with generated demo data) and print a key"
    )
    tenant_create.add_argument("name")
    tenant_create.add_argument("--tier", choices=["free", "pro", "enterprise"], default="pro")
    tenant_create.add_argument("--domain", default="retail")

    keys = commands.add_parser("keys", help="manage API keys").add_subparsers(dest="action", required=True)
    key_create = keys.add_parser("create", help="create a key for a tenant (printed once)")
    key_create.add_argument("--tenant", required=True)
    key_create.add_argument("--name", default="")
    key_revoke = keys.add_parser("revoke", help="revoke a key by its id")
    key_revoke.add_argument("key_id")
    key_list = keys.add_parser("list", help="list a tenant's keys (never the keys themselves)")
    key_list.add_argument("--tenant", required=True)

    threads = commands.add_parser("threads", help="manage stored threads").add_subparsers(
        dest="action", required=True
    )
    prune = threads.add_parser(
        "prune", help="apply the checkpoint retention policy now (as the scheduler leader does)"
    )
    prune.add_argument(
        "--strategy",
        choices=["keep_latest", "delete"],
        help="default: MASTER_AGENT_CHECKPOINT_TTL",
    )
    prune.add_argument("--idle-minutes", type=float, help="default: MASTER_AGENT_CHECKPOINT_TTL_MINUTES")

    audit = commands.add_parser("audit", help="a tenant's audit trail of stage-driven conversations")
    audit.add_argument("--tenant", default="demo-lending")
    audit.add_argument("--thread", help="one conversation's thread id")
    audit.add_argument("--kind", help="message, decision, transition, read, tool, document, task or refused")
    audit.add_argument("--limit", type=int, default=1000)
    audit.add_argument("--json", action="store_true", help="one JSON object per line")

    terminations = commands.add_parser("terminations", help="list recorded agent stops")
    terminations.add_argument("--tenant", default="demo-retail")
    terminations.add_argument("--thread")
    terminations.add_argument("--limit", type=int, default=50)
    terminations.add_argument("--json", action="store_true")
    agents = commands.add_parser("agents", help="manage a tenant's own agents").add_subparsers(
        dest="action", required=True
    )
    for action, text in [
        ("list", "list the tenant's agents (live versions)"),
        ("show", "print an agent's live spec (or --version N)"),
        ("create", "create an agent from a spec file (JSON)"),
        ("update", "store a new version from a spec file and make it live"),
        ("versions", "list an agent's versions"),
        ("promote", "make a version live"),
        ("rollback", "make the version before the live one live (or --version N)"),
        ("delete", "delete an agent and its versions"),
        ("schema", "print the JSON Schema of an agent spec"),
    ]:
        parser_ = agents.add_parser(action, help=text)
        parser_.add_argument("--tenant", default="demo-retail")
        if action in ("show", "update", "versions", "promote", "rollback", "delete"):
            parser_.add_argument("agent", help="the agent's name or assistant id")
        if action in ("create", "update"):
            parser_.add_argument("--file", required=True, help="the agent spec (JSON); - reads stdin")
        if action in ("show", "promote", "rollback"):
            parser_.add_argument("--version", type=int, required=action == "promote")
    add_evolution_commands(commands)
    add_meta_commands(commands)
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
        verdicts = Counter(str(check.get("verdict")) for check in solution.verification)
        checked = " ".join(f"{verdict}={count}" for verdict, count in sorted(verdicts.items()))
        console.print(
            f"status={solution.status} band={solution.confidence_band} confidence={solution.confidence:.2f} "
            f"thread={solution.thread_id} solution={solution.solution_id}"
            + (f"\nchecked before answering: {checked}" if checked else "")
        )
    if solution.model_failure:
        if not as_json:
            console.print(f"[bold red]The model failed:[/] {solution.model_failure}")
        return EXIT_MODEL_ERROR
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
            deploy_playbook=args.deploy_playbook,
            sub_agents=[s.strip() for s in args.sub_agents.split(",") if s.strip()]
            if args.sub_agents
            else None,
        )
        async with open_resources(settings, scheduler="add") as resources:
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
    if args.command == "meta":
        return await run_meta_command(args, settings, console)
    if args.command in EVOLUTION_COMMANDS:
        return await run_evolution_command(args, settings, console)
    if args.command == "tenants":
        return await _tenants(args, settings)
    if args.command == "keys":
        return await _keys(args, settings)
    if args.command == "console":
        return await _console(args, settings, console)
    if args.command == "agents":
        return await _agents(args, settings)
    if args.command == "threads":
        return await _prune_threads(args, settings)
    if args.command == "audit":
        return await _audit(args, settings, console)
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


async def _audit(args: argparse.Namespace, settings: Settings, console: Console) -> int:
    from master_agent.capabilities import load_tenant
    from master_agent.runtime import open_resources
    from master_agent.workflows.audit import AuditKind, audit_events

    if args.kind is not None and args.kind not in get_args(AuditKind):
        raise InputError("kind", f"{args.kind!r} is not one of {', '.join(get_args(AuditKind))}")
    if args.limit < 1:
        raise InputError("limit", "must be at least 1")
    if args.thread is not None:
        try:
            uuid.UUID(args.thread)
        except ValueError:
            raise InputError("thread", f"not a thread id: {args.thread!r}") from None
    async with open_resources(settings, install_demo=False) as resources:
        await load_tenant(resources.database.pool, args.tenant)  # an unknown tenant is an error
        events = await audit_events(
            resources.database.pool, args.tenant, thread_id=args.thread, kind=args.kind, limit=args.limit
        )
    if args.json:
        for event in events:
            print(event.model_dump_json())
        return 0
    for event in events:
        where = "/".join(part for part in (event.stage, event.agent) if part)
        detail = json.dumps(event.detail, default=str, ensure_ascii=False)
        console.print(
            f"{event.at:%Y-%m-%d %H:%M:%S} {event.thread_id[:8]} {event.kind:<10} {where:<40} {detail}",
            soft_wrap=True,
            markup=False,
            highlight=False,
        )
    if not events:
        console.print("no audit events")
    return 0


async def _prune_threads(args: argparse.Namespace, settings: Settings) -> int:
    from master_agent.runtime import open_resources
    from master_agent.storage.retention import RetentionPolicy, retention_policy, sweep_checkpoints

    configured = retention_policy(settings)
    strategy = args.strategy or (configured.strategy if configured else None)
    if strategy is None:
        raise InputError("strategy", "MASTER_AGENT_CHECKPOINT_TTL is off: pass --strategy keep_latest|delete")
    idle = args.idle_minutes if args.idle_minutes is not None else settings.checkpoint_ttl_minutes
    if idle < 0:
        raise InputError("idle-minutes", "at least 0")
    policy = RetentionPolicy(strategy=strategy, idle_minutes=idle)
    async with open_resources(settings, install_demo=False) as resources:
        result = await sweep_checkpoints(resources.database.pool, policy, resources.evolution.clock.now())
    print(result.model_dump_json())
    return 0


async def _tenants(args: argparse.Namespace, settings: Settings) -> int:
    from master_agent.capabilities import bump_capability_version, install_tenant
    from master_agent.runtime import open_resources
    from master_agent.service.auth import create_key

    tenant_id = re.sub(r"[^a-z0-9]+", "-", args.name.lower()).strip("-")
    if not re.fullmatch(r"[a-z0-9][a-z0-9-]{1,62}", tenant_id):
        raise InputError("name", f"{args.name!r} does not make a tenant id (2-63 letters, digits or '-')")
    async with open_resources(settings) as resources:
        pool = resources.database.pool
        async with pool.connection() as conn:
            if await (
                await conn.execute("SELECT 1 FROM tenants WHERE tenant_id = %s", (tenant_id,))
            ).fetchone():
                raise InputError("name", f"tenant {tenant_id!r} already exists")
        await install_tenant(pool, settings, args.domain, tenant_id)
        await bump_capability_version(pool, tenant_id, tier=args.tier)
        key = await create_key(pool, tenant_id, "created with the tenant")
    print(
        json.dumps({"tenant_id": tenant_id, "tier": args.tier, "key_id": str(key.key_id), "api_key": key.key})
    )
    return 0


def _read_spec(path: str) -> Any:
    try:
        text = sys.stdin.read() if path == "-" else Path(path).read_text(encoding="utf-8")
    except OSError as error:
        raise InputError("file", f"cannot read {path!r}: {error.strerror}") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise InputError("file", f"{path!r} is not JSON: {error}") from None


async def _agents(args: argparse.Namespace, settings: Settings) -> int:
    import uuid

    from master_agent.capabilities import assistants as store
    from master_agent.capabilities import load_tenant
    from master_agent.capabilities.agents import agent_document_schema, live_agents
    from master_agent.runtime import open_resources, tenant_agents
    from master_agent.runtime.graphs import graph_ids

    if args.action == "schema":
        print(json.dumps(agent_document_schema(), indent=2))
        return 0
    async with open_resources(settings) as resources:
        pool = resources.database.pool
        tenant = await load_tenant(pool, args.tenant)
        agents = await live_agents(pool, tenant.tenant_id, tenant.capability_version)

        async def agent(ref: str) -> store.Assistant:
            stored = agents.get(ref) or next((a for a in agents.values() if a.assistant_id == ref), None)
            found = stored and await store.resolve_assistant(
                pool, args.tenant, stored.assistant_id, graph_ids(resources)
            )
            if not found:
                raise InputError("agent", f"no agent {ref!r} of tenant {args.tenant!r}; see 'agents list'")
            return found

        async def versions(current: store.Assistant) -> list[store.AssistantVersion]:
            return await store.assistant_versions(
                pool, args.tenant, current.assistant_id, metadata={}, limit=1000, offset=0
            )

        if args.action == "list":
            rows = [
                {
                    "name": name,
                    "assistant_id": a.assistant_id,
                    "version": a.version,
                    "description": a.document.description,
                }
                for name, a in sorted(agents.items())
            ]
            print(json.dumps(rows, indent=2))
        elif args.action == "show":
            current = await agent(args.agent)
            spec = current.agent_spec()
            if args.version is not None:
                chosen = next((v for v in await versions(current) if v.version == args.version), None)
                if chosen is None:
                    raise InputError("version", f"{args.agent!r} has no version {args.version}")
                spec = store.agent_payload(chosen.config, chosen.context)[0]
            print(json.dumps(spec, indent=2))
        elif args.action == "create":
            made = await tenant_agents.save_assistant(
                resources,
                args.tenant,
                assistant_id=uuid.uuid4(),
                graph_id=store.GRAPH_ID,
                name=None,
                description=None,
                config={},
                context={store.AGENT_SPEC_KEY: _read_spec(args.file)},
                metadata={"created_by": "cli"},
            )
            print(json.dumps(made.model_dump(mode="json", include={"assistant_id", "name", "version"})))
        elif args.action == "update":
            current = await agent(args.agent)
            changed = await tenant_agents.change_assistant(
                resources, args.tenant, current, context={store.AGENT_SPEC_KEY: _read_spec(args.file)}
            )
            print(json.dumps(changed.model_dump(mode="json", include={"assistant_id", "name", "version"})))
        elif args.action == "versions":
            print(
                json.dumps(
                    [
                        {"version": v.version, "created_at": v.created_at.isoformat(), "name": v.name}
                        for v in await versions(await agent(args.agent))
                    ],
                    indent=2,
                )
            )
        elif args.action in ("promote", "rollback"):
            current = await agent(args.agent)
            target = args.version
            if target is None:
                older = sorted(v.version for v in await versions(current) if v.version < current.version)
                if not older:
                    raise InputError(
                        "version", f"{args.agent!r} is at its first version; nothing to roll back to"
                    )
                target = older[-1]
            live = await tenant_agents.promote_version(resources, args.tenant, current, target)
            print(
                json.dumps(
                    {"name": live.name, "assistant_id": str(live.assistant_id), "version": live.version}
                )
            )
        else:
            current = await agent(args.agent)
            await tenant_agents.remove_assistant(resources, args.tenant, current)
            print(json.dumps({"deleted": str(current.assistant_id)}))
    return 0


async def _keys(args: argparse.Namespace, settings: Settings) -> int:
    from master_agent.runtime import open_resources
    from master_agent.service.auth import create_key, list_keys, revoke_key

    async with open_resources(settings, install_demo=args.action == "create") as resources:
        pool = resources.database.pool
        if args.action == "create":
            key = await create_key(pool, args.tenant, args.name)
            print(json.dumps({"tenant_id": key.tenant_id, "key_id": str(key.key_id), "api_key": key.key}))
        elif args.action == "revoke":
            await revoke_key(pool, args.key_id)
            print(json.dumps({"revoked": args.key_id}))
        else:
            print(json.dumps([k.model_dump(mode="json") for k in await list_keys(pool, args.tenant)]))
    return 0


#: The name of the sign-in key ``master-agent console`` makes (it revokes its earlier one).
CONSOLE_KEY_NAME = "console sign-in (master-agent console)"


async def _console(args: argparse.Namespace, settings: Settings, console: Console) -> int:
    from master_agent.runtime import open_resources
    from master_agent.service.auth import create_key, list_keys, revoke_key

    async with open_resources(settings, install_demo=True) as resources:
        pool = resources.database.pool
        for old in await list_keys(pool, args.tenant):
            if old.name == CONSOLE_KEY_NAME and old.revoked_at is None:
                await revoke_key(pool, str(old.key_id))
        key = await create_key(pool, args.tenant, CONSOLE_KEY_NAME)
    host = args.host or settings.host
    port = args.port if args.port is not None else settings.port
    shown_host = f"[{host}]" if ":" in host else host  # an IPv6 address is bracketed in a URL
    console.print(
        f"Web console: http://{shown_host}:{port}/console (start the service with `make serve` or "
        "`master-agent serve`)",
        soft_wrap=True,
    )
    console.print(f"Sign in as {args.tenant} with this key (shown once): {key.key}", soft_wrap=True)
    return 0


def _serve(args: argparse.Namespace, settings: Settings) -> int:
    from master_agent.settings import is_loopback

    args.host = args.host or settings.host
    args.port = args.port if args.port is not None else settings.port
    if settings.auth == "disabled" and not is_loopback(args.host):
        raise InputError(
            "host", f"MASTER_AGENT_AUTH=disabled is allowed only on a loopback address, not {args.host!r}"
        )
    if not 0 < args.port < 65536:
        raise InputError("port", f"{args.port} is not a TCP port")
    if args.workers < 1:
        raise InputError("workers", "at least 1")
    import uvicorn  # after the checks: a refused bind never loads the server

    from master_agent.service.limits import uvicorn_options

    if args.workers > 1:
        from master_agent.domains.assistant.requests import load_verb_head
        from master_agent.service.preload import fork_workers, preload_shared

        preload_shared(also=(load_verb_head,))  # the assistant pack's verb head, read by its warm-up
        fork_workers()
    uvicorn.run(
        "master_agent.service.app:create_app",
        factory=True,
        **uvicorn_options(settings),
        host=args.host,
        port=args.port,
        workers=args.workers,
        log_level="info",
        access_log=args.verbose,
    )
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    import asyncio

    from rich.console import Console

    from master_agent.settings import Settings

    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING, stream=sys.stderr)
    console = Console(stderr=args.command != "terminations" and getattr(args, "json", False))
    error_console = Console(stderr=True)
    try:
        settings = Settings.from_env()
        if args.command == "serve":
            return _serve(args, settings)
        from master_agent.service.graphs import register_graphs  # the graphs the commands run

        register_graphs()
        return asyncio.run(_run(args, settings, console))
    except MasterAgentError as error:
        error_console.print(f"[bold red]error:[/] {error}")
        return EXIT_USAGE
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
