"""The meta graph's state and what every node reads through: the resources, the tenant, the state broker, the
history and the routing trace."""

from __future__ import annotations

import uuid
from typing import Any, NotRequired

from langchain_core.runnables import RunnableConfig
from typing_extensions import TypedDict

from master_agent.errors import InputError
from master_agent.meta.broker import HistoryEntry, StateBroker, fold_history
from master_agent.runtime.resources import RESOURCES_KEY, RuntimeResources, shared_resources


class MetaState(TypedDict):
    """Meta state (section 2.1): artifacts as references, history capped (section 2.2)."""

    request: dict[str, Any]
    request_id: NotRequired[str]
    intent: NotRequired[str]
    runtime_target: NotRequired[str]
    constraint_pack: NotRequired[dict[str, Any]]
    playbook: NotRequired[str]
    phases: NotRequired[list[dict[str, Any]]]
    phase_index: NotRequired[int]
    budgets: NotRequired[dict[str, Any]]
    """``global`` caps, ``per_role`` caps, ``spent`` per role, ``reallocated`` roles."""
    artifacts: NotRequired[dict[str, dict[str, Any]]]
    status: NotRequired[str]
    history: NotRequired[list[dict[str, Any]]]
    routing_trace: NotRequired[list[dict[str, Any]]]
    active_promotions: NotRequired[list[str]]
    """Pending PromotionDecisions (decision ids) for apply_promotion."""
    loops: NotRequired[dict[str, int]]
    last_result: NotRequired[dict[str, Any] | None]
    gates: NotRequired[dict[str, Any]]
    failure: NotRequired[dict[str, Any] | None]
    review: NotRequired[list[str]]
    """Why a human should look (a role's flag, an ambiguous gate, an exhausted budget)."""
    warnings: NotRequired[list[str]]
    registered_agent: NotRequired[str | None]
    """The tenant agent the latest compile registered."""
    left_undone: NotRequired[list[str]]
    error: NotRequired[str | None]
    """Why the request failed (set with ``status`` ``failed``)."""
    result: NotRequired[dict[str, Any]]


async def _resources(config: RunnableConfig) -> RuntimeResources:
    """The service's resources when it serves this graph; the process's shared ones otherwise
    (``langgraph dev``, the CLI)."""
    given = (config.get("configurable") or {}).get(RESOURCES_KEY)
    return given if isinstance(given, RuntimeResources) else await shared_resources()


def _tenant(config: RunnableConfig) -> str:
    tenant = (config.get("configurable") or {}).get("tenant_id")
    if not tenant:
        raise InputError("configurable.tenant_id", "the meta graph runs for a tenant")
    return str(tenant)


async def _broker(state: MetaState, config: RunnableConfig) -> StateBroker:
    resources = await _resources(config)
    return StateBroker(
        resources.database.pool,
        _tenant(config),
        uuid.UUID(state["request_id"]),
        resources.evolution.clock.now,
    )


async def _log(
    state: MetaState, config: RunnableConfig, phase: str, decision: str, outcome: str, **detail: Any
) -> list[dict[str, Any]]:
    """The in-state history with one more entry (the broker keeps every entry)."""
    entry = await (await _broker(state, config)).record(phase, decision, outcome, **detail)
    history = [HistoryEntry.model_validate(item) for item in state.get("history") or []]
    return [item.model_dump() for item in fold_history([*history, entry])]


def _trace(state: MetaState, node: str, why: str, **detail: Any) -> list[dict[str, Any]]:
    return [*(state.get("routing_trace") or []), {"node": node, "why": why, **detail}]
