"""What a request to the assistant asks it to do: one action of the pack's, or one it has no tool for.

The action is read by meaning, not by keywords: the request is embedded with the service's embedder
(``MASTER_AGENT_EMBEDDINGS``: the local MiniLM where installed) and takes the action of its nearest
example request below. The examples are everyday ways of asking for each verb; an action the pack has
no tool for (updating a contact, deleting mail, booking travel) has examples too, so such a request is
answered "I cannot do that", never with whatever tool its words happen to fill.

The action decides which values the request states for the tools (``tools.goal_entities``): a request
to move an event names the event and its new time, not a day to list free slots on.
"""

from __future__ import annotations

import asyncio
import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date
from functools import cache
from pathlib import Path
from typing import Literal

import numpy as np

from master_agent.capabilities.tools.lexicon import verb_base
from master_agent.domains.assistant.people import event_people
from master_agent.domains.assistant.scheduling import resolve_day, resolve_period, resolve_time
from master_agent.domains.assistant.shorthand import written_out
from master_agent.models.embeddings import Embedder, make_embedder
from master_agent.routing.intent_head import Features, LinearHead
from master_agent.settings import Settings

Action = Literal[
    "free_slots",
    "agenda",
    "schedule",
    "reschedule",
    "cancel_event",
    "contact",
    "read_mail",
    "send_mail",
    "unsupported",
    "feedback",
]

#: What each action does, in the user's words (the answer says which one was understood).
ACTION_NAMES: dict[Action, str] = {
    "free_slots": "find free time",
    "agenda": "list calendar events",
    "schedule": "create an event",
    "reschedule": "move an event",
    "cancel_event": "cancel an event",
    "contact": "look up a contact",
    "read_mail": "read and summarise email",
    "send_mail": "send an email",
    "unsupported": "something the assistant has no tool for",
    "feedback": "answer a draft or a preview",
}

#: Actions that change something on a server: done only when read back from it.
WRITES: frozenset[Action] = frozenset({"schedule", "reschedule", "cancel_event", "send_mail"})

