"""The meta graph (seed 004 sections 1-3): routes work to the role leads, enforces budgets, gates, and
finalizes; it writes no artifact itself (it holds references and summaries only).

intake -> classify_intent -> determine_runtime_target -> gather_constraints -> select_playbook ->
allocate_budgets -> run_phase | compile_system, then classify_failure / gate_quality /
gate_production / gate_human -> decide_next_phase (next phase, bounded retry, compile_system,
gate_human, finalize).
"""

from __future__ import annotations

import contextlib
import re
import uuid
from typing import Annotated, Any, Literal, NotRequired, cast

from langchain_core.runnables import RunnableConfig
from langgraph.errors import GraphBubbleUp
from langgraph.graph import END, START, StateGraph
from langgraph.types import interrupt
from psycopg.types.json import Jsonb
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from typing_extensions import TypedDict

from master_agent.capabilities import load_tenant
from master_agent.capabilities.spec import Tier
from master_agent.errors import InputError
from master_agent.meta.artifacts import OWNERS, ArtifactType, Role, RuntimeTarget, parse_artifact
from master_agent.meta.broker import HistoryEntry, StateBroker, fold_history
from master_agent.meta.design import BUILD_REQUEST
from master_agent.meta.evaluation import record_request_metrics
from master_agent.meta.failures import FailureSignals, classify_failure
from master_agent.meta.playbooks import (
    BUDGET_CEILINGS,
    DIMENSIONS,
    INTENTS,
    MAX_LOOPS,
    PLAYBOOKS,
    STANDARD_GLOBAL,
    STANDARD_ROLES,
    TIER_BUDGET_CEILINGS,
    BudgetDimension,
    ConstraintPack,
    Intent,
    Phase,
    RoleBudget,
)
from master_agent.meta.roles import CONTEXT_KEY, REVISED, ROLE_GRAPHS, RoleContext, RoleResult, Spent
from master_agent.meta.targets import find_target, system_artifacts
from master_agent.runtime.resources import RESOURCES_KEY, RuntimeResources, shared_resources
from master_agent.runtime.tenant_agents import agent_catalogue

#: What each role does when a failure is routed back to it (None: nothing it can change by rule).
REVISE_TASK: dict[Role, str | None] = {
    "architect": "revise",
    "prompt_policy": "revise",
    "tooling": "revise",
    "eval": "design",
    "optimizer": None,
    "ops": None,
    "compiler": None,
}
#: The key of ``MetaRequest.budgets`` that sets the whole request's caps.
GLOBAL = "global"
#: A quality gate's pass rate in this band asks for a human review (section 10.1).
AMBIGUOUS_BAND = (0.4, 0.7)
_INTENT_WORDS: list[tuple[Intent, str]] = [
    ("incident", r"\b(incident|outage|paged|sev[ -]?\d|on[- ]call)\b"),
    ("debug", r"\b(debug|fix|broken|bug|failing|fails|crash(es)?|wrong)\b"),
    ("optimize", r"\b(optimi[sz]e|faster|cheaper|reduce (latency|cost)|improve)\b"),
    ("harden", r"\b(harden|secure|reliab|robust|guardrails?)\b"),
    ("evaluate", r"\b(evaluate|assess|benchmark|score|test)\b"),
]


_WANTS_SYSTEM = re.compile(
    r"\b(?:want|need|would like|put together|build|create|make|design|set up)\b.*"
    r"\b(?:agents?|system|team|pipeline|workflow)\b",
    re.I,
)


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


class MetaState(TypedDict):
    """Meta state (section 2.1): artifacts as references, history capped (section 2.2)."""

    request: dict[str, Any]
    request_id: NotRequired[str]
    intent: NotRequired[str]
    runtime_target: NotRequired[str]
    constraint_pack: NotRequired[dict[str, Any]]
    playbook: NotRequired[str]
    phases: NotRequired[list[dict[str, Any]]]
    phase_index: NotRequired[int]
    budgets: NotRequired[dict[str, Any]]
    """``global`` caps, ``per_role`` caps, ``spent`` per role, ``reallocated`` roles."""
    artifacts: NotRequired[dict[str, dict[str, Any]]]
    status: NotRequired[str]
    history: NotRequired[list[dict[str, Any]]]
    routing_trace: NotRequired[list[dict[str, Any]]]
    active_promotions: NotRequired[list[str]]
    """Pending PromotionDecisions (decision ids) for apply_promotion."""
    loops: NotRequired[dict[str, int]]
    last_result: NotRequired[dict[str, Any] | None]
    gates: NotRequired[dict[str, Any]]
    failure: NotRequired[dict[str, Any] | None]
    review: NotRequired[list[str]]
    """Why a human should look (a role's flag, an ambiguous gate, an exhausted budget)."""
    warnings: NotRequired[list[str]]
    registered_agent: NotRequired[str | None]
    """The tenant agent the latest compile registered."""
    left_undone: NotRequired[list[str]]
    error: NotRequired[str | None]
    """Why the request failed (set with ``status`` ``failed``)."""
    result: NotRequired[dict[str, Any]]


async def _resources(config: RunnableConfig) -> RuntimeResources:
    """The service's resources when it serves this graph; the process's shared ones otherwise
    (``langgraph dev``, the CLI)."""
    given = (config.get("configurable") or {}).get(RESOURCES_KEY)
    return given if isinstance(given, RuntimeResources) else await shared_resources()


def _tenant(config: RunnableConfig) -> str:
    tenant = (config.get("configurable") or {}).get("tenant_id")
    if not tenant:
        raise InputError("configurable.tenant_id", "the meta graph runs for a tenant")
    return str(tenant)


