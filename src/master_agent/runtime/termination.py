"""When an agent loop stops, why, and the record each stop leaves.

Rules, in order (first match wins), after every agent turn:

h. a call handed the user a preview, a question or a failure     -> end  ``preview`` / ``ask_user``
                                                                      / ``exit``
0. the model call failed (after the client's retries)               -> end  ``model_error``
1. the model signalled completion (its turn has no tool calls)       -> end  ``completed``
2. progress >= 0.95                                                  -> end  ``progress_threshold``
3. iterations >= max_iterations                                      -> escalate ``max_iterations``
3b. tokens used in the flow >= the agent's max_tokens                -> escalate ``token_budget``
4. confidence < 0.5 after 5 iterations                               -> escalate ``low_confidence``
5. the same step (tool or sub-agent name, whatever its arguments) chosen in three turns in a
   row without progress between the first and the last           -> escalate ``stagnation``
6. otherwise                                                         -> continue
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from psycopg_pool import AsyncConnectionPool
from pydantic import BaseModel, ConfigDict

from master_agent.runtime.state import MasterAgentState, TurnRecord

logger = logging.getLogger(__name__)

Route = Literal["continue", "end", "escalate_to_human"]

PROGRESS_DONE = 0.95
LOW_CONFIDENCE = 0.5
LOW_CONFIDENCE_AFTER = 5
STAGNATION_REPEATS = 3
#: Confidence assumed when no tool has reported any (neither trusting nor distrusting).
NO_EVIDENCE_CONFIDENCE = 0.5


#: Supersteps of one loop invocation besides its agent/tools pairs: the input, recall (or plan),
#: the last agent turn's stop route (finalize or human review) and finalize after a review.
LOOP_OVERHEAD_STEPS = 4

#: Agent turns a human's guidance buys at least (half the loop's cap when that is more).
REVIEW_EXTRA_TURNS = 2


def recursion_limit_for(max_iterations: int) -> int:
    """The LangGraph recursion limit that lets a loop with this iteration cap always reach its own
    stop rules (two supersteps per agent turn, plus the overhead; a run resumed after a review gets
    at most ``max(REVIEW_EXTRA_TURNS, cap // 2)`` turns), so an iteration cap ends in a flagged
    answer or a human review, never in ``GraphRecursionError``."""
    return 2 * max(max_iterations, REVIEW_EXTRA_TURNS) + LOOP_OVERHEAD_STEPS


def iterations_within(recursion_limit: int) -> int:
    """The largest iteration cap whose loop fits ``recursion_limit`` (0 when none does)."""
    return max(0, (recursion_limit - LOOP_OVERHEAD_STEPS) // 2)


@dataclass(frozen=True, kw_only=True)
class Decision:
    route: Route
    reason: str


class TerminationReport(BaseModel):
    """One stop of one agent loop (a row of ``termination_log``)."""

    model_config = ConfigDict(extra="forbid")

    tenant_id: str
    thread_id: str
    scope: str
    """Checkpoint namespace of the loop ('' for the master agent)."""
    agent: str
    depth: int
    reason: str
    iterations: int
    progress: float
    confidence: float
    steps: list[str]
    """Signatures of the calls it made."""

    @classmethod
    def in_run(cls, config: Mapping[str, Any], **stop: Any) -> TerminationReport:
        """The report of a stop in the run ``config`` belongs to (its tenant, thread and namespace)."""
        configurable = config.get("configurable") or {}
        return cls(
            tenant_id=str(configurable.get("tenant_id", "")),
            thread_id=str(configurable.get("thread_id", "")),
            scope=str(configurable.get("checkpoint_ns", "")),
            **stop,
        )


def aggregate_confidence(state: MasterAgentState) -> float:
    """Mean of the confidences its tools and sub-agents reported."""
    values = list((state.get("confidences") or {}).values())
    if not values:
        return NO_EVIDENCE_CONFIDENCE
    return round(sum(values) / len(values), 4)


def progress_score(state: MasterAgentState, keys: list[str]) -> float:
    """The seed's score: the progress keys found share 0.75 (root cause, strategy, implementation
    plan for the master agent, 0.25 each), and confidence adds 0.25 at >= 0.75 or 0.15 at >= 0.5."""
    findings = state.get("findings") or {}
    solution = state.get("solution") or {}
    score = 0.0
    if keys:
        found = sum(1 for key in keys if findings.get(key) or solution.get(key))
        score += 0.75 * found / len(keys)
    confidence = state.get("confidence_score", 0.0)
    if confidence >= 0.75:
        score += 0.25
    elif confidence >= 0.5:
        score += 0.15
    return round(score, 4)


def is_stagnating(turns: list[TurnRecord]) -> bool:
    """Rule 5 over a flow's turns (each turn's progress is measured before its choice, so the first
    and last of three bracket the results of the first two)."""
    recent = turns[-STAGNATION_REPEATS:]
    if len(recent) < STAGNATION_REPEATS:
        return False
    repeated = set(recent[0]["steps"]).intersection(*(turn["steps"] for turn in recent[1:]))
    return bool(repeated) and recent[-1]["progress"] <= recent[0]["progress"]


def decide(state: MasterAgentState) -> Decision:
    """Apply the stop rules (module docstring) to the state after an agent turn."""
    handoff = state.get("handoff")
    if handoff:
        kind = str(handoff.get("kind"))
        return Decision(route="end", reason={"question": "ask_user", "failure": "exit"}.get(kind, "preview"))
    if state.get("model_failure"):
        return Decision(route="end", reason="model_error")
    messages = state.get("messages") or []
    last = messages[-1] if messages else None
    if last is None or not (getattr(last, "tool_calls", None) or getattr(last, "invalid_tool_calls", None)):
        return Decision(route="end", reason="completed")
    if state.get("progress_score", 0.0) >= PROGRESS_DONE:
        return Decision(route="end", reason="progress_threshold")
    iterations = state.get("iteration_count", 0)
    if iterations >= state.get("max_iterations", 10):
        return Decision(route="escalate_to_human", reason="max_iterations")
    budget = state.get("max_tokens")
    spent = state.get("tokens_used", 0) - (state.get("budget_start") or {}).get("tokens", 0)
    if budget is not None and spent >= budget:
        return Decision(route="escalate_to_human", reason="token_budget")
    if state.get("confidence_score", 1.0) < LOW_CONFIDENCE and iterations >= LOW_CONFIDENCE_AFTER:
        return Decision(route="escalate_to_human", reason="low_confidence")
    if is_stagnating(state.get("recent_turns") or []):
        return Decision(route="escalate_to_human", reason="stagnation")
    return Decision(route="continue", reason="continue")


class TerminationSink(Protocol):
    """Where stop records go."""

    async def record(self, report: TerminationReport) -> None: ...


INSERT_TERMINATION = """
INSERT INTO termination_log
    (tenant_id, thread_id, scope, agent, depth, reason, iterations, progress, confidence, steps)
