"""Risk tiers of plain tool calls (``runtime.proposals``): a medium-risk call runs only after the user
approves its draft; a high-risk call runs only as an accepted proposal, and otherwise ends the flow
with its preview. At the start of a flow, a message answering the thread's pending proposal (accept,
revise, cancel) is recorded and its call's arguments become the flow's context."""

from __future__ import annotations

import asyncio
import json
import re
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool
from langgraph.types import interrupt
from pydantic import ValidationError

from master_agent.capabilities.spec import Risk
from master_agent.errors import ToolFailure, ToolInputError
from master_agent.runtime.answer_head import asks_a_change, read_answer
from master_agent.runtime.middleware.base import CallOutcome, LoopMiddleware, ToolCallRequest, ToolHandler
from master_agent.runtime.proposals import (
    HOW_TO_ANSWER,
    Feedback,
    Proposal,
    ProposalBook,
    call_risk,
    changes_what_waits,
    opens_with_approval,
    points_at_what_waits,
    revise_args,
)
from master_agent.runtime.recovery import answer_text
from master_agent.runtime.state import MasterAgentState

#: Rounds of "change X to Y" one medium-risk draft may go through before it is dropped.
DRAFT_ROUNDS = 3
#: Answers one draft may be shown again for (changes applied, and changes it could not take).
DRAFT_ANSWERS = 2 * DRAFT_ROUNDS


def _thread_id(config: RunnableConfig) -> str:
    return str((config.get("configurable") or {}).get("thread_id") or "")


#: An approval that covers every change of the request ("yes to both", "approve all of them").
_EVERY_DRAFT = re.compile(r"\b(?:both|all(?:\s+of\s+them)?|every(?:thing|\s+one)?|each)\b", re.I)
ALL_DRAFTS = "approved with every other change of this request"
#: The findings key that carries such an approval to the flow's later medium-risk calls.
APPROVED_ALL = "drafts_approved"


#: The key of an action record listing the changes the user asked of its draft that nothing applied.
NOT_APPLIED = "not_applied"


def not_applied(outcome: CallOutcome, name: str, unapplied: list[str]) -> CallOutcome:
    """A call approved after changes to its draft that nothing could apply: its action record says
    which (``not_applied``), so the answer never reports it as done the way the user asked (the
    verification step holds it below success and the reply names them)."""
    if not unapplied:
        return outcome
    result = outcome.result
    if isinstance(result, dict):
        # The record the verification step reads: the tool's action when it has one (``findings``
        # holds the same dict), else the result itself.
        action = result.get("action")
        record: dict[str, Any] = action if isinstance(action, dict) else result
        record[NOT_APPLIED] = list(unapplied)
        if "requested" not in record:
            record["requested"] = name
            record.setdefault("done", outcome.status == "success")
        outcome.content = json.dumps(result, default=str)
    outcome.blockers.append(f"{name}: ran without the change(s) asked: {', '.join(map(repr, unapplied))}")
    return outcome


