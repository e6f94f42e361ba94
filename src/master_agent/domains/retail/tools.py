"""Retail plain tools, bound to one tenant's data. Every figure comes from a read-only query."""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable
from datetime import date, timedelta
from typing import Any

from langchain_core.tools import BaseTool, StructuredTool
from pydantic import BaseModel, Field

from master_agent.capabilities.terms import GoalTarget
from master_agent.capabilities.tools import ReadOnlySql, ToolContext
from master_agent.domains.retail import analytics
from master_agent.domains.retail.schemas import ExpectedOutcome, RootCause, Strategy, TargetTerms
from master_agent.errors import ToolInputError
from master_agent.untrusted.sql_text import SqlText

#: Staff attributes whose relation to attach rate the analysis tests.
STAFF_ATTRIBUTES = ("tenure_months", "training_hours")

STORE_METRICS = """
SELECT count(*) AS transactions,
       avg(accessory_attached::int)::float AS attach_rate,
       avg(accessory_amount) FILTER (WHERE accessory_attached)::float AS avg_accessory_amount,
       min(sold_at) AS first_sale, max(sold_at) AS last_sale,
       count(DISTINCT staff_id) AS staff_count
FROM transactions WHERE store_id = %(store_id)s
"""
STAFF_RATES = """
SELECT s.staff_id, s.tenure_months, s.training_hours, s.training_completed,
       count(t.tx_id) AS transactions, avg(t.accessory_attached::int)::float AS attach_rate
FROM staff s JOIN transactions t ON t.staff_id = s.staff_id
WHERE s.store_id = %(store_id)s
GROUP BY s.staff_id ORDER BY s.staff_id
"""
MONTHLY_RATES = """
SELECT to_char(date_trunc('month', sold_at), 'YYYY-MM') AS month, count(*) AS transactions,
       avg(accessory_attached::int)::float AS attach_rate
FROM transactions WHERE store_id = %(store_id)s
GROUP BY 1 ORDER BY 1
"""
CHAIN_RATES = """
SELECT store_id, avg(accessory_attached::int)::float AS attach_rate
FROM transactions GROUP BY store_id ORDER BY store_id
"""
SEGMENT_OUTCOMES = """
SELECT (s.{attribute} >= %(split)s) AS upper, count(*) AS transactions,
       sum(t.accessory_attached::int) AS attached
FROM staff s JOIN transactions t ON t.staff_id = s.staff_id
WHERE s.store_id = %(store_id)s
GROUP BY 1
"""
#: The solution's metric, measured later by the outcome tracker over a window of days.
ATTACH_RATE_IN_WINDOW = """
SELECT avg(accessory_attached::int)::float AS value, count(*)::int AS observations
FROM transactions
WHERE store_id = %(store_id)s AND sold_at >= %(window_start)s AND sold_at < %(window_end)s
"""
INTERVENTIONS = """
SELECT intervention_id, name, kind, cost::float AS cost, lift_low_points, lift_high_points,
       weeks_to_effect, addresses, evidence_strength, evidence
FROM interventions ORDER BY intervention_id
"""


class StoreArgs(BaseModel):
    store_id: int = Field(description="Store number, e.g. 5 for 'Store 5'.")


class SqlArgs(BaseModel):
    sql: SqlText = Field(description="One read-only SELECT (or WITH ... SELECT) on the tenant's tables.")


class SegmentArgs(StoreArgs):
    strongest_driver: str = Field(description="Staff attribute to split staff on (from the correlations).")


class RankArgs(StoreArgs):
    root_cause: RootCause
    timeline_days: int = Field(default=60, ge=7, le=730)
    target_percent: float = Field(default=20.0, gt=0, le=500, description="Relative improvement asked for.")
    target: TargetTerms | None = Field(
        default=None, description="The target in the goal's own form (wins over target_percent)."
    )
    budget: float = Field(default=10_000.0, gt=0)
    preferred_intervention: str | None = Field(
        default=None,
        description="An intervention proven on a similar problem (village knowledge); first if feasible.",
    )


class RoiArgs(StoreArgs):
    expected_lift_points: float = Field(gt=0, le=100)
    intervention_cost: float = Field(ge=0)


class DesignArgs(StoreArgs):
    strategy: Strategy
    timeline_days: int = Field(default=60, ge=7, le=730)


class PlanArgs(StoreArgs):
    strategy: Strategy
    timeline_days: int = Field(default=60, ge=7, le=730)
    budget: float = Field(default=10_000.0, gt=0)


