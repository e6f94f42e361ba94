"""Model faults at every depth end in a clear result, never a crash: recorded chat-completion
exchanges replayed under the real openai client (its retries, backoff and parsing are the library's
own), and served over loopback to the CLI and the service."""

from __future__ import annotations

import dataclasses
import json
import os
import uuid
from pathlib import Path
from typing import Any

import httpx
import httpx2
import openai
import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import StructuredTool
from langchain_openai import ChatOpenAI
from pydantic import BaseModel, Field

from master_agent.models import make_chat_model
from master_agent.runtime import LoopLimits, RuntimeResources, build_agent_loop
from master_agent.runtime.loop import CompiledLoop
from master_agent.service.auth import create_key
from master_agent.settings import Settings
from tests import toy_domain as toy
from tests.cli_call import run_cli
from tests.conftest import server_settings
from tests.live_server import LiveServer, sse_events
from tests.model_exchanges import LoopbackModelServer, Script, refuses_non_string_content

BASE_URL = "http://llm.test/v1"
QUESTION = "How long are queues in City 4?"
QUESTION_RETAIL = "What is the attach rate of Store 5?"


@pytest.fixture
def openai_settings(settings: Settings) -> Settings:
    return settings.with_overrides(
        model="openai:gpt-4o-mini", openai_api_key="sk-test", openai_base_url=BASE_URL, openai_max_retries=2
    )


def loop(
    resources: RuntimeResources,
    settings: Settings,
    script: Script,
    *,
    master_tools: tuple[str, ...] = ("measure",),
    extra_tools: tuple[StructuredTool, ...] = (),
    prompt_tokens: int = 16_000,
) -> CompiledLoop:
    surveyor = toy.spec("surveyor", ["measure"])
    master = toy.spec("master", list(master_tools))
    capabilities = toy.capabilities(master, [surveyor])
    capabilities = dataclasses.replace(
        capabilities, tools={**capabilities.tools, **{tool.name: tool for tool in extra_tools}}
    )
    return build_agent_loop(
        master,
        capabilities=capabilities,
        model=make_chat_model(settings, http_async_client=script.client()),
        limits=LoopLimits(max_depth=5, max_iterations=10, subagent_timeout_s=30, prompt_tokens=prompt_tokens),
        sink=resources.terminations,
        checkpointer=resources.database.checkpointer,
    )


async def solve(graph: CompiledLoop) -> dict[str, Any]:
    config = {"configurable": {"thread_id": str(uuid.uuid4()), "tenant_id": "demo-retail"}}
    result: dict[str, Any] = await graph.ainvoke({"goal": QUESTION}, config)
    return result


async def test_tool_call_history_suits_a_server_that_refuses_null_content(
    resources: RuntimeResources, openai_settings: Settings
) -> None:
    script = Script(["measure_city_4", "final_answer"], refuse=refuses_non_string_content)
    result = await solve(loop(resources, openai_settings, script))

    assert result["envelope"]["status"] == "success"
    assert result["solution"]["measurement"] == {"city_id": 4, "queue_minutes": 12.5}
    assert len(script.requests) == 2  # nothing refused, nothing retried
    assistant, tool = script.requests[1]["messages"][2:4]
    assert assistant["content"] == "" and assistant["tool_calls"][0]["id"] == "call_m4"
    assert isinstance(tool["content"], str) and tool["tool_call_id"] == "call_m4"
    # A compatible server is sent the field it reads to bound the answer.
    assert script.requests[0]["max_tokens"] == openai_settings.max_tokens
    assert "max_completion_tokens" not in script.requests[0]


async def test_the_same_history_with_null_content_is_what_that_server_refuses(
    openai_settings: Settings,
) -> None:
    """The refusal is real: langchain-openai's own serialisation of the history sends null content."""
    script = Script(["final_answer"], refuse=refuses_non_string_content)
    stock = ChatOpenAI(
        model="gpt-4o-mini",
        api_key="sk-test",
        base_url=BASE_URL,
        max_retries=0,
        http_async_client=script.client(),
    )
    history = [
        HumanMessage(content=QUESTION),
        AIMessage(content="", tool_calls=[{"name": "measure", "args": {"city_id": 4}, "id": "c1"}]),
        ToolMessage(content="{}", tool_call_id="c1"),
    ]
    with pytest.raises(openai.InternalServerError, match="valid string"):
        await stock.ainvoke(history)


