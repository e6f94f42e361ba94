"""``master-agent`` as a user runs it, on a real database: its entry point called with the command line
(``tests/cli_call.py``), and as a real subprocess where the process itself is what is tested."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli_call import run_cli

GOAL = "Increase Store 5's accessory attach rate by 20% within 60 days"


def run(
    database_uri: str, *args: str, data_dir: Path | None = None, env_extra: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``master-agent *args`` on ``database_uri`` with the offline model: its exit code, stdout and stderr."""
    env = {**os.environ, "DATABASE_URL": database_uri, "MASTER_AGENT_MODEL": "offline", **(env_extra or {})}
    env.pop("OPENAI_API_KEY", None)
    if data_dir is not None:
        env["MASTER_AGENT_DATA_DIR"] = str(data_dir)
    return run_cli(env, *args)


@pytest.fixture(scope="module")
def cli_database(pg_server_uri: str, tmp_path_factory: pytest.TempPathFactory) -> str:
    """A copy of the installed database: migrating an empty one and installing the demo tenants is tested
    by test_migrations and test_embedded_database_when_database_url_is_unset."""
    from tests.conftest import create_database, installed_template

    return create_database(pg_server_uri, "cli", template=installed_template(pg_server_uri, tmp_path_factory))


def test_solve_json_prints_only_the_solution(cli_database: str) -> None:
    done = run(cli_database, "solve", GOAL, "--tenant", "demo-retail", "--json")
    assert done.returncode == 0, done.stderr
    solution = json.loads(done.stdout)
    assert solution["status"] == "success"
    assert {"solution_id", "thread_id", "root_cause", "strategy", "implementation_plan", "playbook",
            "expected_outcome", "confidence", "termination", "steps"} <= set(solution)  # fmt: skip

    listed = run(cli_database, "terminations", "--thread", solution["thread_id"], "--json")
    assert listed.returncode == 0, listed.stderr
    assert {row["agent"] for row in json.loads(listed.stdout)} >= {
        "master_agent",
        "research",
        "data_analysis",
    }


def test_solve_shows_the_live_tree_then_the_solution(cli_database: str) -> None:
    done = run(cli_database, "solve", GOAL)
    assert done.returncode == 0, done.stderr
    assert "master_agent -> research (sub-agent)" in done.stdout
    assert "data_analysis -> staff_attach_correlations (tool)" in done.stdout
    assert "Solution" in done.stdout and "root_cause" in done.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["solve", ""], "goal"),
        (["solve", "x" * 5000], "goal"),
        (["solve", GOAL, "--tenant", "nobody"], "unknown tenant"),
        (["solve", GOAL, "--variant", "bogus"], "ab_test_variant"),
        (["resume", "--thread", "no-such-thread"], "unknown thread"),
        (["console", "--tenant", "nobody"], "unknown tenant"),
        (["meta", "run", "Build an agent system that drafts replies", "--spec", "/no/such.json"], "spec:"),
    ],
)
def test_bad_input_exits_non_zero_with_a_message(cli_database: str, args: list[str], message: str) -> None:
    done = run(cli_database, *args)
    assert done.returncode == 2
    assert message in done.stderr
    assert done.stdout == ""


def test_unknown_complexity_is_a_usage_error(cli_database: str) -> None:
    done = run(cli_database, "solve", GOAL, "--complexity", "epic")
    assert done.returncode == 2
    assert "complexity" in done.stderr


