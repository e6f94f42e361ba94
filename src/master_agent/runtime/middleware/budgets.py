"""Per-run budgets of one loop: tool calls, sub-agent spawns and model tokens (the tighter of the
agent spec's ``limits`` and the graph's). A flow's budgets count from the counters at its start; the
calls of a turn past a budget answer with a refusal instead of running (the token budget is a stop
rule of ``runtime.termination.decide``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from master_agent.capabilities import AgentSpec
from master_agent.runtime.middleware.base import CallOutcome, LoopMiddleware, ToolCallRequest, ToolHandler
from master_agent.runtime.state import MasterAgentState

#: The budgets an agent spec's ``limits`` and a graph's options may set.
BUDGETS = ("max_tool_calls", "max_spawns", "max_tokens")


def agent_budgets(spec: AgentSpec, graph_limits: dict[str, int | None]) -> dict[str, int]:
    """The per-run budgets binding ``spec``'s runs: the tighter of its own limits and the graph's."""
    own: dict[str, Any] = dict(spec.get("limits", {}))
    budgets: dict[str, int] = {}
    for name in BUDGETS:
        values = [int(v) for v in (own.get(name), graph_limits.get(name)) if v is not None]
        if values:
            budgets[name] = min(values)
    return budgets


def counters(state: MasterAgentState) -> dict[str, int]:
    """The loop's budget counters so far (a flow's budgets count from their values at its start)."""
    return {
        "tool_calls": int(state.get("tool_calls") or 0),
        "spawns": sum(1 for step in state.get("steps") or [] if step["kind"] == "sub_agent"),
        "tokens": int(state.get("tokens_used") or 0),
    }


@dataclass(kw_only=True)
class BudgetsMiddleware(LoopMiddleware):
    """Counts a flow's calls and spawns against its budgets and refuses the calls past them."""

    state_keys: ClassVar[tuple[str, ...]] = (
        "budget_start",
        "max_tokens",
        "tool_calls",
        "steps",
        "tokens_used",
    )

    budgets: dict[str, int]
    """``agent_budgets`` of the agent."""
    sub_agents: frozenset[str] = frozenset()
    """Names of the agent's sub-agents (a call to one is a spawn)."""

    def before_model(self, state: MasterAgentState, update: dict[str, Any]) -> None:
        if state.get("context_box") is not None:
            return  # not the flow's first turn
        update["budget_start"] = counters(state)
        if "max_tokens" in self.budgets:
            update["max_tokens"] = self.budgets["max_tokens"]

    def after_model(self, state: MasterAgentState, calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The turn's calls, those past the agent's tool-call or spawn budget for this run marked
        ``over_budget`` (they answer with the refusal instead of running)."""
        max_calls, max_spawns = self.budgets.get("max_tool_calls"), self.budgets.get("max_spawns")
        if max_calls is None and max_spawns is None:
            return calls
        now, start = counters(state), state.get("budget_start") or {}
        used = now["tool_calls"] - start.get("tool_calls", 0)
        spawned = now["spawns"] - start.get("spawns", 0)
        checked = []
        for call in calls:
            spawn = call.get("name") in self.sub_agents
            if max_calls is not None and used >= max_calls:
                call = {**call, "over_budget": f"its budget of {max_calls} tool calls per run is spent"}
            elif spawn and max_spawns is not None and spawned >= max_spawns:
                call = {
                    **call,
                    "over_budget": f"its budget of {max_spawns} sub-agent spawns per run is spent",
                }
            else:
                used += 1
                spawned += spawn
            checked.append(call)
        return checked

    async def wrap_tool_call(self, request: ToolCallRequest, handler: ToolHandler) -> CallOutcome:
        if request.over_budget is None:
            return await handler(request)
        why = f"{request.name} not run: {request.over_budget}"
        return CallOutcome(status="error", content=f"error: {why}; answer with what you have", blockers=[why])
