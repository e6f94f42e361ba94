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

import functools
import re
from dataclasses import dataclass, replace

from master_agent.capabilities.tools.lexicon import WordNetMissing, noun_first, verb_base, wordnet
from master_agent.domains.assistant.requests import (
    EXAMPLES,
    WRITES,
    Action,
    ActionReader,
    Reading,
    acts_on,
    imperative_verb,
    load_verb_head,
)

#: Where a request may divide: "and", "and then", "then", "; ", ", and" (what follows is checked).
JOINS = re.compile(r"\s*[,;]?\s+(?:and\s+then|and\s+also|and|then)\s+|\s*;\s+", re.I)
#: A condition or a link before a step's verb: "if I am,", "if so", "then", "also", "please".
_LEAD = re.compile(
    r"^(?:(?:if\s+(?:so|yes|(?:i|it|they|he|she|we)(?:'m|'s|'re)?(?:\s+(?:am|is|are))?(?:\s+free)?|"
    r"that\s+works|there\s+is\s+(?:room|time))|then|also|please|pls|kindly)\b[\s,]*)+",
    re.I,
)
#: The words the example requests write capitalised inside a sentence: names ("with Priya and Lena"),
#: whichever example opens with one.
_NAMES = frozenset(
    word.lower()
    for texts in EXAMPLES.values()
    for text in texts
    for word in (token.strip(",.?!:;") for token in text.split()[1:])
    if word[:1].isupper() and not re.fullmatch(r"I(?:'\w+)?", word)
)
_HEAD = load_verb_head()


@functools.cache
def verb_openings() -> frozenset[str]:
    """The verbs the pack's example requests and the verb head's training requests open with as
    imperatives (``imperative_verb``: not "what", "do I", "Emma's", "Hypothetically,"): a step opens
    with one of them. Read at first use, not at import: WordNet's files are read then, and a graph
    factory imports this pack inside the server's event loop."""
    examples = frozenset(
        verb
        for action, texts in EXAMPLES.items()
        if action != "feedback"
        for text in texts
        if (verb := imperative_verb(text)) is not None
    )
    return (examples | (_HEAD.openings if _HEAD is not None else frozenset())) - _NAMES


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
#: whether the 120k includes contractor costs", "... and tell him it's moved"): the same step. After a
#: change that is no mail, the mail telling it ("... and let Maria know").
_SAYS_ON = re.compile(
    r"^(?:ask|tell|say|mention|remind|let)\s+(?:(?:him|her|them)\s+)?(?:know\s+)?(?:if|whether|that|about|for|to)\b"
    r"|^(?:ask|tell|remind|let)\s+(?:him|her|them)\b"
    # "... and let Maria know?": a telling clause whoever it names, a question mark or not.
    r"|^let\s+(?:[A-Z][\w'-]*(?:\s+[A-Z][\w'-]*)?|everyone|everybody|the\s+team)\s+know\b\W*$",
    re.I,
)


def clause_verb(words: str, names: frozenset[str] = frozenset()) -> str | None:
    """The verb a clause after "and" or a comma opens with as a request of its own, or None when it opens
    with a name. A word that names one of the user's contacts is a name ("with emma and mark"), as is a
    capitalised word not followed by what a verb acts on ("with Emma and Mark on Wednesday"); a verb,
    capitalised or not, is followed by its object ("... and Email the team", "and text Omar")."""
    verb = imperative_verb(words)
    if verb is None or verb in names:
        return None
    split = words.split()
    if split[0][:1].isupper() and not acts_on(split[1] if len(split) > 1 else ""):
        return None
    return verb


def opens_with_a_verb(words: str) -> bool:
    """Whether ``words`` open with an imperative no example request opens with ("ping everyone who's in
    it", "notify the team"), by WordNet: the verb is one WordNet reads as a noun less often ("cake",
    "drinks" are not)."""
    verb = imperative_verb(words)
    return verb is not None and verb_base(verb) == verb and noun_first(verb) is False