async def _broker(state: MetaState, config: RunnableConfig) -> StateBroker:
    resources = await _resources(config)
    return StateBroker(
        resources.database.pool,
        _tenant(config),
        uuid.UUID(state["request_id"]),
        resources.evolution.clock.now,
    )


async def _log(
    state: MetaState, config: RunnableConfig, phase: str, decision: str, outcome: str, **detail: Any
) -> list[dict[str, Any]]:
    """The in-state history with one more entry (the broker keeps every entry)."""
    entry = await (await _broker(state, config)).record(phase, decision, outcome, **detail)
    history = [HistoryEntry.model_validate(item) for item in state.get("history") or []]
    return [item.model_dump() for item in fold_history([*history, entry])]


def _trace(state: MetaState, node: str, why: str, **detail: Any) -> list[dict[str, Any]]:
    return [*(state.get("routing_trace") or []), {"node": node, "why": why, **detail}]


# --- The nodes -------------------------------------------------------------------------------------


async def intake(state: MetaState, config: RunnableConfig) -> dict[str, Any]:
    request = parse_request(state["request"])
    resources = await _resources(config)
    thread_id = (config.get("configurable") or {}).get("thread_id")
    broker = await StateBroker.open_request(
        resources.database.pool,
        _tenant(config),
        request.text,
        resources.evolution.clock.now,
        thread_id=str(thread_id) if thread_id else None,
    )
    update: dict[str, Any] = {
        "request": request.model_dump(mode="json"),
        "request_id": str(broker.request_id),
        "status": "running",
        "artifacts": {},
        "loops": {},
        "review": [],
        "warnings": [],
        "left_undone": [],
        "active_promotions": [],
        "gates": {},
        "history": [],
        "routing_trace": [],
    }
    update["history"] = await _log({**state, **update}, config, "intake", "accepted", request.text[:200])  # type: ignore[typeddict-item]
    return update


def intent_of(text: str) -> tuple[Intent, str]:
    """The playbook a request's words ask for: a build when it opens by asking for a system to be
    built; otherwise the intent named first in the text (a build only when none is named)."""
    if BUILD_REQUEST.match(text):
        return "build", "asks for a system to be built"
    # The first sentence says what is asked; the rest describes the system ("... names a linked outage
    # ticket" in a build request is no incident).
    first = re.split(r"(?<=[.!?])\s", text.strip(), maxsplit=1)[0]
    named = [(m.start(), name) for name, pattern in _INTENT_WORDS if (m := re.search(pattern, first, re.I))]
    if named:
        return min(named)[1], "named in its first sentence"
    if _WANTS_SYSTEM.search(first):
        return "build", "its first sentence asks for a system"
    found = [
        (match.start(), name, pattern)
        for name, pattern in _INTENT_WORDS
        if (match := re.search(pattern, text, re.I)) is not None
    ]
    if not found:
        return "build", "default"
    _, intent, pattern = min(found)
    return intent, f"matched {pattern}"


async def classify_intent(state: MetaState, config: RunnableConfig) -> dict[str, Any]:
    request = MetaRequest.model_validate(state["request"])
    if request.playbook is not None:
        intent, why = request.playbook, "asked for"
    else:
        intent, why = intent_of(request.text)
    assert intent in INTENTS
    update: dict[str, Any] = {"intent": intent}
    if intent != "build" and "SystemSpec" not in request.artifacts:
        # Work on an existing system: never a build in its place.
        resources = await _resources(config)
        pool = resources.database.pool
        target = await find_target(pool, _tenant(config), intent, request.text, request.name)
        if target.system is None and target.candidates and not request.autonomous:
            answer = interrupt(
                {
                    "kind": "meta_target",
                    "request_id": state["request_id"],
                    "questions": [target.problem],
                    "answers": list(target.candidates),
                }
            )
            chosen = str(answer.get("system") if isinstance(answer, dict) else answer)
            target = await find_target(pool, _tenant(config), intent, request.text, chosen)
        if target.system is None or target.request_id is None:
            return {
                **update,
                "status": "failed",
                "error": target.problem,
                "routing_trace": _trace(state, "classify_intent", why, intent=intent, target=None),
            }
        artifacts = await system_artifacts(pool, _tenant(config), target.request_id)
        request = request.model_copy(
            update={"artifacts": {**artifacts, **request.artifacts}, "name": target.system}
        )
        update["request"] = request.model_dump(mode="json")
        why = f"{why}; works on {target.system}"
    update["routing_trace"] = _trace(state, "classify_intent", why, intent=intent)
    return update


async def determine_runtime_target(state: MetaState, config: RunnableConfig) -> dict[str, Any]:
    request = MetaRequest.model_validate(state["request"])
    given = request.artifacts.get("SystemSpec", {}).get("runtime_target")
    if request.runtime is not None:
        target, why = request.runtime, "asked for"
    elif given:
        target, why = given, "the given SystemSpec's"
    elif re.search(r"\bhybrid\b", request.text, re.I):
        target, why = "hybrid", "the request names a hybrid"
    elif re.search(r"\b(deep ?agents?|recursive|open-ended|unknown number of steps)\b", request.text, re.I):
        target, why = "deepagent", "open-ended work: recursion zone"
    else:
        target, why = "langgraph", "enumerable paths: graph zone"
    return {
        "runtime_target": target,
        "routing_trace": _trace(state, "determine_runtime_target", why, target=target),
    }


async def gather_constraints(state: MetaState, config: RunnableConfig) -> dict[str, Any]:
    request = MetaRequest.model_validate(state["request"])
    resources = await _resources(config)
    tenant = await load_tenant(resources.database.pool, _tenant(config))
    catalogue = await agent_catalogue(resources, tenant)
    pack = ConstraintPack(
        tool_constraints={"available": sorted(catalogue.tools), "tables": list(catalogue.tables or ())}
    )
    _constrain(pack, request.constraints)
    return {"constraint_pack": pack.model_dump(mode="json")}


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


