"""The front door's routing decision: the ``route`` node (context, @override, intent, discovery, the decision
tree, follow-ups and suspended flows), ``clarify`` (the question, as an interrupt) and the edges out of them."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from langchain_core.messages import AIMessage, HumanMessage
from langgraph.config import get_stream_writer
from langgraph.types import interrupt

from master_agent.capabilities.terms import (
    changed_between,
    entity_numbers_as_digits,
    goal_deadline,
    goal_target,
    metric_mention,
    moves_a_figure,
    restated,
    time_mention,
    time_window,
)
from master_agent.evolution.reuse import unknown_by_meaning
from master_agent.models.chat import content_text
from master_agent.routing.context import complete_follow_up, recent_turns
from master_agent.routing.decision import (
    CREATE_OPTION,
    Outcome,
    decide_route,
    override_name,
    without_override,
)
from master_agent.routing.discovery import made_for
from master_agent.routing.graph.base import FrontDoorBase
from master_agent.routing.graph.flows import (
    _cut_short,
    _suspend_cut_short,
    _waiting_clarification,
    _waiting_preview,
    flow_command,
)
from master_agent.routing.graph.follow_ups import (
    asks_about_the_figure,
    inherits_target,
    is_closing,
    is_figure_question,
    names_a_figure,
)
from master_agent.routing.graph.state import FrontDoorState
from master_agent.routing.graph.systems import is_system_request
from master_agent.routing.intent import explicit_builder_action, message_entities
from master_agent.routing.models import (
    Candidate,
    Clarification,
    IntentAnalysis,
    RouteTarget,
    RoutingDecision,
    SuspendedFlow,
)
from master_agent.runtime.proposals import changes_what_waits, read_feedback
from master_agent.runtime.recovery import answers_question, pick_option


class RouteNodes(FrontDoorBase):
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
        """Context, @override, intent, discovery and the decision tree, with the answers so far."""
        clock = self.evolution.clock
        turns = recent_turns(
            state.get("chat_turns") or [],
            clock.now(),
            self.settings.context_messages,
            self.settings.context_window_s,
        )
        suspended = [SuspendedFlow.model_validate(f) for f in state.get("suspended") or []]
        cut = None if clarifications else _cut_short(state)
        previous = (
            (state.get("routing") or {}).get("previous_task") if clarifications else (cut or {}).get("goal")
        )
        handled = None if clarifications else flow_command(text, suspended, _waiting_preview(state))
        if handled is not None:
            command, flow, rest = handled
            if command == "resume":
                return RoutingDecision(
                    message=text,
                    goal=f"{flow.goal} ({rest})" if rest else flow.goal,
                    intent="EXECUTE",
                    confidence=1.0,
                    entities={**flow.entities, **message_entities(rest)},
                    target=RouteTarget(kind="agent", name=flow.agent),
                    reason=f"resumes the suspended task {flow.goal!r}",
                    previous_task=previous if previous != flow.goal else None,
                    resumes=flow.flow_id,
                    at=self.now(),
                )
            return RoutingDecision(
                message=text,
                goal=flow.goal,
                intent="EXECUTE",
                confidence=1.0,
                target=RouteTarget(kind="drop_flow", name=flow.flow_id),
                reason=f"drops the suspended task {flow.goal!r}",
                at=self.now(),
            )
        if (
            not clarifications
            and _waiting_preview(state)
            and (read_feedback(text) is not None or changes_what_waits(text))
        ):
            # An answer to the preview the last reply showed ("move it to 12-1 instead" too): a new
            # flow of the agent that made it, whose first step records the answer (``runtime.loop``
            # recall), never the preview's request with the words added to it.
            master = self.capabilities.master["name"]
            return RoutingDecision(
                message=text,
                goal=text,
                intent="EXECUTE",
                confidence=1.0,
                target=RouteTarget(kind="agent", name=master),
                reason="answers the preview waiting for acceptance",
                at=self.now(),
            )
        override = override_name(text)
        message = without_override(text) if override else text
        goal, follow_up = message, False
        if turns:
            completed = complete_follow_up(message, turns[-1])
            if completed is not None:
                goal, follow_up = completed, True
                # "same for November" after "@refund_rate_reporter October": the agent named before.
                named_before = override_name(str(turns[-1].get("text") or ""))
                if override is None and named_before == (turns[-1].get("target") or {}).get("name"):
                    override = named_before
        entities: dict[str, Any] = {}
        chosen: RouteTarget | None = None
        for asked in clarifications:
            question, answer = Clarification.model_validate(asked["question"]), str(asked["answer"]).strip()
            picked = pick_option(answer, question.options)
            if question.kind == "entity" and question.entity:
                found = message_entities(answer)
                value: Any = found.get(question.entity)
                if value is None:
                    value = _lone_number(answer)
                if value is not None:
                    entities[question.entity] = value
                    goal = (
                        f"{goal.rstrip('?.! ')} ({answer})"
                        if question.entity not in message_entities(goal)
                        else goal
                    )
                else:
                    goal = f"{goal} {answer}"
            elif question.kind == "create_or_execute" and picked is not None:
                chosen = RouteTarget(kind="builder") if picked == CREATE_OPTION else None
                if chosen is None:
                    override = picked.removeprefix("Run ").removesuffix(" now")
            elif (question.kind == "multiple_choice" and picked is not None) or picked is not None:
                override = picked
            else:
                goal = f"{goal}. {answer}"
        intent = await self.analyzer.analyze(goal, [str(turn["text"]) for turn in turns])
        if override:
            # Naming an agent asks it to do the message, whatever the message reads like.
            intent = intent.model_copy(update={"action": "EXECUTE", "query_kind": None})
        if intent.action == "QUERY" and intent.query_kind == "data" and not override:
            now = self.evolution.clock.now()
            if (
                goal_target(goal) is not None
                and goal_deadline(goal, now) is not None
                and changed_between(goal, now) is None
            ):
                # "Get store one up by a third over the next two months": a target and a date ahead ask
                # for the figure to move, not for its value; a figure would answer another question.
                intent = intent.model_copy(update={"action": "EXECUTE", "query_kind": None})
        elif intent.action == "QUERY" and intent.query_kind == "outcome" and not override:
            now = self.evolution.clock.now()
            if (
                goal_target(goal) is not None
                and goal_deadline(goal, now) is not None
                and moves_a_figure(goal)
            ):
                # "We missed our August goal at store 5. Get it to 4% by end of January.": a past goal is
                # the background; a target, a deadline ahead and a verb that moves the figure are a goal.
                intent = intent.model_copy(update={"action": "EXECUTE", "query_kind": None})
            elif names_a_figure(goal, self.pack.data_metrics) and not moves_a_figure(goal):
                past = time_window(goal, now, direction="past")
                if past is not None and past.end <= now:
                    # "We'd set Store 4 a target of 8% for September. Did they hit it?": a goal the
                    # service never solved is answered by the figure over the period it was for.
                    intent = intent.model_copy(update={"query_kind": "data"})
        elif (
            intent.action == "EXECUTE"
            and not override
            and is_figure_question(goal, self.pack.data_metrics, self.evolution.clock.now())
        ):
            # "acessory revnue store 7 in spetember": a figure of the data over a period gone by, with no
            # target, no deadline and no verb that moves it, asks for its value, not for a plan.
            intent = intent.model_copy(update={"action": "QUERY", "query_kind": "data"})
        previous_turn = turns[-1] if turns else None
        candidates = []
        own = any(card.source == "tenant" and card.runnable for card in self.cards)
        if intent.action in ("EXECUTE", "AMBIGUOUS", "CREATE", "UPDATE") or override or own:
            candidates = await self.discovery.discover(
                self.tenant.tenant_id, self.tenant.capability_version, self.cards, goal, intent
            )
        unsure_builder = (
            intent.action in ("CREATE", "UPDATE")
            and intent.confidence < self.settings.clarify_below
            and explicit_builder_action(goal) is None
        )
        if (intent.action in ("QUERY", "AMBIGUOUS") or unsure_builder) and not override:
            # The intent head knows no tenant's own agents: one made for exactly this request (the
            # relevance head sure of it, or likely while the intent is unsure) is what the tenant wants
            # run, not the built-in answer, nor a change to an agent the words only resemble ("Show the
            # weekly refund rate per store").
            sources = {card.name: card.source for card in self.cards}
            top = candidates[0] if candidates else None
            likely = top is not None and top.score >= self.settings.route_score
            unsure = intent.confidence < self.settings.route_confidence
            if (
                top is not None
                and sources.get(top.name) == "tenant"
                and (made_for(top) or (likely and unsure))
            ):
                intent = intent.model_copy(
                    update={
                        "action": "EXECUTE",
                        "query_kind": None,
                        "confidence": max(intent.confidence, top.score),
                    }
                )
            elif not unsure_builder:
                candidates = candidates if intent.action == "AMBIGUOUS" else []
        # What the conversation named and a sure request does not (the store of the question before
        # "ok make a plan to bring it down to 3% by january") fills what its agent needs when that
        # agent is likely (as sure as an intent that is not asked about); otherwise the message may
        # rather continue the turn before (below).
        top = candidates[0] if candidates else None
        sure = intent.confidence >= self.settings.route_confidence and not clarifications
        said_before = {
            key: value
            for key, value in ((previous_turn or {}).get("entities") or {}).items()
            if sure
            and top is not None
            and top.score >= self.settings.clarify_below
            and key not in intent.entities
            and key not in entities
        }
        known = {**(await self.tenant_defaults()), **said_before, **intent.entities, **entities}
        rounds = len(clarifications)
        refused = intent.out_of_scope and not override and not clarifications
        if chosen is not None:
            outcome = Outcome(chosen, "chosen by the user")
        elif refused:
            # The head is sure: what its tenants' users asked here and nothing served (the weather,
            # a match score, another product), however like a question about the data it reads.
            outcome = Outcome(RouteTarget(kind="out_of_scope"), "sure that no agent here is asked for it")
        else:
            outcome = decide_route(
                intent, candidates, self.cards, self.settings, rounds=rounds, override=override, known=known
            )
        if (
            outcome.clarification is not None
            and outcome.clarification.kind == "open_ended"
            and not (override or clarifications)
            and self.pack.sure_request is not None
            and await self.pack.sure_request(goal, self.settings, self.evolution.clock.now().date())
        ):
            # The pack's second opinion: its own reader is sure of a request the intent head, which
            # reads a message without its days, times and names, found ambiguous ("move my 3pm on
            # thursday to 4:30"). Its master agent takes it (and asks its own questions).
            master = self.capabilities.master["name"]
            outcome = Outcome(
                RouteTarget(kind="agent", name=master), f"the {self.pack.name} pack is sure it asks {master}"
            )
            intent = intent.model_copy(update={"action": "EXECUTE", "query_kind": None})
        if outcome.target.kind == "agent":
            entities = {**said_before, **entities}
        if (
            previous_turn is not None
            and not (follow_up or override or clarifications or refused)
            and inherits_target(
                message,
                outcome.target,
                previous_turn,
                # An unsure CREATE or UPDATE goes to the builder unasked: no reading of its own.
                unsure=outcome.target.kind == "builder"
                and intent.confidence < self.settings.clarify_below
                and explicit_builder_action(message) is None,
            )
            and not await is_closing(message, self.evolution.knowledge.embedder, self.pack.data_metrics)
        ):
            # A short message nothing serves on its own ("now november", "call it refund_watch", "and
            # his email?", "why so low?") right after a served one continues it: read with the
            # previous goal, the previous entities (window included) under this message's. Read so,
            # it may ask for something else than the message before ("why so low?" after a figure:
            # a goal); otherwise it goes where the message before went.
            # A target or deadline the message states replaces the goal's own ("make it 10 points").
            # A deadline is no question's window: "halve it by February" after "store 6's refund rate
            # this month?" keeps the month the figure was of ("and for last quarter?" replaces it).
            restated_goal = str(previous_turn["goal"])
            if previous_turn.get("intent") == "EXECUTE" or time_mention(message, horizons=False):
                restated_goal = restated(restated_goal, message)
            goal, follow_up = f"{restated_goal.rstrip('?.! ')} ({message})", True
            said = {**(previous_turn.get("entities") or {}), **known}
            continued = await self._reread(message, goal, previous_turn, rounds, said)
            if continued is not None:
                intent, candidates, outcome = continued
            else:
                inherited = RouteTarget.model_validate(previous_turn["target"])
                outcome = Outcome(inherited, f"continues the previous message {previous_turn['text']!r}")
                intent = intent.model_copy(
                    update={
                        "action": previous_turn.get("intent") or intent.action,
                        "query_kind": inherited.name if inherited.kind == "query" else None,
                    }
                )
            intent = intent.model_copy(
                update={"entities": {**(previous_turn.get("entities") or {}), **intent.entities}}
            )
        out = outcome.target.kind == "out_of_scope" and not (override or refused)
        if out and (figure := names_a_figure(goal, self.pack.data_metrics)) is not None:
            # No agent takes it on, and it names a figure the tenant's data has ("avg training hrs per
            # person", "Store 4 txns w/c 14 Sept"): a question about that figure, not foreign work.
            # A guess all the same (its answer is never more than partial, see answer_query), unless the
            # figure is said by its name over a period gone by, with nothing moving it ("avg handset
            # price up north in Q3"): that is a data question in so many words.
            now = self.evolution.clock.now()
            past = time_window(goal, now, direction="past")
            by_name = (
                metric_mention(goal, self.pack.data_metrics).metric is not None
                and past is not None
                and past.end <= now + timedelta(days=1)
                and not moves_a_figure(goal)
            )
            outcome = Outcome(
                RouteTarget(kind="query", name="data"),
                f"no agent takes it on; read as asking for the {figure} of the data",
                best_guess=not by_name,
            )
            intent = intent.model_copy(update={"action": "QUERY", "query_kind": "data"})
        elif out and await self._asks_missing_data(goal):
            # "what's the footfall conversion at store 5 for last Saturday?": a figure over a period gone
            # by, of data the tenant lacks: answered by the data handler, which names what is missing.
            outcome = Outcome(
                RouteTarget(kind="query", name="data"),
                "no agent takes it on; it asks a figure over a period gone by of data the tenant lacks",
                best_guess=True,
            )
            intent = intent.model_copy(update={"action": "QUERY", "query_kind": "data"})
        return RoutingDecision(
            message=text,
            goal=goal,
            intent=intent.action,
            confidence=intent.confidence,
            query_kind=intent.query_kind,
            entities={**intent.entities, **entities},
            ambiguity_reason=intent.ambiguity_reason,
            target=outcome.target,
            candidates=candidates[:5],
            reason=outcome.reason,
            follow_up=follow_up,
            round=rounds,
            best_guess=outcome.best_guess,
            clarification=outcome.clarification,
            previous_task=previous,
            at=self.now(),
        )

    async def _asks_missing_data(self, message: str) -> bool:
        """Whether ``message`` asks for a figure over a period gone by (no target, no deadline, no verb
        that moves it) that names data the tenant's pack has no figure for ("footfall conversion")."""
        now = self.evolution.clock.now()
        window = time_window(message, now, direction="past")
        if window is None or window.end > now + timedelta(days=1) or not self.pack.data_metrics:
            return False
        if moves_a_figure(message) or goal_target(message) is not None:
            return False
        missing = await unknown_by_meaning(
            message,
            self.evolution.knowledge.embedder,
            self.pack.problems,
            self.pack.problem_metrics,
            self.pack.data_metrics,
        )
        return missing is not None

    async def _reread(
        self, message: str, goal: str, previous: Mapping[str, Any], rounds: int, known: dict[str, Any]
    ) -> tuple[IntentAnalysis, list[Candidate], Outcome] | None:
        """A follow-up ``message`` read with the goal before it (``goal``), when so read it is sure of
        another intent than the turn before and is served; None: it continues where the turn before
        went. After a figure, asking why or to move it is a goal. ``known`` holds the entities said
        before ("it" is the store the question before named)."""
        intent = await self.analyzer.analyze(goal, [])
        before = previous.get("target") or {}
        figure = before.get("kind") == "query" and before.get("name") == "data"
        if figure and asks_about_the_figure(message):
            # "why so low?", "give me a plan to halve it by February" after a figure: work on it.
            intent = intent.model_copy(
                update={
                    "action": "EXECUTE",
                    "query_kind": None,
                    "confidence": max(intent.confidence, self.settings.route_confidence),
                }
            )
        same = intent.action == previous.get("intent") and (
            intent.action != "QUERY" or intent.query_kind == before.get("name")
        )
        if same or intent.action == "AMBIGUOUS" or intent.confidence < self.settings.route_confidence:
            return None
        candidates = await self.discovery.discover(
            self.tenant.tenant_id, self.tenant.capability_version, self.cards, goal, intent
        )
        outcome = decide_route(
            intent, candidates, self.cards, self.settings, rounds=rounds, override=None, known=known
        )
        if outcome.target.kind in ("clarification", "out_of_scope"):
            return None
        return intent, candidates, outcome


#: Most words of an answer to "which store?" whose one number is the store ("oh sorry, should've said -
#: it's for 7"); a longer message may say a number for another reason.
LONE_NUMBER_WORDS = 8
_NUMBERS = re.compile(r"(?<![\w.,/:-])#?(\d+)(?![\w.,/:%-]*\w|%)")


def _lone_number(answer: str) -> int | None:
    """The one number a short answer to an entity question says ("7", "#7", "it's for seven"); None
    when it says none or several, says a time or a share, or is long."""
    said = entity_numbers_as_digits(answer)
    if len(re.findall(r"[A-Za-z0-9']+", said)) > LONE_NUMBER_WORDS or time_mention(said) is not None:
        return None
    numbers = _NUMBERS.findall(said)
    return int(numbers[0]) if len(numbers) == 1 and len(re.findall(r"\d+", said)) == 1 else None


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
