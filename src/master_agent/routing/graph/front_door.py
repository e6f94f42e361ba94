"""The front door assembled: its routing and handler nodes in one graph, and ``make_front_door``, which builds
a tenant's front door with the master agent's loops behind it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from langchain_core.language_models import BaseChatModel
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph

from master_agent.builder.conversation import AgentBuilder
from master_agent.builder.draft import AgentDrafter
from master_agent.capabilities import DomainPack, TenantCapabilities, TenantRecord
from master_agent.capabilities.tools import ToolContext
from master_agent.evolution.context import EvolutionContext
from master_agent.models.offline import OfflinePlanner
from master_agent.routing.discovery import Discovery
from master_agent.routing.graph.cards import agent_cards, exemplars_for
from master_agent.routing.graph.handlers import HandlerNodes
from master_agent.routing.graph.route import RouteNodes, after_route, clarify
from master_agent.routing.graph.state import FrontDoorState
from master_agent.routing.intent import ExemplarClassifier, IntentAnalyzer, ModelIntentAnalyzer
from master_agent.routing.intent_head import HeadClassifier
from master_agent.runtime.loop import CompiledLoop, NestedAgent, register_nested_agents
from master_agent.runtime.resources import RuntimeResources
from master_agent.settings import Settings


class FrontDoor(RouteNodes, HandlerNodes):
    """One tenant's front door, built with its compiled graph."""

    # -- graph -------------------------------------------------------------------------------

    def graph(self, checkpointer: BaseCheckpointSaver[Any] | None) -> CompiledLoop:
        graph: StateGraph[FrontDoorState, Any, Any, Any] = StateGraph(FrontDoorState)
        graph.add_node("route", self.route)
        graph.add_node("clarify", clarify)
        graph.add_node("solve", self.solve)
        graph.add_node("answer_query", self.answer_query)
        graph.add_node("build_agent", self.build_agent)
        graph.add_node("build_system", self.build_system)
        graph.add_node("out_of_scope", self.out_of_scope)
        graph.add_node("drop_flow", self.drop_flow)
        graph.add_conditional_edges(START, self.entry, ["route", "solve"])
        graph.add_conditional_edges(
            "route",
            after_route,
            ["solve", "answer_query", "build_agent", "build_system", "out_of_scope", "clarify", "drop_flow"],
        )
        graph.add_edge("clarify", "route")
        for node in ("solve", "answer_query", "build_agent", "build_system", "out_of_scope", "drop_flow"):
            graph.add_edge(node, END)
        compiled = graph.compile(checkpointer=checkpointer, name="master_agent")
        # What ``solve`` hands goals to: the master agent (its standard loop) and the tenant's agents.
        nested = {
            name: NestedAgent(self.capabilities.sub_agents[name], loop)
            for name, loop in self.agent_loops.items()
            if name in self.capabilities.sub_agents
        }
        if "standard" in self.solvers:
            nested[self.capabilities.master["name"]] = NestedAgent(
                self.capabilities.master, self.solvers["standard"]
            )
        register_nested_agents(compiled, nested)
        return compiled


_discoveries: dict[int, Discovery] = {}


def discovery_for(evolution: EvolutionContext, settings: Settings) -> Discovery:
    found = _discoveries.get(id(evolution))
    if found is None:
        found = _discoveries[id(evolution)] = Discovery(
            evolution.pool, evolution.knowledge.embedder, evolution.clock, settings.discovery_ttl_s
        )
    return found


def make_front_door(
    *,
    tenant: TenantRecord,
    pack: DomainPack,
    capabilities: TenantCapabilities,
    tool_context: ToolContext,
    settings: Settings,
    evolution: EvolutionContext,
    model: BaseChatModel,
    solvers: Mapping[str, CompiledLoop],
    classify: Any,
    agent_loops: Mapping[str, CompiledLoop] | None = None,
    resources: RuntimeResources | None = None,
) -> FrontDoor:
    """The tenant's front door with the master agent's loops behind it."""
    cards = agent_cards(capabilities, pack)
    classifier = HeadClassifier(
        ExemplarClassifier(evolution.knowledge.embedder, exemplars_for(pack, cards)),
        agents=[card.name for card in cards if card.addressable],
    )
    analyzer: IntentAnalyzer = (
        classifier
        if isinstance(model, OfflinePlanner)
        else ModelIntentAnalyzer(model, classifier, overrule_at=settings.route_confidence)
    )
    return FrontDoor(
        tenant=tenant,
        pack=pack,
        capabilities=capabilities,
        tool_context=tool_context,
        settings=settings,
        evolution=evolution,
        model=model,
        discovery=discovery_for(evolution, settings),
        analyzer=analyzer,
        solvers=solvers,
        agent_loops=agent_loops or {},
        classify=classify,
        cards=cards,
        builder=None
        if resources is None
        else AgentBuilder(resources, tenant, AgentDrafter(evolution.knowledge.embedder, model)),
        resources=resources,
    )
