"""Graph state to JSON the way LangGraph clients expect it (messages as their dict form)."""

from __future__ import annotations

import dataclasses
import datetime
import uuid
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from pydantic import BaseModel


def to_jsonable(value: Any) -> Any:
    if value is None or isinstance(value, str | int | float | bool):
        return value
    if isinstance(value, BaseModel):
        return to_jsonable(value.model_dump())
    if isinstance(value, Mapping):
        return {str(key): to_jsonable(item) for key, item in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [to_jsonable(item) for item in value]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return to_jsonable(dataclasses.asdict(value))
    if isinstance(value, datetime.datetime | datetime.date):
        return value.isoformat()
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, Decimal):
        return float(value)
    return str(value)


def interrupt_json(interrupt: Any) -> dict[str, Any]:
    """An ``Interrupt`` as langgraph-api shows it."""
    return {"value": to_jsonable(interrupt.value), "id": interrupt.id}


def interrupts_by_task(snapshot: Any) -> dict[str, list[dict[str, Any]]]:
    """A state snapshot's pending interrupts by task id, as a thread shows them."""
    return {
        task.id: [interrupt_json(item) for item in task.interrupts]
        for task in snapshot.tasks
        if task.interrupts
    }


def thread_output(values: Any, interrupts: Any) -> Any:
    """What ``runs.wait`` / ``runs.join`` answer: the thread's values (an object, or whatever JSON the
    graph's state is), with ``__interrupt__`` when the run stopped at one."""
    output: Any = to_jsonable(values)
    if output is None:
        output = {}
    if interrupts and isinstance(output, dict):
        output["__interrupt__"] = [interrupt_json(item) for item in interrupts]
    return output


def error_output(message: str | None, name: str = "RunError") -> dict[str, Any]:
    return {"__error__": {"error": name, "message": message or "the run failed"}}
