"""The A/B variants of the master graph: planner_first (a plan DAG built into a graph) and
parallel_research (research sub-agents at once, merged by the agent)."""

from __future__ import annotations

from typing import Any

import pytest

from master_agent.models.offline import design_plan
from master_agent.runtime import RuntimeResources, SolveRequest, solve
from master_agent.runtime.planning import ExecutionPlan
from tests.call_tree import flatten_steps

GOAL = "Increase Store 5's accessory attach rate by 20% within 60 days"
SAME = {"root_cause", "strategy", "implementation_plan", "playbook", "expected_outcome", "metrics", "risks"}


def test_offline_plan_orders_tools_by_what_they_need_and_provide() -> None:
    request = {
        "known": ["city_id"],
        "tools": [
            {"name": "lookup", "required": ["city_id"], "optional": [], "provides": []},
            {"name": "advise", "required": ["forecast"], "optional": ["budget"], "provides": ["advice"]},
            {
                "name": "forecast",
                "required": ["question", "city_id"],
                "optional": [],
                "provides": ["forecast"],
            },
            {"name": "sql", "required": ["sql"], "optional": [], "provides": []},
        ],
    }
    plan = ExecutionPlan.model_validate(design_plan(request))
    assert [(s.agent, s.depends_on) for s in plan.steps] == [
        ("lookup", []),
        ("forecast", []),
        ("advise", ["s2"]),
    ]
    plan.check({"lookup", "advise", "forecast", "sql"})


@pytest.mark.parametrize(
    ("steps", "problem"),
    [
        ([{"id": "a", "agent": "x"}, {"id": "a", "agent": "x"}], "used twice"),
        ([{"id": "a", "agent": "nope"}], "not available"),
        ([{"id": "a", "agent": "x", "depends_on": ["b"]}, {"id": "b", "agent": "x"}], "not earlier steps"),
        ([{"id": "a b", "agent": "x"}], "letters"),
    ],
)
def test_invalid_plans_are_refused_with_the_reason(steps: list[dict[str, Any]], problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        ExecutionPlan.model_validate({"steps": steps}).check({"x"})


async def test_planner_first_builds_the_graph_from_the_plan(resources: RuntimeResources) -> None:
    control = await solve(resources, SolveRequest.parse(tenant_id="demo-retail", goal=GOAL))
    planned = await solve(
        resources, SolveRequest.parse(tenant_id="demo-retail", goal=GOAL, ab_test_variant="planner_first")
    )
    assert planned.status == "success" and planned.solution is not None and control.solution is not None
    assert planned.solution.model_dump(include=SAME) == control.solution.model_dump(include=SAME)
    top = [step["tool"] for step in planned.solution.steps]
    assert sorted(top) == ["attach_rate_metrics", "implementation_planner", "research", "strategy_generator"]
    assert planned.solution.termination["iterations"] == 1  # one planning call, no agent turns
    async with resources.database.pool.connection() as conn:
        row = await (
            await conn.execute(
                "SELECT count(*) AS n FROM checkpoints WHERE thread_id = %s AND checkpoint_ns LIKE 'run_plan:%%'",
                (planned.thread_id,),
            )
        ).fetchone()
    assert row is not None and row["n"] > 0  # the plan graph ran as a checkpointed subgraph


async def test_parallel_research_runs_research_sub_agents_at_once(resources: RuntimeResources) -> None:
    outcome = await solve(
        resources, SolveRequest.parse(tenant_id="demo-retail", goal=GOAL, ab_test_variant="parallel_research")
    )
    assert outcome.status == "success" and outcome.solution is not None
    calls = flatten_steps(outcome.solution.steps)
    first_two = [tool for depth, _, tool in calls if depth == 0][:2]
    assert first_two == ["research", "data_analysis"]
    assert (1, "data_analysis", "staff_attach_correlations") in calls  # data analysis called by the master
    assert outcome.solution.root_cause is not None and outcome.solution.strategy is not None
