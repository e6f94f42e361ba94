"""The front door: the root of the ``master_agent`` graph for chat input, node by node.

    START -> route --agent--------> solve ---------> END   (the agent's loop, as a subgraph)
       |          --query--------> answer_query --> END   (a query handler)
       |          --builder------> build_agent ---> END
       |          --(a system request)> build_system -> END   (the meta-orchestrator)
       |          --out_of_scope-> out_of_scope --> END
       |          --drop_flow----> drop_flow -----> END   ("never mind the board meeting")
       |          --clarification> clarify (interrupt) -> route
       '--(a run with a goal and no new message: an explicit EXECUTE)--> solve

``route`` reads the message with the conversation before it, honours ``@agent``, analyses the intent,
discovers the tenant's agents and decides (``routing.decision``). Each decision is kept as ``routing``
and appended to ``routing_trace``, and streamed as a ``custom`` event.

A message that cuts an agent flow short (its run still working, or the flow waiting for the user's
answer) starts a new flow; the one cut short is kept in ``suspended`` (seed 002's interruption
handling), and a later "resume the board meeting" runs it again as a new flow of its agent with its
goal and values (and what the message adds), "never mind the board meeting" drops it.
"""

from __future__ import annotations

import hashlib
import json
import operator
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Annotated, Any, Literal, NotRequired

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.config import get_stream_writer
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.types import interrupt
from pydantic import ValidationError
from typing_extensions import TypedDict

from master_agent.builder.conversation import AgentBuilder
from master_agent.builder.draft import AgentDrafter
from master_agent.capabilities import (
    AgentSpec,
    DataMetric,
    DomainPack,
    TenantCapabilities,
    TenantRecord,
    implied_entities,
)
from master_agent.capabilities.envelope import Status, SubAgentEnvelope
from master_agent.capabilities.terms import (
    goal_deadline,
    goal_target,
    metric_by_words,
    metric_mention,
    moves_a_figure,
    only_figure_words,
    opens_deadline,
    restated,
    time_mention,
    time_window,
)
from master_agent.capabilities.tools import ToolContext
from master_agent.evolution.context import EvolutionContext
from master_agent.models.chat import content_text
from master_agent.models.offline import OfflinePlanner
from master_agent.routing.context import complete_follow_up, recent_turns
from master_agent.routing.decision import (
    CREATE_OPTION,
    Outcome,
    decide_route,
    override_name,
    without_override,
)
from master_agent.routing.discovery import AgentCard, Discovery, made_for
from master_agent.routing.exemplars import GENERIC_EXEMPLARS, Exemplar
from master_agent.routing.intent import (
    ExemplarClassifier,
    IntentAnalyzer,
    ModelIntentAnalyzer,
    explicit_builder_action,
    message_entities,
)
from master_agent.routing.intent_head import HeadClassifier, master_examples
from master_agent.routing.models import (
    Candidate,
    Clarification,
    IntentAnalysis,
    RouteTarget,
    RoutingDecision,
    SuspendedFlow,
)
from master_agent.routing.queries import BUILT_IN_HANDLERS, QueryRequest, carried_over
from master_agent.runtime.loop import (
    TASK_FIELDS,
    CompiledLoop,
    NestedAgent,
    nested_agents,
    recursion_limit_for,
    register_nested_agents,
    task_text,
)
from master_agent.runtime.proposals import HOW_TO_ANSWER, read_feedback
from master_agent.runtime.recovery import answers_question, pick_option
from master_agent.runtime.resources import RESOURCES_KEY, RuntimeResources
from master_agent.runtime.verification import Check, limitations_of, verify_before_answer
from master_agent.settings import Settings

NODES = (
    "route",
    "clarify",
    "solve",
    "answer_query",
    "build_agent",
    "build_system",
    "out_of_scope",
    "drop_flow",
)


