"""The retail agents, as specs (the seed's sub-agent tree, three levels deep).

master -> research -> data_analysis
       -> strategy_generator -> ab_test_designer
       -> implementation_planner -> resource_estimator, risk_assessor, playbook_generator
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from master_agent.capabilities import AgentSpec
from master_agent.domains.retail.schemas import (
    ExpectedOutcome,
    ImplementationPlan,
    Playbook,
    Risk,
    RootCause,
    Strategy,
    TargetTerms,
)


class StrategicGoalInput(BaseModel):
    goal: str = Field(min_length=1, max_length=4000)
    timeline_days: int | None = Field(default=None, ge=7, le=730)


class StrategicSolutionOutput(BaseModel):
    """The master agent's answer (the solution document adds ids, termination and steps)."""

    root_cause: RootCause
    strategy: Strategy
    implementation_plan: ImplementationPlan
    playbook: Playbook
    expected_outcome: ExpectedOutcome
    metrics: dict[str, Any] | None = Field(default=None, description="The store's current figures.")
    risks: list[Risk] = Field(default_factory=list)
    roi: dict[str, Any] | None = None
    test_design: dict[str, Any] | None = None
    confidence: float = Field(ge=0, le=1)


class ResearchInput(BaseModel):
    task: str = Field(description="What to find out, e.g. why the store's attach rate is low.")
    store_id: int


class ResearchOutput(BaseModel):
    root_cause: RootCause
    staff_summary: dict[str, Any]
    confidence: float = Field(ge=0, le=1)


class DataAnalysisInput(BaseModel):
    question: str = Field(description="The analytical question.")
    store_id: int


class DataAnalysisOutput(BaseModel):
    correlations: list[dict[str, Any]]
    segments: dict[str, Any]
    root_cause: RootCause
    confidence: float = Field(ge=0, le=1)


class StrategyInput(BaseModel):
    root_cause: RootCause
    store_id: int
    timeline_days: int = Field(default=60, ge=7, le=730)
    target_percent: float = Field(default=20.0, gt=0, le=500)
    target: TargetTerms | None = Field(
        default=None, description="The target in the goal's own form (to 8%, by 2 points, double)."
    )
    budget: float = Field(default=10_000.0, gt=0)
    preferred_intervention: str | None = Field(
        default=None, description="An intervention proven on a similar problem (from village knowledge)."
    )


class StrategyOutput(BaseModel):
    strategy: Strategy
    expected_outcome: ExpectedOutcome
    test_design: dict[str, Any]
    roi: dict[str, Any] | None = None
    confidence: float = Field(ge=0, le=1)


class TestDesignInput(BaseModel):
    strategy: Strategy
    store_id: int
    timeline_days: int = Field(default=60, ge=7, le=730)


class TestDesignOutput(BaseModel):
    test_design: dict[str, Any]
    confidence: float = Field(ge=0, le=1)


class PlanningInput(BaseModel):
    strategy: Strategy
    store_id: int
    timeline_days: int = Field(default=60, ge=7, le=730)
    budget: float = Field(default=10_000.0, gt=0)
    expected_outcome: ExpectedOutcome | None = None


class PlanningOutput(BaseModel):
    implementation_plan: ImplementationPlan
    playbook: Playbook
    risks: list[Risk]
    resources: dict[str, Any]
    confidence: float = Field(ge=0, le=1)


class ResourceOutput(BaseModel):
    resources: dict[str, Any]
    implementation_plan: ImplementationPlan
    confidence: float = Field(ge=0, le=1)


class RiskInput(BaseModel):
    strategy: Strategy
    store_id: int


class RiskOutput(BaseModel):
    risks: list[Risk]
    confidence: float = Field(ge=0, le=1)


class PlaybookInput(BaseModel):
    strategy: Strategy
    store_id: int
    expected_outcome: ExpectedOutcome | None = None


class PlaybookOutput(BaseModel):
    playbook: Playbook
    confidence: float = Field(ge=0, le=1)


