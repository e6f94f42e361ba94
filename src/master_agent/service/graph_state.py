"""Reading a thread's graph state for the API (the same graph its runs used)."""

from __future__ import annotations

from typing import Any

from langgraph.types import StateSnapshot

from master_agent.runtime import RuntimeResources
from master_agent.runtime.graph_runs import thread_graph_config
from master_agent.runtime.graphs import graph_for, graph_id_of
from master_agent.runtime.loop import CompiledLoop
from master_agent.runtime.runs import Run
from master_agent.runtime.serialization import error_output, interrupt_json, thread_output, to_jsonable
from master_agent.service.threads import Thread, get_thread


async def thread_graph(
    resources: RuntimeResources, tenant_id: str, thread: Thread
) -> tuple[CompiledLoop, Any]:
    configurable = dict((thread.config or {}).get("configurable") or {})
    config = thread_graph_config(tenant_id, str(thread.thread_id), configurable)
    graph_id = graph_id_of(thread.config)
    graph = await graph_for(resources, graph_id, config, checkpointer=resources.database.checkpointer)
    return graph, config


async def thread_snapshot(
    resources: RuntimeResources,
    tenant_id: str,
    thread: Thread,
    checkpoint: dict[str, Any] | None = None,
    subgraphs: bool = False,
) -> StateSnapshot:
    """The thread's state now, or at ``checkpoint`` (``created_at`` None: there is no such checkpoint)."""
    graph, config = await thread_graph(resources, tenant_id, thread)
    if checkpoint:
        config = {**config, "configurable": {**config["configurable"], **checkpoint}}
    return await graph.aget_state(config, subgraphs=subgraphs)


def _checkpoint(config: Any) -> dict[str, Any] | None:
    if not config:
        return None
    configurable = config.get("configurable") or {}
    return {
        "thread_id": configurable.get("thread_id"),
        "checkpoint_ns": configurable.get("checkpoint_ns", ""),
        "checkpoint_id": configurable.get("checkpoint_id"),
    }


def snapshot_json(snapshot: StateSnapshot) -> dict[str, Any]:
    checkpoint = _checkpoint(snapshot.config)
    parent = _checkpoint(snapshot.parent_config)
    return {
        "values": to_jsonable(snapshot.values),
        "next": list(snapshot.next),
        "tasks": [
            {
                "id": task.id,
                "name": task.name,
                "path": to_jsonable(list(task.path)),
                "error": str(task.error) if task.error else None,
                "interrupts": [interrupt_json(item) for item in task.interrupts],
                "checkpoint": None,
                "state": None,
                "result": to_jsonable(task.result),
            }
            for task in snapshot.tasks
        ],
        "metadata": to_jsonable(snapshot.metadata),
        "created_at": snapshot.created_at,
        "checkpoint": checkpoint,
        "parent_checkpoint": parent,
        "checkpoint_id": checkpoint["checkpoint_id"] if checkpoint else None,
        "parent_checkpoint_id": parent["checkpoint_id"] if parent else None,
        "interrupts": [interrupt_json(item) for item in snapshot.interrupts],
    }


async def run_output(resources: RuntimeResources, tenant_id: str, thread: Thread, run: Run) -> Any:
    """What ``runs.wait`` / ``runs.join`` return: the thread's values after the run."""
    if run.status == "error":
        name, separator, message = (run.error or "").partition(": ")
        if separator and name.isidentifier():
            return error_output(message, name)
        return error_output(run.error)
    # The run may have fixed the thread's graph shape since ``thread`` was read: read it again.
    thread = await get_thread(resources.database.pool, tenant_id, thread.thread_id) or thread
    graph, config = await thread_graph(resources, tenant_id, thread)
    snapshot = await graph.aget_state(config)
    return thread_output(snapshot.values, snapshot.interrupts)


def run_json(run: Run) -> dict[str, Any]:
    return {
        "run_id": str(run.run_id),
        "thread_id": run.thread_id,
        "assistant_id": str(run.assistant_id) if run.assistant_id else None,
        "created_at": run.created_at.isoformat(),
        "updated_at": run.updated_at.isoformat(),
        "status": run.status,
        "metadata": run.metadata,
        "kwargs": run.request,
        "multitask_strategy": run.multitask_strategy,
    }
