"""The front door's dispatch: the nodes a routed message ends in (the agent's loop, a query handler, the
builder, the meta-orchestrator, out of scope, a dropped flow), each answering with a reply and an envelope."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from langchain_core.messages import AIMessage
from langchain_core.runnables import RunnableConfig
from langgraph.config import get_stream_writer
from pydantic import ValidationError

from master_agent.capabilities.envelope import Status
from master_agent.capabilities.terms import Window, changed_between, time_window
from master_agent.routing.compound_answer import compound_data_question
from master_agent.routing.context import recent_turns
from master_agent.routing.graph.base import FrontDoorBase
from master_agent.routing.graph.cards import chat_arguments, message_field
from master_agent.routing.graph.follow_ups import CLOSES_THE_CONVERSATION, _as_answered
from master_agent.routing.graph.replies import _envelope, _paused_lines, _solution_text
from master_agent.routing.graph.state import FrontDoorState
from master_agent.routing.graph.systems import run_system_request, system_reply
from master_agent.routing.intent import message_entities
from master_agent.routing.queries import BUILT_IN_HANDLERS, QueryRequest, carried_over, stock_refusal
from master_agent.runtime.loop import NestedAgent, nested_agents, recursion_limit_for, task_text
from master_agent.runtime.solve import record_chat_goal
from master_agent.runtime.verification import Check, Verified, limitations_of, verify_before_answer


class HandlerNodes(FrontDoorBase):
    """The nodes a routed message ends in, and what they share (the nested agents, a refusal, what a
    message asked)."""

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
        by_master_agent = loop is None
        loop = loop or self.solvers[self.classify(goal)]
        max_iterations = self.settings.max_iterations
        final = await loop.ainvoke(run_input, {"recursion_limit": recursion_limit_for(max_iterations)})
        configurable = config.get("configurable") or {}
        thread_id = configurable.get("thread_id")
        if by_master_agent and self.resources is not None and thread_id and _is_strategic(final):
            # The same goal set through the API is a solution with outcome checks; said in a conversation
            # it is one too, on the conversation's thread, so the loop learns from it alike.
            await record_chat_goal(
                self.resources, self.tenant.tenant_id, str(thread_id), goal, final, configurable.get("run_id")
            )
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
        # A data question may ask several things of the data: each answered, none dropped.
        handlers = {**BUILT_IN_HANDLERS, "data": compound_data_question, **self.pack.query_handlers}
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
            # Amounts of money in the currency the service shows everywhere (the console's too).
            metrics=[replace(metric, currency=self.settings.currency) for metric in self.pack.data_metrics],
            problems=self.pack.problems,
            problem_metrics=self.pack.problem_metrics,
        )
        answer = await handler(request)
        # The handler's own evidence (its query and rows), then the same verification step every agent
        # loop runs: the answer's window and entities against what the message named.
        evidence = [Check.model_validate(check) for check in answer.data.get("verification") or []]
        verified = self._verified(answer.data, request.entities, request.message, answer.answered)
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
        # A window read by a guess (a holiday of a calendar the message did not name) makes the answer no
        # claim: said with the guess it rests on, as a partial answer. (An unbacked window check is the
        # message's window read without what the handler read beside it, a fiscal year's start: said.)
        answered = (
            answer.answered
            and not routing.get("best_guess")
            and not any(check.verdict == "weak" for check in verified.checks)
        )
        envelope = _envelope(
            "success" if answered else "partial", answer.data, limitations, verification=checks
        )
        data = {**answer.data, "verification": envelope["verification"]} if answer.data else {}
        return {
            "reply": {
                "kind": "query",
                "status": envelope["status"],
                "text": "\n".join([answer.text, *(_said_unbacked(line) for line in unbacked)]),
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
        if routing.get("reason") == CLOSES_THE_CONVERSATION:
            text = "Glad I could help. Ask again whenever you need anything."
            return {
                "reply": {"kind": "out_of_scope", "status": "success", "text": text},
                "envelope": _envelope("success", {}, []),
                "messages": [AIMessage(content=text)],
                **self._finish(state, goal),
            }
        stock = stock_refusal(goal, self.pack.data_metrics, self.evolution.clock.now())
        if stock is not None:
            # Refused before any handler read it ("how many chargers have we got left in the back"): the
            # reply names the data missing, as the data handler's does, not every agent's skills.
            return {
                "reply": {
                    "kind": "out_of_scope",
                    "status": "out_of_scope",
                    "text": stock.text,
                    "data": stock.data,
                },
                "envelope": _envelope("partial", stock.data, [stock.text]),
                "messages": [AIMessage(content=stock.text)],
                **self._finish(state, goal),
            }
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

    def _verified(
        self, data: dict[str, Any], entities: Mapping[str, Any], message: str, answered: bool
    ) -> Verified:
        """The verification step over a handler's answer; a message of several questions has each
        part checked against its own question's window and store, not the message's first."""
        confidence = 1.0 if answered else 0.0
        parts = [part for part in data.get("parts") or [] if isinstance(part, dict) and part.get("question")]
        if not parts:
            return verify_before_answer(
                data, self._asked(entities, message), confidence, model_finished=False, tools_called=True
            )
        each = [
            verify_before_answer(
                {key: value for key, value in part.items() if key != "verification"},
                self._asked(message_entities(str(part["question"])), str(part["question"])),
                confidence,
                model_finished=False,
                tools_called=True,
            )
            for part in parts
        ]
        return Verified(
            data,
            min(v.confidence for v in each),
            [check for v in each for check in v.checks],
            [line for v in each for line in v.limitations],
            None,
        )

    def _asked(self, entities: Mapping[str, Any], message: str) -> dict[str, Any]:
        """What a message named, as the verification step compares it: its entities, and the window
        its words name read on the runtime clock, in the whole message as the handler read it ("Diwali
        week compared with the week before" names Diwali week, not this week)."""
        asked = dict(entities)
        said = asked.pop("window", None)
        now = self.evolution.clock.now()
        window = (time_window(message, now) or time_window(str(said), now)) if said else None
        if said and (periods := changed_between(message, now)) is not None:
            # Two periods compared ("more in October than in September"): the span from the first's start.
            window = Window(
                start=periods[0].start, end=periods[1].end, label=" to ".join(p.label for p in periods)
            )
        if window is not None:
            asked["window"] = {
                "label": window.label,
                "start": window.start.isoformat(),
                "end": window.end.isoformat(),
                **({"reading": window.reading} if window.reading else {}),
            }
        return asked


def _is_strategic(final: dict[str, Any]) -> bool:
    """A strategic answer (a root cause, a strategy or an expected outcome), not an action's report."""
    solution = final.get("solution") or {}
    return any(solution.get(part) for part in ("root_cause", "strategy", "expected_outcome"))


def _said_unbacked(line: str) -> str:
    """A limitation as a line of the reply: one that says its verdict ("not backed: ...", "weak evidence:
    ...") keeps it, capitalised; any other is said not backed."""
    if line.startswith(("not backed:", "weak evidence:")):
        return line[:1].upper() + line[1:]
    return f"Not backed: {line}"
