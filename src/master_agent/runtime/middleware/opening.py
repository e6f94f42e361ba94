"""The ``parallel_research`` variant's first turn: every research sub-agent is called at once, with
arguments filled from the goal and input by the same rules as the offline planner, before the model's
first turn (skipped on the short path: what they would find is known)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

from langchain_core.messages import AIMessage

from master_agent.models.offline import fill_arguments
from master_agent.runtime.middleware.base import LoopMiddleware, ModelHandler, ModelRequest, ModelResponse


@dataclass(kw_only=True)
class OpeningCallsMiddleware(LoopMiddleware):
    """Answers the first turn with the research calls instead of a model call."""

    state_keys: ClassVar[tuple[str, ...]] = ("iteration_count", "goal", "context_box")

    research: tuple[str, ...]
    """The research sub-agents called together."""
    parameters: Callable[[str], dict[str, Any]]
    """A tool's name -> its JSON-schema parameters."""

    async def wrap_model_call(self, request: ModelRequest, handler: ModelHandler) -> ModelResponse:
        if request.state.get("iteration_count") or request.short_path:
            return await handler(request)
        known = {**request.box["entities"], **request.box["data"]["context"]}
        goal = str(request.state.get("goal", ""))
        calls = []
        for name in self.research:
            args = fill_arguments(self.parameters(name), known, goal)
            if args is not None:
                calls.append({"name": name, "args": args, "id": f"call_open_{name}", "type": "tool_call"})
        return ModelResponse(reply=AIMessage(content="", tool_calls=calls), model_calls=0)