EXAMPLES: dict[Action, tuple[str, ...]] = {
    "free_slots": (
        "What times am I free next Tuesday for 60 minutes",
        "When am I free tomorrow for half an hour",
        "Find me a free hour on Friday",
        "Do I have any availability next week",
        "Find an open slot in my calendar on Thursday afternoon",
        "When could I fit in a 30 minute call this week",
        "Which slots are still open on Monday",
        "Any gaps in my diary on Wednesday",
        "Where is there room for a one hour meeting this week",
        "Is there an opening on Friday morning",
        "Have I got a spare half hour tomorrow",
        "Where do I have two free hours between Monday and Wednesday",
        "Any 30 minute gaps over the next few days?",
        "What open time do I have on Thursday",
        "I need a 90 minute block sometime this week, what are my options?",
    ),
    "agenda": (
        "What is on my calendar next week",
        "Show me my meetings tomorrow",
        "Do I have conflicts on Tuesday",
        "What does my day look like today",
        "List my appointments this week",
        "Check my calendar first",
        "Do I have anything on Monday?",
        "Am I busy on Thursday afternoon",
        "Which meetings do I have on Friday",
        # A change supposed, not asked for: what it would run into is a look at the calendar.
        "If I moved the retro to Thursday, would that clash with anything?",
        "Would moving the design review to 2pm overlap with something",
        "What if the planning were at 3 instead, would I be double booked?",
        "Suppose we pushed the standup to 10, is anything in the way",
        "Hypothetically, if I shifted Friday's review to the morning, do I have a conflict?",
    ),
    "schedule": (
        "Schedule a meeting with David tomorrow at 2pm",
        "Book a call with Maria on Thursday at 10am",
        "Set up a 30 minute sync with the team next Monday at 9am",
        "Invite Priya to a lunch on Wednesday at noon",
        "Put a dentist appointment in my calendar on Friday at 8am",
        "Arrange a review with Tom next week",
        "Schedule board meeting next month",
        "Create an event called planning on the 3rd at 11am",
        "Get Lena and me together on Monday for an hour",
        "Can you find time for Omar and me tomorrow afternoon? project sync",
        "Add a 45 minute catch-up with Ben on Friday at 3",
        "Invite everyone to a celebration on Friday at 4pm",
        "Send an invite for a kickoff meeting on Monday at 9am",
        "Add a team dinner to my calendar next Thursday at 7pm",
        # A meal or a coffee with someone is a meeting in the calendar (ordering food is no tool's).
        "Book lunch with Priya on Wednesday",
        "Grab a coffee with Lena",
    ),
    "reschedule": (
        "Move my 1:1 with Maria to Friday at 3pm",
        "Reschedule the design review to Thursday at 2pm",
        "Push the standup to 10am",
        "Shift the budget sync to next Monday",
        "Postpone the product review to next week",
        "Can we move the retro to 11am",
        "Change the time of the weekly planning to 2pm",
        "Could you move the product review an hour later?",
        "Bring the design review forward by 30 minutes",
        "Let's do the budget sync at 4 instead",
        "I'm double booked on Monday, push the planning to 3",
        "Move Monday's planning half an hour later",
        "Can you move the standup 30 minutes earlier?",
        "Could you push my dentist appointment to Friday?",
        "Put the team lunch back to 1pm",
        "The design review needs to happen on Thursday instead",
        "Can we do the retro at 2 instead?",
        "Could the planning happen on Wednesday instead",
        "Bump the standup to 10",
        "Slide the product review to 11:30",
        "Push the retro back by an hour",
        "Shift my 2pm on Friday to 4",
    ),
    "cancel_event": (
        "Cancel my 1:1 with Maria on Thursday",
        "Delete the design review from my calendar",
        "Call off the sprint retro on Friday",
        "Remove the budget sync on Tuesday",
        "I can't make the product review, drop it from my calendar",
        "Cancel this week's standup, half the team is out",
        "Cancel my meeting on Monday",
        "Scrap Friday's retro",
        "Please cancel the customer call",
        "Clear my 4pm on Thursday",
        "Free up my 10am tomorrow",
        "Cancel the planning meeting this week, I'm travelling",
        "Cancel tomorrow's sync, nobody can make it",
        "Take the standup off my calendar tomorrow",
        "Get rid of the budget sync",
        "Knock Friday's retro off the schedule",
        "Cancel my 2pm on Friday",
        "Call off the offsite",
    ),
    "contact": (
        "What is David's email address",
        "Look up the contact details of the CFO",
        "Who is Priya in my contacts",
        "What is Maria's phone number",
        "Find the contact info for Tom",
        "How do I reach John",
        "Who is our head of marketing and what is her email",
        "Do I have an address for Kate",
        "What's Tom's number",
        "What's Lena's email?",
        "Lena Novak's email address please",
        "What's the best way to reach Omar",
        "How can I get in touch with Sara",
        "Give me Noah's email address",
        "Which email does Ben use",
        "Emma's contact details?",
    ),
    "read_mail": (
        "Summarise my unread mail",
        "Find emails from John about the project and summarise them",
        "Did Maria email me about the budget",
        "What did John write about Atlas",
        "Any new messages from David",
        "Search my inbox for messages about the contract",
        "Which emails need a decision from me",
        "Catch me up on my inbox",
        "Anything from Priya I should look at?",
        "What has David been writing to me about",
        "Any news from John on the migration?",
        "Is there any mail I should answer",
        "Has Priya replied yet",
        "Show me the latest emails about the renewal",
    ),
    "send_mail": (
        "Email the whole team about the budget freeze",
        "Send a note to the team saying the offsite moves to Friday",
        "Tell David that the report will be late",
        "Write to Maria asking for the third quarter numbers",
        "Let the team know the office is closed on Monday",
        "Send an email to David about the offsite",
        "Message Priya that the demo went well",
        "Reply to John that we keep the date",
        "Let everyone know the kitchen is closed tomorrow",
        "Inform the team that the release is delayed",
        "Drop Kate a line that the contract is signed",
        "Email Tom and tell him the demo is cancelled",
        "Let the team know about the new expense policy",
        "Write Priya a quick note: the launch slips a week",
        "Draft a message to Ben asking for the test results",
        "Email Omar and tell him the build is green",
        "Write to Ben asking for the slides, but don't send it yet",
        "Ask Lena whether she can join the review",
        "Ask David if he has the contract ready",
        "Check with Omar by email if Friday still works",
        "Reply to Maria's email: sounds good",
        "Answer John's mail saying we agree",
        "Start a draft to Kate about the renewal",
        "Prepare an email to Tom about the launch",
        "Shoot Ben a quick email, the release is out",
        # To the people an event invites, as its calendar lists them.
        "Let the people on the customer call know I'm running late",
        "Email everyone in the design review the agenda",
        "Mail the planning meeting's attendees that it starts at 11",
    ),
    "unsupported": (
        "Update Sarah's phone number",
        "Add a new contact for Anna",
        "Delete all emails from the newsletter",
        "Mark every email as read",
        "Book a flight to Berlin",
        "Order lunch for the team",
        "Set an alarm for 6am",
        "Pay the supplier's invoice",
        "Turn off the lights",
        "Unsubscribe me from this newsletter",
        "Archive the messages from last year",
        "Remind me to call the bank",
        "Pay the electricity bill",
        "Transfer money to my landlord",
        "Call Maria on the phone now",
        "Translate this document into French",
        "Ring David and tell him I'm late",
        "Phone Kate and say the meeting is off",
        "Get me a taxi to the station",
    ),
    # Answers to a draft or a preview waiting on the thread: the runtime applies them to it.
    "feedback": (
        "approve",
        "Please execute the proposed plan",
        "cancel",
        "Yes, go ahead",
        "No, don't",
        "Change Friday to Monday in the proposal",
        "Change the subject to quarterly update",
        "Looks good, send it",
    ),
}


