"""Warm start: what routing needs, loaded before the service reports ready (issue 42: the first message
after ``serve`` took 6-20 s as models and indexes loaded on first use).

For every tenant: its chat graph compiled into the graph cache and run once up to its first handler
(on a thread deleted after), and one routing decision made, which loads the embedder's weights, the trained intent head, the exemplars' vectors, discovery's index of
the tenant's agents and the entity parsers (WordNet's word classes, which say whether a word before a
number names an id, included).
"""

from __future__ import annotations

import logging
import time
import uuid
from typing import Any

from langchain_core.messages import HumanMessage

from master_agent.capabilities import load_tenant
from master_agent.capabilities.agents import live_agents
from master_agent.capabilities.tools.lexicon import noun_first
from master_agent.routing.graph import NODES
from master_agent.runtime.factory import GraphOptions, front_door, loop_limits, master_graph
from master_agent.runtime.graph_runs import thread_graph_config
from master_agent.runtime.graphs import MASTER_GRAPH_ID, graph_for
from master_agent.runtime.loop import recursion_limit_for
from master_agent.runtime.resources import RuntimeResources

logger = logging.getLogger(__name__)

TENANT_IDS = "SELECT tenant_id FROM tenants ORDER BY tenant_id"
WARM_MESSAGE = "What was the total for last month?"


async def warm_routing(resources: RuntimeResources) -> None:
    """Loads routing's models and indexes for every tenant (see module docstring)."""
    started = time.perf_counter()
    noun_first("store")  # WordNet's word classes are read once, on the first word before a number
    async with resources.database.pool.connection() as conn:
        tenant_ids = [row["tenant_id"] for row in await (await conn.execute(TENANT_IDS)).fetchall()]
    for tenant_id in tenant_ids:
        checkpointer = resources.database.checkpointer
        thread_id = f"warm-up-{uuid.uuid4().hex}"
        # Configured as a run of the API is (``runtime.graph_runs``), so its cached graph is the one warmed.
        config: Any = thread_graph_config(tenant_id, thread_id, {})
        limits = loop_limits(resources, GraphOptions.from_config(config))
        config["recursion_limit"] = recursion_limit_for(limits.max_iterations)
        graph = await graph_for(resources, MASTER_GRAPH_ID, config, checkpointer=checkpointer)
        # The API checks a run's config by building its graph without a checkpointer, and reads a
        # thread's state with one and no limit: those shapes cached too.
        for saver in (None, checkpointer):
            await master_graph(resources, {"configurable": {"tenant_id": tenant_id}}, checkpointer=saver)
        if "route" in graph.nodes:
            # The cached graph's own front door decides once (its first run is slower than the next),
            # stopped before any handler; the thread it wrote is deleted.
            handlers = [node for node in NODES if node != "route"]
            message = {"messages": [HumanMessage(WARM_MESSAGE)]}
            try:
                await graph.ainvoke(message, config, interrupt_before=handlers)
            finally:
                await checkpointer.adelete_thread(thread_id)
        tenant = await load_tenant(resources.database.pool, tenant_id)
        agents = await live_agents(resources.database.pool, tenant_id, tenant.capability_version)
        door = front_door(resources, tenant, agents=agents)
        await door.discovery.index(tenant_id, tenant.capability_version, door.cards)
        await door.decide(WARM_MESSAGE, [], {})
    logger.info("routing warm for %d tenant(s) in %.1f s", len(tenant_ids), time.perf_counter() - started)
