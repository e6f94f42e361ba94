"""Solving a goal on a durable thread, and the ``solutions`` row that tracks it.

``submit`` validates a request and stores it (nothing is stored when it is invalid); ``run_solution``
starts it, or continues it from its last checkpoint when it had started before (after a crash, in
whichever process picks it up); ``resume`` answers an interrupt. ``solve`` is submit + run.
"""

from __future__ import annotations

import contextlib
import json
import uuid
from collections.abc import Callable
from typing import Any, Literal

from langchain_core.runnables import RunnableConfig
from langgraph.types import Command
from psycopg import AsyncConnection
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from master_agent.capabilities.envelope import Band, confidence_band
from master_agent.errors import InputError, UnknownThreadError
from master_agent.evolution.calibration import load_calibration, stratum_of
from master_agent.evolution.learning import intervention_of, problem_type_of
from master_agent.evolution.outcomes import schedule_checks, trackable
from master_agent.evolution.tools import DEPLOYED_KEY
from master_agent.runtime.factory import Complexity, GraphOptions, Variant, loop_limits, master_graph
from master_agent.runtime.graph_runs import shape_of
from master_agent.runtime.loop import recursion_limit_for
from master_agent.runtime.resources import RuntimeResources
from master_agent.storage.outages import OutageTooLong, is_outage, through_outages
from master_agent.storage.threads import record_thread

MAX_GOAL_CHARS = 4000

EventHandler = Callable[[dict[str, Any]], object]
Status = Literal["success", "partial", "error", "interrupted", "rejected"]
SolutionStatus = Literal["pending", "running", "success", "partial", "error", "interrupted", "rejected"]

INSERT_SOLUTION = """
INSERT INTO solutions (solution_id, tenant_id, thread_id, goal, status, run_config, request)
VALUES (%s, %s, %s, %s, 'pending', %s, %s)
"""
UPDATE_SOLUTION = """
UPDATE solutions SET status = %s, solution = %s, error = %s, updated_at = now() WHERE solution_id = %s
"""
SELECT_SOLUTION = """
SELECT solution_id, tenant_id, thread_id, goal, status, solution, run_config, request
FROM solutions WHERE {column} = %s ORDER BY created_at DESC LIMIT 1
"""
#: A goal solved in a conversation (the chat's thread holds it, beside the thread's other turns).
INSERT_CHAT_SOLUTION = """
INSERT INTO solutions (solution_id, tenant_id, thread_id, goal, status, run_config, request)
VALUES (%s, %s, %s, %s, 'running', '{}', %s)
ON CONFLICT (solution_id) DO NOTHING
"""
MARK_RUNNING = "UPDATE solutions SET status = 'running', updated_at = now() WHERE solution_id = %s"
#: A solution that could not finish (its retries spent): only one not already ended.
FAIL_SOLUTION = """
UPDATE solutions SET status = 'error', error = %s, updated_at = now()
WHERE solution_id = %s AND status IN ('pending', 'running')
"""


class SolveRequest(BaseModel):
    """A goal to solve, as the CLI and the API accept it."""

    model_config = ConfigDict(extra="forbid")

    tenant_id: str = Field(min_length=1, max_length=63)
    goal: str = Field(max_length=MAX_GOAL_CHARS)
    complexity: Complexity | None = None
    ab_test_variant: Variant = "control"
    timeline_days: int | None = Field(default=None, ge=7, le=730)
    sub_agents: list[str] | None = None
    max_iterations: int | None = Field(default=None, ge=1, le=100)
    deploy_playbook: bool = False
    """Put the solution's playbook in place as part of the goal (the agent deploys it)."""

    @field_validator("goal")
    @classmethod
    def _goal_has_text(cls, goal: str) -> str:
        goal = goal.strip()
        if not goal:
            raise ValueError("the goal is empty")
        return goal

    @classmethod
    def parse(cls, **values: Any) -> SolveRequest:
        """Validate, raising InputError that names the first bad field."""
        try:
            return cls(**values)
        except ValidationError as error:
            raise InputError.from_validation(error) from None