class RiskArgs(StoreArgs):
    strategy: Strategy


class PlaybookArgs(StoreArgs):
    strategy: Strategy
    expected_outcome: ExpectedOutcome | None = None


class RetailData:
    """Queries shared by the tools of one tenant."""

    def __init__(self, context: ToolContext) -> None:
        self.sql = ReadOnlySql(context)

    async def store(self, store_id: int) -> dict[str, Any]:
        result = await self.sql.query(STORE_METRICS, {"store_id": store_id})
        row = result.rows[0]
        if not row["transactions"]:
            raise ToolInputError(f"store_id: no transactions for store {store_id}; check the store number")
        return row

    async def staff(self, store_id: int) -> list[dict[str, Any]]:
        rows = (await self.sql.query(STAFF_RATES, {"store_id": store_id})).rows
        if not rows:
            raise ToolInputError(f"store_id: no staff with sales in store {store_id}")
        return rows


def _months(row: dict[str, Any]) -> float:
    first, last = (
        date.fromisoformat(row["first_sale"][:10]),
        date.fromisoformat(row["last_sale"][:10]),
    )
    return max((last - first).days, 1) / 30


async def default_entities(context: ToolContext) -> dict[str, Any]:
    """A tenant with a single store implies it: "my store" is that store."""
    rows = (await ReadOnlySql(context).query("SELECT store_id FROM stores ORDER BY store_id LIMIT 2")).rows
    return {"store_id": rows[0]["store_id"]} if len(rows) == 1 else {}


#: What the retail pack's goals can be about, one card per metric, in the words goals use. Only the
#: attach rate is solved here; the others are the neighbours a goal about them would otherwise be
#: mistaken for, so a learned attach-rate pattern is not reused for them.
PROBLEMS: tuple[tuple[str, str], ...] = (
    ("accessory_attach_rate", "accessory attach rate: sell more accessories such as cases, chargers and "
     "screen protectors with each phone, handset or device sold"),
    ("warranty_attach_rate", "extended warranty, insurance or protection plan attach rate on device sales"),
    ("accessory_margin", "accessory or device margin, gross margin, profit, markup, discounts or pricing"),
    ("returns", "product returns, refunds or exchanges"),
    ("device_sales", "phone, handset or device unit sales, volume and revenue"),
    ("basket_value", "average basket value, transaction size or revenue per customer"),
    ("staff", "staff turnover, retention, hiring, scheduling or training of employees"),
    ("footfall", "footfall, foot traffic, store visits and their conversion, new customers or customer acquisition"),
    ("customer_experience", "customer satisfaction, NPS, reviews, complaints or wait times"),
    ("inventory", "inventory, stock levels, out-of-stocks, shrinkage or suppliers"),
    ("costs", "operating costs, energy, rent and store expenses"),
    ("online", "online orders, e-commerce, website and app conversion"),
)  # fmt: skip
#: The data metric (``DATA_METRICS`` name) that measures a problem, where the tenant's data has one.
PROBLEM_METRICS: dict[str, str] = {
    "accessory_attach_rate": "attach rate",
    "returns": "refund rate",
    "device_sales": "device revenue",
    "basket_value": "average basket",
}
#: Least |Pearson r| of a driver for a store to show the pattern's cause at all, and how much better
#: another attribute may explain attach rate there before the cause counts as someone else's.
PRECONDITION_MIN_R = 0.3
PRECONDITION_MARGIN = 0.25


def _asks_a_cut(terms: TargetTerms) -> bool:
    """Whether the target terms ask the figure to go down ("by -20%", "down 2 points", "halve")."""
    if terms.form == "multiple":
        return terms.value < 1
    return terms.form in ("relative", "points") and terms.value < 0


async def cause_holds_at(context: ToolContext, precondition: dict[str, Any], known: dict[str, Any]) -> bool:
    """A learned root cause holds at the goal's store: attach rate goes with its driver there in the
    same direction, clearly (|Pearson r| at least ``PRECONDITION_MIN_R``), and no other staff attribute
    explains it much better (by more than ``PRECONDITION_MARGIN``). One query of the store's staff; a
    pattern without a cause to check holds anywhere."""
    cause = dict(precondition.get("root_cause") or {})
    driver = cause.get("driver")
    if driver is None:
        return True
    if driver not in STAFF_ATTRIBUTES or known.get("store_id") is None:
        return False
    try:
        staff = await RetailData(context).staff(int(known["store_id"]))
    except (ToolInputError, ValueError):
        return False
    if len(staff) < 3:
        return False  # too few staff to see any cause
    rates = [member["attach_rate"] for member in staff]
    correlations = {
        attribute: analytics.correlation([member[attribute] for member in staff], rates)["pearson_r"]
        for attribute in STAFF_ATTRIBUTES
    }
    sign = 1 if cause.get("direction", "higher") == "higher" else -1
    r = correlations[driver] * sign
    rivals = [abs(value) for attribute, value in correlations.items() if attribute != driver]
    return r >= PRECONDITION_MIN_R and all(rival <= r + PRECONDITION_MARGIN for rival in rivals)


