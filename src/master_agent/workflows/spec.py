"""Declarative stage machines (seed 001): stages, the worker of each, guards over typed state.

A ``WorkflowSpec`` names its stages in order of the conversation, the worker agent that works each
one (or none: the master speaks itself), and the transitions out of each stage: the first whose guards
all hold is taken. Guards are data (``Guard``: a field of the typed state, an operator, a value) or
code (``Transition.rule``, declaring the fields it reads); never a model's answer. A worker may write
only the fields it declares (``WorkerSpec.writes``): the sales worker cannot mark a customer verified.

``WorkflowSpec.check()`` refuses a spec with a stage no path reaches, a stage whose worker is missing,
a transition to an unknown stage or a guard on a field the state does not have.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from master_agent.errors import ConfigError
from master_agent.settings import Settings

GuardOp = Literal["present", "absent", "true", "false", "eq", "ne", "lt", "le", "gt", "ge", "in"]


class Guard(BaseModel):
    """One condition over the typed state: ``field`` is a dotted path (``loan_details.amount``)."""

    model_config = ConfigDict(frozen=True)

    field: str
    op: GuardOp = "present"
    value: Any = None

    def holds(self, record: BaseModel) -> bool:
        found = read_field(record, self.field)
        if self.op == "present":
            return found not in (None, "", [], {})
        if self.op == "absent":
            return found in (None, "", [], {})
        if self.op == "true":
            return found is True
        if self.op == "false":
            return not found
        if self.op == "in":
            return found in (self.value or [])
        if found is None:
            return False
        compare: dict[str, Callable[[Any, Any], bool]] = {
            "eq": lambda a, b: a == b,
            "ne": lambda a, b: a != b,
            "lt": lambda a, b: a < b,
            "le": lambda a, b: a <= b,
            "gt": lambda a, b: a > b,
            "ge": lambda a, b: a >= b,
        }
        return compare[self.op](found, self.value)

    def describe(self) -> str:
        return f"{self.field} {self.op}" + ("" if self.value is None else f" {self.value!r}")


class Transition(BaseModel):
    """Go to ``to`` when every guard holds (and ``rule``, if given, says so)."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    to: str
    when: tuple[Guard, ...] = ()
    rule: Callable[[Any], bool] | None = None
    """A guard written as code, over the typed state; it declares what it reads in ``reads``."""
    reads: tuple[str, ...] = ()
    first: bool = False
    """Checked before the stage's worker runs: a change that sends the conversation back (new loan
    terms at verification go back to the offer) must not be worked on at the stage it left."""

    def holds(self, record: BaseModel) -> bool:
        return all(guard.holds(record) for guard in self.when) and (self.rule is None or self.rule(record))

    def describe(self) -> str:
        parts = [guard.describe() for guard in self.when]
        if self.rule is not None:
            parts.append(f"{getattr(self.rule, '__name__', 'rule')}({', '.join(self.reads)})")
        return " and ".join(parts) or "always"


class StageSpec(BaseModel):
    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    name: str
    worker: str | None = None
    """The worker agent of this stage; None: the master speaks (``say``)."""
    transitions: tuple[Transition, ...] = ()
    """Checked in order; none holding keeps the stage."""
    say: Callable[[Any], str] | None = None
    """What the master says when a turn ends in this stage and no worker spoke (typed state -> text)."""
    final: bool = False
    asks: tuple[str, ...] = ()
    """Fields of the typed state this stage asks the customer for: the reader takes a value in the
    reply as the field asked (a bare sum is the salary at verification, the amount at sales)."""


class TaskAssignment(BaseModel):
    """What the master gives a worker (seed 001 section 5.1)."""

    task_id: str = Field(default_factory=lambda: str(uuid.uuid4()))
    agent_name: str
    task_type: str
    conversation_context: dict[str, Any]
    """``conversation_id``, ``customer_id``, ``conversation_history`` (the last messages)."""
    customer_profile: dict[str, Any] = Field(default_factory=dict)
    task_parameters: dict[str, Any] = Field(default_factory=dict)
    """The typed state, as the worker sees it."""


class TaskResult(BaseModel):
    customer_response: str
    internal_data: dict[str, Any] = Field(default_factory=dict)
    """Fields of the typed state to update (only those the worker ``writes`` are kept)."""
    next_action: str = "NONE"


class TaskResponse(BaseModel):
    """What a worker returns (seed 001 section 5.2), carried in the task record of the thread."""

    task_id: str
    agent_name: str
    task_type: str
    status: Literal["COMPLETED", "NEEDS_INPUT", "FAILED"]
    """COMPLETED: the master decides the next stage; NEEDS_INPUT: the turn ends with the worker's
    question; FAILED: the turn ends with the workflow's fallback and the stage does not move."""
    result: TaskResult


