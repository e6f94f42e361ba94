"""The meta-orchestrator's pure parts: the failure table (every rule, every match logged), the compile
validation of seed 004 section 6.3 (each failure mode as a clear error), the offline designers, the
history cap and structured changes."""

from __future__ import annotations

from typing import Any

import pytest

from master_agent.errors import InputError
from master_agent.meta.artifacts import (
    MAX_EVAL_CASES,
    Change,
    SystemSpec,
    apply_changes,
    diff_changes,
    parse_artifact,
    read_section,
)
from master_agent.meta.broker import HISTORY_CAP, HistoryEntry, fold_history
from master_agent.meta.compiler import CompileFailed, compile_system, validate_system
from master_agent.meta.design import design_eval, design_prompts, design_system, design_tools, parse_steps
from master_agent.meta.failures import FailureSignals, classify_failure
from master_agent.meta.graph import parse_request
from master_agent.meta.playbooks import BUDGET_CEILINGS

TRIAGE = "Build an agent system that triages incoming support tickets by urgency and drafts replies"

SINGLE_RULE_SIGNALS: list[tuple[int, str, dict[str, Any]]] = [
    (1, "tooling", {"tool_errors": [{"tool": "crm", "error_type": "timeout", "count": 2}]}),
    (2, "architect", {"routing_anomalies": [{"kind": "loop", "node": "draft", "count": 7}]}),
    (3, "architect", {"state_anomalies": [{"kind": "type_mismatch", "key": "urgency"}]}),
    (
        4,
        "eval",
        {"metric_failures": [{"metric": "coverage", "kind": "coverage", "expected": 1, "actual": 0.5}]},
    ),
    (
        5,
        "prompt_policy",
        {"metric_failures": [{"metric": "pass_rate", "kind": "reasoning", "expected": 0.8, "actual": 0.4}]},
    ),
    (
        6,
        "ops",
        {
            "metric_failures": [
                {"metric": "latency_p95_ms", "kind": "latency", "expected": 100, "actual": 900}
            ]
        },
    ),
    (7, "prompt_policy", {"tool_errors": [{"tool": "crm", "error_type": "misuse"}]}),
    (
        8,
        "architect",
        {"compile_errors": [{"kind": "unbounded_recursion", "where": "edges", "message": "loop"}]},
    ),
    (
        9,
        "tooling",
        {"compile_errors": [{"kind": "missing_contract", "where": "x", "message": "no contract"}]},
    ),
    (10, "architect", {"state_anomalies": [{"kind": "growth", "key": "messages"}]}),
]


@pytest.mark.parametrize(("priority", "route", "signals"), SINGLE_RULE_SIGNALS)
def test_each_rule_of_the_table_routes_its_failure(
    priority: int, route: str, signals: dict[str, Any]
) -> None:
    result = classify_failure(FailureSignals.model_validate(signals))
    assert (result.priority, result.route_to) == (priority, route)
    assert [m.priority for m in result.matched] == [priority]


def test_below_the_loop_threshold_is_no_loop_and_the_default_rule_wins() -> None:
    result = classify_failure(
        FailureSignals.model_validate({"routing_anomalies": [{"kind": "loop", "node": "a", "count": 3}]})
    )
    assert result.priority == 10


def test_the_highest_priority_wins_and_every_matching_rule_is_logged() -> None:
    signals = FailureSignals.model_validate(
        {
            "tool_errors": [{"tool": "crm", "error_type": "auth"}, {"tool": "kb", "error_type": "logic"}],
            "routing_anomalies": [{"kind": "loop", "node": "draft", "count": 9}],
            "metric_failures": [{"metric": "p95", "kind": "latency", "expected": 1, "actual": 2}],
        }
    )
    result = classify_failure(signals)
    assert result.route_to == "tooling" and result.priority == 1
    assert [(m.priority, m.route_to) for m in result.matched] == [
        (1, "tooling"),
        (2, "architect"),
        (6, "ops"),
        (7, "prompt_policy"),
    ]
    assert "crm: auth x1" in result.matched[0].evidence


def _designed(runtime: str = "langgraph") -> tuple[SystemSpec, Any, Any]:
    system = design_system(TRIAGE, None, runtime)  # type: ignore[arg-type]
    return system, design_prompts(system), design_tools(system)


def test_the_offline_architect_designs_one_component_per_clause() -> None:
    assert [(s.verb, s.criterion) for s in parse_steps(TRIAGE)] == [("triage", "urgency"), ("draft", None)]
    system, _, tools = _designed()
    assert system.name == "support_ticket_triage"
    assert [(c.id, c.inputs, c.outputs) for c in system.components] == [
        ("triage", ["ticket"], ["urgency"]),
        ("draft", ["ticket", "urgency"], ["reply"]),
    ]
    assert validate_system(system, tools) == []
    cases = design_eval(system).cases
    assert {c.expect["urgency"] for c in cases} == {"high", "medium", "low"}