def test_openai_itself_is_sent_max_completion_tokens(settings: Settings) -> None:
    model = make_chat_model(
        settings.with_overrides(model="openai:gpt-4o-mini", openai_api_key="sk-test", max_tokens=300)
    )
    payload = model._get_request_payload([HumanMessage(content="hi")])  # type: ignore[attr-defined]
    assert payload["max_completion_tokens"] == 300 and "max_tokens" not in payload


async def test_rate_limit_with_retry_after_is_retried_then_succeeds(
    resources: RuntimeResources, openai_settings: Settings
) -> None:
    script = Script(["rate_limited", "measure_city_4", "final_answer"])
    result = await solve(loop(resources, openai_settings, script))
    assert result["envelope"]["status"] == "success"
    assert len(script.requests) == 3
    assert script.requests[0] == script.requests[1]  # the same request, sent again


async def test_server_errors_every_time_end_in_error_after_the_retries(
    resources: RuntimeResources, openai_settings: Settings
) -> None:
    script = Script(["server_error"])
    result = await solve(loop(resources, openai_settings, script))

    assert len(script.requests) == 1 + openai_settings.model_max_retries()
    envelope = result["envelope"]
    assert envelope["status"] == "error"
    assert "HTTP 500" in envelope["error"] and "The server had an error" in envelope["error"]
    assert any("HTTP 500" in item for item in envelope["limitations"])
    assert result["termination"]["reason"] == "model_error"
    assert result["model_failure"] == envelope["error"]


async def test_timeouts_end_in_error_after_the_retries(
    resources: RuntimeResources, openai_settings: Settings
) -> None:
    settings = openai_settings.with_overrides(openai_max_retries=1, openai_timeout_s=5)
    script = Script([httpx2.ReadTimeout("timed out")])
    result = await solve(loop(resources, settings, script))

    assert len(script.requests) == 2
    assert result["envelope"]["status"] == "error"
    assert "did not answer in time" in result["envelope"]["error"]
    assert result["termination"]["reason"] == "model_error"


async def test_context_length_exceeded_is_not_retried(
    resources: RuntimeResources, openai_settings: Settings
) -> None:
    script = Script(["context_length_exceeded"])
    result = await solve(loop(resources, openai_settings, script))
    assert len(script.requests) == 1
    assert "HTTP 400" in result["model_failure"] and "maximum context length" in result["model_failure"]
    assert result["envelope"]["status"] == "error"


async def test_a_later_model_fault_keeps_what_was_found_as_a_partial_answer(
    resources: RuntimeResources, openai_settings: Settings
) -> None:
    script = Script(["measure_city_4", "context_length_exceeded"])
    result = await solve(loop(resources, openai_settings, script))
    envelope = result["envelope"]
    assert envelope["status"] == "partial"
    assert envelope["data"]["measurement"] == {"city_id": 4, "queue_minutes": 12.5}
    assert any("maximum context length" in item for item in envelope["limitations"])
    assert result["termination"]["reason"] == "model_error"


async def test_malformed_arguments_get_the_error_back_as_the_tool_result(
    resources: RuntimeResources, openai_settings: Settings
) -> None:
    script = Script(["malformed_arguments", "measure_city_4", "final_answer"])
    toy.CALLS.clear()
    result = await solve(loop(resources, openai_settings, script))

    assert result["envelope"]["status"] == "success"
    assert toy.CALLS == ["measure:4"]  # the malformed call never ran
    sent = script.requests[1]["messages"]
    assert sent[2]["tool_calls"][0]["id"] == "call_bad"
    assert sent[3]["role"] == "tool" and sent[3]["tool_call_id"] == "call_bad"
    assert "not a valid JSON object" in sent[3]["content"]
    assert 'Received: {"city_id": 4,' in sent[3]["content"]  # what the model sent, to mend


async def test_malformed_calls_again_and_again_stop_as_stagnation(
    resources: RuntimeResources, openai_settings: Settings
) -> None:
    script = Script(["malformed_arguments"])
    result = await solve(loop(resources, openai_settings, script))
    assert len(script.requests) == 3  # not the 10 iterations of the cap
    assert result["termination"]["reason"] == "escalated:stagnation"
    assert result["envelope"]["status"] == "partial"


