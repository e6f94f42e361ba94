"""Entities read from a goal, and the context box rendered into prompts.

Extraction is generic (no domain words): "<Noun> <number>" -> ``<noun>_id``, the first percentage ->
``target_percent``, a duration -> ``timeline_days``, a money amount -> ``budget``. The word before the
number is a noun only where WordNet says so (``noun_first``): "borrow 6 lakh", "need 3", "iphone 15" and
"make it 15" name no id.
"""

from __future__ import annotations

import calendar
import json
import re
from typing import Any

from master_agent.capabilities.terms import entity_noun, entity_numbers_as_digits, time_mention, with_digits
from master_agent.capabilities.tools.lexicon import noun_first
from master_agent.models.prompt_blocks import render_tagged_json
from master_agent.runtime.state import ContextBox

_NOT_ENTITY_WORDS = frozenset(
    [
        "by",
        "within",
        "in",
        "to",
        "of",
        "for",
        "over",
        "under",
        "about",
        "than",
        "next",
        "last",
        "first",
        "top",
        "after",
        "before",
        "at",
        "on",
        "from",
        "and",
        "or",
        "the",
        "a",
        "an",
        "is",
        "are",
        "was",
        "be",
        "with",
        "per",
        "every",
        "each",
        "only",
        "least",
        "most",
        "up",
        "down",
        "into",
        # Grammar words WordNet files as nouns too ("it" is information technology), and the bounds of a
        # ranking or a range ("bottom 2", "max 6", "10 till 6").
        "it",
        "its",
        "this",
        "that",
        "these",
        "those",
        "what",
        "which",
        "who",
        "why",
        "how",
        "my",
        "your",
        "our",
        "their",
        "his",
        "her",
        "me",
        "us",
        "them",
        "bottom",
        "max",
        "min",
        "maximum",
        "minimum",
        "till",
        "until",
    ]
)
_NOUN_NUMBER = re.compile(
    r"\b([A-Za-z][A-Za-z]+)\s*(?:#|\s(?:number|no\.?|num)\s)?\s*(\d+)\b"
    # "Store 4 weekly sales" is Store 4: a unit after the number is one only as a whole word.
    r"(?!\s*(?:%|(?:percent|days?|weeks?|months?|years?|hours?|hrs?|min(?:ute)?s?|lakhs?|crores?|k)\b|[.,]\d))"
)
_PERCENT = re.compile(r"(?<!\d)(\d+(?:\.\d+)?)\s*(?:%|percent\b)", re.I)
_DURATION = re.compile(r"\b(\d+)\s*(day|week|month|year)s?\b", re.I)
_MONEY = re.compile(r"\$\s?(\d+(?:[.,]\d+)?)\s*([kKmM])?\b")
_DAYS_PER = {"day": 1, "week": 7, "month": 30, "year": 365}


def id_noun(word: str) -> bool:
    """Whether ``word`` before a number may name what the number identifies: a noun (WordNet's
    ``noun_first``), or any word where WordNet's files are not installed."""
    return noun_first(word) is not False


#: The word after a number: the thing a model's name and number qualify ("Pixel 9 cases").
_MONTHS = "|".join(name[:3] + r"[a-z]*" for name in calendar.month_name if name)
_QUALIFIED = re.compile(r"\s+([a-z]+)\b")


def _model_name(found: re.Match[str], text: str) -> bool:
    """Whether a word and its number are no id: a capitalised name and its number that qualify the noun
    after them, as a product's model does ("how many Pixel 9 cases", "Galaxy 9 chargers"; Store 2 sales
    stays Store 2), or a day of a month ("the FY ends 30 June")."""
    word = found.group(1)
    after = _QUALIFIED.match(text, found.end())
    if not entity_noun(word) and re.match(rf"\s+(?:{_MONTHS})\b", text[found.end() :], re.I):
        return True  # "FY ends 30 June": a day of a month, no id
    return (
        word[:1].isupper()
        and found.start() > 0
        and not entity_noun(word)
        and after is not None
        and noun_first(after.group(1)) is True
    )


