"""A request the pack read as one it cannot answer in full (a figure its data lacks, or one it has no
strategy for: the flow's ``context["scope"]``) ends the flow with that, not with another figure's plan."""

from __future__ import annotations

from typing import Any, ClassVar

from langchain_core.runnables import RunnableConfig

from master_agent.runtime.middleware.base import LoopMiddleware
from master_agent.runtime.state import MasterAgentState


class ScopeMiddleware(LoopMiddleware):
    """Turns the pack's out-of-scope reading of a request into the flow's handoff."""

    state_keys: ClassVar[tuple[str, ...]] = ("context", "handoff")

    async def before_agent(
        self, state: MasterAgentState, config: RunnableConfig, update: dict[str, Any]
    ) -> None:
        scope = dict(update.get("context", state.get("context") or {})).get("scope")
        if not isinstance(scope, dict) or update.get("handoff"):
            return
        update["handoff"] = {
            "kind": scope.get("kind", "out_of_scope"),
            "explanation": scope.get("explanation"),
            "what_you_can_do": scope.get("what_you_can_do"),
            "missing": list(scope.get("missing") or []),
            "facts": scope.get("facts"),
        }