async def select_playbook(state: MetaState, config: RunnableConfig) -> dict[str, Any]:
    request = MetaRequest.model_validate(state["request"])
    playbook = PLAYBOOKS[state["intent"]]  # type: ignore[index]
    missing = [name for name in playbook.requires if name not in request.artifacts]
    update: dict[str, Any] = {
        "playbook": playbook.name,
        "phases": [phase.model_dump() for phase in playbook.phases],
        "phase_index": 0,
    }
    if missing:
        update["status"] = "failed"
        update["left_undone"] = [f"the {playbook.name} playbook needs {', '.join(missing)}"]
    update["history"] = await _log(
        state, config, "select_playbook", playbook.name, "missing: " + ", ".join(missing) if missing else "ok"
    )
    return update


async def allocate_budgets(state: MetaState, config: RunnableConfig) -> dict[str, Any]:
    request = MetaRequest.model_validate(state["request"])
    per_role = {role: budget.model_dump() for role, budget in STANDARD_ROLES.items()}
    whole = STANDARD_GLOBAL.model_dump()
    for role, caps in request.budgets.items():
        (whole if role == GLOBAL else per_role[role]).update(caps)
    return {
        "budgets": {
            "global": whole,
            "per_role": per_role,
            "spent": {role: Spent().model_dump() for role in per_role},
            "reallocated": [],
        }
    }


def _used(spent: Spent) -> dict[str, int]:
    """A spend by budget dimension."""
    return dict(zip(DIMENSIONS, (spent.steps, spent.tokens, spent.tool_calls, spent.spawns), strict=True))


def _left(caps: dict[str, int], spent: Spent) -> dict[str, int]:
    used = _used(spent)
    return {dim: max(caps[dim] - used[dim], 0) for dim in DIMENSIONS}


def _spent_in_all(budgets: dict[str, Any]) -> Spent:
    total = Spent()
    for spent in budgets["spent"].values():
        total = total.add(Spent.model_validate(spent))
    return total


def _remaining(budgets: dict[str, Any], role: str) -> RoleBudget:
    """What ``role`` may still spend: its own caps, bound by what the request's global budget has left."""
    own = _left(budgets["per_role"][role], Spent.model_validate(budgets["spent"][role]))
    whole = _left(budgets["global"], _spent_in_all(budgets))
    return RoleBudget(**{dim: min(own[dim], whole[dim]) for dim in DIMENSIONS})


async def _lead(
    state: MetaState, config: RunnableConfig, role: Role, task: str, **context: Any
) -> RoleResult:
    """One task of a role lead (its subgraph), with what the role may still spend."""
    request = MetaRequest.model_validate(state["request"])
    ctx = RoleContext(
        resources=await _resources(config),
        broker=await _broker(state, config),
        tenant_id=_tenant(config),
        request=request.text,
        runtime_target=state["runtime_target"],  # type: ignore[arg-type]
        constraints=ConstraintPack.model_validate(state["constraint_pack"]),
        budget=_remaining(state["budgets"], role),
        given={name: value for name, value in request.artifacts.items() if OWNERS[name] == role},
        system_name=request.name,
        **context,
    )
    out = await ROLE_GRAPHS[role].ainvoke(
        {"task": task, "result": None},
        {**config, "configurable": {**(config.get("configurable") or {}), CONTEXT_KEY: ctx}},
    )
    return RoleResult.model_validate(out["result"])


def _charge(budgets: dict[str, Any], result: RoleResult) -> tuple[Spent, RoleResult]:
    """What the role has spent with this result; a done result over a cap becomes exhausted."""
    spent = Spent.model_validate(budgets["spent"][result.role]).add(result.spent)
    over = spent.over(RoleBudget.model_validate(budgets["per_role"][result.role]))
    if over and result.status == "done":
        result = result.model_copy(
            update={"status": "budget_exhausted", "note": f"{result.note}; over {', '.join(over)}"}
        )
    return spent, result


async def _dispatch(state: MetaState, config: RunnableConfig, node: str) -> dict[str, Any]:
    phase = Phase.model_validate(state["phases"][state["phase_index"]])
    budgets = state["budgets"]
    remaining = _remaining(budgets, phase.role)
    failure = state.get("failure") or {}
    if remaining.max_steps <= 0:
        result = RoleResult(
            role=phase.role,
            task=phase.task,
            status="budget_exhausted",
            note="no steps left",
            left_undone=[phase.id],
        )
    else:
        result = await _lead(
            state,
            config,
            phase.role,
            phase.task,
            feedback=failure.get("feedback"),
            failure_errors=list(failure.get("compile_errors") or []),
            target_role=failure.get("route_to") if phase.role == "optimizer" else None,
        )
    spent, result = _charge(budgets, result)
    artifacts = dict(state.get("artifacts") or {})
    for ref in result.wrote:
        artifacts[ref.type] = ref.model_dump()
    left = list(state.get("left_undone") or [])
    if result.status == "done":
        left.extend(result.left_undone)
    review = list(state.get("review") or [])
    if result.needs_human_review:
        review.append(f"{phase.role}: {result.note}")
    warnings = list(state.get("warnings") or [])
    if result.fallback:
        warnings.append(f"{phase.role}: {result.fallback}")
    update: dict[str, Any] = {}
    if "_fix_" in phase.id and result.status == "done" and not result.wrote and request_autonomous(state):
        # The failure routed here has no fix by rule, and no human waits to give one: it ends here.
        update["status"] = "failed"
        update["error"] = f"{phase.id}: {result.note}; the failure stays: {failure.get('feedback') or '-'}"
    if result.proposed:
        update["active_promotions"] = [*(state.get("active_promotions") or []), *result.proposed]
    return {
        **update,
        "last_result": result.model_dump(mode="json"),
        "artifacts": artifacts,
        "budgets": {**budgets, "spent": {**budgets["spent"], phase.role: spent.model_dump()}},
        "review": review,
        "warnings": warnings,
        "left_undone": left,
        "failure": None,
        "history": await _log(
            state, config, phase.id, f"{phase.role}.{phase.task}", result.status, note=result.note
        ),
        "routing_trace": _trace(
            state, node, f"phase {phase.id}", role=phase.role, task=phase.task, status=result.status
        ),
    }