class Solution(BaseModel):
    """The answer to a goal: what the CLI's ``--json`` prints and the API returns."""

    solution_id: str
    thread_id: str
    tenant_id: str
    goal: str
    status: Status
    root_cause: dict[str, Any] | None = None
    strategy: dict[str, Any] | None = None
    implementation_plan: dict[str, Any] | None = None
    playbook: dict[str, Any] | None = None
    expected_outcome: dict[str, Any] | None = None
    metrics: dict[str, Any] | None = None
    risks: list[dict[str, Any]] = Field(default_factory=list)
    roi: dict[str, Any] | None = None
    test_design: dict[str, Any] | None = None
    details: dict[str, Any] = Field(default_factory=dict)
    """The rest of the agent's answer (the fields its pack's output schema has beyond these)."""
    confidence: float = 0.0
    """What the agents reported (raw)."""
    confidence_band: Band = "BLOCKED"
    """``confidence`` as a band: COMPLETE >= 0.9, PARTIAL 0.5-0.9, BLOCKED < 0.5."""
    handoff: dict[str, Any] | None = None
    """What the run handed the user instead of a full answer: a ``preview`` of a high-risk action
    waiting for acceptance, a ``question``, or a ``failure`` with what to do (``runtime.recovery``)."""
    verification: list[dict[str, Any]] = Field(default_factory=list)
    """Each claim of the answer checked before it was given: claim, evidence, verdict."""
    calibrated_confidence: float | None = None
    """The raw confidence calibrated against observed outcomes of this problem type and intervention."""
    reused_pattern: dict[str, Any] | None = None
    """The village-knowledge pattern the agent reused (the short path), if any."""
    deployed_playbook: dict[str, Any] | None = None
    """The playbook the agent deployed (when the goal asked for it): id, version, status, schedule."""
    outcome_checks: list[str] = Field(default_factory=list)
    """Ids of the outcome checks scheduled when the solution was delivered."""
    limitations: list[str] = Field(default_factory=list)
    model_failure: str | None = None
    """Why the master agent's model call failed, when it did (the answer is then partial or error)."""
    termination: dict[str, Any] = Field(default_factory=dict)
    steps: list[dict[str, Any]] = Field(default_factory=list)
    """The tree of calls: each step names its agent, depth, tool, kind, status and children."""


class SolveOutcome(BaseModel):
    status: Status
    solution_id: str
    thread_id: str
    solution: Solution | None = None
    interrupt: dict[str, Any] | None = None
    """What the human is asked, when the run waits for a decision."""


def run_config(thread_id: str, options: dict[str, Any], max_iterations: int) -> RunnableConfig:
    return {
        "configurable": {"thread_id": thread_id, **options},
        "recursion_limit": recursion_limit_for(max_iterations),
    }


class Submitted(BaseModel):
    """A stored, not yet started solution."""

    solution_id: str
    thread_id: str
    tenant_id: str
    options: dict[str, Any]
    """The graph options of its runs (the ``configurable`` they use)."""


async def _load(resources: RuntimeResources, column: str, value: str) -> dict[str, Any] | None:
    query = SELECT_SOLUTION.replace("{column}", "solution_id" if column == "solution_id" else "thread_id")
    async with resources.database.pool.connection() as conn:
        row: dict[str, Any] | None = await (await conn.execute(query, (value,))).fetchone()
    return row


async def _drive(
    resources: RuntimeResources,
    row: dict[str, Any],
    graph_input: Any,
    on_event: EventHandler | None,
) -> SolveOutcome:
    solution_id, thread_id = str(row["solution_id"]), str(row["thread_id"])
    options = dict(row["run_config"])
    limits = loop_limits(resources, GraphOptions.from_config({"configurable": options}))
    config = run_config(thread_id, options, limits.max_iterations)
    graph = await master_graph(resources, config, checkpointer=resources.database.checkpointer)
    pool = resources.database.pool
    async with pool.connection() as conn:
        await conn.execute(MARK_RUNNING, (solution_id,))
    try:
        async for _namespace, _mode, chunk in graph.astream(
            graph_input, config, stream_mode=["custom"], subgraphs=True
        ):
            if on_event is not None and isinstance(chunk, dict):
                on_event(chunk)
    except Exception as error:
        if not is_outage(error):
            async with pool.connection() as conn:
                await record_failure(conn, solution_id, error)
        # An outage is waited out by the caller and the solution continues: it is not an error yet
        # (the caller records one when its retries are spent).
        raise
    snapshot = await graph.aget_state(config)
    if snapshot.interrupts:
        async with pool.connection() as conn:
            await conn.execute(UPDATE_SOLUTION, ("interrupted", None, None, solution_id))
        value = snapshot.interrupts[0].value
        return SolveOutcome(
            status="interrupted",
            solution_id=solution_id,
            thread_id=thread_id,
            interrupt=value if isinstance(value, dict) else {"question": value},
        )
    status, solution = await settle_solution(
        resources, row["tenant_id"], solution_id, thread_id, row["goal"], snapshot.values
    )
    return SolveOutcome(status=status, solution_id=solution_id, thread_id=thread_id, solution=solution)


