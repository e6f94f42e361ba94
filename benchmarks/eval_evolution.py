"""``make eval-evolution``: a simulated world in which the loop learns, printed as it goes.

Four retailers (the two demo tenants and two more with their own generated stores) set goals for
their stores, asking for lifts from 10 % to 80 %. Each solution is delivered, its world simulated
after the intervention (the catalogue's hidden true effect, with noise), measured on its final day
and learned from. World time moves 65 days per outcome, so no two measurement windows overlap.

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
from pathlib import Path

import numpy as np
from benchmarks.evolution import scratch_database

from master_agent.domains.retail.data import DemoProfile, install
from master_agent.domains.retail.simulate import simulate_outcome
from master_agent.evolution.clock import FixedClock
from master_agent.evolution.outcomes import list_checks, run_due
from master_agent.runtime import SolveRequest, open_resources, solve
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


def _brier(predicted: list[float], observed: list[bool]) -> float:
    return statistics.mean((p - float(y)) ** 2 for p, y in zip(predicted, observed, strict=True))


async def main() -> None:
    rng = np.random.default_rng(2027)
    with tempfile.TemporaryDirectory(prefix="ma-eval-") as data_dir:
        base = Settings.from_env()
        settings = base.with_overrides(
            model="offline", data_dir=Path(data_dir) if base.database_url is None else base.data_dir
        )
        async with open_resources(settings) as resources:
            server_uri = resources.database.uri
        with scratch_database(server_uri) as scratch_uri:
            async with open_resources(settings.with_overrides(database_url=scratch_uri)) as resources:
                for tenant_id, profile in EXTRA_TENANTS.items():
                    await install(resources.database.pool, tenant_id, profile)
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
                print(f"{'all':>9} {statistics.mean(success):>8.2f} {_brier(raw, success):>10.3f} "
                      f"{_brier(calibrated, success):>17.3f} {statistics.mean(lift_errors):>15.2f} "
                      f"{statistics.mean(reused):>6.2f}  "
                      f"({len(success)} outcomes)")  # fmt: skip
        if base.database_url is None:
            from pgserver import get_server  # type: ignore[attr-defined]

            get_server(Path(data_dir) / "pg", cleanup_mode="stop").cleanup()


if __name__ == "__main__":
    asyncio.run(main())
