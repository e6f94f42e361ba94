"""``make eval-evolution``: a simulated world in which the loop learns, printed as it goes.

Four retailers (the two demo tenants and two more with their own generated stores) set goals for
their stores, asking for lifts from 10 % to 80 %. Each solution is delivered, its world simulated
after the intervention (the catalogue's hidden true effect, with noise), measured on its final day
and learned from. World time moves 65 days per outcome, so no two measurement windows overlap.

Then a labelled set of goals asks whether reuse decides on the problem: paraphrases of the learned
problem for other stores and tenants must take the short path; unrelated goals, and attach-rate goals
of a retailer whose attach rate follows training rather than tenure (the learned cause does not hold
there), must not. It prints reuse recall and false reuse, and every goal decided wrongly.

Printed per window of outcomes: the success rate (the target met by the deadline, which is what
``confidence`` predicts), the Brier score of the agents' raw confidence and of the calibrated
confidence (lower is better), the mean absolute error of the expected lift in points (how far the
measured value landed from the expected one), and the reuse rate (goals that took the short path).
"""

from __future__ import annotations

import asyncio
import statistics
import tempfile
from datetime import UTC, datetime, timedelta

import numpy as np
from benchmarks.evolution import scratch_database
from benchmarks.service import embedded_server_stopped, exit_on_signals

from master_agent.capabilities import provision_tenant_readers
from master_agent.domains.retail.data import DemoProfile, install
from master_agent.domains.retail.simulate import simulate_outcome
from master_agent.evolution.clock import FixedClock, SystemClock
from master_agent.evolution.outcomes import list_checks, run_due
from master_agent.runtime import RuntimeResources, SolveRequest, open_resources, solve
from master_agent.settings import Settings