_NAME = re.compile(r"(?<=[\w,;:?!.] )[A-Z][\w'-]*(?:'s)?")
WHEN = re.compile(
    r"\b(?:(?:this|next|last)\s+)?(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday|today|tomorrow|"
    r"week|month|morning|afternoon)(?:'s)?\b|\b\d{1,2}(?::\d{2})?\s*(?:am|pm)?\b|\b(?:at|on|by)\s+(?=\s|$)",
    re.I,
)


def masked(text: str) -> str:
    """The request with its names, days and times left out: a sentence embedding is pulled by what a
    request is about (a person, an event's title) as much as by what it asks to do; the action is in
    the rest."""
    text = WHEN.sub(" ", _NAME.sub("someone", text))
    return re.sub(r"\s+", " ", text).strip() or text


#: Words of a request's opening that carry its verb ("could you move", "cancel this week's").
OPENING_WORDS = 4
#: The trained verb head (``make train-verbs``: ``benchmarks/train_verbs.py``).
VERB_HEAD_PATH = Path(__file__).with_name("verb_head.json")


#: Closed classes of English that say what a verb acts on, right after it: object pronouns, determiners,
#: possessives ("text her", "scrap the retro", "bump my 2pm") and the particles of phrasal verbs ("loop in
#: Hana", "pencil in lunch", "call off the offsite", "push back the planning").
_OBJECT_PRONOUNS = frozenset({"me", "him", "her", "us", "them", "everyone", "everybody"})
_OBJECT_WORDS = _OBJECT_PRONOUNS | frozenset(
    {"it", "all", "the", "a", "an", "my", "our", "his", "their", "your", "this", "that", "these", "those"}
    | {"in", "up", "off", "back", "forward"}
)
#: Subjects: after a verb they make a question ("do I have", "is there", "have you", "suppose we").
_SUBJECT_WORDS = frozenset({"i", "you", "we", "there", "he", "she", "they"})


def _a_name(word: str) -> bool:
    return word[:1].isupper() and word.isalpha() and word != "I"


def acts_on(word: str) -> bool:
    """Whether ``word``, right after a verb, is what the verb acts on: a name ("text Omar") or a word of
    ``_OBJECT_WORDS``; a preposition or a day is not ("Mark on Wednesday")."""
    return word.lower() in _OBJECT_WORDS or _a_name(word.rstrip(",."))


