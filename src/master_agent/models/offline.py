"""The offline planner: a deterministic chat model that drives the agent loop with real tool calls.

It reads only what a real model reads (the messages, the tagged ``<context_box>``, ``<output_schema>``
and ``<plan_request>`` blocks of the system prompt, the bound tool schemas) and follows one generic
policy, driven by the specs, never by a domain:

0. Asked for an execution plan (the ``ExecutionPlan`` tool is bound): see ``design_plan``.

1. Known values: the context box's input arguments (``data.context``) and goal entities
   (``entities``), then every tool result in order (an envelope's ``data``, a plain result's
   top-level keys, and the columns of a result's only row; later results override earlier ones).
2. A tool is *ready* when it has not been called yet and every required argument is known by name (a
   string argument named task/goal/question/problem/objective takes the goal text when not known).
   Optional arguments are passed when known and otherwise left to their defaults.
3. If any tools are ready, call all of them in declared order, in one turn (independent calls run in
   parallel). A tool is called at most once (a call answered as ``skipped:`` never ran and
   does not count).
4. Otherwise answer: one JSON object with every output-schema field found among the known values.
   ``confidence`` is left to the loop, which aggregates what the tools reported.
5. A tool whose description starts "Instead of <tool>" is a way around that tool's outage: it is
   ready only once a result of <tool> names it among its ``alternatives`` (the loop decided
   ``try_another_way``), as a model reading the description would use it.
6. Delegation (a harness's ``task`` tool: it takes ``description`` and ``subagent_type``): the system
   prompt's ``<delegation>`` block lists the sub-agents in order with the values each ``needs`` and
   ``accepts``. A sub-agent is ready when it has not been delegated to and everything it needs is
   known; the call's description is its purpose plus a ``<context_box>`` with the known values it
   accepts. Ready delegations join the turn's other ready calls.

The context box is read from the system prompt, or else from the first user message (a delegated
task carries its values there).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import AsyncIterator, Sequence
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.messages.tool import tool_call_chunk
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import Field

from master_agent.models.prompt_blocks import parse_tagged_json, render_tagged_json

GOAL_FIELDS = ("task", "goal", "question", "problem", "objective")
#: Name of the tool through which a model returns an execution plan (planner_first variant).
PLAN_TOOL_NAME = "ExecutionPlan"
#: The arguments of a delegation tool (deepagents' ``task``): what to do, and which sub-agent does it.
DELEGATION_ARGS = frozenset({"description", "subagent_type"})
#: Characters per streamed token piece (streaming only changes how the same answer is delivered).
STREAM_PIECE_CHARS = 24


def design_plan(request: dict[str, Any]) -> dict[str, Any]:
    """Rule 0 of the policy: when asked for an execution plan (``<plan_request>``: tools with the
    inputs they require or accept and the keys they provide, plus the keys already known), order the
    tools into a DAG: a tool becomes a step once its required inputs are known or provided by earlier
    steps, and it depends on the steps providing its inputs. Tools never runnable are left out."""
    known = set(request.get("known") or []) | set(GOAL_FIELDS)
    provider: dict[str, str] = {}
    steps: list[dict[str, Any]] = []
    remaining = list(request.get("tools") or [])
    while remaining:
        placed = False
        for tool in list(remaining):
            if not set(tool.get("required") or []) <= known | set(provider):
                continue
            inputs = [*(tool.get("required") or []), *(tool.get("optional") or [])]
            depends = sorted({provider[key] for key in inputs if key in provider and key not in known})
            step_id = f"s{len(steps) + 1}"
            steps.append({"id": step_id, "agent": tool["name"], "depends_on": depends})
            for key in tool.get("provides") or []:
                provider.setdefault(key, step_id)
            remaining.remove(tool)
            placed = True
        if not placed:
            break
    return {"steps": steps}


def _tool_function(tool: dict[str, Any]) -> dict[str, Any]:
    function: dict[str, Any] = tool.get("function", tool)
    return function


_INSTEAD_OF = re.compile(r"^Instead of (\w+)")


def known_values(messages: Sequence[BaseMessage]) -> tuple[dict[str, Any], set[str], set[str], str]:
    """Values the planner may use, the tools already called, the tools failed calls offered as
    ``alternatives``, and the goal text."""
    system = next((m for m in messages if isinstance(m, SystemMessage)), None)
    box = parse_tagged_json(str(system.content), "context_box") if system else None
    if box is None:
        first = next((m for m in messages if isinstance(m, HumanMessage)), None)
        box = parse_tagged_json(str(first.content), "context_box") if first else None
    known: dict[str, Any] = {}
    goal = ""
    if isinstance(box, dict):
        goal = str(box.get("goal", ""))
        known.update(box.get("entities") or {})
        known.update((box.get("data") or {}).get("context") or {})
    called: set[str] = set()
    offered: set[str] = set()
    for message in messages:
        if isinstance(message, AIMessage):
            called.update(call["name"] for call in message.tool_calls)
        if not isinstance(message, ToolMessage):
            continue
        if str(message.content).startswith("skipped:") and message.name:
            called.discard(message.name)  # never ran, so it may be called again
            continue
        try:
            result = json.loads(str(message.content))
        except json.JSONDecodeError:
            continue
        if not isinstance(result, dict):
            continue
        if {"status", "data"} <= result.keys():
            if result["status"] != "error" and isinstance(result["data"], dict):
                known.update(result["data"])
        else:
            offered.update(str(name) for name in result.pop("alternatives", None) or [])
            known.update(result)
            rows = result.get("rows")
            if isinstance(rows, list) and len(rows) == 1 and isinstance(rows[0], dict):
                known.update(rows[0])  # a one-row answer's columns are values in their own right
    known.pop("confidence", None)
    return known, called, offered, goal


def fill_arguments(parameters: dict[str, Any], known: dict[str, Any], goal: str) -> dict[str, Any] | None:
    """Arguments for one tool from known values, or None when a required one is missing."""
    properties: dict[str, Any] = parameters.get("properties") or {}
    required = set(parameters.get("required") or [])
    args: dict[str, Any] = {}
    for name, schema in properties.items():
        if name in known and known[name] is not None:
            args[name] = known[name]
        elif name in GOAL_FIELDS and goal and schema.get("type", "string") == "string":
            args[name] = goal
        elif name in required:
            return None
    return args


def _delegations(
    tool: str, plan: Any, messages: Sequence[BaseMessage], known: dict[str, Any], goal: str, turn: int
) -> list[dict[str, Any]]:
    """Rule 6: the calls of ``tool`` to the sub-agents of ``plan`` that are ready."""
    delegated = {
        str(call["args"].get("subagent_type"))
        for message in messages
        if isinstance(message, AIMessage)
        for call in message.tool_calls
        if call["name"] == tool
    }
    calls = []
    for agent in (plan or {}).get("agents") or [] if isinstance(plan, dict) else []:
        name = str(agent.get("name"))
        needs = [str(key) for key in agent.get("needs") or []]
        if name in delegated or not all(key in known and known[key] is not None for key in needs):
            continue
        accepted = {*needs, *(str(key) for key in agent.get("accepts") or [])}
        values = {key: known[key] for key in sorted(accepted) if key in known}
        box = render_tagged_json("context_box", {"goal": goal, "data": {"context": values}})
        args = {"description": f"{agent.get('description', name)}\n\n{box}", "subagent_type": name}
        calls.append(_tool_call(turn, tool, args))
    return calls


def _tool_call(turn: int, name: str, args: dict[str, Any]) -> dict[str, Any]:
    """A tool call whose id is the same every time the same turn makes it."""
    digest = hashlib.sha1(json.dumps([turn, name, args], sort_keys=True, default=str).encode())
    return {"name": name, "args": args, "id": f"call_{digest.hexdigest()[:16]}", "type": "tool_call"}


def plan_turn(messages: Sequence[BaseMessage], tools: Sequence[dict[str, Any]]) -> AIMessage:
    """One deterministic turn: the ready tool calls, or the final JSON answer."""
    system = next((m for m in messages if isinstance(m, SystemMessage)), None)
    if any(_tool_function(tool)["name"] == PLAN_TOOL_NAME for tool in tools) and system is not None:
        request = parse_tagged_json(str(system.content), "plan_request") or {}
        call = {"name": PLAN_TOOL_NAME, "args": design_plan(request), "id": "call_plan", "type": "tool_call"}
        return AIMessage(content="", tool_calls=[call])
    known, called, offered, goal = known_values(messages)
    turn = sum(1 for m in messages if isinstance(m, AIMessage))
    calls = []
    for tool in tools:
        function = _tool_function(tool)
        name = function["name"]
        if set((function.get("parameters") or {}).get("required") or []) >= DELEGATION_ARGS:
            plan = parse_tagged_json(str(system.content), "delegation") if system else None
            calls.extend(_delegations(name, plan, messages, known, goal, turn))
            continue
        if name in called:
            continue
        if _INSTEAD_OF.match(str(function.get("description") or "")) and name not in offered:
            continue
        args = fill_arguments(function.get("parameters") or {}, known, goal)
        if args is None:
            continue
        calls.append(_tool_call(turn, name, args))
    if calls:
        return AIMessage(content="", tool_calls=calls)
    schema = parse_tagged_json(str(system.content), "output_schema") if system else None
    fields = (schema or {}).get("properties") or {}
    answer = {name: known[name] for name in fields if name in known}
    return AIMessage(content=json.dumps(answer, sort_keys=True, default=str))


class OfflinePlanner(BaseChatModel):
    """Deterministic planner model (see module docstring) usable wherever a chat model is."""

    bound_tools: list[dict[str, Any]] = Field(default_factory=list)
    """OpenAI-format schemas of the tools bound with ``bind_tools``, in declared order."""

    @property
    def _llm_type(self) -> str:
        return "master-agent-offline-planner"

    def bind_tools(
        self,
        tools: Sequence[dict[str, Any] | type | Any | BaseTool],
        *,
        tool_choice: str | None = None,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, AIMessage]:
        schemas = [convert_to_openai_tool(tool) for tool in tools]
        return self.model_copy(update={"bound_tools": schemas})

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=plan_turn(messages, self.bound_tools))])

    async def _astream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[ChatGenerationChunk]:
        """The same turn as tokens: the answer in short pieces, tool calls in one final piece."""
        turn = plan_turn(messages, self.bound_tools)
        text = str(turn.content)
        for start in range(0, len(text), STREAM_PIECE_CHARS):
            piece = ChatGenerationChunk(
                message=AIMessageChunk(content=text[start : start + STREAM_PIECE_CHARS])
            )
            if run_manager is not None:
                await run_manager.on_llm_new_token(str(piece.message.content), chunk=piece)
            yield piece
        if turn.tool_calls:
            chunks = [
                tool_call_chunk(name=call["name"], args=json.dumps(call["args"]), id=call["id"], index=index)
                for index, call in enumerate(turn.tool_calls)
            ]
            yield ChatGenerationChunk(message=AIMessageChunk(content="", tool_call_chunks=chunks))

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        return self._generate(messages, stop, None, **kwargs)