OUTCOMES = 60
WINDOW = 10
WORLD_START = datetime(2027, 1, 4, 9, tzinfo=UTC)
EXTRA_TENANTS = {
    "eval-north": DemoProfile("North electronics (3 stores)", 101, (1, 2, 3)),
    "eval-south": DemoProfile("South electronics (2 stores)", 202, (1, 2)),
}
STORES = {
    "demo-retail": (1, 2, 3, 4, 5, 6, 7, 8),
    "demo-retail-2": (1,),
    "eval-north": (1, 2, 3),
    "eval-south": (1, 2),
}
TARGETS = (10, 20, 40, 60, 80)
#: A retailer whose attach rate follows training hours, not tenure: learned tenure patterns must not
#: stand in for research at its stores.
TRAINING_DRIVEN = (
    "eval-west",
    DemoProfile("West electronics (training-driven)", 303, (1, 2, 3), "training_hours"),
)
#: (tenant, goal): paraphrases of the learned problem, for other stores and tenants.
MUST_REUSE = [
    ("demo-retail", "Help me get more accessory sales per handset at Store 8 over the next two months"),
    ("demo-retail", "Raise the accessory attach rate at Store 2 by 15 percent in 90 days"),
    ("demo-retail", "Store 3 needs to sell more accessories with each phone - lift it 25% this quarter"),
    ("demo-retail", "Our Store 1 sells too few cases and chargers per device; fix it within 8 weeks"),
    ("demo-retail", "Boost the share of phone sales that include an accessory at Store 4 by 30% in 60 days"),
    ("demo-retail", "Improve the attach rate for accessories at Store 6"),
    ("demo-retail", "Get customers at Store 7 to buy a case or charger with their new phone more often"),
    ("demo-retail", "Accessory attach at Store 5 is too low; raise it 10% in 45 days"),
    ("demo-retail", "More accessories per phone sold at Store 2, please - aim for +20% by the end of March"),
    ("demo-retail", "Increase how many device buyers at Store 4 also pick up a case or a charger"),
    ("demo-retail-2", "We want more add-on accessory sales with each handset sold"),
    ("demo-retail-2", "Increase accessory attachment on device sales by 20% within two months"),
    ("demo-retail-2", "My store's customers rarely buy accessories with their phones. Fix that in 60 days"),
    ("eval-north", "Too few of Store 3's phone buyers leave with an accessory. Double it by spring"),
    ("eval-north", "Lift accessories-per-device at Store 1 by 15% over 60 days"),
    ("eval-north", "Sell more screen protectors and chargers alongside phones at Store 2"),
    ("eval-north", "Increase Store 2's accessory attach rate by 30% within 90 days"),
    ("eval-south", "Store 1 should attach accessories to more of its device sales this quarter"),
    ("eval-south", "Help Store 2 improve how often accessories are added to phone purchases"),
    ("eval-south", "Grow accessory attach rate at Store 1 by 12% over the next 8 weeks"),
]
#: (tenant, goal): other problems, and the learned problem where its cause does not hold.
MUST_NOT_REUSE = [
    ("demo-retail", "Reduce staff turnover at Store 3 by 10% within 90 days"),
    ("demo-retail", "Increase foot traffic at Store 2 by 15% in two months"),
    ("demo-retail", "Cut device returns at Store 4 by 20% within 60 days"),
    ("demo-retail", "Improve customer satisfaction scores at Store 6 this quarter"),
    ("demo-retail", "Increase extended warranty attach rate at Store 3 by 20%"),
    ("demo-retail", "Raise accessory margins at Store 5 by 5 points without losing volume"),
    ("eval-north", "Increase handset unit sales at Store 1 by 15% in 60 days"),
    ("eval-north", "Grow online orders by 30% in 60 days"),
    ("eval-south", "Increase average basket value at Store 2 by 10%"),
    ("eval-south", "Lower inventory shrinkage at Store 1 by half this year"),
    ("demo-retail", "Get more people to sign up for our loyalty program at Store 6"),
    ("demo-retail", "Improve Store 4's Google review rating to 4.5 stars"),
    ("demo-retail-2", "Increase trade-in volumes of old phones"),
    ("eval-north", "Reduce the number of out-of-stock phone cases at Store 2"),
    ("eval-south", "Cut electricity spend at Store 2 by 15%"),
    ("eval-west", "Increase Store 1's accessory attach rate by 20% within 60 days"),
    ("eval-west", "Help me get more accessory sales per handset at Store 2 over the next two months"),
    ("eval-west", "Store 3 needs to sell more accessories with each phone - lift it 25% this quarter"),
    ("eval-west", "Raise the accessory attach rate at Store 2 by 15 percent in 90 days"),
    ("eval-west", "Boost the share of phone sales that include an accessory at Store 1 by 30% in 60 days"),
    ("eval-west", "Improve the attach rate for accessories at Store 3"),
    ("eval-west", "Get customers at Store 1 to buy a case or charger with their new phone more often"),
    ("eval-west", "Increase accessory attachment on device sales at Store 3 by 20% within two months"),
]


def _brier(predicted: list[float], observed: list[bool]) -> float:
    return statistics.mean((p - float(y)) ** 2 for p, y in zip(predicted, observed, strict=True))


async def _reused(resources: RuntimeResources, tenant: str, goal: str) -> bool:
    outcome = await solve(resources, SolveRequest(tenant_id=tenant, goal=goal))
    return outcome.solution is not None and outcome.solution.reused_pattern is not None


async def _reuse_decisions(resources: RuntimeResources) -> None:
    """Reuse recall and false reuse on the labelled goals, after the world above was learned."""
    resources.evolution.clock = SystemClock()
    hits = [await _reused(resources, tenant, goal) for tenant, goal in MUST_REUSE]
    false = [await _reused(resources, tenant, goal) for tenant, goal in MUST_NOT_REUSE]
    print(
        f"reuse on {len(MUST_REUSE) + len(MUST_NOT_REUSE)} labelled goals: recall "
        f"{statistics.mean(hits):.2f} ({sum(hits)}/{len(hits)}), false reuse {statistics.mean(false):.2f} "
        f"({sum(false)}/{len(false)})"
    )
    for (tenant, goal), reused in zip(MUST_REUSE, hits, strict=True):
        if not reused:
            print(f"  missed: {tenant}: {goal!r}")
    for (tenant, goal), reused in zip(MUST_NOT_REUSE, false, strict=True):
        if reused:
            print(f"  reused wrongly: {tenant}: {goal!r}")


