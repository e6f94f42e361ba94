"""Playbooks as phase lists (seed 004 section 12), budget profiles (section 14) and the constraint pack
(section 5.3): the data the meta graph runs on."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from master_agent.capabilities.spec import Tier
from master_agent.meta.artifacts import ArtifactType, Role

Intent = Literal["build", "debug", "optimize", "evaluate", "harden", "incident"]
INTENTS: tuple[Intent, ...] = ("build", "debug", "optimize", "evaluate", "harden", "incident")
Gate = Literal["quality", "production"]
BudgetDimension = Literal["max_steps", "max_tokens", "max_tool_calls", "max_spawns"]
DIMENSIONS: tuple[BudgetDimension, ...] = ("max_steps", "max_tokens", "max_tool_calls", "max_spawns")
#: Bounded loops (section 12.1): a role is sent back at most this many times per request.
MAX_LOOPS = 3


class Phase(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str
    role: Role
    task: str
    """What the role does in this phase (``design``, ``revise``, ``run``, ``check``, ``compile``...)."""
    gate: Gate | None = None
    """The gate its output must pass before the next phase."""


class Playbook(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: Intent
    phases: tuple[Phase, ...]
    requires: tuple[ArtifactType, ...] = ()
    """Artifacts that must exist at entry (given with the request)."""
    human_gate: Literal["required", "optional", "skip"] = "optional"
    """Before finalizing: ``required`` always asks a human; ``optional`` only when a role or an
    ambiguous gate asks for review (or a budget runs out); ``skip`` never."""
    fixes_by_promotion: bool = False
    """A failure routed to an owner is fixed through the promotion protocol (section 9): the Optimizer
    proposes the change, the owner decides it; otherwise the owner revises its artifact itself."""


def _phase(phase_id: str, role: Role, task: str, gate: Gate | None = None) -> Phase:
    return Phase(id=phase_id, role=role, task=task, gate=gate)


#: A playbook that starts from a given system first has each owner adopt its artifact (or draft it).
ADOPT: tuple[Phase, ...] = (
    _phase("system", "architect", "adopt"),
    _phase("tools", "tooling", "adopt"),
    _phase("prompts", "prompt_policy", "adopt"),
    _phase("eval_spec", "eval", "adopt"),
)

PLAYBOOKS: dict[Intent, Playbook] = {
    "build": Playbook(
        name="build",
        phases=(
            _phase("architect", "architect", "design"),
            _phase("prompts", "prompt_policy", "design"),
            _phase("tools", "tooling", "design"),
            _phase("eval_spec", "eval", "design"),
            _phase("instrument", "ops", "instrument"),
            _phase("compile", "compiler", "compile"),
            _phase("eval_smoke", "eval", "run", gate="quality"),
            _phase("ops_check", "ops", "check", gate="production"),
        ),
    ),
    "debug": Playbook(
        name="debug",
        phases=(
            *ADOPT,
            _phase("repro", "eval", "reproduce"),
            _phase("compile", "compiler", "compile"),
            _phase("regression", "eval", "run", gate="quality"),
        ),
        requires=("SystemSpec",),
        human_gate="skip",
        fixes_by_promotion=True,
    ),
    "optimize": Playbook(
        name="optimize",
        phases=(
            *ADOPT,
            _phase("instrument", "ops", "instrument"),
            _phase("compile", "compiler", "compile"),
            _phase("baseline", "eval", "run"),
            _phase("experiment", "optimizer", "propose"),
            _phase("recompile", "compiler", "compile"),
            _phase("ops_check", "ops", "check", gate="production"),
        ),
        requires=("SystemSpec",),
    ),
    "evaluate": Playbook(
        name="evaluate",
        phases=(
            *ADOPT,
            _phase("compile", "compiler", "compile"),
            _phase("evaluation", "eval", "run", gate="quality"),
        ),
        requires=("SystemSpec",),
        human_gate="skip",
    ),
    "harden": Playbook(
        name="harden",
        phases=(
            *ADOPT,
            _phase("instrument", "ops", "instrument"),
            _phase("compile", "compiler", "compile"),
            _phase("evaluation", "eval", "run", gate="quality"),
            _phase("ops_check", "ops", "check", gate="production"),
        ),
        requires=("SystemSpec",),
    ),
    "incident": Playbook(
        name="incident",
        phases=(
            *ADOPT,
            _phase("repro", "eval", "reproduce"),
            _phase("compile", "compiler", "compile"),
            _phase("regression", "eval", "run", gate="quality"),
            _phase("ops_check", "ops", "check", gate="production"),
        ),
        requires=("SystemSpec",),
        human_gate="required",
        fixes_by_promotion=True,
    ),
}


#: The most a request may ask of one budget dimension (a role's or the whole request's), by the
#: tenant's tier: twice, five times and ten times the standard build profile's global budget. Above
#: its tier's ceiling a request is refused, not clamped.
TIER_BUDGET_CEILINGS: dict[Tier, dict[BudgetDimension, int]] = {
    "free": {"max_steps": 200, "max_tokens": 1_000_000, "max_tool_calls": 800, "max_spawns": 120},
    "pro": {"max_steps": 500, "max_tokens": 2_500_000, "max_tool_calls": 2_000, "max_spawns": 300},
    "enterprise": {"max_steps": 1_000, "max_tokens": 5_000_000, "max_tool_calls": 4_000, "max_spawns": 600},
}
#: The highest ceiling of any tier: what a request is checked against before its tenant is known.
BUDGET_CEILINGS: dict[BudgetDimension, int] = TIER_BUDGET_CEILINGS["enterprise"]


class RoleBudget(BaseModel):
    model_config = ConfigDict(extra="forbid")

    max_steps: int = Field(ge=0)
    max_tokens: int = Field(ge=0)
    max_tool_calls: int = Field(ge=0)
    max_spawns: int = Field(ge=0)


def _budget(steps: int, tokens: int, tool_calls: int, spawns: int) -> RoleBudget:
    return RoleBudget(max_steps=steps, max_tokens=tokens, max_tool_calls=tool_calls, max_spawns=spawns)


#: The standard build profile (section 14.1).
#: Spawns and tool calls: the eval role runs each EvalSpec case as one worker (a tool call per
#: component), and a spec holds up to ``MAX_EVAL_CASES``: a request's cases are all run.
STANDARD_GLOBAL = _budget(100, 500_000, 400, 60)
STANDARD_ROLES: dict[str, RoleBudget] = {
    "architect": _budget(15, 80_000, 30, 5),
    "prompt_policy": _budget(10, 60_000, 20, 4),
    "tooling": _budget(10, 40_000, 30, 3),
    "eval": _budget(20, 100_000, 300, 50),
    "optimizer": _budget(15, 80_000, 30, 5),
    "ops": _budget(8, 30_000, 15, 2),
    "compiler": _budget(10, 60_000, 15, 3),
    "orchestrator": _budget(12, 50_000, 10, 0),
}


class ConstraintPack(BaseModel):
    """Lightweight signals gathered before the first phase (section 5.3), visible to every phase."""

    model_config = ConfigDict(extra="forbid")

    eval_constraints: dict[str, Any] = Field(
        default_factory=lambda: {"pass_threshold": 0.8, "metrics": ["pass_rate", "latency_p95_ms", "tokens"]}
    )
    tool_constraints: dict[str, list[str]] = Field(default_factory=dict)
    ops_constraints: dict[str, float] = Field(
        default_factory=lambda: {"latency_p95_ms_ceiling": 30_000.0, "tokens_per_case_ceiling": 20_000.0}
    )
    user_constraints: dict[str, str | float | int | bool | list[str]] = Field(default_factory=dict)
