"""The retail goal solved end to end on real Postgres with the offline planner."""

from __future__ import annotations

from typing import Any

import pytest

from master_agent.capabilities import bump_capability_version, install_tenant
from master_agent.errors import InputError, UnknownTenantError
from master_agent.runtime import RuntimeResources, SolveRequest, master_graph, resume, solve
from master_agent.runtime.solve import record_chat_goal
from tests.call_tree import flatten_steps

GOAL = "Increase Store 5's accessory attach rate by 20% within 60 days"


async def _count_solutions(resources: RuntimeResources) -> int:
    async with resources.database.pool.connection() as conn:
        row = await (await conn.execute("SELECT count(*) AS n FROM solutions")).fetchone()
    assert row is not None
    return int(row["n"])


async def test_retail_goal_end_to_end(resources: RuntimeResources) -> None:
    events: list[dict[str, Any]] = []
    outcome = await solve(
        resources, SolveRequest.parse(tenant_id="demo-retail", goal=GOAL), on_event=events.append
    )
    assert outcome.status == "success"
    solution = outcome.solution
    assert solution is not None
    assert solution.root_cause is not None and solution.root_cause["driver"] == "tenure_months"
    assert any("Pearson r" in line for line in solution.root_cause["evidence"])
    assert solution.strategy is not None and solution.strategy["intervention_id"]
    assert solution.implementation_plan is not None and solution.implementation_plan["phases"]
    assert solution.playbook is not None and solution.playbook["trigger"]["cron"]
    assert {"trigger", "steps", "success_metrics", "rollback"} <= set(solution.playbook)
    outcome_fields = solution.expected_outcome or {}
    assert 0.025 <= outcome_fields["baseline"] <= 0.035
    assert outcome_fields["target"] == pytest.approx(outcome_fields["baseline"] * 1.2, abs=1e-3)
    assert outcome_fields["timeline_days"] == 60
    assert solution.confidence >= 0.75
    assert solution.metrics is not None and len(solution.metrics["by_month"]) == 6  # attach rate by period
    assert solution.termination["reason"] == "completed"
    calls = flatten_steps(solution.steps)
    assert max(depth for depth, _, _ in calls) == 2  # three levels: master, sub-agent, sub-sub-agent
    assert (1, "research", "data_analysis") in calls
    assert (2, "data_analysis", "staff_attach_correlations") in calls
    assert (1, "strategy_generator", "ab_test_designer") in calls
    assert (1, "implementation_planner", "playbook_generator") in calls
    # the live event stream saw every call, nested ones included
    started = {(e["depth"], e["agent"], e["tool"]) for e in events if e["event"] == "call_start"}
    assert started == set(calls)
    async with resources.database.pool.connection() as conn:
        row = await (
            await conn.execute(
                "SELECT status, solution FROM solutions WHERE thread_id = %s", (outcome.thread_id,)
            )
        ).fetchone()
        stops = await (
            await conn.execute(
                "SELECT agent, depth FROM termination_log WHERE thread_id = %s", (outcome.thread_id,)
            )
        ).fetchall()
    assert row is not None and row["status"] == "success"
    assert row["solution"]["solution_id"] == outcome.solution_id
    assert {(s["agent"], s["depth"]) for s in stops} == {
        ("master_agent", 0),
        ("research", 1),
        ("data_analysis", 2),
        ("strategy_generator", 1),
        ("ab_test_designer", 2),
        ("implementation_planner", 1),
        ("resource_estimator", 2),
        ("risk_assessor", 2),
        ("playbook_generator", 2),
    }


async def test_same_goal_same_solution(resources: RuntimeResources) -> None:
    request = SolveRequest.parse(tenant_id="demo-retail", goal=GOAL)
    first, second = await solve(resources, request), await solve(resources, request)
    assert first.solution is not None and second.solution is not None
    ignore = {"solution_id", "thread_id", "termination", "outcome_checks"}
    assert first.solution.model_dump(exclude=ignore) == second.solution.model_dump(exclude=ignore)