@pytest.mark.parametrize("runtime", ["langgraph", "deepagent", "hybrid"])
def test_each_runtime_target_compiles_to_its_config(runtime: str) -> None:
    system, prompts, tools = _designed(runtime)
    compiled = compile_system(system, prompts, tools)
    assert compiled.runtime_target == runtime
    expected = {
        "langgraph": {"langgraph", "agents"},
        "deepagent": {"deepagent", "agents"},
        "hybrid": {"langgraph", "agents", "deepagent", "boundaries"},
    }[runtime]
    assert set(compiled.config) == expected
    agents = {agent["name"]: agent for agent in compiled.config["agents"]}
    system_agent = compiled.config["agents"][-1]
    assert system_agent["name"] == "support_ticket_triage"
    # Components first, each an agent of the loop with its tool; the system last, naming them.
    triage, draft = "support_ticket_triage_triage", "support_ticket_triage_draft"
    assert agents[triage]["runtime"] == agents[draft]["runtime"] == "loop"
    assert [q["name"] for q in agents[triage]["queries"]] == ["support_ticket_triage_triage_urgency"]
    if runtime == "langgraph":
        assert list(agents) == [triage, draft, "support_ticket_triage"]
        assert (system_agent["runtime"], system_agent["sub_agents"]) == ("loop", [triage, draft])
    elif runtime == "deepagent":
        # A deepagents harness whose sub-agents (spawned through its task tool) are the components.
        assert (system_agent["runtime"], system_agent["sub_agents"]) == ("deepagents", [triage, draft])
        assert system_agent["limits"]["max_spawns"] == 2
    else:
        # The graph zone (triage) stays a loop sub-agent; the recursion zone (draft) runs in one deep
        # agent that takes what crosses the boundary and answers what the zone writes.
        zone = agents["support_ticket_triage_recursion"]
        assert (zone["runtime"], zone["sub_agents"]) == ("deepagents", [draft])
        assert set(zone["input_schema"]["required"]) == {"ticket", "urgency"}
        assert list(zone["output_schema"]["properties"]) == ["reply"]
        assert zone["limits"]["timeout_s"] == 60.0
        assert (system_agent["runtime"], system_agent["sub_agents"]) == (
            "loop",
            [triage, "support_ticket_triage_recursion"],
        )


def _broken(change: list[Change], runtime: str = "langgraph") -> SystemSpec:
    system, _, _ = _designed(runtime)
    payload = apply_changes(system.model_dump(mode="json"), change)
    return SystemSpec.model_validate(payload)


COMPILE_FAILURES: list[tuple[str, list[Change], str]] = [
    (
        "schema_inconsistency",
        [Change(op="append", path="components.draft.state_reads", value="tone")],
        "'tone' is not in state_schema",
    ),
    (
        "schema_inconsistency",
        [
            Change(op="remove", path="components.triage.state_writes"),
            Change(op="set", path="components.triage.outputs", value=[]),
        ],
        "reads 'urgency', which no component writes",
    ),
    ("undefined_handoff", [Change(op="set", path="contracts.components", value=[])], "no component contract"),
    (
        "unbounded_recursion",
        [
            Change(op="append", path="edges", value={"source": "draft", "target": "triage"}),
            Change(op="set", path="components.triage.max_iterations", value=None),
            Change(op="set", path="components.draft.max_iterations", value=None),
            Change(op="set", path="safety_reliability.loop_breakers", value={}),
        ],
        "has no loop breaker",
    ),
    (
        "missing_contract",
        [Change(op="append", path="components.draft.tool_usage", value="send_email")],
        "'send_email' has no ToolContract",
    ),
    ("missing_budget", [Change(op="set", path="components.draft.budget", value=None)], "no budget"),
]


@pytest.mark.parametrize(("kind", "changes", "message"), COMPILE_FAILURES)
def test_compile_refuses_each_failure_mode_with_its_kind(
    kind: str, changes: list[Change], message: str
) -> None:
    system = _broken(changes)
    _, prompts, tools = _designed()
    with pytest.raises(CompileFailed) as failed:
        compile_system(system, prompts, tools)
    assert any(e.kind == kind and message in e.message for e in failed.value.errors), failed.value.errors
    routed = classify_failure(FailureSignals(compile_errors=failed.value.errors))
    assert routed.route_to == ("tooling" if kind == "missing_contract" else "architect")


