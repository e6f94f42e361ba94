"""A run as stored (``Run``), and what a run's end writes to its thread's row and its webhook."""

from __future__ import annotations

import json
import uuid
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field

from master_agent.runtime.runs.statements import MARK_THREAD

RunStatus = Literal["pending", "running", "success", "error", "interrupted"]


class RunTakenOver(Exception):
    """Another worker took over a run this process was executing (its lease ran out meanwhile)."""


class Run(BaseModel):
    """A row of ``runs``."""

    run_id: uuid.UUID
    tenant_id: str
    thread_id: str
    kind: str
    solution_id: uuid.UUID | None
    status: RunStatus
    error: str | None = None
    attempts: int
    assistant_id: uuid.UUID | None = None
    request: dict[str, Any] = Field(default_factory=dict)
    """The run request as received (input or command, config, stream settings)."""
    metadata: dict[str, Any] = Field(default_factory=dict)
    multitask_strategy: str = "enqueue"
    created_at: datetime
    updated_at: datetime

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> Run:
        values = dict(row)
        values["request"] = values.pop("kwargs", None) or {}
        return cls.model_validate(values)


def _webhook_result(output: Any) -> tuple[Any, dict[str, Any] | None]:
    """A run's output as its webhook reports it: the values, or the error."""
    if isinstance(output, dict) and "__error__" in output:
        return None, output["__error__"]
    if isinstance(output, dict):
        return {key: value for key, value in output.items() if key != "__interrupt__"}, None
    return output, None


def _thread_values_params(output: Any, interrupts: dict[str, Any] | None) -> dict[str, Any]:
    """The thread row's ``values`` and ``interrupts`` after a run: its last values (kept as they were
    when the run streamed none, or failed before any) and its pending interrupts by task."""
    values, failed = _webhook_result(output)
    known = output is not None and failed is None
    return {
        "set_values": known,
        "values": json.dumps(values) if known else None,
        "interrupts": json.dumps(interrupts) if interrupts is not None else None,
    }


def _thread_key(thread_id: str) -> uuid.UUID | None:
    # Threads of the LangGraph API have UUIDs; a strategic goal's thread has no row.
    try:
        return uuid.UUID(thread_id)
    except ValueError:
        return None


async def _mark_thread(conn: Any, thread_id: str, status: str) -> None:
    key = _thread_key(thread_id)
    if key is not None:
        await conn.execute(MARK_THREAD, (status, key))
