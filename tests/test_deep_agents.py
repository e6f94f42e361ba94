"""Agents run by a real ``deepagents`` harness, on the embedded database with the offline model: a
meta-orchestrator DeepAgents build compiled, registered, evaluated and run (its components spawned
through the harness's task tool); a hybrid system whose recursion zone is a deep agent behind the graph
zone; budgets (spawns, tool calls, tokens) holding a tenant's own agent, on either runtime."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import httpx2
import pytest

from master_agent.capabilities import install_tenant, load_tenant
from master_agent.capabilities.agents import live_agents
from master_agent.capabilities.assistants import AGENT_SPEC_KEY, GRAPH_ID
from master_agent.meta.compiler import compile_system
from master_agent.meta.design import design_prompts, design_system, design_tools
from master_agent.meta.graph import build_meta_graph
from master_agent.meta.systems import register_system
from master_agent.models import make_chat_model
from master_agent.runtime import RuntimeResources
from master_agent.runtime.factory import master_graph
from master_agent.runtime.loop import LoopLimits, build_agent_loop
from master_agent.runtime.resources import use_shared_resources
from master_agent.runtime.tenant_agents import save_assistant
from master_agent.settings import Settings
from tests import toy_domain as toy
from tests.test_meta_units import TRIAGE
from tests.test_openai_model import BASE_URL, Replayer

TENANT = "deep-lab"
TICKET = "Our checkout is down and customers cannot pay, this is urgent"


async def _run(
    resources: RuntimeResources, name: str, context: dict[str, Any], **configurable: Any
) -> dict[str, Any]:
    tenant = await load_tenant(resources.database.pool, TENANT)
    agents = await live_agents(resources.database.pool, TENANT, tenant.capability_version)
    config: Any = {
        "configurable": {"tenant_id": TENANT, "agent_id": agents[name].assistant_id, **configurable}
    }
    graph = await master_graph(resources, config)
    state: dict[str, Any] = await graph.ainvoke({"goal": "Handle this", "context": context}, config)
    return state


def _spawns(state: dict[str, Any]) -> list[str]:
    messages = state["messages"]
    return [
        c["args"]["subagent_type"]
        for m in messages
        for c in getattr(m, "tool_calls", [])
        if c["name"] == "task"
    ]


async def test_a_deepagents_build_is_compiled_registered_evaluated_and_runs_its_components(
    resources: RuntimeResources,
) -> None:
    await install_tenant(resources.database.pool, resources.settings, "retail", TENANT)
    use_shared_resources(resources)
    meta = build_meta_graph().compile(checkpointer=resources.database.checkpointer)
    config: Any = {"configurable": {"tenant_id": TENANT, "thread_id": str(uuid.uuid4())}}
    request = {"text": TRIAGE, "name": "deep_desk", "runtime": "deepagent"}
    state = await meta.ainvoke({"request": request}, config)
    result = state["result"]
    assert result["status"] == "done", state["routing_trace"]
    assert (result["runtime_target"], result["registered_agent"], result["left_undone"]) == (
        "deepagent",
        "deep_desk",
        [],
    )
    # The quality gate ran every case through the harness.
    assert result["gates"]["quality"] == {"passed": True, "pass_rate": 1.0, "threshold": 0.8}
    run = await _run(resources, "deep_desk", {"ticket": TICKET})
    assert _spawns(run) == ["deep_desk_triage", "deep_desk_draft"]
    assert run["solution"]["urgency"] == "high" and "urgency: high" in run["solution"]["reply"]
    assert run["envelope"]["status"] == "success"
    assert [(s["tool"], s["kind"]) for s in run["steps"]] == [
        ("deep_desk_triage", "sub_agent"),
        ("deep_desk_draft", "sub_agent"),
    ]


async def test_a_hybrid_system_runs_its_recursion_zone_in_a_deep_agent(resources: RuntimeResources) -> None:
    await install_tenant(resources.database.pool, resources.settings, "retail", TENANT)
    system = design_system(TRIAGE, "mixed_desk", "hybrid")
    compiled = compile_system(system, design_prompts(system), design_tools(system))
    names = await register_system(resources, TENANT, compiled, uuid.uuid4())
    assert names == ["mixed_desk_triage", "mixed_desk_draft", "mixed_desk_recursion", "mixed_desk"]
    run = await _run(resources, "mixed_desk", {"ticket": "A question about invoices, no rush"})
    assert run["envelope"]["status"] == "success", run["envelope"]
    assert run["solution"]["urgency"] == "low"
    # The graph zone's supervisor called triage, then handed the boundary's keys to the deep agent,
    # which spawned the draft component through its task tool.
    zone_step = run["steps"][1]
    assert [s["tool"] for s in run["steps"]] == ["mixed_desk_triage", "mixed_desk_recursion"]
    assert [(c["tool"], c["kind"]) for c in zone_step["children"]] == [("mixed_desk_draft", "sub_agent")]


async def _capped(
    resources: RuntimeResources, name: str, runtime: str, limits: dict[str, int], **configurable: Any
) -> dict[str, Any]:
    """A run of the tenant's own agent over the two compiled components, under its ``limits`` and the
    run's ``configurable``."""
    await install_tenant(resources.database.pool, resources.settings, "retail", TENANT)
    tenant = await load_tenant(resources.database.pool, TENANT)
    if "capped_desk" not in await live_agents(resources.database.pool, TENANT, tenant.capability_version):
        system = design_system(TRIAGE, "capped_desk", "langgraph")
        compiled = compile_system(system, design_prompts(system), design_tools(system))
        await register_system(resources, TENANT, compiled, uuid.uuid4())
    document = {
        "name": name,
        "description": "Triage a ticket and draft a reply",
        "instructions": "Triage the ticket, then draft the reply with its urgency.",
        "runtime": runtime,
        "sub_agents": ["capped_desk_triage", "capped_desk_draft"],
        "input_schema": {
            "type": "object",
            "properties": {"ticket": {"type": "string"}},
            "required": ["ticket"],
        },
        "output_schema": {
            "type": "object",
            "properties": {"urgency": {"type": "string"}, "reply": {"type": "string"}},
            "required": ["urgency", "reply"],
        },
        "limits": limits,
    }
    await save_assistant(
        resources,
        TENANT,
        assistant_id=uuid.uuid4(),
        graph_id=GRAPH_ID,
        name=None,
        description=None,
        config={},
        context={AGENT_SPEC_KEY: document},
        metadata={},
    )
    return await _run(resources, name, {"ticket": TICKET}, **configurable)


