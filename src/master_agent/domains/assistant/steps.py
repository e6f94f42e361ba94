"""A request of several steps ("cancel the design review and let Tom know by email", "check if I'm
free Thursday at 2 and, if I am, book 30 minutes with Omar"): where it divides, and each step's action.

A request divides at "and", "then" or a comma only where what follows opens as a request of its own
(its first word opens one of the pack's example requests, ``requests.EXAMPLES``) and the verb head
reads the two parts as different actions, one of them a change, each surely: "with Emma and Lucas on
Wednesday" stays one request, as does "tell Priya and Tom that ...". Each step's change is then
checked on its own (``stated_entities`` records one ``actions`` entry per change), so a reply can
never say a step was done that no tool confirmed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from master_agent.domains.assistant.requests import EXAMPLES, WRITES, Action, ActionReader, Reading

#: Where a request may divide: "and", "and then", "then", "; ", ", and" (what follows is checked).
_JOINS = re.compile(r"\s*[,;]?\s+(?:and\s+then|and\s+also|and|then)\s+|\s*;\s+", re.I)
#: A condition or a link before a step's verb: "if I am,", "if so", "then", "also", "please".
_LEAD = re.compile(
    r"^(?:(?:if\s+(?:so|yes|(?:i|it|they|he|she|we)(?:'m|'s|'re)?(?:\s+(?:am|is|are))?(?:\s+free)?|"
    r"that\s+works|there\s+is\s+(?:room|time))|then|also|please|pls|kindly)\b[\s,]*)+",
    re.I,
)
#: Words that open none of the example requests as a verb does ("Could you ...", "The review ...").
_NO_VERBS = frozenset({"can", "could", "please", "i", "i'm", "the", "a", "an", "my", "this", "that", "it"})
#: The first words of the pack's example requests: a step opens with one of them.
VERB_OPENINGS = (
    frozenset(
        text.split()[0].lower()
        for action, texts in EXAMPLES.items()
        if action != "feedback"
        for text in texts
    )
    - _NO_VERBS
)


#: The actions whose example requests open with each word ("email": send_mail only).
_OPENS: dict[str, set[Action]] = {}
for _action, _texts in EXAMPLES.items():
    for _text in _texts:
        _OPENS.setdefault(_text.split()[0].lower(), set()).add(_action)


def opened_reading(text: str, reading: Reading) -> Reading:
    """A step the verb head reads without being sure, opened by a verb that opens the example requests
    of one action only ("email her the agenda: hiring plan"), is that action: an imperative's verb
    says what it asks. A sure reading stands."""
    if reading.sure or not text.split():
        return reading
    opens = _OPENS.get(text.split()[0].lower().strip(",."), set())
    if len(opens) != 1:
        return reading
    [action] = opens
    return replace(reading, action=action, runner_up=reading.action, sure=True)


#: What a message says, said as its own clause with no one of its own ("write back to John ... and ask
#: whether the 120k includes contractor costs", "... and tell him it's moved"): the same step.
_SAYS_ON = re.compile(
    r"^(?:ask|tell|say|mention|remind|let)\s+(?:(?:him|her|them)\s+)?(?:know\s+)?(?:if|whether|that|about|for|to)\b"
    r"|^(?:ask|tell|remind|let)\s+(?:him|her|them)\b",
    re.I,
)


@dataclass(frozen=True)
class Step:
    """One step of a request: its words (the condition or link before its verb left out) and action."""

    text: str
    reading: Reading


def step_text(part: str) -> str:
    """A part of a request without the condition or link before its verb ("if I am, book ...")."""
    return _LEAD.sub("", part.strip(" ,;")).strip()


async def request_steps(goal: str, reader: ActionReader) -> list[Step]:
    """The steps of ``goal`` when it asks for more than one thing and at least one is a change;
    otherwise [] (the request is one step). A telling clause ("... and let her know I'm travelling")
    is what the mail before it says, but after another change it is a mail of its own: the telling
    of that change, never dropped."""
    parts: list[str] = []
    told: set[int] = set()  # the parts that are a telling clause after a change that is no mail
    cursor = 0
    for join in _JOINS.finditer(goal):
        following = step_text(goal[join.end() :])
        first = following.split()[0].lower().strip(",.") if following.split() else ""
        if first not in VERB_OPENINGS:
            continue
        if _SAYS_ON.match(following):
            before = step_text(goal[cursor : join.start()])
            action = (await reader.reading(before)).action if before else None
            if action not in WRITES or action == "send_mail":
                continue
            told.add(len(parts) + 1)
        parts.append(goal[cursor : join.start()])
        cursor = join.end()
    parts.append(goal[cursor:])
    texts = [(index, step_text(part)) for index, part in enumerate(parts) if step_text(part)]
    if len(texts) < 2:
        return []
    steps = [
        Step(
            text,
            Reading(action="send_mail", confidence=1.0, runner_up=reading.action, sure=True)
            if index in told
            else opened_reading(text, reading),
        )
        for index, text in texts
        for reading in [await reader.reading(text)]
    ]
    actions = [step.reading.action for step in steps]
    if (
        len(set(actions)) < len(actions)
        or not any(action in WRITES for action in actions)
        or not all(step.reading.sure for step in steps)
        or "feedback" in actions
    ):
        return []
    return steps
