"""A2A at /a2a/{assistant_id} through the official A2A Python SDK's client against the real service: the
assistant's agent card, a message answered by a completed task with the assistant's reply, the context
continued by a second message (one thread), the task read back, listed and refused to other tenants."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx
from a2a.client import ClientConfig, create_client
from a2a.client.client import Client
from a2a.types.a2a_pb2 import (
    AgentCard,
    GetTaskRequest,
    ListTasksRequest,
    Message,
    Part,
    Role,
    SendMessageRequest,
    Task,
    TaskState,
)
from google.protobuf.json_format import ParseDict

from tests.live_server import LiveServer, live_server_fixture, sdk, two_tenant_keys

live = live_server_fixture(
    "a2a", graphs=("chat=tests.chat_model_graph:make_graph", "habits=tests.habits_graph:make_graph")
)
keys = two_tenant_keys


@asynccontextmanager
async def _agent(live: LiveServer, key: str, assistant_id: str) -> AsyncIterator[tuple[Client, AgentCard]]:
    async with httpx.AsyncClient(headers={"X-API-Key": key}, timeout=120) as http:
        found = await http.get(f"{live.url}/a2a/{assistant_id}/.well-known/agent-card.json")
        assert found.status_code == 200, found.text
        card = ParseDict(found.json(), AgentCard(), ignore_unknown_fields=True)
        client = await create_client(card, client_config=ClientConfig(httpx_client=http, streaming=False))
        yield client, card


async def _send(client: Client, text: str, context_id: str) -> Task:
    message = Message(
        role=Role.ROLE_USER, message_id=uuid.uuid4().hex, context_id=context_id, parts=[Part(text=text)]
    )
    answers = [answer async for answer in client.send_message(SendMessageRequest(message=message))]
    tasks = [answer.task for answer in answers if answer.HasField("task")]
    assert tasks, answers
    return tasks[-1]


async def test_an_assistant_is_an_a2a_agent(live: LiveServer, keys: dict[str, str]) -> None:
    assistant = await sdk(live, keys["demo-retail"]).assistants.create(
        "chat", name="Chatter", description="Chats."
    )
    context_id = str(uuid.uuid4())
    async with _agent(live, keys["demo-retail"], assistant["assistant_id"]) as (client, card):
        assert card.name == "Chatter" and card.description == "Chats."
        assert card.supported_interfaces[0].url.endswith(f"/a2a/{assistant['assistant_id']}")
        task = await _send(client, "hello?", context_id)
        assert task.status.state == TaskState.TASK_STATE_COMPLETED, task
        assert task.context_id == context_id
        assert task.artifacts[0].parts[0].text == "hello there friend"
        again = await _send(client, "and again?", context_id)
        assert again.status.state == TaskState.TASK_STATE_COMPLETED and again.id != task.id
        read = await client.get_task(GetTaskRequest(id=task.id))
        assert read.id == task.id and read.status.state == TaskState.TASK_STATE_COMPLETED
        listed = await client.list_tasks(ListTasksRequest(context_id=context_id))
        assert {t.id for t in listed.tasks} == {task.id, again.id}
    # The context is one thread: both messages and both replies are in it.
    state = await sdk(live, keys["demo-retail"]).threads.get_state(context_id)
    assert [m["content"] for m in state["values"]["messages"]] == [
        "hello?",
        "hello there friend",
        "and again?",
        "hello there friend",
    ]
    # Another tenant neither reaches the assistant nor reads the task.
    async with httpx.AsyncClient(headers={"X-API-Key": keys["other-shop"]}, timeout=30) as http:
        card = await http.get(f"{live.url}/a2a/{assistant['assistant_id']}/.well-known/agent-card.json")
        assert card.status_code == 404
        body = {"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": task.id}}
        other = await http.post(f"{live.url}/a2a/chat", json=body)
        assert other.status_code == 200 and "error" in other.json(), other.text


async def test_a2a_needs_an_api_key(live: LiveServer) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "x"}}
    async with httpx.AsyncClient(base_url=live.url, timeout=30) as http:
        assert (await http.post("/a2a/chat", json=body)).status_code == 401
        card = await http.get("/.well-known/agent-card.json", params={"assistant_id": "chat"})
        assert card.status_code == 401


async def test_a_graph_without_messages_is_refused_as_an_agent(
    live: LiveServer, keys: dict[str, str]
) -> None:
    async with _agent(live, keys["demo-retail"], "habits") as (client, _):
        task = await _send(client, "hello?", str(uuid.uuid4()))
    assert task.status.state == TaskState.TASK_STATE_REJECTED
    assert "takes no messages" in task.status.message.parts[0].text