async def test_arguments_failing_the_schema_get_the_error_back_and_never_run(
    resources: RuntimeResources, openai_settings: Settings
) -> None:
    script = Script(["arguments_failing_the_schema", "measure_city_4", "final_answer"])
    toy.CALLS.clear()
    result = await solve(loop(resources, openai_settings, script))
    assert result["envelope"]["status"] == "success"
    assert toy.CALLS == ["measure:4"]
    reply = script.requests[1]["messages"][3]
    assert reply["tool_call_id"] == "call_four" and reply["content"].startswith("error:")
    assert "city_id" in reply["content"]


async def test_an_unknown_tool_gets_the_error_back_and_the_loop_goes_on(
    resources: RuntimeResources, openai_settings: Settings
) -> None:
    script = Script(["unknown_tool", "measure_city_4", "final_answer"])
    result = await solve(loop(resources, openai_settings, script))
    assert result["envelope"]["status"] == "success"
    reply = script.requests[1]["messages"][3]
    assert reply["tool_call_id"] == "call_tp" and "'teleport' is not a valid tool" in reply["content"]


async def test_a_sub_agents_model_fault_is_its_envelope_and_the_parent_goes_on(
    resources: RuntimeResources, openai_settings: Settings
) -> None:
    # master -> surveyor (whose model call fails) -> master answers with what it has
    script = Script(["call_surveyor", "context_length_exceeded", "answer_without_data"])
    result = await solve(loop(resources, openai_settings, script, master_tools=("surveyor",)))

    assert len(script.requests) == 3
    assert result["steps"][0]["tool"] == "surveyor" and result["steps"][0]["status"] == "error"
    envelope = result["envelope"]
    assert envelope["status"] == "partial"
    assert any(
        item.startswith("surveyor: ") and "maximum context length" in item for item in envelope["limitations"]
    )
    surveyor_reply = json.loads(script.requests[2]["messages"][3]["content"])
    assert surveyor_reply["status"] == "error"
    assert result.get("model_failure") is None  # the master's own model answered


async def test_a_prompt_over_budget_is_trimmed_before_the_call_and_kept_whole_in_the_thread(
    resources: RuntimeResources, openai_settings: Settings
) -> None:
    async def survey_log(city_id: int) -> str:
        return "queue reading 12.5 minutes; " * 3000  # ~84 KB of text

    log_tool = StructuredTool.from_function(
        coroutine=survey_log, name="survey_log", description="raw survey log", args_schema=toy.CityArgs
    )
    script = Script(["survey_log_city_4", "final_answer"])
    graph = loop(
        resources,
        openai_settings,
        script,
        master_tools=("measure", "survey_log"),
        extra_tools=(log_tool,),
        prompt_tokens=3000,
    )
    result = await solve(graph)

    assert result["envelope"]["status"] == "success"
    sent = json.dumps(script.requests[1]["messages"])
    assert (len(sent.encode()) + 2) // 3 < 3000  # the estimate the settings count with
    tool = script.requests[1]["messages"][3]
    assert tool["tool_call_id"] == "call_log4" and "trimmed" in tool["content"]
    assert tool["content"].startswith("queue reading 12.5 minutes;")
    kept = [m for m in result["messages"] if isinstance(m, ToolMessage)]
    assert len(str(kept[0].content)) == len("queue reading 12.5 minutes; ") * 3000


async def test_an_agent_whose_smallest_prompt_is_over_budget_is_not_called_and_says_why(
    resources: RuntimeResources, openai_settings: Settings
) -> None:
    script = Script(["final_answer"])
    result = await solve(loop(resources, openai_settings, script, prompt_tokens=120))

    assert script.requests == []  # refused before the call: never sent with its instructions cut
    assert "agent 'master'" in result["model_failure"]
    assert "MASTER_AGENT_PROMPT_TOKENS=120" in result["model_failure"]
    assert result["envelope"]["status"] == "error"


class LongDocArgs(BaseModel):
    city_id: int = Field(description="The city to read. " + "Cities are numbered from 1 upwards. " * 80)