@pytest.mark.parametrize("runtime", ["loop", "deepagents"])
@pytest.mark.parametrize(
    ("budget", "set_by"), [("max_spawns", "agent"), ("max_tool_calls", "agent"), ("max_spawns", "run")]
)
async def test_an_agent_is_held_to_its_spawn_and_tool_call_budgets(
    resources: RuntimeResources, runtime: str, budget: str, set_by: str
) -> None:
    name = f"capped_{runtime}_{budget}_{set_by}"
    if set_by == "agent":
        run = await _capped(resources, name, runtime, {budget: 1})
    else:  # the run's configurable binds an agent without budgets of its own
        run = await _capped(resources, name, runtime, {}, **{budget: 1})
    # The first sub-agent ran; the second call was refused by the budget, so its part is missing.
    assert [(s["tool"], s["status"]) for s in run["steps"]] == [
        ("capped_desk_triage", "success"),
        ("capped_desk_draft", "error"),
    ]
    assert run["solution"] == {"urgency": "high"}
    assert run["envelope"]["status"] == "partial"
    assert "incomplete answer: reply missing or invalid" in run["envelope"]["limitations"]


@pytest.mark.parametrize("runtime", ["loop", "deepagents"])
async def test_an_agent_stops_at_its_token_budget(resources: RuntimeResources, runtime: str) -> None:
    run = await _capped(resources, f"tokens_{runtime}", runtime, {"max_tokens": 100})
    # The first model call used well over 100 tokens: it is the last, and its calls are not made.
    assert run["steps"] == [] and run["solution"] == {}
    assert run["envelope"]["status"] == "partial"
    assert (
        run["termination"]["reason"]
        == {"loop": "escalated:token_budget", "deepagents": "token_budget"}[runtime]
    )


