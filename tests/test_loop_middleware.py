"""Each middleware of the agent loop alone (``runtime.middleware``): its hooks called directly, or, when
a hook asks the user (``interrupt()``) or writes a stream event, inside a one-node graph."""

from __future__ import annotations

import ast
import uuid
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import StructuredTool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command
from pydantic import BaseModel
from typing_extensions import TypedDict

import master_agent.runtime
from master_agent.capabilities import AgentSpec, MissingInformation
from master_agent.runtime.middleware import (
    BudgetsMiddleware,
    CallOutcome,
    ChoicesMiddleware,
    Gathering,
    GatheringMiddleware,
    HumanReviewMiddleware,
    ModelRequest,
    ModelResponse,
    OpeningCallsMiddleware,
    Recall,
    RecallMiddleware,
    RecoveryMiddleware,
    RiskMiddleware,
    ScopeMiddleware,
    TerminationMiddleware,
    ToolCallRequest,
    chain_tool_calls,
    tool_outcome,
)
from master_agent.runtime.state import MasterAgentState
from master_agent.runtime.termination import TerminationReport


class _Out(TypedDict, total=False):
    result: Any


def _tool(name: str, **metadata: Any) -> StructuredTool:
    def run(store: int) -> dict[str, Any]:
        return {"store": store}

    return StructuredTool.from_function(run, name=name, description=f"{name} of a store", metadata=metadata)


def _request(name: str = "sales", **fields: Any) -> ToolCallRequest:
    return ToolCallRequest(name=name, args={"store": 5}, call_id="call_1", config={}, **fields)


async def _in_graph(run: Any, thread: str, resume: Any = None) -> dict[str, Any]:
    """Runs ``run()`` as the one node of a checkpointed graph (so it may interrupt), or resumes it."""

    async def node(state: _Out) -> dict[str, Any]:
        return {"result": await run()}

    graph = StateGraph(_Out)
    graph.add_node("node", node)
    graph.add_edge(START, "node")
    graph.add_edge("node", END)
    compiled = graph.compile(checkpointer=_SAVER)
    config: RunnableConfig = {"configurable": {"thread_id": thread}}
    return await compiled.ainvoke(Command(resume=resume) if resume is not None else {}, config)


_SAVER = InMemorySaver()


async def test_budgets_mark_calls_past_the_budget_and_refuse_them_without_running() -> None:
    budgets = BudgetsMiddleware(
        budgets={"max_tool_calls": 2, "max_spawns": 1}, sub_agents=frozenset({"research"})
    )
    first: dict[str, Any] = {}
    budgets.before_model({"goal": "g", "tool_calls": 3}, first)
    assert first["budget_start"] == {"tool_calls": 3, "spawns": 0, "tokens": 0}
    later: dict[str, Any] = {}
    budgets.before_model({"goal": "g", "context_box": {}}, later)  # type: ignore[typeddict-item]
    assert later == {}
    state: MasterAgentState = {"goal": "g", "tool_calls": 3, "budget_start": first["budget_start"]}
    turn = [{"name": name, "args": {}} for name in ("research", "research", "sales", "sales")]
    calls = budgets.after_model(state, turn)
    assert [call.get("over_budget") for call in calls] == [
        None,
        "its budget of 1 sub-agent spawns per run is spent",
        None,
        "its budget of 2 tool calls per run is spent",
    ]

    async def never(request: ToolCallRequest) -> CallOutcome:
        raise AssertionError("a call past its budget ran")

    refused = await budgets.wrap_tool_call(_request(over_budget="its budget is spent"), never)
    assert refused.status == "error"
    assert refused.blockers == ["sales not run: its budget is spent"]


