"""Where a failed run failed: the path through its call tree to the node, sub-agent or tool that raised
("solve > analyst > query_sales"), read from what the run stored.

Two records say it, and the path joins them outermost first:

- the run's last checkpoint: LangGraph keeps a failed task's error as a write of that checkpoint, and a
  task that runs a subgraph has the subgraph's own checkpoint, whose failed task is one level deeper
  (``aget_state(subgraphs=True)`` reads them all the way down);
- the run's stored stream events: the loop announces every tool and sub-agent call (``call_start``,
  ``call_end`` with its agent and depth), so a call started and never ended was under way when the run
  failed; a sub-agent's calls are under the sub-agent call that spawned them.

A run whose model failed raised nothing: its checkpoint names the node that wrote the failure instead.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from langgraph.types import StateSnapshot

from master_agent.errors import MasterAgentError
from master_agent.runtime import RuntimeResources
from master_agent.runtime.run_events import RunEvent, RunEventLog
from master_agent.runtime.runs import Run
from master_agent.service.graph_state import thread_graph
from master_agent.service.threads import Thread, get_thread

logger = logging.getLogger(__name__)

#: Failed runs of a thread whose failure is looked for (newest first); older ones show their message only.
TRACED_FAILURES = 5
#: How far back in a run's checkpoints the node that wrote a model failure is looked for.
HISTORY_STEPS = 50


@dataclass(frozen=True, kw_only=True)
class FailureSite:
    """Where a run failed."""

    path: list[str] = field(default_factory=list)
    """Nodes, sub-agents and tools from the outermost graph inwards; empty when nothing stored says."""
    error: str | None = None
    """The innermost failed task's own error (the run's message is shown beside it)."""

    @property
    def words(self) -> str:
        return " > ".join(self.path)


def failed_task_path(snapshot: StateSnapshot) -> tuple[list[str], str | None]:
    """The failed task of ``snapshot`` and, in the subgraph it ran, the failed task there, to any depth."""
    path: list[str] = []
    error: str | None = None
    tasks = snapshot.tasks
    while failed := [task for task in tasks if task.error]:
        task = failed[0]
        path.append(task.name)
        error = str(task.error)
        if not isinstance(task.state, StateSnapshot):
            break
        tasks = task.state.tasks
    return path, error


def model_failure_node(snapshots: Iterable[StateSnapshot]) -> str | None:
    """The node whose update carried a model failure (the newest such), or None."""
    for snapshot in snapshots:
        for task in snapshot.tasks:
            result = task.result if isinstance(task.result, dict) else {}
            if result.get("model_failure"):
                return task.name
    return None


def open_calls(events: Iterable[RunEvent]) -> list[str]:
    """The tool and sub-agent calls a run's stream left under way (started, never ended), outermost
    first, each nested under the sub-agent call of the depth above it."""
    started: list[dict[str, Any]] = []
    for item in events:
        data = item.data
        if not item.event.startswith("custom") or not isinstance(data, dict):
            continue
        if data.get("event") == "call_start":
            started.append(data)
        elif data.get("event") == "call_end":
            for index in range(len(started) - 1, -1, -1):
                call = started[index]
                if all(call.get(key) == data.get(key) for key in ("agent", "depth", "tool")):
                    del started[index]
                    break
    chain: list[str] = []
    for depth in sorted({int(call.get("depth") or 0) for call in started}):
        # One call per depth, the newest: under the sub-agent call of the depth above when there is one.
        at_depth = [call for call in started if int(call.get("depth") or 0) == depth]
        parent = chain[-1] if chain else None
        under = [call for call in at_depth if parent is None or call.get("agent") == parent]
        if not under:
            break
        call = under[-1]
        if not chain:
            chain.append(str(call.get("agent")))
        chain.append(str(call.get("tool")))
    return chain


def joined(outer: list[str], inner: list[str]) -> list[str]:
    """``outer`` then what ``inner`` adds below it (a name both give is said once)."""
    if outer and inner and inner[0] == outer[-1]:
        inner = inner[1:]
    return [*outer, *inner]


async def _run_snapshots(
    resources: RuntimeResources, tenant_id: str, thread: Thread, run_id: str
) -> tuple[StateSnapshot | None, list[StateSnapshot]]:
    """The run's last checkpoint read with its subgraphs, and its checkpoints newest first."""
    graph, config = await thread_graph(resources, tenant_id, thread)
    history = [
        snapshot
        async for snapshot in graph.aget_state_history(config, filter={"run_id": run_id}, limit=HISTORY_STEPS)
    ]
    if not history:
        return None, []
    return await graph.aget_state(history[0].config, subgraphs=True), history


async def failure_site(
    resources: RuntimeResources, events: RunEventLog, tenant_id: str, thread: Thread, run: Run
) -> FailureSite:
    """Where ``run`` (ended ``error``) failed, from its checkpoints and its stored events (``events``:
    the run queue's event log)."""
    path: list[str] = []
    error: str | None = None
    try:
        last, history = await _run_snapshots(resources, tenant_id, thread, str(run.run_id))
    except MasterAgentError as unreadable:  # e.g. its graph cannot be built any more: the events still say
        logger.info("run %s: its checkpoints cannot be read: %s", run.run_id, unreadable)
        last, history = None, []
    if last is not None:
        path, error = failed_task_path(last)
        if not path and (node := model_failure_node(history)):
            path = [node]
    calls = open_calls(await events.read_after(str(run.run_id), 0))
    return FailureSite(path=joined(path, calls), error=error)


async def failure_sites(
    resources: RuntimeResources, events: RunEventLog, tenant_id: str, runs: Iterable[Run]
) -> dict[str, FailureSite]:
    """Where each of the first ``TRACED_FAILURES`` failed runs among ``runs`` failed, by run id (each
    read on its own thread; a run whose thread is gone is left out)."""
    failed = [run for run in runs if run.status == "error"][:TRACED_FAILURES]
    sites: dict[str, FailureSite] = {}
    threads: dict[str, Thread | None] = {}  # a thread's failed runs read it once
    for run in failed:
        if run.thread_id not in threads:
            threads[run.thread_id] = await get_thread(
                resources.database.pool, tenant_id, uuid.UUID(run.thread_id)
            )
        if (thread := threads[run.thread_id]) is not None:
            sites[str(run.run_id)] = await failure_site(resources, events, tenant_id, thread, run)
    return sites
