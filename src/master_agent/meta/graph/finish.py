"""The last phase: the compiled system registered as the tenant's agents (once every gate passed), and the
request finalized (or marked failed with its reason)."""

from __future__ import annotations

import uuid
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.errors import GraphBubbleUp
from psycopg.types.json import Jsonb

from master_agent.meta.evaluation import record_request_metrics
from master_agent.meta.graph.phases import _lead
from master_agent.meta.graph.state import MetaState, _broker, _log, _resources, _tenant, _trace

#: Playbooks whose result is a system to put in place (an evaluation changes nothing).
REGISTERING: frozenset[str] = frozenset({"build", "debug", "optimize", "harden", "incident"})


async def register(state: MetaState, config: RunnableConfig) -> dict[str, Any]:
    """Make the compiled system the tenant's agents, once every gate passed (and, where the human
    gate is on, after its approval: this node runs after it). Until here nothing is routable."""
    failed = [name for name, gate in (state.get("gates") or {}).items() if not gate.get("passed")]
    why = None
    if state.get("intent") not in REGISTERING:
        why = f"the {state.get('intent')} playbook changes no system"
    elif failed:
        why = f"gates not passed: {', '.join(failed)}"
    elif "CompiledSpec" not in (state.get("artifacts") or {}):
        why = "nothing compiled"
    if why is not None:
        return {"routing_trace": _trace(state, "register", f"not registered: {why}", go="finalize")}
    result = await _lead(state, config, "compiler", "register")
    artifacts = dict(state.get("artifacts") or {})
    for ref in result.wrote:
        artifacts[ref.type] = ref.model_dump()
    return {
        "registered_agent": result.registered_agent,
        "artifacts": artifacts,
        "history": await _log(state, config, "register", "compiler.register", result.note),
        "routing_trace": _trace(state, "register", result.note, go="finalize"),
    }


MARK_FAILED = """
UPDATE meta_requests SET status = 'failed', result = %s, updated_at = now()
WHERE request_id = %s AND tenant_id = %s
"""


async def _finalize_or_fail(state: MetaState, config: RunnableConfig) -> dict[str, Any]:
    """``finalize``; when it cannot finish, the request's row still ends ``failed`` with the reason."""
    try:
        return await finalize(state, config)
    except GraphBubbleUp:
        raise
    except Exception as error:
        reason = f"finalize: {error}"
        result = {"status": "failed", "request_id": state.get("request_id"), "error": reason}
        if state.get("request_id"):
            resources = await _resources(config)
            async with resources.database.pool.connection() as conn:
                await conn.execute(
                    MARK_FAILED, (Jsonb(result), uuid.UUID(state["request_id"]), _tenant(config))
                )
        return {"status": "failed", "error": reason, "result": result}


async def finalize(state: MetaState, config: RunnableConfig) -> dict[str, Any]:
    resources = await _resources(config)
    broker = await _broker(state, config)
    artifacts = state.get("artifacts") or {}
    status = state.get("status") or "running"
    if status == "running":
        status = "partial" if state.get("left_undone") else "done"
    registered = state.get("registered_agent")
    result = {
        "status": status,
        "request_id": state.get("request_id"),
        "intent": state.get("intent"),
        "runtime_target": state.get("runtime_target"),
        "playbook": state.get("playbook"),
        "registered_agent": registered,
        "artifacts": artifacts,
        "summaries": await broker.summaries(list(artifacts)),  # type: ignore[arg-type]
        "gates": state.get("gates") or {},
        "warnings": state.get("warnings") or [],
        "left_undone": state.get("left_undone") or [],
        "error": state.get("error"),
        "loops": state.get("loops") or {},
        "promotions": [p.model_dump(mode="json") for p in await broker.promotions()],
    }
    await record_request_metrics(resources.database.pool, broker, state, result)
    return {
        "status": status,
        "result": result,
        "history": await _log(state, config, "finalize", status, f"agent {registered or '-'}"),
    }