async def test_resume_of_a_finished_thread_returns_its_solution(resources: RuntimeResources) -> None:
    done = await solve(resources, SolveRequest.parse(tenant_id="demo-retail", goal=GOAL))
    again = await resume(resources, done.thread_id)
    assert again.solution == done.solution
    with pytest.raises(InputError, match="decision"):
        await resume(resources, done.thread_id, "approve")


@pytest.mark.parametrize(
    ("values", "field"),
    [
        ({"goal": "   "}, "goal"),
        ({"goal": "x" * 4001}, "goal"),
        ({"goal": GOAL, "ab_test_variant": "bogus"}, "ab_test_variant"),
        ({"goal": GOAL, "complexity": "epic"}, "complexity"),
        ({"goal": GOAL, "timeline_days": 1}, "timeline_days"),
    ],
)
async def test_bad_requests_name_the_field_and_store_nothing(
    resources: RuntimeResources, values: dict[str, Any], field: str
) -> None:
    before = await _count_solutions(resources)
    with pytest.raises(InputError) as error:
        await solve(resources, SolveRequest.parse(tenant_id="demo-retail", **values))
    assert error.value.field == field
    assert await _count_solutions(resources) == before


async def test_unknown_tenant_and_sub_agent_store_nothing(resources: RuntimeResources) -> None:
    before = await _count_solutions(resources)
    with pytest.raises(UnknownTenantError):
        await solve(resources, SolveRequest.parse(tenant_id="nobody", goal=GOAL))
    with pytest.raises(InputError, match="sub_agents"):
        await solve(resources, SolveRequest.parse(tenant_id="demo-retail", goal=GOAL, sub_agents=["oracle"]))
    assert await _count_solutions(resources) == before


async def test_tier_decides_which_sub_agents_exist(resources: RuntimeResources) -> None:
    await install_tenant(resources.database.pool, resources.settings, "retail", "free-shop")
    await bump_capability_version(resources.database.pool, "free-shop", tier="free")
    outcome = await solve(resources, SolveRequest.parse(tenant_id="free-shop", goal=GOAL))
    assert outcome.solution is not None
    tools = {tool for _, _, tool in flatten_steps(outcome.solution.steps)}
    assert "research" in tools
    assert not tools & {"strategy_generator", "implementation_planner"}
    assert outcome.status == "partial"
    assert any("strategy" in item for item in outcome.solution.limitations)


async def test_graph_cache_hits_until_capabilities_change(resources: RuntimeResources) -> None:
    await install_tenant(resources.database.pool, resources.settings, "retail", "cache-shop")
    config = {"configurable": {"tenant_id": "cache-shop", "complexity": "strategic"}}
    first = await master_graph(resources, config)  # type: ignore[arg-type]
    assert await master_graph(resources, config) is first  # type: ignore[arg-type]
    await bump_capability_version(resources.database.pool, "cache-shop", enabled_sub_agents=["research"])
    changed = await master_graph(resources, config)  # type: ignore[arg-type]
    assert changed is not first
    offered = changed.get_graph().nodes  # the graph shape itself is the same loop
    assert "agent" in offered
    outcome = await solve(resources, SolveRequest.parse(tenant_id="cache-shop", goal=GOAL))
    assert outcome.solution is not None
    assert {tool for _, _, tool in flatten_steps(outcome.solution.steps)} >= {"research"}
    assert "strategy_generator" not in {tool for _, _, tool in flatten_steps(outcome.solution.steps)}


async def test_simple_goals_allow_one_level_only(resources: RuntimeResources) -> None:
    outcome = await solve(
        resources, SolveRequest.parse(tenant_id="demo-retail", goal="What is the attach rate of Store 5?")
    )
    assert outcome.solution is not None
    depths = {depth for depth, _, _ in flatten_steps(outcome.solution.steps)}
    assert depths == {0, 1}
    assert outcome.solution.metrics is not None and outcome.solution.metrics["store_id"] == 5


