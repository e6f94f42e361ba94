"""Running the master graph on a thread for a queued run (the LangGraph-compatible API's runs).

The run's request (input or command, config, stream settings) was stored when it was created; any
worker executes it. A run taken over after its worker died continues from the thread's last
checkpoint instead of starting again.
"""

from __future__ import annotations

from typing import Any, Literal

from langchain_core.runnables import RunnableConfig
from langgraph.types import Command

from master_agent.runtime.factory import GraphOptions, loop_limits, master_graph
from master_agent.runtime.resources import RuntimeResources

#: Keys of ``configurable`` that shape the graph (kept on the thread so state reads use the same graph).
SHAPE_KEYS = ("complexity", "ab_test_variant", "sub_agents", "max_iterations", "goal")

RunOutcome = Literal["success", "interrupted"]


def thread_graph_config(tenant_id: str, thread_id: str, configurable: dict[str, Any]) -> RunnableConfig:
    shape = {key: configurable[key] for key in SHAPE_KEYS if configurable.get(key) is not None}
    return {"configurable": {**shape, "tenant_id": tenant_id, "thread_id": thread_id}}


def _command(payload: dict[str, Any]) -> Command[Any]:
    return Command(resume=payload.get("resume"), update=payload.get("update"), goto=payload.get("goto") or ())


async def execute_graph_run(resources: RuntimeResources, run: dict[str, Any]) -> RunOutcome:
    """Run (or continue) the graph for one claimed run; return how the thread was left."""
    kwargs: dict[str, Any] = dict(run["kwargs"] or {})
    config_in: dict[str, Any] = dict(kwargs.get("config") or {})
    configurable = dict(config_in.get("configurable") or {})
    config = thread_graph_config(run["tenant_id"], run["thread_id"], configurable)
    options = GraphOptions.from_config(config)
    limits = loop_limits(resources, options)
    config["recursion_limit"] = int(config_in.get("recursion_limit") or 2 * limits.max_iterations + 1)
    config["configurable"]["run_id"] = str(run["run_id"])
    graph = await master_graph(resources, config, checkpointer=resources.database.checkpointer)
    graph_input: Any
    if run["attempts"] > 1 and (await graph.aget_state(config)).next:
        graph_input = None  # taken over after a crash: continue from the last checkpoint
    elif kwargs.get("command"):
        graph_input = _command(kwargs["command"])
    else:
        graph_input = kwargs.get("input")
    async for _ in graph.astream(graph_input, config, stream_mode="updates", subgraphs=True):
        pass
    snapshot = await graph.aget_state(config)
    return "interrupted" if snapshot.interrupts else "success"
