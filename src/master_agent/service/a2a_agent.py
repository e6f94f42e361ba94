"""The agent-to-agent protocol (A2A) behind ``/a2a/{assistant_id}`` (the routes are ``service/routes/a2a.py``), as langgraph-api serves it: each of the
tenant's assistants is an A2A agent (its card at ``/a2a/{assistant_id}/.well-known/agent-card.json`` and
``/.well-known/agent-card.json?assistant_id=...``). ``SendMessage`` runs the assistant on the thread named
by the message's ``context_id`` (made for it when new; later messages of the context continue it) with
the message's text as a user message, and answers a Task whose artifact is the assistant's last reply;
``GetTask``, ``ListTasks`` and ``CancelTask`` (which cancels the run) work from any service process.

The protocol (JSON-RPC dispatch, the request handler, task lifecycle, the types) is the official A2A
Python SDK's; this module gives it an executor that runs assistants, and a task store in PostgreSQL
scoped by tenant. The tenant comes from the API key, as on every route.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

from a2a.helpers.proto_helpers import new_task
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.context import ServerCallContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.request_handlers.response_helpers import agent_card_to_dict
from a2a.server.routes.common import DefaultServerCallContextBuilder
from a2a.server.routes.jsonrpc_dispatcher import JsonRpcDispatcher
from a2a.server.tasks import TaskStore, TaskUpdater
from a2a.types.a2a_pb2 import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    ListTasksRequest,
    ListTasksResponse,
    Part,
    Task,
    TaskState,
)
from fastapi import HTTPException
from google.protobuf.json_format import MessageToDict, ParseDict
from psycopg.types.json import Jsonb
from starlette.requests import Request as StarletteRequest

from master_agent.capabilities.assistants import Assistant
from master_agent.runtime.graphs import graph_for
from master_agent.service.graph_state import run_output
from master_agent.service.routes.a2a import find_assistant
from master_agent.service.routes.assistants import assistant_graph_config, graph_schemas
from master_agent.service.routes.runs import WAIT_LIMIT_S, RunCreate, run_on_thread
from master_agent.service.state import ServiceState
from master_agent.storage.rate_limits import Hit, count_hits

#: A context id that is not a UUID still names one thread, always the same.
_CONTEXTS = uuid.UUID("6f1b7c1e-2a53-4c8e-9f0a-a2a0c0a7e11d")
SAVE_TASK = """
INSERT INTO a2a_tasks (tenant_id, task_id, context_id, task) VALUES (%(tenant)s, %(id)s, %(context)s, %(task)s)
ON CONFLICT (tenant_id, task_id) DO UPDATE SET task = EXCLUDED.task, updated_at = now()
"""
GET_TASK = "SELECT task FROM a2a_tasks WHERE tenant_id = %s AND task_id = %s"
LIST_TASKS = """
SELECT task FROM a2a_tasks
WHERE tenant_id = %(tenant)s AND (%(context)s::text IS NULL OR context_id = %(context)s)
ORDER BY updated_at DESC LIMIT %(limit)s
"""
DELETE_TASK = "DELETE FROM a2a_tasks WHERE tenant_id = %s AND task_id = %s"
#: The active run of a task (its run carries the task id in its metadata).
TASK_RUN = """
SELECT run_id FROM runs
WHERE tenant_id = %s AND metadata ->> 'a2a_task_id' = %s AND status IN ('pending', 'running')
"""


def _caller(context: ServerCallContext) -> tuple[ServiceState, str]:
    return context.state["service"], context.state["tenant"]


class TenantTaskStore(TaskStore):
    """The SDK's tasks kept in PostgreSQL, each tenant seeing only its own."""

    async def save(self, task: Task, context: ServerCallContext) -> None:
        service, tenant = _caller(context)
        params = {
            "tenant": tenant,
            "id": task.id,
            "context": task.context_id,
            "task": Jsonb(MessageToDict(task)),
        }
        async with service.resources.database.pool.connection() as conn:
            await conn.execute(SAVE_TASK, params)

    async def get(self, task_id: str, context: ServerCallContext) -> Task | None:
        service, tenant = _caller(context)
        async with service.resources.database.pool.connection() as conn:
            row = await (await conn.execute(GET_TASK, (tenant, task_id))).fetchone()
        return None if row is None else ParseDict(row["task"], Task())

    async def list(self, params: ListTasksRequest, context: ServerCallContext) -> ListTasksResponse:
        service, tenant = _caller(context)
        limit = params.page_size or 50
        query = {"tenant": tenant, "context": params.context_id or None, "limit": limit}
        async with service.resources.database.pool.connection() as conn:
            rows = await (await conn.execute(LIST_TASKS, query)).fetchall()
        tasks = [ParseDict(row["task"], Task()) for row in rows]
        if params.status:
            tasks = [task for task in tasks if task.status.state == params.status]
        return ListTasksResponse(tasks=tasks, page_size=limit, total_size=len(tasks))

    async def delete(self, task_id: str, context: ServerCallContext) -> None:
        service, tenant = _caller(context)
        async with service.resources.database.pool.connection() as conn:
            await conn.execute(DELETE_TASK, (tenant, task_id))


def _thread_of(context_id: str) -> uuid.UUID:
    try:
        return uuid.UUID(context_id)
    except ValueError:
        return uuid.uuid5(_CONTEXTS, context_id)


def _reply(values: Any) -> str:
    """The text of the assistant's last reply in its thread's values (the values as JSON otherwise)."""
    messages = values.get("messages") if isinstance(values, dict) else None
    for message in reversed(messages or []):
        if isinstance(message, dict) and message.get("type") in ("ai", "AIMessage", "AIMessageChunk"):
            content = message.get("content")
            if isinstance(content, list):
                content = "".join(
                    block.get("text", "") if isinstance(block, dict) else str(block) for block in content
                )
            if content:
                return str(content)
    return json.dumps(values, default=str)


