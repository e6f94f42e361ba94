"""Intent analysis: what a message asks for.

Offline (the default model), a nearest-neighbour classifier over labelled exemplars with the
configured embedder: the shipped domain-neutral exemplars, each domain pack's own, and every agent's
description and skills as EXECUTE exemplars of its domain. With a real model, structured output at
temperature 0, with the offline classifier as the fallback when the model's answer is unusable.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage, SystemMessage
from pydantic import ValidationError

from master_agent.capabilities.terms import entity_numbers_as_digits, time_mention, written_out
from master_agent.models.chat import describe_model_failure
from master_agent.models.embeddings import Embedder
from master_agent.routing.exemplars import Exemplar
from master_agent.routing.models import Action, IntentAnalysis, QueryKind
from master_agent.runtime.context import extract_entities

logger = logging.getLogger(__name__)

#: Softmax temperature over label similarities: a gap of 0.05 in similarity is a factor e between labels.
LABEL_TEMPERATURE = 0.05
#: Similarity of the nearest exemplar below which a message is unlike anything known (confidence falls).
FAMILIAR_SIMILARITY = 0.45
#: Exemplars per label averaged into the label's similarity.
NEIGHBOURS_PER_LABEL = 2

#: How a message names a store and a time window (also the spans a follow-up replaces).
STORE_MENTION = re.compile(r"\bstore\s*#?\s*(\d+)\b", re.I)
WINDOW_MENTION = re.compile(
    r"\b(?:(last|previous|this|past)\s+(?:(\d+)\s+)?(day|week|month|quarter|year)s?|yesterday|today)\b", re.I
)


#: A word of three to seven letters before a number: where a slip of the store noun is looked for.
_BEFORE_NUMBER = re.compile(r"\b([A-Za-z]{3,7})(?=\s*#?\s*\d)")
_STORE_NOUNS = ("store", "stores")


def _slip_of(word: str, noun: str) -> bool:
    """Whether ``word`` is ``noun`` typed with one slip that keeps its letters: two neighbours swapped
    ("stroe"), one letter left out ("stor") or doubled or added ("storre"). A changed letter is no
    slip here: "score 80" and "stone 2" are other words."""
    if word == noun or abs(len(word) - len(noun)) > 1:
        return False
    if len(word) == len(noun):
        swapped = [i for i in range(len(word)) if word[i] != noun[i]]
        return (
            len(swapped) == 2
            and swapped[1] == swapped[0] + 1
            and word[swapped[0]] == noun[swapped[1]]
            and word[swapped[1]] == noun[swapped[0]]
        )
    short, long_ = sorted((word, noun), key=len)
    return any(long_[:i] + long_[i + 1 :] == short for i in range(len(long_)))


def store_noun_restored(text: str) -> str:
    """``text`` with a slip of the store noun before a number written as the noun ("stroe 2" is Store
    2), so the entities and the heads read the store a typo names."""

    def restored(match: re.Match[str]) -> str:
        word = match.group(1)
        noun = next((noun for noun in _STORE_NOUNS if _slip_of(word.lower(), noun)), None)
        return word if noun is None or word.lower() in _STORE_NOUNS else noun

    return _BEFORE_NUMBER.sub(restored, text)


#: A message about every store at once: "across all ten shops", "every branch", "every one of our
#: shops", "each single outlet", "company-wide", "the chain average", "the whole estate". Read only when
#: it names no store of its own.
_STORE_PLURALS = r"(?:stores|shops|branches|outlets|locations|sites|showrooms)"
_EVERY_STORE = re.compile(
    r"\b(?:all|every|each)(?:\s+single)?(?:\s+(?:one|last))?\s+(?:of\s+)?(?:[a-z0-9'-]+\s+){0,2}?"
    r"(?:stores?|shops?|branch(?:es)?|outlets?|locations?|sites?|showrooms?)\b"
    rf"|\bacross\s+(?:the\s+|our\s+)?(?:board|chain|estate|business|company|group|network|{_STORE_PLURALS})\b"
    r"|\b(?:chain|company|group|business|estate|network|nation|country)[\s-]?wide\b"
    r"|\b(?:the|our)\s+(?:whole\s+|entire\s+)?(?:chain|estate)\b"
    r"|\b(?:the|our)\s+(?:whole|entire)\s+(?:company|business|group|network)\b",
    re.I,
)


def message_entities(text: str) -> dict[str, Any]:
    """The values a message names: the goal entities, plus a time window when one is said; a message
    about every store at once says so (``stores: "all"``: it asks about no one store)."""
    text = entity_numbers_as_digits(store_noun_restored(text))
    entities = extract_entities(text)
    if "store_id" not in entities and _EVERY_STORE.search(text):
        entities["stores"] = "all"
    window = time_mention(text, horizons=False)  # "in 60 days" is a goal's horizon, not a data window
    if window:
        entities["window"] = window.lower()
    return entities


#: Words ``written_out`` would misread at the front door: "HR" is human resources, not hours, and a
#: "No." that is no "no. of ..." answers a question.
_KEPT_AS_SAID = re.compile(r"((?-i:\bHR\b)|\bno\.(?!\s*of\b))", re.I)


#: Chat shorthand for the words the heads know ("could u pls whip up a bot").
_TEXT_SPEAK = {"u": "you", "ur": "your", "pls": "please", "plz": "please", "thx": "thanks", "msg": "message"}
_TEXT_SPEAK_WORD = re.compile(r"(?<![\w.'])(" + "|".join(_TEXT_SPEAK) + r")(?![\w.'])", re.I)


def shorthand_written_out(text: str) -> str:
    """``text`` with business and chat shorthand written out ("avg basket", "txns", "rev", "u",
    "pls"), as the heads were trained on it: messages, exemplars and agents' texts alike pass here
    (``strip_entities``)."""
    text = _TEXT_SPEAK_WORD.sub(lambda match: _TEXT_SPEAK[match.group(1).lower()], text)
    parts = _KEPT_AS_SAID.split(text)
    return "".join(part if index % 2 else written_out(part) for index, part in enumerate(parts))


#: An amount or a duration with its unit: the unit is a whole word ("30 minutes" goes whole; it was
#: read as "30 m" + "inutes", and the heads saw a word they never learned).
_AMOUNT = re.compile(
    r"[$€£]?\d[\d,.]*\s*(?:(?:%|percent\b|k\b|m\b|bn\b|mins?\b|minutes?\b|hrs?\b|hours?\b|"
    r"days?\b|weeks?\b|months?\b|years?\b))?",
    re.I,
)


@functools.lru_cache(maxsize=4096)
def strip_entities(text: str) -> str:
    """The message without its entity values (stores, amounts, windows): what it is about. Kept per
    text: each is a Duckling parse or two, read by the intent head, the domain head and discovery for
    one message, and by every front door built anew for each exemplar and skill (0.8 s of the first
    message after warm-up, issue 42)."""
    text = STORE_MENTION.sub(
        "store", shorthand_written_out(entity_numbers_as_digits(store_noun_restored(text)))
    )
    window = time_mention(text)
    if window:
        text = text.replace(window, " ")
    text = _AMOUNT.sub(" ", text)
    return re.sub(r"\s+", " ", text).strip()


#: Vectors of the latest messages, by embedder and text: intent analysis and discovery of one message
#: embed it once between them.
_QUERY_VECTORS: dict[tuple[str, str], list[float]] = {}
QUERY_VECTORS_KEPT = 64


async def message_vector(embedder: Embedder, message: str) -> list[float]:
    """The embedding of what a message is about (its entity values stripped)."""
    text = strip_entities(message) or message
    key = (embedder.model_name, text)
    vector = _QUERY_VECTORS.get(key)
    if vector is None:
        (vector,) = await embedder.embed([text])
        if len(_QUERY_VECTORS) >= QUERY_VECTORS_KEPT:
            _QUERY_VECTORS.pop(next(iter(_QUERY_VECTORS)))
        _QUERY_VECTORS[key] = vector
    return vector


def forget_message_vectors() -> None:
    """Drop the kept message vectors (benchmarks time each step with its own embedding)."""
    _QUERY_VECTORS.clear()


#: Vectors of exemplar and agent texts, by embedder and text (``text_vectors``); the oldest are
#: dropped past ``TEXT_VECTORS_KEPT`` (the packs' texts are a few thousand; tenants' own agents add more).
_EXEMPLAR_VECTORS: dict[tuple[str, str], list[float]] = {}
TEXT_VECTORS_KEPT = 20_000


async def text_vectors(embedder: Embedder, texts: Sequence[str]) -> list[list[float]]:
    """The embeddings of ``texts``, each text embedded once per process: tenants of one pack share most
    exemplars and agent texts, and a front door (its exemplars) or a discovery index (its agents' texts)
    is built again for each tenant and whenever its graph or capabilities change."""
    model = embedder.model_name
    found = {t: _EXEMPLAR_VECTORS[(model, t)] for t in texts if (model, t) in _EXEMPLAR_VECTORS}
    missing = list(dict.fromkeys(t for t in texts if t not in found))
    if missing:
        for text, vector in zip(missing, await embedder.embed(missing), strict=True):
            found[text] = vector
            if len(_EXEMPLAR_VECTORS) >= TEXT_VECTORS_KEPT:
                _EXEMPLAR_VECTORS.pop(next(iter(_EXEMPLAR_VECTORS)))
            _EXEMPLAR_VECTORS[(model, text)] = vector
    return [found[t] for t in texts]


def forget_exemplar_vectors() -> None:
    """Drop the exemplars' vectors (the routing eval times a cold start)."""
    _EXEMPLAR_VECTORS.clear()


class IntentAnalyzer(Protocol):
    async def analyze(self, message: str, history: Sequence[str]) -> IntentAnalysis: ...


@dataclass(frozen=True)
class _Label:
    action: str
    query_kind: QueryKind | None


class ExemplarClassifier:
    """Nearest-neighbour intent over exemplars embedded once (per tenant's exemplar set)."""

    def __init__(self, embedder: Embedder, exemplars: Sequence[Exemplar]) -> None:
        self.embedder = embedder
        self.exemplars = list(exemplars)
        self._vectors: list[list[float]] | None = None
        self._matrix: np.ndarray | None = None
        self._lock = asyncio.Lock()

    async def _exemplar_vectors(self) -> list[list[float]]:
        async with self._lock:
            if self._vectors is None:
                # Embedded once per process (and before ready, by warm-up).
                texts = [strip_entities(e.text) for e in self.exemplars]
                self._vectors = await text_vectors(self.embedder, texts)
        return self._vectors

    async def warm(self) -> None:
        await self._exemplar_vectors()

    async def analyze(self, message: str, history: Sequence[str] = ()) -> IntentAnalysis:
        if self._matrix is None:
            self._matrix = np.asarray(await self._exemplar_vectors(), dtype=np.float64)
        query = await message_vector(self.embedder, message)
        sims = [float(sim) for sim in self._matrix @ np.asarray(query, dtype=np.float64)]
        by_label: dict[_Label, list[float]] = {}
        for exemplar, sim in zip(self.exemplars, sims, strict=True):
            by_label.setdefault(_Label(exemplar.action, exemplar.query_kind), []).append(sim)
        scores = {
            label: sum(top := sorted(values, reverse=True)[:NEIGHBOURS_PER_LABEL]) / len(top)
            for label, values in by_label.items()
        }
        best = max(scores, key=lambda label: scores[label])
        weights = {
            label: math.exp((score - scores[best]) / LABEL_TEMPERATURE) for label, score in scores.items()
        }
        share = weights[best] / sum(weights.values())
        nearest = max(sims)
        familiarity = min(1.0, max(0.0, nearest / FAMILIAR_SIMILARITY))
        confidence = round(share * familiarity, 3)
        # The domain of the nearest exemplar of the winning action that names one.
        ranked = sorted(zip(self.exemplars, sims, strict=True), key=lambda pair: pair[1], reverse=True)
        domain = next((e.domain for e, _ in ranked if e.action == best.action and e.domain), None)
        action = best.action
        # A request that says in so many words to make or change an agent is that, whatever its task
        # resembles (an agent's own skills would otherwise pull "create an agent that <skill>" to EXECUTE).
        explicit = explicit_builder_action(message)
        if explicit is not None and explicit != action:
            action, best, confidence = explicit, _Label(explicit, None), max(confidence, EXPLICIT_CONFIDENCE)
        reason = None
        if action == "AMBIGUOUS":
            reason = "the message does not say what to do"
        elif nearest < FAMILIAR_SIMILARITY:
            reason = "the message is unlike any request this service knows"
        return IntentAnalysis.model_validate(
            {
                "action": action,
                "confidence": confidence,
                "query_kind": best.query_kind,
                "entities": message_entities(message),
                "required_skills": [strip_entities(message)] if action == "EXECUTE" else [],
                "domain": domain,
                "ambiguity_reason": reason,
            }
        )


_EXPLICIT_CREATE = re.compile(
    r"^\s*(please\s+)?(can you\s+|could you\s+)?(i\s+(want|need|would like)\s+(you\s+)?to\s+)?"
    r"(create|build|make|set up|design|define|spin up)\s+(me\s+)?(a|an|one|another|a new)\s+"
    r"(new\s+)?(custom\s+)?(ai\s+)?(agent|assistant|bot)\b",
    re.I,
)
_EXPLICIT_UPDATE = re.compile(
    r"^\s*(please\s+)?(update|change|modify|edit|rename|reconfigure)\s+(the\s+|my\s+|our\s+)?"
    r"(agent|assistant|bot)\b",
    re.I,
)
#: An agent of the tenant's, by its identifier or a description ending in a noun agents are called by.
_AN_AGENT = (
    r"(?:[a-z][a-z0-9]*(?:_[a-z0-9]+)+|(?:the|my|our)\s+(?:[\w'-]+\s+){0,4}?"
    r"(?:agent|bot|assistant|digest|summary|report|reporter|leaderboard|one))\b"
)
#: A new agent made from one the tenant has ("fork the sales summary agent - daily version", "clone
#: refund_rate_reporter but monthly", "my own version of the returns digest that ..."): a CREATE, which the
#: head, seeing an agent it knows named, reads as a change to that agent.
_EXPLICIT_DERIVED = re.compile(
    r"^\s*(please\s+)?(can you\s+|could you\s+)?(?:(?:fork|clone|duplicate)\s+"
    + _AN_AGENT
    # "copy the weekly report to Dave" sends it: a copy of an agent is one named as an identifier.
    + r"|copy\s+[a-z][a-z0-9]*(?:_[a-z0-9]+)+\b)"
    + r"|\b(my own|a separate)\s+(version|copy|variant)\s+of\s+"
    + _AN_AGENT,
    re.I,
)
#: Confidence of an intent the message states in so many words.
EXPLICIT_CONFIDENCE = 0.9


#: An identifier: an agent's or a tool's name as the service spells it ("weekly_sales_summary").
IDENTIFIER = re.compile(r"[a-z][a-z0-9]*(?:_[a-z0-9]+)+", re.I)
#: What a command to run a named agent says beside the agent's name and the run's values (which
#: ``strip_entities`` takes out): a verb that starts a run, a courtesy, the words that narrow or place the
#: values ("only", "just", "for", "since"), and the nouns of values Duckling leaves behind ("store 4",
#: "week ending ..."). A closed class: a change to the agent says what to change ("sort the rows", "set
#: max iterations"), which none of these do.
_STARTS_A_RUN = ("run", "execute", "go", "start", "launch", "kick", "off", "fire", "up", "trigger", "do")
_COURTESIES = ("now", "again", "please", "thanks", "cheers", "ta")
_PLACES_A_VALUE = ("only", "just", "for", "on", "over", "from", "to", "since", "till", "until", "and")
_POINTS_AT = ("it", "the", "this", "that", "those")
_VALUE_NOUNS = ("store", "stores", "shop", "shops", "branch", "branches", "week", "weeks", "ending")
_VALUE_NOUNS_TOO = ("month", "months", "day", "days")
_RUN_WORDS = frozenset(
    (*_STARTS_A_RUN, *_COURTESIES, *_PLACES_A_VALUE, *_POINTS_AT, *_VALUE_NOUNS, *_VALUE_NOUNS_TOO)
)


def named_run(message: str, agents: Sequence[str], *, after_a_turn: bool = False) -> str | None:
    """The agent a message that is only a command to run it names by its identifier, with nothing beside
    the name but the run's values, a verb that starts it and courtesies ("go: refund_rate_reporter,
    2026-11-01..2026-11-15", "execute weekly_sales_summary, week ending 15 November",
    "returns_digest pls, store 3"); None otherwise. The trained head reads such a name as a change to the
    agent (its training named agents by identifier mostly to change them). ``after_a_turn``: a name
    alone right after a turn answers which agent it meant, and is left to that turn's reading."""
    said = [
        name
        for name in agents
        if IDENTIFIER.fullmatch(name) and re.search(rf"(?<![\w@]){re.escape(name)}(?!\w)", message, re.I)
    ]
    if len(said) != 1:
        return None
    rest = re.sub(rf"(?<![\w@]){re.escape(said[0])}(?!\w)", " ", message, flags=re.I)
    if IDENTIFIER.search(rest):
        return None  # another identifier: a new name, a tool (a change)
    words = re.findall(r"[a-z']+", (strip_entities(rest) or "").lower())
    if after_a_turn and not words:
        return None
    return said[0] if all(word in _RUN_WORDS for word in words) else None


def explicit_builder_action(message: str) -> Action | None:
    """CREATE or UPDATE when the message opens by asking for it in so many words ("create an agent
    that ...", "update the agent ...") or asks for a new agent made from one it has, else None."""
    if _EXPLICIT_CREATE.match(message) or _EXPLICIT_DERIVED.search(message):
        return "CREATE"
    if _EXPLICIT_UPDATE.match(message):
        return "UPDATE"
    return None


INTENT_PROMPT = """You are the intent analyzer of a business agent service. Classify the user's latest
message. action: CREATE (make a new agent), UPDATE (change an existing agent), EXECUTE (do a task or
reach a business goal), QUERY (ask for a fact: query_kind list_agents, outcome, knowledge, data or
other) or AMBIGUOUS (unclear what to do). Give your confidence (0-1), the entities named (e.g.
store_id, target_percent, timeline_days, window), the skills an agent would need, the business domain
(e.g. retail, marketing, hr, finance, assistant) and, when unclear, why. Earlier messages of the
conversation are context only."""


def judge_disagreement(model: IntentAnalysis, local: IntentAnalysis, overrule_at: float) -> IntentAnalysis:
    """The model's analysis, judged by the local classifier's. Agreeing, the model's stands. Disagreeing
    on the action, the classifier overrules the model when its calibrated confidence reaches
    ``overrule_at`` (the model's entities are kept); otherwise the model's action stands with its
    confidence capped by the classifier's doubt (``1 - local``), so a contested reading is asked about
    rather than routed at once. Either way the disagreement is recorded in ``ambiguity_reason``."""
    if model.action == local.action:
        return model
    reason = (
        f"the model read {model.action} ({model.confidence:.2f}), the local classifier "
        f"{local.action} ({local.confidence:.2f})"
    )
    if local.confidence >= overrule_at:
        return local.model_copy(
            update={"entities": {**model.entities, **local.entities}, "ambiguity_reason": reason}
        )
    capped = min(model.confidence, 1.0 - local.confidence)
    return model.model_copy(update={"confidence": capped, "ambiguity_reason": reason})


class ModelIntentAnalyzer:
    """Structured output of a real chat model at temperature 0 with the local classifier as the fallback
    when the model fails and the judge when they disagree (``judge_disagreement``)."""

    def __init__(self, model: BaseChatModel, fallback: IntentAnalyzer, *, overrule_at: float = 0.85) -> None:
        if "temperature" in type(model).model_fields:
            model = model.model_copy(update={"temperature": 0.0})
        self.runnable = model.with_structured_output(IntentAnalysis, method="function_calling")
        self.fallback = fallback
        self.overrule_at = overrule_at
        """The classifier's confidence from which it overrules the model (``MASTER_AGENT_ROUTE_CONFIDENCE``)."""

    async def analyze(self, message: str, history: Sequence[str] = ()) -> IntentAnalysis:
        context = "\n".join(f"- {turn}" for turn in history)
        prompt = [
            SystemMessage(
                content=INTENT_PROMPT + (f"\n\nConversation so far:\n{context}" if context else "")
            ),
            HumanMessage(content=message),
        ]
        try:
            answer = await self.runnable.ainvoke(prompt)
            intent = answer if isinstance(answer, IntentAnalysis) else IntentAnalysis.model_validate(answer)
        except (ValidationError, ValueError, TypeError) as error:
            logger.warning("intent analysis by the model unusable (%s); using the offline classifier", error)
            return await self.fallback.analyze(message, history)
        except Exception as error:  # a model fault must not end the chat: the offline classifier answers
            logger.warning("intent analysis by the model failed: %s", describe_model_failure(error))
            return await self.fallback.analyze(message, history)
        # The model's entities are kept; the values the message states literally win.
        intent = intent.model_copy(update={"entities": {**intent.entities, **message_entities(message)}})
        return judge_disagreement(intent, await self.fallback.analyze(message, history), self.overrule_at)