def imperative_verb(text: str) -> str | None:
    """The verb ``text`` opens with as an imperative, by its syntax, or None: a word in WordNet's base
    verb form not followed by a subject ("scrap the retro", "loop in Hana"; not "do I have", "is there",
    "did Maria", "suppose we", "will it rain?"), or, in a request that is no question, a word WordNet has
    no verb for followed by the person it acts on ("text her", "unsubscribe me", "whatsapp Lena"; not
    "what is", "any gaps", "could the planning"). An adverb ("Hypothetically,"), a possessive ("Emma's")
    or a contraction opens none."""
    words = text.split()
    if not words or not words[0].isalpha():
        return None
    first, after = words[0].lower(), words[1].rstrip(",.") if len(words) > 1 else ""
    asked = text.rstrip().endswith("?")
    base = verb_base(first)
    if base == first and after.lower() not in (_SUBJECT_WORDS | {"it"} if asked else _SUBJECT_WORDS):
        return first
    if base is None and not asked and (after.lower() in _OBJECT_PRONOUNS or _a_name(after)):
        return first
    return None


def opening(text: str) -> str:
    """The request's first words: an imperative's verb is there, and weighs as much as the rest."""
    return " ".join(text.split()[:OPENING_WORDS])


def request_texts(requests: Sequence[str]) -> list[str]:
    """What the verb head reads of each request: its own words, names and days included (masking them
    lost 13 points on the validation rows: "pls find the invoice mail" read as paying one), chat
    shorthand written out ("w/" with, "thurs" Thursday: ``shorthand``), in training as in reading."""
    return [" ".join(written_out(text).split()) for text in requests]


def _cosine(left: Sequence[float], right: Sequence[float]) -> float:
    dot = sum(a * b for a, b in zip(left, right, strict=True))
    norm = math.sqrt(sum(a * a for a in left)) * math.sqrt(sum(b * b for b in right))
    return dot / norm if norm else 0.0


@dataclass(frozen=True, kw_only=True)
class VerbHead:
    """The trained head's weights and the confidence below which a reading is not acted on."""

    embedder: str
    """``model_name`` of the embedder whose vectors it reads (another embedder: no head)."""
    head: LinearHead
    temperature: float
    """Logits are divided by it before the softmax (fitted on the validation rows)."""
    ask_below: float
    """Below this confidence the request is not acted on: the user is asked what they want done."""
    openings: frozenset[str] = frozenset()
    """The verbs its training requests open with (``imperative_verb``): "text", "scrap", "pencil"."""


@cache
def load_verb_head(path: Path = VERB_HEAD_PATH) -> VerbHead | None:
    if not path.exists():
        return None
    raw = json.loads(path.read_text())
    features = raw.get("features") or {}
    return VerbHead(
        embedder=str(raw["embedder"]),
        head=LinearHead(
            labels=tuple(raw["labels"]),
            coef=np.asarray(raw["coef"], dtype=np.float64) / float(raw["temperature"]),
            intercept=np.asarray(raw["intercept"], dtype=np.float64) / float(raw["temperature"]),
            features=Features(
                lexical_dim=int(features.get("lexical_dim", 0)),
                lexical_weight=float(features.get("lexical_weight", 0.0)),
            ),
        ),
        temperature=float(raw["temperature"]),
        ask_below=float(raw["ask_below"]),
        openings=frozenset(str(word) for word in raw.get("openings") or ()),
    )


@dataclass(frozen=True, kw_only=True)
class Reading:
    """What a request asks for, as the reader understood it."""

    action: Action
    confidence: float
    """The head's calibrated probability (the nearest example's similarity without a head)."""
    runner_up: Action | None = None
    """The next most likely action."""
    sure: bool = True
    """False: the confidence is below the head's asking threshold; the request is not acted on."""


