"""Shapes the retail agents and tools exchange (the playbook is the evolution loop's validated one)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from master_agent.evolution.playbooks import PlaybookSpec as Playbook

__all__ = ["ExpectedOutcome", "ImplementationPlan", "Phase", "Playbook", "Risk", "RootCause", "Strategy"]


class RootCause(BaseModel):
    """Why the metric is where it is."""

    model_config = ConfigDict(extra="allow")

    statement: str = Field(description="The root cause in one sentence.")
    driver: str = Field(description="The staff attribute that explains the variance.")
    direction: str | None = Field(
        default=None, description="'higher' or 'lower': how attach rate goes with the driver."
    )
    evidence: list[str] = Field(description="Statistics supporting the statement.")
    confidence: float = Field(ge=0, le=1)


class TargetTerms(BaseModel):
    """The target as the goal states it: ``absolute`` (the rate to reach, 0.08 for 8%), ``relative``
    (0.2 for +20%, negative for a cut), ``points`` (percentage points, 2 for +2 points) or
    ``multiple`` (2 to double)."""

    form: Literal["absolute", "relative", "points", "multiple"]
    value: float
    words: str = ""


class ExpectedOutcome(BaseModel):
    """What the solution promises, measurably."""

    model_config = ConfigDict(extra="allow")

    metric: str
    store_id: int
    baseline: float = Field(description="Current value (fraction, e.g. 0.03).")
    target: float = Field(description="Value the goal asks for.")
    expected: float = Field(description="Value the chosen strategy is expected to reach.")
    timeline_days: int
    by_when: str = Field(description="ISO date the target should be met by.")
    target_terms: TargetTerms | None = Field(default=None, description="The target in the goal's own form.")
    meets_target: bool | None = Field(
        default=None,
        description="Whether the expected value reaches the target (a cut: stays at or below it).",
    )
    metric_query: dict[str, Any] | None = Field(
        default=None, description="How the outcome tracker measures the metric later (read-only SQL)."
    )


class Strategy(BaseModel):
    """The chosen intervention and why."""

    model_config = ConfigDict(extra="allow")

    intervention_id: str
    name: str
    kind: str
    cost: float
    expected_lift_points: float = Field(description="Expected lift in percentage points.")
    rationale: str
    alternatives: list[dict[str, Any]] = Field(default_factory=list)


class Phase(BaseModel):
    weeks: str
    milestone: str
    tasks: list[str]
    budget: float


class ImplementationPlan(BaseModel):
    model_config = ConfigDict(extra="allow")

    phases: list[Phase]
    total_budget: float
    timeline_days: int


class Risk(BaseModel):
    risk: str
    likelihood: float = Field(ge=0, le=1)
    impact: str
    mitigation: str
