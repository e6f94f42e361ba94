"""The front door's routing decision: the ``route`` node (context, @override, intent, discovery, the decision
tree, follow-ups and suspended flows), ``clarify`` (the question, as an interrupt) and the edges out of them."""

from __future__ import annotations

import json
from typing import Any

from langchain_core.messages import AIMessage, HumanMessage
from langgraph.config import get_stream_writer
from langgraph.types import interrupt

from master_agent.models.chat import content_text
from master_agent.routing.context import recent_turns
from master_agent.routing.decision import Outcome
from master_agent.routing.graph.data_steps import EXECUTE
from master_agent.routing.graph.decide import DecisionSteps, read_answers
from master_agent.routing.graph.flows import _cut_short, _suspend_cut_short, _waiting_clarification
from master_agent.routing.graph.follow_ups import (
    CLOSES_THE_CONVERSATION,
    OPENING_WORDS,
    corrects_previous,
    is_closing,
    is_short,
)
from master_agent.routing.graph.state import FrontDoorState
from master_agent.routing.graph.systems import is_system_request
from master_agent.routing.intent import named_run
from master_agent.routing.models import RouteTarget, RoutingDecision
from master_agent.runtime.recovery import answers_question


class RouteNodes(DecisionSteps):
    """The nodes that decide where a message goes: ``route`` and ``clarify``, and the edges out of them."""

    # -- nodes -------------------------------------------------------------------------------

    def entry(self, state: FrontDoorState) -> str:
        messages = state.get("messages") or []
        last = messages[-1] if messages else None
        pending = state.get("pending") or {}
        if isinstance(last, HumanMessage) and last.id != pending.get("id"):
            return "route"
        return "solve" if state.get("goal") else "route"

    async def route(self, state: FrontDoorState) -> dict[str, Any]:
        update: dict[str, Any] = {"clarifying": False}
        pending = state.get("pending")
        clarifications = list(state.get("clarifications") or [])
        waiting = _waiting_clarification(state)
        last = next((m for m in reversed(state.get("messages") or []) if isinstance(m, HumanMessage)), None)
        if not state.get("clarifying") and waiting is not None and last is not None:
            # A new input on a thread waiting for a clarification (the LangGraph API's runs, not only
            # ``command.resume``) answers it, as on ``/chat/stream``, unless it changes direction.
            text = content_text(last.content)
            if answers_question(waiting, text):
                clarifications = [*clarifications, {"question": waiting, "answer": text}]
                update["clarifications"] = clarifications
                state = {**state, "clarifying": True}
        if not state.get("clarifying"):
            text = content_text(last.content) if last is not None else str(state.get("goal") or "")
            suspended = _suspend_cut_short(state, self.now())
            pending = {"id": last.id if last is not None else None, "text": text, "at": self.now()}
            clarifications = []
            update.update(pending=pending, clarifications=[], suspended=suspended)
            state = {**state, "suspended": suspended}
        assert pending is not None
        decision = await self.decide(str(pending["text"]), clarifications, state)
        taken = decision.resumes or (decision.target.name if decision.target.kind == "drop_flow" else None)
        if taken:
            update["suspended"] = [f for f in state.get("suspended") or [] if f["flow_id"] != taken]
        record = decision.model_dump(mode="json")
        get_stream_writer()({"event": "routing", "routing": record})
        update.update(routing=record, routing_trace=[record])
        return update

    async def decide(
        self, text: str, clarifications: list[dict[str, Any]], state: FrontDoorState
    ) -> RoutingDecision:
        """Context, @override, intent, discovery and the decision tree, with the answers so far (its steps
        are ``DecisionSteps``')."""
        turns = recent_turns(
            state.get("chat_turns") or [],
            self.evolution.clock.now(),
            self.settings.context_messages,
            self.settings.context_window_s,
        )
        cut = None if clarifications else _cut_short(state)
        previous = (
            (state.get("routing") or {}).get("previous_task") if clarifications else (cut or {}).get("goal")
        )
        if not clarifications and (flow := await self._flow_decision(text, state, previous)) is not None:
            return flow
        reading = read_answers(self._read_message(text, turns), clarifications)
        if reading.override is None and not clarifications:
            # "go: refund_rate_reporter, 2026-11-01..2026-11-15": the agent's name as the command, as
            # "@refund_rate_reporter" would say it.
            agents = [card.name for card in self.cards if card.addressable]
            reading.override = named_run(reading.message, agents, after_a_turn=bool(turns))
        override = reading.override
        intent = await self.analyzer.analyze(reading.goal, [str(turn["text"]) for turn in turns])
        intent = await self._refused_for_missing_data(
            self._reconsidered(intent, reading.goal, override), reading.goal, override
        )
        intent, candidates = await self._discovered(intent, reading.goal, override)
        previous_turn = turns[-1] if turns else None
        said_before = self._said_before(intent, candidates, reading, previous_turn, clarifications)
        known = {**(await self.tenant_defaults()), **said_before, **intent.entities, **reading.entities}
        rounds = len(clarifications)
        # A message right after a reply that asked the user something ("which month does your fiscal
        # year start in?") is read as its answer, however unlike a request it is ("Our fiscal year starts
        # on 1 May."): never refused outright.
        asked_back = ((state.get("reply") or {}).get("data") or {}).get("outcome") == "clarify"
        # "sorry, I meant store 8" right after a served turn corrects it: never a request of its own.
        corrects = not clarifications and not override and corrects_previous(reading.message)
        correction = corrects and previous_turn is not None
        if corrects and previous_turn is None and not asked_back and is_short(reading.message):
            # "oops, typo - I meant 18 there" opening a thread corrects nothing said here: asked about.
            update = {"action": "AMBIGUOUS", "query_kind": None, "out_of_scope": False}
            intent = intent.model_copy(
                update={**update, "ambiguity_reason": "it corrects a request this conversation has not made"}
            )
        refused = (
            intent.out_of_scope and not override and not clarifications and not asked_back and not correction
        )
        if previous_turn is not None and not (
            refused or override or clarifications or asked_back or correction
        ):
            # Right after a served turn, the head reads the message alone: "and ring her for me" after a
            # contact was found asks what no agent does, though read with the turn before it reads as one
            # more request of the same agent.
            alone = intent
            if reading.goal != reading.message:
                alone = await self.analyzer.analyze(reading.message, [str(turn["text"]) for turn in turns])
            if alone.out_of_scope_after_a_turn:
                refused = True
                intent = intent.model_copy(update={**EXECUTE, "out_of_scope": True})
        outcome, intent = await self._outcome(
            intent,
            candidates,
            reading,
            known,
            clarifications,
            refused,
            second_opinion=not corrects,
        )
        if outcome.target.kind == "agent":
            reading.entities = {**said_before, **reading.entities}
        standalone = previous_turn is None or reading.follow_up or override or clarifications or refused
        # A closing the head refuses outright ("lovely, that's it from me, off at 6 tonight") is thanked
        # all the same, not told that no agent does it; so is a thread's first message that only signs
        # off ("thanks, signing off now - back online at 7:30 tomorrow"), which the heads, trained on
        # requests, read as one.
        opening = previous_turn is None and not (override or clarifications or asked_back)
        closing = (
            not (standalone and not refused) or (opening and not is_short(reading.message, OPENING_WORDS))
        ) and await is_closing(reading.message, self.evolution.knowledge.embedder, self.pack.data_metrics)
        if closing:
            # "great, thanks - that's all for now" after a served turn asks for nothing: no agent runs,
            # no question is asked back (the out-of-scope reply thanks the user, see ``handlers``).
            outcome = Outcome(RouteTarget(kind="out_of_scope"), CLOSES_THE_CONVERSATION)
            # It carries nothing of the thread, nor the time it said ("done for the day").
            intent = intent.model_copy(update={"action": "EXECUTE", "query_kind": None, "entities": {}})
        elif previous_turn is not None and not standalone:
            continued = await self._continued(
                reading, intent, outcome, previous_turn, known, rounds, correction=correction
            )
            if continued is not None:
                intent, found, outcome = continued
                candidates = candidates if found is None else found
        # What the head likeliest reads as out of scope, and no agent takes on, is no question about the
        # data for the words it shares with a figure ("make a Chrome extension that shows store sales").
        out = outcome.target.kind == "out_of_scope" and not (
            override
            or refused
            or closing
            or (intent.out_of_scope_likeliest and not self._asks_of_a_named_figure(reading.goal))
        )
        # Read unsure ("What's the warranty attach rate at Store 2 in August?" at 0.4, asked about or
        # handed to an agent all the same): naming no figure of the data and one it lacks, it is answered
        # by naming what is missing.
        unclear = (
            intent.confidence < self.settings.clarify_below
            and outcome.target.kind in ("clarification", "agent")
            and not (override or clarifications or reading.follow_up)
        )
        if out or unclear:
            outcome, intent = await self._unserved_as_data(reading.goal, outcome, intent, unclear=unclear)
        return RoutingDecision(
            message=text,
            goal=reading.goal,
            intent=intent.action,
            confidence=intent.confidence,
            query_kind=intent.query_kind,
            entities={**intent.entities, **reading.entities},
            ambiguity_reason=intent.ambiguity_reason,
            target=outcome.target,
            candidates=candidates[:5],
            reason=outcome.reason,
            follow_up=reading.follow_up,
            round=rounds,
            best_guess=outcome.best_guess,
            clarification=outcome.clarification,
            previous_task=previous,
            at=self.now(),
        )


def after_route(state: FrontDoorState) -> str:
    """The node the route decided on."""
    kind = (state.get("routing") or {}).get("target", {}).get("kind", "out_of_scope")
    if kind not in ("clarification", "drop_flow") and is_system_request(
        str((state.get("pending") or {}).get("text") or "")
    ):
        return "build_system"
    return {
        "agent": "solve",
        "query": "answer_query",
        "builder": "build_agent",
        "clarification": "clarify",
        "drop_flow": "drop_flow",
    }.get(kind, "out_of_scope")


def clarify(state: FrontDoorState) -> dict[str, Any]:
    """The clarification question asked (the run waits for its answer), then routed again."""
    routing = state.get("routing") or {}
    question = routing["clarification"]
    answer = interrupt(
        {
            "kind": "clarification",
            "question": question["question"],
            "options": question["options"],
            "clarification": question,
        }
    )
    if isinstance(answer, dict):
        answer = answer.get("answer") or answer.get("message") or json.dumps(answer)
    text = str(answer)
    return {
        "clarifications": [*(state.get("clarifications") or []), {"question": question, "answer": text}],
        "clarifying": True,
        "messages": [AIMessage(content=question["question"]), HumanMessage(content=text)],
    }