def request_autonomous(state: MetaState) -> bool:
    return bool(state["request"].get("autonomous", True))


async def run_phase(state: MetaState, config: RunnableConfig) -> dict[str, Any]:
    return await _dispatch(state, config, "run_phase")


async def compile_system(state: MetaState, config: RunnableConfig) -> dict[str, Any]:
    return await _dispatch(state, config, "compile_system")


def after_phase(state: MetaState) -> str:
    if state.get("status") == "failed":
        return "finalize"
    result = RoleResult.model_validate(state["last_result"])
    phase = Phase.model_validate(state["phases"][state["phase_index"]])
    if result.status == "failed":
        return "classify_failure"
    if state.get("active_promotions"):
        return "apply_promotion"
    if result.status == "budget_exhausted" and not (phase.gate == "quality" and result.metrics):
        return "decide_next_phase"
    # An evaluation that went over its budget after measuring is still judged by its gate: its
    # partial report never lets a system through ungated.
    if not result.metrics:  # nothing measured (e.g. a runtime not runnable yet): no gate to pass
        return "decide_next_phase"
    if phase.gate == "quality":
        return "gate_quality"
    if phase.gate == "production":
        return "gate_production"
    return "decide_next_phase"


async def gate_quality(state: MetaState, config: RunnableConfig) -> dict[str, Any]:
    result = RoleResult.model_validate(state["last_result"])
    rate, threshold = result.metrics.get("pass_rate", 0.0), result.metrics.get("threshold", 0.8)
    # A requirement the system does not honour fails the gate, whatever the pass rate.
    passed = rate >= threshold and not result.unmet
    review = list(state.get("review") or [])
    if AMBIGUOUS_BAND[0] <= rate <= AMBIGUOUS_BAND[1]:
        review.append(f"quality gate: pass rate {rate:.2f} is in the ambiguous band")
    outcome: dict[str, Any] = {"passed": passed, "pass_rate": rate, "threshold": threshold}
    if result.unmet:
        outcome["unmet"] = list(result.unmet)
    gates = {**(state.get("gates") or {}), "quality": outcome}
    extra: dict[str, Any] = {}
    if result.unmet:
        # Unmet requirements are not fixed by the rule-based revisions: the request ends partial,
        # saying which, and the system is not registered.
        extra = {
            "status": "partial",
            "left_undone": [*(state.get("left_undone") or []), *(f"requirement {u}" for u in result.unmet)],
        }
    return {
        **extra,
        "gates": gates,
        "review": review,
        "failure": None
        if passed or result.unmet
        else {"signals": (result.signals or FailureSignals()).model_dump(mode="json")},
        "history": await _log(
            state,
            config,
            "gate_quality",
            "pass" if passed else "fail",
            f"{rate:.2f} vs {threshold:.2f}"
            + (f"; unmet: {'; '.join(result.unmet)}"[:400] if result.unmet else ""),
        ),
    }


async def gate_production(state: MetaState, config: RunnableConfig) -> dict[str, Any]:
    result = RoleResult.model_validate(state["last_result"])
    signals = result.signals or FailureSignals()
    passed = not signals.metric_failures
    gates = {**(state.get("gates") or {}), "production": {"passed": passed, **result.metrics}}
    return {
        "gates": gates,
        "failure": None if passed else {"signals": signals.model_dump(mode="json")},
        "history": await _log(state, config, "gate_production", "pass" if passed else "fail", result.note),
    }


async def apply_promotion(state: MetaState, config: RunnableConfig) -> dict[str, Any]:
    """Section 9: each pending PromotionDecision goes to the owner of its target, who applies it as a
    new version (accepted), applies it with changes of its own (modified) or refuses it (rejected).
    After a change, the phases from the owner's own up to this one run again (their gates re-run);
    after a refusal the playbook goes on."""
    broker = await _broker(state, config)
    pending = {str(p.decision_id): p for p in await broker.promotions() if p.status == "pending"}
    phases, index = list(state.get("phases") or []), state.get("phase_index", 0)
    budgets = dict(state["budgets"])
    artifacts = dict(state.get("artifacts") or {})
    history, trace = state.get("history") or [], state.get("routing_trace") or []
    changed_owners: list[Role] = []
    last: RoleResult | None = None
    for decision_id in state.get("active_promotions") or []:
        promotion = pending.get(decision_id)
        if promotion is None:
            continue
        owner = OWNERS[promotion.target_artifact]
        result = await _lead(
            {**state, "budgets": budgets},
            config,
            owner,
            "apply",
            promotion_id=decision_id,
        )
        spent, result = _charge(budgets, result)
        budgets = {**budgets, "spent": {**budgets["spent"], owner: spent.model_dump()}}
        for ref in result.wrote:
            artifacts[ref.type] = ref.model_dump()
        decided = result.promotion.status if result.promotion else "undecided"
        if decided in ("accepted", "modified"):
            changed_owners.append(owner)
        history = await _log(
            {**state, "history": history},
            config,
            "apply_promotion",
            f"{owner}: {decided}",
            result.note,
            decision_id=decision_id,
            target=promotion.target_artifact,
        )
        trace = [*trace, {"node": "apply_promotion", "why": result.note, "owner": owner, "decision": decided}]
        last = result
    rerun: list[dict[str, Any]] = []
    if changed_owners:
        owned = min(
            (i for i, p in enumerate(phases[: index + 1]) if p["role"] in changed_owners), default=index
        )
        rerun = [
            p for p in phases[owned + 1 : index + 1] if p["role"] != "optimizer" and "_fix_" not in p["id"]
        ]
    return {
        "active_promotions": [],
        "phases": [*phases[: index + 1], *rerun, *phases[index + 1 :]],
        "budgets": budgets,
        "artifacts": artifacts,
        "history": history,
        "routing_trace": trace,
        "last_result": (last or RoleResult.model_validate(state["last_result"])).model_dump(mode="json"),
    }