VALUES (%(tenant_id)s, %(thread_id)s, %(scope)s, %(agent)s, %(depth)s, %(reason)s, %(iterations)s,
        %(progress)s, %(confidence)s, %(steps)s)
ON CONFLICT (thread_id, scope, agent, reason, iterations) DO NOTHING
"""
SELECT_TERMINATIONS = """
SELECT tenant_id, thread_id, scope, agent, depth, reason, iterations, progress, confidence, steps,
       created_at
FROM termination_log
WHERE tenant_id = %(tenant_id)s AND (%(thread_id)s::text IS NULL OR thread_id = %(thread_id)s)
ORDER BY id DESC
LIMIT %(limit)s
"""


class PostgresTerminationLog:
    """``termination_log`` in Postgres; idempotent per (thread, scope, agent, reason, iterations)."""

    def __init__(self, pool: AsyncConnectionPool[Any]) -> None:
        self._pool = pool

    async def record(self, report: TerminationReport) -> None:
        row = report.model_dump()
        row["steps"] = json.dumps(row["steps"])
        async with self._pool.connection() as conn:
            await conn.execute(INSERT_TERMINATION, row)
        logger.info(
            "stop agent=%s depth=%d reason=%s iterations=%d progress=%.2f confidence=%.2f",
            report.agent,
            report.depth,
            report.reason,
            report.iterations,
            report.progress,
            report.confidence,
        )

    async def list(
        self, tenant_id: str, *, thread_id: str | None = None, limit: int = 50
    ) -> list[dict[str, Any]]:
        async with self._pool.connection() as conn:
            cursor = await conn.execute(
                SELECT_TERMINATIONS,
                {"tenant_id": tenant_id, "thread_id": thread_id, "limit": limit},
            )
            return list(await cursor.fetchall())
