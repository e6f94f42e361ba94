"""The ``finalize`` node of every loop: the last answer shaped by the agent's output schema and checked
(``runtime.verification``), the status and limitations that follow from how the loop stopped (a
handoff, a model failure, an escalation and its review, a confidence under the spec's floor), the
``TerminationReport`` recorded, and the one ``SubAgentEnvelope`` the parent gets."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Literal, cast

from langchain_core.messages import ToolMessage
from langchain_core.runnables import RunnableConfig

from master_agent.capabilities import AgentSpec, SubAgentEnvelope
from master_agent.runtime.answers import final_confidence, parse_final_answer, progress_keys, shape_answer
from master_agent.runtime.context import closing_context_box, extract_entities
from master_agent.runtime.middleware.base import LoopMiddleware
from master_agent.runtime.proposals import HOW_TO_ANSWER
from master_agent.runtime.recovery import low_confidence_question
from master_agent.runtime.state import MasterAgentState
from master_agent.runtime.termination import (
    TerminationReport,
    TerminationSink,
    aggregate_confidence,
    decide,
    progress_score,
)
from master_agent.runtime.verification import (
    Check,
    confirmed_actions,
    requested_steps,
    verify_before_answer,
)


@dataclass(kw_only=True)
class TerminationMiddleware(LoopMiddleware):
    """Ends one loop: the envelope, the solution and the termination report."""

    state_keys: ClassVar[tuple[str, ...]] = (
        "solution",
        "envelope",
        "termination",
        "confidence_score",
        "progress_score",
    )

    spec: AgentSpec
    """The agent's spec (its output schema, progress keys, ``ask_below_confidence``)."""
    depth: int
    """The loop's depth (in the report)."""
    sink: TerminationSink
    """Where termination reports go."""

    @property
    def agent(self) -> str:
        return self.spec["name"]

    async def after_agent(self, state: MasterAgentState, config: RunnableConfig) -> dict[str, Any] | None:
        escalation = state.get("escalation")
        decision = decide(state)
        limitations: list[str] = []
        error: str | None = None
        failure = state.get("model_failure")
        handoff = state.get("handoff")
        if handoff:
            reason = decision.reason
            kind = handoff.get("kind")
            if kind == "preview":
                limitations.append(f"waiting for your acceptance of the preview: {HOW_TO_ANSWER}")
            elif kind == "question":
                limitations.append(f"needs your answer: {handoff.get('question')}")
            else:
                limitations.append(str(handoff.get("explanation")))
                limitations.append(f"what you can do: {handoff.get('what_you_can_do')}")
        elif failure:
            reason = "model_error"
            limitations.append(f"the agent stopped: {failure}")
        elif escalation:
            reason = f"escalated:{escalation['reason']}:{escalation['decision']}"
        elif decision.route == "escalate_to_human":
            reason = f"escalated:{decision.reason}"
            limitations.append(f"stopped early ({decision.reason}); the answer may be incomplete")
        else:
            reason = decision.reason
        messages = state.get("messages") or []
        answer = parse_final_answer(messages[-1] if messages else None)
        confidence = final_confidence(answer, aggregate_confidence(state), bool(state.get("confidences")))
        data, incomplete = shape_answer(
            self.spec["output_schema"], answer, state.get("findings") or {}, confidence
        )
        complete = not incomplete
        limitations.extend(incomplete)
        checks: list[Check] = []
        no_answer: str | None = None
        asked = {**extract_entities(str(state.get("goal") or "")), **dict(state.get("context") or {})}
        # A request of several changes: each is answered as its tools left it (checked below), also
        # when the flow ends handing the user a preview or a question: what was done so far and what
        # was not are said with it, never left out.
        steps = requested_steps(
            asked, confirmed_actions(m.content for m in messages if isinstance(m, ToolMessage))
        )
        if steps is not None and not failure:
            data = {**data, "actions": steps}
        if not handoff and not failure:
            verified = verify_before_answer(
                data,
                asked,
                confidence,
                model_finished=decision.reason == "completed" and not escalation,
                tools_called=bool(state.get("completed_steps")),
            )
            data, confidence, checks = verified.data, verified.confidence, verified.checks
            limitations.extend(verified.limitations)
            no_answer = verified.no_answer
        status: Literal["success", "partial", "error"] = "success" if complete else "partial"
        floor = self.spec.get("ask_below_confidence")
        if floor is not None and confidence < floor and not (handoff or failure or escalation):
            handoff = low_confidence_question(confidence, state.get("blockers") or [])
            limitations.append(f"needs your answer: {handoff['question']}")
            reason = "ask_user"
        if limitations and status == "success":
            status = "partial"
        if failure and not complete:
            status, error = "error", failure
        if no_answer is not None:
            status, error = "error", no_answer
            limitations.append(no_answer)
        if escalation and escalation["decision"] == "reject":
            status, error = "error", "rejected by a human reviewer"
        if handoff and handoff.get("kind") == "failure":
            status, error = "error", str(handoff.get("explanation"))
        limitations.extend(state.get("blockers") or [])
        report = TerminationReport.in_run(
            config,
            agent=self.agent,
            depth=self.depth,
            reason=reason,
            iterations=state.get("iteration_count", 0),
            progress=progress_score({**state, "confidence_score": confidence}, progress_keys(self.spec)),
            confidence=confidence,
            steps=list(state.get("completed_steps") or []),
        )
        await self.sink.record(report)
        envelope = SubAgentEnvelope(
            status=status,
            data=data,
            confidence=confidence,
            limitations=limitations,
            error=error,
            error_type=(handoff or {}).get("error_type"),
            error_context=dict((handoff or {}).get("context") or {}),
            handoff=handoff or None,
            steps=cast(list[dict[str, Any]], list(state.get("steps") or [])),
            verification=[check.model_dump() for check in checks],
            context_box=dict(
                closing_context_box(
                    state.get("context_box"),
                    str(state.get("goal") or ""),
                    dict(state.get("context") or {}),
                    steps=list(state.get("completed_steps") or []),
                    blockers=list(state.get("blockers") or []),
                    notes=list(state.get("notes") or []),
                    handoff=handoff or None,
                    limitations=limitations,
                    outcome=data.get("action"),
                )
            ),
        )
        return {
            "solution": data,
            "envelope": envelope.model_dump(mode="json"),
            "termination": report.model_dump(),
            "confidence_score": confidence,
            "progress_score": report.progress,
        }