def test_invalid_environment_names_the_variable(cli_database: str) -> None:
    env = {**os.environ, "MAX_DEPTH": "zero"}
    done = subprocess.run(
        [sys.executable, "-m", "master_agent.cli", "migrate"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert done.returncode == 2
    assert "MAX_DEPTH" in done.stderr


#: What the CLI's help and its refusals never load: the agent runtime, the service and the models' code.
HEAVY = ("langgraph", "langchain_core", "langchain_openai", "fastapi", "uvicorn", "numpy", "scipy", "psycopg")
_LOADED = """
import sys
from master_agent.cli import main
try:
    code = main(sys.argv[1:])
except SystemExit as exit_:
    code = exit_.code
print(sorted({name.split(".")[0] for name in sys.modules} & set(sys.argv[0].split(","))), file=sys.stderr)
sys.exit(code)
"""


@pytest.mark.parametrize(
    ("args", "code"),
    [(["--help"], 0), (["agents", "--help"], 0), (["serve", "--host", "0.0.0.0"], 2)],
    ids=["help", "command-help", "refused-serve"],
)
def test_help_and_a_refused_serve_load_no_agent_code(args: list[str], code: int) -> None:
    """The CLI imports lazily: each command imports what it runs, so its help and a bind ``serve`` refuses
    answer in a fraction of a second (the runtime's imports cost seconds)."""
    env = {**os.environ, "MASTER_AGENT_AUTH": "disabled"}
    done = subprocess.run(
        [sys.executable, "-c", _LOADED.replace("sys.argv[0]", repr(",".join(HEAVY))), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert done.returncode == code, done.stderr
    assert done.stderr.splitlines()[-1] == "[]", done.stderr


def test_embedded_database_when_database_url_is_unset(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
    env["MASTER_AGENT_DATA_DIR"] = str(tmp_path / "data")
    try:
        done = subprocess.run(
            [sys.executable, "-m", "master_agent.cli", "migrate"],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        assert (tmp_path / "data" / "pg" / "PG_VERSION").exists()
        again = subprocess.run(
            [sys.executable, "-m", "master_agent.cli", "migrate"],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
        )
        assert again.returncode == 0, again.stderr  # reuses the running server
    finally:
        from pgserver import get_server  # type: ignore[attr-defined]

        get_server(tmp_path / "data" / "pg", cleanup_mode="stop").cleanup()


def test_escalation_prints_the_question_and_resume_continues(cli_database: str) -> None:
    # One iteration is not enough for a strategic goal: the master escalates to a human.
    asked = run(cli_database, "solve", GOAL, "--max-iterations", "1")
    assert asked.returncode == 3, asked.stderr
    assert "escalated to a human" in asked.stdout
    thread = asked.stdout.split("resume --thread ", 1)[1].split()[0]

    waiting = run(cli_database, "resume", "--thread", thread)
    assert waiting.returncode == 2 and "decision" in waiting.stderr

    approved = run(cli_database, "resume", "--thread", thread, "--decision", "approve", "--json")
    assert approved.returncode == 0, approved.stderr
    solution = json.loads(approved.stdout)
    assert solution["status"] == "partial"
    assert solution["termination"]["reason"] == "escalated:max_iterations:approve"


def test_rejected_escalation_exits_non_zero(cli_database: str) -> None:
    asked = run(cli_database, "solve", GOAL, "--max-iterations", "1", "--json")
    assert asked.returncode == 3
    thread = json.loads(asked.stdout)["thread_id"]
    rejected = run(cli_database, "resume", "--thread", thread, "--decision", "reject", "--json")
    assert rejected.returncode == 1
    assert json.loads(rejected.stdout)["status"] == "rejected"


def test_serve_refuses_auth_disabled_off_loopback(cli_database: str) -> None:
    env = {**os.environ, "DATABASE_URL": cli_database, "MASTER_AGENT_AUTH": "disabled"}
    done = subprocess.run(
        [sys.executable, "-m", "master_agent.cli", "serve", "--host", "0.0.0.0"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert done.returncode == 2
    assert "loopback" in done.stderr


def test_tenants_and_keys(cli_database: str) -> None:
    created = run(cli_database, "tenants", "create", "Acme Phones", "--tier", "pro")
    assert created.returncode == 0, created.stderr
    tenant = json.loads(created.stdout)
    assert tenant["tenant_id"] == "acme-phones" and tenant["api_key"].startswith("ma_")
    again = run(cli_database, "tenants", "create", "Acme Phones")
    assert again.returncode == 2 and "already exists" in again.stderr
    key = json.loads(run(cli_database, "keys", "create", "--tenant", "acme-phones").stdout)
    listed = json.loads(run(cli_database, "keys", "list", "--tenant", "acme-phones").stdout)
    assert {k["key_id"] for k in listed} == {tenant["key_id"], key["key_id"]}
    assert all("key" not in k and "key_hash" not in k for k in listed)  # never the key itself
    assert run(cli_database, "keys", "revoke", key["key_id"]).returncode == 0
    revoked = run(cli_database, "keys", "revoke", key["key_id"])
    assert revoked.returncode == 2 and "no active key" in revoked.stderr
    assert run(cli_database, "keys", "create", "--tenant", "nobody").returncode == 2

    # `master-agent console` (the end of `make demo`): the address and a new sign-in key, whose previous
    # one it revokes.
    for _ in range(2):
        shown = run(cli_database, "console", "--tenant", "acme-phones", "--port", "8123")
        assert shown.returncode == 0, shown.stderr
        assert "http://127.0.0.1:8123/console" in shown.stdout
    # Without --host and --port: where `master-agent serve` listens, as configured.
    configured = run(
        cli_database,
        "console",
        "--tenant",
        "acme-phones",
        env_extra={"MASTER_AGENT_HOST": "127.0.0.2", "MASTER_AGENT_PORT": "8765"},
    )
    assert "http://127.0.0.2:8765/console" in configured.stdout, configured.stderr
    shown = run(cli_database, "console", "--tenant", "acme-phones", "--port", "8123")
    [sign_in_key] = re.findall(r"\bma_[\w-]{20,}", shown.stdout)
    listed = json.loads(run(cli_database, "keys", "list", "--tenant", "acme-phones").stdout)
    console_keys = [k for k in listed if k["name"].startswith("console sign-in")]
    assert [k["revoked_at"] is None for k in console_keys] == [False, False, False, True]
    assert sign_in_key.startswith(console_keys[-1]["prefix"])


def test_evolution_commands_report_bad_input_with_exit_2(cli_database: str, tmp_path: Path) -> None:
    for args, field in [
        (("outcomes", "run-due", "--as-of", "next tuesday"), "as-of"),
        (("demo", "simulate-outcome", "--solution", "not-a-uuid"), "solution_id"),
        (("playbooks", "deploy", "--file", str(tmp_path / "missing.json")), "file"),
        (("playbooks", "disable", "00000000-0000-0000-0000-000000000000"), "playbook_id"),
        (("outcomes", "list", "--solution", "x"), "solution"),
    ]:
        result = run(cli_database, *args)
        assert result.returncode == 2, (args, result.stdout, result.stderr)
        assert field in result.stderr, (args, result.stderr)


def test_solve_then_deploy_track_and_measure_from_the_cli(cli_database: str, tmp_path: Path) -> None:
    solved = run(
        cli_database, "solve", "Increase Store 5's accessory attach rate by 20% within 60 days", "--json"
    )
    assert solved.returncode == 0, solved.stderr
    solution = json.loads(solved.stdout)
    assert len(solution["outcome_checks"]) == 4 and solution["calibrated_confidence"] is not None

    deployed = run(cli_database, "playbooks", "deploy", "--solution", solution["solution_id"])
    assert deployed.returncode == 0, deployed.stderr
    playbook = json.loads(deployed.stdout)
    assert playbook["status"] == "active" and playbook["next_run_at"]
    executed = json.loads(run(cli_database, "playbooks", "run", playbook["playbook_id"]).stdout)
    assert executed["status"] in ("success", "skipped") and executed["run_id"]

    checks = json.loads(run(cli_database, "outcomes", "list", "--solution", solution["solution_id"]).stdout)
    final_day = max(check["due_at"] for check in checks)[:10]
    simulated = run(cli_database, "demo", "simulate-outcome", "--solution", solution["solution_id"])
    assert simulated.returncode == 0, simulated.stderr
    assert (
        run(cli_database, "demo", "simulate-outcome", "--solution", solution["solution_id"]).returncode == 2
    )

    measured = run(cli_database, "outcomes", "run-due", "--as-of", final_day)
    assert measured.returncode == 0, measured.stderr
    mine = [r for r in json.loads(measured.stdout) if r["check_id"] in solution["outcome_checks"]]
    assert len(mine) == 4 and mine[-1]["learned"] is True
    learnings = json.loads(run(cli_database, "learnings", "list").stdout)
    assert solution["solution_id"] in [item["solution_id"] for item in learnings]
    rebuilt = json.loads(run(cli_database, "knowledge", "reembed", "--all").stdout)
    assert rebuilt["rebuilt"] >= 1


def test_agents_lifecycle_from_the_cli(cli_database: str, tmp_path: Path) -> None:
    spec = {
        "name": "refund_counter",
        "description": "Counts refunded sales per store.",
        "queries": [
            {
                "name": "refunds_per_store",
                "description": "Refunded sales per store.",
                "sql": "SELECT store_id, count(*) FILTER (WHERE refunded) AS refunds FROM transactions GROUP BY 1",
            }
        ],
    }
    path = tmp_path / "agent.json"
    path.write_text(json.dumps(spec))
    made = run(cli_database, "agents", "create", "--file", str(path))
    assert made.returncode == 0, made.stderr
    assert json.loads(made.stdout)["version"] == 1
    path.write_text(json.dumps({**spec, "description": "Counts refunded sales of each store."}))
    assert (
        json.loads(run(cli_database, "agents", "update", "refund_counter", "--file", str(path)).stdout)[
            "version"
        ]
        == 2
    )
    listed = json.loads(run(cli_database, "agents", "list").stdout)
    assert [(a["name"], a["version"]) for a in listed] == [("refund_counter", 2)]
    versions = json.loads(run(cli_database, "agents", "versions", "refund_counter").stdout)
    assert [v["version"] for v in versions] == [2, 1]
    back = json.loads(run(cli_database, "agents", "rollback", "refund_counter").stdout)
    assert back["version"] == 1
    shown = json.loads(run(cli_database, "agents", "show", "refund_counter").stdout)
    assert shown["description"] == "Counts refunded sales per store."
    assert (
        json.loads(run(cli_database, "agents", "promote", "refund_counter", "--version", "2").stdout)[
            "version"
        ]
        == 2
    )

    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({**spec, "name": "other_counter", "tools": ["nope"], "sub_agents": ["nobody"]}))
    refused = run(cli_database, "agents", "create", "--file", str(bad))
    assert refused.returncode == 2
    assert "tools[0]" in refused.stderr and "sub_agents[0]" in refused.stderr
    assert "other_counter" not in run(cli_database, "agents", "list").stdout  # nothing stored
    assert run(cli_database, "agents", "create", "--file", str(tmp_path / "missing.json")).returncode == 2

    assert run(cli_database, "agents", "delete", "refund_counter").returncode == 0
    assert json.loads(run(cli_database, "agents", "list").stdout) == []
    assert run(cli_database, "agents", "show", "refund_counter").returncode == 2
    assert "properties" in json.loads(run(cli_database, "agents", "schema").stdout)


def test_demo_assistant_runs_the_six_scenarios(cli_database: str, tmp_path: Path) -> None:
    from master_agent.domains.assistant.local_servers import LocalServers

    try:
        done = run(cli_database, "demo", "assistant", data_dir=tmp_path)
    finally:
        LocalServers(tmp_path).stop()
    assert done.returncode == 0, done.stdout + done.stderr
    for scenario in range(1, 7):
        assert f"{scenario}. " in done.stdout
    assert done.stdout.count("ok ") == 9
    assert "FAILED" not in done.stdout
    assert "Preview (not done yet, high risk): send_email." in done.stdout


def _thread_row(database_uri: str, thread_id: str) -> tuple[str, dict[str, object]] | None:
    import psycopg

    with psycopg.connect(database_uri) as conn:
        row = conn.execute(
            "SELECT tenant_id, metadata FROM threads WHERE thread_id = %s", (thread_id,)
        ).fetchone()
    return (row[0], row[1]) if row else None


def test_a_system_request_from_the_cli_has_its_tenants_thread(cli_database: str, tmp_path: Path) -> None:
    done = run(
        cli_database,
        "meta",
        "run",
        "Build an agent system that tags support tickets as billing or technical",
        "--tenant",
        "demo-retail",
        "--json",
        data_dir=tmp_path,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    request_id = json.loads(done.stdout)["request_id"]
    import psycopg

    with psycopg.connect(cli_database) as conn:
        found = conn.execute(
            "SELECT thread_id FROM meta_requests WHERE request_id = %s", (request_id,)
        ).fetchone()
    assert found is not None
    assert _thread_row(cli_database, str(found[0])) == ("demo-retail", {"graph_id": "meta"})


def test_demo_lending_then_its_audit_trail(cli_database: str, tmp_path: Path) -> None:
    done = run(cli_database, "demo", "lending", data_dir=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "decision APPROVED by rule emi_within_half_salary" in done.stdout
    assert "Customer: Rohan Mehta" in done.stdout and "Sanctioned amount: INR 500,000.00" in done.stdout
    thread = done.stdout.split("--thread ")[-1].split()[0]
    # The conversation's thread is the tenant's, as one begun on /chat/stream is: the API and the console
    # find it.
    assert _thread_row(cli_database, thread) == ("demo-lending", {"channel": "chat"})

    listed = run(cli_database, "audit", "--tenant", "demo-lending", "--thread", thread, "--json")
    assert listed.returncode == 0, listed.stderr
    events = [json.loads(line) for line in listed.stdout.splitlines()]
    assert {event["thread_id"] for event in events} == {thread}
    assert [e["detail"]["to_stage"] for e in events if e["kind"] == "transition"][-1] == "CLOSURE"
    assert [e["detail"]["document"] for e in events if e["kind"] == "document"] == [
        "salary_slip",
        "sanction_letter",
    ]
    transitions = run(
        cli_database, "audit", "--tenant", "demo-lending", "--thread", thread, "--kind", "transition"
    )
    assert transitions.returncode == 0 and transitions.stdout.count("transition") == 6

    for args, field in (
        (("--kind", "gossip"), "kind"),
        (("--thread", "not-a-thread"), "thread"),
        (("--tenant", "nobody"), "tenant"),
    ):
        refused = run(cli_database, "audit", *args)
        assert refused.returncode == 2 and f"{field}:" in refused.stderr, (args, refused.stderr)
