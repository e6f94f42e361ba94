"""The OpenAI path: the real ChatOpenAI client against recorded chat.completions responses.

The openai package speaks HTTP through ``httpx2`` (which respx does not patch), so the recordings are
replayed by an ``httpx2.MockTransport`` under the real client: request building, retries, response
parsing and tool-call decoding are all the library's own."""

from __future__ import annotations

import json
import re
import uuid
from pathlib import Path
from typing import Any

import httpx2
import pytest

from master_agent.errors import ConfigError
from master_agent.models import make_chat_model
from master_agent.runtime import LoopLimits, RuntimeResources, build_agent_loop
from master_agent.settings import Settings
from tests import toy_domain as toy

RECORDING = json.loads((Path(__file__).parent / "recordings" / "openai_subagent_run.json").read_text())
BASE_URL = "http://llm.test/v1"


class Replayer:
    """Answers each chat.completions request with the recorded response for (agent, turn)."""

    def __init__(self, recording: dict[str, Any] = RECORDING) -> None:
        self.recording = recording
        self.requests: list[dict[str, Any]] = []
        self.seen: list[dict[str, str]] = []
        self.failures_left = 1  # the first request gets a 500, to prove the client retries

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        body = json.loads(request.content)
        self.requests.append(body)
        self.seen.append({"url": str(request.url), "method": request.method})
        if self.failures_left:
            self.failures_left -= 1
            return httpx2.Response(
                500, json={"error": {"message": "upstream hiccup", "type": "server_error"}}
            )
        agent = re.search(r"You are agent '([^']+)'", body["messages"][0]["content"])
        assert agent is not None
        turn = sum(1 for m in body["messages"] if m["role"] == "assistant")
        for exchange in self.recording["exchanges"]:
            if (exchange["agent"], exchange["turn"]) == (agent.group(1), turn):
                return httpx2.Response(200, json=exchange["response"])
        raise AssertionError(f"no recording for {agent.group(1)} turn {turn}")


@pytest.fixture
def openai_settings(settings: Settings) -> Settings:
    return settings.with_overrides(
        model="openai:gpt-4o-mini", openai_api_key="sk-test", openai_base_url=BASE_URL, openai_max_retries=2
    )


async def test_model_calls_a_sub_agent_which_calls_a_tool(
    resources: RuntimeResources, openai_settings: Settings
) -> None:
    replayer = Replayer()
    surveyor = toy.spec("surveyor", ["measure"])
    master = toy.spec("master", ["surveyor"])
    graph = build_agent_loop(
        master,
        capabilities=toy.capabilities(master, [surveyor]),
        model=make_chat_model(
            openai_settings, http_async_client=httpx2.AsyncClient(transport=httpx2.MockTransport(replayer))
        ),
        limits=LoopLimits(max_depth=5, max_iterations=10, subagent_timeout_s=30),
        sink=resources.terminations,
        checkpointer=resources.database.checkpointer,
    )
    toy.CALLS.clear()
    config = {"configurable": {"thread_id": str(uuid.uuid4()), "tenant_id": "demo-retail"}}
    result = await graph.ainvoke({"goal": "How long are queues in City 4?"}, config)

    assert toy.CALLS == ["measure:4"]  # the plain tool really ran, once
    assert result["solution"]["measurement"] == {"city_id": 4, "queue_minutes": 12.5}
    assert result["envelope"]["status"] == "success"
    assert result["steps"][0]["tool"] == "surveyor"
    assert result["steps"][0]["children"][0]["tool"] == "measure"
    assert {(r["method"], r["url"]) for r in replayer.seen} == {("POST", f"{BASE_URL}/chat/completions")}
    # 1 failed + 4 recorded exchanges; the master saw the sub-agent's schema as a tool
    assert len(replayer.requests) == 5
    master_tools = [t["function"]["name"] for t in replayer.requests[1]["tools"]]
    assert master_tools == ["surveyor"]
    assert replayer.requests[1]["tools"][0]["function"]["parameters"]["required"] == ["question", "city_id"]
    assert replayer.requests[1]["model"] == "gpt-4o-mini"
    # the sub-agent got only its task, not the parent's conversation
    sub_messages = replayer.requests[2]["messages"]
    assert [m["role"] for m in sub_messages] == ["system", "user"]
    assert "How long are queues in City 4?" in sub_messages[1]["content"]
    # the envelope went back to the master as the tool result
    tool_reply = next(m for m in replayer.requests[4]["messages"] if m["role"] == "tool")
    assert json.loads(tool_reply["content"])["status"] == "success"


def test_openai_model_without_key_or_base_url_is_a_config_error(settings: Settings) -> None:
    with pytest.raises(ConfigError, match="OPENAI_API_KEY"):
        make_chat_model(settings.with_overrides(model="openai:gpt-4o-mini"))
