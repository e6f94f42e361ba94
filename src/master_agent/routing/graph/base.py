"""What every part of the front door holds (the tenant, its pack and capabilities, its model, its loops) and
what the routing nodes and the handler nodes both use: the tenant's defaults, the clock, a turn's record."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from langchain_core.language_models import BaseChatModel

from master_agent.builder.conversation import AgentBuilder
from master_agent.capabilities import DomainPack, TenantCapabilities, TenantRecord, implied_entities
from master_agent.capabilities.tools import ToolContext
from master_agent.evolution.context import EvolutionContext
from master_agent.routing.discovery import AgentCard, Discovery
from master_agent.routing.graph.state import FrontDoorState
from master_agent.routing.intent import IntentAnalyzer
from master_agent.runtime.loop import CompiledLoop
from master_agent.runtime.resources import RuntimeResources
from master_agent.settings import Settings


@dataclass(kw_only=True)
class FrontDoorBase:
    """What the front door is given (its fields), and what its routing and handler nodes share."""

    tenant: TenantRecord
    pack: DomainPack
    capabilities: TenantCapabilities
    tool_context: ToolContext
    settings: Settings
    evolution: EvolutionContext
    model: BaseChatModel
    discovery: Discovery
    analyzer: IntentAnalyzer
    solvers: Mapping[str, CompiledLoop]
    """The master agent's loops by complexity."""
    agent_loops: Mapping[str, CompiledLoop]
    """The tenant's own agents' loops, by name."""
    classify: Any
    """goal -> complexity."""
    cards: list[AgentCard] = field(default_factory=list)
    defaults: dict[str, Any] | None = None
    builder: AgentBuilder | None = None
    """The agent-builder conversation (None: only decisions are made, e.g. by the routing eval)."""
    resources: RuntimeResources | None = None
    """What the meta-orchestrator runs with when a message asks for a system (None: not here)."""

    # -- shared ------------------------------------------------------------------------------

    async def tenant_defaults(self) -> dict[str, Any]:
        if self.defaults is None:
            self.defaults = await implied_entities(self.pack, self.tool_context)
        return self.defaults

    def now(self) -> str:
        return self.evolution.clock.now().isoformat()

    def _finish(self, state: FrontDoorState, goal: str) -> dict[str, Any]:
        routing = state.get("routing") or {}
        pending = state.get("pending") or {}
        turn = {
            "text": pending.get("text", ""),
            "goal": goal,
            "at": pending.get("at") or self.now(),
            "intent": routing.get("intent"),
            "target": routing.get("target"),
            "entities": routing.get("entities") or {},
        }
        return {"chat_turns": [turn], "clarifications": [], "clarifying": False}