async def main() -> None:
    rng = np.random.default_rng(2027)
    with (
        tempfile.TemporaryDirectory(prefix="ma-eval-") as scratch,
        embedded_server_stopped(scratch) as data_dir,
    ):
        base = Settings.from_env()
        settings = base.with_overrides(
            model="offline", data_dir=data_dir if base.database_url is None else base.data_dir
        )
        async with open_resources(settings) as resources:
            server_uri = resources.database.uri
        with scratch_database(server_uri) as scratch_uri:
            async with open_resources(settings.with_overrides(database_url=scratch_uri)) as resources:
                for tenant_id, profile in [*EXTRA_TENANTS.items(), TRAINING_DRIVEN]:
                    await install(resources.database.pool, tenant_id, profile)
                await provision_tenant_readers(resources.database.pool, resources.settings)
                evolution = resources.evolution
                tenants = list(STORES)
                raw: list[float] = []
                calibrated: list[float] = []
                success: list[bool] = []
                reused: list[bool] = []
                lift_errors: list[float] = []
                print(
                    f"{'outcomes':>9} {'success':>8} {'Brier raw':>10} {'Brier calibrated':>17} "
                    f"{'MAE lift (pts)':>15} {'reuse':>6}"
                )
                for index in range(OUTCOMES):
                    tenant = tenants[index % len(tenants)]
                    store = int(rng.choice(STORES[tenant]))
                    target = int(rng.choice(TARGETS))
                    goal = f"Increase Store {store}'s accessory attach rate by {target}% within 60 days"
                    delivered = WORLD_START + timedelta(days=65 * index)
                    evolution.clock = FixedClock(delivered)
                    outcome = await solve(resources, SolveRequest(tenant_id=tenant, goal=goal))
                    solution = outcome.solution
                    if solution is None or not solution.outcome_checks:
                        print(f"  ({tenant}: {goal!r} ended {outcome.status}; not tracked)")
                        continue
                    await simulate_outcome(resources.database.pool, solution.solution_id, seed=index)
                    checks = await list_checks(evolution, tenant, solution.solution_id)
                    evolution.clock = FixedClock(checks[-1].due_at + timedelta(hours=1))
                    await run_due(evolution)
                    async with resources.database.pool.connection() as conn:
                        row = await (
                            await conn.execute(
                                "SELECT target_met, expected_error FROM solution_learnings WHERE solution_id = %s",
                                (solution.solution_id,),
                            )
                        ).fetchone()
                    if row is None:
                        continue
                    raw.append(solution.confidence)
                    calibrated.append(solution.calibrated_confidence or solution.confidence)
                    success.append(bool(row["target_met"]))
                    lift_errors.append(abs(float(row["expected_error"])) * 100)
                    reused.append(solution.reused_pattern is not None)
                    if len(success) % WINDOW == 0:
                        window = slice(len(success) - WINDOW, len(success))
                        print(f"{len(success) - WINDOW + 1:>4}-{len(success):<4} {statistics.mean(success[window]):>8.2f} "
                              f"{_brier(raw[window], success[window]):>10.3f} "
                              f"{_brier(calibrated[window], success[window]):>17.3f} "
                              f"{statistics.mean(lift_errors[window]):>15.2f} "
                              f"{statistics.mean(reused[window]):>6.2f}")  # fmt: skip
                await _reuse_decisions(resources)
                print(f"{'all':>9} {statistics.mean(success):>8.2f} {_brier(raw, success):>10.3f} "
                      f"{_brier(calibrated, success):>17.3f} {statistics.mean(lift_errors):>15.2f} "
                      f"{statistics.mean(reused):>6.2f}  "
                      f"({len(success)} outcomes)")  # fmt: skip


if __name__ == "__main__":
    exit_on_signals()
    asyncio.run(main())
