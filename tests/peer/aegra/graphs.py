"""Graphs equivalent to the examples Aegra's e2e suite runs against (its ``aegra.json`` registers them;
they are not part of its package), written here from what the tests ask of each. The model is
langchain's scripted fake chat model (streaming word by word), so no remote model is called.

- ``agent``: a ReAct agent (model, then tools while the model calls them) with a context schema
  (``model``, ``system_prompt``), which a run's ``context`` fills and whose defaults apply without one.
  Asked for something long or slow, it writes a long answer at a hosted model's pace (the peer's cancel
  tests cancel such a run while it writes; a short answer would have ended before their cancel).
- ``agent_hitl``: the same agent asking a human before each tool call (agent-inbox responses:
  ``accept``, ``edit``, ``response``, ``ignore``).
- ``subgraph_agent``: the agent as a sub-graph of a parent graph.
- ``subgraph_hitl_agent``: a ``foo`` state whose sub-graph sets it, then asks a person for it.
- ``stress_test``: ``steps`` steps of ``delay`` seconds, both read from the last message (JSON), each
  reporting ``{"steps_completed": n, "status": ...}``; the last step raises when asked ``"fail": true``.
- ``stress_tool_agent``: the agent calling its tool for every request.
- ``factory``: the agent built per run by a factory reading the run's context.
- ``cron_example``: one ``Tick #n`` message per run.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    AnyMessage,
    BaseMessage,
    HumanMessage,
    ToolMessage,
)
from langchain_core.messages.tool import tool_call_chunk
from langchain_core.outputs import ChatGenerationChunk, ChatResult
from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.runtime import Runtime
from langgraph.types import Command, interrupt
from typing_extensions import TypedDict


class Messages(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]


@dataclass(kw_only=True)
class Context:
    """What a run's ``context`` may set; the defaults apply when it sets nothing."""

    model: str = "fake/scripted"
    """The model's name, recorded in each answer's ``response_metadata``."""
    system_prompt: str = "You are a helpful AI assistant."
    """Said before the conversation (its first words are echoed into the answer's metadata)."""


#: Words of a request that make the agent call its search tool.
_TOOL_WORDS = ("search", "weather", "look up", "find")

#: Words of a request asking for a long answer, and that answer: paragraphs written at a hosted model's
#: pace (about 30 s in all), so a run asked for one is still writing when a client cancels it.
_LONG_WORDS = ("long", "slowly")
_LONG_PARAGRAPHS = 10
_WORDS_PER_PARAGRAPH = 60
_PACE_S = 0.05


def _last_human(messages: list[AnyMessage]) -> str:
    for message in reversed(messages):
        if message.type == "human":
            return str(message.content)
    return ""


class _ScriptedModel(GenericFakeChatModel):
    """langchain's scripted model, whose stream also carries the message's tool calls: its own stream
    drops them, so a run streaming ``messages`` (as every thread-protocol run does) saw an answer
    without the call, and ``agent_hitl`` never reached its interrupt there. With ``pace_s``, each word
    takes that long to write, streamed or not."""

    pace_s: float = 0.0

    async def _astream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[ChatGenerationChunk]:
        sync_manager = run_manager.get_sync() if run_manager else None
        for chunk in self._stream(messages, stop=stop, run_manager=sync_manager, **kwargs):
            if chunk.text.strip():  # a word, not the space after it
                await asyncio.sleep(self.pace_s)
            yield chunk

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        result = self._generate(messages, stop=stop, **kwargs)
        await asyncio.sleep(self.pace_s * len(str(result.generations[0].message.content).split()))
        return result

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        scripted = (
            self._generate(messages, stop=stop, run_manager=run_manager, **kwargs).generations[0].message
        )
        assert isinstance(scripted, AIMessage)
        words = GenericFakeChatModel(messages=iter([AIMessage(scripted.content, id=scripted.id)]))
        for chunk in words._stream(messages, stop=stop, run_manager=run_manager, **kwargs):
            if scripted.tool_calls and isinstance(chunk.message, AIMessageChunk):
                chunk.message.chunk_position = None  # the calls come last
            yield chunk
        if scripted.tool_calls:
            calls = [
                tool_call_chunk(name=c["name"], args=json.dumps(c["args"]), id=c["id"], index=i)
                for i, c in enumerate(scripted.tool_calls)
            ]
            message = AIMessageChunk(
                content="", id=scripted.id, tool_call_chunks=calls, chunk_position="last"
            )
            chunk = ChatGenerationChunk(message=message)
            if run_manager:
                run_manager.on_llm_new_token("", chunk=chunk)
            yield chunk


