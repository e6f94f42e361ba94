"""The role leads (seed 004 section 4), each a subgraph of its own that writes only the artifacts it owns
(the broker refuses anything else) and reads the others through the broker under its own role.

A lead takes one task of a phase (``design``, ``adopt``, ``revise``, ``run``, ``check``, ``compile``...)
and returns a ``RoleResult``: what it wrote, what it spent (steps, tokens, tool calls, spawns), the
failure signals of a failing task, and whether it wants a human to look.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from langchain_core.messages import BaseMessage
from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from pydantic import BaseModel, Field
from typing_extensions import TypedDict

from master_agent.capabilities.agents import AgentDocument
from master_agent.errors import InputError, MasterAgentError
from master_agent.meta.artifacts import (
    ARTIFACT_MODELS,
    MAX_EVAL_CASES,
    Artifact,
    ArtifactType,
    BugReport,
    CaseResult,
    CompiledSpec,
    EvalSpec,
    Experiment,
    ExperimentReport,
    ExperimentSpec,
    PromotionDecision,
    PromptPack,
    Role,
    SLOReport,
    SystemSpec,
    TelemetrySpec,
    ToolContract,
    apply_changes,
    artifact_type_of,
    diff_changes,
    parse_artifact,
)
from master_agent.meta.broker import ArtifactRef, Promotion, StateBroker
from master_agent.meta.compiler import CompileFailed, compile_system, validate_system
from master_agent.meta.design import (
    answer_gaps,
    design_prompts,
    design_system,
    design_tools,
    repair_system,
    sensed_eval,
    with_requirements,
)
from master_agent.meta.drafting import Draft, model_draft
from master_agent.meta.failures import CompileError, FailureSignals, MetricFailure, ToolError
from master_agent.meta.playbooks import ConstraintPack, RoleBudget
from master_agent.meta.systems import free_system_name, register_system
from master_agent.runtime.factory import candidate_graph
from master_agent.runtime.resources import RuntimeResources

RoleStatus = Literal["done", "failed", "budget_exhausted"]
#: Evaluation cases of one request that run at the same time: the spawn budget says how many may run,
#: not how many at once.
MAX_PARALLEL_CASES = 4
#: Connections a tenant's reader role may hold at once (``CONNECTION LIMIT`` in ``tools/readers.py``).
READER_CONNECTIONS = 8


class Spent(BaseModel):
    steps: int = 0
    tokens: int = 0
    tool_calls: int = 0
    spawns: int = 0

    def add(self, other: Spent) -> Spent:
        return Spent(
            steps=self.steps + other.steps,
            tokens=self.tokens + other.tokens,
            tool_calls=self.tool_calls + other.tool_calls,
            spawns=self.spawns + other.spawns,
        )

    def over(self, budget: RoleBudget) -> list[str]:
        """The budget dimensions this spend exceeds."""
        pairs = {
            "max_steps": (self.steps, budget.max_steps),
            "max_tokens": (self.tokens, budget.max_tokens),
            "max_tool_calls": (self.tool_calls, budget.max_tool_calls),
            "max_spawns": (self.spawns, budget.max_spawns),
        }
        return [name for name, (used, cap) in pairs.items() if used > cap]


class RoleResult(BaseModel):
    role: Role
    task: str
    status: RoleStatus
    wrote: list[ArtifactRef] = Field(default_factory=list)
    spent: Spent = Field(default_factory=Spent)
    signals: FailureSignals | None = None
    metrics: dict[str, float] = Field(default_factory=dict)
    needs_human_review: bool = False
    note: str = ""
    left_undone: list[str] = Field(default_factory=list)
    registered_agent: str | None = None
    """The tenant agent a compile registered (the compiler's result only)."""
    proposed: list[str] = Field(default_factory=list)
    """Promotions the Optimizer proposed (decision ids), for ``apply_promotion``."""
    promotion: Promotion | None = None
    """An owner's decision on a promotion (task ``apply``)."""
    fallback: str | None = None
    """Why an artifact was drafted offline although the role drafts with the model (said, never hidden)."""
    unmet: list[str] = Field(default_factory=list)
    """Requirements of the SystemSpec the evaluated system does not honour, each with why."""


@dataclass
class RoleContext:
    """What a lead works with; ``broker`` is scoped to the request and the tenant."""

    resources: RuntimeResources
    broker: StateBroker
    tenant_id: str
    request: str
    runtime_target: Literal["langgraph", "deepagent", "hybrid"]
    constraints: ConstraintPack
    budget: RoleBudget
    """What this role may still spend."""
    given: dict[str, Any] = field(default_factory=dict)
    """Artifacts supplied with the request (type -> payload), adopted by their owners."""
    feedback: str | None = None
    failure_errors: list[dict[str, Any]] = field(default_factory=list)
    """The compile errors of the failure routed to this role, if any."""
    system_name: str | None = None
    target_role: Role | None = None
    """The role a failure was routed to, when the Optimizer proposes its fix as a promotion."""
    promotion_id: str | None = None
    """The pending promotion an owner is asked to decide (task ``apply``)."""
    spent: Spent = field(default_factory=Spent)

    def step(self, tokens: int = 0, tool_calls: int = 0, spawns: int = 0) -> None:
        self.spent = self.spent.add(Spent(steps=1, tokens=tokens, tool_calls=tool_calls, spawns=spawns))


Task = Callable[[RoleContext], Awaitable[RoleResult]]


async def _adopt_or(
    ctx: RoleContext, role: Role, artifact_type: ArtifactType, make: Callable[[], Awaitable[Artifact | Draft]]
) -> RoleResult:
    """Store the artifact given with the request (validated) or, without one, the role's own draft."""
    ctx.step()
    fallback = None
    if artifact_type in ctx.given:
        artifact = ARTIFACT_MODELS[artifact_type].model_validate(ctx.given[artifact_type])
        note = f"adopted the given {artifact_type}"
    else:
        made = await make()
        if isinstance(made, Draft):
            artifact, note = made.artifact, made.note
            fallback = made.note if made.failed else None
        else:
            artifact, note = made, f"drafted {artifact_type}"
    ref = await ctx.broker.write(role, artifact)
    return RoleResult(role=role, task="adopt", status="done", wrote=[ref], note=note, fallback=fallback)


async def _drafted(
    ctx: RoleContext, role: Role, artifact_type: ArtifactType, task: str, offline: Artifact
) -> Draft:
    """The model's draft of the artifact, started from the offline one (a model call is a step)."""
    draft = await model_draft(ctx.resources.model, role, artifact_type, ctx.request, task, offline)
    if draft.by_model:
        ctx.step(tokens=ctx.resources.count_tokens(draft.artifact.model_dump_json()))
    return draft


# --- Architect -------------------------------------------------------------------------------------


async def architect_design(ctx: RoleContext) -> RoleResult:
    renamed: list[str] = []

    async def draft() -> Draft:
        offline = design_system(ctx.request, ctx.system_name, ctx.runtime_target)
        made = await _drafted(
            ctx,
            "architect",
            "SystemSpec",
            "Design the system's components, state and edges so that every requirement is honoured.",
            offline,
        )
        system = made.artifact
        assert isinstance(system, SystemSpec)
        if made.by_model:
            # The requirements are the request's words, read by rule: a model neither drops nor
            # rewrites them, and their compiled decisions stay unless the model's spec keeps its own.
            update: dict[str, Any] = {
                "requirements": offline.requirements,
                "output_values": offline.output_values,
                "runtime_target": offline.runtime_target,
            }
            if any(c.decision for c in offline.components) and not any(c.decision for c in system.components):
                update.update(
                    components=offline.components,
                    state_schema=offline.state_schema,
                    edges=offline.edges,
                    entry=offline.entry,
                    outputs=offline.outputs,
                    contracts=offline.contracts,
                )
            system = system.model_copy(update=update)
        free = await free_system_name(ctx.resources, ctx.tenant_id, system)
        if free != system.name:
            renamed.append(f"{system.name!r} is taken in this tenant: the system is named {free!r}")
            system = system.model_copy(update={"name": free})
        return Draft(system, made.by_model, made.note, made.failed)

    result = await _adopt_or(ctx, "architect", "SystemSpec", draft)
    note = "; ".join([result.note, *renamed])
    return result.model_copy(update={"task": "design", "note": note})


# --- Prompt/Policy, Tooling -----------------------------------------------------------------------


async def _system(ctx: RoleContext, role: Role) -> SystemSpec:
    system = await ctx.broker.read_full(role, "SystemSpec")
    assert isinstance(system, SystemSpec)
    return system


async def prompts_design(ctx: RoleContext) -> RoleResult:
    async def draft() -> Draft:
        system = await _system(ctx, "prompt_policy")
        offline = design_prompts(system)
        made = await _drafted(
            ctx,
            "prompt_policy",
            "PromptPack",
            "Write each component's system prompt and policies; every requirement of the system must be "
            "stated in the prompts of the components that decide it.",
            offline,
        )
        pack = made.artifact
        assert isinstance(pack, PromptPack)
        # Each requirement reaches the prompts whatever the model wrote (a model prompt is then told).
        return Draft(with_requirements(pack, system), made.by_model, made.note, made.failed)

    return await _adopt_or(ctx, "prompt_policy", "PromptPack", draft)


async def tools_design(ctx: RoleContext) -> RoleResult:
    async def draft() -> Artifact:
        return design_tools(await _system(ctx, "tooling"))

    return await _adopt_or(ctx, "tooling", "ToolContract", draft)


# --- Revisions: the owner's own, or proposed by the Optimizer as a promotion -----------------------

#: The artifact each role revises when a failure is routed back to it.
REVISED: dict[Role, ArtifactType] = {
    "architect": "SystemSpec",
    "prompt_policy": "PromptPack",
    "tooling": "ToolContract",
}


async def _revision(ctx: RoleContext, owner: Role, reader: Role) -> tuple[Artifact, Artifact, str] | None:
    """``owner``'s rule-based revision of its artifact for the failure routed to it, read as
    ``reader``: (current, revised, what changed), or None when the rules change nothing."""
    if owner == "architect":
        system = await _system(ctx, reader)
        errors = [CompileError.model_validate(e) for e in ctx.failure_errors]
        repaired = repair_system(system, errors)
        return None if repaired == system else (system, repaired, f"repairs {len(errors)} compile errors")
    if owner == "prompt_policy":
        pack = await ctx.broker.read_full(reader, "PromptPack")
        assert isinstance(pack, PromptPack)
        policy = f"Lesson from evaluation: {ctx.feedback or 'answer exactly in the output schema'}"
        prompts = {
            cid: prompt.model_copy(update={"policies": [*prompt.policies, policy]})
            for cid, prompt in pack.prompts.items()
        }
        return pack, pack.model_copy(update={"prompts": prompts}), policy
    if owner == "tooling":
        contract = await ctx.broker.read_full(reader, "ToolContract")
        assert isinstance(contract, ToolContract)
        drafted = design_tools(await _system(ctx, reader))
        missing = [entry for entry in drafted.tools if contract.entry(entry.name) is None]
        if not missing:
            return None
        revised = contract.model_copy(update={"tools": [*contract.tools, *missing]})
        return contract, revised, f"adds contracts for {', '.join(e.name for e in missing)}"
    return None


def revise_task(owner: Role) -> Task:
    async def revise(ctx: RoleContext) -> RoleResult:
        """Revise the owned artifact for the failure routed back to this role."""
        ctx.step()
        revision = await _revision(ctx, owner, owner)
        if revision is None:
            return RoleResult(
                role=owner,
                task="revise",
                status="done",
                needs_human_review=True,
                note="nothing to revise by rule",
            )
        ref = await ctx.broker.write(owner, revision[1])
        return RoleResult(role=owner, task="revise", status="done", wrote=[ref], note=revision[2])

    return revise


# --- Optimizer -------------------------------------------------------------------------------------


async def optimizer_propose(ctx: RoleContext) -> RoleResult:
    """Propose a change of an artifact the Optimizer does not own, as a PromotionDecision: the fix of
    a failure routed to its owner, or (no failure) an experiment drawn from the baseline run."""
    ctx.step()
    experiments: list[ArtifactRef] = []
    if ctx.target_role is not None:
        revision = await _revision(ctx, ctx.target_role, "optimizer")
        impact: dict[str, float] = {"compile_errors": -float(len(ctx.failure_errors))}
        justification = ctx.feedback or "the failure routed to its owner"
    else:
        revision, impact, justification, experiments = await _experiment(ctx)
    if revision is None:
        return RoleResult(
            role="optimizer", task="propose", status="done", wrote=experiments, note="nothing to propose"
        )
    current, revised, what = revision
    changes = diff_changes(current.model_dump(mode="json"), revised.model_dump(mode="json"))
    decision = PromotionDecision(
        target_artifact=artifact_type_of(current),
        base_version=current.version,  # type: ignore[attr-defined]
        proposed_changes=changes,
        justification=f"{what}: {justification}",
        expected_impact=impact,
    )
    ref, promotion = await ctx.broker.propose("optimizer", decision)
    return RoleResult(
        role="optimizer",
        task="propose",
        status="done",
        wrote=[*experiments, ref],
        proposed=[str(promotion.decision_id)],
        note=f"proposed {len(changes)} changes of {decision.target_artifact}: {what}",
    )


async def _experiment(
    ctx: RoleContext,
) -> tuple[tuple[Artifact, Artifact, str] | None, dict[str, float], str, list[ArtifactRef]]:
    """Tighter component budgets where the baseline run used far less than allowed (cost bound):
    the revision, its expected impact, the evidence, the ExperimentSpec written."""
    if not await ctx.broker.exists("ExperimentReport"):
        return None, {}, "", []
    report = await ctx.broker.read_full("optimizer", "ExperimentReport")
    assert isinstance(report, ExperimentReport)
    system = await _system(ctx, "optimizer")
    used = max((r.tool_calls for r in report.results), default=0)
    components = []
    saved = 0
    for c in system.components:
        if c.budget is not None and c.budget.max_tool_calls > used + 1:
            saved += c.budget.max_tool_calls - (used + 1)
            c = c.model_copy(update={"budget": c.budget.model_copy(update={"max_tool_calls": used + 1})})
        components.append(c)
    if not saved:
        return None, {}, "", []
    tighter = system.model_copy(update={"components": components})
    spec = ExperimentSpec(
        experiments=[
            Experiment(
                id="tighter_tool_budgets",
                hypothesis=f"no case needs more than {used + 1} tool calls per component",
                target_artifact="SystemSpec",
                changes=diff_changes(system.model_dump(mode="json"), tighter.model_dump(mode="json")),
            )
        ]
    )
    ref = await ctx.broker.write("optimizer", spec)
    evidence = f"the baseline's cases used at most {used} tool calls (pass rate {report.pass_rate:.0%})"
    revision = (system, tighter, "caps each component's tool calls")
    return revision, {"max_tool_calls": -float(saved)}, evidence, [ref]


def apply_task(owner: Role) -> Task:
    async def apply(ctx: RoleContext) -> RoleResult:
        """Decide a promotion of the owned artifact: apply it as a new version (accepted), apply it with
        the owner's own repairs (modified), or refuse it with the reason (rejected)."""
        ctx.step()
        assert ctx.promotion_id is not None
        promotion = await ctx.broker.promotion(uuid.UUID(ctx.promotion_id))
        decision = await ctx.broker.read_full(owner, "PromotionDecision", promotion.decision_version)
        assert isinstance(decision, PromotionDecision)
        current = await ctx.broker.read_full(owner, decision.target_artifact)
        status: Literal["accepted", "modified", "rejected"] = "accepted"
        reason = decision.justification
        candidate: Artifact | None = None
        try:
            changed = apply_changes(current.model_dump(mode="json"), decision.proposed_changes)
            candidate = parse_artifact(decision.target_artifact, changed, "proposed_changes")
        except InputError as error:
            status, reason = "rejected", f"does not apply to v{current.version}: {error}"  # type: ignore[attr-defined]
        if isinstance(candidate, SystemSpec) and isinstance(current, SystemSpec):
            # Judged by what the change breaks, not by problems the spec already had.
            tools = await _tools(ctx, owner)
            known = validate_system(current, tools)
            errors = [e for e in validate_system(candidate, tools) if e not in known]
            if errors:
                repaired = repair_system(candidate, errors)
                left = [e for e in validate_system(repaired, tools) if e not in known]
                if left:
                    status = "rejected"
                    reason = "leaves " + "; ".join(f"{e.kind} at {e.where}" for e in left)
                    candidate = None
                else:
                    status, candidate = "modified", repaired
                    reason = "applied, with the owner's repair of " + ", ".join(
                        sorted({e.kind for e in errors})
                    )
        wrote = (
            [await ctx.broker.write(owner, candidate)]
            if candidate is not None and status != "rejected"
            else []
        )
        decided = await ctx.broker.decide(
            owner, promotion.decision_id, status, reason, wrote[0].version if wrote else None
        )
        return RoleResult(
            role=owner,
            task="apply",
            status="done",
            wrote=wrote,
            promotion=decided,
            note=f"{status}: {reason}",
        )

    return apply


async def _tools(ctx: RoleContext, reader: Role) -> ToolContract | None:
    if not await ctx.broker.exists("ToolContract"):
        return None
    tools = await ctx.broker.read_full(reader, "ToolContract")
    assert isinstance(tools, ToolContract)
    return tools


# --- Eval ------------------------------------------------------------------------------------------


async def eval_design(ctx: RoleContext) -> RoleResult:
    async def draft() -> Draft:
        threshold = float(ctx.constraints.eval_constraints.get("pass_threshold", 0.8))
        system = await _system(ctx, "eval")
        offline = await sensed_eval(system, threshold, ctx.resources.evolution.knowledge.embedder)
        made = await _drafted(
            ctx,
            "eval",
            "EvalSpec",
            "Write test cases (inputs and expected outputs) for every requirement, including each "
            "boundary from both sides and adversarial inputs.",
            offline,
        )
        spec = made.artifact
        assert isinstance(spec, EvalSpec)
        # The requirement cases are kept whatever the model wrote: the gate judges by them.
        ids = {case.id for case in spec.cases}
        kept = [case for case in offline.cases if case.requirement and case.id not in ids]
        cases = [*kept, *spec.cases][:MAX_EVAL_CASES]
        return Draft(
            spec.model_copy(update={"cases": cases, "pass_threshold": threshold}), made.by_model, made.note
        )

    return await _adopt_or(ctx, "eval", "EvalSpec", draft)


def _tokens(resources: RuntimeResources, messages: list[BaseMessage]) -> int:
    return sum(resources.count_tokens(str(message.content)) for message in messages)


def _matches(expected: Any, actual: Any, exact: bool = False) -> bool:
    if isinstance(expected, str) and isinstance(actual, str):
        want, got = expected.strip().lower(), actual.strip().lower()
        return want == got if exact else want in got
    if isinstance(expected, bool) or expected is None or isinstance(actual, bool):
        return expected is actual if exact else bool(expected == actual)
    if isinstance(expected, int | float) and isinstance(actual, int | float | str):
        try:
            return abs(float(actual) - float(expected)) < 1e-9
        except ValueError:
            return False
    return bool(expected == actual)


def _avoid_mismatches(avoid: dict[str, list[str]], outputs: dict[str, Any]) -> list[str]:
    """Each output key that is not a text, or whose text holds a word it must never contain."""
    mismatches = []
    for key, words in avoid.items():
        text = outputs.get(key)
        if not isinstance(text, str):
            mismatches.append(f"{key}: expected a text, got {text!r}")
        elif held := [word for word in words if word.lower() in text.lower()]:
            mismatches.append(f"{key}: holds {', '.join(map(repr, held))}, which it must never contain")
    return mismatches


async def _run_case(
    ctx: RoleContext,
    graph: Any,
    inputs: dict[str, Any],
    expect: dict[str, Any],
    exact: bool = False,
    avoid: dict[str, list[str]] | None = None,
) -> tuple[dict[str, Any], list[str], float, int, int, str | None]:
    """One case through the compiled system: outputs, mismatches, ms, tokens, tool calls, error."""
    config: Any = {"configurable": {"tenant_id": ctx.tenant_id}}
    goal = " ".join(str(value) for value in inputs.values())
    started = time.perf_counter()
    try:
        state = await graph.ainvoke({"goal": goal, "context": inputs}, config)
    except MasterAgentError as error:
        return {}, [f"the run failed: {error}"], 0.0, 0, 0, str(error)
    elapsed = (time.perf_counter() - started) * 1000
    outputs = dict(state.get("solution") or {})
    mismatches = [
        f"{key}: expected {expected!r}, got {outputs.get(key)!r}"
        for key, expected in expect.items()
        if not _matches(expected, outputs.get(key), exact)
    ] + _avoid_mismatches(avoid or {}, outputs)
    tokens = _tokens(ctx.resources, list(state.get("messages") or []))
    return outputs, mismatches, elapsed, tokens, int(state.get("tool_calls") or 0), None


async def _compiled_graph(ctx: RoleContext) -> tuple[CompiledSpec | None, Any]:
    """The latest CompiledSpec and its system as a graph that runs unregistered (None: it has no
    agents, or nothing was compiled)."""
    if not await ctx.broker.exists("CompiledSpec"):
        return None, None
    compiled = await ctx.broker.read_full("eval", "CompiledSpec")
    assert isinstance(compiled, CompiledSpec)
    documents = [AgentDocument.model_validate(d) for d in compiled.config.get("agents") or []]
    if not documents:
        return compiled, None
    return compiled, await candidate_graph(ctx.resources, ctx.tenant_id, documents)


async def eval_run(ctx: RoleContext) -> RoleResult:
    """Run the EvalSpec's cases against the compiled system, as a bounded swarm of workers (one per
    case, at most the role's spawn budget at a time and in all), into an ExperimentReport."""
    ctx.step()
    spec = await ctx.broker.read_full("eval", "EvalSpec")
    system = await _system(ctx, "eval")
    assert isinstance(spec, EvalSpec)
    compiled, graph = await _compiled_graph(ctx)
    if compiled is None:
        return RoleResult(
            role="eval", task="run", status="failed", note="nothing compiled to evaluate (no CompiledSpec)"
        )
    if graph is None:
        why = f"the {compiled.runtime_target} system has no agents, so nothing can run it"
        return RoleResult(role="eval", task="run", status="done", note=why, left_undone=[f"eval run: {why}"])
    spawns = max(ctx.budget.max_spawns - ctx.spent.spawns, 0)
    if spawns < len(spec.cases):
        # A report on some of the cases would judge the gate on a sample: ask for the budget first.
        return RoleResult(
            role="eval",
            task="run",
            status="budget_exhausted",
            note=f"{len(spec.cases)} cases need as many workers; {spawns} spawns left",
            left_undone=[f"eval case {case.id}" for case in spec.cases[spawns:]],
        )
    runnable = spec.cases
    # The spawn budget says how many cases may run, not how many at once: a request never takes more
    # than a few of the process's cores from other tenants' runs.
    # Each component of a case may hold one of the tenant reader's connections at once (its role allows
    # READER_CONNECTIONS): cases at once times components stays within them.
    components = max(len(compiled.config.get("agents") or []) - 1, 1)
    at_once = min(ctx.budget.max_spawns, MAX_PARALLEL_CASES, max(READER_CONNECTIONS // components, 1))
    gate = asyncio.Semaphore(max(at_once, 1))

    async def worker(case_index: int) -> CaseResult:
        case = runnable[case_index]
        async with gate:
            outputs, mismatches, ms, tokens, calls, error = await _run_case(
                ctx, graph, case.inputs, case.expect, case.exact, case.avoid
            )
        return CaseResult(
            case_id=case.id,
            passed=not mismatches,
            metric=case.metric,
            outputs=outputs,
            mismatches=mismatches,
            latency_ms=round(ms, 1),
            tokens=tokens,
            tool_calls=calls,
            status="error" if error else "success",
            error=error,
        )

    results = list(await asyncio.gather(*(worker(i) for i in range(len(runnable)))))
    for result in results:
        ctx.spent = ctx.spent.add(Spent(tokens=result.tokens, tool_calls=result.tool_calls, spawns=1))
    pass_rate = sum(r.passed for r in results) / len(spec.cases)
    latencies = sorted(r.latency_ms for r in results) or [0.0]
    p95 = latencies[min(len(latencies) - 1, int(0.95 * len(latencies)))]
    signals = FailureSignals(
        metric_failures=[
            MetricFailure(
                metric=f"pass_rate:{metric}", kind=metric, expected=spec.pass_threshold, actual=pass_rate
            )
            for metric in sorted({r.metric for r in results if not r.passed})
        ]
        if pass_rate < spec.pass_threshold
        else [],
        tool_errors=[ToolError(tool=compiled.system_name, error_type="other") for r in results if r.error],
    )
    requirements = requirement_verdicts(system, spec, results)
    unmet = {rid: verdict for rid, verdict in requirements.items() if verdict != "met"}
    report = ExperimentReport(
        requirements=requirements,
        system_version=system.version,
        runtime=compiled.runtime_target,
        results=results,
        pass_rate=round(pass_rate, 4),
        latency_p95_ms=p95,
        tokens=sum(r.tokens for r in results),
        failure_signals=signals.model_dump(mode="json"),
    )
    ref = await ctx.broker.write("eval", report)
    return RoleResult(
        role="eval",
        task="run",
        status="done",
        wrote=[ref],
        signals=signals,
        metrics={
            "pass_rate": report.pass_rate,
            "threshold": spec.pass_threshold,
            "latency_p95_ms": p95,
            "tokens_per_case": report.tokens / max(len(results), 1),
            "requirements_unmet": float(len(unmet)),
        },
        unmet=[f"{rid}: {verdict}" for rid, verdict in unmet.items()],
        note=report.summary(),
    )


def requirement_verdicts(system: SystemSpec, spec: EvalSpec, results: list[CaseResult]) -> dict[str, str]:
    """Each requirement of the system: ``met`` when every case of it passed; ``not met`` naming the
    failing cases, or when no case tests it; ``not built`` with why, when it needs a model."""
    passed = {r.case_id: r.passed for r in results}
    verdicts: dict[str, str] = {}
    for requirement in system.requirements:
        if not requirement.buildable:
            verdicts[requirement.id] = f"not built: {requirement.why_not}"
            continue
        cases = [c.id for c in spec.cases if c.requirement == requirement.id]
        failed = [c for c in cases if not passed.get(c, False)]
        if not cases:
            verdicts[requirement.id] = "not met: no case tests it"
        elif failed:
            verdicts[requirement.id] = f"not met: {', '.join(failed)} failed"
        elif requirement.loose:
            # Its cases were written from the same loose reading, so passing them proves nothing.
            said = "; ".join(f"'{item}'" for item in requirement.loose)
            verdicts[requirement.id] = (
                f"not met: its condition {said} joins words that stand apart in the request; "
                "judging it needs a model"
            )
        elif requirement.unread:
            said = "; ".join(f"'{words}'" for words in requirement.unread)
            verdicts[requirement.id] = (
                f"not met: no rule reads its condition {said}; judging it needs a model"
            )
        else:
            verdicts[requirement.id] = "met"
    for key, gap in answer_gaps(system).items():
        if verdicts.get(key, "met") == "met":
            verdicts[key] = f"not met: {gap}"
    return verdicts


async def eval_reproduce(ctx: RoleContext) -> RoleResult:
    """Reproduce the reported failure: check the SystemSpec the way the compiler will, into a
    BugReport; a reproduced failure fails the phase with its signals (for ``classify_failure``)."""
    ctx.step()
    system = await _system(ctx, "eval")
    errors = validate_system(system, await _tools(ctx, "eval"))
    signals = FailureSignals(compile_errors=errors)
    report = BugReport(
        symptom=ctx.request[:500], reproduced=bool(errors), failure_signals=signals.model_dump(mode="json")
    )
    ref = await ctx.broker.write("eval", report)
    note = "; ".join(f"{e.kind} at {e.where}" for e in errors) or "not reproduced: the spec compiles"
    return RoleResult(
        role="eval",
        task="reproduce",
        status="failed" if errors else "done",
        wrote=[ref],
        signals=signals,
        note=note,
    )


# --- Ops -------------------------------------------------------------------------------------------


async def ops_instrument(ctx: RoleContext) -> RoleResult:
    ctx.step()
    system = await _system(ctx, "ops")
    telemetry = TelemetrySpec(
        spans=[f"{system.name}.{c.id}" for c in system.components],
        metrics=["latency_ms", "tokens", "tool_calls", "pass_rate"],
    )
    ceilings = ctx.constraints.ops_constraints
    slo = SLOReport(
        latency_p95_ms_ceiling=float(ceilings["latency_p95_ms_ceiling"]),
        tokens_per_case_ceiling=int(ceilings["tokens_per_case_ceiling"]),
    )
    refs = [await ctx.broker.write("ops", telemetry), await ctx.broker.write("ops", slo)]
    return RoleResult(
        role="ops", task="instrument", status="done", wrote=refs, note="telemetry and SLO ceilings set"
    )


async def ops_check(ctx: RoleContext) -> RoleResult:
    """Measure the latest ExperimentReport against the SLO ceilings (the production gate's input)."""
    ctx.step()
    slo = await ctx.broker.read_full("ops", "SLOReport")
    assert isinstance(slo, SLOReport)
    if not await ctx.broker.exists("ExperimentReport"):
        why = "no evaluation run to measure"
        return RoleResult(
            role="ops", task="check", status="done", note=why, left_undone=[f"ops check: {why}"]
        )
    report = await ctx.broker.read_full("ops", "ExperimentReport")
    assert isinstance(report, ExperimentReport)
    per_case = report.tokens / max(len(report.results), 1)
    met = report.latency_p95_ms <= slo.latency_p95_ms_ceiling and per_case <= slo.tokens_per_case_ceiling
    measured = slo.model_copy(
        update={
            "measured_latency_p95_ms": report.latency_p95_ms,
            "measured_tokens_per_case": per_case,
            "met": met,
        }
    )
    ref = await ctx.broker.write("ops", measured)
    failures = []
    if report.latency_p95_ms > slo.latency_p95_ms_ceiling:
        failures.append(
            MetricFailure(
                metric="latency_p95_ms",
                kind="latency",
                expected=slo.latency_p95_ms_ceiling,
                actual=report.latency_p95_ms,
            )
        )
    if per_case > slo.tokens_per_case_ceiling:
        failures.append(
            MetricFailure(
                metric="tokens_per_case", kind="cost", expected=slo.tokens_per_case_ceiling, actual=per_case
            )
        )
    return RoleResult(
        role="ops",
        task="check",
        status="done",
        wrote=[ref],
        signals=FailureSignals(metric_failures=failures),
        metrics={"latency_p95_ms": report.latency_p95_ms, "tokens_per_case": per_case},
        note=f"p95 {report.latency_p95_ms:.0f} ms, {per_case:.0f} tokens per case: SLO {'met' if met else 'missed'}",
    )


# --- Compiler --------------------------------------------------------------------------------------


async def compiler_compile(ctx: RoleContext) -> RoleResult:
    """Compile the SystemSpec; a LangGraph or hybrid system is registered as the tenant's agents."""
    ctx.step()
    system = await _system(ctx, "compiler")
    prompts = (
        await ctx.broker.read_full("compiler", "PromptPack")
        if await ctx.broker.exists("PromptPack")
        else None
    )
    assert prompts is None or isinstance(prompts, PromptPack)
    tools = await _tools(ctx, "compiler")
    try:
        compiled = compile_system(system, prompts, tools)
    except CompileFailed as failed:
        return RoleResult(
            role="compiler",
            task="compile",
            status="failed",
            signals=FailureSignals(compile_errors=failed.errors),
            note=str(failed),
        )
    ref = await ctx.broker.write("compiler", compiled)
    return RoleResult(role="compiler", task="compile", status="done", wrote=[ref], note=compiled.summary())


async def compiler_register(ctx: RoleContext) -> RoleResult:
    """Register the compiled system's agents for the tenant (after its gates, and the human gate's
    approval where it is on): only now is it routable."""
    ctx.step()
    compiled = await ctx.broker.read_full("compiler", "CompiledSpec")
    assert isinstance(compiled, CompiledSpec)
    if not compiled.config.get("agents"):
        return RoleResult(role="compiler", task="register", status="done", note="no agents to register")
    names = await register_system(ctx.resources, ctx.tenant_id, compiled, ctx.broker.request_id)
    registered = compiled.model_copy(update={"registered_agent": names[-1]})
    ref = await ctx.broker.write("compiler", registered)
    return RoleResult(
        role="compiler",
        task="register",
        status="done",
        wrote=[ref],
        note=f"registered {', '.join(names)}",
        registered_agent=names[-1],
    )


TASKS: dict[tuple[Role, str], Task] = {
    ("architect", "design"): architect_design,
    ("architect", "adopt"): architect_design,
    ("architect", "revise"): revise_task("architect"),
    ("prompt_policy", "design"): prompts_design,
    ("prompt_policy", "adopt"): prompts_design,
    ("prompt_policy", "revise"): revise_task("prompt_policy"),
    ("tooling", "design"): tools_design,
    ("tooling", "adopt"): tools_design,
    ("tooling", "revise"): revise_task("tooling"),
    ("eval", "design"): eval_design,
    ("eval", "adopt"): eval_design,
    ("eval", "run"): eval_run,
    ("eval", "reproduce"): eval_reproduce,
    ("ops", "instrument"): ops_instrument,
    ("ops", "check"): ops_check,
    ("compiler", "compile"): compiler_compile,
    ("compiler", "register"): compiler_register,
    ("optimizer", "propose"): optimizer_propose,
    **{
        (owner, "apply"): apply_task(owner)
        for owner in ("architect", "prompt_policy", "tooling", "eval", "ops")
    },
}


class RoleState(TypedDict):
    task: str
    result: dict[str, Any] | None


#: Where the meta graph hands a lead its ``RoleContext`` in the subgraph call's config.
CONTEXT_KEY = "__meta_role_context"


def role_subgraph(role: Role) -> CompiledStateGraph[Any, Any, Any, Any]:
    """The lead of ``role`` as a subgraph: one node doing the task the phase gives it, with the
    context the meta graph hands it for this call."""

    async def lead(state: RoleState, config: RunnableConfig) -> dict[str, Any]:
        ctx: RoleContext = (config.get("configurable") or {})[CONTEXT_KEY]
        task = TASKS.get((role, state["task"]))
        if task is None:
            raise MasterAgentError(f"{role} has no task {state['task']!r}")
        result = await task(ctx)
        return {"result": result.model_copy(update={"spent": ctx.spent}).model_dump(mode="json")}

    graph = StateGraph(RoleState)
    graph.add_node("lead", lead)
    graph.add_edge(START, "lead")
    graph.add_edge("lead", END)
    return graph.compile(name=f"{role}_lead")


ROLE_GRAPHS: dict[Role, CompiledStateGraph[Any, Any, Any, Any]] = {
    role: role_subgraph(role)
    for role in ("architect", "prompt_policy", "tooling", "eval", "optimizer", "ops", "compiler")
}