async def test_recovery_calls_a_transient_failure_again_then_decides_and_hands_over() -> None:
    recovery = RecoveryMiddleware(tools={"sales": _tool("sales")}, delay_s=0)
    calls: list[str] = []

    async def down(request: ToolCallRequest) -> CallOutcome:
        calls.append(request.name)
        return tool_outcome(
            "sales", "call_1", "error", {"error": "refused", "error_type": "api_down", "context": {}}
        )

    outcome = await recovery.wrap_tool_call(_request(), down)
    assert len(calls) == 2  # called once more
    assert outcome.notes[0] == "sales: api_down, called again"
    assert outcome.notes[-1] == "sales failed (api_down): decided exit"
    assert outcome.handoff is not None and outcome.handoff["kind"] == "failure"
    assert '"decision": "exit"' in outcome.content

    async def conflict(request: ToolCallRequest) -> CallOutcome:
        return tool_outcome("sales", "call_1", "error", {"error": "taken", "error_type": "conflict"})

    another_way = RecoveryMiddleware(
        tools={"sales": _tool("sales"), "cached": _tool("cached", instead_of="sales")}
    )
    told = await another_way.wrap_tool_call(_request(), conflict)
    assert told.handoff is None
    assert '"alternatives": ["cached"]' in told.content


async def test_risk_previews_a_high_risk_call_and_never_runs_it() -> None:
    risk = RiskMiddleware(agent="master", tools={"refund": _tool("refund", risk="high")}, tool_risks={})

    async def never(request: ToolCallRequest) -> CallOutcome:
        raise AssertionError("a high-risk call ran without an accepted proposal")

    preview = await risk.wrap_tool_call(_request("refund"), never)
    assert preview.status == "partial"
    assert preview.handoff is not None and preview.handoff["kind"] == "preview"
    assert preview.notes == ["refund: high risk and no proposal book here: it cannot run"]


async def test_risk_runs_an_approved_medium_call_and_passes_low_risk_through() -> None:
    risk = RiskMiddleware(
        agent="master", tools={"book": _tool("book", risk="medium"), "sales": _tool("sales")}, tool_risks={}
    )

    async def run(request: ToolCallRequest) -> CallOutcome:
        return tool_outcome(request.name, request.call_id, "success", {"done": True})

    approved = await risk.wrap_tool_call(_request("book", approved=True), run)
    assert approved.notes == ["book: medium risk, approved by the user with the answer that completed it"]
    plain = await risk.wrap_tool_call(_request("sales"), run)
    assert plain.notes == [] and plain.findings["done"] is True


async def test_risk_shows_a_medium_draft_and_a_cancel_declines_it() -> None:
    risk = RiskMiddleware(agent="master", tools={"book": _tool("book", risk="medium")}, tool_risks={})

    async def run(request: ToolCallRequest) -> CallOutcome:
        raise AssertionError("a cancelled draft ran")

    thread = str(uuid.uuid4())
    first = await _in_graph(lambda: risk.wrap_tool_call(_request("book"), run), thread)
    assert first["__interrupt__"][0].value["kind"] == "approval"
    final = await _in_graph(lambda: risk.wrap_tool_call(_request("book"), run), thread, resume="cancel")
    assert final["result"].status == "error"
    assert final["result"].notes == ["book: medium risk, the user cancelled the draft"]


async def test_choices_ask_the_user_and_keep_the_chosen_value() -> None:
    choices = ChoicesMiddleware(agent="assistant")
    offered = {
        "choices": {
            "field": "contact",
            "question": "Which David?",
            "options": [{"label": "David Lee", "value": "d1"}, {"label": "David Kim", "value": "d2"}],
        }
    }

    async def lookup(request: ToolCallRequest) -> CallOutcome:
        return tool_outcome(request.name, request.call_id, "success", offered)

    thread = str(uuid.uuid4())
    first = await _in_graph(lambda: choices.wrap_tool_call(_request("contacts"), lookup), thread)
    assert first["__interrupt__"][0].value["options"] == ["David Lee", "David Kim"]
    final = await _in_graph(
        lambda: choices.wrap_tool_call(_request("contacts"), lookup), thread, resume="David Kim"
    )
    outcome = final["result"]
    assert outcome.findings["contact"] == "d2"
    assert outcome.notes == ["contacts: the user chose 'David Kim'"]


