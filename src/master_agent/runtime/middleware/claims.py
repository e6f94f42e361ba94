"""A write that reports or depends on another write of the same request runs only after that write is
confirmed by its provider, and says what the provider holds.

A request of several steps lists one action record per change in its context (``context["actions"]``,
each ``{"requested", "done", ...}``); a step whose record ``tells`` the index of an earlier one states
that change to someone ("move my 1:1 with Maria to Friday and tell her"), one whose record comes
``after`` an earlier one needs it done ("book the call and email her the agenda"). A tool names the
action it performs in its metadata (``performs``: the ``requested`` of the action record its result
carries), so the runtime matches calls to steps without knowing any pack.

Before each turn's calls run (``after_model``), each dependent call is matched with the state of the
write it needs in this flow's results:

- confirmed (its action record says done: read back from the server): the call runs, and a call that
  reports it is rewritten by the tool's own ``reports_of`` hook ((args, confirmed record) -> args) so
  what it says is the server's values (the event's real new time, its uid). The change's own draft
  said it would be reported (``covers``), so its approval approves the report, one past the high-risk
  line too (a mail to the whole team: its draft said so);
- in the same turn, or not attempted yet: the call waits (answered ``skipped:``, so it is made again
  after), at most ``MAX_WAITS`` turns for a write no call attempts;
- failed, refused or declined: the call does not run; its answer is an action record, not done, saying
  which change was not done and why, so the reply says so and verification never reports it done.

Why here, once: drafts, previews and approvals (``risk``) come after this layer, so the user never
approves words the server may contradict, and a mail never leaves before the change it reports exists.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from langchain_core.messages import ToolMessage
from langchain_core.tools import BaseTool
from pydantic import ValidationError

from master_agent.errors import ToolFailure, ToolInputError
from master_agent.runtime.middleware.base import CallOutcome, LoopMiddleware, ToolCallRequest, ToolHandler
from master_agent.runtime.state import MasterAgentState
from master_agent.runtime.verification import confirmed_actions

#: The tool metadata key naming the action a tool performs (its action record's ``requested``).
PERFORMS = "performs"
#: The tool metadata key of the hook that states a confirmed change in a call's arguments.
REPORTS_OF = "reports_of"
#: The opening of the answer of a call held back until the write it needs is confirmed.
WAITING = "skipped: waits for"
#: Turns a dependent call waits for a write that no call of the flow has attempted.
MAX_WAITS = 2

Link = Literal["tells", "after"]
Standing = Literal["confirmed", "waiting", "failed"]


@dataclass(frozen=True)
class Needed:
    """The write a call needs, as this flow's results leave it."""

    requested: str
    """The action the call needs (``"move an event"``)."""
    link: Link
    """``tells``: the call reports it; ``after``: the call needs it done."""
    standing: Standing
    record: dict[str, Any]
    """Its confirmed action record (the server's values), or ``{"why": ...}``."""
    own: str
    """The call's own action (``"send an email"``)."""

    def as_call_key(self) -> dict[str, Any]:
        return {
            "requested": self.requested,
            "link": self.link,
            "standing": self.standing,
            "record": self.record,
            "own": self.own,
        }


def _content(message: ToolMessage) -> str:
    return message.content if isinstance(message.content, str) else json.dumps(message.content)


def _reason(text: str) -> str:
    """A failed call's answer as a reason: its first sentence, without the runtime's prefix."""
    first = text.split(". ", 1)[0].strip().rstrip(".")
    for prefix in ("error: ", "declined: "):
        first = first.removeprefix(prefix)
    return first[:300]


def standing_of(
    requested: str, tools: Sequence[str], messages: Sequence[Any], in_turn: bool, waits: int
) -> tuple[Standing, dict[str, Any]]:
    """How the write ``requested`` (performed by ``tools``) stands in a flow's tool messages: its last
    answer decides; a call answered ``skipped:`` never ran."""
    standing: tuple[Standing, dict[str, Any]] | None = None
    for message in messages:
        if not isinstance(message, ToolMessage) or message.name not in tools:
            continue
        text = _content(message)
        if text.startswith("skipped:"):
            continue
        records = [r for r in confirmed_actions([text]) if r.get("requested") == requested]
        if records:
            record = records[-1]
            done = bool(record.get("done"))
            standing = ("confirmed", record) if done else ("failed", {"why": str(record.get("why") or "")})
        elif message.status == "error":
            standing = ("failed", {"why": _reason(text)})
        else:
            standing = None  # answered without a record (a preview waiting): not done yet
    if standing is not None:
        return standing
    if in_turn or waits < MAX_WAITS:
        return "waiting", {}
    return "failed", {"why": "no call made it in this request"}


