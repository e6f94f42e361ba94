"""One call of a plain tool: a tool's own failure (bad input, a declared ``ToolFailure``, a crash) is its
result, never a raise, so one failing call never takes the run or its sibling calls down."""

from __future__ import annotations

import hashlib
import json
import logging
from typing import Any

from langchain_core.messages import ToolMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool
from langgraph.errors import GraphBubbleUp
from pydantic import BaseModel, ValidationError

from master_agent.errors import ToolFailure, ToolInputError
from master_agent.runtime.middleware.base import CallOutcome, CallStatus
from master_agent.runtime.state import StepRecord
from master_agent.storage.outages import is_outage

logger = logging.getLogger(__name__)


def step_signature(name: str, args: dict[str, Any]) -> str:
    digest = hashlib.sha1(json.dumps(args, sort_keys=True, default=str).encode()).hexdigest()[:10]
    return f"{name}#{digest}"


async def call_tool(tool: BaseTool, args: dict[str, Any], config: RunnableConfig) -> tuple[CallStatus, Any]:
    """(status, result) of one plain tool call: a tool's failure is its result, never a raise."""
    try:
        result = await tool.ainvoke(args, config)
    except GraphBubbleUp:
        raise
    except (ToolInputError, ValidationError) as error:
        return "error", f"error: {error}"
    except ToolFailure as failure:
        return "error", {
            "error": str(failure),
            "error_type": failure.error_type,
            "context": failure.context,
        }
    except Exception as error:
        if is_outage(error):
            raise  # the run waits for the database and repeats the step; the model never sees it
        # A broken tool must not take the run (or its sibling calls) down with it.
        logger.exception("tool %s failed", tool.name)
        return "error", f"error: tool {tool.name} failed: {type(error).__name__}: {error}"
    return "success", result.model_dump(mode="json") if isinstance(result, BaseModel) else result


def outcome_update(
    outcome: CallOutcome, *, agent: str, depth: int, name: str, kind: str, args: dict[str, Any], call_id: str
) -> dict[str, Any]:
    """What one call adds to its loop's state: its tool message, findings, confidences, step record,
    blockers, notes and handoff, and one tool call counted."""
    status = outcome.status
    record = StepRecord(
        agent=agent, depth=depth, tool=name, kind=kind, status=status, children=outcome.children
    )
    message_status = "error" if status == "error" else "success"
    update: dict[str, Any] = {
        "messages": [
            ToolMessage(content=outcome.content, tool_call_id=call_id, name=name, status=message_status)
        ],
        "findings": outcome.findings,
        "confidences": outcome.confidences,
        "completed_steps": [step_signature(name, args)],
        "steps": [record],
        "blockers": outcome.blockers,
        "tool_calls": 1,
    }
    if outcome.notes:
        update["notes"] = outcome.notes
    if outcome.handoff is not None:
        update["handoff"] = outcome.handoff
    return update
