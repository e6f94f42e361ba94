"""The routing decision (seed 003 "Routing Decision Tree"), with the seed's constants as settings."""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from master_agent.routing.discovery import AgentCard
from master_agent.routing.models import Candidate, Clarification, IntentAnalysis, RouteTarget
from master_agent.settings import Settings

OVERRIDE = re.compile(r"(?<![\w@])@([A-Za-z][\w-]*)")
#: How a missing entity is asked for.
ENTITY_QUESTIONS = {"store_id": "Which store is this about (e.g. Store 5)?"}
CREATE_OPTION = "Create a new agent for this"


@dataclass(frozen=True)
class Outcome:
    """What the decision tree chose, before it is recorded."""

    target: RouteTarget
    reason: str
    clarification: Clarification | None = None
    best_guess: bool = False


def override_name(text: str) -> str | None:
    match = OVERRIDE.search(text)
    return match.group(1) if match else None


def without_override(text: str) -> str:
    return re.sub(r"\s+", " ", OVERRIDE.sub(" ", text)).strip()


def closest_agents(name: str, cards: Sequence[AgentCard], limit: int = 4) -> list[str]:
    names = [card.name for card in cards if card.addressable]
    close = difflib.get_close_matches(name, names, n=limit, cutoff=0.0)
    return close[:limit]


def decide_route(
    intent: IntentAnalysis,
    candidates: Sequence[Candidate],
    cards: Sequence[AgentCard],
    settings: Settings,
    *,
    rounds: int,
    override: str | None,
    known: dict[str, Any],
) -> Outcome:
    """``known``: the message's entities with the tenant's defaults."""
    last_round = rounds >= settings.clarify_rounds
    by_name = {card.name: card for card in cards if card.addressable}
    top = candidates[0] if candidates else None

    def ask(clarification: Clarification, reason: str, guess: RouteTarget, guess_reason: str) -> Outcome:
        if last_round:
            return Outcome(
                guess, f"best guess after {rounds} clarification rounds: {guess_reason}", best_guess=True
            )
        return Outcome(RouteTarget(kind="clarification"), reason, clarification)

    def to_agent(name: str, reason: str) -> Outcome:
        card = by_name[name]
        # A required ``<thing>_id`` is given by the message's ``<thing>s`` too: "every store" (``stores:
        # "all"``, a chain-wide goal) or several named stores asks about no one store.
        missing = [
            entity
            for entity in card.required_entities
            if entity not in known and not known.get(f"{entity.removesuffix('_id')}s")
        ]
        if missing:
            entity = missing[0]
            question = ENTITY_QUESTIONS.get(entity, f"What is the {entity.removesuffix('_id')} for this?")
            return ask(
                Clarification(kind="entity", question=question, entity=entity, round=rounds + 1),
                f"{name} needs {entity}, which the message does not give",
                RouteTarget(kind="agent", name=name),
                f"{name} without {entity}",
            )
        return Outcome(RouteTarget(kind="agent", name=name), reason)

    if override is not None:
        if override in by_name:
            return to_agent(override, f"@{override} names the agent")
        part = next((card for card in cards if card.name == override), None)
        if part is not None:
            options = [card.name for card in cards if card.runnable][:4]
            return ask(
                Clarification(
                    kind="multiple_choice",
                    question=f"{override} works inside another agent: it needs results a chat message "
                    "does not carry. Shall one of these agents do it?",
                    options=options,
                    round=rounds + 1,
                ),
                f"@{override} is a part of another agent and takes no chat message",
                RouteTarget(kind="agent", name=options[0]) if options else RouteTarget(kind="out_of_scope"),
                f"{options[0] if options else 'nothing'} instead of the part {override}",
            )
        options = closest_agents(override, cards)
        return ask(
            Clarification(
                kind="multiple_choice",
                question=f"There is no agent named {override!r}. Did you mean one of these?",
                options=options,
                round=rounds + 1,
            ),
            f"@{override} names no agent of this tenant",
            RouteTarget(kind="out_of_scope"),
            f"no agent named {override!r}",
        )
    if intent.action in ("CREATE", "UPDATE"):
        # Unsure, and an agent is likely enough to be asked for: which of the two is meant.
        if (
            intent.confidence < settings.clarify_below
            and top is not None
            and top.score >= settings.route_score
        ):
            return ask(
                Clarification(
                    kind="create_or_execute",
                    question=f"Do you want a new agent for this, or should {top.name} do it now?",
                    options=[CREATE_OPTION, f"Run {top.name} now"],
                    round=rounds + 1,
                ),
                f"{intent.action} at confidence {intent.confidence:.2f} and {top.name} could do it",
                RouteTarget(kind="builder"),
                "the agent builder",
            )
        return Outcome(RouteTarget(kind="builder"), f"{intent.action}: the agent builder handles agents")
    if intent.action == "QUERY":
        return Outcome(
            RouteTarget(kind="query", name=intent.query_kind or "other"), f"QUERY ({intent.query_kind})"
        )
    if intent.action == "EXECUTE" and top is None:
        # However sure the intent, nothing here can do it: say so rather than ask.
        return Outcome(RouteTarget(kind="out_of_scope"), "no agent of this tenant has the skills for it")
    # An unsure EXECUTE whose agent discovery is sure of is that agent's work ("staff leaderboard,
    # store 4, october"): asking is for a message neither the intent nor the agent is clear of.
    sure_agent = intent.action == "EXECUTE" and top is not None and top.score >= settings.route_score
    if intent.action == "AMBIGUOUS" or (intent.confidence < settings.clarify_below and not sure_agent):
        options = [candidate.name for candidate in candidates[:3]]
        question = "What would you like me to do? Say the goal, the agent (@name) or the question."
        if options:
            question = (
                "What would you like me to do? For example, one of your agents could take it: "
                + ", ".join(options)
            )
        guess = RouteTarget(kind="agent", name=top.name) if top else RouteTarget(kind="out_of_scope")
        return ask(
            Clarification(kind="open_ended", question=question, options=options, round=rounds + 1),
            intent.ambiguity_reason or f"intent unclear (confidence {intent.confidence:.2f})",
            guess,
            f"{guess.name or 'out of scope'}",
        )
    if top is None:
        return Outcome(RouteTarget(kind="out_of_scope"), "no agent of this tenant serves it")
    if top.score >= settings.route_score:
        return to_agent(top.name, f"score {top.score:.2f} at confidence {intent.confidence:.2f}")
    similar = [c for c in candidates if top.score - c.score <= settings.similar_score]
    if len(similar) > 1:
        return ask(
            Clarification(
                kind="multiple_choice",
                question="Several of your agents could do this. Which one?",
                options=[c.name for c in similar[:4]],
                round=rounds + 1,
            ),
            f"{len(similar)} agents score within {settings.similar_score} of the best",
            RouteTarget(kind="agent", name=top.name),
            f"{top.name}, the best score",
        )
    if top.score < settings.clarify_below and intent.confidence < settings.route_confidence:
        # Neither the agent likely nor the request sure ("print the board pack, 12 copies" to the
        # assistant at 0.47): two weak readings make no route; the request is no agent's here.
        return Outcome(
            RouteTarget(kind="out_of_scope"),
            f"no agent likely enough ({top.name} {top.score:.2f}) at confidence {intent.confidence:.2f}",
        )
    return to_agent(top.name, f"best match ({top.score:.2f}) at confidence {intent.confidence:.2f}")