async def test_without_complexity_or_goal_a_goal_input_is_solved_at_its_complexity(
    resources: RuntimeResources,
) -> None:
    import uuid

    config: Any = {"configurable": {"tenant_id": "demo-retail"}}
    graph = await master_graph(resources, config, checkpointer=resources.database.checkpointer)
    assert set(graph.get_graph().nodes) >= {"route", "solve"}  # the front door, a goal skips its routing

    def run_config() -> Any:
        return {"configurable": {**config["configurable"], "thread_id": str(uuid.uuid4())}}

    simple = await graph.ainvoke({"goal": "What is the attach rate of Store 5?"}, run_config())
    assert {depth for depth, _, _ in flatten_steps(simple["steps"])} == {0, 1}
    strategic = await graph.ainvoke({"goal": GOAL}, run_config())
    assert max(depth for depth, _, _ in flatten_steps(strategic["steps"])) == 2
    assert strategic["envelope"]["status"] == "success"


async def test_a_goal_is_solved_for_the_target_and_deadline_it_states(resources: RuntimeResources) -> None:
    outcome = await solve(
        resources,
        SolveRequest(
            goal="We need to double Store 5's accessory attach rate in the next six months.",
            tenant_id="demo-retail",
        ),
    )
    assert outcome.solution is not None
    expected = outcome.solution.expected_outcome or {}
    assert expected["target"] == pytest.approx(2 * expected["baseline"], abs=1e-4)
    assert expected["target_terms"]["form"] == "multiple"
    assert expected["timeline_days"] >= 180  # six months, not the default 60 days


async def test_a_goal_without_a_store_asks_which_and_an_unknown_store_is_named(
    resources: RuntimeResources,
) -> None:
    asked = await solve(
        resources,
        SolveRequest(
            goal="Increase accessory attach rate by 15% over the next quarter", tenant_id="demo-retail"
        ),
    )
    assert asked.status == "interrupted" and asked.interrupt is not None
    assert "Which store" in asked.interrupt["question"] and "5" in asked.interrupt["question"]
    answered = await resume(resources, asked.thread_id, "Store 6")
    assert answered.solution is not None and (answered.solution.expected_outcome or {}).get("store_id") == 6
    unknown = await solve(
        resources,
        SolveRequest(goal="Raise Store 12's attach rate by 2 points within 60 days", tenant_id="demo-retail"),
    )
    assert unknown.status == "interrupted" and "no Store 12" in (unknown.interrupt or {})["question"]


async def test_a_goal_without_a_target_is_asked_for_one_and_a_past_level_is_measured(
    resources: RuntimeResources,
) -> None:
    asked = await solve(
        resources,
        SolveRequest(
            goal="Improve the accessory attach rate at Store 6 before Easter", tenant_id="demo-retail"
        ),
    )
    assert asked.status == "interrupted" and asked.interrupt is not None
    assert asked.interrupt["fields"] == ["target"]
    answered = await resume(resources, asked.thread_id, "let's say 9%")
    assert answered.solution is not None
    expected = answered.solution.expected_outcome or {}
    assert expected["target"] == pytest.approx(0.09) and expected["target_terms"]["form"] == "absolute"
    # "its July level" is Store 3's July rate, read from its rows; a year the data lacks is asked.
    back = await solve(
        resources,
        SolveRequest(
            goal="Return Store 3's attach rate to its July level within twelve weeks", tenant_id="demo-retail"
        ),
    )
    async with resources.database.pool.connection() as conn:
        row = await (
            await conn.execute(
                "SELECT avg(CASE WHEN accessory_attached THEN 1.0 ELSE 0.0 END) AS v "
                "FROM tenant_demo_retail.transactions WHERE store_id = 3 "
                "AND sold_at >= '2026-07-01' AND sold_at < '2026-08-01'"
            )
        ).fetchone()
    assert back.solution is not None and row is not None
    level = back.solution.expected_outcome or {}
    assert level["target"] == pytest.approx(float(row["v"]), abs=1e-4)
    assert level["target_terms"]["form"] == "absolute"
    unmeasured = await solve(
        resources,
        SolveRequest(
            goal="Put Store 3's attach rate back to last year's level by May", tenant_id="demo-retail"
        ),
    )
    assert unmeasured.status == "interrupted" and "no rows" in (unmeasured.interrupt or {})["question"]


