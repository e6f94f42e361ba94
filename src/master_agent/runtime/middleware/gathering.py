"""Critical information a request lacks (a pack's ``missing_information`` and ``goal_entities``) is
asked of the user (``interrupt()``, kind ``clarification``, reason ``missing_information``) before the
master loop's first turn; after ``GATHER_ROUNDS`` answers that do not give it, the flow ends with the
question. Answering re-runs the flow's first step, whose reads are repeatable; a flow answering a
proposal (that step's only write) carries its call's arguments and is never asked."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, ClassVar

from langchain_core.runnables import RunnableConfig
from langgraph.types import interrupt

from master_agent.capabilities import MissingInformation
from master_agent.runtime.context import extract_entities
from master_agent.runtime.middleware.base import LoopMiddleware
from master_agent.runtime.proposals import approves
from master_agent.runtime.recovery import answer_text
from master_agent.runtime.state import MasterAgentState

#: Questions about missing information in one flow before it ends with the question instead.
GATHER_ROUNDS = 2


@dataclass(frozen=True, kw_only=True)
class Gathering:
    """How the master loop asks the user for critical information a request lacks."""

    missing: Callable[[dict[str, Any]], MissingInformation | None]
    """The flow's values -> what it cannot go on without, or None."""
    read: Callable[[str], Awaitable[dict[str, Any]]]
    """An answer -> the values it states."""


@dataclass(kw_only=True)
class GatheringMiddleware(LoopMiddleware):
    """Asks for what the flow cannot go on without, or ends it with the question."""

    state_keys: ClassVar[tuple[str, ...]] = ("context", "notes", "handoff")

    agent: str
    """The agent asking (named in the question)."""
    gathering: Gathering
    """What is missing, and how an answer is read."""

    async def before_agent(
        self, state: MasterAgentState, config: RunnableConfig, update: dict[str, Any]
    ) -> None:
        goal = str(state.get("goal", ""))
        context = dict(update.get("context", state.get("context") or {}))
        if context.get("proposal"):
            return
        notes: list[str] = []
        in_goal = extract_entities(goal)  # what the goal's own words settle ("Store 5")
        for _ in range(GATHER_ROUNDS):
            missing = self.gathering.missing({**in_goal, **context})
            if missing is None:
                break
            answer = answer_text(
                interrupt(
                    {
                        "kind": "clarification",
                        "reason": "missing_information",
                        "question": missing.question,
                        "fields": missing.fields,
                        "options": [],
                        "agent": self.agent,
                    }
                )
            )
            stated = await self.gathering.read(answer)
            given = {
                key: value
                for key, value in stated.items()
                if value not in (None, "", []) and (key in missing.fields or key not in context)
            }
            if approves(answer):
                # "10:30 works, go ahead": the change is approved with its last missing value.
                given["draft_approved"] = True
            context.update(given)
            notes.append(
                f"asked the user for {', '.join(missing.fields)}: {answer!r} gave "
                + (", ".join(f"{key}={value}" for key, value in given.items()) or "nothing usable")
            )
        else:
            missing = self.gathering.missing({**in_goal, **context})
        if notes:
            update["context"] = context
            update["notes"] = [*update.get("notes", []), *notes]
        if missing is not None:
            update["handoff"] = {
                "kind": "question",
                "question": missing.question,
                "reason": "missing_information",
                "fields": missing.fields,
            }
