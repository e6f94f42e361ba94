"""The offline planner's generic policy, on a made-up domain (it must know no retail words)."""

from __future__ import annotations

import json

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from pydantic import BaseModel

from master_agent.models import OfflinePlanner
from master_agent.models.prompt_blocks import render_tagged_json


class LookupArgs(BaseModel):
    city_id: int


class ForecastArgs(BaseModel):
    question: str
    city_id: int
    horizon_days: int = 7


class PlanArgs(BaseModel):
    forecast: dict[str, object]
    budget: float = 100.0


def _tool(name: str, schema: type[BaseModel]) -> dict[str, object]:
    return {
        "type": "function",
        "function": {"name": name, "description": name, "parameters": schema.model_json_schema()},
    }


TOOLS = [_tool("lookup", LookupArgs), _tool("forecaster", ForecastArgs), _tool("planner", PlanArgs)]
OUTPUT = {
    "type": "object",
    "properties": {"forecast": {}, "plan": {}, "confidence": {}},
    "required": ["plan"],
}


def _system(goal: str) -> SystemMessage:
    box = {"goal": goal, "entities": {"city_id": 7, "timeline_days": 30}, "data": {"context": {}}}
    return SystemMessage(
        content=render_tagged_json("output_schema", OUTPUT) + render_tagged_json("context_box", box)
    )


def test_first_turn_calls_every_ready_tool_in_declared_order() -> None:
    model = OfflinePlanner().bind_tools(TOOLS)
    reply = model.invoke(
        [_system("Cut queue times in City 7"), HumanMessage(content="Cut queue times in City 7")]
    )
    assert [call["name"] for call in reply.tool_calls] == ["lookup", "forecaster"]
    assert reply.tool_calls[0]["args"] == {"city_id": 7}
    assert reply.tool_calls[1]["args"] == {"question": "Cut queue times in City 7", "city_id": 7}


def test_results_unlock_dependent_tools_then_answer_from_results() -> None:
    model = OfflinePlanner().bind_tools(TOOLS)
    first = model.invoke([_system("g"), HumanMessage(content="g")])
    envelope = {"status": "success", "data": {"forecast": {"load": 3}}, "confidence": 0.9}
    history = [
        _system("g"),
        HumanMessage(content="g"),
        first,
        ToolMessage(
            content=json.dumps({"population": 10}), tool_call_id=first.tool_calls[0]["id"], name="lookup"
        ),
        ToolMessage(content=json.dumps(envelope), tool_call_id=first.tool_calls[1]["id"], name="forecaster"),
    ]
    second = model.invoke(history)
    assert [(c["name"], c["args"]) for c in second.tool_calls] == [("planner", {"forecast": {"load": 3}})]
    history += [
        second,
        ToolMessage(
            content=json.dumps({"plan": ["a"], "confidence": 0.7}),
            tool_call_id=second.tool_calls[0]["id"],
            name="planner",
        ),
    ]
    final = model.invoke(history)
    assert final.tool_calls == []
    assert json.loads(str(final.content)) == {"forecast": {"load": 3}, "plan": ["a"]}


def test_failed_sub_agent_data_is_not_used() -> None:
    model = OfflinePlanner().bind_tools(TOOLS)
    first = model.invoke([_system("g"), HumanMessage(content="g")])
    failed = {"status": "error", "data": {"forecast": {"bad": 1}}, "error": "boom"}
    history = [
        _system("g"),
        HumanMessage(content="g"),
        first,
        ToolMessage(content="{}", tool_call_id=first.tool_calls[0]["id"], name="lookup"),
        ToolMessage(content=json.dumps(failed), tool_call_id=first.tool_calls[1]["id"], name="forecaster"),
    ]
    final = model.invoke(history)
    assert final.tool_calls == []
    assert json.loads(str(final.content)) == {}