MASTER = AgentSpec(
    name="master_agent",
    description="Solves a retail business goal end to end.",
    system_prompt=(
        "You are the Master Agent of a retail business. Decompose the goal: measure the current "
        "metric, find the root cause (research), design a strategy (strategy_generator) and an "
        "implementation plan with a playbook (implementation_planner). Delegate to sub-agents."
    ),
    input_schema=StrategicGoalInput,
    output_schema=StrategicSolutionOutput,
    tools=[
        "attach_rate_metrics",
        "research",
        "strategy_generator",
        "implementation_planner",
        "query_tenant_data",
    ],
    progress_keys=["root_cause", "strategy", "implementation_plan"],
    domain="retail",
    skills=[
        "raise a store's accessory attach rate",
        "increase accessory sales per device sold",
        "find why a store's attach rate is low and fix it",
        "design a strategy and playbook to improve accessory attach rate",
        "improve staff selling of accessories at a store",
    ],
    required_entities=["store_id"],
)

SUB_AGENTS: dict[str, AgentSpec] = {
    spec["name"]: spec
    for spec in [
        AgentSpec(
            name="research",
            description="Finds the root cause of a store metric from staff and sales data.",
            system_prompt="You research why a store metric is where it is. Gather staff data, have the "
            "data analysis agent test hypotheses, and state the root cause with evidence.",
            input_schema=ResearchInput,
            output_schema=ResearchOutput,
            tools=["staff_performance", "data_analysis", "query_tenant_data"],
            research=True,
        ),
        AgentSpec(
            name="data_analysis",
            description="Runs statistics (correlation, segment t-tests) on staff performance.",
            system_prompt="You are a statistician. Correlate staff attributes with the metric, then test "
            "the strongest driver by comparing segments. Report effect sizes and p-values.",
            input_schema=DataAnalysisInput,
            output_schema=DataAnalysisOutput,
            tools=["staff_attach_correlations", "compare_staff_segments"],
            research=True,
        ),
        AgentSpec(
            name="strategy_generator",
            description="Designs an intervention strategy for a root cause under budget and timeline.",
            system_prompt="You design strategies. Rank interventions for the root cause, estimate ROI, and "
            "have the A/B test designer plan how the effect will be measured.",
            input_schema=StrategyInput,
            output_schema=StrategyOutput,
            tools=["rank_interventions", "estimate_roi", "ab_test_designer"],
            min_tier="pro",
        ),
        AgentSpec(
            name="ab_test_designer",
            description="Designs how a strategy's effect is measured (A/B or sequential rollout).",
            system_prompt="You design experiments with proper power analysis.",
            input_schema=TestDesignInput,
            output_schema=TestDesignOutput,
            tools=["design_rollout_test"],
            min_tier="pro",
        ),
        AgentSpec(
            name="implementation_planner",
            description="Turns a strategy into a phased plan with resources, risks and a playbook.",
            system_prompt="You plan implementations. Have the resource estimator, risk assessor and playbook "
            "generator each do their part, then combine them.",
            input_schema=PlanningInput,
            output_schema=PlanningOutput,
            tools=["resource_estimator", "risk_assessor", "playbook_generator"],
            min_tier="enterprise",
        ),
        AgentSpec(
            name="resource_estimator",
            description="Estimates people, budget and phases for a strategy.",
            system_prompt="You estimate resources and phase the work.",
            input_schema=PlanningInput,
            output_schema=ResourceOutput,
            tools=["estimate_resources"],
            min_tier="enterprise",
        ),
        AgentSpec(
            name="risk_assessor",
            description="Lists what could go wrong with a strategy and how to mitigate it.",
            system_prompt="You assess implementation risks.",
            input_schema=RiskInput,
            output_schema=RiskOutput,
            tools=["assess_risks"],
            min_tier="enterprise",
        ),
        AgentSpec(
            name="playbook_generator",
            description="Writes an executable monitoring playbook for a strategy.",
            system_prompt="You write playbooks: trigger, ordered steps, success metrics, rollback, owner.",
            input_schema=PlaybookInput,
            output_schema=PlaybookOutput,
            tools=["build_playbook"],
            min_tier="enterprise",
        ),
    ]
}
