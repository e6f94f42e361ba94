"""The steps of the routing decision (``RouteNodes.decide``), in the order it takes them:

_flow_decision       a message resuming or dropping a suspended flow, or answering the preview shown
_read_message        @override, and a follow-up completed with the turn before ("same for November")
read_answers         the answers to the clarifying questions so far, into the goal, entities and target
_reconsidered        the intent head's action corrected by what the goal says (a target and a deadline
                     ahead ask for work, a figure over a period gone by asks for its value)
_discovered          the tenant's agents that may take the goal; one made for it wins over a query
_said_before         what the conversation named that a sure request does not
_outcome             the decision tree (``routing.decision``), or the user's choice, or a refusal,
                     with the pack's second opinion on a message the head found ambiguous
_continued           a short message nothing serves on its own, read with the turn before it
_unserved_as_data    an unserved message naming a figure of the data (or data the tenant lacks): a query
                     (this step and the refusal of data the tenant lacks are in data_steps.py)
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from master_agent.capabilities.terms import (
    changed_between,
    counted_in_stock,
    entity_numbers_as_digits,
    goal_deadline,
    goal_target,
    holds_from_now,
    moves_a_figure,
    restated,
    time_mention,
    time_window,
)
from master_agent.routing.answer_shapes import shape_asked
from master_agent.routing.context import complete_follow_up, corrected_goal
from master_agent.routing.decision import (
    CREATE_OPTION,
    Outcome,
    decide_route,
    override_name,
    without_override,
)
from master_agent.routing.discovery import AgentCard, described_agent, made_for, names_agent
from master_agent.routing.graph.data_steps import DATA_QUERY, EXECUTE, DataSteps
from master_agent.routing.graph.flows import _waiting_preview, flow_command
from master_agent.routing.graph.follow_ups import (
    agent_meant,
    asks_a_share,
    asks_a_value,
    asks_about_the_figure,
    inherits_target,
    is_figure_question,
    names_a_figure,
)
from master_agent.routing.graph.state import FrontDoorState
from master_agent.routing.intent import explicit_builder_action, message_entities
from master_agent.routing.models import (
    Candidate,
    Clarification,
    IntentAnalysis,
    RouteTarget,
    RoutingDecision,
    SuspendedFlow,
)
from master_agent.runtime.answer_head import read_answer
from master_agent.runtime.proposals import changes_what_waits
from master_agent.runtime.recovery import pick_option


@dataclass
class Reading:
    """A message as ``decide`` reads it, before its intent is analysed."""

    message: str
    """The message without its ``@agent``."""
    goal: str
    """What is asked: the message, completed by the turn before and the answers to the questions asked."""
    follow_up: bool
    """Whether the goal was completed with the turn before."""
    override: str | None
    """The agent named (``@agent``, the agent named before a follow-up, or the option picked)."""
    entities: dict[str, Any] = field(default_factory=dict)
    """The values the answers to entity questions gave."""
    chosen: RouteTarget | None = None
    """The target the user chose outright (the builder, picked among create-or-execute)."""


def read_answers(reading: Reading, clarifications: list[dict[str, Any]]) -> Reading:
    """``reading`` with the answers to the clarifying questions asked so far: an entity's value (its goal
    says it), an option picked (the agent to run, or the builder), otherwise words added to the goal."""
    for asked in clarifications:
        question, answer = Clarification.model_validate(asked["question"]), str(asked["answer"]).strip()
        picked = pick_option(answer, question.options)
        goal = reading.goal
        if question.kind == "entity" and question.entity:
            value: Any = message_entities(answer).get(question.entity)
            if value is None:
                value = _lone_number(answer)
            if value is not None:
                reading.entities[question.entity] = value
                if question.entity not in message_entities(goal):
                    reading.goal = f"{goal.rstrip('?.! ')} ({answer})"
            else:
                reading.goal = f"{goal} {answer}"
        elif question.kind == "create_or_execute" and picked is not None:
            reading.chosen = RouteTarget(kind="builder") if picked == CREATE_OPTION else None
            if reading.chosen is None:
                reading.override = picked.removeprefix("Run ").removesuffix(" now")
        elif picked is not None:
            reading.override = picked
        else:
            reading.goal = f"{goal}. {answer}"
    return reading


class DecisionSteps(DataSteps):
    """The steps ``RouteNodes.decide`` takes (the module's docstring lists them)."""

    async def _flow_decision(
        self, text: str, state: FrontDoorState, previous: str | None
    ) -> RoutingDecision | None:
        """A message that resumes or drops a suspended flow, or answers the preview the last reply showed;
        None: none of them."""
        suspended = [SuspendedFlow.model_validate(f) for f in state.get("suspended") or []]
        handled = flow_command(text, suspended, _waiting_preview(state))
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
        # An answer to the preview the last reply showed ("move it to 12-1 instead" too): never the
        # preview's request with the words added to it.
        if _waiting_preview(state) and (await read_answer(text) is not None or changes_what_waits(text)):
            # An answer to the preview the last reply showed: a new flow of the agent that made it,
            # whose first step records the answer (``runtime.loop`` recall).
            return RoutingDecision(
                message=text,
                goal=text,
                intent="EXECUTE",
                confidence=1.0,
                target=RouteTarget(kind="agent", name=self.capabilities.master["name"]),
                reason="answers the preview waiting for acceptance",
                at=self.now(),
            )
        return None

    @staticmethod
    def _read_message(text: str, turns: list[dict[str, Any]]) -> Reading:
        """The message without its ``@agent``, completed with the turn before when it follows it up."""
        override = override_name(text)
        message = without_override(text) if override else text
        reading = Reading(message=message, goal=message, follow_up=False, override=override)
        if turns:
            completed = complete_follow_up(message, turns[-1])
            if completed is not None:
                reading.goal, reading.follow_up = completed, True
                # "same for November" after "@refund_rate_reporter October": the agent named before.
                named_before = override_name(str(turns[-1].get("text") or ""))
                if override is None and named_before == (turns[-1].get("target") or {}).get("name"):
                    reading.override = named_before
        return reading

    def _reconsidered(self, intent: IntentAnalysis, goal: str, override: str | None) -> IntentAnalysis:
        """The intent head's reading corrected by what the goal says it asks for."""
        if override:
            # Naming an agent asks it to do the message, whatever the message reads like.
            return intent.model_copy(update=EXECUTE)
        now = self.evolution.clock.now()
        if counted_in_stock(goal, self.pack.data_metrics, now) is not None:
            # "how many handsets are in the back room right now": stock, which the data handler names as
            # missing (the sales it has would answer another question).
            return intent.model_copy(update={**DATA_QUERY, "out_of_scope": False})
        if intent.action in ("EXECUTE", "AMBIGUOUS") and self.pack.data_metrics and asks_a_share(goal):
            # "what share of store 3's phone buyers also bought a case": a part of a group of the
            # tenant's own data, which one query answers; no figure of the pack is named by it, and no
            # agent does it (the data handler says what it lacks, or ``_refused_for_missing_data``).
            return intent.model_copy(update={**DATA_QUERY, "out_of_scope": False})
        if (
            intent.action in ("EXECUTE", "AMBIGUOUS")
            and self.pack.data_metrics
            and shape_asked(goal)
            and goal_target(goal) is None
            and names_a_figure(goal, self.pack.data_metrics) is not None
        ):
            # "store 3's attach rate month by month since April", "the smallest accessory add-on anyone
            # bought": a figure broken down or a statistic of the rows, with no target to reach, is a
            # question one query answers, not a goal ("and broken down by weekday?" names no figure: a
            # follow-up, or nothing alone).
            return intent.model_copy(update={**DATA_QUERY, "out_of_scope": False})
        if intent.out_of_scope and asks_a_value(goal, self.pack.data_metrics, now):
            # "AOV north vs west for August": a figure of the tenant's own data over a period gone by is
            # the data handler's to answer (or to say what it lacks), however the head reads the words.
            return intent.model_copy(update={**DATA_QUERY, "out_of_scope": False})
        unsure = intent.confidence < self.settings.route_confidence or intent.action == "AMBIGUOUS"
        if (
            intent.action in ("EXECUTE", "AMBIGUOUS")
            and unsure
            and asks_a_value(goal, self.pack.data_metrics, now, money=True)
        ):
            # "Need store 8's takings on Heritage Day - the braai one", "what did store 2 make on
            # accessories on the second Saturday of September": read unsure, a value of the data over a
            # period gone by, with nothing to do to it, is asked for (the data handler says what it read).
            return intent.model_copy(update=DATA_QUERY)
        if intent.action == "QUERY" and intent.query_kind == "data":
            if (
                goal_target(goal) is not None
                and goal_deadline(goal, now) is not None
                and changed_between(goal, now) is None
            ):
                # "Get store one up by a third over the next two months": a target and a date ahead ask
                # for the figure to move, not for its value; a figure would answer another question.
                return intent.model_copy(update=EXECUTE)
        elif intent.action == "QUERY" and intent.query_kind == "outcome":
            if (
                goal_target(goal) is not None
                and goal_deadline(goal, now) is not None
                and moves_a_figure(goal)
            ):
                # "We missed our August goal at store 5. Get it to 4% by end of January.": a past goal is
                # the background; a target, a deadline ahead and a verb that moves the figure are a goal.
                return intent.model_copy(update=EXECUTE)
            unsure = intent.confidence < self.settings.route_confidence
            if unsure and names_a_figure(goal, self.pack.data_metrics) and not moves_a_figure(goal):
                past = time_window(goal, now, direction="past")
                if past is not None and past.end <= now:
                    # Read unsure as an outcome, a figure over a period gone by is asked for its value.
                    # Read sure, it asks how a plan or goal turned out ("remember the basket plan for
                    # store 2 from September? did the 30-day check come back good or bad"): the period
                    # is when the plan was made, and only the outcome checks know what it set out to do.
                    return intent.model_copy(update={"query_kind": "data"})
        elif intent.action == "EXECUTE" and is_figure_question(goal, self.pack.data_metrics, now):
            # "acessory revnue store 7 in spetember": a figure of the data over a period gone by, with no
            # target, no deadline and no verb that moves it, asks for its value, not for a plan.
            return intent.model_copy(update=DATA_QUERY)
        return intent

    async def _discovered(
        self, intent: IntentAnalysis, goal: str, override: str | None
    ) -> tuple[IntentAnalysis, list[Candidate]]:
        """The tenant's agents that may take ``goal`` (best first), and the intent they may change."""
        candidates: list[Candidate] = []
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
                update = {**EXECUTE, "confidence": max(intent.confidence, top.score)}
                intent = intent.model_copy(update=update)
            elif not unsure_builder:
                candidates = candidates if intent.action == "AMBIGUOUS" else []
        if not override:
            intent = _lasting_change(intent, candidates, self.cards, goal)
        return intent, candidates

    def _said_before(
        self,
        intent: IntentAnalysis,
        candidates: list[Candidate],
        reading: Reading,
        previous_turn: Mapping[str, Any] | None,
        clarifications: list[dict[str, Any]],
    ) -> dict[str, Any]:
        """What the conversation named and a sure request does not (the store of the question before
        "ok make a plan to bring it down to 3% by january"): it fills what its agent needs when that
        agent is likely (as sure as an intent that is not asked about); otherwise the message may rather
        continue the turn before (``_continued``)."""
        top = candidates[0] if candidates else None
        sure = intent.confidence >= self.settings.route_confidence and not clarifications
        return {
            key: value
            for key, value in ((previous_turn or {}).get("entities") or {}).items()
            if sure
            and top is not None
            and top.score >= self.settings.clarify_below
            and key not in intent.entities
            and key not in reading.entities
        }

    async def _outcome(
        self,
        intent: IntentAnalysis,
        candidates: list[Candidate],
        reading: Reading,
        known: dict[str, Any],
        clarifications: list[dict[str, Any]],
        refused: bool,
        *,
        second_opinion: bool = True,
    ) -> tuple[Outcome, IntentAnalysis]:
        """Where the message goes: the user's choice, a refusal, or the decision tree; and its intent.
        ``second_opinion``: whether the pack's own reader may take a message the head found ambiguous
        (not a correction: it reads the value, not what it corrects)."""
        if reading.chosen is not None:
            outcome = Outcome(reading.chosen, "chosen by the user")
        elif refused and second_opinion and await self._pack_sure(reading.goal, refused=True):
            # Refused by the intent head, claimed by the pack on evidence the head cannot read: "let
            # the people on the Northwind call know I'll be ten minutes late" is a mail to an event's
            # people, not the status line ("off at 6 tonight") the head takes it for.
            return self._claimed_by_pack(), intent.model_copy(update=EXECUTE)
        elif refused:
            # The head is sure: what its tenants' users asked here and nothing served (the weather,
            # a match score, another product), however like a question about the data it reads.
            outcome = Outcome(RouteTarget(kind="out_of_scope"), "sure that no agent here is asked for it")
        else:
            outcome = decide_route(
                intent,
                candidates,
                self.cards,
                self.settings,
                rounds=len(clarifications),
                override=reading.override,
                known=known,
            )
        if (
            outcome.clarification is not None
            and outcome.clarification.kind == "open_ended"
            and not (reading.override or clarifications)
            and second_opinion
            and await self._pack_sure(reading.goal)
        ):
            # The pack's second opinion: its own reader is sure of a request the intent head, which
            # reads a message without its days, times and names, found ambiguous ("move my 3pm on
            # thursday to 4:30"). Its master agent takes it (and asks its own questions).
            outcome = self._claimed_by_pack()
            intent = intent.model_copy(update=EXECUTE)
        return outcome, intent

    def _claimed_by_pack(self) -> Outcome:
        master = self.capabilities.master["name"]
        return Outcome(
            RouteTarget(kind="agent", name=master), f"the {self.pack.name} pack is sure it asks {master}"
        )

    async def _pack_sure(self, goal: str, *, refused: bool = False) -> bool:
        """The pack's second opinion (``DomainPack.sure_request``); no opinion: not sure."""
        if self.pack.sure_request is None:
            return False
        today = self.evolution.clock.now().date()
        return await self.pack.sure_request(goal, self.settings, today, refused=refused)

    async def _continued(
        self,
        reading: Reading,
        intent: IntentAnalysis,
        outcome: Outcome,
        previous_turn: Mapping[str, Any],
        known: dict[str, Any],
        rounds: int,
        *,
        correction: bool = False,
    ) -> tuple[IntentAnalysis, list[Candidate] | None, Outcome] | None:
        """A short message nothing serves on its own ("now november", "call it refund_watch", "and his
        email?", "why so low?") right after a served one continues it (``reading``'s goal becomes the
        previous goal with the message): the intent, the candidates (None: unchanged) and the outcome;
        None: the message stands on its own. A ``correction`` ("sorry, make that 75") continues it
        whatever it reads like alone, with the value it gives in place of the one it corrects."""
        message = reading.message
        if not inherits_target(
            message,
            outcome.target,
            previous_turn,
            # An unsure CREATE or UPDATE goes to the builder unasked: no reading of its own.
            unsure=outcome.target.kind == "builder"
            and intent.confidence < self.settings.clarify_below
            and explicit_builder_action(message) is None,
            correction=correction,
        ):
            return None
        if correction:
            return await self._corrected(reading, intent, previous_turn)
        # Read with the previous goal, the previous entities (window included) under this message's. Read
        # so, it may ask for something else than the message before ("why so low?" after a figure: a
        # goal); otherwise it goes where the message before went.
        # A target or deadline the message states replaces the goal's own ("make it 10 points").
        # A deadline is no question's window: "halve it by February" after "store 6's refund rate
        # this month?" keeps the month the figure was of ("and for last quarter?" replaces it).
        restated_goal = str(previous_turn["goal"])
        if previous_turn.get("intent") == "EXECUTE" or time_mention(message, horizons=False):
            restated_goal = restated(restated_goal, message)
        reading.goal, reading.follow_up = f"{restated_goal.rstrip('?.! ')} ({message})", True
        said = {**(previous_turn.get("entities") or {}), **known}
        candidates: list[Candidate] | None = None
        reread = await self._reread(message, reading.goal, previous_turn, rounds, said)
        if reread is not None:
            intent, candidates, outcome = reread
        else:
            inherited = RouteTarget.model_validate(previous_turn["target"])
            outcome = Outcome(inherited, f"continues the previous message {previous_turn['text']!r}")
            intent = intent.model_copy(
                update={
                    "action": previous_turn.get("intent") or intent.action,
                    "query_kind": inherited.name if inherited.kind == "query" else None,
                }
            )
        entities = {**(previous_turn.get("entities") or {}), **intent.entities}
        return intent.model_copy(update={"entities": entities}), candidates, outcome

    async def _corrected(
        self, reading: Reading, intent: IntentAnalysis, previous_turn: Mapping[str, Any]
    ) -> tuple[IntentAnalysis, None, Outcome]:
        """The previous turn's request with the value a correction gives: its intent and target (another
        agent when the correction names or describes one: "sorry, I meant the staff leaderboard", "no,
        the other one - the invoice reader"), its entities under the correction's."""
        inherited = RouteTarget.model_validate(previous_turn["target"])
        named = next(
            (
                card.name
                for card in self.cards
                if card.addressable and names_agent(reading.message, card.name)
            ),
            None,
        )
        if named is None and inherited.kind == "agent" and described_agent(reading.message) is not None:
            found = await self.discovery.discover(
                self.tenant.tenant_id, self.tenant.capability_version, self.cards, reading.message, intent
            )
            named = found[0].name if found and found[0].score >= self.settings.route_score else None
        action = previous_turn.get("intent") or intent.action
        if named is not None and inherited.kind != "builder" and named != inherited.name:
            inherited, action = RouteTarget(kind="agent", name=named), "EXECUTE"
        reading.goal = corrected_goal(str(previous_turn["goal"]), reading.message)
        reading.follow_up = True
        entities = {**(previous_turn.get("entities") or {}), **message_entities(reading.message)}
        update = {
            "action": action,
            "query_kind": inherited.name if inherited.kind == "query" else None,
            "entities": entities,
            "out_of_scope": False,
        }
        reason = f"corrects the previous message {previous_turn['text']!r}"
        return intent.model_copy(update=update), None, Outcome(inherited, reason)

    async def _reread(
        self, message: str, goal: str, previous: Mapping[str, Any], rounds: int, known: dict[str, Any]
    ) -> tuple[IntentAnalysis, list[Candidate], Outcome] | None:
        """A follow-up ``message`` read with the goal before it (``goal``), when so read it is sure of
        another intent than the turn before and is served; None: it continues where the turn before
        went. After a figure, asking why or to move it is a goal. ``known`` holds the entities said
        before ("it" is the store the question before named)."""
        intent = await self.analyzer.analyze(goal, [])
        before = previous.get("target") or {}
        agent = before.get("name") if before.get("kind") == "agent" else None
        meant = agent_meant(message, str(agent)) if agent else None
        if meant is not None:
            # "from now on have it group the items by brand" after the agent ran: read with "it" as
            # that agent, a lasting change to it is asked for (its run's goal, read with the message,
            # reads as one more run).
            changed = await self.analyzer.analyze(meant, [])
            if changed.action == "UPDATE" and changed.confidence >= self.settings.route_confidence:
                intent = changed
        figure = before.get("kind") == "query" and before.get("name") == "data"
        if figure and asks_about_the_figure(message):
            # "why so low?", "give me a plan to halve it by February" after a figure: work on it.
            intent = intent.model_copy(
                update={**EXECUTE, "confidence": max(intent.confidence, self.settings.route_confidence)}
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


def _lasting_change(
    intent: IntentAnalysis, candidates: list[Candidate], cards: Sequence[AgentCard], goal: str
) -> IntentAnalysis:
    """``intent`` as an UPDATE when ``goal`` asks one of the tenant's own agents, named or described,
    for what is to hold from now on ("the staff rankings keep including people on loan from other
    shops - leave them out from now on"): a lasting change to it, not one more run (the head reads the
    run's words); otherwise unchanged."""
    top = candidates[0] if candidates else None
    if (
        top is None
        or intent.action not in ("EXECUTE", "AMBIGUOUS", "QUERY")
        or not any(card.name == top.name and card.source == "tenant" for card in cards)
        or not (made_for(top) or names_agent(goal, top.name))
        or not holds_from_now(goal)
    ):
        return intent
    update = {"action": "UPDATE", "query_kind": None, "confidence": max(intent.confidence, top.score)}
    return intent.model_copy(update=update)


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