def test_a_tool_instead_of_another_waits_until_a_failure_offers_it() -> None:
    mirror = {
        "type": "function",
        "function": {
            "name": "mirror_lookup",
            "description": "Instead of lookup when its service is down: the same from a mirror.",
            "parameters": LookupArgs.model_json_schema(),
        },
    }
    model = OfflinePlanner().bind_tools([TOOLS[0], mirror])
    first = model.invoke([_system("g"), HumanMessage(content="g")])
    assert [call["name"] for call in first.tool_calls] == ["lookup"]
    down = {"error": "unreachable", "error_type": "api_down", "decision": "try_another_way"}
    history = [_system("g"), HumanMessage(content="g"), first]
    told = ToolMessage(
        content=json.dumps({**down, "alternatives": ["mirror_lookup"]}),
        tool_call_id=first.tool_calls[0]["id"],
        name="lookup",
    )
    second = model.invoke([*history, told])
    assert [(c["name"], c["args"]) for c in second.tool_calls] == [("mirror_lookup", {"city_id": 7})]
    # Not offered (the loop decided to exit): the alternative stays unused.
    silent = ToolMessage(content=json.dumps(down), tool_call_id=first.tool_calls[0]["id"], name="lookup")
    assert model.invoke([*history, silent]).tool_calls == []


def test_same_input_same_output() -> None:
    model = OfflinePlanner().bind_tools(TOOLS)
    messages = [_system("g"), HumanMessage(content="g")]
    assert model.invoke(messages).tool_calls == model.invoke(messages).tool_calls


def test_unbound_model_answers_immediately() -> None:
    reply = OfflinePlanner().invoke([_system("g"), HumanMessage(content="g")])
    assert isinstance(reply, AIMessage)
    assert reply.tool_calls == []


class DelegateArgs(BaseModel):
    description: str
    subagent_type: str


def test_delegation_hands_each_sub_agent_what_it_needs_once_it_is_known() -> None:
    """Rule 6: a harness's task tool is called per sub-agent of the <delegation> block, in order, once
    its needs are known, with a context box of the values it accepts; the delegated task's own model
    reads that box from its user message."""
    plan = {
        "agents": [
            {"name": "sizer", "description": "Size the queue.", "needs": ["city_id"], "accepts": ["city_id"]},
            {
                "name": "staffer",
                "description": "Staff it.",
                "needs": ["queue"],
                "accepts": ["queue", "city_id"],
            },
        ]
    }
    system = SystemMessage(
        content=render_tagged_json("output_schema", OUTPUT) + render_tagged_json("delegation", plan)
    )
    box = {"goal": "Cut queue times", "data": {"context": {"city_id": 7}}}
    user = HumanMessage(content="Cut queue times\n" + render_tagged_json("context_box", box))
    model = OfflinePlanner().bind_tools([_tool("task", DelegateArgs), _tool("lookup", LookupArgs)])
    first = model.invoke([system, user])
    assert [(c["name"], c["args"].get("subagent_type")) for c in first.tool_calls] == [
        ("task", "sizer"),
        ("lookup", None),
    ]
    assert first.tool_calls[0]["args"]["description"].startswith("Size the queue.")
    assert '"city_id": 7' in first.tool_calls[0]["args"]["description"]
    results = [
        ToolMessage(content=json.dumps({"queue": 40}), tool_call_id=first.tool_calls[0]["id"]),
        ToolMessage(content=json.dumps({"city": "x"}), tool_call_id=first.tool_calls[1]["id"]),
    ]
    second = model.invoke([system, user, first, *results])
    assert [c["args"]["subagent_type"] for c in second.tool_calls] == ["staffer"]
    handed = second.tool_calls[0]["args"]["description"]
    assert '"queue": 40' in handed and '"city_id": 7' in handed
    staffed = ToolMessage(
        content=json.dumps({"plan": "two more desks"}), tool_call_id=second.tool_calls[0]["id"]
    )
    answer = model.invoke([system, user, first, *results, second, staffed])
    assert answer.tool_calls == [] and json.loads(str(answer.content)) == {"plan": "two more desks"}
    # The delegated task, as the sub-agent's model sees it: its values come from the user message.
    worker = OfflinePlanner().bind_tools([_tool("lookup", LookupArgs)])
    task = worker.invoke([SystemMessage(content="Size queues."), HumanMessage(content=handed)])
    assert task.tool_calls[0]["args"] == {"city_id": 7}
