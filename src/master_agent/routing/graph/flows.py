"""The flows of a chat thread: the agent flow a new message cuts short, the suspended ones a message resumes
or drops, and what the thread waits on (a clarifying question, a preview)."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from typing import Any, Literal

from langchain_core.messages import HumanMessage

from master_agent.routing.graph.state import FrontDoorState
from master_agent.routing.models import SuspendedFlow


def _cut_short(state: FrontDoorState) -> dict[str, Any] | None:
    """The agent flow a new message cuts short (its run still working, or the flow waiting for the
    user's answer): a goal handed to an agent whose answer never came, as ``{goal, agent, entities,
    at}``."""
    routing = state.get("routing") or {}
    pending = state.get("pending")
    turns = state.get("chat_turns") or []
    if pending and routing.get("target", {}).get("kind") == "agent":
        if bool(turns) and turns[-1].get("at") == pending.get("at"):
            return None  # that flow finished
        goal = str(routing.get("goal") or pending.get("text") or "")
        return {
            "goal": goal,
            "agent": routing.get("target", {}).get("name"),
            "entities": dict(routing.get("entities") or {}),
            "at": str(pending.get("at") or ""),
        }
    if not pending and state.get("goal") and not state.get("termination"):
        return {
            "goal": str(state["goal"]),
            "agent": None,
            "entities": dict(state.get("context") or {}),
            "at": "",
        }
    return None


def _waiting_clarification(state: FrontDoorState) -> dict[str, Any] | None:
    """The clarifying question the thread still waits on (asked about the pending message, whose turn
    has not finished), or None."""
    routing = state.get("routing") or {}
    pending = state.get("pending") or {}
    turns = state.get("chat_turns") or []
    if routing.get("target", {}).get("kind") != "clarification" or not routing.get("clarification"):
        return None
    if not pending or (turns and turns[-1].get("at") == pending.get("at")):
        return None
    messages = state.get("messages") or []
    last = messages[-1] if messages else None
    if not isinstance(last, HumanMessage) or last.id == pending.get("id"):
        return None  # no new message since the question
    question: dict[str, Any] = routing["clarification"]
    return question


def _suspend_cut_short(state: FrontDoorState, now: str) -> list[dict[str, Any]]:
    """The thread's suspended flows with the one a new message cuts short added (it replaces an
    older suspension of the same goal)."""
    suspended = list(state.get("suspended") or [])
    cut = _cut_short(state)
    if cut is None or not cut["goal"]:
        return suspended
    flow = SuspendedFlow(
        flow_id=hashlib.sha1(f"{cut['goal']}|{cut['at']}".encode()).hexdigest()[:12],
        goal=cut["goal"],
        agent=cut["agent"],
        entities=cut["entities"],
        started_at=cut["at"] or now,
        suspended_at=now,
    )
    kept = [f for f in suspended if f.get("goal") != flow.goal]
    return [*kept, flow.model_dump(mode="json")][-MAX_SUSPENDED:]


#: Suspended flows a thread keeps (the oldest are forgotten first).
MAX_SUSPENDED = 5
_RESUME = re.compile(
    r"^\W*(?:ok(?:ay)?\W+|now\W+|so\W+|please\W+)*(?:let'?s\s+)?"
    r"(?:resume|continue(?:\s+with)?|go\s+back\s+to|get\s+back\s+to|back\s+to|carry\s+on\s+with|pick\s+up)\b",
    re.I,
)
_DROP = re.compile(
    r"^\W*(?:ok(?:ay)?\W+|please\W+)*(?:never\s*mind|forget(?:\s+about)?|drop|cancel|abandon|skip)\b", re.I
)
_FILLER = frozenset((
    "a", "an", "the", "my", "our", "your", "this", "that", "it", "its", "to", "of", "for", "with", "on",
    "at", "in", "about", "and", "or", "please", "task", "flow", "job", "request", "previous", "earlier",
    "last", "one",
))  # fmt: skip
_ARTICLES = frozenset(("the", "a", "an", "my", "our", "that", "this"))
_WORD = re.compile(r"[a-z0-9]+")


def _words(text: str) -> set[str]:
    return {word for word in _WORD.findall(text.lower()) if word not in _FILLER and len(word) > 1}


def flow_command(
    text: str, suspended: Sequence[SuspendedFlow], preview_waiting: bool
) -> tuple[Literal["resume", "drop"], SuspendedFlow, str] | None:
    """("resume" | "drop", the suspended flow, the rest of the message) when ``text`` resumes or drops
    one: it names words of its goal ("resume the board meeting on the 15th"), or names none and one is
    suspended ("continue", "never mind"; a bare "cancel" answers a waiting preview instead)."""
    if not suspended:
        return None
    command: Literal["resume", "drop"]
    found = _RESUME.match(text)
    command = "resume"
    if found is None:
        found, command = _DROP.match(text), "drop"
    if found is None:
        return None
    rest = text[found.end() :].strip(" .,:;!?")
    said = _words(rest)
    scored = [(len(said & _words(flow.goal)), index, flow) for index, flow in enumerate(suspended)]
    best = max(scored, key=lambda item: (item[0], item[1]))
    if best[0] == 0 and (said or (command == "drop" and preview_waiting)):
        return None  # it names something else, or a bare "cancel" answers the waiting preview
    flow = best[2]
    named = _words(flow.goal)
    if not said - named:
        return command, flow, ""
    # What the message adds after naming the task ("...the board meeting on 2026-12-16 at 3pm").
    words = rest.split()
    while words and words[0].lower().strip(",.:;") in named | _ARTICLES:
        words.pop(0)
    return command, flow, " ".join(words)


def _waiting_preview(state: FrontDoorState) -> bool:
    handoff = (state.get("envelope") or {}).get("handoff") or {}
    return handoff.get("kind") == "preview"