async def _input_keys(service: ServiceState, tenant: str, assistant_id: str) -> set[str]:
    """The keys of the assistant's graph's input."""
    resources = service.resources
    assistant = await find_assistant(service, tenant, assistant_id)
    graph = await graph_for(resources, assistant.graph_id, assistant_graph_config(tenant, assistant))
    schema = graph_schemas(graph)["input_schema"] or {}
    return set(schema.get("properties") or {})


class AssistantExecutor(AgentExecutor):
    """Runs the assistant the request names on the context's thread, one run per message."""

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        service, tenant = _caller(context.call_context)
        resources = service.resources
        task_id, context_id = str(context.task_id), str(context.context_id)
        updater = TaskUpdater(event_queue, task_id, context_id)
        if context.current_task is None:
            history = [context.message] if context.message is not None else []
            await event_queue.enqueue_event(
                new_task(task_id, context_id, TaskState.TASK_STATE_SUBMITTED, history=history)
            )
        await updater.start_work()
        takes = await _input_keys(service, tenant, context.call_context.state["assistant_id"])
        if takes and "messages" not in takes:
            # As langgraph-api: an A2A message becomes a user message, which such a graph has no place for
            # (a graph whose input schema cannot be read is given the message).
            why = f"the assistant's graph takes no messages (its input: {sorted(takes)})"
            await updater.reject(updater.new_agent_message([Part(text=why)]))
            return
        body = RunCreate(
            assistant_id=context.call_context.state["assistant_id"],
            input={"messages": [{"role": "user", "content": context.get_user_input()}]},
            if_not_exists="create",
            metadata={"a2a_task_id": task_id},
        )
        await count_hits(resources.database.pool, [Hit(service.quotas.runs_started, tenant, 1)])
        try:
            thread, run = await run_on_thread(
                _thread_of(context_id), body, tenant, resources, service.queue, execute_here=True
            )
        except HTTPException as refused:
            await updater.reject(updater.new_agent_message([Part(text=str(refused.detail))]))
            return
        finished = await service.queue.wait(str(run.run_id), within_s=WAIT_LIMIT_S)
        if finished is None or finished.status in ("pending", "running"):
            await updater.failed(updater.new_agent_message([Part(text="the run did not finish in time")]))
            return
        values = await run_output(resources, tenant, thread, finished)
        if finished.status == "error":
            await updater.failed(updater.new_agent_message([Part(text=finished.error or "the run failed")]))
            return
        reply = _reply(values)
        if finished.status == "interrupted":
            await updater.requires_input(updater.new_agent_message([Part(text=reply)]))
            return
        await updater.add_artifact([Part(text=reply)], name="response")
        await updater.complete(updater.new_agent_message([Part(text=reply)]))

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        service, tenant = _caller(context.call_context)
        async with service.resources.database.pool.connection() as conn:
            rows = await (await conn.execute(TASK_RUN, (tenant, str(context.task_id)))).fetchall()
        for row in rows:
            await service.queue.cancel(str(row["run_id"]))
        await TaskUpdater(event_queue, str(context.task_id), str(context.context_id)).cancel()


class _TenantContextBuilder(DefaultServerCallContextBuilder):
    """The SDK's call context, carrying the tenant and the assistant the route resolved."""

    def build(self, request: StarletteRequest) -> ServerCallContext:
        context = super().build(request)
        context.state.update(
            service=request.state.service,
            tenant=request.state.tenant,
            assistant_id=request.path_params["assistant_id"],
        )
        return context


def _card(assistant: Assistant, base_url: str, version: str) -> AgentCard:
    description = assistant.description or f"{assistant.name} assistant"
    return AgentCard(
        name=assistant.name,
        description=description,
        version=version,
        supported_interfaces=[
            AgentInterface(
                url=f"{base_url}/a2a/{assistant.assistant_id}",
                protocol_binding="JSONRPC",
                protocol_version="1.0",
            )
        ],
        capabilities=AgentCapabilities(streaming=False, push_notifications=False),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[
            AgentSkill(
                id=f"{assistant.assistant_id}-main",
                name=f"{assistant.name} Capabilities",
                description=description,
                tags=["assistant", "langgraph"],
            )
        ],
    )


class A2AEndpoint:
    """One request handler per app (the SDK tracks the tasks it runs in it)."""

    def __init__(self, version: str) -> None:
        self.version = version
        self.handler = DefaultRequestHandler(
            agent_executor=AssistantExecutor(),
            task_store=TenantTaskStore(),
            # Each assistant's own card is served below; this one only tells the handler what it may do.
            agent_card=AgentCard(
                name="master-agent",
                description="Each of the tenant's assistants is an agent at /a2a/{assistant_id}.",
                version=version,
                supported_interfaces=[
                    AgentInterface(url="/a2a", protocol_binding="JSONRPC", protocol_version="1.0")
                ],
                capabilities=AgentCapabilities(streaming=False, push_notifications=False),
                default_input_modes=["text/plain"],
                default_output_modes=["text/plain"],
                skills=[
                    AgentSkill(
                        id="assistants",
                        name="Assistants",
                        description="The tenant's assistants.",
                        tags=["langgraph"],
                    )
                ],
            ),
        )
        self.dispatcher = JsonRpcDispatcher(
            request_handler=self.handler, context_builder=_TenantContextBuilder()
        )


def card_document(assistant: Assistant, base_url: str, version: str) -> dict[str, Any]:
    """The assistant's A2A agent card as JSON."""
    return agent_card_to_dict(_card(assistant, base_url, version))
