"""Learning counts each measurement once: two solutions for one store delivered together are measured
on the same world, and that world is evidence once (in calibration and in the pattern); another
store's measurement is evidence of its own. Learnings record whether the target was met (what
``confidence`` predicts) and the error of the expected value."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import pytest

from master_agent.domains.retail.simulate import simulate_outcome
from master_agent.evolution.calibration import load_calibration, stratum_of
from master_agent.evolution.clock import FixedClock
from master_agent.evolution.learning import list_learnings
from master_agent.evolution.outcomes import list_checks, run_due
from master_agent.runtime import RuntimeResources, SolveOutcome, SolveRequest, open_resources, solve
from tests.conftest import server_settings

DELIVERED = datetime(2027, 3, 1, 9, tzinfo=UTC)


@pytest.fixture(scope="module")
async def world(
    pg_server_uri: str, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[RuntimeResources]:
    settings = server_settings(pg_server_uri, tmp_path_factory, "evidence", embeddings="hashing")
    async with open_resources(settings) as resources:
        yield resources


async def _solve(world: RuntimeResources, goal: str) -> SolveOutcome:
    world.evolution.clock = FixedClock(DELIVERED)
    outcome = await solve(world, SolveRequest(tenant_id="demo-retail", goal=goal))
    assert outcome.solution is not None and outcome.solution.outcome_checks
    return outcome


async def _measure_all(world: RuntimeResources, solution_id: str) -> None:
    checks = await list_checks(world.evolution, "demo-retail", solution_id)
    world.evolution.clock = FixedClock(checks[-1].due_at + timedelta(hours=1))
    await run_due(world.evolution)


async def test_one_world_is_evidence_once(world: RuntimeResources) -> None:
    goal = "Increase Store 5's accessory attach rate by 20% within 60 days"
    first = await _solve(world, goal)
    twin = await _solve(world, goal)  # asked twice, delivered together: one store, one window
    assert first.solution is not None and twin.solution is not None
    await simulate_outcome(world.database.pool, twin.solution_id, seed=4)
    await _measure_all(world, twin.solution_id)

    learnings = {str(item.solution_id): item for item in await list_learnings(world.evolution, "demo-retail")}
    assert set(learnings) == {first.solution_id, twin.solution_id}
    assert sorted(item.independent for item in learnings.values()) == [False, True]
    for solution, learning in (
        (first.solution, learnings[first.solution_id]),
        (twin.solution, learnings[twin.solution_id]),
    ):
        outcome = solution.expected_outcome or {}
        measured = learning.actual_outcome["value"]  # type: ignore[index]
        assert learning.target_met is (measured >= outcome["target"])
        assert learning.confidence_actual == float(learning.target_met)
        assert learning.expected_value == pytest.approx(outcome["expected"])
        assert learning.expected_error == pytest.approx(measured - outcome["expected"], abs=1e-6)

    counted = (
        learnings[first.solution_id]
        if learnings[first.solution_id].independent
        else learnings[twin.solution_id]
    )
    calibration = await load_calibration(
        world.database.pool,
        counted.problem_type,
        counted.solution_pattern or "",
        stratum_of(first.solution.expected_outcome or {}),
    )
    assert calibration.overall.successes + calibration.overall.failures == 1
    patterns = await world.evolution.knowledge.search("demo-retail", goal, limit=5)
    assert [len(pattern.evidence) for pattern in patterns] in ([], [1])

    # Measuring again adds nothing anywhere.
    await run_due(world.evolution)
    assert len(await list_learnings(world.evolution, "demo-retail")) == 2
    again = await load_calibration(
        world.database.pool,
        counted.problem_type,
        counted.solution_pattern or "",
        stratum_of(first.solution.expected_outcome or {}),
    )
    assert again.overall == calibration.overall

    # Another store is another measurement, counted on its own.
    other = await _solve(world, "Increase Store 3's accessory attach rate by 10% within 60 days")
    await simulate_outcome(world.database.pool, other.solution_id, seed=5)
    await _measure_all(world, other.solution_id)
    [third] = [
        item
        for item in await list_learnings(world.evolution, "demo-retail")
        if str(item.solution_id) == other.solution_id
    ]
    assert third.independent is True