class ActionReader:
    """The trained verb head over one embedder; without a head for it (the hashing fallback of minimal
    installs), the nearest example request decides."""

    def __init__(self, embedder: Embedder, head: VerbHead | None = None) -> None:
        self.embedder = embedder
        found = head if head is not None else load_verb_head()
        self.head = found if found is not None and found.embedder == embedder.model_name else None
        self._examples: list[tuple[Action, list[float]]] | None = None
        self._lock = asyncio.Lock()

    async def _vector(self, text: str) -> list[float]:
        return [value for part in await self.embedder.embed([text, opening(text)]) for value in part]

    async def _ready(self) -> list[tuple[Action, list[float]]]:
        async with self._lock:
            if self._examples is None:
                pairs = [(action, text) for action, texts in EXAMPLES.items() for text in texts]
                texts = [masked(text) for _, text in pairs]
                vectors = await self.embedder.embed([*texts, *(opening(text) for text in texts)])
                whole, first = vectors[: len(texts)], vectors[len(texts) :]
                self._examples = [
                    (action, [*w, *o]) for (action, _), w, o in zip(pairs, whole, first, strict=True)
                ]
        return self._examples

    async def reading(self, request: str) -> Reading:
        """The request's action. A change (an event, an email) must read as one without its days and
        times too: "book a table for 4 on Friday at 8pm" reads as an event for its "Friday at 8pm",
        as what it is (no tool of the assistant's) without them. Measured on the verb head's 67
        validation requests and two reservations: 66 -> 67 of 69 read right, none lost."""
        request = written_out(request)
        found = await self._read(request)
        if found.action not in WRITES:
            return found
        bare = re.sub(r"\s+", " ", WHEN.sub(" ", request)).strip()
        if not bare or bare == " ".join(request.split()):
            return found
        without = await self._read(bare)
        if without.action == "unsupported" and without.confidence > found.confidence:
            return Reading(action="unsupported", confidence=without.confidence, runner_up=found.action)
        return found

    async def _read(self, request: str) -> Reading:
        if self.head is not None:
            (text,) = request_texts([request])
            vector = await self._vector(text)
            shares = self.head.head.probabilities(vector, text)
            ranked = sorted(shares, key=lambda name: shares[name], reverse=True)
            top = ranked[0]
            return Reading(
                action=_as_action(top),
                confidence=round(shares[top], 3),
                runner_up=_as_action(ranked[1]),
                sure=shares[top] >= self.head.ask_below,
            )
        vector = await self._vector(masked(request))
        best: dict[Action, float] = {}
        for action, example in await self._ready():
            best[action] = max(best.get(action, -1.0), _cosine(vector, example))
        ranked_actions = sorted(best, key=lambda name: best[name], reverse=True)
        return Reading(
            action=ranked_actions[0], confidence=best[ranked_actions[0]], runner_up=ranked_actions[1]
        )

    async def read(self, request: str) -> tuple[Action, float]:
        """The request's action and the reader's confidence in it."""
        found = await self.reading(request)
        return found.action, found.confidence


#: Actions the front door may hand the assistant on its verb head's word: a preview's answer or a request
#: with no tool is not one (the front door's own reading of them stands).
SECOND_OPINION: frozenset[Action] = frozenset(ACTION_NAMES) - {"unsupported", "feedback"}


async def sure_request(text: str, settings: Settings, today: date, *, refused: bool = False) -> bool:
    """Whether the assistant is sure ``text`` asks it for one of its actions: its verb head reads the
    action at or above its asking threshold, and the request says what it is about in words the front
    door's intent head does not read. For a message the head found ambiguous, that is when (a day, a span
    or a clock time), which a bare "move it" or "send it" does not say: "move my 3pm on thursday to 4:30",
    "what does wednesday look like". For one it refused outright (``refused``), only people said as an
    event's ("let the people on the Northwind call know I'll be ten minutes late", "update everyone in
    the budget sync"): a day alone does not make the weather on Friday a request of the assistant's."""
    text = written_out(text)
    if refused:
        if event_people(text) is None:
            return False
    elif (
        resolve_day(text, today) is None
        and resolve_period(text, today) is None
        and resolve_time(text) is None
        and event_people(text) is None
    ):
        return False
    reading = await action_reader(settings).reading(text)
    return reading.sure and reading.action in SECOND_OPINION


def _as_action(label: str) -> Action:
    if label not in ACTION_NAMES:
        raise ValueError(f"the verb head's label {label!r} is no action of {sorted(ACTION_NAMES)}")
    return label


_READERS: dict[str, ActionReader] = {}


def action_reader(settings: Settings) -> ActionReader:
    """One reader per embedder choice and process (loading a model is slow, reading is not)."""
    choice = settings.embeddings
    if choice not in _READERS:
        _READERS[choice] = ActionReader(make_embedder(choice, settings))
    return _READERS[choice]
