"""The LangGraph core: state, the one agent loop, stop rules, the graph factory, solving a goal."""

from master_agent.runtime.factory import (
    GraphCache,
    GraphOptions,
    classify_complexity,
    master_graph,
)
from master_agent.runtime.loop import LoopLimits, build_agent_loop
from master_agent.runtime.resources import RuntimeResources, open_resources, use_shared_resources
from master_agent.runtime.solve import (
    Solution,
    SolveOutcome,
    SolveRequest,
    Submitted,
    resume,
    run_solution,
    solve,
    submit,
)
from master_agent.runtime.state import MasterAgentState
from master_agent.runtime.termination import (
    PostgresTerminationLog,
    TerminationReport,
    decide,
    progress_score,
)

__all__ = [
    "GraphCache",
    "GraphOptions",
    "LoopLimits",
    "MasterAgentState",
    "PostgresTerminationLog",
    "RuntimeResources",
    "Solution",
    "SolveOutcome",
    "SolveRequest",
    "Submitted",
    "TerminationReport",
    "build_agent_loop",
    "classify_complexity",
    "decide",
    "master_graph",
    "open_resources",
    "progress_score",
    "resume",
    "run_solution",
    "solve",
    "submit",
    "use_shared_resources",
]
