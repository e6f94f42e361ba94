"""The whole loop on real Postgres: solve, track, simulate, measure, learn, calibrate, reuse.

It runs on its own database: the patterns it learns would otherwise give other tests' goals the short
path."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import pytest

from master_agent.domains.retail.simulate import simulate_outcome
from master_agent.errors import ConflictError, InputError
from master_agent.evolution.calibration import load_calibration, stratum_of
from master_agent.evolution.clock import FixedClock, SystemClock
from master_agent.evolution.knowledge import KnowledgeStore
from master_agent.evolution.learning import list_learnings, pattern_confidence
from master_agent.evolution.outcomes import list_checks, run_check, run_due
from master_agent.models.embeddings import LocalMiniLMEmbedder
from master_agent.runtime import RuntimeResources, SolveOutcome, SolveRequest, open_resources, solve
from master_agent.settings import Settings
from tests.conftest import server_settings

FIRST_GOAL = "Increase Store 5's accessory attach rate by 20% within 60 days"
SECOND_GOAL = "Help me increase accessory attach rate at my electronics store"


@pytest.fixture(scope="module")
def loop_settings(pg_server_uri: str, tmp_path_factory: pytest.TempPathFactory) -> Settings:
    return server_settings(pg_server_uri, tmp_path_factory, "evo", embeddings="hashing")


@pytest.fixture(scope="module")
async def world(loop_settings: Settings) -> AsyncIterator[RuntimeResources]:
    async with open_resources(loop_settings) as resources:
        yield resources


@pytest.fixture(scope="module")
async def first(world: RuntimeResources) -> SolveOutcome:
    return await solve(world, SolveRequest(tenant_id="demo-retail", goal=FIRST_GOAL, deploy_playbook=True))


async def _count(world: RuntimeResources, query: str, *params: object) -> int:
    async with world.database.pool.connection() as conn:
        row = await (await conn.execute(query, params)).fetchone()
    assert row is not None
    return int(next(iter(row.values())))


async def test_delivery_schedules_checks_at_the_seed_checkpoints(
    world: RuntimeResources, first: SolveOutcome
) -> None:
    assert first.solution is not None and first.status == "success"
    assert first.solution.reused_pattern is None  # nothing learned yet
    # The goal asked for the playbook to be put in place: the agent deployed it, for this solution.
    deployed = first.solution.deployed_playbook
    assert deployed is not None and deployed["status"] == "active" and deployed["schedule"] == "0 9 * * MON"
    [step] = [step for step in first.solution.steps if step["tool"] == "deploy_playbook"]
    assert step["status"] == "success" and step["depth"] == 0
    linked = await _count(
        world,
        "SELECT count(*) FROM playbooks WHERE playbook_id = %s AND solution_id = %s",
        deployed["playbook_id"],
        first.solution_id,
    )
    assert linked == 1
    assert first.solution.calibrated_confidence == pytest.approx(first.solution.confidence)  # no outcomes yet
    checks = await list_checks(world.evolution, "demo-retail", first.solution_id)
    assert [check.checkpoint_day for check in checks] == [14, 30, 45, 60]
    assert [str(check.check_id) for check in checks] == first.solution.outcome_checks
    delivered = checks[0].due_at - timedelta(days=14)
    assert [check.due_at - delivered for check in checks] == [timedelta(days=d) for d in (14, 30, 45, 60)]
    assert [check.is_final for check in checks] == [False, False, False, True]
    outcome = first.solution.expected_outcome or {}
    assert checks[-1].expected == pytest.approx(outcome["expected"])
    ramp = outcome["baseline"] + (outcome["expected"] - outcome["baseline"]) * 14 / 60
    assert checks[0].expected == pytest.approx(ramp, abs=1e-6)
    # another tenant sees none of them
    assert await list_checks(world.evolution, "demo-retail-2", first.solution_id) == []


async def test_outcome_measured_learned_and_reused(world: RuntimeResources, first: SolveOutcome) -> None:
    assert first.solution is not None
    checks = await list_checks(world.evolution, "demo-retail", first.solution_id)
    evolution = world.evolution

    # Nothing is due before the first checkpoint.
    evolution.clock = FixedClock(checks[0].due_at - timedelta(minutes=1))
    assert await run_due(evolution) == []
    assert (await run_check(evolution, checks[0].check_id)).status == "not_due"

    simulated = await simulate_outcome(world.database.pool, first.solution_id, seed=3)
    assert simulated.store_id == 5 and simulated.intervention_id == first.solution.strategy["intervention_id"]  # type: ignore[index]
    with pytest.raises(ConflictError):
        await simulate_outcome(world.database.pool, first.solution_id, seed=3)

    # The clock seam: everything due by the final day runs now, oldest first.
    evolution.clock = FixedClock(checks[-1].due_at + timedelta(hours=1))
    results = await run_due(evolution)
    assert [result.check_id for result in results] == [check.check_id for check in checks]
    assert all(result.status == "measured" and result.measured is not None for result in results)
    assert [result.learned for result in results] == [False, False, False, True]
    # The measurement reads the simulated rows: after the ramp-up the effect is there.
    baseline = first.solution.expected_outcome["baseline"]  # type: ignore[index]
    assert results[-1].measured > baseline + 0.01  # type: ignore[operator]

    # Idempotent: running again stores nothing new.
    assert await run_due(evolution) == []
    again = await run_check(evolution, checks[-1].check_id)
    assert again.status == "already_done" and again.measured == results[-1].measured
    assert (
        await _count(
            world, "SELECT count(*) FROM solution_learnings WHERE solution_id = %s", first.solution_id
        )
        == 1
    )

    [learning] = await list_learnings(evolution, "demo-retail")
    assert learning.success is True and learning.confidence_actual == 1.0
    assert learning.confidence_delta == pytest.approx(1.0 - first.solution.confidence, abs=1e-3)
    assert learning.solution_pattern == first.solution.strategy["intervention_id"]  # type: ignore[index]
    assert await list_learnings(evolution, "demo-retail-2") == []  # row-level security

    # Calibration moved from the raw confidence toward the observed success.
    stratum = stratum_of(first.solution.expected_outcome or {})
    calibration = await load_calibration(
        world.database.pool, learning.problem_type, learning.solution_pattern or "", stratum
    )
    assert calibration.overall.successes == calibration.within.successes == 1
    assert calibration.calibrate(0.5) > 0.5

    # A shared, anonymised pattern now exists, and the next similar goal of another tenant reuses it.
    [pattern] = await evolution.knowledge.search("demo-retail-2", SECOND_GOAL, limit=1)
    assert pattern.visibility == "shared" and "Store 5" not in pattern.description
    assert pattern.evidence and "solution_id" not in pattern.evidence[0]
    evolution.clock = SystemClock()
    second = await solve(world, SolveRequest(tenant_id="demo-retail-2", goal=SECOND_GOAL))
    assert second.status == "success" and second.solution is not None
    reused = second.solution.reused_pattern
    assert reused is not None and reused["pattern_id"] == str(pattern.pattern_id)
    tools = {step["tool"] for step in second.solution.steps}
    # Only the pattern travels: this tenant's root cause is measured on its own data, not copied.
    assert "research" in tools and "strategy_generator" in tools
    assert second.solution.root_cause is not None and first.solution.root_cause is not None
    assert second.solution.root_cause["driver"] == first.solution.root_cause["driver"]
    assert second.solution.root_cause["evidence"] != first.solution.root_cause["evidence"]
    assert second.solution.strategy["intervention_id"] == first.solution.strategy["intervention_id"]  # type: ignore[index]
    assert second.solution.calibrated_confidence is not None
    assert second.solution.calibrated_confidence > second.solution.confidence  # one success observed
    assert second.solution.deployed_playbook is None  # not asked for: nothing deployed
    assert await _count(world, "SELECT count(*) FROM playbooks") == 1  # the first goal's only
    assert (
        await _count(
            world, "SELECT reuse_count FROM village_knowledge WHERE pattern_id = %s", pattern.pattern_id
        )
        == 1
    )


async def test_simulating_needs_a_delivered_solution(world: RuntimeResources) -> None:
    with pytest.raises(InputError, match="solution_id"):
        await simulate_outcome(world.database.pool, "not-a-uuid")
    with pytest.raises(InputError, match="unknown solution"):
        await simulate_outcome(world.database.pool, "00000000-0000-0000-0000-000000000000")


async def test_a_new_embedder_sees_nothing_until_reembed(world: RuntimeResources) -> None:
    hashing = world.evolution.knowledge
    assert await hashing.search("demo-retail-2", SECOND_GOAL), "the loop above learned a pattern"
    local = KnowledgeStore(world.database.pool, LocalMiniLMEmbedder())
    assert await local.search("demo-retail-2", SECOND_GOAL) == []  # vectors of another space never mix
    assert await local.reembed() >= 1
    [found] = await local.search("demo-retail-2", SECOND_GOAL, limit=1)
    assert found.similarity >= local.embedder.reuse_min_similarity
    assert await hashing.search("demo-retail-2", SECOND_GOAL) == []
    assert await hashing.reembed() >= 1  # and back
    assert await hashing.reembed() == 0  # nothing stale is left


async def test_a_failure_weakens_the_pattern_it_used(world: RuntimeResources) -> None:
    evolution = world.evolution
    [before] = await evolution.knowledge.search("demo-retail-2", SECOND_GOAL, limit=1)
    # Far more than any intervention can deliver: the reused pattern will not reach it.
    goal = f"{SECOND_GOAL} by 400%"
    # Delivered after the earlier reuse's measurement window: a measurement of its own (one window
    # of one store's world is evidence once).
    evolution.clock = FixedClock(datetime.now(UTC) + timedelta(days=90))
    outcome = await solve(world, SolveRequest(tenant_id="demo-retail-2", goal=goal))
    assert outcome.solution is not None and outcome.solution.reused_pattern is not None
    assert outcome.solution.reused_pattern["pattern_id"] == str(before.pattern_id)
    await simulate_outcome(world.database.pool, outcome.solution_id, seed=5)
    checks = await list_checks(evolution, "demo-retail-2", outcome.solution_id)
    evolution.clock = FixedClock(checks[-1].due_at + timedelta(hours=1))
    try:
        results = await run_due(evolution)
    finally:
        evolution.clock = SystemClock()
    assert results and results[-1].learned
    [learning] = [
        item
        for item in await list_learnings(evolution, "demo-retail-2")
        if str(item.solution_id) == outcome.solution_id
    ]
    assert learning.success is False and (learning.confidence_delta or 0) < 0
    after = await evolution.knowledge.get("demo-retail-2", before.pattern_id)
    assert after is not None
    # run-due also judged the earlier reuse (a success); this goal's failure is the last use.
    assert len(after.evidence) == len(before.evidence) + sum(result.learned for result in results)
    assert after.evidence[-1]["success"] is False
    assert after.confidence < pattern_confidence(after.evidence[:-1])[0]
    assert after.success_rate is not None and after.success_rate < 1.0
