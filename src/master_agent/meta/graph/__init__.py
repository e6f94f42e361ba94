"""The meta graph (seed 004 sections 1-3): routes work to the role leads, enforces budgets, gates, and
finalizes; it writes no artifact itself (it holds references and summaries only).

intake -> classify_intent -> determine_runtime_target -> gather_constraints -> select_playbook ->
allocate_budgets -> run_phase | compile_system, then classify_failure / gate_quality /
gate_production / gate_human -> decide_next_phase (next phase, bounded retry, compile_system,
gate_human, finalize).

Its modules, one per phase (and what every phase reads):

    request.py     ``MetaRequest`` and its checks (the input, the tier's ceilings, the gate constraints)
    state.py       ``MetaState``; the resources, tenant, broker, history and trace every node reads through
    budgets.py     what a role has spent and may still spend
    intake.py      intake, classify_intent, determine_runtime_target, gather_constraints, select_playbook,
                   allocate_budgets
    phases.py      run_phase and compile_system (a role lead's task, charged to its budget), after_phase
    gates.py       gate_quality, gate_production, apply_promotion, after_gate
    next_phase.py  classify_failure, decide_next_phase (retries, reallocation), after_decision
    human.py       gate_human and its answers (``HumanAnswer``), after_human
    finish.py      register and finalize
    wiring.py      the graph: guarded nodes and edges; ``build_meta_graph``, ``make_meta_graph``
"""

from master_agent.meta.graph.human import HumanAnswer, parse_human_answer
from master_agent.meta.graph.intake import intent_of
from master_agent.meta.graph.request import MetaRequest, check_meta_input, check_tier_budgets, parse_request
from master_agent.meta.graph.state import MetaState
from master_agent.meta.graph.wiring import build_meta_graph, make_meta_graph

__all__ = [
    "HumanAnswer",
    "MetaRequest",
    "MetaState",
    "build_meta_graph",
    "check_meta_input",
    "check_tier_budgets",
    "intent_of",
    "make_meta_graph",
    "parse_human_answer",
    "parse_request",
]