def extract_entities(text: str) -> dict[str, Any]:
    """Structured values a goal states, keyed by the argument names tools use for them."""
    entities: dict[str, Any] = {}
    text = entity_numbers_as_digits(text)  # "store six" is Store 6
    window = time_mention(text)
    # "June 2026" is a time, not a June numbered 2026. What the time leaves is kept apart from it: "store
    # 8 on Janmashtami day" is no "8 day" once the holiday is out.
    named = text.replace(window, " ; ") if window else text
    for found in _NOUN_NUMBER.finditer(named):
        word, number = found.groups()
        key = f"{word.lower()}_id"
        if word.lower() not in _NOT_ENTITY_WORDS and key not in entities and id_noun(word):
            if _model_name(found, named):
                continue
            entities[key] = int(number)
    percent = _PERCENT.search(text)
    if percent:
        entities["target_percent"] = float(percent.group(1))
    duration = _DURATION.search(with_digits(text))  # "in two months"
    if duration:
        entities["timeline_days"] = int(duration.group(1)) * _DAYS_PER[duration.group(2).lower()]
    money = _MONEY.search(text)
    if money:
        amount = float(money.group(1).replace(",", ""))
        scale = {"k": 1e3, "m": 1e6}.get((money.group(2) or "").lower(), 1.0)
        entities["budget"] = amount * scale
    return entities


def new_context_box(goal: str, context: dict[str, Any], constraints: dict[str, Any]) -> ContextBox:
    return ContextBox(
        goal=goal,
        entities=extract_entities(goal),
        constraints=constraints,
        data={"context": context, "found": []},
        progress={},
        blockers=[],
        next=[],
        notes=[],
    )


#: Longest JSON text of one value in a compacted context box.
COMPACT_VALUE_CHARS = 200
#: Blockers a compacted context box keeps (the latest).
COMPACT_BLOCKERS = 3


def compact_context_box(box: ContextBox) -> ContextBox:
    """The box for a prompt over budget: long input values and blockers cut short, only the latest
    blockers, no notes. Keys and entities stay, so the model still knows what it has."""

    def short(value: Any) -> Any:
        text = json.dumps(value, default=str, sort_keys=True)
        return value if len(text) <= COMPACT_VALUE_CHARS else text[:COMPACT_VALUE_CHARS] + "…"

    data = dict(box["data"])
    data["context"] = {key: short(value) for key, value in (data.get("context") or {}).items()}
    return {
        **box,
        "data": data,
        "blockers": [short(item) for item in box["blockers"][-COMPACT_BLOCKERS:]],
        "notes": [],
    }


def render_context_box(box: ContextBox) -> str:
    """The box as a tagged JSON block (models read it; the offline planner parses it)."""
    return render_tagged_json("context_box", box)


def closing_context_box(
    box: ContextBox | None,
    goal: str,
    context: dict[str, Any],
    *,
    steps: list[str],
    blockers: list[str],
    notes: list[str],
    handoff: dict[str, Any] | None,
    limitations: list[str],
    outcome: Any = None,
) -> ContextBox:
    """The box as a flow ends it (seed 002's GOAL / ENTITIES / CONSTRAINTS / PROGRESS / NEXT), for
    the thread's state: the entities the request stated in its pack's terms as well as the generic
    ones, what ran and the outcome of the action asked for (``outcome``: done, or why not), and what
    the user is to do next (answer a question, accept a preview), if anything."""
    start = box or new_context_box(goal, context, {})
    stated = {
        key: value for key, value in context.items() if key not in ("proposal", "previous_task", "action")
    }
    if handoff and handoff.get("kind") == "question":
        upcoming = [f"answer: {handoff.get('question')}"]
    elif handoff and handoff.get("kind") == "preview":
        upcoming = ["accept, revise or cancel the preview"]
    elif handoff:
        upcoming = [str(handoff.get("what_you_can_do") or handoff.get("explanation") or "")]
    else:
        upcoming = [f"resolve: {item}" for item in limitations[:3]]
    return ContextBox(
        goal=goal or start["goal"],
        entities={**start["entities"], **stated},
        constraints=dict(start["constraints"]),
        data={**start["data"], "context": {}},
        progress={
            **start["progress"],
            "completed_steps": steps,
            **({"action": outcome} if outcome is not None else {}),
        },
        blockers=list(blockers),
        next=upcoming,
        notes=list(notes)[-5:],
    )