async def test_a_goal_on_a_figure_the_data_lacks_is_out_of_scope_and_one_without_strategy_is_measured(
    resources: RuntimeResources,
) -> None:
    lacking = await solve(
        resources,
        SolveRequest(
            goal="Increase warranty attach rate at Store 5 by 10% within 90 days", tenant_id="demo-retail"
        ),
    )
    assert lacking.solution is not None and lacking.status != "success"
    assert (lacking.solution.handoff or {})["kind"] == "out_of_scope"
    assert "warranty attach rate" in (lacking.solution.handoff or {})["missing"]
    assert lacking.solution.strategy is None and lacking.solution.expected_outcome is None
    measured = await solve(
        resources,
        SolveRequest(
            goal="Get Store 3's refund rate down to 2% by the end of January", tenant_id="demo-retail"
        ),
    )
    assert measured.solution is not None and measured.status == "partial"
    facts = (measured.solution.handoff or {})["facts"]
    assert facts["metric"] == "refund rate" and facts["store_id"] == 3 and facts["observations"] > 0
    assert measured.solution.strategy is None  # no attach-rate plan for a refund goal


async def test_a_goal_held_to_some_days_of_the_week_gets_no_plan_measured_on_every_day(
    resources: RuntimeResources,
) -> None:
    weekends = await solve(
        resources,
        SolveRequest(goal="Store 4 weekday attach up to 7% by the end of April", tenant_id="demo-retail"),
    )
    assert weekends.solution is not None and weekends.status != "success"
    assert (weekends.solution.handoff or {})["kind"] == "no_strategy"
    assert "weekdays" in str((weekends.solution.handoff or {})["missing"])
    assert weekends.solution.strategy is None


@pytest.mark.parametrize(
    ("goal", "store", "condition"),
    [
        # Said of the figure before it, in the singular and after a possessive, or by the hours of a day.
        ("Lift store 6's weekend attach rate to 8% by the end of March", 6, "isodow IN (6, 7)"),
        ("Push Friday attach at store 2 to 9% within 10 weeks", 2, "isodow = 5"),
        ("store 8: attach rate after 7pm up to 7% by April", 8, "hour >= 19"),
    ],
)
async def test_a_goal_held_to_some_days_or_hours_is_measured_on_them_beside_every_sale(
    resources: RuntimeResources, goal: str, store: int, condition: str
) -> None:
    answer = await solve(resources, SolveRequest(goal=goal, tenant_id="demo-retail"))
    assert answer.solution is not None and answer.status == "partial"
    handoff = answer.solution.handoff or {}
    assert handoff["kind"] == "no_strategy" and answer.solution.strategy is None
    facts = handoff["facts"]
    recent = (
        "sold_at > (SELECT max(sold_at) FROM tenant_demo_retail.transactions) - interval '90 days' "
        f"AND store_id = {store}"
    )
    kept = condition.replace("isodow", "extract(isodow FROM sold_at AT TIME ZONE 'UTC')").replace(
        "hour", "extract(hour FROM sold_at AT TIME ZONE 'UTC')"
    )
    async with resources.database.pool.connection() as conn:
        row = await (
            await conn.execute(
                "SELECT avg(accessory_attached::int)::float AS part, count(*) AS n, "
                f"(SELECT avg(accessory_attached::int)::float FROM tenant_demo_retail.transactions WHERE {recent}) "
                f"AS every FROM tenant_demo_retail.transactions WHERE {recent} AND {kept}"
            )
        ).fetchone()
    assert row is not None
    assert facts["value"] == pytest.approx(row["part"]) and facts["observations"] == row["n"]
    assert facts["every_row_value"] == pytest.approx(row["every"])


async def test_a_day_of_the_week_said_as_the_means_keeps_the_plan_on_every_sale(
    resources: RuntimeResources,
) -> None:
    # The target is the store's attach rate; the weekend is how to get there, not the rows it is held to.
    planned = await solve(
        resources,
        SolveRequest(
            goal="Grow store 5's attach rate to 6.5% by 31 March, mostly through better weekend rotas",
            tenant_id="demo-retail",
        ),
    )
    assert planned.solution is not None
    assert (planned.solution.handoff or {}).get("kind") != "no_strategy"
    assert planned.solution.strategy is not None