class FrontDoorState(TypedDict):
    """The thread state of a chat graph: the conversation, the routing records and the latest answer."""

    goal: NotRequired[str]
    """The latest task handed to an agent (or given as input: an explicit EXECUTE)."""
    context: NotRequired[dict[str, Any]]
    messages: NotRequired[Annotated[list[AnyMessage], add_messages]]
    routing: NotRequired[dict[str, Any] | None]
    """The latest routing decision (``RoutingDecision``)."""
    routing_trace: NotRequired[Annotated[list[dict[str, Any]], operator.add]]
    """Every routing decision of the thread, in order."""
    chat_turns: NotRequired[Annotated[list[dict[str, Any]], operator.add]]
    """Each handled message: text, goal, time, intent, target, entities (the follow-up context)."""
    pending: NotRequired[dict[str, Any] | None]
    """The message being routed: ``{id, text, at}``."""
    clarifications: NotRequired[list[dict[str, Any]]]
    """Questions asked about the pending message, with their answers."""
    clarifying: NotRequired[bool]
    suspended: NotRequired[list[dict[str, Any]]]
    """Agent flows later messages cut short, oldest first (``SuspendedFlow``)."""
    reply: NotRequired[dict[str, Any] | None]
    """The front door's answer to the latest message: ``{kind, status, text, data}``."""
    solution: NotRequired[dict[str, Any]]
    envelope: NotRequired[dict[str, Any]]
    termination: NotRequired[dict[str, Any]]
    reused_pattern: NotRequired[dict[str, Any] | None]
    escalation: NotRequired[dict[str, Any] | None]
    model_failure: NotRequired[str | None]
    steps: NotRequired[list[dict[str, Any]]]


