"""The ``meta`` graph as the API serves it: one compiled meta-orchestrator for every tenant, registered with
what the API refuses of a run before the run is stored (a request it cannot parse, budgets above the
tenant's tier, a human answer it cannot read)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from master_agent.capabilities import load_tenant
from master_agent.errors import InputError
from master_agent.meta.graph import check_meta_input, check_tier_budgets, make_meta_graph, parse_human_answer
from master_agent.runtime.graphs import GraphRegistration, graph_made_by
from master_agent.runtime.resources import RuntimeResources

META_GRAPH_ID = "meta"


async def check_meta_run_input(
    resources: RuntimeResources, tenant_id: str, thread_id: str, graph_input: Any
) -> None:
    """A meta request, with budgets the tenant's tier allows."""
    request = check_meta_input(graph_input)
    if request.budgets:
        record = await load_tenant(resources.database.pool, tenant_id)
        check_tier_budgets(request, record.tier, "input.request")


def check_meta_command(command: Mapping[str, Any]) -> None:
    """A ``resume`` is the human gate's answer."""
    if "resume" in command:
        try:
            parse_human_answer(command["resume"])
        except InputError as error:
            raise error.under("command") from None


META_GRAPH = GraphRegistration(
    graph_id=META_GRAPH_ID,
    build=graph_made_by(META_GRAPH_ID, make_meta_graph),
    check_input=check_meta_run_input,
    check_command=check_meta_command,
)

__all__ = ["META_GRAPH", "META_GRAPH_ID"]
