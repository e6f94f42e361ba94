"""The master graph as the API serves it: the front door before the master agent's loops, registered with
what the API refuses of a run before the run is stored (its input, command and config), how a thread keeps
the graph shape of its first run, its config schema and its default recursion limit."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

from langchain_core.runnables import RunnableConfig

from master_agent.errors import InputError
from master_agent.routing.graph import FrontDoorState
from master_agent.runtime.factory import GraphOptions, classify_complexity, loop_limits, master_graph
from master_agent.runtime.graphs import MASTER_GRAPH_ID, GraphRegistration, check_state_keys
from master_agent.runtime.loop import recursion_limit_for
from master_agent.runtime.resources import RuntimeResources
from master_agent.runtime.solve import MAX_GOAL_CHARS
from master_agent.runtime.state import MasterAgentState

#: Keys of the master graph's state: the agent loop's, and the chat front door's around it.
MASTER_STATE_KEYS = frozenset(MasterAgentState.__annotations__) | frozenset(FrontDoorState.__annotations__)

#: Whether the thread has run (a first run must state its goal).
THREAD_STARTED = "SELECT 1 FROM checkpoints WHERE thread_id = %s LIMIT 1"


async def check_master_input(
    resources: RuntimeResources, tenant_id: str, thread_id: str, graph_input: Any
) -> None:
    """A goal (or chat messages) the master graph can start from; no goal only for a thread that has run."""
    if not isinstance(graph_input, dict):
        raise InputError("input", "send one object with a goal (or messages)")
    # Keys the graph's state lacks are ignored, as LangGraph ignores them (a parent graph calling this
    # one through RemoteGraph sends its whole state).
    known = {key: value for key, value in graph_input.items() if key in MASTER_STATE_KEYS}
    if not known or any(value is None for value in known.values()):
        raise InputError("input", "send at least a goal, and no null values")
    goal = graph_input.get("goal")
    if goal is not None and (not isinstance(goal, str) or not goal.strip() or len(goal) > MAX_GOAL_CHARS):
        raise InputError("input.goal", f"a non-empty string of at most {MAX_GOAL_CHARS} characters")
    messages = graph_input.get("messages")
    if messages is not None and (not isinstance(messages, list) or not messages):
        raise InputError("input.messages", "a non-empty list of messages")
    if goal is None and messages is None:
        async with resources.database.pool.connection() as conn:
            started = await (await conn.execute(THREAD_STARTED, (thread_id,))).fetchone()
        if started is None:
            raise InputError(
                "input.goal", "required for the first run of a thread (or input.messages: a chat message)"
            )


def check_master_command(command: Mapping[str, Any]) -> None:
    """A state ``update`` is one object of the master graph's state keys."""
    if "update" in command:
        if not isinstance(command["update"], dict):
            raise InputError("command.update", "send one object of state keys")
        check_state_keys(MASTER_STATE_KEYS, "command.update", command["update"])


async def check_master_config(resources: RuntimeResources, tenant_id: str, config: dict[str, Any]) -> None:
    """The master graph is built for the config (cached), which checks every option against the tenant's
    catalogue."""
    graph_config: dict[str, Any] = {"configurable": {**config["configurable"], "tenant_id": tenant_id}}
    limit = config.get("recursion_limit")
    if limit is not None:
        graph_config["recursion_limit"] = limit
    try:
        await master_graph(resources, cast(RunnableConfig, graph_config))
    except InputError as error:
        if error.field.startswith(("configurable", "recursion_limit")):
            raise InputError(f"config.{error.field}", error.reason) from None
        raise InputError("config.configurable", str(error)) from None


def pin_complexity(
    configurable: dict[str, Any], thread_config: Mapping[str, Any], graph_input: Any
) -> dict[str, Any]:
    """The complexity is fixed per thread: later runs (a resume, a follow-up) build the graph of the first."""
    if "complexity" in configurable:
        return configurable
    known = (thread_config.get("configurable") or {}).get("complexity")
    goal = graph_input.get("goal") if isinstance(graph_input, dict) else None
    if known:
        return {**configurable, "complexity": known}
    if isinstance(goal, str) and goal.strip() and not thread_config.get("graph_id"):
        # Only a thread's first run: a chat thread keeps its front door for a later goal.
        return {**configurable, "complexity": classify_complexity(goal)}
    return configurable


def master_recursion_limit(resources: RuntimeResources, config: RunnableConfig) -> int:
    """Room for the run's iterations: the loop's stop rules act before LangGraph's limit does."""
    return recursion_limit_for(loop_limits(resources, GraphOptions.from_config(config)).max_iterations)


MASTER_GRAPH = GraphRegistration(
    graph_id=MASTER_GRAPH_ID,
    build=master_graph,
    check_input=check_master_input,
    check_command=check_master_command,
    check_config=check_master_config,
    pin_configurable=pin_complexity,
    config_schema=GraphOptions.model_json_schema,
    recursion_limit=master_recursion_limit,
)

__all__ = ["MASTER_GRAPH", "MASTER_STATE_KEYS"]
