"""``make prompt-sizes``: the size of every agent's prompt as it is sent to an OpenAI-compatible server.

The retail goal, then a chat message, run end to end on the demo tenant through the real openai client (``httpx2`` under
langchain-openai). The server is faked at the HTTP edge: each chat-completion request is captured and
answered by the offline planner's policy (the same decisions the offline model takes), so every agent
of the run, at every depth, sends its real prompt. Printed per agent: the largest request's
system prompt, tool schemas, whole request (tokens), and how many tools it carried.

Tokens are counted with tiktoken's ``o200k_base`` when tiktoken can load it (it downloads it once, or
reads it from ``TIKTOKEN_CACHE_DIR``), else with the project's estimate (3 bytes a token, an
over-count for every mainstream tokenizer; see ``models.budget.estimate_tokens``).
``MASTER_AGENT_PROMPT_TOKENS``, ``MASTER_AGENT_TOKENIZER`` and ``MASTER_AGENT_SCHEMA_MODE`` apply as in
the service. With ``--each``, every sub-agent is then driven alone under the budget with the arguments
its parent gave it (a model with that context driving one sub-agent): status, requests, largest one.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx2
from langchain_core.messages import BaseMessage
from langchain_openai.chat_models.base import _convert_dict_to_message

from master_agent.capabilities import load_tenant
from master_agent.capabilities.agents import live_agents
from master_agent.models import make_chat_model
from master_agent.models.budget import estimate_tokens
from master_agent.models.offline import plan_turn
from master_agent.runtime import RuntimeResources, SolveRequest, open_resources, solve
from master_agent.runtime.factory import GraphOptions, _capabilities, chat_turn, tenant_tool_context
from master_agent.runtime.loop import LoopLimits, build_agent_loop, task_text
from master_agent.service.graphs import register_graphs
from master_agent.settings import Settings

GOAL = "Increase Store 5's accessory attach rate by 20% within 60 days"
CHAT = "Which store had the best accessory attach rate last month?"
BASE_URL = "http://llm.capture/v1"


def tiktoken_counter() -> tuple[str, Callable[[str], int]]:
    """tiktoken's o200k_base when it can be loaded (a network, or ``TIKTOKEN_CACHE_DIR`` holding it),
    else the estimate."""
    try:
        import tiktoken

        encoding = tiktoken.get_encoding("o200k_base")
    except Exception:
        return "estimate (bytes/3)", estimate_tokens
    return "tiktoken o200k_base", lambda text: len(encoding.encode(text, disallowed_special=()))


class PlannerServer:
    """An OpenAI-compatible server at the HTTP edge: records each request, answers with the offline
    planner's turn for the messages and tools it was sent (streamed when asked)."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        body = json.loads(request.content)
        self.requests.append(body)
        messages: list[BaseMessage] = [_convert_dict_to_message(m) for m in body["messages"]]
        turn = plan_turn(messages, body.get("tools") or [])
        calls = [
            {
                "id": call["id"],
                "type": "function",
                "function": {"name": call["name"], "arguments": json.dumps(call["args"])},
            }
            for call in turn.tool_calls
        ]
        message: dict[str, Any] = {"role": "assistant", "content": str(turn.content) or None}
        if calls:
            message["tool_calls"] = calls
        finish = "tool_calls" if calls else "stop"
        if body.get("stream"):
            delta = {**message, "tool_calls": [{"index": i, **c} for i, c in enumerate(calls)]}
            chunks = [
                {"choices": [{"index": 0, "delta": delta, "finish_reason": None}]},
                {"choices": [{"index": 0, "delta": {}, "finish_reason": finish}]},
            ]
            text = "".join(
                f"data: {json.dumps({'id': 'c', 'object': 'chat.completion.chunk', 'created': 0, 'model': body['model'], **c})}\n\n"
                for c in chunks
            )
            return httpx2.Response(
                200,
                content=(text + "data: [DONE]\n\n").encode(),
                headers={"content-type": "text/event-stream"},
            )
        return httpx2.Response(
            200,
            json={
                "id": "chatcmpl-capture",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": body["model"],
                "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            },
        )


def agent_of(body: dict[str, Any]) -> str:
    system = str(body["messages"][0].get("content") or "")
    marker = "You are agent '"
    if marker in system:
        return system.split(marker, 1)[1].split("'", 1)[0]
    tools = body.get("tools") or []
    if body.get("tool_choice") and tools:
        return f"structured:{tools[0]['function']['name']}"
    return "(other)"


def sizes(body: dict[str, Any], count: Callable[[str], int]) -> dict[str, int]:
    system = str(body["messages"][0].get("content") or "")
    tools = body.get("tools") or []
    schema_text = "".join(json.dumps(tool, separators=(",", ":")) for tool in tools)
    others = "".join(
        str(m.get("content") or "") + json.dumps(m.get("tool_calls") or "") for m in body["messages"][1:]
    )
    return {
        "system": count(system),
        "tools": count(schema_text),
        "total": count(system) + count(schema_text) + count(others) + 4 * len(body["messages"]),
        "n_tools": len(tools),
    }


async def capture(settings: Settings) -> tuple[str, list[dict[str, Any]]]:
    """The run's status and every chat-completion request body it sent."""
    server = PlannerServer()
    model = make_chat_model(
        settings, http_async_client=httpx2.AsyncClient(transport=httpx2.MockTransport(server))
    )
    async with open_resources(settings, model=model) as resources:
        outcome = await solve(resources, SolveRequest.parse(tenant_id="demo-retail", goal=GOAL))
        # A chat message: the front door's intent analysis (structured output) is a prompt too.
        await chat_turn(resources, "demo-retail", str(uuid.uuid4()), CHAT)
        alone = await each_sub_agent_alone(resources) if "--each" in sys.argv else {}
    return outcome.status, server.requests, alone


def delegated_args(requests: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The arguments each agent was first called with in the run (from its parent's tool calls)."""
    found: dict[str, dict[str, Any]] = {}
    for body in requests:
        for message in body["messages"]:
            for call in message.get("tool_calls") or []:
                found.setdefault(call["function"]["name"], json.loads(call["function"]["arguments"]))
    return found


async def each_sub_agent_alone(resources: RuntimeResources) -> dict[str, tuple[str, int, int]]:
    """Each sub-agent of the demo tenant driven alone, as its parent calls it (the arguments it got in
    the run), under the settings' budget: its status, model requests and largest request (budget
    tokens). Shows whether a model with that context can drive it."""
    tenant = await load_tenant(resources.database.pool, "demo-retail")
    agents = await live_agents(resources.database.pool, tenant.tenant_id, tenant.capability_version)
    options = GraphOptions.from_config({"configurable": {"tenant_id": tenant.tenant_id}})
    capabilities = _capabilities(resources, tenant, options, agents, tenant_tool_context(resources, tenant))
    # The arguments each sub-agent is called with, from a run under no budget (under a small one the
    # master may stop before it calls them all).
    unbounded = PlannerServer()
    free = dataclasses.replace(
        resources,
        settings=resources.settings.with_overrides(prompt_tokens=2_000_000),
        model=make_chat_model(
            resources.settings,
            http_async_client=httpx2.AsyncClient(transport=httpx2.MockTransport(unbounded)),
        ),
    )
    await solve(free, SolveRequest.parse(tenant_id=tenant.tenant_id, goal=GOAL))
    args = delegated_args(unbounded.requests)
    results: dict[str, tuple[str, int, int]] = {}
    for name, spec in capabilities.sub_agents.items():
        if name not in args:
            continue
        server = PlannerServer()
        model = make_chat_model(
            resources.settings, http_async_client=httpx2.AsyncClient(transport=httpx2.MockTransport(server))
        )
        graph = build_agent_loop(
            spec,
            capabilities=capabilities,
            model=model,
            limits=LoopLimits(
                max_depth=resources.settings.max_depth,
                max_iterations=resources.settings.max_iterations,
                subagent_timeout_s=resources.settings.subagent_timeout_s,
                prompt_tokens=resources.settings.prompt_tokens,
                count_tokens=resources.count_tokens,
            ),
            sink=resources.terminations,
            depth=1,
        )
        final = await graph.ainvoke({"goal": task_text(spec, args[name]), "context": args[name]})
        sent = [body for body in server.requests if agent_of(body) == name]
        largest = max((_request_tokens(body, resources.count_tokens) for body in sent), default=0)
        results[name] = (final["envelope"]["status"], len(sent), largest)
    return results


def _request_tokens(body: dict[str, Any], count: Callable[[str], int]) -> int:
    return sizes(body, count)["total"]


def main() -> None:
    register_graphs()
    settings = Settings.from_env().with_overrides(
        model="openai:capture-model",
        openai_api_key="sk-capture",
        openai_base_url=BASE_URL,
        openai_max_retries=0,
    )
    status, requests, alone = asyncio.run(capture(settings))
    name, count = tiktoken_counter()
    largest: dict[str, dict[str, int]] = {}
    for body in requests:
        agent = agent_of(body)
        measured = sizes(body, count)
        if agent not in largest or measured["total"] > largest[agent]["total"]:
            largest[agent] = measured
    print(f"run status {status}; {len(requests)} requests; tokens: {name}")
    print(
        f"MASTER_AGENT_PROMPT_TOKENS={settings.prompt_tokens} (counted by MASTER_AGENT_TOKENIZER="
        f"{settings.tokenizer}); schemas {settings.model_schema_mode()}"
    )
    print(f"{'agent':32} {'system':>7} {'tools':>7} {'#tools':>6} {'largest request':>16}")
    for agent, measured in largest.items():
        print(
            f"{agent:32} {measured['system']:7} {measured['tools']:7} {measured['n_tools']:6} "
            f"{measured['total']:16}"
        )
    if alone:
        print(f"each sub-agent alone, within MASTER_AGENT_PROMPT_TOKENS={settings.prompt_tokens}:")
        print(f"{'agent':32} {'status':>8} {'requests':>8} {'largest (budget tokens)':>24}")
        for agent, (outcome, calls, tokens) in alone.items():
            print(f"{agent:32} {outcome:>8} {calls:8} {tokens:24}")
    if "--dump" in sys.argv:
        target = Path(sys.argv[sys.argv.index("--dump") + 1])
        target.write_text(json.dumps(requests, indent=1))
        print(f"request bodies in {target}")


if __name__ == "__main__":
    main()