async def _say(
    text: str, context: Context, tool_calls: list[Any] | None = None, pace_s: float = 0.0
) -> AIMessage:
    # Through the scripted model, so the words (and a tool call) stream as a model's would.
    model = _ScriptedModel(messages=iter([AIMessage(text, tool_calls=tool_calls or [])]), pace_s=pace_s)
    answer = await model.ainvoke(text)
    return AIMessage(
        content=answer.content,
        id=answer.id,
        # Streamed (a run streaming messages), the fake model's chunks carry the words only: its tool
        # calls are the script's.
        tool_calls=tool_calls or [],
        response_metadata={"model_name": context.model, "system_prompt": context.system_prompt[:40]},
    )


async def _answer(state: Messages, context: Context, wants_tool: bool) -> dict[str, Any]:
    last = state["messages"][-1]
    request = _last_human(state["messages"])
    if last.type == "human" and wants_tool:
        call = {"name": "search", "args": {"query": request}, "id": f"call_{uuid.uuid4().hex[:12]}"}
        return {"messages": [await _say("Let me look that up.", context, [call])]}
    if last.type == "tool":
        return {"messages": [await _say(f"Here is what I found: {last.content}", context)]}
    if any(word in request.lower() for word in _LONG_WORDS):
        return {"messages": [await _say(_long_answer(request), context, pace_s=_PACE_S)]}
    return {"messages": [await _say(f"You said: {request}. Here is a short answer.", context)]}


def _long_answer(request: str) -> str:
    words = " ".join(["more"] * (_WORDS_PER_PARAGRAPH - 3))
    paragraphs = [f"Paragraph {n}: {words}." for n in range(1, _LONG_PARAGRAPHS + 1)]
    return "\n\n".join([f"You said: {request}.", *paragraphs])


def _declined(messages: list[AnyMessage]) -> bool:
    """Whether a person answered a tool call in words instead of letting it run."""
    return any(m.type == "tool" and str(m.content).startswith("Tool call interrupted") for m in messages)


async def call_model(state: Messages, runtime: Runtime[Context]) -> dict[str, Any]:
    """Answer; or, when the user's last words ask to look something up (and no tool was declined),
    call ``search``."""
    request = _last_human(state["messages"]).lower()
    wants_tool = any(word in request for word in _TOOL_WORDS) and not _declined(state["messages"])
    return await _answer(state, runtime.context, wants_tool)


async def call_model_with_tool(state: Messages, runtime: Runtime[Context]) -> dict[str, Any]:
    """Call ``search`` for every new request, then answer from its result."""
    return await _answer(state, runtime.context, True)


def search(query: str) -> str:
    """The agent's tool: a deterministic result naming the query."""
    return f"Results for {query}: three well-rated pages."


def _latest_call(messages: list[AnyMessage]) -> AIMessage:
    """The model's latest message calling tools."""
    return next(m for m in reversed(messages) if isinstance(m, AIMessage) and m.tool_calls)


async def tools(state: Messages) -> dict[str, Any]:
    last = _latest_call(state["messages"])
    return {
        "messages": [
            ToolMessage(content=search(**call["args"]), name=call["name"], tool_call_id=call["id"])
            for call in last.tool_calls
        ]
    }


def _route(state: Messages) -> Literal["tools", "__end__"]:
    last = state["messages"][-1]
    return "tools" if isinstance(last, AIMessage) and last.tool_calls else END