@dataclass(kw_only=True)
class ClaimsMiddleware(LoopMiddleware):
    """Holds each write that reports or needs another write of its request until that one is confirmed."""

    state_keys: ClassVar[tuple[str, ...]] = ("context", "messages")

    tools: dict[str, BaseTool]
    """The agent's plain tools (their ``performs`` and ``reports_of`` metadata)."""

    def performs(self, name: str) -> str | None:
        tool = self.tools.get(name)
        performed = (tool.metadata or {}).get(PERFORMS) if tool is not None else None
        return str(performed) if performed else None

    def after_model(self, state: MasterAgentState, calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
        steps = (state.get("context") or {}).get("actions")
        if not isinstance(steps, list) or not steps:
            return calls
        requested = [step.get("requested") if isinstance(step, dict) else None for step in steps]
        in_turn = {self.performs(str(call.get("name"))) for call in calls}
        messages = state.get("messages") or []
        checked = []
        for call in calls:
            name = str(call.get("name"))
            own = self.performs(name)
            covers = self.reports_of(steps, requested, own)
            if covers:
                call = {**call, "covers": covers}
            needed = self.needed(steps, requested, own)
            if needed is None or own is None:
                checked.append(call)
                continue
            link, wanted = needed
            doers = [tool for tool in self.tools if self.performs(tool) == wanted]
            waits = sum(
                1
                for m in messages
                if isinstance(m, ToolMessage) and m.name == name and _content(m).startswith(WAITING)
            )
            standing, record = standing_of(wanted, doers, messages, wanted in in_turn, waits)
            found = Needed(requested=wanted, link=link, standing=standing, record=record, own=own)
            checked.append({**call, "needs": found.as_call_key()})
        return checked

    @staticmethod
    def reports_of(steps: list[Any], requested: list[Any], own: str | None) -> list[str]:
        """The later steps that report the step of action ``own``, as its draft says them: approving
        the change approves its report, sent only once the change is confirmed."""
        if own is None or own not in requested:
            return []
        index = requested.index(own)
        return [
            f"then {step.get('requested')}"
            + (f" to {step['to']}" if step.get("to") else "")
            + ", stating this change as the server holds it, once it is confirmed"
            for step in steps
            if isinstance(step, dict) and step.get("tells") == index and step.get("requested") != own
        ]

    @staticmethod
    def needed(steps: list[Any], requested: list[Any], own: str | None) -> tuple[Link, str] | None:
        """The link and the action a step of action ``own`` needs, if it needs one."""
        if own is None or own not in requested:
            return None
        step = steps[requested.index(own)]
        for link in ("tells", "after"):
            index = step.get(link)
            if isinstance(index, int) and not isinstance(index, bool) and 0 <= index < len(steps):
                wanted = requested[index]
                if isinstance(wanted, str) and wanted != own:
                    return link, wanted
        return None

    async def wrap_tool_call(self, request: ToolCallRequest, handler: ToolHandler) -> CallOutcome:
        needs = request.needs
        if request.kind != "tool" or not needs:
            return await handler(request)
        wanted, own, record = str(needs["requested"]), str(needs["own"]), dict(needs.get("record") or {})
        verb = "reports" if needs.get("link") == "tells" else "needs"
        if needs.get("standing") == "waiting":
            return CallOutcome(
                status="partial",
                content=f"{WAITING} {wanted!r} to be confirmed by its provider (this call {verb} it); "
                f"call {request.name} again once it is done.",
                notes=[f"{request.name}: held until {wanted!r} is confirmed ({verb} it)"],
            )
        if needs.get("standing") == "failed":
            why = f"not done because it {verb} '{wanted}', which was not done ({record.get('why') or 'no confirmation'})"
            action = {"requested": own, "done": False, "why": why}
            return CallOutcome(
                status="error",
                content=json.dumps({"error": f"{request.name} not run: {why}", "action": action}),
                result={"action": action},
                blockers=[f"{request.name}: {why}"],
                notes=[f"{request.name}: not run, {wanted!r} was not done"],
            )
        if needs.get("link") == "tells":
            request.args = await self.reported(request.name, request.args, record)
            # The change's draft said it would be reported (``covers``): approving it approved this,
            # a mail to the whole team too ("ok go" to "Approving it also approves: then send an email
            # to team"); a second preview would ask again what was answered.
            request.approved = True
            request.reports_approved = True
        outcome = await handler(request)
        outcome.notes.insert(
            0, f"{request.name}: ran after {wanted!r} was confirmed ({record.get('confirmed_by')})"
        )
        return outcome

    async def reported(self, name: str, args: dict[str, Any], record: dict[str, Any]) -> dict[str, Any]:
        """The call's arguments stating the confirmed change as the server holds it (the tool's own
        ``reports_of`` hook), or as they were when it has none or the hook cannot take them."""
        hook = (self.tools[name].metadata or {}).get(REPORTS_OF)
        if not callable(hook):
            return args
        try:
            stated = hook(dict(args), record)
            if asyncio.iscoroutine(stated):
                stated = await stated
        except (ToolInputError, ToolFailure, ValidationError):
            return args
        return dict(stated) if isinstance(stated, dict) else args
