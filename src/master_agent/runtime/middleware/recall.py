"""Village knowledge at the start of each flow of the master loop: values a proven pattern or the tenant
implies are added to the flow's input, and when what the research sub-agents would find is already
known, they are not offered (the short path). A reused pattern alone never settles that: it brings a
driver to suspect, never this store's figures."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

from langchain_core.runnables import Runnable, RunnableConfig
from langgraph.config import get_stream_writer

from master_agent.runtime.context import extract_entities
from master_agent.runtime.middleware.base import LoopMiddleware, ModelHandler, ModelRequest, ModelResponse
from master_agent.runtime.state import MasterAgentState


@dataclass(frozen=True, kw_only=True)
class Recall:
    """What the master loop's first step found before the first model turn."""

    context: dict[str, Any] = field(default_factory=dict)
    """Values added to the loop's input (the request's own values win)."""
    reused_pattern: dict[str, Any] | None = None
    """The village-knowledge pattern taken as a short path, if any."""


RecallStep = Callable[[str, dict[str, Any]], Awaitable[Recall]]
"""(goal, known values) -> Recall."""


@dataclass(kw_only=True)
class RecallMiddleware(LoopMiddleware):
    """Recalls village knowledge for the flow's goal and takes the short path when it may."""

    state_keys: ClassVar[tuple[str, ...]] = ("context", "reused_pattern", "findings", "notes")

    agent: str
    """The agent (named in the ``pattern_reused`` stream event)."""
    recall: RecallStep
    """(goal, known values) -> what village knowledge and the tenant imply."""
    research_fields: dict[str, frozenset[str]] = field(default_factory=dict)
    """What each research sub-agent offered here finds (its output fields but ``confidence``)."""
    short_model: Runnable[Any, Any] | None = None
    """The model bound without the research sub-agents (None: no short path)."""

    async def before_agent(
        self, state: MasterAgentState, config: RunnableConfig, update: dict[str, Any]
    ) -> None:
        goal = str(state.get("goal", ""))
        context = dict(update.get("context", state.get("context") or {}))
        found = await self.recall(goal, {**extract_entities(goal), **context})
        update["context"] = {**found.context, **context}
        if found.reused_pattern is None:
            return
        update["reused_pattern"] = found.reused_pattern
        # What the pattern settles counts as found, so progress (and the stop rules) see it.
        update["findings"] = {**update.get("findings", {}), **dict(found.reused_pattern.get("values") or {})}
        get_stream_writer()({"event": "pattern_reused", "agent": self.agent, "pattern": found.reused_pattern})
        update["notes"] = [
            *update.get("notes", []),
            f"reused village-knowledge pattern {found.reused_pattern.get('pattern_id', '')}".rstrip(),
        ]

    def short_path(self, state: MasterAgentState) -> bool:
        """Research is skipped only when what it would find is already known for this run."""
        if not state.get("reused_pattern") or self.short_model is None:
            return False
        findings = state.get("findings") or {}
        return all(key in findings for keys in self.research_fields.values() for key in keys)

    async def wrap_model_call(self, request: ModelRequest, handler: ModelHandler) -> ModelResponse:
        if self.short_model is not None and self.short_path(request.state):
            request.model, request.lean_tools, request.short_path = self.short_model, None, True
        return await handler(request)
