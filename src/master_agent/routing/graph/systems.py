"""Requests for an agent system: told apart from a single agent's, run on the meta graph, told back."""

from __future__ import annotations

import re
from typing import Any

from master_agent.runtime.resources import RESOURCES_KEY, RuntimeResources

#: "Build an agent system that ...", "create a multi-agent pipeline to ...": a system, not one agent.
_SYSTEM_REQUEST = re.compile(
    r"^\s*(?:please\s+)?(?:build|create|make|design|set up)\s+(?:me\s+)?(?:an?\s+)?(?:new\s+)?"
    r"(?:(?:agent|multi-agent|agentic)\s+(?:system|team|pipeline|workflow)|system\s+of\s+agents)\b",
    re.I,
)


def is_system_request(text: str) -> bool:
    """A chat message asking for an agent system (the meta-orchestrator's work, not the builder's)."""
    return bool(_SYSTEM_REQUEST.match(text))


async def run_system_request(
    resources: RuntimeResources, tenant_id: str, text: str, emit: Any
) -> dict[str, Any]:
    """The meta graph on ``text`` for the tenant, each step handed to ``emit`` as it finishes."""
    from master_agent.meta.graph import build_meta_graph  # meta stands beside the front door

    graph = build_meta_graph().compile()
    config: Any = {"configurable": {"tenant_id": tenant_id, RESOURCES_KEY: resources}}
    result: dict[str, Any] = {}
    async for update in graph.astream({"request": {"text": text[:5000]}}, config, stream_mode="updates"):
        for node, values in update.items():
            trace = (values or {}).get("routing_trace") or []
            emit({"event": "meta", "node": node, "step": trace[-1] if trace else None})
            if node == "finalize":
                result = dict((values or {}).get("result") or {})
    return result


def system_reply(result: dict[str, Any]) -> str:
    """What the chat answers about a meta request's result."""
    lines = [
        f"Meta request {result.get('request_id')}: {result.get('status')} ({result.get('playbook')} playbook)."
    ]
    if result.get("registered_agent"):
        lines.append(f"Registered as the agent {result['registered_agent']!r}: ask it by name.")
    quality = (result.get("gates") or {}).get("quality") or {}
    if quality:
        lines.append(f"Quality gate: {'passed' if quality.get('passed') else 'failed'}.")
    lines += [f"Not met: {item}" for item in quality.get("unmet") or []]
    if result.get("error"):
        lines.append(f"Failed: {result['error']}")
    return "\n".join(lines)
