"""What a loop does when a call fails or needs the user (seed 002's decision matrix and user-input
triggers).

A failed call that says why (``errors.ToolFailure``: a tool's own, or a sub-agent envelope's
``error_type``) is decided by its type:

==================  ==================  =====================================================
error type          decision            what happens
==================  ==================  =====================================================
invalid_input       revise_plan         the model is told to call again with other arguments
conflict            try_another_way     the model is told to take another way (time, target)
not_found           ask_user            the flow ends with a question to the user
api_down, timeout   try_another_way     retried first; then, when the agent has a tool declared
                    (or exit)           ``instead_of`` the failing one, the model is told to use
                                        it; otherwise the flow ends with what failed and what
                                        the user can do instead
permission          exit                the flow ends with what failed and what to do
==================  ==================  =====================================================

A flow that ends without an answer hands the user a ``handoff``: a ``preview`` (a high-risk call
waiting for acceptance), a ``question`` (ask the user) or a ``failure`` (exit with an explanation).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, Literal

from master_agent.errors import ToolErrorType
from master_agent.runtime.proposals import read_feedback

Decision = Literal["revise_plan", "ask_user", "try_another_way", "exit"]

DECISIONS: dict[str, Decision] = {
    "invalid_input": "revise_plan",
    "conflict": "try_another_way",
    "not_found": "ask_user",
    "api_down": "exit",
    "timeout": "exit",
    "permission": "exit",
}
#: Error types worth calling again before deciding (the service may come back).
RETRIED: frozenset[str] = frozenset({"api_down", "timeout"})
#: Calls again of one failing call before its error is decided.
RETRY_LIMIT = 1
RETRY_DELAY_S = 0.5

_GUIDANCE: dict[Decision, str] = {
    "revise_plan": "Revise the plan: call it again with corrected arguments, or use another tool.",
    "try_another_way": "Try another way (another time, target or tool); do not repeat the same call.",
    "ask_user": "Ask the user for what is missing.",
    "exit": "Stop: tell the user what failed and what they can do instead.",
}
_WHAT_TO_DO: dict[str, str] = {
    "api_down": "The {service} service is not reachable. Check that it is running and that its address "
    "in the settings is right, then ask again; nothing was changed.",
    "timeout": "The {service} service did not answer in time. Ask again in a moment; nothing was changed.",
    "permission": "The {service} service refused the account's credentials. Update the account's user "
    "or password (the environment variable its settings name), then ask again; nothing was changed.",
    "not_found": "Tell me which one you meant (a name, an address or a date), or check that it exists.",
    "invalid_input": "Say it another way (for example a date as 2026-12-01 and a time as 14:00).",
    "conflict": "Pick another time or target.",
}


def failure_decision(error_type: str | None, alternatives: Sequence[str] = ()) -> Decision:
    """The decision matrix (an untyped failure is revised by the model, like invalid input). A
    temporary failure (the service is down or slow) of a tool with ``alternatives`` (tools declared
    ``instead_of`` it) is worked around rather than ended on."""
    if alternatives and (error_type or "") in RETRIED:
        return "try_another_way"
    return DECISIONS.get(error_type or "", "revise_plan")


def guidance(decision: Decision) -> str:
    return _GUIDANCE[decision]


def failure_handoff(
    tool: str, error_type: ToolErrorType | str, message: str, context: dict[str, Any]
) -> dict[str, Any]:
    """The answer a flow ends with when a failure is decided ``exit`` or ``ask_user``."""
    service = str(context.get("provider") or tool)
    decision = failure_decision(error_type)
    what = _WHAT_TO_DO.get(str(error_type), "Ask again, or say it another way.").format(service=service)
    if decision == "ask_user":
        return {
            "kind": "question",
            "question": f"{tool} found nothing: {message}. {what}",
            "error_type": error_type,
            "tool": tool,
            "context": context,
        }
    return {
        "kind": "failure",
        "explanation": f"{tool} failed ({error_type}): {message}",
        "what_you_can_do": what,
        "error_type": error_type,
        "tool": tool,
        "context": context,
    }


def low_confidence_question(confidence: float, blockers: Sequence[str]) -> dict[str, Any]:
    """The question a flow ends with when its answer is less sure than its agent accepts."""
    why = f" ({'; '.join(blockers[:2])})" if blockers else ""
    return {
        "kind": "question",
        "reason": "low_confidence",
        "question": f"I am only {confidence:.0%} sure of this answer{why}. Is it what you meant? Tell me "
        "more (another name, topic, day or time span) and I will look again.",
        "confidence": confidence,
    }


def pick_option(answer: str, options: Sequence[str]) -> str | None:
    """The option a user's answer names: its number (1-based), the option itself, or a part of it
    that only one option contains."""
    if not options:
        return None
    return _named_option(answer, options) or _told_apart(answer.strip().strip(".!").lower(), options)


def _named_option(answer: str, options: Sequence[str]) -> str | None:
    """The option an answer names outright: its number, the option itself, or a part only it contains."""
    cleaned = answer.strip().strip(".!").lower()
    if re.fullmatch(r"#?\d", cleaned) and 1 <= int(cleaned.lstrip("#")) <= len(options):
        return options[int(cleaned.lstrip("#")) - 1]
    for option in options:
        if cleaned == option.lower() or option.lower() in cleaned:
            return option
    if len(cleaned) >= 3:
        containing = [option for option in options if cleaned in option.lower()]
        if len(containing) == 1:
            return containing[0]
    return None


_OPTION_WORD = re.compile(r"[a-z0-9]{3,}")
#: How much of a word two forms of it share ("engineer" / "engineering", "finance" / "financial").
_STEM = 5


def _told_apart(answer: str, options: Sequence[str]) -> str | None:
    """The option an answer names by what tells it apart ("the sales one" of "David Okafor ..., Sales
    Director" and "David Chen ..., Engineering Lead"): the one option its words (or their first five
    letters) point to, where every word of the answer that points to one option alone points to it."""
    labels = [set(_OPTION_WORD.findall(option.lower())) for option in options]

    def hits(word: str) -> list[int]:
        stem = word[:_STEM]
        return [i for i, words in enumerate(labels) if any(w == word or w.startswith(stem) for w in words)]

    alone = {found[0] for word in _OPTION_WORD.findall(answer) if len(found := hits(word)) == 1}
    return options[alone.pop()] if len(alone) == 1 else None


#: How a message that changes direction starts ("Actually, check my calendar first").
_REDIRECT = re.compile(
    r"^\W*(?:actually|wait|instead|hold on|before that|forget (?:it|that|about)|never\s*mind|first\b|"
    r"new (?:task|request|question))\b",
    re.I,
)


def answers_question(question: Any, message: str) -> bool:
    """Whether ``message``, sent to a flow waiting on ``question`` (an ``interrupt()`` value), answers
    it. One that picks an option or, for a draft, approves, cancels or changes it, does; one that
    changes direction ("actually, ...", "wait, ...") does not: it starts a new flow and the waiting
    one is suspended (seed 002's interruption handling). Anything else is taken as the answer."""
    if not isinstance(question, dict):
        return True
    options = [str(option) for option in question.get("options") or []]
    if question.get("kind") == "approval" and read_feedback(message) is not None:
        # Approves, cancels or changes it ("actually, address it to Mia instead": a change of the
        # draft, not a new direction).
        return True
    # Only an option named outright outweighs a change of direction: "actually, list my agents" shares a
    # word with the option "master_agent", which tells no option apart in a message of its own.
    if options and _named_option(message, options) is not None:
        return True
    return _REDIRECT.search(message) is None


def answer_text(answer: Any) -> str:
    """A resume value as text (clients send a string, or an object with ``answer``/``decision``)."""
    if isinstance(answer, dict):
        for key in ("answer", "decision", "message", "choice"):
            if answer.get(key) is not None:
                return str(answer[key]).strip()
        return ""
    return str(answer if answer is not None else "").strip()