def _agent_builder(model_node: Any = call_model) -> StateGraph[Any, Any, Any, Any]:
    builder: StateGraph[Any, Any, Any, Any] = StateGraph(Messages, context_schema=Context)
    builder.add_node("call_model", model_node)
    builder.add_node("tools", tools)
    builder.add_edge(START, "call_model")
    builder.add_conditional_edges("call_model", _route)
    builder.add_edge("tools", "call_model")
    return builder


async def human_review(state: Messages) -> Command[Literal["tools", "call_model", "__end__"]]:
    """Ask a human about each tool call (one agent-inbox request per call) and act on the answers."""
    # The model's call (a resume may have added messages after it, by its ``update``).
    last = _latest_call(state["messages"])
    requests = [
        {
            "action_request": {"action": call["name"], "args": call["args"]},
            "config": {"allow_ignore": True, "allow_respond": True, "allow_edit": True, "allow_accept": True},
            "description": f"Call {call['name']} with {json.dumps(call['args'])}?",
        }
        for call in last.tool_calls
    ]
    answers = interrupt(requests)
    answers = answers if isinstance(answers, list) else [answers]
    kinds = {answer.get("type") for answer in answers if isinstance(answer, dict)}
    calls = list(last.tool_calls)
    if "ignore" in kinds:
        cancelled = [
            ToolMessage(
                content="Tool call cancelled by human operator.", name=c["name"], tool_call_id=c["id"]
            )
            for c in calls
        ]
        return Command(goto=END, update={"messages": cancelled})
    if "response" in kinds:
        said = next(str(a.get("args")) for a in answers if a.get("type") == "response")
        held = [
            ToolMessage(
                content="Tool call interrupted for human input.", name=c["name"], tool_call_id=c["id"]
            )
            for c in calls
        ]
        return Command(goto="call_model", update={"messages": [*held, HumanMessage(said)]})
    if "edit" in kinds:
        edited = next(a.get("args") for a in answers if a.get("type") == "edit")
        args = edited.get("args", edited) if isinstance(edited, dict) else {"query": str(edited)}
        # Agent-inbox edits may key the new arguments by the tool's name.
        first = calls[0]
        args = args.get(first["name"], args) if isinstance(args, dict) else args
        calls = [{**first, "args": args}, *calls[1:]]
        message = AIMessage(content=last.content, tool_calls=calls, id=last.id)
        return Command(goto="tools", update={"messages": [message]})
    return Command(goto="tools")


def _route_hitl(state: Messages) -> Literal["human_review", "__end__"]:
    last = state["messages"][-1]
    return "human_review" if isinstance(last, AIMessage) and last.tool_calls else END


def _hitl_builder() -> StateGraph[Any, Any, Any, Any]:
    builder: StateGraph[Any, Any, Any, Any] = StateGraph(Messages, context_schema=Context)
    builder.add_node("call_model", call_model)
    builder.add_node("human_review", human_review)
    builder.add_node("tools", tools)
    builder.add_edge(START, "call_model")
    builder.add_conditional_edges("call_model", _route_hitl)
    builder.add_edge("tools", "call_model")
    return builder


def _parent(child: StateGraph[Any, Any, Any, Any]) -> StateGraph[Any, Any, Any, Any]:
    builder: StateGraph[Any, Any, Any, Any] = StateGraph(Messages, context_schema=Context)
    builder.add_node("agent", child.compile())
    builder.add_edge(START, "agent")
    builder.add_edge("agent", END)
    return builder


class Stress(TypedDict, total=False):
    messages: Annotated[list[AnyMessage], add_messages]
    step_count: int
    steps: int
    delay: float
    fail: bool


async def _plan(state: Stress) -> dict[str, Any]:
    try:
        asked = json.loads(_last_human(state["messages"]) or "{}")
    except json.JSONDecodeError:
        asked = {}
    return {
        "step_count": 0,
        "steps": int(asked.get("steps", 1)),
        "delay": float(asked.get("delay", 0)),
        "fail": bool(asked.get("fail", False)),
    }