def after_gate(state: MetaState) -> str:
    if state.get("status") in ("failed", "partial"):
        return "finalize"
    return "classify_failure" if state.get("failure") else "decide_next_phase"


async def classify_failure_node(state: MetaState, config: RunnableConfig) -> dict[str, Any]:
    failure = state.get("failure") or {}
    result = RoleResult.model_validate(state["last_result"])
    signals = FailureSignals.model_validate(
        failure.get("signals") or (result.signals or FailureSignals()).model_dump()
    )
    classification = classify_failure(signals)
    evidence = "; ".join(f"{m.rule}: {m.evidence}" for m in classification.matched if m.evidence)
    return {
        "failure": {
            "route_to": classification.route_to,
            "rule": classification.priority,
            "feedback": evidence or result.note,
            "compile_errors": [e.model_dump() for e in signals.compile_errors],
            "signals": signals.model_dump(mode="json"),
        },
        "routing_trace": _trace(
            state,
            "classify_failure",
            f"rule {classification.priority}: {classification.rule}",
            route_to=classification.route_to,
            matched=[m.model_dump() for m in classification.matched],
        ),
        "history": await _log(
            state,
            config,
            "classify_failure",
            classification.route_to,
            f"rule {classification.priority}",
            matched=[m.priority for m in classification.matched],
        ),
    }


def _next_phase_node(phases: list[dict[str, Any]], index: int) -> str:
    return "compile_system" if phases[index]["role"] == "compiler" else "run_phase"


async def decide_next_phase(state: MetaState, config: RunnableConfig) -> dict[str, Any]:
    """Deterministic routing on the gates, the failure classification and the budgets."""
    phases = list(state.get("phases") or [])
    index = state.get("phase_index", 0)
    request = MetaRequest.model_validate(state["request"])
    if state.get("status") == "failed":
        return {"routing_trace": _trace(state, "decide_next_phase", "cannot start", go="finalize")}
    failure = state.get("failure")
    if failure:
        role: Role = failure["route_to"]
        loops = dict(state.get("loops") or {})
        loops[role] = loops.get(role, 0) + 1
        task = REVISE_TASK[role]
        by_promotion = PLAYBOOKS[state["intent"]].fixes_by_promotion and role in REVISED  # type: ignore[index]
        if task is None or loops[role] > MAX_LOOPS:
            why = f"{role} has no revision by rule" if task is None else f"{role} sent back {MAX_LOOPS} times"
            return {
                "loops": loops,
                "status": "partial",
                "left_undone": [*(state.get("left_undone") or []), f"{phases[index]['id']}: {why}"],
                "routing_trace": _trace(state, "decide_next_phase", why, go="finalize"),
            }
        if by_promotion:
            # The Optimizer proposes the fix; apply_promotion has the owner decide it and queues
            # the phases to run again.
            fix = Phase(id=f"{role}_fix_{loops[role]}", role="optimizer", task="propose").model_dump()
            return {
                "phases": [*phases[: index + 1], fix, *phases[index + 1 :]],
                "phase_index": index + 1,
                "loops": loops,
                "routing_trace": _trace(
                    state, "decide_next_phase", f"retry {loops[role]}: a promotion for {role}", go=fix["id"]
                ),
            }
        # Bounded retry: the owner revises, then everything from the first phase after its own
        # up to the failing one runs again.
        fix = Phase(id=f"{role}_fix_{loops[role]}", role=role, task=task).model_dump()
        owned = next((i for i, p in enumerate(phases[: index + 1]) if p["role"] == role), index)
        rerun = [
            p
            for p in phases[owned + 1 : index + 1]
            if not p["id"].endswith(tuple(f"_fix_{n}" for n in range(1, 9)))
        ]
        phases = [*phases[: index + 1], fix, *rerun, *phases[index + 1 :]]
        return {
            "phases": phases,
            "phase_index": index + 1,
            "loops": loops,
            "routing_trace": _trace(
                state, "decide_next_phase", f"retry {loops[role]} via {role}", go=fix["id"]
            ),
        }
    result = RoleResult.model_validate(state["last_result"]) if state.get("last_result") else None
    if result is not None and result.status == "budget_exhausted":
        return await _exhausted(state, config, result, request)
    if index + 1 < len(phases):
        return {
            "phase_index": index + 1,
            "routing_trace": _trace(state, "decide_next_phase", "next phase", go=phases[index + 1]["id"]),
        }
    return {
        "routing_trace": _trace(state, "decide_next_phase", "playbook done", go="finalize"),
        "phase_index": len(phases),
    }


