"""Declarative stage machines compiled to LangGraph conditional edges (seed 001)."""

from master_agent.workflows.graph import WorkflowState, compile_workflow
from master_agent.workflows.spec import (
    Guard,
    MessageReading,
    StageSpec,
    TaskAssignment,
    TaskResponse,
    TaskResult,
    Transition,
    WorkerContext,
    WorkerSpec,
    WorkflowSpec,
)

__all__ = [
    "Guard",
    "MessageReading",
    "StageSpec",
    "TaskAssignment",
    "TaskResponse",
    "TaskResult",
    "Transition",
    "WorkerContext",
    "WorkerSpec",
    "WorkflowSpec",
    "WorkflowState",
    "compile_workflow",
]
