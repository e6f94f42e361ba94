"""The one agent loop on real Postgres checkpoints, with a made-up domain and the offline planner."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langgraph.types import Command

from master_agent.models import OfflinePlanner
from master_agent.runtime import LoopLimits, RuntimeResources, build_agent_loop
from master_agent.runtime.loop import CompiledLoop
from tests import toy_domain as toy
from tests.call_tree import flatten_steps


def _config(**extra: Any) -> dict[str, Any]:
    return {"configurable": {"thread_id": str(uuid.uuid4()), "tenant_id": "demo-retail", **extra}}


def _build(
    resources: RuntimeResources,
    master: Any,
    subs: list[Any],
    model: BaseChatModel | None = None,
    **limits: Any,
) -> CompiledLoop:
    base = {"max_depth": 5, "max_iterations": 10, "subagent_timeout_s": 30.0}
    return build_agent_loop(
        master,
        capabilities=toy.capabilities(master, subs),
        model=model or OfflinePlanner(),
        limits=LoopLimits(**{**base, **limits}),
        sink=resources.terminations,
        checkpointer=resources.database.checkpointer,
    )


async def test_failing_sub_agent_does_not_cancel_its_sibling(resources: RuntimeResources) -> None:
    good = toy.spec("surveyor", ["measure"])
    slow = toy.spec("laggard", ["linger"], limits={"timeout_s": 0.3})
    broken = toy.spec("saboteur", ["explode"])
    master = toy.spec("master", ["surveyor", "laggard", "saboteur"])
    graph = _build(resources, master, [good, slow, broken])
    result = await graph.ainvoke({"goal": "Shorten queues in City 4"}, _config())
    steps = {step["tool"]: step for step in result["steps"]}
    assert set(steps) == {"surveyor", "laggard", "saboteur"}
    assert steps["surveyor"]["status"] == "success"
    assert steps["laggard"]["status"] == "error"
    assert steps["saboteur"]["status"] == "partial"
    # all three were called in the same agent turn, as parallel tasks
    first_turn = next(m for m in result["messages"] if isinstance(m, AIMessage))
    assert len(first_turn.tool_calls) == 3
    assert result["solution"]["measurement"]["city_id"] == 4
    # the answer is complete from the surviving sibling; the failures are listed, not fatal
    assert result["envelope"]["status"] == "success"
    assert any("timed out" in item for item in result["envelope"]["limitations"])
    assert any("sensor offline" in item for item in result["envelope"]["limitations"])


async def test_depth_cap_stops_offering_sub_agents(resources: RuntimeResources) -> None:
    nest = toy.spec("nest", ["nest", "measure"])
    master = toy.spec("master", ["nest"])
    graph = _build(resources, master, [nest], max_depth=3)
    result = await graph.ainvoke({"goal": "Measure City 2"}, _config())
    calls = sorted(flatten_steps(result["steps"]))
    assert calls == [
        (0, "master", "nest"),
        (1, "nest", "measure"),
        (1, "nest", "nest"),
        (2, "nest", "measure"),
        (2, "nest", "nest"),
        (3, "nest", "measure"),
    ]


class _Stubborn(BaseChatModel):
    """Edge fake: a model that insists on calling a tool it was not offered."""

    @property
    def _llm_type(self) -> str:
        return "stubborn"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Any:
        return self

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kw: Any
    ) -> ChatResult:
        turns = sum(isinstance(m, AIMessage) for m in messages)
        if turns:
            return ChatResult(generations=[ChatGeneration(message=AIMessage(content="{}"))])
        call = {"name": "nest", "args": {"question": "q", "city_id": 1}, "id": "c1", "type": "tool_call"}
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content="", tool_calls=[call]))])


async def test_runtime_guard_refuses_a_sub_agent_call_at_the_cap(resources: RuntimeResources) -> None:
    nest = toy.spec("nest", ["nest"])
    graph = _build(resources, nest, [nest], model=_Stubborn(), max_depth=0)
    result = await graph.ainvoke({"goal": "g", "context": {"city_id": 1}}, _config())
    tool_message = result["messages"][2]
    assert "depth cap" in tool_message.content
    assert result["steps"][0]["status"] == "error"


async def test_unknown_tool_goes_back_to_the_model_as_text(resources: RuntimeResources) -> None:
    master = toy.spec("lonely", ["measure"])
    graph = _build(resources, master, [], model=_Stubborn())
    result = await graph.ainvoke({"goal": "g"}, _config())
    assert "not a valid tool" in result["messages"][2].content
    assert "measure" in result["messages"][2].content


async def test_escalation_interrupts_and_resumes_with_a_decision(resources: RuntimeResources) -> None:
    master = toy.spec("master", ["measure"], limits={"max_iterations": 1})
    graph = _build(resources, master, [], human_review=True)
    config = _config()
    await graph.ainvoke({"goal": "Measure City 9"}, config)
    snapshot = await graph.aget_state(config)
    assert snapshot.interrupts and snapshot.interrupts[0].value["reason"] == "max_iterations"
    result = await graph.ainvoke(Command(resume="approve"), config)
    assert result["termination"]["reason"] == "escalated:max_iterations:approve"
    # the calls the escalation stopped never ran, so the approved answer is partial
    assert result["envelope"]["status"] == "partial"

    config = _config()
    await graph.ainvoke({"goal": "Measure City 9"}, config)
    result = await graph.ainvoke(Command(resume="Use what you have."), config)
    assert result["termination"]["reason"] == "completed"
    assert result["solution"]["measurement"]["city_id"] == 9


async def test_every_stop_at_every_depth_is_logged(resources: RuntimeResources) -> None:
    inner = toy.spec("inner", ["measure"])
    outer = toy.spec("outer", ["inner"])
    master = toy.spec("master", ["outer"])
    graph = _build(resources, master, [inner, outer])
    config = _config()
    await graph.ainvoke({"goal": "Measure City 3"}, config)
    rows = await resources.terminations.list("demo-retail", thread_id=config["configurable"]["thread_id"])
    assert sorted((row["agent"], row["depth"], row["reason"]) for row in rows) == [
        ("inner", 2, "completed"),
        ("master", 0, "completed"),
        ("outer", 1, "completed"),
    ]