def test_recursion_needs_a_spawn_policy_and_hybrid_boundaries_need_both_sides() -> None:
    tools = _designed()[2]
    deep = _broken([Change(op="set", path="deepagent_ext.spawn_policy.max_depth", value=None)], "deepagent")
    assert [e.kind for e in validate_system(deep, tools)] == ["unbounded_recursion"]
    hybrid = _broken(
        [Change(op="set", path="hybrid_ext.boundary_contracts.0.recursion_side", value=None)], "hybrid"
    )
    errors = validate_system(hybrid, tools)
    assert {e.kind for e in errors} == {"boundary_mismatch"}
    assert any("recursion_side is not defined" in e.message for e in errors)
    assert any("triage -> draft has no contract" in e.message for e in errors)


def test_history_is_capped_with_the_oldest_entries_summarised() -> None:
    history = [
        HistoryEntry(phase=f"p{i % 3}", decision="d", outcome="o", timestamp=str(i))
        for i in range(HISTORY_CAP)
    ]
    assert fold_history(history) == history
    history = fold_history([*history, HistoryEntry(phase="p9", decision="d", outcome="o", timestamp="x")])
    assert len(history) == 27 and history[0].folded == 25 and history[0].phase == "summary"
    assert history[1].timestamp == "25"
    for i in range(30):
        history = fold_history(
            [*history, HistoryEntry(phase="q", decision="d", outcome="o", timestamp=f"n{i}")]
        )
    assert len(history) <= HISTORY_CAP and history[0].folded + len(history) - 1 == HISTORY_CAP + 31


def test_sections_and_changes_address_list_items_by_id() -> None:
    system, _, _ = _designed()
    payload = system.model_dump(mode="json")
    assert read_section(payload, "components.draft.inputs") == ["ticket", "urgency"]
    assert read_section(payload, "components.1.id") == "draft"
    with pytest.raises(InputError, match="no 'nope'"):
        read_section(payload, "components.nope")
    with pytest.raises(InputError, match=r"components\.0\.budget\.max_steps"):
        parse_artifact(
            "SystemSpec",
            apply_changes(payload, [Change(op="set", path="components.triage.budget.max_steps", value=0)]),
        )


def test_a_structured_diff_applies_back_to_the_revised_artifact() -> None:
    system, prompts, tools = _designed()
    before = system.model_dump(mode="json")
    revisions = [
        # one field deep inside a list item (by id), an item removed, an item appended, a key dropped
        apply_changes(before, [Change(op="set", path="components.triage.budget.max_tool_calls", value=2)]),
        {**before, "components": before["components"][1:]},
        {**before, "components": [*before["components"], {**before["components"][0], "id": "audit"}]},
        {key: value for key, value in before.items() if key != "langgraph_ext"},
        # a reordered list is set whole
        {**before, "components": list(reversed(before["components"]))},
    ]
    for after in revisions:
        changes = diff_changes(before, after)
        assert changes and apply_changes(before, changes) == after
    assert diff_changes(before, before) == []
    assert [c.path for c in diff_changes(before, revisions[0])] == ["components.triage.budget.max_tool_calls"]
    assert [c.op for c in diff_changes(before, revisions[1])] == ["remove"]
    payload = prompts.model_dump(mode="json")
    policy = apply_changes(payload, [Change(op="append", path="prompts.draft.policies", value="Be kind.")])
    assert apply_changes(payload, diff_changes(payload, policy)) == policy
    assert tools.tools and diff_changes(tools.model_dump(mode="json"), tools.model_dump(mode="json")) == []


@pytest.mark.parametrize(
    ("request_body", "field"),
    [
        ({"budgets": {"eval": {"max_spawns": 10**9}}}, "request.budgets.eval.max_spawns"),
        ({"budgets": {"global": {"max_tokens": 10**9}}}, "request.budgets.global.max_tokens"),
        ({"budgets": {"eval": {"max_steps": -1}}}, "request.budgets.eval.max_steps"),
        (
            {
                "artifacts": {
                    "EvalSpec": {
                        "cases": [
                            {"id": f"c{n}", "inputs": {"ticket": "x"}} for n in range(MAX_EVAL_CASES + 1)
                        ]
                    }
                }
            },
            "request.artifacts.EvalSpec.cases",
        ),
    ],
    ids=["spawns 10^9", "global tokens 10^9", "negative steps", "too many cases"],
)
def test_a_request_beyond_the_documented_limits_is_refused_naming_the_field(
    request_body: dict[str, Any], field: str
) -> None:
    with pytest.raises(InputError) as refused:
        parse_request({"text": "Evaluate the triage system", **request_body})
    assert refused.value.field == field
    ceiling = BUDGET_CEILINGS.get(field.rsplit(".", 1)[-1])  # type: ignore[call-overload]
    if ceiling is not None:
        assert f"{ceiling:,}" in refused.value.reason


def test_the_largest_budgets_allowed_are_accepted() -> None:
    request = parse_request({"text": "Build a triage system", "budgets": {"global": dict(BUDGET_CEILINGS)}})
    assert request.budgets["global"]["max_spawns"] == BUDGET_CEILINGS["max_spawns"]
