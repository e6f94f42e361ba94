"""A ``WorkflowSpec`` compiled into a LangGraph graph of seed 001 section 7's shape: a ``master`` node
with conditional edges to one node per worker, and an edge from each worker back to the master.

Each customer message is one run of the thread (the checkpointer keeps the stage, the typed state and
the task records between them). In a run the master reads the message into the typed state (or answers
it with the fallback when it is out of scope: the stage stays), then, until the turn ends: delegates to
the worker of the current stage once, and moves along the first transition whose guards hold. The turn
ends when a worker needs the customer's input or fails, or when no transition holds and the stage's
worker has spoken; its reply joins what was said in the turn.
"""

from __future__ import annotations

import logging
import operator
from collections.abc import Callable
from datetime import datetime
from typing import Annotated, Any, NotRequired, TypedDict

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from pydantic import BaseModel

from master_agent.capabilities.tools.context import ToolContext
from master_agent.models.chat import content_text
from master_agent.storage.outages import is_outage
from master_agent.workflows.audit import AuditTrail
from master_agent.workflows.spec import (
    TaskAssignment,
    TaskResponse,
    TaskResult,
    WorkerContext,
    WorkflowSpec,
    apply_updates,
    read_field,
)

log = logging.getLogger(__name__)

MASTER_NODE = "master"


class WorkflowState(TypedDict):
    """A stage-driven conversation's thread state."""

    messages: NotRequired[Annotated[list[AnyMessage], add_messages]]
    current_stage: NotRequired[str]
    active_agent: NotRequired[str | None]
    """The worker the master last delegated to."""
    record: NotRequired[dict[str, Any]]
    """The workflow's typed state (``WorkflowSpec.state_model``), as JSON."""
    turn: NotRequired[dict[str, Any]]
    """The current turn: the message it answers, workers run, what was said, whether it stopped."""
    pending_task: NotRequired[dict[str, Any] | None]
    tasks: NotRequired[Annotated[list[dict[str, Any]], operator.add]]
    """Every task assignment with its response (seed 001 section 5), in order."""
    transitions: NotRequired[Annotated[list[dict[str, Any]], operator.add]]
    """Every stage transition: from, to, the guard that held, when."""
    stage_entered_at: NotRequired[str]
    turn_count: NotRequired[int]
    reply: NotRequired[dict[str, Any] | None]
    """The answer to the latest message: ``{kind, status, text, stage, agent}``."""


def _history(messages: list[AnyMessage], limit: int) -> list[str]:
    lines = []
    for message in messages[-limit:]:
        who = "customer" if isinstance(message, HumanMessage) else "assistant"
        lines.append(f"{who}: {content_text(message.content)}")
    return lines


