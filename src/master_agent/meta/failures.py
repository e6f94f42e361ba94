"""``classify_failure`` (seed 004 section 8): structured heuristics over a gate's failure signals, the ten
ordered rules of the table, first match wins, and every rule that matched is kept for meta-evaluation.

Compile failures (section 6.4) come in as ``compile_errors``: schema inconsistencies, undefined
handoffs, unbounded recursion, missing budgets and hybrid boundary mismatches are the spec's own
inconsistency (rule 8, Architect); missing ToolContract coverage is rule 9 (Tooling).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from master_agent.meta.artifacts import MetricKind, Role

ToolErrorType = Literal["schema", "auth", "timeout", "logic", "misuse", "other"]
CompileErrorKind = Literal[
    "schema_inconsistency",
    "undefined_handoff",
    "unbounded_recursion",
    "missing_budget",
    "boundary_mismatch",
    "missing_contract",
]
#: A component entered more often than this in one run is a loop (rule 2).
LOOP_THRESHOLD = 3


class ToolError(BaseModel):
    model_config = ConfigDict(extra="forbid")

    tool: str
    error_type: ToolErrorType
    count: int = Field(default=1, ge=1)


class StateAnomaly(BaseModel):
    model_config = ConfigDict(extra="forbid")

    kind: Literal["unexpected_write", "type_mismatch", "growth"]
    key: str
    detail: str = ""


class RoutingAnomaly(BaseModel):
    model_config = ConfigDict(extra="forbid")

    kind: Literal["loop", "dead_end", "unreachable"]
    node: str
    count: int = Field(default=1, ge=0)


class MetricFailure(BaseModel):
    model_config = ConfigDict(extra="forbid")

    metric: str
    kind: MetricKind
    expected: float
    actual: float

    @property
    def gap(self) -> float:
        return self.expected - self.actual


class CompileError(BaseModel):
    model_config = ConfigDict(extra="forbid")

    kind: CompileErrorKind
    where: str
    message: str


class FailureSignals(BaseModel):
    """What a failing phase or gate reports (section 8.2)."""

    model_config = ConfigDict(extra="forbid")

    tool_errors: list[ToolError] = Field(default_factory=list)
    state_anomalies: list[StateAnomaly] = Field(default_factory=list)
    routing_anomalies: list[RoutingAnomaly] = Field(default_factory=list)
    metric_failures: list[MetricFailure] = Field(default_factory=list)
    compile_errors: list[CompileError] = Field(default_factory=list)
    budget_status: dict[str, int] = Field(default_factory=dict)

    def empty(self) -> bool:
        return not (
            self.tool_errors
            or self.state_anomalies
            or self.routing_anomalies
            or self.metric_failures
            or self.compile_errors
        )


class RuleMatch(BaseModel):
    priority: int
    route_to: Role
    rule: str
    evidence: str


class FailureClassification(BaseModel):
    route_to: Role
    priority: int
    rule: str
    matched: list[RuleMatch]
    """Every rule that matched, winner first (section 8.4)."""


@dataclass(frozen=True)
class _Rule:
    priority: int
    route_to: Role
    name: str
    evidence: Callable[[FailureSignals], str | None]


def _tool_errors(types: set[str]) -> Callable[[FailureSignals], str | None]:
    def match(signals: FailureSignals) -> str | None:
        hits = [e for e in signals.tool_errors if e.error_type in types and e.count > 0]
        return ", ".join(f"{e.tool}: {e.error_type} x{e.count}" for e in hits) or None

    return match


def _loops(signals: FailureSignals) -> str | None:
    hits = [a for a in signals.routing_anomalies if a.kind == "loop" and a.count > LOOP_THRESHOLD]
    return ", ".join(f"{a.node} entered {a.count} times" for a in hits) or None


def _state(signals: FailureSignals) -> str | None:
    hits = [a for a in signals.state_anomalies if a.kind in ("unexpected_write", "type_mismatch")]
    return ", ".join(f"{a.kind} of {a.key}" for a in hits) or None


def _metrics(kinds: set[str]) -> Callable[[FailureSignals], str | None]:
    def match(signals: FailureSignals) -> str | None:
        hits = [m for m in signals.metric_failures if m.kind in kinds]
        return ", ".join(f"{m.metric} ({m.kind}) {m.actual:g} vs {m.expected:g}" for m in hits) or None

    return match


def _compile(kinds: set[str]) -> Callable[[FailureSignals], str | None]:
    def match(signals: FailureSignals) -> str | None:
        hits = [e for e in signals.compile_errors if e.kind in kinds]
        return "; ".join(f"{e.kind} at {e.where}" for e in hits) or None

    return match


RULES: tuple[_Rule, ...] = (
    _Rule(1, "tooling", "tool infrastructure error", _tool_errors({"schema", "auth", "timeout"})),
    _Rule(2, "architect", "routing loop over threshold", _loops),
    _Rule(3, "architect", "unexpected state write or type mismatch", _state),
    _Rule(4, "eval", "rubric or coverage gap", _metrics({"rubric", "coverage"})),
    _Rule(
        5,
        "prompt_policy",
        "reasoning or instruction-following failure",
        _metrics({"reasoning", "instruction_following"}),
    ),
    _Rule(6, "ops", "latency or cost over the envelope", _metrics({"latency", "cost"})),
    _Rule(7, "prompt_policy", "tool misuse", _tool_errors({"logic", "misuse"})),
    _Rule(
        8,
        "architect",
        "compilation failure: spec inconsistent",
        _compile(
            {
                "schema_inconsistency",
                "undefined_handoff",
                "unbounded_recursion",
                "missing_budget",
                "boundary_mismatch",
            }
        ),
    ),
    _Rule(9, "tooling", "compilation failure: missing tool contract", _compile({"missing_contract"})),
)
DEFAULT_RULE = _Rule(10, "architect", "no rule matched: treat as a design problem", lambda _: "")


def classify_failure(signals: FailureSignals) -> FailureClassification:
    """The role a failure goes back to, by the first matching rule; every matching rule is listed."""
    matched = [
        RuleMatch(priority=rule.priority, route_to=rule.route_to, rule=rule.name, evidence=evidence)
        for rule in RULES
        if (evidence := rule.evidence(signals))
    ]
    if not matched:
        matched = [
            RuleMatch(priority=10, route_to=DEFAULT_RULE.route_to, rule=DEFAULT_RULE.name, evidence="")
        ]
    winner = matched[0]
    return FailureClassification(
        route_to=winner.route_to, priority=winner.priority, rule=winner.rule, matched=matched
    )