@dataclass(kw_only=True)
class RiskMiddleware(LoopMiddleware):
    """Drafts, previews, proposals and claims of one agent's risky plain-tool calls."""

    state_keys: ClassVar[tuple[str, ...]] = ("context", "findings", "notes", "handoff")

    agent: str
    """The agent whose calls these are."""
    tools: dict[str, BaseTool]
    """The agent's plain tools."""
    tool_risks: dict[str, Risk]
    """The agent spec's risk per tool, over the tool's own."""
    proposals: ProposalBook | None = None
    """Where previews wait for the user (None: a high-risk call can never run)."""
    tenant_id: str = ""

    async def before_agent(
        self, state: MasterAgentState, config: RunnableConfig, update: dict[str, Any]
    ) -> None:
        answered = await self.proposal_feedback(str(state.get("goal", "")), config)
        if answered is None:
            return
        update["context"] = {**answered, **dict(update.get("context", state.get("context") or {}))}
        proposal = answered["proposal"]
        update["findings"] = {"proposal": proposal}
        update["notes"] = [
            *update.get("notes", []),
            f"the user answered proposal {proposal['proposal_id']} ({proposal['tool']}): "
            f"{proposal['status']} ({proposal['feedback']!r})",
        ]

    async def proposal_feedback(self, goal: str, config: RunnableConfig) -> dict[str, Any] | None:
        """A new flow that answers the thread's pending proposal (accept, revise, cancel): the answer
        is recorded, and the flow's context carries the proposal with the feedback (and, to accept or
        revise, the call's arguments: the accepted ones, or the ones the change makes)."""
        thread_id = _thread_id(config)
        if self.proposals is None or not thread_id:
            return None
        feedback = await read_answer(goal)
        if feedback is None and not changes_what_waits(goal):
            return None
        pending = await self.proposals.open_proposal(self.tenant_id, thread_id)
        if pending is None:
            return None
        # A change in the tool's own terms ("move it to 12-1 instead"; "ok, but make it 3pm"): the
        # preview is revised, never accepted or left acceptable as if it carried the change.
        if feedback != "cancel" and pending.tool in self.tools:
            changed = await self.apply_answer(pending.tool, pending.args, goal, feedback)
            if changed is not None:
                answered = await self.proposals.answer(pending, "revised", goal)
                return None if answered is None else {"proposal": answered.view(), **changed}
        if feedback is None:
            # "move it to 12-1 instead" that nothing can apply: the preview is answered all the
            # same (shown again as it was, with the change it could not take), never left waiting to be
            # accepted later as if it carried the change.
            feedback = "revise"
        statuses: dict[str, Literal["accepted", "cancelled", "revised"]] = {
            "accept": "accepted",
            "cancel": "cancelled",
            "revise": "revised",
        }
        answered = await self.proposals.answer(pending, statuses[feedback], goal)
        if answered is None:
            return None
        view = answered.view()
        if feedback == "cancel":
            return {"proposal": view}
        args = answered.args if feedback == "accept" else revise_args(answered.args, goal)
        return {"proposal": view, **args}

    async def wrap_tool_call(self, request: ToolCallRequest, handler: ToolHandler) -> CallOutcome:
        if request.kind != "tool":
            return await handler(request)
        name = request.name
        risk = call_risk(self.tools[name], request.args, self.tool_risks.get(name))
        claimed: Proposal | None = None
        if risk == "medium" and request.approved:
            note = f"{name}: medium risk, approved by the user with the answer that completed it"
        elif risk == "medium":
            args, declined, every, unapplied = await self.approve_draft(name, request.args, request.covers)
            if declined is not None:
                return declined
            request.args = args
            note = f"{name}: medium risk, the user approved the draft"
            if every:
                # "yes to both": the other changes of this request are approved with it.
                outcome = not_applied(await handler(request), name, unapplied)
                outcome.notes.insert(0, f"{note} and the request's other changes ({ALL_DRAFTS})")
                outcome.findings[APPROVED_ALL] = True
                return outcome
            if unapplied:
                outcome = not_applied(await handler(request), name, unapplied)
                outcome.notes.insert(0, note)
                return outcome
        elif risk == "high" and request.reports_approved:
            note = f"{name}: high risk, approved with the change it reports (its draft named this call)"
        elif risk == "high":
            claimed = await self.claim_accepted(name, request.args, request.config)
            if claimed is None:
                return await self.preview(name, request.args, request.call_id, request.config)
            note = f"{name}: high risk, running the accepted proposal {claimed.proposal_id}"
        else:
            return await handler(request)
        outcome = await handler(request)
        if claimed is not None:
            outcome = not_applied(outcome, name, list(claimed.preview.get(NOT_APPLIED) or []))
        outcome.notes.insert(0, note)
        if claimed is not None and self.proposals is not None:
            await self.proposals.finish(claimed, ok=outcome.status == "success", result=outcome.result)
        return outcome

    async def claim_accepted(
        self, name: str, args: dict[str, Any], config: RunnableConfig
    ) -> Proposal | None:
        thread_id = _thread_id(config)
        if self.proposals is None or not thread_id:
            return None
        return await self.proposals.claim(self.tenant_id, thread_id, name, args)

    async def unapplied_changes(self, thread_id: str, name: str, args: dict[str, Any]) -> list[str]:
        """The changes the user asked of this thread's earlier previews of exactly this call that
        nothing applied: a preview answered "revised" whose call came back unchanged, oldest first."""
        assert self.proposals is not None
        answered = await self.proposals.list(self.tenant_id, thread_id=thread_id, status="revised")
        same = [p for p in reversed(answered) if p.tool == name and p.args == args and p.feedback]
        asked = [str(text) for p in same for text in [*p.preview.get(NOT_APPLIED, []), p.feedback]]
        return list(dict.fromkeys(asked))[-DRAFT_ANSWERS:]

    async def describe_call(self, name: str, args: dict[str, Any]) -> dict[str, Any]:
        """What a call would do, in the tool's own words when it has them (``metadata["preview_of"]``:
        args -> dict, possibly awaitable), else its arguments."""
        describe = (self.tools[name].metadata or {}).get("preview_of")
        if not callable(describe):
            return dict(args)
        try:
            detail = describe(args)
            if asyncio.iscoroutine(detail):
                detail = await detail
        except (ToolInputError, ToolFailure, ValidationError) as error:
            return {**args, "problem": str(error)}
        return dict(detail) if isinstance(detail, dict) else dict(args)

    async def revise_call(self, name: str, args: dict[str, Any], text: str) -> dict[str, Any] | None:
        """The arguments an answer to a draft changes in the tool's own terms (``metadata["revise_of"]``:
        (args, text) -> the new arguments or None, possibly awaitable), or None."""
        revise = (self.tools[name].metadata or {}).get("revise_of")
        if not callable(revise):
            return None
        try:
            revised = revise(args, text)
            if asyncio.iscoroutine(revised):
                revised = await revised
        except (ToolInputError, ToolFailure, ValidationError):
            return None
        return dict(revised) if isinstance(revised, dict) else None

    async def approve_draft(
        self, name: str, args: dict[str, Any], covers: list[str] | None = None
    ) -> tuple[dict[str, Any], CallOutcome | None, bool, list[str]]:
        """A medium-risk call shown as a draft until the user approves it (its arguments, None, whether
        the approval covers every change of the request: "yes to both", and the changes the user asked
        for that nothing could apply), or cancels it (the arguments, the outcome that replaces the
        call). A change ("change X to Y", in the tool's own terms "also copy Hana") is applied to the
        draft and shown again; one nothing can apply leaves the draft as it was and says so."""
        draft = dict(args)
        text = ""
        feedback: Feedback | None = None
        said = ""
        # What else an approval approves (the mail that will report this change) is said in the draft.
        also = f" Approving it also approves: {'; '.join(covers)}." if covers else ""
        unapplied: list[str] = []
        changes = 0
        for _ in range(DRAFT_ANSWERS):
            if changes >= DRAFT_ROUNDS:
                break
            answer = interrupt(
                {
                    "kind": "approval",
                    "question": said
                    + f"Approve this draft of {name}?{also} Reply 'approve', 'cancel', or 'change X to Y'.",
                    "options": ["approve", "cancel"],
                    "agent": self.agent,
                    "tool": name,
                    "risk": "medium",
                    "draft": draft,
                    "detail": await self.describe_call(name, draft),
                    **({"not_applied": list(unapplied)} if unapplied else {}),
                    **({"covers": list(covers)} if covers else {}),
                }
            )
            text = answer_text(answer)
            # "that works", "off you go": read by meaning where no rule reads the answer.
            feedback = await read_answer(text)
            if feedback == "cancel":
                break
            revised = await self.apply_answer(name, draft, text, feedback)
            if feedback == "accept":
                # "yes, send it to Emma instead": approved with the change it carries.
                return revised or draft, None, _EVERY_DRAFT.search(text) is not None, unapplied
            if feedback is None and opens_with_approval(text):
                if revised is not None:
                    # "yes, and make it 45 minutes": approved with the change it carries, which the
                    # tool applied in its own terms (a hedge or a deferral applies none: it waits).
                    return revised, None, _EVERY_DRAFT.search(text) is not None, unapplied
                if await self.restates(name, draft, text):
                    # "yeah go with thursday" to a draft that says Thursday: approved as it stands.
                    return draft, None, _EVERY_DRAFT.search(text) is not None, unapplied
            if revised is None and not points_at_what_waits(text) and not await asks_a_change(text):
                # "let me check with Tom first", "sure, after lunch", "what does it say?": neither an
                # approval nor a change ("make it sound warmer" points at the draft: a change not applied);
                # nothing runs and the draft waits as it was.
                said = (
                    f"Nothing was done: {text!r} does not approve this draft, so it waits unchanged "
                    "(not sent, not booked, not changed). "
                )
                continue
            if revised is None:
                # A change nobody here can apply: the draft waits as it was, and says so (the next
                # "ok send" approves what is shown, never becomes words of a new request), and the
                # change is remembered as not done: what runs is never reported as carrying it.
                unapplied.append(text)
                said = f"I could not apply {text!r} to this draft; it is unchanged. "
                continue
            draft, said, changes = revised, "", changes + 1
        if not text or feedback == "cancel":
            reason = (
                f"declined: the user cancelled this {name} ({text!r}); it did not run. Do not call it again."
            )
            note = f"{name}: medium risk, the user cancelled the draft"
            blocker = f"{name}: cancelled by the user, not run ({text or 'no answer'})"
        else:
            reason = (
                f"declined: the user asked for a change the draft could not take ({text!r}); it did not "
                "run. Call it again with the change."
            )
            note = f"{name}: medium risk, the user asked for a change: {text!r}"
            blocker = f"{name}: not run ({text})"
        outcome = CallOutcome(status="error", content=reason, blockers=[blocker], notes=[note])
        return draft, outcome, False, unapplied

    async def restates(self, name: str, draft: dict[str, Any], text: str) -> bool:
        """Whether an answer reads, in the tool's own terms, as the values the draft already holds."""
        return await self.revise_call(name, draft, text) == draft

    async def apply_answer(
        self, name: str, draft: dict[str, Any], text: str, feedback: str | None
    ) -> dict[str, Any] | None:
        """The draft an answer changes, or None when it changes nothing: a generic "change X to Y"
        first, then the tool's own terms on the result ("not Tom - make it to Emma instead", "also
        copy Hana"), so an answer that asks both has both applied, never one in place of the other."""
        revised = revise_args(draft, text) if feedback == "revise" else dict(draft)
        own = await self.revise_call(name, revised, text)
        if own is not None:
            revised = own
        return revised if revised != draft else None

    async def preview(
        self, name: str, args: dict[str, Any], call_id: str, config: RunnableConfig
    ) -> CallOutcome:
        """A high-risk call not accepted yet: stored as a pending proposal (its preview), never run;
        the flow ends with the preview."""
        detail = await self.describe_call(name, args)
        preview: dict[str, Any] = {
            "tool": name,
            "risk": "high",
            "description": self.tools[name].description,
            "call": args,
            "detail": detail,
            "how_to_answer": HOW_TO_ANSWER,
        }
        thread_id = _thread_id(config)
        view: dict[str, Any] = {"proposal_id": None, "tool": name, "args": args, "status": "not stored"}
        if self.proposals is not None and thread_id:
            unapplied = await self.unapplied_changes(thread_id, name, args)
            if unapplied:
                # Previewed again as it was: the changes asked of it that nothing applied stay with
                # it, so accepting it never runs as if it carried them (``not_applied``).
                preview[NOT_APPLIED] = unapplied
                preview["detail"] = {"could not apply": "; ".join(repr(text) for text in unapplied), **detail}
            proposal = await self.proposals.propose(
                tenant_id=self.tenant_id,
                thread_id=thread_id,
                call_id=call_id,
                agent=self.agent,
                tool=name,
                args=args,
                risk="high",
                preview=preview,
            )
            view = proposal.view()
            note = f"{name}: high risk, preview {proposal.proposal_id} stored; waiting for the user"
        else:
            note = f"{name}: high risk and no proposal book here: it cannot run"
        content = {
            "status": "preview",
            "executed": False,
            "proposal": view,
            "note": "Not run: this call is high risk. The flow ends with this preview; the user accepts, "
            "revises or cancels it in a new message.",
        }
        return CallOutcome(
            status="partial",
            content=json.dumps(content, default=str),
            findings={"proposal": view},
            notes=[note],
            handoff={"kind": "preview", "proposal": view, "how_to_answer": HOW_TO_ANSWER},
        )
