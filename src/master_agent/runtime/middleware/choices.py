"""Choices a tool result offers (``{"field", "question", "options": [{"label", "value"}]}``, e.g. two
contacts named David): the user picks one (``interrupt()``, multiple choice) and the chosen option's
value becomes the result's ``field``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from langgraph.types import interrupt

from master_agent.runtime.middleware.base import (
    CallOutcome,
    LoopMiddleware,
    ToolCallRequest,
    ToolHandler,
    tool_outcome,
)
from master_agent.runtime.recovery import answer_text, pick_option


@dataclass(kw_only=True)
class ChoicesMiddleware(LoopMiddleware):
    """Asks the user to choose when a plain tool's result offers choices."""

    state_keys: ClassVar[tuple[str, ...]] = ("findings", "confidences", "notes")

    agent: str
    """The agent whose calls these are (named in the question)."""

    async def wrap_tool_call(self, request: ToolCallRequest, handler: ToolHandler) -> CallOutcome:
        outcome = await handler(request)
        if request.kind != "tool" or outcome.status != "success" or not isinstance(outcome.result, dict):
            return outcome
        resolved, chosen = self.resolve(request.name, outcome.result)
        if not chosen:
            return outcome
        replaced = tool_outcome(request.name, request.call_id, "success", resolved)
        replaced.notes = [*outcome.notes, *chosen]
        return replaced

    def resolve(self, name: str, result: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
        """The result with its choice made, and the note saying so ([] when it offers none)."""
        choices = result.get("choices")
        if not isinstance(choices, dict):
            return result, []
        options = [o for o in choices.get("options") or [] if isinstance(o, dict) and "label" in o]
        field_name = str(choices.get("field") or "")
        if len(options) < 2 or not field_name:
            return result, []
        labels = [str(o["label"]) for o in options]
        answer = answer_text(
            interrupt(
                {
                    "kind": "clarification",
                    "question": str(choices.get("question") or f"Which one did you mean ({name})?"),
                    "options": labels,
                    "agent": self.agent,
                    "tool": name,
                }
            )
        )
        picked = pick_option(answer, labels)
        resolved = {key: value for key, value in result.items() if key != "choices"}
        if picked is None:
            resolved["unresolved"] = f"the user's answer {answer!r} matched none of {labels}"
            return resolved, [f"{name}: the user's answer {answer!r} matched no option"]
        chosen = options[labels.index(picked)]
        resolved[field_name] = chosen.get("value")
        resolved["chosen"] = picked
        resolved["confidence"] = max(float(result.get("confidence") or 0.0), 0.95)
        return resolved, [f"{name}: the user chose {picked!r}"]