async def _step(state: Stress) -> dict[str, Any]:
    await asyncio.sleep(state.get("delay", 0))
    done = state.get("step_count", 0) + 1
    if state.get("fail") and done == state.get("steps", 1):
        raise RuntimeError(f"stress_test failed at step {done}, as asked")
    status = "completed" if done >= state.get("steps", 1) else "running"
    report = json.dumps({"steps_completed": done, "status": status})
    return {"step_count": done, "messages": [AIMessage(report)]}


def _more(state: Stress) -> Literal["step", "__end__"]:
    return "step" if state.get("step_count", 0) < state.get("steps", 1) else END


class Ticks(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]


async def _tick(state: Ticks) -> dict[str, Any]:
    done = sum(1 for m in state.get("messages", []) if str(m.content).startswith("Tick #"))
    return {"messages": [AIMessage(f"Tick #{done + 1}")]}


def make_agent(config: RunnableConfig) -> StateGraph[Any, Any, Any, Any]:
    """``agent``: the ReAct agent with its context schema."""
    return _agent_builder()


def make_agent_hitl(config: RunnableConfig) -> StateGraph[Any, Any, Any, Any]:
    """``agent_hitl``: the agent asking before each tool call."""
    return _hitl_builder()


def make_subgraph_agent(config: RunnableConfig) -> StateGraph[Any, Any, Any, Any]:
    """``subgraph_agent``: the agent as a sub-graph."""
    return _parent(_agent_builder())


class Foo(TypedDict, total=False):
    foo: str


def _set_foo(state: Foo) -> dict[str, Any]:
    return {"foo": "Initial subgraph value."}


def _ask_foo(state: Foo) -> dict[str, Any]:
    return {"foo": str(interrupt({"question": "Provide a new value for foo", "foo": state.get("foo")}))}


def make_subgraph_hitl_agent(config: RunnableConfig) -> StateGraph[Any, Any, Any, Any]:
    """``subgraph_hitl_agent``: a ``foo`` state whose sub-graph sets it, then asks a person for it."""
    child: StateGraph[Any, Any, Any, Any] = StateGraph(Foo)
    child.add_node("set_foo", _set_foo)
    child.add_node("ask_foo", _ask_foo)
    child.add_edge(START, "set_foo")
    child.add_edge("set_foo", "ask_foo")
    child.add_edge("ask_foo", END)
    builder: StateGraph[Any, Any, Any, Any] = StateGraph(Foo)
    builder.add_node("subgraph", child.compile())
    builder.add_edge(START, "subgraph")
    builder.add_edge("subgraph", END)
    return builder


def make_stress_test(config: RunnableConfig) -> StateGraph[Any, Any, Any, Any]:
    """``stress_test``: ``steps`` steps of ``delay`` seconds."""
    builder: StateGraph[Any, Any, Any, Any] = StateGraph(Stress)
    builder.add_node("plan", _plan)
    builder.add_node("step", _step)
    builder.add_edge(START, "plan")
    builder.add_conditional_edges("plan", _more)
    builder.add_conditional_edges("step", _more)
    return builder


def make_stress_tool_agent(config: RunnableConfig) -> StateGraph[Any, Any, Any, Any]:
    """``stress_tool_agent``: the agent calling its tool for every request."""
    return _agent_builder(call_model_with_tool)


def make_factory(config: RunnableConfig) -> StateGraph[Any, Any, Any, Any]:
    """``factory``: the agent, built per run."""
    return _agent_builder()


def make_cron_example(config: RunnableConfig) -> StateGraph[Any, Any, Any, Any]:
    """``cron_example``: a tick per run."""
    builder: StateGraph[Any, Any, Any, Any] = StateGraph(Ticks)
    builder.add_node("tick", _tick)
    builder.add_edge(START, "tick")
    builder.add_edge("tick", END)
    return builder


#: ``MASTER_AGENT_GRAPHS`` items registering them.
GRAPHS = tuple(
    f"{name}=tests.peer.aegra.graphs:make_{name}"
    for name in (
        "agent",
        "agent_hitl",
        "subgraph_agent",
        "subgraph_hitl_agent",
        "stress_test",
        "stress_tool_agent",
        "factory",
        "cron_example",
    )
)
