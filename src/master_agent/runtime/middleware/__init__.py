"""The agent loop's cross-cutting concerns, one middleware each, in the shape of langchain 1.x's
``AgentMiddleware`` (``base``). ``runtime.loop`` composes them per agent spec in this order (the
first is the outermost around a model or tool call):

budgets, choices, claims, risk, recovery, recall, opening calls, gathering, scope, planner first,
human review, termination. So a flow starts with proposal feedback, then recall, then gathering, then
scope; a tool call passes budgets, then choices, then claims, then risk, then recovery; a model turn passes recall
(the short path), then the opening calls.
"""

from master_agent.runtime.middleware.base import (
    CallKind,
    CallOutcome,
    LoopMiddleware,
    ModelRequest,
    ModelResponse,
    ToolCallRequest,
    chain_model_calls,
    chain_tool_calls,
    tool_outcome,
)
from master_agent.runtime.middleware.budgets import BudgetsMiddleware, agent_budgets
from master_agent.runtime.middleware.choices import ChoicesMiddleware
from master_agent.runtime.middleware.claims import ClaimsMiddleware
from master_agent.runtime.middleware.gathering import Gathering, GatheringMiddleware
from master_agent.runtime.middleware.opening import OpeningCallsMiddleware
from master_agent.runtime.middleware.planner_first import PlannerFirstMiddleware
from master_agent.runtime.middleware.recall import Recall, RecallMiddleware, RecallStep
from master_agent.runtime.middleware.recovery import RecoveryMiddleware
from master_agent.runtime.middleware.review import HumanReviewMiddleware
from master_agent.runtime.middleware.risk import RiskMiddleware
from master_agent.runtime.middleware.scope import ScopeMiddleware
from master_agent.runtime.middleware.termination import TerminationMiddleware

__all__ = [
    "BudgetsMiddleware",
    "CallKind",
    "CallOutcome",
    "ChoicesMiddleware",
    "ClaimsMiddleware",
    "Gathering",
    "GatheringMiddleware",
    "HumanReviewMiddleware",
    "LoopMiddleware",
    "ModelRequest",
    "ModelResponse",
    "OpeningCallsMiddleware",
    "PlannerFirstMiddleware",
    "Recall",
    "RecallMiddleware",
    "RecallStep",
    "RecoveryMiddleware",
    "RiskMiddleware",
    "ScopeMiddleware",
    "TerminationMiddleware",
    "ToolCallRequest",
    "agent_budgets",
    "chain_model_calls",
    "chain_tool_calls",
    "tool_outcome",
]
