"""The meta graph wired: every phase's nodes guarded (a failing step ends the request ``failed``), the edges
between them, and ``make_meta_graph`` (the graph factory ``langgraph.json`` names)."""

from __future__ import annotations

import contextlib
from typing import Any, cast

from langchain_core.runnables import RunnableConfig
from langgraph.errors import GraphBubbleUp
from langgraph.graph import END, START, StateGraph

from master_agent.meta.graph.finish import _finalize_or_fail, register
from master_agent.meta.graph.gates import after_gate, apply_promotion, gate_production, gate_quality
from master_agent.meta.graph.human import after_human, gate_human
from master_agent.meta.graph.intake import (
    allocate_budgets,
    classify_intent,
    determine_runtime_target,
    gather_constraints,
    intake,
    select_playbook,
)
from master_agent.meta.graph.next_phase import after_decision, classify_failure_node, decide_next_phase
from master_agent.meta.graph.phases import _next_phase_node, after_phase, compile_system, run_phase
from master_agent.meta.graph.state import MetaState, _log, _trace

Node = Any


def _guarded(name: str, node: Node) -> Node:
    """``node`` ending the request ``failed`` with the reason when it raises (an interrupt still
    bubbles up): no error leaves a request ``running``."""

    async def run(state: MetaState, config: RunnableConfig) -> dict[str, Any]:
        try:
            return cast(dict[str, Any], await node(state, config))
        except GraphBubbleUp:
            raise
        except Exception as error:  # every failure of a step is the request's failure, with its reason
            reason = f"{name}: {error}" if str(error) else f"{name}: {type(error).__name__}"
            update: dict[str, Any] = {
                "status": "failed",
                "error": reason,
                "routing_trace": _trace(state, name, "failed", error=reason, go="finalize"),
            }
            # The history is a record; when it cannot be written the failure still ends the request.
            with contextlib.suppress(Exception):
                update["history"] = await _log(state, config, name, "failed", reason[:500])
            return update

    run.__name__ = name
    return run


def _or_finalize(target: str) -> Any:
    def route(state: MetaState) -> str:
        return "finalize" if state.get("status") == "failed" else target

    return route


def build_meta_graph() -> StateGraph[MetaState, Any, Any, Any]:
    graph: StateGraph[MetaState, Any, Any, Any] = StateGraph(MetaState)
    for name, node in [
        ("intake", intake),
        ("classify_intent", classify_intent),
        ("determine_runtime_target", determine_runtime_target),
        ("gather_constraints", gather_constraints),
        ("select_playbook", select_playbook),
        ("allocate_budgets", allocate_budgets),
        ("run_phase", run_phase),
        ("compile_system", compile_system),
        ("classify_failure", classify_failure_node),
        ("apply_promotion", apply_promotion),
        ("gate_quality", gate_quality),
        ("gate_production", gate_production),
        ("gate_human", gate_human),
        ("decide_next_phase", decide_next_phase),
        ("register", register),
    ]:
        # intake raises on a bad request before anything is stored (a 4xx); every later step is guarded.
        graph.add_node(name, node if name == "intake" else _guarded(name, node))
    graph.add_node("finalize", _finalize_or_fail)
    graph.add_edge(START, "intake")
    for source, target in [
        ("intake", "classify_intent"),
        ("classify_intent", "determine_runtime_target"),
        ("determine_runtime_target", "gather_constraints"),
        ("gather_constraints", "select_playbook"),
        ("select_playbook", "allocate_budgets"),
        ("apply_promotion", "decide_next_phase"),
        ("classify_failure", "decide_next_phase"),
    ]:
        graph.add_conditional_edges(source, _or_finalize(target), [target, "finalize"])
    graph.add_conditional_edges(
        "allocate_budgets",
        lambda s: "finalize" if s.get("status") == "failed" else _next_phase_node(list(s["phases"]), 0),
        ["run_phase", "compile_system", "finalize"],
    )
    for dispatcher in ("run_phase", "compile_system"):
        graph.add_conditional_edges(
            dispatcher,
            after_phase,
            [
                "classify_failure",
                "apply_promotion",
                "gate_quality",
                "gate_production",
                "decide_next_phase",
                "finalize",
            ],
        )
    graph.add_conditional_edges(
        "gate_quality", after_gate, ["classify_failure", "decide_next_phase", "finalize"]
    )
    graph.add_conditional_edges(
        "gate_production", after_gate, ["classify_failure", "decide_next_phase", "finalize"]
    )
    graph.add_conditional_edges(
        "decide_next_phase",
        after_decision,
        ["run_phase", "compile_system", "gate_human", "register", "finalize"],
    )
    graph.add_conditional_edges(
        "gate_human",
        after_human,
        ["run_phase", "compile_system", "decide_next_phase", "register", "finalize"],
    )
    graph.add_edge("register", "finalize")
    graph.add_edge("finalize", END)
    return graph


def make_meta_graph(config: RunnableConfig) -> StateGraph[MetaState, Any, Any, Any]:
    """Graph factory of the ``meta`` graph (the service and ``langgraph dev`` add the checkpointer)."""
    return build_meta_graph()