def compile_workflow(spec: WorkflowSpec, context: ToolContext, worker_resources: Any) -> StateGraph[Any]:
    """The uncompiled graph of ``spec`` for one tenant (compile it with a checkpointer)."""
    spec.check()
    now: Callable[[], datetime] = context.now

    def trail_for(config: RunnableConfig, stage: str | None) -> AuditTrail:
        thread_id = str((config.get("configurable") or {}).get("thread_id") or "")
        trail = AuditTrail(context.pool, context.tenant_id, thread_id, spec.name, now)
        trail.stage = stage
        return trail

    def end_turn(
        stage: str,
        record: BaseModel,
        turn: dict[str, Any],
        status: str,
        state: WorkflowState,
        *,
        say: bool = True,
    ) -> dict[str, Any]:
        replies = list(turn.get("replies") or [])
        stage_spec = spec.stage(stage)
        if say and stage_spec.worker is None and stage_spec.say is not None and status != "out_of_scope":
            said = stage_spec.say(record)
            if said and (not replies or replies[-1] != said):
                replies.append(said)
        text = "\n\n".join(replies) or spec.failure_text
        return {
            "current_stage": stage,
            "record": record.model_dump(mode="json"),
            "turn": {**turn, "done": True},
            "pending_task": None,
            "reply": {
                "kind": "workflow",
                "status": status,
                "text": text,
                "stage": stage,
                "agent": state.get("active_agent"),
            },
            "messages": [AIMessage(content=text)],
        }

    async def master(state: WorkflowState, config: RunnableConfig) -> dict[str, Any]:
        stage = state.get("current_stage") or spec.initial
        trail = trail_for(config, stage)
        record = spec.state_model.model_validate(state.get("record") or {})
        turn = dict(state.get("turn") or {})
        messages = state.get("messages") or []
        last = next((m for m in reversed(messages) if isinstance(m, HumanMessage)), None)
        update: dict[str, Any] = {}
        if last is not None and last.id != turn.get("message_id"):
            text = content_text(last.content)
            turn = {"message_id": last.id, "ran": [], "replies": [], "stop": False, "from_stage": stage}
            update["turn_count"] = state.get("turn_count", 0) + 1
            reading = spec.read_message(text, record, spec.stage(stage).asks)
            if (
                not reading.updates
                and reading.reply is None
                and spec.stage(stage).worker is None  # a worker's stage acts on a bare "uploaded"
                and spec.closes is not None
                and spec.farewell is not None
                and await spec.closes(text, context.settings)
            ):
                # A goodbye is answered as one: the stage's opening said again would ask it anew.
                trail.add("message", text=text[:1000], in_scope=True, stated=[])
                trail.add("decision", decision="farewell", reason="the customer closed the conversation")
                turn["replies"] = [spec.farewell(record, stage)]
                await trail.flush()
                return {**update, **end_turn(stage, record, turn, "waiting", state, say=False)}
            if reading.reply is None and spec.answer_questions is not None:
                answer = await spec.answer_questions(text, context.settings)
                if answer:
                    reading = reading.model_copy(update={"reply": answer, "in_scope": True})
            trail.add("message", text=text[:1000], in_scope=reading.in_scope, stated=sorted(reading.updates))
            if not reading.in_scope and not spec.stage(stage).final:
                trail.add("decision", decision="fallback", reason="the message is out of scope")
                turn["replies"] = [spec.fallback(record, stage)]
                await trail.flush()
                return {**update, **end_turn(stage, record, turn, "out_of_scope", state)}
            record, applied, refused = apply_updates(record, reading.updates, spec.reader_writes)
            if applied:
                trail.add("decision", decision="recorded", fields=sorted(applied))
            if refused:
                trail.add("refused", by="customer message", fields=sorted(refused))
            if reading.reply:
                turn["replies"] = [reading.reply]
                if reading.hold:
                    trail.add("decision", decision="ask_confirmation", fields=sorted(reading.updates))
                    await trail.flush()
                    return {**update, **end_turn(stage, record, turn, "waiting", state)}
        moved: list[dict[str, Any]] = []
        entered = state.get("stage_entered_at")
        while not turn.get("stop"):
            stage_spec = spec.stage(stage)
            worker_name = stage_spec.worker
            back = spec.next_stage(stage, record, first=True)
            if back is not None and back[0] != stage:
                found: tuple[str, Any] | None = back
            elif worker_name is not None and f"{stage}:{worker_name}" not in turn.get("ran", []):
                worker = spec.workers[worker_name]
                task = TaskAssignment(
                    agent_name=worker_name,
                    task_type=worker.task_type,
                    conversation_context={
                        "conversation_id": trail.thread_id,
                        "customer_id": read_field(record, "customer_id"),
                        "conversation_history": _history(messages, spec.history_messages),
                    },
                    customer_profile=dict(read_field(record, "customer_profile") or {}),
                    task_parameters=record.model_dump(mode="json"),
                )
                trail.add("decision", decision="delegate", worker=worker_name, task_id=task.task_id)
                await trail.flush()
                return {
                    **update,
                    "current_stage": stage,
                    "record": record.model_dump(mode="json"),
                    "turn": turn,
                    "active_agent": worker_name,
                    "pending_task": task.model_dump(mode="json"),
                    "transitions": moved,
                    **({"stage_entered_at": entered} if entered else {}),
                }
            else:
                found = spec.next_stage(stage, record)
            if found is None or found[0] == stage:
                break
            target, transition = found
            at = now().isoformat()
            trail.add(
                "transition",
                from_stage=stage,
                to_stage=target,
                guard=transition.describe(),
                final=spec.stage(target).final,
            )
            moved.append(
                {"from": stage, "to": target, "guard": transition.describe(), "at": at, "entered": entered}
            )
            stage, entered = target, at
            trail.stage = stage
        await trail.flush()
        status = "closed" if spec.stage(stage).final else "waiting"
        if turn.get("failed"):
            status = "failed"
        done = end_turn(stage, record, turn, status, state)
        return {**update, **done, "transitions": moved, **({"stage_entered_at": entered} if entered else {})}

    def make_worker_node(name: str) -> Callable[..., Any]:
        worker = spec.workers[name]

        async def run(state: WorkflowState, config: RunnableConfig) -> dict[str, Any]:
            stage = str(state.get("current_stage") or spec.initial)
            task = TaskAssignment.model_validate(state.get("pending_task") or {})
            trail = trail_for(config, stage)
            trail.agent = name
            context_for_worker = WorkerContext(
                tenant_id=context.tenant_id,
                thread_id=trail.thread_id,
                resources=worker_resources,
                audit=trail,
            )
            try:
                response = await worker.run(task, context_for_worker)
            except Exception as error:
                if is_outage(error):
                    raise  # the runtime waits for the database and runs the step again
                log.exception("worker %s failed", name)
                response = TaskResponse(
                    task_id=task.task_id,
                    agent_name=name,
                    task_type=task.task_type,
                    status="FAILED",
                    result=TaskResult(customer_response=spec.failure_text, next_action="RETRY"),
                )
                trail.add("decision", decision="fallback", reason=f"worker failed: {type(error).__name__}")
            record = spec.state_model.model_validate(state.get("record") or {})
            record, applied, refused = apply_updates(record, response.result.internal_data, worker.writes)
            if refused:
                trail.add("refused", by=name, fields=sorted(refused))
            trail.add(
                "task",
                task_id=task.task_id,
                task_type=task.task_type,
                status=response.status,
                next_action=response.result.next_action,
                applied=sorted(applied),
            )
            await trail.flush()
            turn = dict(state.get("turn") or {})
            turn["ran"] = [*turn.get("ran", []), f"{stage}:{name}"]
            if response.result.customer_response:
                turn["replies"] = [*turn.get("replies", []), response.result.customer_response]
            if response.status != "COMPLETED":
                turn["stop"] = True
                turn["failed"] = response.status == "FAILED"
            return {
                "record": record.model_dump(mode="json"),
                "turn": turn,
                "pending_task": None,
                "tasks": [
                    {"assignment": task.model_dump(mode="json"), "response": response.model_dump(mode="json")}
                ],
            }

        return run

    def route(state: WorkflowState) -> str:
        pending = state.get("pending_task")
        return str(pending["agent_name"]) if pending else END

    graph: StateGraph[Any] = StateGraph(WorkflowState)
    graph.add_node(MASTER_NODE, master)
    for name in spec.workers:
        graph.add_node(name, make_worker_node(name))
        graph.add_edge(name, MASTER_NODE)
    graph.add_edge(START, MASTER_NODE)
    graph.add_conditional_edges(MASTER_NODE, route, {**{name: name for name in spec.workers}, END: END})
    return graph