async def test_tool_parameter_descriptions_give_way_last_when_nothing_else_fits(
    resources: RuntimeResources, openai_settings: Settings
) -> None:
    async def survey_log(city_id: int) -> str:
        return f"queue reading city {city_id}"

    documented = StructuredTool.from_function(
        coroutine=survey_log, name="survey_log", description="raw survey log", args_schema=LongDocArgs
    )
    script = Script(["measure_city_4", "final_answer"])
    graph = loop(
        resources,
        openai_settings,
        script,
        master_tools=("measure", "survey_log"),
        extra_tools=(documented,),
        prompt_tokens=1000,
    )
    result = await solve(graph)

    assert result["envelope"]["status"] == "success"
    tools = {tool["function"]["name"]: tool["function"] for tool in script.requests[0]["tools"]}
    assert tools["survey_log"]["parameters"]["properties"]["city_id"] == {"type": "integer"}
    assert tools["survey_log"]["description"] == "raw survey log"  # the tool's own description stays
    assert (len(json.dumps(script.requests[0]).encode()) + 2) // 3 < 1000


def test_solve_json_prints_the_solution_and_exits_4_when_the_model_fails(
    fresh_database_uri: str, tmp_path: Path
) -> None:
    with LoopbackModelServer(Script(["server_error"])) as model_server:
        env = {
            **os.environ,
            "DATABASE_URL": fresh_database_uri,
            "MASTER_AGENT_DATA_DIR": str(tmp_path),
            "MASTER_AGENT_MODEL": "openai:gpt-4o-mini",
            "OPENAI_BASE_URL": model_server.url,
            "OPENAI_MAX_RETRIES": "1",
        }
        done = run_cli(env, "solve", QUESTION_RETAIL, "--json", timeout=300)
        requests = len(model_server.script.requests)
    assert done.returncode == 4, done.stderr
    solution = json.loads(done.stdout)
    assert solution["status"] == "error"
    assert "HTTP 500" in solution["model_failure"]
    assert solution["termination"]["reason"] == "model_error"
    assert any("HTTP 500" in item for item in solution["limitations"])
    assert requests == 2  # one try and one retry: the master's first model call
    assert "Traceback" not in done.stderr


async def test_a_service_run_ends_error_with_the_message_and_its_stream_with_an_error_event(
    pg_server_uri: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    with LoopbackModelServer(Script(["server_error"])) as model_server:
        settings = server_settings(
            pg_server_uri,
            tmp_path_factory,
            "modelfault",
            model="openai:gpt-4o-mini",
            openai_base_url=model_server.url,
            openai_max_retries=0,
        )
        async with LiveServer(settings) as live:
            resources: RuntimeResources = live.server.config.app.state.service.resources
            key = (await create_key(resources.database.pool, "demo-retail")).key
            headers = {"x-api-key": key}
            async with httpx.AsyncClient(base_url=live.url, headers=headers, timeout=60) as client:
                thread = (await client.post("/threads", json={})).json()
                events = []
                async with client.stream(
                    "POST",
                    f"/threads/{thread['thread_id']}/runs/stream",
                    json={"assistant_id": "master_agent", "input": {"goal": QUESTION_RETAIL}},
                ) as response:
                    assert response.status_code == 200
                    async for _id, event, data in sse_events(response):
                        events.append((event, data))
                events = [(name, data) for name, data in events if name != "end"]
                assert events[-1][0] == "error"
                error = events[-1][1]
                assert error["error"] == "ModelError" and "HTTP 500" in error["message"]
                run_id = events[0][1]["run_id"]
                run = (await client.get(f"/threads/{thread['thread_id']}/runs/{run_id}")).json()
                assert run["status"] == "error"
                joined = (await client.get(f"/threads/{thread['thread_id']}/runs/{run_id}/join")).json()
                assert joined["__error__"]["error"] == "ModelError"
                assert "HTTP 500" in joined["__error__"]["message"]
                # The thread keeps the agent's answer, with the reason.
                state = (await client.get(f"/threads/{thread['thread_id']}/state")).json()
                assert state["values"]["envelope"]["status"] == "error"
                assert state["values"]["termination"]["reason"] == "model_error"
