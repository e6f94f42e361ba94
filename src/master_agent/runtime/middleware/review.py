"""Human review of an escalated master loop (``LoopLimits.human_review``): the stop rules' escalation
becomes an ``interrupt()``; the reviewer approves the partial answer, rejects it, or gives guidance,
which buys the loop more turns and is its next user message."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from langchain_core.messages import HumanMessage, ToolMessage
from langgraph.types import Command, interrupt

from master_agent.runtime.middleware.base import LoopMiddleware
from master_agent.runtime.state import MasterAgentState
from master_agent.runtime.termination import REVIEW_EXTRA_TURNS, decide

#: Content of the tool message answering a call that never ran because the loop escalated.
SKIPPED_CALL = "skipped: the run was escalated to a human before this call ran"


@dataclass(kw_only=True)
class HumanReviewMiddleware(LoopMiddleware):
    """The ``human_review`` node: what a reviewer decides about an escalation."""

    state_keys: ClassVar[tuple[str, ...]] = ("escalation", "messages", "max_iterations", "notes")

    agent: str
    """The escalating agent."""
    max_iterations: int
    """The agent's iteration cap (guidance buys half of it, at least ``REVIEW_EXTRA_TURNS``)."""

    def __call__(self, state: MasterAgentState) -> Command[Any]:
        decision = decide(state)
        answer = interrupt(
            {
                "question": "The agent escalated. Reply 'approve' (accept the partial answer), "
                "'reject' (stop), or guidance text (continue with it).",
                "agent": self.agent,
                "reason": decision.reason,
                "goal": state.get("goal", ""),
                "iterations": state.get("iteration_count", 0),
                "progress": state.get("progress_score", 0.0),
                "confidence": state.get("confidence_score", 0.0),
                "found": sorted(state.get("findings") or {}),
                "blockers": list(state.get("blockers") or []),
            }
        )
        verdict = answer.get("decision", "") if isinstance(answer, dict) else answer
        verdict = str(verdict).strip()
        if verdict.lower() in ("approve", "reject"):
            return Command(
                goto="finalize",
                update={
                    "escalation": {"reason": decision.reason, "decision": verdict.lower()},
                    "notes": [f"escalated ({decision.reason}); the reviewer answered {verdict.lower()}"],
                },
            )
        extra = max(REVIEW_EXTRA_TURNS, self.max_iterations // 2)
        last = (state.get("messages") or [])[-1]
        # Every tool call needs an answer before the next user turn (OpenAI rejects the history
        # otherwise); the calls the escalation stopped are answered as skipped.
        skipped = [
            ToolMessage(
                content=SKIPPED_CALL, tool_call_id=call["id"] or "", name=call["name"], status="error"
            )
            for call in [
                *(getattr(last, "tool_calls", None) or []),
                *(getattr(last, "invalid_tool_calls", None) or []),
            ]
        ]
        return Command(
            goto="agent",
            update={
                "messages": [*skipped, HumanMessage(content=verdict or "Continue.")],
                "max_iterations": state.get("iteration_count", 0) + extra,
                "notes": [f"escalated ({decision.reason}); the reviewer's guidance: {verdict or 'continue'}"],
            },
        )