async def test_recall_adds_the_pattern_and_takes_the_short_path_only_when_research_is_known() -> None:
    async def recall(goal: str, known: dict[str, Any]) -> Recall:
        return Recall(
            context={"window_days": 60}, reused_pattern={"pattern_id": "p1", "values": {"driver": "price"}}
        )

    middleware = RecallMiddleware(
        agent="master",
        recall=recall,
        research_fields={"research": frozenset({"driver"})},
        short_model=_Marker(),
    )
    update: dict[str, Any] = {}

    async def step() -> dict[str, Any]:
        await middleware.before_agent({"goal": "Raise Store 5", "context": {"store": 5}}, {}, update)
        return update

    await _in_graph(step, str(uuid.uuid4()))
    assert update["context"] == {"window_days": 60, "store": 5}
    assert update["findings"] == {"driver": "price"}
    assert update["notes"] == ["reused village-knowledge pattern p1"]
    state: MasterAgentState = {
        "goal": "g",
        "reused_pattern": update["reused_pattern"],
        "findings": update["findings"],
    }
    assert middleware.short_path(state)
    assert not middleware.short_path(
        {"goal": "g", "reused_pattern": update["reused_pattern"], "findings": {}}
    )

    async def turn(request: ModelRequest) -> ModelResponse:
        assert request.short_path and isinstance(request.model, _Marker) and request.lean_tools is None
        return ModelResponse(reply=AIMessage(content="{}"))

    request = ModelRequest(state=state, box=_box(), model=None, lean_tools=None)  # type: ignore[arg-type]
    await middleware.wrap_model_call(request, turn)


class _Marker:
    """Stands for a bound model the middleware only passes on."""


def _box() -> Any:
    return {"entities": {"store": 5}, "data": {"context": {}}}


async def test_opening_calls_answer_the_first_turn_without_the_model() -> None:
    opening = OpeningCallsMiddleware(
        research=("research",),
        parameters=lambda name: {
            "type": "object",
            "properties": {"store": {"type": "integer"}},
            "required": ["store"],
        },
    )

    async def model(request: ModelRequest) -> ModelResponse:
        return ModelResponse(reply=AIMessage(content="from the model"))

    first = await opening.wrap_model_call(
        ModelRequest(state={"goal": "Store 5"}, box=_box(), model=None, lean_tools=None),
        model,  # type: ignore[arg-type]
    )
    assert first.model_calls == 0
    assert isinstance(first.reply, AIMessage) and first.reply.tool_calls[0]["args"] == {"store": 5}
    later = await opening.wrap_model_call(
        ModelRequest(state={"goal": "g", "iteration_count": 1}, box=_box(), model=None, lean_tools=None),  # type: ignore[arg-type]
        model,
    )
    assert later.reply.content == "from the model"  # type: ignore[union-attr]


async def test_gathering_asks_for_what_is_missing_then_ends_with_the_question() -> None:
    def missing(values: dict[str, Any]) -> MissingInformation | None:
        return None if "store_id" in values else MissingInformation(fields=["store"], question="Which store?")

    async def read(answer: str) -> dict[str, Any]:
        return {}

    gathering = GatheringMiddleware(agent="master", gathering=Gathering(missing=missing, read=read))
    thread = str(uuid.uuid4())

    async def step() -> dict[str, Any]:
        update: dict[str, Any] = {}
        await gathering.before_agent({"goal": "Raise the attach rate"}, {}, update)
        return update

    first = await _in_graph(step, thread)
    assert first["__interrupt__"][0].value["reason"] == "missing_information"
    second = await _in_graph(step, thread, resume="no idea")
    assert "__interrupt__" in second  # asked again
    final = await _in_graph(step, thread, resume="still no idea")
    assert final["result"]["handoff"]["kind"] == "question"
    assert len(final["result"]["notes"]) == 2
    unasked: dict[str, Any] = {}
    await gathering.before_agent({"goal": "Raise Store 5's attach rate"}, {}, unasked)
    assert unasked == {}


