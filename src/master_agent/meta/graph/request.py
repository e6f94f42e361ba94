"""What a caller asks the meta-orchestrator for: ``MetaRequest`` and its checks (the graph's input, the tier's
budget ceilings, the user constraints that set a gate)."""

from __future__ import annotations

from typing import Any, Literal, cast

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from master_agent.capabilities.spec import Tier
from master_agent.errors import InputError
from master_agent.meta.artifacts import ArtifactType, Role, RuntimeTarget, parse_artifact
from master_agent.meta.playbooks import (
    BUDGET_CEILINGS,
    DIMENSIONS,
    STANDARD_ROLES,
    TIER_BUDGET_CEILINGS,
    BudgetDimension,
    ConstraintPack,
    Intent,
)

#: The key of ``MetaRequest.budgets`` that sets the whole request's caps.
GLOBAL = "global"


class MetaRequest(BaseModel):
    """What a caller asks the meta-orchestrator for (the graph's ``request`` input)."""

    model_config = ConfigDict(extra="forbid")

    text: str = Field(min_length=1, max_length=5000)
    playbook: Intent | None = None
    """Force a playbook (default: classified from the text)."""
    runtime: RuntimeTarget | None = None
    """Force a runtime target (default: from the text, else ``langgraph``)."""
    name: str | None = Field(default=None, pattern=r"^[a-z][a-z0-9_]{2,40}$")
    """The system's name (its agent's name); default: from the text."""
    artifacts: dict[ArtifactType, dict[str, Any]] = Field(default_factory=dict)
    """Artifacts to start from (a debug/optimize/evaluate request brings its SystemSpec)."""
    constraints: dict[str, str | float | int | bool | list[str]] = Field(default_factory=dict)
    """User constraints; ``pass_threshold``, ``latency_p95_ms_ceiling`` and ``tokens_per_case_ceiling``
    set the gates."""
    autonomous: bool = True
    """No human waits: the human gate auto-approves and logs it. False: it interrupts for an answer."""
    human_gate: Literal["required", "optional", "skip"] | None = None
    """Override the playbook's human-gate placement."""
    budgets: dict[str, dict[str, int]] = Field(default_factory=dict)
    """Cap overrides per role, e.g. ``{"eval": {"max_spawns": 2}}``, and of the whole request
    (``{"global": {"max_steps": 40}}``, binding every role)."""


def parse_request(payload: Any) -> MetaRequest:
    try:
        request = MetaRequest.model_validate(payload)
    except ValidationError as error:
        raise InputError.from_validation(error, prefix="request") from None
    for artifact_type, artifact in request.artifacts.items():
        parse_artifact(artifact_type, artifact, f"request.artifacts.{artifact_type}")
    for role, caps in request.budgets.items():
        if (role != GLOBAL and role not in STANDARD_ROLES) or any(dim not in DIMENSIONS for dim in caps):
            raise InputError(
                f"request.budgets.{role}",
                f"keys: {GLOBAL!r} or a role of {sorted(STANDARD_ROLES)}; caps: {list(DIMENSIONS)}",
            )
        for dimension, value in caps.items():
            ceiling = BUDGET_CEILINGS[cast(BudgetDimension, dimension)]
            if not 0 <= value <= ceiling:
                raise InputError(
                    f"request.budgets.{role}.{dimension}", f"a count from 0 to {ceiling:,} (got {value:,})"
                )
    try:
        _constrain(ConstraintPack(), request.constraints)
    except InputError as error:
        raise error.under("request") from None
    return request


def check_tier_budgets(request: MetaRequest, tier: Tier, field: str = "request") -> None:
    """Refuse budgets above what the tenant's tier allows (an ``InputError`` naming the cap)."""
    ceilings = TIER_BUDGET_CEILINGS[tier]
    for role, caps in request.budgets.items():
        for dimension, value in caps.items():
            ceiling = ceilings[cast(BudgetDimension, dimension)]
            if value > ceiling:
                raise InputError(
                    f"{field}.budgets.{role}.{dimension}",
                    f"the {tier} tier allows at most {ceiling:,} (got {value:,})",
                )


def check_meta_input(graph_input: Any) -> MetaRequest:
    """The request of a run's input (``{"request": {...}}``), or an ``InputError`` naming the field."""
    if not isinstance(graph_input, dict) or "request" not in graph_input:
        raise InputError("input.request", "send {'request': {'text': ...}} (a MetaRequest)")
    unknown = sorted(set(graph_input) - {"request"})
    if unknown:
        raise InputError(f"input.{unknown[0]}", "the meta graph's input is only 'request'")
    try:
        return parse_request(graph_input["request"])
    except InputError as error:
        raise error.under("input") from None


#: User constraints that set a gate, and the role whose artifact carries them.
GATE_CONSTRAINTS: dict[str, Role] = {
    "pass_threshold": "eval",
    "latency_p95_ms_ceiling": "ops",
    "tokens_per_case_ceiling": "ops",
}


def _constrain(pack: ConstraintPack, constraints: dict[str, Any]) -> set[Role]:
    """Add user constraints to the pack (the gate-setting ones where their owner reads them); the
    roles whose artifacts they change."""
    pack.user_constraints.update(constraints)
    changed: set[Role] = set()
    for key, role in GATE_CONSTRAINTS.items():
        if key not in constraints:
            continue
        value = constraints[key]
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise InputError(f"constraints.{key}", "a number")
        (pack.eval_constraints if role == "eval" else pack.ops_constraints)[key] = float(value)
        changed.add(role)
    return changed