@dataclass(kw_only=True)
class FrontDoor:
    """One tenant's front door, built with its compiled graph."""

    tenant: TenantRecord
    pack: DomainPack
    capabilities: TenantCapabilities
    tool_context: ToolContext
    settings: Settings
    evolution: EvolutionContext
    model: BaseChatModel
    discovery: Discovery
    analyzer: IntentAnalyzer
    solvers: Mapping[str, CompiledLoop]
    """The master agent's loops by complexity."""
    agent_loops: Mapping[str, CompiledLoop]
    """The tenant's own agents' loops, by name."""
    classify: Any
    """goal -> complexity."""
    cards: list[AgentCard] = field(default_factory=list)
    defaults: dict[str, Any] | None = None
    builder: AgentBuilder | None = None
    """The agent-builder conversation (None: only decisions are made, e.g. by the routing eval)."""
    resources: RuntimeResources | None = None
    """What the meta-orchestrator runs with when a message asks for a system (None: not here)."""

    # -- shared ------------------------------------------------------------------------------

    async def tenant_defaults(self) -> dict[str, Any]:
        if self.defaults is None:
            self.defaults = await implied_entities(self.pack, self.tool_context)
        return self.defaults

    def now(self) -> str:
        return self.evolution.clock.now().isoformat()

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
        if not clarifications and _waiting_preview(state) and read_feedback(text) is not None:
            # An answer to the preview the last reply showed: a new flow of the agent that made it,
            # whose first step records the answer (``runtime.loop`` recall).
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
                if value is None and re.fullmatch(r"#?\d+", answer):
                    value = int(answer.lstrip("#"))
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
            if goal_target(goal) is not None and goal_deadline(goal, now) is not None:
                # "Get store one up by a third over the next two months": a target and a date ahead ask
                # for the figure to move, not for its value; a figure would answer another question.
                intent = intent.model_copy(update={"action": "EXECUTE", "query_kind": None})
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
        if chosen is not None:
            outcome = Outcome(chosen, "chosen by the user")
        else:
            outcome = decide_route(
                intent, candidates, self.cards, self.settings, rounds=rounds, override=override, known=known
            )
        if outcome.target.kind == "agent":
            entities = {**said_before, **entities}
        if (
            previous_turn is not None
            and not (follow_up or override or clarifications)
            and inherits_target(message, outcome.target, previous_turn)
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
        out = outcome.target.kind == "out_of_scope" and not override
        if out and (figure := names_a_figure(goal, self.pack.data_metrics)) is not None:
            # No agent takes it on, and it names a figure the tenant's data has ("avg training hrs per
            # person", "Store 4 txns w/c 14 Sept"): a question about that figure, not foreign work.
            # A guess all the same: its answer is never more than partial (see answer_query).
            outcome = Outcome(
                RouteTarget(kind="query", name="data"),
                f"no agent takes it on; read as asking for the {figure} of the data",
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

    def after_route(self, state: FrontDoorState) -> str:
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

    def clarify(self, state: FrontDoorState) -> dict[str, Any]:
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

    async def solve(self, state: FrontDoorState, config: RunnableConfig) -> dict[str, Any]:
        routing = state.get("routing") or {}
        routed = bool(state.get("pending")) and routing.get("target", {}).get("kind") == "agent"
        if routed:
            goal = str(routing["goal"])
            context = {**(await self.tenant_defaults()), **dict(routing.get("entities") or {})}
            context.pop("window", None)
            if routing.get("previous_task"):
                context["previous_task"] = routing["previous_task"]
        else:
            goal, context = str(state.get("goal") or ""), dict(state.get("context") or {})
        target = str(routing.get("target", {}).get("name") or "") if routed else ""
        run_input: dict[str, Any] = {"goal": goal, "context": context}
        loop = self.agent_loops.get(target)
        spec = self.capabilities.sub_agents.get(target) if loop is not None else None
        field = message_field(spec, context) if spec is not None else None
        if field is not None:
            # The tenant's agent takes the message itself (a ticket, a question) as its one text input.
            context[field] = goal
        part = self.parts().get(target) if loop is None else None
        if part is not None:
            # An agent that is otherwise a part of another, named with @: the message fills its arguments.
            text_field, entity_fields = chat_arguments(part.spec) or (None, ())
            arguments = {name: context[name] for name in entity_fields if name in context}
            if text_field:
                arguments[text_field] = goal
            try:
                checked = part.spec["input_schema"].model_validate(arguments).model_dump(mode="json")
            except ValidationError as error:
                return self._refusal(state, goal, f"{target} cannot take this message: {error}")
            loop, run_input = part.graph, {"goal": task_text(part.spec, checked), "context": checked}
        loop = loop or self.solvers[self.classify(goal)]
        max_iterations = self.settings.max_iterations
        final = await loop.ainvoke(run_input, {"recursion_limit": recursion_limit_for(max_iterations)})
        envelope = final.get("envelope") or {}
        status = envelope.get("status", "error")
        text = _solution_text(status, final.get("solution") or {}, envelope, self.pack)
        text = "\n".join([text, *_paused_lines(state)])
        update: dict[str, Any] = {
            key: final.get(key)
            for key in (
                "solution",
                "envelope",
                "termination",
                "reused_pattern",
                "escalation",
                "model_failure",
                "steps",
            )
        }
        update.update(
            goal=goal,
            context=context,
            reply={
                "kind": "agent",
                "status": status,
                "text": text,
                "agent": routing.get("target", {}).get("name"),
            },
            messages=[AIMessage(content=text)],
        )
        if routed:
            update.update(self._finish(state, goal))
        return update

    async def answer_query(self, state: FrontDoorState) -> dict[str, Any]:
        routing = state.get("routing") or {}
        kind = routing.get("target", {}).get("name") or "other"
        handlers = {**BUILT_IN_HANDLERS, **self.pack.query_handlers}
        handler = handlers.get(kind, BUILT_IN_HANDLERS["other"])
        message, entities = str(routing.get("goal") or ""), dict(routing.get("entities") or {})
        turns = recent_turns(
            state.get("chat_turns") or [],
            self.evolution.clock.now(),
            self.settings.context_messages,
            self.settings.context_window_s,
        )
        if kind == "data" and turns and (turns[-1].get("target") or {}).get("name") == "data":
            if not state.get("clarifications"):
                # The user's own words, completed from the question before: a follow-up read as the
                # previous question with the message appended keeps a store the message replaces
                # ("same for the east stores" after a question about Store 6).
                message = str(routing.get("message") or message)
                entities = message_entities(message)
            message, entities = carried_over(
                message, entities, turns[-1], self.pack.data_metrics, self.evolution.clock.now()
            )
        request = QueryRequest(
            tenant_id=self.tenant.tenant_id,
            message=message,
            entities=entities,
            cards=self.cards,
            pool=self.tool_context.pool,
            tool_context=self.tool_context,
            knowledge=self.evolution.knowledge,
            clock=self.evolution.clock,
            model=self.model,
            metrics=self.pack.data_metrics,
            problems=self.pack.problems,
            problem_metrics=self.pack.problem_metrics,
        )
        answer = await handler(request)
        # The handler's own evidence (its query and rows), then the same verification step every agent
        # loop runs: the answer's window and entities against what the message named.
        evidence = [Check.model_validate(check) for check in answer.data.get("verification") or []]
        verified = verify_before_answer(
            answer.data,
            self._asked(request.entities),
            1.0 if answer.answered else 0.0,
            model_finished=False,
            tools_called=True,
        )
        if routing.get("best_guess"):
            # The route itself was a guess (nothing served the message; after the last clarification
            # round): the number may be right, but that it answers the question is not checked.
            evidence.append(
                Check(
                    claim="the question is a data question",
                    evidence=str(routing.get("reason")),
                    verdict="weak",
                )
            )
        checks = [*evidence, *verified.checks]
        unbacked = limitations_of(evidence) + verified.limitations
        limitations = ([] if answer.answered else [answer.text]) + unbacked
        answered = answer.answered and not routing.get("best_guess")
        envelope = _envelope(
            "success" if answered else "partial", answer.data, limitations, verification=checks
        )
        data = {**answer.data, "verification": envelope["verification"]} if answer.data else {}
        return {
            "reply": {
                "kind": "query",
                "status": envelope["status"],
                "text": "\n".join([answer.text, *(f"Not backed: {line}" for line in unbacked)]),
                "data": data,
                "handler": answer.handler,
            },
            "envelope": envelope,
            "messages": [AIMessage(content=answer.text)],
            # The question as answered (its period and figure carried over, a figure read by meaning
            # by its name): what a next one continues.
            **self._finish(state, _as_answered(message, answer.data, self.pack.data_metrics)),
        }

    async def build_agent(self, state: FrontDoorState) -> dict[str, Any]:
        routing = state.get("routing") or {}
        goal = str(routing.get("goal") or "")
        if self.builder is None:
            text = (
                "The agent builder is not available here: create agents through POST /assistants or the CLI."
            )
            return {
                "reply": {"kind": "builder", "status": "unavailable", "text": text},
                "envelope": _envelope("partial", {}, [text]),
                "messages": [AIMessage(content=text)],
                **self._finish(state, goal),
            }
        answer = await self.builder.converse(str(routing.get("intent") or "CREATE"), goal)
        done = answer.status in ("created", "updated")
        return {
            "reply": {"kind": "builder", "status": answer.status, "text": answer.text, "data": answer.data},
            "envelope": _envelope(
                "success" if done else "partial", answer.data, [] if done else [answer.text]
            ),
            "messages": [AIMessage(content=answer.text)],
            **self._finish(state, goal),
        }

    async def build_system(self, state: FrontDoorState) -> dict[str, Any]:
        """A request for an agent system goes to the meta-orchestrator (the builder keeps single
        agents); each of its steps is streamed as a ``meta`` custom event as it happens."""
        text = str((state.get("pending") or {}).get("text") or "")
        if self.resources is None:
            reply = (
                "The meta-orchestrator is not available here: use POST /runs on the 'meta' graph or the CLI."
            )
            return {
                "reply": {"kind": "meta", "status": "unavailable", "text": reply},
                "envelope": _envelope("partial", {}, [reply]),
                "messages": [AIMessage(content=reply)],
                **self._finish(state, text),
            }
        result = await run_system_request(self.resources, self.tenant.tenant_id, text, get_stream_writer())
        reply = system_reply(result)
        status: Status = "success" if result.get("status") == "done" else "partial"
        return {
            "reply": {"kind": "meta", "status": result.get("status"), "text": reply, "data": result},
            "envelope": _envelope(status, result, [] if status == "success" else [reply]),
            "messages": [AIMessage(content=reply)],
            **self._finish(state, text),
        }

    async def out_of_scope(self, state: FrontDoorState) -> dict[str, Any]:
        routing = state.get("routing") or {}
        goal = str(routing.get("goal") or "")
        runnable = [card for card in self.cards if card.runnable]
        can = "; ".join(f"{card.name}: {card.description.rstrip('.')}" for card in runnable) or "nothing yet"
        skills = sorted({skill for card in runnable for skill in card.skills})[:5]
        text = (
            f"None of your agents can do that ({goal!r}). What your agents can do: {can}"
            + (f" (e.g. {'; '.join(skills)})" if skills else "")
            + ". I can also answer questions about your agents, your data, past goals and village knowledge. "
            "If you want an agent for this, describe what it should do and I will offer to create one."
        )
        return {
            "reply": {
                "kind": "out_of_scope",
                "status": "out_of_scope",
                "text": text,
                "offer": "create_agent",
            },
            "envelope": _envelope("partial", {}, ["out of scope: no agent of this tenant serves this goal"]),
            "messages": [AIMessage(content=text)],
            **self._finish(state, goal),
        }

    async def drop_flow(self, state: FrontDoorState) -> dict[str, Any]:
        routing = state.get("routing") or {}
        goal = str(routing.get("goal") or "")
        text = "\n".join(
            [
                f"Understood: I dropped the task {goal!r}; nothing more will be done for it.",
                *_paused_lines(state),
            ]
        )
        return {
            "reply": {"kind": "drop_flow", "status": "success", "text": text, "data": {"dropped": goal}},
            "envelope": _envelope("success", {"dropped": goal}, []),
            "messages": [AIMessage(content=text)],
            **self._finish(state, goal),
        }

    def parts(self) -> dict[str, NestedAgent]:
        """The agents the master agent's loops call as sub-agents, at any depth, by name."""
        found: dict[str, NestedAgent] = {}
        stack = list(self.solvers.values())
        while stack:
            for name, nested in nested_agents(stack.pop()).items():
                if name not in found:
                    found[name] = nested
                    stack.append(nested.graph)
        return found

    def _refusal(self, state: FrontDoorState, goal: str, reason: str) -> dict[str, Any]:
        text = f"Status: error.\nError: {reason}"
        return {
            "goal": goal,
            "reply": {"kind": "agent", "status": "error", "text": text},
            "envelope": {**_envelope("error", {}, []), "error": reason},
            "messages": [AIMessage(content=text)],
            **self._finish(state, goal),
        }

    def _asked(self, entities: Mapping[str, Any]) -> dict[str, Any]:
        """What a message named, as the verification step compares it: its entities, and the window
        its words name read on the runtime clock."""
        asked = dict(entities)
        said = asked.pop("window", None)
        window = time_window(str(said), self.evolution.clock.now()) if said else None
        if window is not None:
            asked["window"] = {
                "label": window.label,
                "start": window.start.isoformat(),
                "end": window.end.isoformat(),
            }
        return asked

    def _finish(self, state: FrontDoorState, goal: str) -> dict[str, Any]:
        routing = state.get("routing") or {}
        pending = state.get("pending") or {}
        turn = {
            "text": pending.get("text", ""),
            "goal": goal,
            "at": pending.get("at") or self.now(),
            "intent": routing.get("intent"),
            "target": routing.get("target"),
            "entities": routing.get("entities") or {},
        }
        return {"chat_turns": [turn], "clarifications": [], "clarifying": False}

    # -- graph -------------------------------------------------------------------------------

    def graph(self, checkpointer: BaseCheckpointSaver[Any] | None) -> CompiledLoop:
        graph: StateGraph[FrontDoorState, Any, Any, Any] = StateGraph(FrontDoorState)
        graph.add_node("route", self.route)
        graph.add_node("clarify", self.clarify)
        graph.add_node("solve", self.solve)
        graph.add_node("answer_query", self.answer_query)
        graph.add_node("build_agent", self.build_agent)
        graph.add_node("build_system", self.build_system)
        graph.add_node("out_of_scope", self.out_of_scope)
        graph.add_node("drop_flow", self.drop_flow)
        graph.add_conditional_edges(START, self.entry, ["route", "solve"])
        graph.add_conditional_edges(
            "route",
            self.after_route,
            ["solve", "answer_query", "build_agent", "build_system", "out_of_scope", "clarify", "drop_flow"],
        )
        graph.add_edge("clarify", "route")
        for node in ("solve", "answer_query", "build_agent", "build_system", "out_of_scope", "drop_flow"):
            graph.add_edge(node, END)
        compiled = graph.compile(checkpointer=checkpointer, name="master_agent")
        # What ``solve`` hands goals to: the master agent (its standard loop) and the tenant's agents.
        nested = {
            name: NestedAgent(self.capabilities.sub_agents[name], loop)
            for name, loop in self.agent_loops.items()
            if name in self.capabilities.sub_agents
        }
        if "standard" in self.solvers:
            nested[self.capabilities.master["name"]] = NestedAgent(
                self.capabilities.master, self.solvers["standard"]
            )
        register_nested_agents(compiled, nested)
        return compiled


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


def names_a_figure(text: str, metrics: Sequence[DataMetric]) -> str | None:
    """The name of the figure of the tenant's data ``text`` names (by name, alias or its words, in
    shorthand too), when it sets that figure no target; None otherwise (or for a figure the data
    has not: "warranty attach rate")."""
    if goal_target(text) is not None:
        return None
    mention = metric_mention(text, metrics)
    if mention.unknown:
        return None
    metric = mention.metric or (metric_by_words(text, metrics) or mention).metric
    return metric.name if metric is not None else None


def is_figure_question(text: str, metrics: Sequence[DataMetric], now: datetime) -> bool:
    """Whether ``text`` asks for the value of one of the data's figures over a period gone by: it names
    the figure (misspelt too) and a past window, and states no target, no deadline ahead, no verb that
    moves a figure and no "why" (a cause is work, not a value)."""
    if (
        _WHY.search(text)
        or moves_a_figure(text)
        or opens_deadline(text)
        or not only_figure_words(text, metrics)
    ):
        return False
    window = time_window(text, now, direction="past")
    return (
        window is not None
        and window.end <= now + timedelta(days=1)
        and names_a_figure(text, metrics) is not None
    )


#: A question after a figure that asks what caused it ("why so low?", "how come it dropped").
_WHY = re.compile(r"\b(why|how come|what caused|what's causing|reasons?)\b", re.I)


def asks_about_the_figure(message: str) -> bool:
    """Whether a follow-up to a data question asks for work on the figure: what caused it, or moving
    it (a target or a deadline ahead)."""
    deadline = time_mention(message) is not None and time_mention(message, horizons=False) is None
    return bool(_WHY.search(message)) or goal_target(message) is not None or deadline


#: Most words of a message that continues the one before when nothing serves it on its own; of one
#: that points back to it ("stretch it back to the start of the month", "just change the original").
FOLLOW_UP_WORDS = 8
POINTING_BACK_WORDS = 14
#: Words that point back to what the conversation said before ("it", "that one", "the original",
#: "instead", "actually ...").
_POINTS_BACK = re.compile(r"\b(it|its|that|them|those|same|instead|actually|original|again|then)\b", re.I)


def _as_answered(message: str, data: Mapping[str, Any], metrics: Sequence[DataMetric]) -> str:
    """``message`` with the figure its answer was of, when its words do not name it ("which shop
    refunded the biggest share of its sales?" was the refund rate): a follow-up ("and the smallest?")
    asks about that figure, not one its words would be read as again."""
    figure = data.get("metric")
    said = metric_mention(message, metrics).metric
    if not figure or data.get("outcome") != "answer" or (said is not None and said.name == figure):
        return message
    return f"{message.rstrip('?.! ')} (the {figure})"


def inherits_target(message: str, target: RouteTarget, previous: Mapping[str, Any]) -> bool:
    """Whether ``message``, which on its own gets ``target``, continues the previous turn instead: it
    is short (or, pointing back to the turn before, not long), on its own it would be asked about or
    refused, and the previous turn was served."""
    served = (previous.get("target") or {}).get("kind") in ("agent", "query", "builder")
    alone = target.kind in ("clarification", "out_of_scope")
    words = len(re.findall(r"[A-Za-z0-9']+", _own_words(message)))
    short = words <= FOLLOW_UP_WORDS or (words <= POINTING_BACK_WORDS and _POINTS_BACK.search(message))
    return served and alone and bool(short)


def _own_words(message: str) -> str:
    """``message`` without the time and the target it states: "what if we gave it till the end of
    March?" is as short as "what if we gave it later?"."""
    own = message
    if (said := time_mention(own)) and said in own:
        own = own.replace(said, " ", 1)
    if (target := goal_target(own)) is not None and target.words and target.words in own:
        own = own.replace(target.words, " ", 1)
    return own


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


def _paused_lines(state: FrontDoorState) -> list[str]:
    return [
        f'Paused: {flow["goal"]!r} (say "resume" or "never mind" with a word of it).'
        for flow in state.get("suspended") or []
    ]


def _envelope(
    status: Status, data: dict[str, Any], limitations: list[str], verification: Sequence[Check] = ()
) -> dict[str, Any]:
    """A front-door handler's result in the envelope every agent returns (its status and band settled
    the same way): a handler's answer is its evidence, so it is certain or it is not an answer."""
    return SubAgentEnvelope(
        status=status,
        data=data,
        confidence=1.0 if status == "success" else 0.0,
        limitations=limitations,
        verification=[check.model_dump() for check in verification],
    ).model_dump(mode="json")


def _waiting_preview(state: FrontDoorState) -> bool:
    handoff = (state.get("envelope") or {}).get("handoff") or {}
    return handoff.get("kind") == "preview"


def _handoff_lines(handoff: dict[str, Any]) -> list[str]:
    kind = handoff.get("kind")
    if kind == "preview":
        proposal = handoff.get("proposal") or {}
        preview = proposal.get("preview") or {}
        lines = [f"Preview (not done yet, high risk): {proposal.get('tool')}."]
        for key, value in (preview.get("detail") or proposal.get("args") or {}).items():
            shown = f"{len(value)}: {', '.join(map(str, value))}" if isinstance(value, list) else value
            lines.append(f"  {key}: {shown}")
        lines.append(HOW_TO_ANSWER)
        return lines
    if kind == "question":
        return [f"Question: {handoff.get('question')}"]
    return [
        f"Failed: {handoff.get('explanation')}",
        f"What you can do: {handoff.get('what_you_can_do')}",
    ]


def _solution_text(
    status: str, solution: dict[str, Any], envelope: dict[str, Any], pack: DomainPack | None = None
) -> str:
    confidence = float(envelope.get("confidence") or 0.0)
    band = envelope.get("confidence_band")
    lines = [f"Status: {status}" + (f" ({band}, confidence {confidence:.2f})." if band else ".")]
    handoff = envelope.get("handoff")
    if isinstance(handoff, dict):
        lines.extend(_handoff_lines(handoff))
    if pack is not None and pack.describe_answer is not None:
        lines.extend(pack.describe_answer(solution))
    strategy = solution.get("strategy") or {}
    if isinstance(strategy, dict) and strategy.get("name"):
        lines.append(f"Strategy: {strategy['name']}.")
    outcome = solution.get("expected_outcome")
    if isinstance(outcome, dict):
        lines.append("Expected outcome: " + json.dumps(outcome, default=str))
    for limitation in envelope.get("limitations") or []:
        said = isinstance(handoff, dict) and (
            limitation == handoff.get("explanation")
            or limitation.startswith(("waiting for your", "needs your", "what you can do"))
        )
        if not said:
            lines.append(f"Limitation: {limitation}")
    checks = envelope.get("verification") or []
    if checks:
        counts = Counter(str(check.get("verdict")) for check in checks)
        lines.append(
            f"Checked {len(checks)} claims before answering: "
            + ", ".join(
                f"{counts[verdict]} {verdict}"
                for verdict in ("backed", "weak", "unbacked")
                if counts[verdict]
            )
            + "."
        )
    if envelope.get("error") and not isinstance(handoff, dict):
        lines.append(f"Error: {envelope['error']}")
    if len(lines) == 1:
        lines.append(json.dumps(solution, default=str)[:2000])
    return "\n".join(lines)


def chat_arguments(spec: AgentSpec) -> tuple[str | None, tuple[str, ...]] | None:
    """How a chat message fills ``spec``'s required arguments: (the field its text goes to, the fields
    its entities go to), or None when one needs another agent's results (a strategy, a root cause)."""
    text: str | None = None
    entities: list[str] = []
    for name, info in spec["input_schema"].model_fields.items():
        if not info.is_required():
            continue
        if info.annotation is str and text is None and name in TASK_FIELDS:
            text = name
        elif info.annotation in (int, float, str):
            entities.append(name)
        else:
            return None
    return text, tuple(entities)


def message_field(spec: AgentSpec, known: dict[str, Any]) -> str | None:
    """The required text argument of ``spec`` a chat message fills: its only one not known already
    (the goal's entities and the tenant's defaults fill the others)."""
    missing = [
        name
        for name, info in spec["input_schema"].model_fields.items()
        if info.is_required() and info.annotation is str and name not in known
    ]
    return missing[0] if len(missing) == 1 else None


def agent_cards(capabilities: TenantCapabilities, pack: DomainPack) -> list[AgentCard]:
    """The tenant's agents as the front door sees them."""
    cards = []
    for spec in [capabilities.master, *capabilities.sub_agents.values()]:
        skills = tuple(spec.get("skills") or ())
        own = spec["name"] in capabilities.tenant_agents
        runnable = bool(skills) and (spec is capabilities.master or own)
        arguments = chat_arguments(spec)
        required = tuple(spec.get("required_entities") or ())
        if not runnable and arguments is not None:
            required = tuple(dict.fromkeys((*required, *arguments[1])))
        cards.append(
            AgentCard(
                name=spec["name"],
                description=spec["description"],
                skills=skills,
                domain=spec.get("domain") or pack.name,
                runnable=runnable,
                addressable=runnable or arguments is not None,
                required_entities=required,
                examples=master_examples(pack.name) if spec is capabilities.master else (),
                source="tenant" if own else "pack",
            )
        )
    return cards


def exemplars_for(pack: DomainPack, cards: Sequence[AgentCard]) -> list[Exemplar]:
    found = [*GENERIC_EXEMPLARS, *pack.routing_examples]
    for card in cards:
        if card.runnable:
            found.extend(
                Exemplar(text, "EXECUTE", None, card.domain) for text in (card.description, *card.skills)
            )
    return found


_discoveries: dict[int, Discovery] = {}


def discovery_for(evolution: EvolutionContext, settings: Settings) -> Discovery:
    found = _discoveries.get(id(evolution))
    if found is None:
        found = _discoveries[id(evolution)] = Discovery(
            evolution.pool, evolution.knowledge.embedder, evolution.clock, settings.discovery_ttl_s
        )
    return found


def make_front_door(
    *,
    tenant: TenantRecord,
    pack: DomainPack,
    capabilities: TenantCapabilities,
    tool_context: ToolContext,
    settings: Settings,
    evolution: EvolutionContext,
    model: BaseChatModel,
    solvers: Mapping[str, CompiledLoop],
    classify: Any,
    agent_loops: Mapping[str, CompiledLoop] | None = None,
    resources: RuntimeResources | None = None,
) -> FrontDoor:
    """The tenant's front door with the master agent's loops behind it."""
    cards = agent_cards(capabilities, pack)
    classifier = HeadClassifier(ExemplarClassifier(evolution.knowledge.embedder, exemplars_for(pack, cards)))
    analyzer: IntentAnalyzer = (
        classifier
        if isinstance(model, OfflinePlanner)
        else ModelIntentAnalyzer(model, classifier, overrule_at=settings.route_confidence)
    )
    return FrontDoor(
        tenant=tenant,
        pack=pack,
        capabilities=capabilities,
        tool_context=tool_context,
        settings=settings,
        evolution=evolution,
        model=model,
        discovery=discovery_for(evolution, settings),
        analyzer=analyzer,
        solvers=solvers,
        agent_loops=agent_loops or {},
        classify=classify,
        cards=cards,
        builder=None
        if resources is None
        else AgentBuilder(resources, tenant, AgentDrafter(evolution.knowledge.embedder, model)),
        resources=resources,
    )


#: "Build an agent system that ...", "create a multi-agent pipeline to ...": a system, not one agent.
_SYSTEM_REQUEST = re.compile(
    r"^\s*(?:please\s+)?(?:build|create|make|design|set up)\s+(?:me\s+)?(?:an?\s+)?(?:new\s+)?"
    r"(?:(?:agent|multi-agent|agentic)\s+(?:system|team|pipeline|workflow)|system\s+of\s+agents)\b",
    re.I,
)


def is_system_request(text: str) -> bool:
    """A chat message asking for an agent system (the meta-orchestrator's work, not the builder's)."""
    return bool(_SYSTEM_REQUEST.match(text))


async def run_system_request(
    resources: RuntimeResources, tenant_id: str, text: str, emit: Any
) -> dict[str, Any]:
    """The meta graph on ``text`` for the tenant, each step handed to ``emit`` as it finishes."""
    from master_agent.meta.graph import build_meta_graph  # meta stands beside the front door

    graph = build_meta_graph().compile()
    config: Any = {"configurable": {"tenant_id": tenant_id, RESOURCES_KEY: resources}}
    result: dict[str, Any] = {}
    async for update in graph.astream({"request": {"text": text[:5000]}}, config, stream_mode="updates"):
        for node, values in update.items():
            trace = (values or {}).get("routing_trace") or []
            emit({"event": "meta", "node": node, "step": trace[-1] if trace else None})
            if node == "finalize":
                result = dict((values or {}).get("result") or {})
    return result


def system_reply(result: dict[str, Any]) -> str:
    """What the chat answers about a meta request's result."""
    lines = [
        f"Meta request {result.get('request_id')}: {result.get('status')} ({result.get('playbook')} playbook)."
    ]
    if result.get("registered_agent"):
        lines.append(f"Registered as the agent {result['registered_agent']!r}: ask it by name.")
    quality = (result.get("gates") or {}).get("quality") or {}
    if quality:
        lines.append(f"Quality gate: {'passed' if quality.get('passed') else 'failed'}.")
    lines += [f"Not met: {item}" for item in quality.get("unmet") or []]
    if result.get("error"):
        lines.append(f"Failed: {result['error']}")
    return "\n".join(lines)


__all__ = ["NODES", "FrontDoor", "FrontDoorState", "IntentAnalysis", "make_front_door"]