@dataclass(frozen=True)
class Step:
    """One step of a request: its words (the condition or link before its verb left out) and action.
    ``unread``: a clause opened by a verb no example request opens with, which no tool is known to do:
    it is reported not done, never folded into the step before it."""

    text: str
    reading: Reading
    unread: bool = False


async def _asks_alone(part: str, reader: ActionReader) -> bool:
    """Whether the words before an unknown verb are a request of their own, read surely: "book a coffee
    and chat with Omar" is one request (its "book a coffee" reads as nothing the assistant does)."""
    text = step_text(part)
    reading = opened_reading(text, await reader.reading(text)) if text else None
    return reading is not None and reading.sure and reading.action not in ("unsupported", "feedback")


#: Senses of an unknown verb that count (WordNet lists them by frequency).
_VERB_SENSES = 2


def _kin_of_openings(verb: str, action: Action) -> bool:
    """Whether WordNet relates ``verb`` to a verb the action's example requests open with: one of its
    first senses is a sense of that verb, or directly under one ("notify" is a way to "inform"; nothing
    relates "notarize" to sending a mail)."""
    try:
        reader = wordnet()
    except WordNetMissing:
        return False
    senses = set(reader.synsets(verb, "v")[:_VERB_SENSES])
    near = senses | {above for sense in senses for above in sense.hypernyms()}
    return any(near & set(reader.synsets(word, "v")) for word, actions in _OPENS.items() if action in actions)


def _unread_reading(text: str, reading: Reading) -> Reading:
    """A clause opened by an unknown verb is its own step when the verb head reads it surely as an action
    WordNet relates its verb to (or its verb opens one action's examples); else it is a request the
    assistant cannot tell, done by no tool: the head reads every clause as some action."""
    reading = opened_reading(text, reading)
    verb = imperative_verb(text) or ""
    if reading.sure and reading.action != "feedback" and _kin_of_openings(verb, reading.action):
        return reading
    return Reading(action="unsupported", confidence=reading.confidence, runner_up=reading.action, sure=True)


def step_text(part: str) -> str:
    """A part of a request without the condition or link before its verb ("if I am, book ...")."""
    return _LEAD.sub("", part.strip(" ,;")).strip()


async def request_steps(goal: str, reader: ActionReader, names: frozenset[str] = frozenset()) -> list[Step]:
    """The steps of ``goal`` when it asks for more than one thing and at least one is a change;
    otherwise [] (the request is one step). ``names``: the lower-case names of the user's contacts,
    which open no step ("with emma and mark"). A telling clause ("... and let her know I'm travelling")
    is what the mail before it says, but after another change it is a mail of its own: the telling
    of that change, never dropped."""
    parts: list[str] = []
    told: set[int] = set()  # the parts that are a telling clause after a change that is no mail
    unread: set[int] = set()  # the parts opened by a verb no example opens with
    cursor = 0
    for join in JOINS.finditer(goal):
        following = step_text(goal[join.end() :])
        first = clause_verb(following, names)
        if first is None:
            continue  # "with Emma and Mark on Wednesday", "invite Tom and Lena": the people of one step
        if first not in verb_openings():
            if not opens_with_a_verb(following) or not await _asks_alone(goal[cursor : join.start()], reader):
                continue
            unread.add(len(parts) + 1)
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
    steps: list[Step] = []
    for index, text in texts:
        reading = await reader.reading(text)
        if index in told:
            steps.append(
                Step(text, Reading(action="send_mail", confidence=1.0, runner_up=reading.action, sure=True))
            )
        elif index in unread:
            reading = _unread_reading(text, reading)
            steps.append(Step(text, reading, unread=reading.action == "unsupported"))
        else:
            steps.append(Step(text, opened_reading(text, reading)))
    actions = [step.reading.action for step in steps]
    if (
        len(set(actions)) < len(actions)
        or not any(action in WRITES or step.unread for action, step in zip(actions, steps, strict=True))
        or not all(step.reading.sure for step in steps)
        or "feedback" in actions
    ):
        return []
    return steps