async def test_a_goal_on_data_the_tenant_lacks_in_words_like_its_figures_is_out_of_scope(
    resources: RuntimeResources,
) -> None:
    # "turnover" alone is the takings; the staff's turnover is data the tenant does not have.
    turnover = await solve(
        resources, SolveRequest(goal="Halve staff turnover at store 4 next year", tenant_id="demo-retail")
    )
    assert turnover.solution is not None and turnover.status != "success"
    assert (turnover.solution.handoff or {})["kind"] == "out_of_scope"
    assert (turnover.solution.handoff or {})["missing"] == ["staff turnover"]
    assert turnover.solution.strategy is None and turnover.solution.expected_outcome is None
    # Overtime hours are no training hours, however near "hours" puts them.
    overtime = await solve(
        resources,
        SolveRequest(goal="Reduce overtime hours at Store 2 by 15% this quarter", tenant_id="demo-retail"),
    )
    assert overtime.solution is not None and overtime.status != "success"
    assert (overtime.solution.handoff or {})["kind"] == "out_of_scope"
    assert (overtime.solution.handoff or {})["missing"] == ["overtime hours"]


async def test_a_goal_whose_words_name_no_figure_is_placed_by_its_meaning(
    resources: RuntimeResources,
) -> None:
    # No figure's name in the words: the nearest of the pack's problem descriptions says what it is about.
    visits = await solve(
        resources,
        SolveRequest(goal="Get more people walking into Store 3 before spring", tenant_id="demo-retail"),
    )
    assert visits.solution is not None and visits.status != "success"
    assert (visits.solution.handoff or {})["kind"] == "out_of_scope"
    assert visits.solution.strategy is None
    phones = await solve(
        resources,
        SolveRequest(goal="Sell more phones at Store 2 over the next two months", tenant_id="demo-retail"),
    )
    assert phones.solution is not None and phones.status == "partial"
    # More phones sold is a count of phone sales (the transactions), not the money they bring.
    assert (phones.solution.handoff or {})["facts"]["metric"] == "transactions"
    assert phones.solution.strategy is None
    # The strategy's own figure in other words still gets its plan.
    cases = await solve(
        resources,
        SolveRequest(
            goal="Make Store 4 shoppers leave with a case or charger more often, 15% more within 60 days",
            tenant_id="demo-retail",
        ),
    )
    assert cases.solution is not None and cases.solution.strategy is not None


async def test_a_deadline_that_has_passed_is_asked_about(resources: RuntimeResources) -> None:
    passed = await solve(
        resources,
        SolveRequest(
            goal="Raise Store 6's attach rate by 10% by the end of September 2026", tenant_id="demo-retail"
        ),
    )
    assert passed.status == "interrupted" and passed.interrupt is not None
    assert "already passed" in passed.interrupt["question"]
    # A deadline of today leaves no time: asked about, never replaced by a default horizon.
    today = await solve(
        resources,
        SolveRequest(goal="Get Store 1's attach rate up 10% by close of play today", tenant_id="demo-retail"),
    )
    assert today.status == "interrupted" and today.interrupt is not None
    assert "leaves no time" in today.interrupt["question"]


async def test_a_chat_goal_recorded_again_by_a_retried_run_stays_one_solution(
    resources: RuntimeResources,
) -> None:
    values: dict[str, Any] = {
        "envelope": {"status": "partial", "confidence_band": "PARTIAL"},
        "solution": {"strategy": {"name": "Run the bundle play at Store 2"}},
    }
    thread = "7d1c6f4e-1d36-4a43-9d58-0b9f8a0d7a11"
    before = await _count_solutions(resources)
    first = await record_chat_goal(resources, "demo-retail", thread, "Lift Store 2", values, "run-1")
    again = await record_chat_goal(resources, "demo-retail", thread, "Lift Store 2", values, "run-1")
    assert again.solution_id == first.solution_id
    assert await _count_solutions(resources) == before + 1
    other = await record_chat_goal(resources, "demo-retail", thread, "Lift Store 2", values, "run-2")
    assert other.solution_id != first.solution_id
    assert await _count_solutions(resources) == before + 2