async def _exhausted(
    state: MetaState, config: RunnableConfig, result: RoleResult, request: MetaRequest
) -> dict[str, Any]:
    """Section 14.2: usable partial output goes on with a warning; otherwise up to 50 % of what the other
    roles left unspent is reallocated (once per role); otherwise a human decides; autonomous: partial."""
    phases, index = list(state.get("phases") or []), state.get("phase_index", 0)
    budgets = dict(state["budgets"])
    role = result.role
    if result.wrote:
        warning = f"{role} ran out of budget; its partial {', '.join(r.type for r in result.wrote)} is used"
        nxt = index + 1
        return {
            "warnings": [*(state.get("warnings") or []), warning],
            "left_undone": [*(state.get("left_undone") or []), *result.left_undone],
            "phase_index": nxt if nxt < len(phases) else len(phases),
            "routing_trace": _trace(
                state, "decide_next_phase", warning, go=phases[nxt]["id"] if nxt < len(phases) else "finalize"
            ),
        }
    # Reallocation is possible when the dimensions the role ran out of can gain: up to 50 % of what
    # the other roles left unspent, within what the request's global budget has left.
    exhausted = [dim for dim, left in _remaining(budgets, role).model_dump().items() if left <= 0]
    whole = _left(budgets["global"], _spent_in_all(budgets))
    gained: dict[str, int] = {}
    for dim in DIMENSIONS:
        unused = sum(
            _left(budgets["per_role"][other], Spent.model_validate(budgets["spent"][other]))[dim]
            for other in budgets["per_role"]
            if other not in (role, "orchestrator")
        )
        gained[dim] = min(unused // 2, whole[dim])
    if role not in budgets["reallocated"] and all(gained[dim] > 0 for dim in exhausted):
        caps = {dim: budgets["per_role"][role][dim] + gained[dim] for dim in DIMENSIONS}
        budgets = {
            **budgets,
            "per_role": {**budgets["per_role"], role: caps},
            "reallocated": [*budgets["reallocated"], role],
        }
        return {
            "budgets": budgets,
            "last_result": None,
            "routing_trace": _trace(
                state, "decide_next_phase", f"reallocated to {role}", gained=gained, go=phases[index]["id"]
            ),
            "history": await _log(state, config, "budgets", f"reallocate to {role}", str(gained)),
        }
    why = f"{role} exhausted its budget in {phases[index]['id']}; no reallocation possible"
    if not request.autonomous:
        return {
            "review": [*(state.get("review") or []), why],
            "status": "awaiting_human",
            "routing_trace": _trace(state, "decide_next_phase", why, go="gate_human"),
        }
    return {
        "status": "partial",
        "left_undone": [*(state.get("left_undone") or []), *(result.left_undone or [phases[index]["id"]])],
        "routing_trace": _trace(state, "decide_next_phase", why, go="finalize"),
    }


def after_decision(state: MetaState) -> str:
    phases, index = list(state.get("phases") or []), state.get("phase_index", 0)
    if state.get("status") == "failed":
        return "finalize"
    if state.get("status") in ("partial", "awaiting_human"):
        return "gate_human" if state.get("status") == "awaiting_human" else "finalize"
    if index < len(phases):
        return _next_phase_node(phases, index)
    request = MetaRequest.model_validate(state["request"])
    placement = request.human_gate or PLAYBOOKS[state["intent"]].human_gate  # type: ignore[index]
    if placement == "required" or (placement == "optional" and state.get("review")):
        return "gate_human"
    return "register"


class HumanAnswer(BaseModel):
    """One of the human gate's five answers (section 10.2)."""

    model_config = ConfigDict(extra="forbid")

    action: Literal["approve", "reject", "budget_override", "terminate", "inject_constraints"]
    role: Role | None = None
    """reject: the role the feedback goes to (default architect); budget_override: whose caps."""
    feedback: str | None = None
    caps: dict[str, Annotated[int, Field(ge=0)]] = Field(default_factory=dict)
    constraints: dict[str, str | float | int | bool | list[str]] = Field(default_factory=dict)


def parse_human_answer(payload: Any) -> HumanAnswer:
    """The human gate's answer (a run's ``command.resume``), or an ``InputError`` naming the field."""
    try:
        answer = HumanAnswer.model_validate(payload)
    except ValidationError as error:
        raise InputError.from_validation(error, prefix="resume") from None
    unknown = sorted(set(answer.caps) - set(DIMENSIONS))
    if unknown:
        raise InputError(f"resume.caps.{unknown[0]}", f"caps are {list(DIMENSIONS)}")
    if answer.action == "budget_override" and not answer.caps:
        raise InputError("resume.caps", "a budget override names the caps it raises")
    if answer.action == "inject_constraints" and not answer.constraints:
        raise InputError("resume.constraints", "name the constraints to inject")
    try:
        _constrain(ConstraintPack(), answer.constraints)
    except InputError as error:
        raise error.under("resume") from None
    return answer


async def gate_human(state: MetaState, config: RunnableConfig) -> dict[str, Any]:
    request = MetaRequest.model_validate(state["request"])
    broker = await _broker(state, config)
    summaries = await broker.summaries(list(state.get("artifacts") or {}))  # type: ignore[arg-type]
    asked = {
        "kind": "meta_review",
        "request_id": state["request_id"],
        "questions": list(state.get("review") or []) or ["approve the result before it is finalized?"],
        "artifacts": summaries,
        "gates": state.get("gates") or {},
        "routing_trace": (state.get("routing_trace") or [])[-10:],
        "answers": ["approve", "reject", "budget_override", "terminate", "inject_constraints"],
    }
    if request.autonomous:
        return {
            "status": "running" if state.get("status") != "partial" else "partial",
            "history": await _log(
                state,
                config,
                "gate_human",
                "auto-approved",
                "autonomous mode: no human waits",
                asked=asked["questions"],
            ),
            "routing_trace": _trace(state, "gate_human", "auto-approved (autonomous)", go="finalize"),
            "review": [],
        }
    answer = parse_human_answer(interrupt(asked))
    history = await _log(
        state, config, "gate_human", answer.action, answer.feedback or "", answer=answer.model_dump()
    )
    phases, index = list(state.get("phases") or []), state.get("phase_index", 0)
    update: dict[str, Any] = {"history": history, "review": [], "status": "running"}
    if answer.action == "approve":
        last = state.get("last_result") or {}
        if last.get("status") == "budget_exhausted":
            # Approved to go on without the exhausted phase's work.
            update["left_undone"] = [*(state.get("left_undone") or []), phases[index]["id"]]
            update["phase_index"] = index + 1
            update["last_result"] = None
        update["routing_trace"] = _trace(state, "gate_human", "approved", go="continue")
    elif answer.action == "terminate":
        update["status"] = "partial"
        update["left_undone"] = [*(state.get("left_undone") or []), *(p["id"] for p in phases[index:])]
        update["routing_trace"] = _trace(state, "gate_human", "terminated by a human", go="finalize")
    elif answer.action == "reject":
        role = answer.role or "architect"
        update["failure"] = {
            "route_to": role,
            "rule": 0,
            "feedback": answer.feedback or "rejected by a human",
            "compile_errors": [],
        }
        update["phase_index"] = min(index, len(phases) - 1)
        update["routing_trace"] = _trace(state, "gate_human", f"rejected: back to {role}", go=role)
    elif answer.action == "budget_override":
        last_role = (
            RoleResult.model_validate(state["last_result"]).role if state.get("last_result") else "eval"
        )
        role = answer.role or last_role
        budgets = dict(state["budgets"])
        caps = {**budgets["per_role"][role], **answer.caps}
        # The request's global budget grows by what the role is now allowed beyond it.
        own_left = _left(caps, Spent.model_validate(budgets["spent"][role]))
        total = _used(_spent_in_all(budgets))
        whole = {dim: max(budgets["global"][dim], total[dim] + own_left[dim]) for dim in DIMENSIONS}
        update["budgets"] = {**budgets, "global": whole, "per_role": {**budgets["per_role"], role: caps}}
        update["last_result"] = None
        update["phase_index"] = min(index, len(phases) - 1)
        update["routing_trace"] = _trace(
            state, "gate_human", f"budget of {role} raised", caps=caps, go=phases[update["phase_index"]]["id"]
        )
    else:
        pack = ConstraintPack.model_validate(state["constraint_pack"])
        changed = _constrain(pack, answer.constraints)
        update["constraint_pack"] = pack.model_dump(mode="json")
        # The phases of the roles whose artifacts carry the new constraints run again under them,
        # before the rest (a phase stopped by its budget runs again too).
        stopped = (state.get("last_result") or {}).get("status") == "budget_exhausted"
        at = index if stopped else min(index + 1, len(phases))
        again = [
            {**p, "id": f"{p['id']}_again"}
            for p in phases[:at]
            if p["role"] in changed and not p["id"].endswith("_again")
        ]
        update["phases"] = [*phases[:at], *again, *phases[at:]]
        update["phase_index"] = at
        update["last_result"] = None
        update["routing_trace"] = _trace(
            state,
            "gate_human",
            "constraints injected",
            added=list(answer.constraints),
            go=again[0]["id"] if again else "continue",
        )
    return update


def after_human(state: MetaState) -> str:
    if state.get("status") in ("partial", "failed"):
        return "finalize"
    if state.get("failure"):
        return "decide_next_phase"
    phases, index = list(state.get("phases") or []), state.get("phase_index", 0)
    if state.get("last_result") is None and index < len(phases):
        return _next_phase_node(phases, index)
    return "register"


#: Playbooks whose result is a system to put in place (an evaluation changes nothing).
REGISTERING: frozenset[str] = frozenset({"build", "debug", "optimize", "harden", "incident"})


async def register(state: MetaState, config: RunnableConfig) -> dict[str, Any]:
    """Make the compiled system the tenant's agents, once every gate passed (and, where the human
    gate is on, after its approval: this node runs after it). Until here nothing is routable."""
    failed = [name for name, gate in (state.get("gates") or {}).items() if not gate.get("passed")]
    why = None
    if state.get("intent") not in REGISTERING:
        why = f"the {state.get('intent')} playbook changes no system"
    elif failed:
        why = f"gates not passed: {', '.join(failed)}"
    elif "CompiledSpec" not in (state.get("artifacts") or {}):
        why = "nothing compiled"
    if why is not None:
        return {"routing_trace": _trace(state, "register", f"not registered: {why}", go="finalize")}
    result = await _lead(state, config, "compiler", "register")
    artifacts = dict(state.get("artifacts") or {})
    for ref in result.wrote:
        artifacts[ref.type] = ref.model_dump()
    return {
        "registered_agent": result.registered_agent,
        "artifacts": artifacts,
        "history": await _log(state, config, "register", "compiler.register", result.note),
        "routing_trace": _trace(state, "register", result.note, go="finalize"),
    }


MARK_FAILED = """
UPDATE meta_requests SET status = 'failed', result = %s, updated_at = now()
WHERE request_id = %s AND tenant_id = %s
"""


async def _finalize_or_fail(state: MetaState, config: RunnableConfig) -> dict[str, Any]:
    """``finalize``; when it cannot finish, the request's row still ends ``failed`` with the reason."""
    try:
        return await finalize(state, config)
    except GraphBubbleUp:
        raise
    except Exception as error:
        reason = f"finalize: {error}"
        result = {"status": "failed", "request_id": state.get("request_id"), "error": reason}
        if state.get("request_id"):
            resources = await _resources(config)
            async with resources.database.pool.connection() as conn:
                await conn.execute(
                    MARK_FAILED, (Jsonb(result), uuid.UUID(state["request_id"]), _tenant(config))
                )
        return {"status": "failed", "error": reason, "result": result}


async def finalize(state: MetaState, config: RunnableConfig) -> dict[str, Any]:
    resources = await _resources(config)
    broker = await _broker(state, config)
    artifacts = state.get("artifacts") or {}
    status = state.get("status") or "running"
    if status == "running":
        status = "partial" if state.get("left_undone") else "done"
    registered = state.get("registered_agent")
    result = {
        "status": status,
        "request_id": state.get("request_id"),
        "intent": state.get("intent"),
        "runtime_target": state.get("runtime_target"),
        "playbook": state.get("playbook"),
        "registered_agent": registered,
        "artifacts": artifacts,
        "summaries": await broker.summaries(list(artifacts)),  # type: ignore[arg-type]
        "gates": state.get("gates") or {},
        "warnings": state.get("warnings") or [],
        "left_undone": state.get("left_undone") or [],
        "error": state.get("error"),
        "loops": state.get("loops") or {},
        "promotions": [p.model_dump(mode="json") for p in await broker.promotions()],
    }
    await record_request_metrics(resources.database.pool, broker, state, result)
    return {
        "status": status,
        "result": result,
        "history": await _log(state, config, "finalize", status, f"agent {registered or '-'}"),
    }


Node = Any


def _guarded(name: str, node: Node) -> Node:
    """``node`` ending the request ``failed`` with the reason when it raises (an interrupt still
    bubbles up): no error leaves a request ``running``."""

    async def run(state: MetaState, config: RunnableConfig) -> dict[str, Any]:
        try:
            return cast(dict[str, Any], await node(state, config))
        except GraphBubbleUp:
            raise
        except Exception as error:  # every failure of a step is the request's failure, with its reason
            reason = f"{name}: {error}" if str(error) else f"{name}: {type(error).__name__}"
            update: dict[str, Any] = {
                "status": "failed",
                "error": reason,
                "routing_trace": _trace(state, name, "failed", error=reason, go="finalize"),
            }
            # The history is a record; when it cannot be written the failure still ends the request.
            with contextlib.suppress(Exception):
                update["history"] = await _log(state, config, name, "failed", reason[:500])
            return update

    run.__name__ = name
    return run


def _or_finalize(target: str) -> Any:
    def route(state: MetaState) -> str:
        return "finalize" if state.get("status") == "failed" else target

    return route


def build_meta_graph() -> StateGraph[MetaState, Any, Any, Any]:
    graph: StateGraph[MetaState, Any, Any, Any] = StateGraph(MetaState)
    for name, node in [
        ("intake", intake),
        ("classify_intent", classify_intent),
        ("determine_runtime_target", determine_runtime_target),
        ("gather_constraints", gather_constraints),
        ("select_playbook", select_playbook),
        ("allocate_budgets", allocate_budgets),
        ("run_phase", run_phase),
        ("compile_system", compile_system),
        ("classify_failure", classify_failure_node),
        ("apply_promotion", apply_promotion),
        ("gate_quality", gate_quality),
        ("gate_production", gate_production),
        ("gate_human", gate_human),
        ("decide_next_phase", decide_next_phase),
        ("register", register),
    ]:
        # intake raises on a bad request before anything is stored (a 4xx); every later step is guarded.
        graph.add_node(name, node if name == "intake" else _guarded(name, node))
    graph.add_node("finalize", _finalize_or_fail)
    graph.add_edge(START, "intake")
    for source, target in [
        ("intake", "classify_intent"),
        ("classify_intent", "determine_runtime_target"),
        ("determine_runtime_target", "gather_constraints"),
        ("gather_constraints", "select_playbook"),
        ("select_playbook", "allocate_budgets"),
        ("apply_promotion", "decide_next_phase"),
        ("classify_failure", "decide_next_phase"),
    ]:
        graph.add_conditional_edges(source, _or_finalize(target), [target, "finalize"])
    graph.add_conditional_edges(
        "allocate_budgets",
        lambda s: "finalize" if s.get("status") == "failed" else _next_phase_node(list(s["phases"]), 0),
        ["run_phase", "compile_system", "finalize"],
    )
    for dispatcher in ("run_phase", "compile_system"):
        graph.add_conditional_edges(
            dispatcher,
            after_phase,
            [
                "classify_failure",
                "apply_promotion",
                "gate_quality",
                "gate_production",
                "decide_next_phase",
                "finalize",
            ],
        )
    graph.add_conditional_edges(
        "gate_quality", after_gate, ["classify_failure", "decide_next_phase", "finalize"]
    )
    graph.add_conditional_edges(
        "gate_production", after_gate, ["classify_failure", "decide_next_phase", "finalize"]
    )
    graph.add_conditional_edges(
        "decide_next_phase",
        after_decision,
        ["run_phase", "compile_system", "gate_human", "register", "finalize"],
    )
    graph.add_conditional_edges(
        "gate_human",
        after_human,
        ["run_phase", "compile_system", "decide_next_phase", "register", "finalize"],
    )
    graph.add_edge("register", "finalize")
    graph.add_edge("finalize", END)
    return graph


def make_meta_graph(config: RunnableConfig) -> StateGraph[MetaState, Any, Any, Any]:
    """Graph factory of the ``meta`` graph (the service and ``langgraph dev`` add the checkpointer)."""
    return build_meta_graph()