class WorkerContext(BaseModel):
    """What a worker may use besides its task: the tenant's tools and the audit trail."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    tenant_id: str
    thread_id: str
    resources: Any
    """The pack's per-tenant resources (its ``ToolContext``, a model)."""
    audit: Any
    """``workflows.audit.AuditTrail`` bound to this thread (``read``, ``tool``, ``document``)."""


Worker = Callable[[TaskAssignment, WorkerContext], Awaitable[TaskResponse]]


class WorkerSpec(BaseModel):
    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    name: str
    task_type: str
    run: Worker
    writes: tuple[str, ...]
    """Top-level fields of the typed state this worker may change."""
    description: str = ""


class MessageReading(BaseModel):
    """What the master read from a customer message."""

    in_scope: bool = True
    updates: dict[str, Any] = Field(default_factory=dict)
    """Fields of the typed state the message states (dotted paths allowed)."""
    reply: str | None = None
    """Said before the stage goes on (an answer to a product question, a confirmation asked)."""
    hold: bool = False
    """The turn ends with ``reply``: the stage does not go on until the customer answers it."""


class WorkflowSpec(BaseModel):
    """A stage machine: see the module docstring."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    name: str
    state_model: type[BaseModel]
    stages: tuple[StageSpec, ...]
    workers: dict[str, WorkerSpec]
    initial: str
    read_message: Callable[[str, Any, tuple[str, ...]], MessageReading]
    """(customer text, typed state, the fields the stage asks for) -> what it states and whether it is
    in scope."""
    reader_writes: tuple[str, ...]
    """Top-level fields a customer's own words may set (the rest only workers set)."""
    answer_questions: Callable[[str, Settings], Awaitable[str | None]] | None = None
    """(customer text, the service's settings) -> the answer to the product questions it asks, from
    documented facts, or None; asked when ``read_message`` has no reply of its own (the message is in
    scope when it answers)."""
    fallback: Callable[[Any, str], str]
    """(typed state, stage) -> the answer to a message out of scope (seed 001 section 8.2)."""
    closes: Callable[[str, Settings], Awaitable[bool]] | None = None
    """(customer text, the service's settings) -> whether the message only closes the conversation
    ("Thank you madam... Bye"): asked at a stage with no worker when it states nothing; it is answered
    with ``farewell``, never with the stage's opening again (a worker's stage acts on a bare message:
    "uploaded" reads as a closing, and the slip must still be read)."""
    farewell: Callable[[Any, str], str] | None = None
    """(typed state, stage) -> the answer to a closing; the stage stays where it was."""
    failure_text: str = "Sorry, something went wrong on our side. Please try again in a moment."
    """The answer when a worker fails (seed 001 section 8.2)."""
    history_messages: int = 6

    def stage(self, name: str) -> StageSpec:
        for stage in self.stages:
            if stage.name == name:
                return stage
        raise KeyError(name)

    def next_stage(
        self, name: str, record: BaseModel, *, first: bool = False
    ) -> tuple[str, Transition] | None:
        """The first transition out of ``name`` that holds (``first``: only those checked before the
        stage's worker runs)."""
        for transition in self.stage(name).transitions:
            if (transition.first or not first) and transition.holds(record):
                return transition.to, transition
        return None

    def check(self) -> WorkflowSpec:
        """Refuse a spec that cannot run as declared (see the module docstring)."""
        names = [stage.name for stage in self.stages]
        problems: list[str] = []
        if len(set(names)) != len(names):
            problems.append(f"stage names repeat: {names}")
        if self.initial not in names:
            problems.append(f"initial stage {self.initial!r} is not a stage")
        for stage in self.stages:
            if stage.worker is not None and stage.worker not in self.workers:
                problems.append(f"stage {stage.name}: worker {stage.worker!r} is not declared")
            for transition in stage.transitions:
                if transition.to not in names:
                    problems.append(f"stage {stage.name}: transition to unknown stage {transition.to!r}")
                fields = [guard.field for guard in transition.when] + list(transition.reads)
                fields += list(stage.asks)
                if transition.rule is not None and not transition.reads:
                    problems.append(f"stage {stage.name}: a code rule must declare the fields it reads")
                problems += [
                    f"stage {stage.name}: guard on unknown field {field!r}"
                    for field in fields
                    if not has_field(self.state_model, field)
                ]
        for worker in self.workers.values():
            problems += [
                f"worker {worker.name}: writes unknown field {field!r}"
                for field in worker.writes
                if not has_field(self.state_model, field)
            ]
        problems += [
            f"reader writes unknown field {field!r}"
            for field in self.reader_writes
            if not has_field(self.state_model, field)
        ]
        if self.initial in names:
            reached = _reachable(self.initial, {s.name: [t.to for t in s.transitions] for s in self.stages})
            problems += [
                f"stage {name} is unreachable from {self.initial}" for name in names if name not in reached
            ]
        if problems:
            raise ConfigError(f"workflow {self.name}: " + "; ".join(problems))
        return self