async def test_a_deep_agent_on_an_openai_compatible_model_spawns_its_sub_agent(
    resources: RuntimeResources, settings: Settings
) -> None:
    """The harness over the real OpenAI client, answered by recorded chat.completions exchanges: the
    model spawns the sub-agent through deepagents' task tool, the sub-agent calls a plain tool, both
    answer; the result is the loop's envelope."""
    recording = json.loads((Path(__file__).parent / "recordings" / "openai_deep_agent_run.json").read_text())
    replayer = Replayer(recording)
    surveyor = toy.spec("surveyor", ["measure"])
    master = {**toy.spec("master", ["surveyor"]), "runtime": "deepagents"}
    model = make_chat_model(
        settings.with_overrides(
            model="openai:gpt-4o-mini",
            openai_api_key="sk-test",
            openai_base_url=BASE_URL,
            openai_max_retries=2,
        ),
        http_async_client=httpx2.AsyncClient(transport=httpx2.MockTransport(replayer)),
    )
    graph = build_agent_loop(
        master,
        capabilities=toy.capabilities(master, [surveyor]),
        model=model,
        limits=LoopLimits(max_depth=3, max_iterations=6, subagent_timeout_s=30),
        sink=resources.terminations,
    )
    toy.CALLS.clear()
    result = await graph.ainvoke({"goal": "How long are queues in City 4?", "context": {"city_id": 4}})
    assert toy.CALLS == ["measure:4"]  # the sub-agent's tool really ran, once
    assert result["solution"]["measurement"] == {"city_id": 4, "queue_minutes": 12.5}
    assert result["envelope"]["status"] == "success" and result["envelope"]["confidence"] == 0.8
    assert [(s["tool"], s["kind"]) for s in result["steps"]] == [("surveyor", "sub_agent")]
    # 1 failed (the client retried) + 4 recorded exchanges.
    assert len(replayer.requests) == 5
    master_request, sub_request = replayer.requests[1], replayer.requests[2]
    assert "task" in [t["function"]["name"] for t in master_request["tools"]]
    assert "<delegation>" in master_request["messages"][0]["content"]
    assert '"city_id": 4' in master_request["messages"][1]["content"]  # the context box, as the user's turn
    # The sub-agent got only its task (the delegated description) and its own tools.
    assert [m["role"] for m in sub_request["messages"]] == ["system", "user"]
    assert "<context_box>" in sub_request["messages"][1]["content"]
    assert "measure" in [t["function"]["name"] for t in sub_request["tools"]]
    assert "task" not in [t["function"]["name"] for t in sub_request["tools"]]
    # The sub-agent's answer went back to the harness as the task's tool result.
    tool_reply = next(m for m in replayer.requests[4]["messages"] if m["role"] == "tool")
    assert json.loads(tool_reply["content"])["measurement"]["queue_minutes"] == 12.5


async def test_a_deep_agent_whose_prompt_is_over_budget_is_not_called_and_says_why(
    resources: RuntimeResources, settings: Settings
) -> None:
    recording = json.loads((Path(__file__).parent / "recordings" / "openai_deep_agent_run.json").read_text())
    replayer = Replayer(recording)
    surveyor = toy.spec("surveyor", ["measure"])
    master = {**toy.spec("master", ["surveyor"]), "runtime": "deepagents"}
    model = make_chat_model(
        settings.with_overrides(
            model="openai:gpt-4o-mini", openai_api_key="sk-test", openai_base_url=BASE_URL
        ),
        http_async_client=httpx2.AsyncClient(transport=httpx2.MockTransport(replayer)),
    )
    graph = build_agent_loop(
        master,
        capabilities=toy.capabilities(master, [surveyor]),
        model=model,
        # deepagents' own instructions (planning, files, the task tool) alone are over this.
        limits=LoopLimits(max_depth=3, max_iterations=6, subagent_timeout_s=30, prompt_tokens=1000),
        sink=resources.terminations,
    )
    result = await graph.ainvoke({"goal": "How long are queues in City 4?", "context": {"city_id": 4}})
    assert replayer.requests == []  # refused before the call, never sent cut
    assert result["envelope"]["status"] == "error"
    assert "MASTER_AGENT_PROMPT_TOKENS=1000" in result["envelope"]["error"]
