"""Conversation context: the turns a new message is read with, and follow-ups completed from them."""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from master_agent.capabilities.terms import entity_numbers_as_digits, goal_target, restated, time_mention
from master_agent.routing.intent import STORE_MENTION, message_entities, strip_entities

#: Words a follow-up may consist of besides the values it changes ("and for Store 7?").
_FOLLOW_UP_WORDS = frozenset(
    [
        "and",
        "store",
        "for",
        "what",
        "about",
        "how",
        "same",
        "but",
        "now",
        "then",
        "also",
        "instead",
        "the",
        "at",
        "in",
        "of",
        "with",
        "please",
        "do",
        "it",
        "that",
        "same",
        "ok",
        "so",
    ]
)
_SPANS = {
    "store_id": STORE_MENTION,
    "target_percent": re.compile(r"\d+(?:\.\d+)?\s*(?:%|percent)", re.I),
    "timeline_days": re.compile(r"\b\d+\s*(?:days?|weeks?|months?|years?)\b", re.I),
}


def recent_turns(
    turns: Sequence[dict[str, Any]], now: datetime, limit: int, window_s: float
) -> list[dict[str, Any]]:
    """The last ``limit`` turns no older than ``window_s`` (seed 003: 10 messages, 1 hour)."""
    since = now - timedelta(seconds=window_s)
    fresh = [turn for turn in turns if datetime.fromisoformat(turn["at"]) >= since]
    return fresh[-limit:] if limit else []


def is_follow_up(text: str) -> bool:
    """A message that only changes values of the one before ("and for Store 7?", "what about last week")."""
    words = re.findall(r"[a-z]+", re.sub(r"'s\b", "", strip_entities(text).lower()))  # "and store 8's?"
    return bool(message_entities(text)) and all(word in _FOLLOW_UP_WORDS for word in words)


#: Words that point back to the work the turn before did ("same plan", "that again", "what you did").
_POINTS_BACK = re.compile(r"\b(?:same|again|that|it|what\s+you\s+did|likewise|too)\b", re.I)


def is_reuse(text: str, previous: dict[str, Any]) -> bool:
    """A message asking for the previous goal's work again for other values ("Same plan for Store 1,
    please", "run that again for store 7"): it points back, after a goal, and changes an entity while
    stating no target, figure or time of its own (those would make it a goal of its own)."""
    return (
        previous.get("intent") == "EXECUTE"
        and (previous.get("target") or {}).get("kind") == "agent"
        and "store_id" in message_entities(text)
        and _POINTS_BACK.search(text) is not None
        and goal_target(text) is None
        and time_mention(text) is None
        and len(re.findall(r"[A-Za-z']+", strip_entities(text))) <= 8
    )


def complete_follow_up(text: str, previous: dict[str, Any]) -> str | None:
    """The previous turn's goal with this message's values put in; None when it is no follow-up. A
    reuse ("same plan for Store 1") keeps the goal's own target and deadline, the user's, never a
    default's."""
    if not (is_follow_up(text) or is_reuse(text, previous)):
        return None
    # "store six" in the turn before is the store a follow-up's "and for store 2?" replaces.
    goal = entity_numbers_as_digits(str(previous.get("goal") or ""))
    if not goal:
        return None
    changed = message_entities(text)
    for key, pattern in _SPANS.items():
        if key not in changed:
            continue
        said = pattern.search(entity_numbers_as_digits(text))  # "store five" is Store 5
        if said is None:
            continue
        if pattern.search(goal):
            goal = pattern.sub(said.group(0), goal, count=1)
        else:
            goal = f"{goal.rstrip('?.! ')} ({said.group(0)})"
    window = time_mention(text) if "window" in changed else None
    if window:
        before = time_mention(goal)
        goal = goal.replace(before, window, 1) if before else f"{goal.rstrip('?.! ')} ({window})"
    return goal


#: A number as said (``2.5``, ``75``, ``1,500``), and one said as the value corrected ("not 3").
_NUMBER = re.compile(r"(?<![\w.])\d+(?:[.,]\d+)*(?![\w.]*\d)")
_REPLACED = re.compile(r"\bnot\s+(\d+(?:[.,]\d+)*)\b", re.I)


def corrected_goal(goal: str, correction: str) -> str:
    """The previous turn's ``goal`` with the value a ``correction`` gives in place of the one it corrects:
    the store it names, the target or time it states, or its one other number in place of the number it
    says it replaces ("2.5 lakh only, not 3") or else the goal's one number besides its store ("give
    staff_leaderboard a 45 second timeout" + "sorry, make that 75"). What cannot be placed so is added to
    the goal in brackets, as a follow-up's words are."""
    goal = entity_numbers_as_digits(goal)
    said = entity_numbers_as_digits(correction)
    changed = restated(goal, said)
    store = STORE_MENTION.search(said)
    if store is not None and STORE_MENTION.search(changed):
        changed = STORE_MENTION.sub(store.group(0), changed, count=1)
        said = STORE_MENTION.sub(" ", said)
    old = _REPLACED.findall(said)
    stores = STORE_MENTION.search(changed)
    if changed == goal and len(old) == 1 and stores is not None and stores.group(1) == old[0]:
        # "no, the other store - 5, not 6": the store named is the value replaced.
        new = _NUMBER.findall(_REPLACED.sub(" ", said))
        if len(new) == 1:
            start, end = stores.span(1)
            changed = f"{changed[:start]}{new[0]}{changed[end:]}"
    if changed == goal:
        new = _NUMBER.findall(_REPLACED.sub(" ", said))
        own = _NUMBER.findall(STORE_MENTION.sub(" ", goal))
        if len(new) == 1 and len(own) > 1 and not old:
            # "make it 90 days" after "... by 15% in 60 days": the goal's number said with the same unit.
            unit = re.search(rf"{re.escape(new[0])}\s*([a-z]+)", said, re.I)
            alike = [n for n in own if unit and re.search(rf"{re.escape(n)}\s*{unit.group(1)}", goal, re.I)]
            own = alike or own
        replaced = old[0] if len(old) == 1 and old[0] in own else own[0] if len(own) == 1 else None
        if len(new) == 1 and replaced is not None:
            changed = re.sub(rf"(?<![\w.]){re.escape(replaced)}(?![\w.]*\d)", new[0], goal, count=1)
    return changed if changed != goal else f"{goal.rstrip('?.! ')} ({correction})"
