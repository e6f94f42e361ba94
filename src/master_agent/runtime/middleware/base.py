"""The shape every loop middleware has: langchain 1.x ``AgentMiddleware``'s hooks, run in-process by
our loop's own nodes (``runtime.core``) instead of as graph nodes of their own.

Hooks, in the order they run in one flow (each is optional; the base class does nothing):

``before_agent(state, config, update)``
    The flow's first step (the master loop's ``recall`` node): adds to ``update``, the step's state
    update, which later middleware see.
``before_model(state, update)``
    Start-of-turn bookkeeping, before the prompt is built (also before the planner's call).
``wrap_model_call(request, handler)``
    Around one model turn: may change the request (the model bound, the tools) or answer without
    the model (the opening calls of ``parallel_research``).
``after_model(state, calls)``
    The turn's calls, before each becomes its own ``Send`` task: may mark calls that must not run.
``wrap_tool_call(request, handler)``
    Around one tool or sub-agent call, inside its own task: may refuse it, ask the user first, retry
    it, or read its result.
``after_agent(state, config)``
    The ``finalize`` node: the envelope and the termination report.

Why hooks run inside our nodes rather than as nodes: a node per hook adds supersteps per turn, and the
recursion limit each loop is given (``2 * max_iterations + overhead``, ``runtime.loop``) would then
depend on how many middleware an agent has (``docs/architecture.md``).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from langchain_core.messages import AIMessage
from langchain_core.runnables import Runnable, RunnableConfig

from master_agent.runtime.state import ContextBox, MasterAgentState, StepRecord

CallStatus = Literal["success", "partial", "error"]
CallKind = Literal["tool", "sub_agent", "unknown"]


@dataclass(kw_only=True)
class CallOutcome:
    """What one call left: its tool message, and what it adds to the loop's state."""

    status: CallStatus
    """The call's status (a preview is ``partial``)."""
    content: str
    """The tool message's text the model reads."""
    result: Any = None
    """The tool's raw result (a dict, or an error text) before it became ``content``."""
    error_type: str | None = None
    """The failure class of a failed call (``runtime.recovery``), if it named one."""
    findings: dict[str, Any] = field(default_factory=dict)
    """Values the call found (merged into the state's ``findings``)."""
    confidences: dict[str, float] = field(default_factory=dict)
    """The confidence the call reported, by call id."""
    blockers: list[str] = field(default_factory=list)
    """What stands in the way, for the context box."""
    notes: list[str] = field(default_factory=list)
    """Decisions taken on the way (the context box's notes)."""
    children: list[StepRecord] = field(default_factory=list)
    """A sub-agent's own steps."""
    handoff: dict[str, Any] | None = None
    """What ends the flow with the user (a preview, a question, a failure), if anything."""


@dataclass(kw_only=True)
class ToolCallRequest:
    """One call about to run in its own task."""

    name: str
    """The tool or sub-agent called."""
    args: dict[str, Any]
    """Its arguments (a middleware may change them: an approved draft)."""
    call_id: str
    """The model's id of the call."""
    config: RunnableConfig
    """The task's config (``thread_id`` for proposals)."""
    kind: CallKind = "tool"
    """A plain tool, a sub-agent, or a name this agent does not have."""
    approved: bool = False
    """The user approved a medium-risk change with the answer that completed it."""
    over_budget: str | None = None
    """Why the call is past a budget (set by ``after_model``); it answers with the refusal."""
    needs: dict[str, Any] | None = None
    """The other write of its request this call reports or needs, and how it stands (set by
    ``after_model``, ``middleware.claims``)."""
    covers: list[str] = field(default_factory=list)
    """The request's other changes an approval of this call's draft also approves, said in the
    draft (set by ``after_model``, ``middleware.claims``: the mail that will report this change)."""
    reports_approved: bool = False
    """It reports a change whose draft named it and that the user approved ("Approving it also
    approves: then send an email to team ..."): that approval is this call's, whatever its risk (set
    by ``middleware.claims`` once the change is confirmed)."""