def _reachable(start: str, edges: dict[str, list[str]]) -> set[str]:
    seen, todo = {start}, [start]
    while todo:
        for target in edges.get(todo.pop(), []):
            if target not in seen:
                seen.add(target)
                todo.append(target)
    return seen


def has_field(model: type[BaseModel], path: str) -> bool:
    """Whether ``path`` (dotted) names a field of ``model`` (through nested models; a ``dict`` field
    accepts any key below it)."""
    current: Any = model
    for part in path.split("."):
        if not (isinstance(current, type) and issubclass(current, BaseModel)):
            return current is dict
        field = current.model_fields.get(part)
        if field is None:
            return False
        current = _model_of(field.annotation)
    return True


def _model_of(annotation: Any) -> Any:
    """The nested model (or ``dict``) an annotation holds, through ``X | None``."""
    for candidate in (annotation, *getattr(annotation, "__args__", ())):
        if isinstance(candidate, type) and issubclass(candidate, BaseModel):
            return candidate
        if candidate is dict or getattr(candidate, "__origin__", None) is dict:
            return dict
    return annotation


def read_field(record: BaseModel | dict[str, Any], path: str) -> Any:
    current: Any = record
    for part in path.split("."):
        if isinstance(current, BaseModel):
            current = getattr(current, part, None)
        elif isinstance(current, dict):
            current = current.get(part)
        else:
            return None
    return current


def apply_updates(
    record: BaseModel, updates: dict[str, Any], allowed: Sequence[str]
) -> tuple[BaseModel, dict[str, Any], list[str]]:
    """``record`` with ``updates`` (dotted paths or top-level fields, nested dicts merged) applied where
    their top-level field is ``allowed``: (new record, applied, refused field names)."""
    data = record.model_dump(mode="json")
    applied: dict[str, Any] = {}
    refused: list[str] = []
    for path, value in updates.items():
        top = path.split(".", 1)[0]
        if top not in allowed:
            refused.append(path)
            continue
        target = data
        parts = path.split(".")
        for part in parts[:-1]:
            if not isinstance(target.get(part), dict):
                target[part] = {}
            target = target[part]
        last = parts[-1]
        if isinstance(value, dict) and isinstance(target.get(last), dict):
            target[last] = {**target[last], **value}
        else:
            target[last] = value
        applied[path] = value
    return type(record).model_validate(data), applied, refused


#: Thread state keys only the stage machine moves: a state update through the API must not set them.
MACHINE_KEYS = frozenset(
    {
        "current_stage",
        "active_agent",
        "pending_task",
        "turn",
        "tasks",
        "transitions",
        "stage_entered_at",
        "reply",
    }
)


def merge_patch(target: Any, patch: Any) -> Any:
    """``patch`` applied to ``target`` as an RFC 7396 JSON merge patch: an object's keys are merged
    field by field (``null`` removes one, here: sets the typed field back to its default), anything
    else replaces. A client updating the record through the API states only what it changes."""
    if not isinstance(patch, dict):
        return patch
    merged = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            merged.pop(key, None)
        else:
            merged[key] = merge_patch(merged.get(key), value)
    return merged


def update_skips_a_guard(spec: WorkflowSpec, current: dict[str, Any], values: dict[str, Any]) -> list[str]:
    """What a direct state update (``threads.update_state``) would change from ``current`` that only a
    guard or a worker may: the stage and the machine's own keys, and typed-state fields the customer's
    words cannot set (a decision, a verification, a document link). Empty: the update skips no guard."""
    problems = [
        f"values.{key}" for key in sorted(values) if key in MACHINE_KEYS and values[key] != current.get(key)
    ]
    if "record" not in values:
        return problems
    try:
        new = spec.state_model.model_validate(values["record"] or {}).model_dump(mode="json")
    except ValueError:
        return [*problems, "values.record"]
    old = spec.state_model.model_validate(current.get("record") or {}).model_dump(mode="json")
    problems += [
        f"values.record.{field}"
        for field in sorted(new)
        if field not in spec.reader_writes and new[field] != old.get(field)
    ]
    return problems