async def settle_solution(
    resources: RuntimeResources,
    tenant_id: str,
    solution_id: str,
    thread_id: str,
    goal: str,
    values: dict[str, Any],
) -> tuple[Status, Solution]:
    """A finished run's answer as its ``solutions`` row: the solution with its settled status, band and
    calibration, and its outcome checks scheduled when the answer can be measured later."""
    pool = resources.database.pool
    envelope = values.get("envelope") or {}
    escalation = values.get("escalation") or {}
    status: Status = envelope.get("status", "error")
    if escalation.get("decision") == "reject":
        status = "rejected"
    answer = dict(values.get("solution") or {})
    solution = Solution(
        solution_id=solution_id,
        thread_id=thread_id,
        tenant_id=tenant_id,
        goal=goal,
        status=status,
        **{key: answer[key] for key in Solution.model_fields if key in answer and key != "status"},
    )
    solution.details = {key: value for key, value in answer.items() if key not in Solution.model_fields}
    solution.confidence = float(values.get("confidence_score", 0.0))
    # The band comes settled with the status (``capabilities.envelope.settle``), never recomputed.
    solution.confidence_band = envelope.get("confidence_band") or confidence_band(solution.confidence)
    solution.handoff = envelope.get("handoff")
    solution.verification = list(envelope.get("verification") or [])
    solution.limitations = list(envelope.get("limitations") or [])
    solution.model_failure = values.get("model_failure") or None
    solution.termination = dict(values.get("termination") or {})
    solution.steps = list(values.get("steps") or [])
    solution.reused_pattern = values.get("reused_pattern")
    solution.deployed_playbook = (values.get("findings") or {}).get(DEPLOYED_KEY)
    if solution.strategy and solution.expected_outcome:
        calibration = await load_calibration(
            pool, problem_type_of(answer), intervention_of(answer), stratum_of(solution.expected_outcome)
        )
        solution.calibrated_confidence = calibration.calibrate(solution.confidence)
    if status in ("success", "partial") and trackable(solution.model_dump()):
        checks = await schedule_checks(resources.evolution, tenant_id, solution_id, solution.model_dump())
        solution.outcome_checks = [str(check) for check in checks]
    async with pool.connection() as conn:
        await conn.execute(
            UPDATE_SOLUTION, (status, solution.model_dump_json(), envelope.get("error"), solution_id)
        )
    return status, solution


async def record_chat_goal(
    resources: RuntimeResources,
    tenant_id: str,
    thread_id: str,
    goal: str,
    values: dict[str, Any],
    run_id: str | None = None,
) -> Solution:
    """A goal the chat solved, stored like one set through the API (the same list of goals, its outcome
    checks scheduled), on the conversation's thread."""
    # A run's turn answers one goal: a retried node (a worker killed after this row, before its checkpoint)
    # finds its own row again instead of listing the goal twice.
    solution_id = (
        str(uuid.uuid5(uuid.NAMESPACE_URL, f"chat-goal:{thread_id}:{run_id}"))
        if run_id
        else str(uuid.uuid4())
    )
    request = {"tenant_id": tenant_id, "goal": goal}
    async with resources.database.pool.connection() as conn:
        await conn.execute(
            INSERT_CHAT_SOLUTION, (solution_id, tenant_id, thread_id, goal, json.dumps(request))
        )
    _status, solution = await settle_solution(resources, tenant_id, solution_id, thread_id, goal, values)
    return solution


async def record_failure(conn: AsyncConnection[Any], solution_id: str, error: BaseException) -> None:
    """The solution ended ``error`` with why, once nothing will retry it."""
    await conn.execute(FAIL_SOLUTION, (f"{type(error).__name__}: {error}", solution_id))


