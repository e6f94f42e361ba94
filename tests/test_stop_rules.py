"""The stop rules always win over LangGraph's recursion limit, and each user message is a new flow."""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Sequence
from typing import Any

import pytest
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langgraph.types import Command

from master_agent.errors import InputError
from master_agent.runtime import RuntimeResources, SolveRequest, solve
from master_agent.runtime.factory import COMPLEXITIES, GraphOptions, loop_limits, master_graph
from master_agent.runtime.loop import iterations_within, recursion_limit_for

GOAL = "Increase Store 5's accessory attach rate by 20% within 60 days"
VARIANTS = ("control", "planner_first", "parallel_research")


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("complexity", COMPLEXITIES)
async def test_every_iteration_cap_ends_in_an_answer_or_a_review(
    resources: RuntimeResources, variant: str, complexity: str
) -> None:
    capped = []
    for max_iterations in range(1, 11):
        outcome = await solve(
            resources,
            SolveRequest.parse(
                tenant_id="demo-retail",
                goal=GOAL,
                complexity=complexity,
                ab_test_variant=variant,
                max_iterations=max_iterations,
            ),
        )
        where = f"max_iterations={max_iterations}"
        if outcome.status == "interrupted":
            assert complexity == "strategic", where
            assert outcome.interrupt is not None
            assert outcome.interrupt["reason"] in ("max_iterations", "stagnation", "low_confidence"), where
            assert outcome.interrupt["iterations"] <= max_iterations, where
            capped.append(outcome.interrupt["reason"] == "max_iterations")
            continue
        assert outcome.status in ("success", "partial"), where
        assert outcome.solution is not None
        termination = outcome.solution.termination
        assert termination["iterations"] <= max_iterations, where
        if termination["reason"].startswith("escalated:"):
            assert outcome.status == "partial", where
            assert any("stopped early" in item for item in outcome.solution.limitations), where
        capped.append(termination["reason"] == "escalated:max_iterations")
    if variant != "planner_first":  # one planning turn, then the plan graph: no cap to reach
        assert capped[0], "a cap of one iteration must be reached"


def _config(**configurable: Any) -> dict[str, Any]:
    return {
        "configurable": {
            "thread_id": str(uuid.uuid4()),
            "tenant_id": "demo-retail",
            "complexity": "standard",
            **configurable,
        }
    }


class _Relentless(BaseChatModel):
    """Edge fake: a model that never stops calling tools, alternating two of those offered (with empty
    arguments, which they refuse) so it never stagnates."""

    names: tuple[str, ...] = ("look", "peek")

    @property
    def _llm_type(self) -> str:
        return "relentless"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Any:
        offered = tuple(tool["function"]["name"] for tool in tools)
        return self.model_copy(update={"names": offered[:2]}) if len(offered) >= 2 else self

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kw: Any
    ) -> ChatResult:
        turn = sum(isinstance(m, AIMessage) for m in messages)
        call = {"name": self.names[turn % 2], "args": {}, "id": f"c{turn}", "type": "tool_call"}
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content="", tool_calls=[call]))])


@pytest.fixture
def relentless(resources: RuntimeResources) -> RuntimeResources:
    return dataclasses.replace(resources, model=_Relentless())


@pytest.mark.parametrize("limit", [8, 9, 11, 14, None])
async def test_a_recursion_limit_lowers_the_iteration_cap_instead_of_failing(
    relentless: RuntimeResources, limit: int | None
) -> None:
    config: dict[str, Any] = _config(max_iterations=6)
    if limit is not None:
        config["recursion_limit"] = limit
    graph = await master_graph(relentless, config, checkpointer=relentless.database.checkpointer)
    final = await graph.ainvoke({"goal": GOAL}, config)
    assert final["termination"]["reason"] == "escalated:max_iterations"
    assert final["termination"]["iterations"] == min(6, iterations_within(limit or 1000))
    assert final["envelope"]["status"] == "partial"


@pytest.mark.parametrize("max_iterations", [1, 2, 3, 10])
async def test_guidance_after_a_review_continues_within_the_limit(
    relentless: RuntimeResources, max_iterations: int
) -> None:
    config = _config(complexity="strategic", max_iterations=max_iterations)
    options = GraphOptions.from_config(config)
    config["recursion_limit"] = recursion_limit_for(loop_limits(relentless, options).max_iterations)
    graph = await master_graph(relentless, config, checkpointer=relentless.database.checkpointer)
    await graph.ainvoke({"goal": GOAL}, config)
    for _ in range(2):  # each guidance buys more turns, then the cap asks again
        before = (await graph.aget_state(config)).interrupts[0].value["iterations"]
        await graph.ainvoke(Command(resume="Keep looking."), config)
        review = (await graph.aget_state(config)).interrupts[0].value
        assert review["reason"] == "max_iterations"
        assert review["iterations"] > before
    final = await graph.ainvoke(Command(resume="approve"), config)
    assert final["termination"]["reason"] == "escalated:max_iterations:approve"


@pytest.mark.parametrize("limit", [7, 0, "abc", True])
async def test_a_recursion_limit_too_small_for_one_turn_is_refused(
    resources: RuntimeResources, limit: Any
) -> None:
    with pytest.raises(InputError, match="recursion_limit"):
        await master_graph(resources, {**_config(), "recursion_limit": limit})


async def test_each_chat_message_starts_a_new_flow(resources: RuntimeResources) -> None:
    config = _config()
    graph = await master_graph(resources, config, checkpointer=resources.database.checkpointer)
    first = await graph.ainvoke({"goal": GOAL}, config)
    iterations = [first["termination"]["iterations"]]
    for text in ("And for Store 7?", "What would it cost?", "Thanks, anything else?", "Summarise it."):
        state = await graph.ainvoke({"messages": [HumanMessage(content=text)]}, config)
        iterations.append(state["termination"]["iterations"])
        assert state["iteration_count"] == state["termination"]["iterations"]
        assert len(state["recent_turns"]) <= state["iteration_count"]
    # Each flow counts its own turns: a follow-up never inherits the turns before it.
    assert max(iterations[1:]) <= iterations[0], iterations
    assert len(set(iterations[1:])) == 1, iterations


async def test_client_id_names_the_tenant_where_no_key_does(resources: RuntimeResources) -> None:
    config = _config(client_id="demo-retail")
    del config["configurable"]["tenant_id"]
    graph = await master_graph(resources, config, checkpointer=resources.database.checkpointer)
    final = await graph.ainvoke({"goal": GOAL}, config)
    assert final["envelope"]["status"] == "success"
    unknown = _config(client_id="no-such-tenant")
    del unknown["configurable"]["tenant_id"]
    with pytest.raises(InputError, match="no-such-tenant"):
        await master_graph(resources, unknown)
    with pytest.raises(InputError, match="client_id"):
        await master_graph(resources, _config(client_id="other-tenant"))