def build_tools(context: ToolContext) -> dict[str, BaseTool]:
    data = RetailData(context)

    async def query_tenant_data(sql: str) -> dict[str, Any]:
        return (await data.sql.query(sql)).model_dump()

    async def attach_rate_metrics(store_id: int) -> dict[str, Any]:
        row = await data.store(store_id)
        staff = await data.staff(store_id)
        chain = (await data.sql.query(CHAIN_RATES)).rows
        rates = sorted(r["attach_rate"] for r in chain)
        benchmark = rates[math.ceil(0.75 * len(rates)) - 1]
        staff_rates = [s["attach_rate"] for s in staff]
        months = (await data.sql.query(MONTHLY_RATES, {"store_id": store_id})).rows
        return {
            "metrics": {
                "store_id": store_id,
                "attach_rate": round(row["attach_rate"], 4),
                "monthly_transactions": round(row["transactions"] / _months(row)),
                "staff_count": row["staff_count"],
                "staff_attach_rate_min": round(min(staff_rates), 4),
                "staff_attach_rate_max": round(max(staff_rates), 4),
                "chain_top_quartile_attach_rate": round(benchmark, 4),
                "window": {"from": row["first_sale"][:10], "to": row["last_sale"][:10]},
                "by_month": [
                    {
                        "month": m["month"],
                        "transactions": m["transactions"],
                        "attach_rate": round(m["attach_rate"], 4),
                    }
                    for m in months
                ],
            }
        }

    async def staff_performance(store_id: int) -> dict[str, Any]:
        staff = await data.staff(store_id)
        rates = [s["attach_rate"] for s in staff]
        return {
            "staff": [{**s, "attach_rate": round(s["attach_rate"], 4)} for s in staff],
            "staff_summary": {
                "store_id": store_id,
                "staff_count": len(staff),
                "attach_rate_min": round(min(rates), 4),
                "attach_rate_max": round(max(rates), 4),
                "spread_points": round((max(rates) - min(rates)) * 100, 2),
            },
        }

    async def staff_attach_correlations(store_id: int) -> dict[str, Any]:
        staff = await data.staff(store_id)
        rates = [s["attach_rate"] for s in staff]
        results: list[dict[str, Any]] = []
        for attribute in STAFF_ATTRIBUTES:
            stats = analytics.correlation([s[attribute] for s in staff], rates)
            results.append({"attribute": attribute, **stats})
        strongest = max(results, key=lambda r: (abs(r["pearson_r"]), r["attribute"]))
        return {
            "correlations": results,
            "strongest_driver": strongest["attribute"],
            "confidence": analytics.confidence_from_p(strongest["pearson_p"], strongest["pearson_r"]),
        }

    async def compare_staff_segments(store_id: int, strongest_driver: str) -> dict[str, Any]:
        if strongest_driver not in STAFF_ATTRIBUTES:
            raise ToolInputError(f"strongest_driver: use one of {list(STAFF_ATTRIBUTES)}")
        staff = await data.staff(store_id)
        values = sorted(s[strongest_driver] for s in staff)
        split = values[len(values) // 2]
        query = SEGMENT_OUTCOMES.replace("{attribute}", strongest_driver)  # identifier from the allow-list
        rows = (await data.sql.query(query, {"store_id": store_id, "split": split})).rows
        groups = {bool(r["upper"]): (int(r["attached"]), int(r["transactions"])) for r in rows}
        upper, lower = groups.get(True, (0, 0)), groups.get(False, (0, 0))
        try:
            test = analytics.welch_t_test_proportions(*upper, *lower)
        except ValueError as error:
            raise ToolInputError(
                f"strongest_driver: cannot split staff on {strongest_driver}: {error}"
            ) from None
        corr = analytics.correlation([s[strongest_driver] for s in staff], [s["attach_rate"] for s in staff])
        direction = "higher" if test["mean_a"] > test["mean_b"] else "lower"
        label = strongest_driver.replace("_", " ")
        statement = (
            f"Staff with {label} >= {split} attach accessories at {test['mean_a']:.1%} vs "
            f"{test['mean_b']:.1%} for the rest: {label} goes with a {direction} attach rate"
        )
        if strongest_driver == "tenure_months" and direction == "lower":
            statement += " (long-tenured staff disengage from upselling)"
        confidence = analytics.confidence_from_p(test["p_value"], corr["pearson_r"])
        return {
            "segments": {
                "attribute": strongest_driver,
                "split_at": split,
                "upper_attach_rate": round(test["mean_a"], 4),
                "lower_attach_rate": round(test["mean_b"], 4),
                "upper_transactions": upper[1],
                "lower_transactions": lower[1],
                "welch_t": test["t"],
                "p_value": test["p_value"],
            },
            "root_cause": RootCause(
                statement=statement,
                driver=strongest_driver,
                direction=direction,
                evidence=[
                    f"Pearson r({label}, attach rate) = {corr['pearson_r']:.2f} (p = {corr['pearson_p']:.3f}, "
                    f"n = {corr['n']} staff)",
                    f"Welch t = {test['t']:.2f}, p = {test['p_value']:.4f} over {upper[1] + lower[1]} transactions",
                ],
                confidence=confidence,
            ).model_dump(),
            "confidence": confidence,
        }

    async def rank_interventions(
        store_id: int,
        root_cause: RootCause,
        timeline_days: int = 60,
        target_percent: float = 20.0,
        budget: float = 10_000.0,
        preferred_intervention: str | None = None,
        target: TargetTerms | None = None,
    ) -> dict[str, Any]:
        row = await data.store(store_id)
        catalogue = (await data.sql.query(INTERVENTIONS)).rows
        ranked = analytics.rank_candidates(
            catalogue, driver=root_cause.driver, budget=budget, timeline_days=timeline_days
        )
        proven = [r for r in ranked if r["intervention_id"] == preferred_intervention and r["feasible"]]
        if proven:
            ranked = [*proven, *(r for r in ranked if r is not proven[0])]
        best = ranked[0]
        if not best["feasible"]:
            raise ToolInputError(
                f"budget: no intervention fits a budget of {budget:,.0f} within {timeline_days} days"
            )
        baseline = row["attach_rate"]
        expected = baseline + best["expected_lift_points"] / 100
        terms = target or TargetTerms(
            form="relative", value=target_percent / 100, words=f"{target_percent:g}%"
        )
        aim = GoalTarget(form=terms.form, value=terms.value, words=terms.words).applied_to(baseline)
        # The deadline counts from today (the runtime clock), never from the data's last sale.
        end = context.now().date() + timedelta(days=timeline_days)
        strategy = Strategy(
            intervention_id=best["intervention_id"],
            name=best["name"],
            kind=best["kind"],
            cost=best["cost"],
            expected_lift_points=best["expected_lift_points"],
            rationale=(
                f"Addresses {root_cause.driver.replace('_', ' ')}; "
                + (
                    "proven on a similar problem (village knowledge) and feasible"
                    if proven
                    else f"best evidence-weighted lift ({best['evidence_strength']:.0%} evidence)"
                )
                + f" within budget {budget:,.0f} and {timeline_days} days. {best['evidence']}"
            ),
            alternatives=[
                {k: r[k] for k in ("intervention_id", "name", "cost", "score", "feasible")}
                for r in ranked[1:4]
            ],
        )
        outcome = ExpectedOutcome(
            metric="accessory_attach_rate",
            store_id=store_id,
            baseline=round(baseline, 4),
            target=round(aim, 4),
            expected=round(expected, 4),
            timeline_days=timeline_days,
            by_when=end.isoformat(),
            target_terms=terms,
            # Every intervention lifts the rate: a level is met when the lifted rate is at or above it
            # (a level below the baseline, "back at last quarter's level", stays met); a cut never is.
            meets_target=expected >= aim and not _asks_a_cut(terms),
            metric_query={
                "sql": ATTACH_RATE_IN_WINDOW.strip(),
                "params": {"store_id": store_id},
                "window_days": max(14, timeline_days // 2),
            },
        )
        return {
            "strategy": strategy.model_dump(),
            "expected_outcome": outcome.model_dump(),
            "expected_lift_points": best["expected_lift_points"],
            "intervention_cost": best["cost"],
            "confidence": round(min(best["evidence_strength"], root_cause.confidence), 4),
        }

    async def estimate_roi(
        store_id: int, expected_lift_points: float, intervention_cost: float
    ) -> dict[str, Any]:
        row = await data.store(store_id)
        monthly = row["transactions"] / _months(row)
        extra_attaches = monthly * 12 * expected_lift_points / 100
        revenue = extra_attaches * (row["avg_accessory_amount"] or 0.0)
        return {
            "roi": {
                "annual_extra_accessories": round(extra_attaches),
                "annual_extra_revenue": round(revenue, 2),
                "cost": intervention_cost,
                "roi_ratio": round((revenue - intervention_cost) / intervention_cost, 2)
                if intervention_cost
                else None,
            }
        }

    async def design_rollout_test(
        store_id: int, strategy: Strategy, timeline_days: int = 60
    ) -> dict[str, Any]:
        row = await data.store(store_id)
        baseline = row["attach_rate"]
        expected = min(baseline + strategy.expected_lift_points / 100, 0.99)
        needed = analytics.two_proportion_sample_size(baseline, expected)
        available = round(row["transactions"] / _months(row) * timeline_days / 30)
        per_arm = available // 2
        parallel = per_arm >= needed
        detectable = analytics.minimum_detectable_lift(baseline, max(per_arm, 2))
        weeks = max(timeline_days // 7, 2)
        design = {
            "approach": "parallel A/B by staff"
            if parallel
            else "sequential rollout with pre/post measurement",
            "required_per_arm": needed,
            "available_transactions": available,
            "minimum_detectable_lift_points": round(detectable * 100, 2),
            "rationale": (
                f"{needed} transactions per arm are needed to detect {baseline:.1%} -> {expected:.1%}; "
                f"{available} are expected in {timeline_days} days"
            ),
            "schedule": [
                {"weeks": f"1-{weeks // 4}", "step": "baseline and first component"},
                {"weeks": f"{weeks // 4 + 1}-{weeks // 2}", "step": "add remaining components"},
                {"weeks": f"{weeks // 2 + 1}-{weeks}", "step": "sustain and measure"},
            ],
        }
        return {"test_design": design, "confidence": 0.8 if parallel else 0.7}

    async def estimate_resources(
        store_id: int, strategy: Strategy, timeline_days: int = 60, budget: float = 10_000.0
    ) -> dict[str, Any]:
        staff = await data.staff(store_id)
        weeks = max(timeline_days // 7, 2)
        coaching = strategy.kind in ("coaching", "hybrid", "gamification")
        automation = strategy.kind in ("automation", "hybrid")
        coaches = max(1, math.ceil(len(staff) / 5)) if coaching else 0
        launch = max(weeks // 4, 1)
        phases = [
            {
                "weeks": f"1-{launch}",
                "milestone": f"Launch {strategy.name.split(':')[0]}",
                "tasks": [
                    "Brief staff on the goal and metric",
                    f"Assign {coaches} coaches" if coaching else "Configure prompts",
                ],
                "budget": round(strategy.cost * 0.3, 2),
            },
            {
                "weeks": f"{launch + 1}-{weeks // 2}",
                "milestone": "Deploy remaining components",
                "tasks": [
                    "Integrate POS prompts" if automation else "Start weekly coaching",
                    "Review week-by-week attach rate",
                ],
                "budget": round(strategy.cost * 0.5, 2),
            },
            {
                "weeks": f"{weeks // 2 + 1}-{weeks}",
                "milestone": "Monitor and optimise",
                "tasks": ["Run the monitoring playbook weekly", "Adjust coaching focus from the data"],
                "budget": round(strategy.cost * 0.2, 2),
            },
        ]
        return {
            "resources": {
                "coaches": coaches,
                "developers": 1 if automation else 0,
                "staff_in_scope": len(staff),
                "budget": strategy.cost,
                "budget_headroom": round(budget - strategy.cost, 2),
            },
            "implementation_plan": {
                "phases": phases,
                "total_budget": strategy.cost,
                "timeline_days": timeline_days,
            },
            "confidence": 0.85 if strategy.cost <= budget else 0.5,
        }

    async def assess_risks(store_id: int, strategy: Strategy) -> dict[str, Any]:
        staff = await data.staff(store_id)
        veterans = sum(1 for s in staff if s["tenure_months"] >= 24) / len(staff)
        risks = [
            {
                "risk": "Staff resistance to coaching or monitoring",
                "likelihood": round(0.2 + 0.5 * veterans, 2),
                "impact": "medium",
                "mitigation": "Involve top performers as coaches; frame as support, not audit",
            },
            {
                "risk": "Too few transactions to read the effect early",
                "likelihood": 0.4 if len(staff) <= 12 else 0.2,
                "impact": "low",
                "mitigation": "Judge on the pre-agreed checkpoints, not week-to-week noise",
            },
        ]
        if strategy.kind in ("automation", "hybrid"):
            risks.append(
                {
                    "risk": "POS integration delay",
                    "likelihood": 0.35,
                    "impact": "high",
                    "mitigation": "Start coaching first; keep a manual prompt card as fallback",
                }
            )
        return {"risks": risks, "confidence": 0.8}

    async def build_playbook(
        store_id: int, strategy: Strategy, expected_outcome: ExpectedOutcome | None = None
    ) -> dict[str, Any]:
        row = await data.store(store_id)
        baseline = expected_outcome.baseline if expected_outcome else round(row["attach_rate"], 4)
        target = (
            expected_outcome.expected if expected_outcome else baseline + strategy.expected_lift_points / 100
        )
        threshold = round((baseline + target) / 2, 4)
        playbook = {
            "name": f"Store {store_id} attach-rate monitor ({strategy.intervention_id})",
            "trigger": {
                "cron": "0 9 * * MON",
                "event": {
                    "metric": "attach_rate",
                    "operator": "<",
                    "threshold": threshold,
                    "source": "staff_performance",
                },
            },
            "steps": [
                {
                    "order": 1,
                    "action": "tool",
                    "tool": "staff_performance",
                    "args": {"store_id": store_id},
                },
                {
                    "order": 2,
                    "action": "tool",
                    "tool": "attach_rate_metrics",
                    "args": {"store_id": store_id},
                },
                {
                    "order": 3,
                    "action": "notify",
                    "message": f"Coach staff below {threshold:.1%} attach rate this week",
                },
                {
                    "order": 4,
                    "action": "notify",
                    "message": "Alert the store manager when 3+ staff are below threshold",
                },
            ],
            "integrations": ["tenant database (read-only)", "notification outbox"],
            "success_metrics": {
                "primary": {
                    "metric": "accessory_attach_rate",
                    "baseline": baseline,
                    "target": target,
                },
                "secondary": ["coaching attendance", "staff below threshold"],
            },
            "rollback": {
                "when": "attach rate below baseline for 2 consecutive weeks",
                "steps": ["Disable the playbook", "Return to manual weekly review"],
            },
            "owner": "store manager",
        }
        return {"playbook": playbook, "confidence": 0.85}

    def tool(
        func: Callable[..., Awaitable[dict[str, Any]]], args: type[BaseModel], description: str
    ) -> BaseTool:
        return StructuredTool.from_function(
            coroutine=func, name=func.__name__, description=description, args_schema=args
        )

    tools = [
        tool(
            query_tenant_data,
            SqlArgs,
            "Run one read-only SELECT on the tenant's tables (stores, staff, transactions, interventions).",
        ),
        tool(
            attach_rate_metrics,
            StoreArgs,
            "Accessory attach rate of a store: overall, by month, staff spread and chain benchmark.",
        ),
        tool(
            staff_performance, StoreArgs, "Attach rate, tenure and training of each staff member of a store."
        ),
        tool(
            staff_attach_correlations,
            StoreArgs,
            "Pearson and Spearman correlation of staff attributes with attach rate.",
        ),
        tool(
            compare_staff_segments,
            SegmentArgs,
            "Welch t-test of attach rate between staff segments split on a driver.",
        ),
        tool(
            rank_interventions,
            RankArgs,
            "Rank catalogue interventions for a root cause under budget and timeline.",
        ),
        tool(
            estimate_roi,
            RoiArgs,
            "Annual revenue and ROI of an attach-rate lift from the store's transactions.",
        ),
        tool(
            design_rollout_test,
            DesignArgs,
            "Power analysis and test design (parallel A/B or sequential rollout).",
        ),
        tool(estimate_resources, PlanArgs, "People, budget and phased plan to implement a strategy."),
        tool(assess_risks, RiskArgs, "Risks of implementing a strategy in a store, with mitigations."),
        tool(
            build_playbook,
            PlaybookArgs,
            "An executable monitoring playbook (trigger, steps, metrics, rollback).",
        ),
    ]
    return {t.name: t for t in tools}