async def submit(resources: RuntimeResources, request: SolveRequest) -> Submitted:
    """Validate and store a goal. Invalid options fail before anything is stored."""
    options: dict[str, Any] = {
        "tenant_id": request.tenant_id,
        "complexity": request.complexity or GraphOptions(goal=request.goal).resolved_complexity(),
        "ab_test_variant": request.ab_test_variant,
        "goal": request.goal,
    }
    if request.sub_agents is not None:
        options["sub_agents"] = request.sub_agents
    if request.max_iterations is not None:
        options["max_iterations"] = request.max_iterations
    if request.deploy_playbook:
        options["deploy_playbook"] = True
    # Build (or fetch) the graph first: unknown tenants, variants or sub-agents fail here, unstored.
    await master_graph(resources, {"configurable": options}, checkpointer=resources.database.checkpointer)
    solution_id = str(uuid.uuid4())
    options["solution_id"] = solution_id  # tools that act for the solution (deploy, tracking) read it
    submitted = Submitted(
        solution_id=solution_id,
        thread_id=str(uuid.uuid4()),
        tenant_id=request.tenant_id,
        options=options,
    )
    async with resources.database.pool.connection() as conn, conn.transaction():
        # The goal's thread is owned by its tenant from the start, like every thread of the API.
        await record_thread(
            conn,
            request.tenant_id,
            submitted.thread_id,
            {"solution_id": solution_id},
            shape_of({"configurable": options}),
        )
        await conn.execute(
            INSERT_SOLUTION,
            (
                submitted.solution_id,
                request.tenant_id,
                submitted.thread_id,
                request.goal,
                json.dumps(options),
                request.model_dump_json(),
            ),
        )
    return submitted


async def run_solution(
    resources: RuntimeResources, solution_id: str, *, on_event: EventHandler | None = None
) -> SolveOutcome:
    """Start a stored solution, or continue it from its last checkpoint if it had started."""
    row = await _load(resources, "solution_id", solution_id)
    if row is None:
        raise InputError("solution_id", f"unknown solution {solution_id!r}")
    options = dict(row["run_config"])
    graph = await master_graph(
        resources, {"configurable": options}, checkpointer=resources.database.checkpointer
    )
    snapshot = await graph.aget_state({"configurable": {"thread_id": str(row["thread_id"]), **options}})
    if snapshot.interrupts:
        value = snapshot.interrupts[0].value
        return SolveOutcome(
            status="interrupted",
            solution_id=solution_id,
            thread_id=str(row["thread_id"]),
            interrupt=value if isinstance(value, dict) else {"question": value},
        )
    if snapshot.created_at is None:  # never started: the first input
        request = SolveRequest.model_validate(row["request"])
        context = {"timeline_days": request.timeline_days} if request.timeline_days else {}
        return await _drive(resources, row, {"goal": row["goal"], "context": context}, on_event)
    if not snapshot.next and row["solution"] is not None:  # already finished
        solution = Solution.model_validate(row["solution"])
        return SolveOutcome(
            status=solution.status, solution_id=solution_id, thread_id=solution.thread_id, solution=solution
        )
    return await _drive(resources, row, None, on_event)  # continue from the last checkpoint


async def solve(
    resources: RuntimeResources, request: SolveRequest, *, on_event: EventHandler | None = None
) -> SolveOutcome:
    """Solve a goal on a new thread."""
    submitted = await submit(resources, request)
    # An outage on the way is waited out; the solution then continues from its last checkpoint.
    try:
        return await through_outages(
            resources.database.health,
            lambda: run_solution(resources, submitted.solution_id, on_event=on_event),
            within_s=resources.settings.outage_wait_s,
        )
    except Exception as error:
        if is_outage(error) or isinstance(error, OutageTooLong):
            with contextlib.suppress(Exception):  # the database may still be away: best effort
                async with resources.database.pool.connection() as conn:
                    await record_failure(conn, submitted.solution_id, error)
        raise


async def resume(
    resources: RuntimeResources,
    thread_id: str,
    decision: str | None = None,
    *,
    tenant_id: str | None = None,
    on_event: EventHandler | None = None,
) -> SolveOutcome:
    """Continue a thread: with ``decision`` after an interrupt, or from its last checkpoint after a crash."""
    row = await _load(resources, "thread_id", thread_id)
    if row is None or (tenant_id is not None and row["tenant_id"] != tenant_id) or not row["run_config"]:
        # (A goal said in a conversation has no run of its own to resume: the conversation goes on in chat.)
        raise UnknownThreadError(thread_id)
    options = dict(row["run_config"])
    graph = await master_graph(
        resources, {"configurable": options}, checkpointer=resources.database.checkpointer
    )
    snapshot = await graph.aget_state({"configurable": {"thread_id": thread_id, **options}})
    if snapshot.interrupts:
        if decision is None or not decision.strip():
            raise InputError("decision", "this thread waits for a decision: approve, reject or guidance text")
        return await _drive(resources, row, Command(resume=decision.strip()), on_event)
    if decision is not None:
        raise InputError("decision", "this thread is not waiting for a decision")
    return await run_solution(resources, str(row["solution_id"]), on_event=on_event)
