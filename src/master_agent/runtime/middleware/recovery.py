"""The failure matrix of tool calls (``runtime.recovery``): a transient failure is called again; a
failure that names its class is told to the model with the decision it implies (retry, try another
way, ask the user, exit), and the decisions that end the flow hand it over to the user."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from typing import ClassVar

from langchain_core.tools import BaseTool

from master_agent.runtime.middleware.base import CallOutcome, LoopMiddleware, ToolCallRequest, ToolHandler
from master_agent.runtime.recovery import (
    RETRIED,
    RETRY_DELAY_S,
    RETRY_LIMIT,
    failure_decision,
    failure_handoff,
    guidance,
)


@dataclass(kw_only=True)
class RecoveryMiddleware(LoopMiddleware):
    """Retries and failure decisions of one agent's calls."""

    state_keys: ClassVar[tuple[str, ...]] = ("notes", "blockers", "handoff")

    tools: dict[str, BaseTool]
    """The agent's plain tools (where another way to the same facts is looked for)."""
    delay_s: float = RETRY_DELAY_S
    """Pause before calling a transient failure again."""

    async def wrap_tool_call(self, request: ToolCallRequest, handler: ToolHandler) -> CallOutcome:
        outcome = await handler(request)
        name = request.name
        if request.kind == "sub_agent":
            if outcome.status == "error" and outcome.error_type and outcome.handoff is None:
                outcome.notes = [*outcome.notes, self.failure_note(name, outcome.error_type)]
            return outcome
        if request.kind != "tool":
            return outcome
        retries: list[str] = []
        for _ in range(RETRY_LIMIT):
            if not (outcome.status == "error" and outcome.error_type in RETRIED):
                break
            retries.append(f"{name}: {outcome.error_type}, called again")
            await asyncio.sleep(self.delay_s)
            outcome = await handler(request)
        outcome.notes = [*retries, *outcome.notes]
        if outcome.status != "error" or not outcome.error_type or not isinstance(outcome.result, dict):
            return outcome
        error_type, result = outcome.error_type, outcome.result
        alternatives = self.alternatives(name)
        decision = failure_decision(error_type, alternatives)
        told = {**result, "decision": decision, "guidance": guidance(decision)}
        if decision == "try_another_way" and alternatives:
            told["alternatives"] = alternatives
        outcome.content = json.dumps(told, default=str)
        outcome.notes.append(self.failure_note(name, error_type))
        if decision in ("exit", "ask_user"):
            outcome.handoff = failure_handoff(
                name, error_type, str(result["error"]), dict(result.get("context") or {})
            )
        return outcome

    def failure_note(self, name: str, error_type: str) -> str:
        alternatives = self.alternatives(name)
        decision = failure_decision(error_type, alternatives)
        instead = f" ({', '.join(alternatives)})" if decision == "try_another_way" and alternatives else ""
        return f"{name} failed ({error_type}): decided {decision}{instead}"

    def alternatives(self, name: str) -> list[str]:
        """This agent's tools declared ``instead_of`` ``name`` (metadata): another way to the same
        facts when ``name``'s service is down."""
        return [
            other
            for other, tool in self.tools.items()
            if other != name and (tool.metadata or {}).get("instead_of") == name
        ]