async def test_scope_turns_an_out_of_scope_reading_into_the_handoff() -> None:
    update: dict[str, Any] = {"context": {"scope": {"explanation": "no such figure", "missing": ["margin"]}}}
    await ScopeMiddleware().before_agent({"goal": "g"}, {}, update)
    assert update["handoff"]["kind"] == "out_of_scope"
    assert update["handoff"]["missing"] == ["margin"]
    kept: dict[str, Any] = {"context": {"scope": {}}, "handoff": {"kind": "question"}}
    await ScopeMiddleware().before_agent({"goal": "g"}, {}, kept)
    assert kept["handoff"] == {"kind": "question"}


async def test_human_review_guidance_buys_turns_and_approval_finalizes() -> None:
    review = HumanReviewMiddleware(agent="master", max_iterations=6)
    state: MasterAgentState = {
        "goal": "g",
        "iteration_count": 6,
        "max_iterations": 6,
        "messages": [
            HumanMessage(content="g"),
            AIMessage(content="", tool_calls=[{"name": "sales", "args": {}, "id": "c1"}]),
        ],
    }
    thread = str(uuid.uuid4())

    async def step() -> Any:
        return review(state)

    await _in_graph(step, thread)
    guided = (await _in_graph(step, thread, resume="look at weekends"))["result"]
    assert guided.goto == "agent"
    assert guided.update["max_iterations"] == 9
    assert guided.update["messages"][0].content.startswith("skipped:")
    other = str(uuid.uuid4())
    await _in_graph(step, other)
    approved = (await _in_graph(step, other, resume="approve"))["result"]
    assert approved.goto == "finalize"
    assert approved.update["escalation"]["decision"] == "approve"


class _Answer(BaseModel):
    store: int
    confidence: float


class _Sink:
    def __init__(self) -> None:
        self.reports: list[TerminationReport] = []

    async def record(self, report: TerminationReport) -> None:
        self.reports.append(report)


async def test_termination_shapes_the_envelope_and_records_the_report() -> None:
    spec: AgentSpec = {  # type: ignore[typeddict-item]
        "name": "lookup",
        "description": "d",
        "system_prompt": "s",
        "tools": [],
        "input_schema": _Answer,
        "output_schema": _Answer,
    }
    sink = _Sink()
    termination = TerminationMiddleware(spec=spec, depth=1, sink=sink)
    state: MasterAgentState = {
        "goal": "Store 5",
        "messages": [AIMessage(content='{"store": 5, "confidence": 0.8}')],
        "iteration_count": 2,
        "confidences": {"c1": 0.9},
        "completed_steps": ["sales#1"],
    }
    update = await termination.after_agent(state, {})
    assert update is not None
    assert update["envelope"]["status"] == "success"
    assert update["envelope"]["data"] == {"store": 5, "confidence": 0.8}
    assert sink.reports[0].reason == "completed" and sink.reports[0].depth == 1
    failed = await termination.after_agent({**state, "model_failure": "the server is down"}, {})  # type: ignore[typeddict-item]
    assert failed is not None and failed["termination"]["reason"] == "model_error"


async def test_layers_run_outermost_first() -> None:
    order: list[str] = []

    class Layer(ScopeMiddleware):
        def __init__(self, label: str) -> None:
            self.label = label

        async def wrap_tool_call(self, request: ToolCallRequest, handler: Any) -> CallOutcome:
            order.append(self.label)
            return await handler(request)

    async def inner(request: ToolCallRequest) -> CallOutcome:
        order.append("call")
        return CallOutcome(status="success", content="")

    await chain_tool_calls([Layer("a"), Layer("b")], inner)(_request())
    assert order == ["a", "b", "call"]


def test_the_middleware_and_the_deep_agent_runtime_import_neither_the_core_nor_the_builder() -> None:
    runtime = Path(master_agent.runtime.__file__).parent
    modules = [runtime / "deep_agents.py", *sorted((runtime / "middleware").glob("*.py"))]
    for path in modules:
        imported = {
            node.module
            for node in ast.walk(ast.parse(path.read_text()))
            if isinstance(node, ast.ImportFrom) and node.module
        }
        assert not imported & {"master_agent.runtime.loop", "master_agent.runtime.core"}, path.name