def tool_outcome(name: str, call_id: str, status: CallStatus, result: Any) -> CallOutcome:
    """A plain tool's result as an outcome: a dict's values are findings (and its ``confidence`` the
    call's), a failure is a blocker naming its error."""
    content = result if isinstance(result, str) else json.dumps(result, default=str)
    outcome = CallOutcome(status=status, content=content, result=result)
    if status == "success" and isinstance(result, dict):
        outcome.findings = {name: result, **result}
        if isinstance(result.get("confidence"), int | float):
            outcome.confidences[call_id or name] = float(result["confidence"])
    elif status == "error" and isinstance(result, dict) and result.get("error_type"):
        outcome.error_type = str(result["error_type"])
        outcome.blockers = [f"{name}: {result['error']}"]
    elif status == "error":
        outcome.blockers = [f"{name}: {result}"]
    return outcome


ToolHandler = Callable[[ToolCallRequest], Awaitable[CallOutcome]]


@dataclass(kw_only=True)
class ModelRequest:
    """One model turn about to happen."""

    state: MasterAgentState
    """The state the prompt is built from (progress and confidence refreshed)."""
    box: ContextBox
    """The context box of this turn."""
    model: Runnable[Any, Any]
    """The model bound to the tools offered this turn."""
    lean_tools: tuple[Runnable[Any, Any], int] | None
    """The model bound to lean tool schemas and their tokens: the last resort of a prompt over budget."""
    short_path: bool = False
    """Research is skipped this turn: what it would find is already known."""


@dataclass(frozen=True, kw_only=True)
class ModelResponse:
    """What a model turn gave: the reply (or why the call failed), its tokens and model calls made."""

    reply: AIMessage | str
    tokens: int = 0
    model_calls: int = 1


ModelHandler = Callable[[ModelRequest], Awaitable[ModelResponse]]


class LoopMiddleware:
    """One cross-cutting concern of the agent loop. Subclasses override the hooks they need and name
    the state keys they read or write in ``state_keys``."""

    state_keys: ClassVar[tuple[str, ...]] = ()
    """The ``MasterAgentState`` keys this middleware reads or writes."""

    @property
    def name(self) -> str:
        return type(self).__name__

    async def before_agent(
        self, state: MasterAgentState, config: RunnableConfig, update: dict[str, Any]
    ) -> None:
        return None

    def before_model(self, state: MasterAgentState, update: dict[str, Any]) -> None:
        return None

    async def wrap_model_call(self, request: ModelRequest, handler: ModelHandler) -> ModelResponse:
        return await handler(request)

    def after_model(self, state: MasterAgentState, calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return calls

    async def wrap_tool_call(self, request: ToolCallRequest, handler: ToolHandler) -> CallOutcome:
        return await handler(request)

    async def after_agent(self, state: MasterAgentState, config: RunnableConfig) -> dict[str, Any] | None:
        return None


def chain_tool_calls(middleware: list[LoopMiddleware], inner: ToolHandler) -> ToolHandler:
    """``inner`` wrapped by each middleware's ``wrap_tool_call``, the first the outermost."""
    handler = inner
    for layer in reversed(middleware):
        handler = _wrap_tool(layer, handler)
    return handler


def chain_model_calls(middleware: list[LoopMiddleware], inner: ModelHandler) -> ModelHandler:
    """``inner`` wrapped by each middleware's ``wrap_model_call``, the first the outermost."""
    handler = inner
    for layer in reversed(middleware):
        handler = _wrap_model(layer, handler)
    return handler


def _wrap_tool(layer: LoopMiddleware, handler: ToolHandler) -> ToolHandler:
    async def wrapped(request: ToolCallRequest) -> CallOutcome:
        return await layer.wrap_tool_call(request, handler)

    return wrapped


def _wrap_model(layer: LoopMiddleware, handler: ModelHandler) -> ModelHandler:
    async def wrapped(request: ModelRequest) -> ModelResponse:
        return await layer.wrap_model_call(request, handler)

    return wrapped
