"""The trained intent head: a multinomial logistic regression over the local sentence embedding of a
message (its entity values stripped) beside hashed counts of its words and word pairs, with its
confidence calibrated by temperature scaling.

Trained offline by ``make train-routing`` (``benchmarks/train_routing.py``) on labelled messages
written from the user's side; the weights ship in ``intent_head.json`` next to this module. Serving
needs numpy only. The head is tied to the embedder it was trained with: under another embedder (the
hashing fallback of minimal installs and some tests) there is no head and the exemplar classifier
answers alone.
"""

from __future__ import annotations

import itertools
import json
import logging
import re
import zlib
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from master_agent.routing.intent import (
    EXPLICIT_CONFIDENCE,
    IDENTIFIER,
    ExemplarClassifier,
    explicit_builder_action,
    message_vector,
    strip_entities,
)
from master_agent.routing.models import IntentAnalysis
from master_agent.routing.relevance import RelevanceHead

logger = logging.getLogger(__name__)

HEAD_PATH = Path(__file__).with_name("intent_head.json")
#: The head's label for what the labelled sets' users asked that no agent of their tenant served. It is
#: read as an EXECUTE (discovery's relevance head says whether an agent serves it) unless the head is
#: sure of it (``IntentHead.refuse_from``).
REFUSED = "OUT_OF_SCOPE"

_WORD = re.compile(r"[a-z]+(?:'[a-z]+)?|[@?]")
#: Below this confidence of the head, the exemplar classifier's reading is taken when it is at least
#: ``SECOND_OPINION_FROM`` sure (measured on the validation splits).
SECOND_OPINION_BELOW, SECOND_OPINION_FROM = 0.6, 0.9


def lexical_features(text: str, dim: int) -> np.ndarray:
    """Hashed counts (log-scaled, L2-normalised) of the words and adjacent word pairs of what a
    message is about (entity values stripped). A sentence embedding blurs the few words that decide
    an intent ("rename", "vs", "whip up a bot"); a linear model over them learns those it sees in
    training. CRC32 so that training and serving hash alike in any process."""
    words = _WORD.findall((strip_entities(text) or text).lower())
    counts = np.zeros(dim, dtype=np.float64)
    for token in (*words, *(f"{a} {b}" for a, b in itertools.pairwise(words))):
        counts[zlib.crc32(token.encode()) % dim] += 1.0
    counts = np.log1p(counts)
    norm = float(np.linalg.norm(counts))
    return counts / norm if norm else counts


#: What a known agent's name reads as: one token no message says, so that the head learns what is asked
#: of a named agent from the other words. Not "the agent": "run the agent" names none and is asked about.
AGENT_TOKEN = "agentname"


def agents_masked(text: str, names: Collection[str]) -> str:
    """``text`` with each of the tenant's agent ``names`` (those spelled as identifiers) read as
    ``AGENT_TOKEN``. A name says which agent, never what to do with it, yet a head learns its words
    ("weekly", "summary") as words of whichever intent its training named it in most (changes, mostly:
    "run weekly_sales_summary for week 46" read as one). Other identifiers (a tool's name, a name the
    tenant has no agent by, the new name of a rename) are kept as said."""
    known = sorted((name for name in names if IDENTIFIER.fullmatch(name)), key=len, reverse=True)
    if not known:
        return text
    pattern = re.compile(r"(?<![\w@])(?:" + "|".join(map(re.escape, known)) + r")(?!\w)", re.I)
    return pattern.sub(AGENT_TOKEN, text)


@dataclass(frozen=True, kw_only=True)
class Features:
    """What a head reads: the embedding, and the lexical counts at ``lexical_weight`` (0: none)."""

    lexical_dim: int = 0
    lexical_weight: float = 0.0
    mask_agents: bool = False
    """Whether the head reads messages with the tenant's agent names masked (``agents_masked``); heads
    trained before it read them as said."""

    def read(self, text: str, agents: Collection[str] = ()) -> str:
        """The text the head reads of a message sent to a tenant with agents named ``agents``."""
        return agents_masked(text, agents) if self.mask_agents else text

    def of(self, vector: Sequence[float], text: str) -> np.ndarray:
        embedded = np.asarray(vector, dtype=np.float64)
        if not self.lexical_dim:
            return embedded
        return np.concatenate([embedded, self.lexical_weight * lexical_features(text, self.lexical_dim)])


@dataclass(frozen=True, kw_only=True)
class IntentHead:
    """The weights of a trained head."""

    embedder: str
    """``model_name`` of the embedder whose vectors it reads."""
    labels: tuple[str, ...]
    """Its classes: an action, or ``QUERY:<query kind>``."""
    coef: np.ndarray
    """Weights, one row per label."""
    intercept: np.ndarray
    temperature: float
    """Logits are divided by it before the softmax (fitted on the validation split)."""
    features: Features
    domains: LinearHead | None
    """Which domain pack's master agent serves an EXECUTE (or ``other``: none of the packs'), from
    the messages each was asked in training: discovery's skill match for a pack's master agent."""
    master_examples: dict[str, tuple[str, ...]]
    """By domain pack: training messages its master agent was asked, which discovery reads as more
    of that agent's skills (a pack's few skills are phrased one way; users phrase them many)."""
    refused_examples: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """By domain pack: training messages its tenants' users asked that none of its agents served (out of
    scope), which the relevance head weighs a message's nearness to."""
    relevance: RelevanceHead | None = None
    """Which of a tenant's agents a message asks for (``routing.relevance``); None: discovery's
    formula."""
    refuse_from: float = 1.0
    """Probability of ``REFUSED`` from which a message is out of scope outright, whatever discovery
    finds (picked on the validation splits; 1.0: never)."""
    follow_up_refuse_from: float = 1.0
    """Probability of ``REFUSED`` of a message read alone from which it is out of scope when it is said
    right after a served turn (picked on the validation splits' follow-ups; 1.0: never). The head learnt
    from opening messages only: a follow-up that asks what no agent does ("and ring her for me") reads
    less sure of it than an opening message would, and one that continues its thread less still."""

    def probabilities(self, vector: list[float], text: str) -> dict[str, float]:
        """By label, the probability for a message (``text``) whose embedding is ``vector``."""
        logits = (self.coef @ self.features.of(vector, text) + self.intercept) / self.temperature
        weights = np.exp(logits - logits.max())
        shares = weights / weights.sum()
        return {label: float(share) for label, share in zip(self.labels, shares, strict=True)}


@dataclass(frozen=True, kw_only=True)
class LinearHead:
    """A softmax-linear classifier over an embedding."""

    labels: tuple[str, ...]
    coef: np.ndarray
    intercept: np.ndarray
    features: Features

    def probabilities(self, vector: list[float], text: str) -> dict[str, float]:
        logits = self.coef @ self.features.of(vector, text) + self.intercept
        weights = np.exp(logits - logits.max())
        shares = weights / weights.sum()
        return {label: float(share) for label, share in zip(self.labels, shares, strict=True)}


def domain_shares(embedder_name: str, vector: list[float], text: str) -> dict[str, float]:
    """The domain head's probability of each domain for a message (``text``, embedded as ``vector``);
    empty without a head for the embedder."""
    head = load_head()
    if head is None or head.domains is None or head.embedder != embedder_name:
        return {}
    return head.domains.probabilities(vector, text)


def relevance_head(embedder_name: str) -> RelevanceHead | None:
    """The trained relevance head for the embedder, or None."""
    head = load_head()
    if head is None or head.embedder != embedder_name:
        return None
    return head.relevance


def _features(raw: dict[str, Any] | None) -> Features:
    if not raw:
        return Features()
    return Features(
        lexical_dim=int(raw["lexical_dim"]),
        lexical_weight=float(raw["lexical_weight"]),
        mask_agents=bool(raw.get("mask_agents", False)),
    )


@cache
def load_head(path: Path = HEAD_PATH) -> IntentHead | None:
    """The shipped head (read once), or None when there is none."""
    if not path.exists():
        logger.warning("no trained intent head at %s: the exemplar classifier answers alone", path)
        return None
    raw = json.loads(path.read_text())
    return IntentHead(
        embedder=str(raw["embedder"]),
        labels=tuple(raw["labels"]),
        coef=np.asarray(raw["coef"], dtype=np.float64),
        intercept=np.asarray(raw["intercept"], dtype=np.float64),
        temperature=float(raw["temperature"]),
        features=_features(raw.get("features")),
        domains=LinearHead(
            labels=tuple(raw["domains"]["labels"]),
            coef=np.asarray(raw["domains"]["coef"], dtype=np.float64),
            intercept=np.asarray(raw["domains"]["intercept"], dtype=np.float64),
            features=_features(raw["domains"].get("features")),
        )
        if raw.get("domains")
        else None,
        master_examples={pack: tuple(texts) for pack, texts in (raw.get("master_examples") or {}).items()},
        refused_examples={pack: tuple(texts) for pack, texts in (raw.get("refused_examples") or {}).items()},
        relevance=RelevanceHead.from_json(raw["relevance"]) if raw.get("relevance") else None,
        refuse_from=float(raw.get("refuse_from", 1.0)),
        follow_up_refuse_from=float(raw.get("follow_up_refuse_from", 1.0)),
    )


def master_examples(pack: str) -> tuple[str, ...]:
    """Training messages of the pack's master agent (none without a head)."""
    head = load_head()
    return head.master_examples.get(pack, ()) if head is not None else ()


def refused_examples(pack: str) -> tuple[str, ...]:
    """Training messages no agent of the pack served (none without a head)."""
    head = load_head()
    return head.refused_examples.get(pack, ()) if head is not None else ()


def split_label(label: str) -> tuple[str, str | None]:
    """(action, query kind) of a head label."""
    action, _, kind = label.partition(":")
    return action, kind or None


class HeadClassifier:
    """Intent by the trained head; what the head cannot know from its training comes from the exemplar
    classifier over this tenant's exemplars (the domain, the entities, a request to make or change an
    agent in so many words). Without a head for the embedder, the exemplar classifier answers alone."""

    def __init__(
        self, exemplars: ExemplarClassifier, head: IntentHead | None = None, agents: Collection[str] = ()
    ) -> None:
        self.exemplars = exemplars
        # The tenant's addressable agents' names: what a head trained with ``mask_agents`` masks.
        self.agents = frozenset(agents)
        self.head = head if head is not None else load_head()
        if self.head is not None and self.head.embedder != exemplars.embedder.model_name:
            self.head = None

    async def warm(self) -> None:
        await self.exemplars.warm()
        if self.head is not None:
            await message_vector(self.exemplars.embedder, "warm up")

    async def analyze(self, message: str, history: Sequence[str] = ()) -> IntentAnalysis:
        base = await self.exemplars.analyze(message, history)
        if self.head is None:
            return base
        read = self.head.features.read(message, self.agents)
        shares = self.head.probabilities(await message_vector(self.exemplars.embedder, read), read)
        label = max(shares, key=lambda name: shares[name])
        action, query_kind = split_label(label)
        confidence = shares[label]
        refused = shares.get(REFUSED, 0.0) >= self.head.refuse_from
        refused_after_a_turn = shares.get(REFUSED, 0.0) >= self.head.follow_up_refuse_from
        likeliest_refused = action == REFUSED
        if action == REFUSED:
            # Refused by the tenants the head learnt from; whether this tenant's agents serve it is
            # discovery's answer (an email is the assistant's work, not the retail tenant's).
            action = "EXECUTE"
        if confidence < SECOND_OPINION_BELOW and base.confidence >= SECOND_OPINION_FROM:
            # The head unsure, the nearest exemplars sure ("the attach rate at stroe 2", a typo the
            # head's word counts miss): their reading stands.
            action, query_kind, confidence = base.action, base.query_kind, base.confidence
            refused = likeliest_refused = False
        explicit = explicit_builder_action(message)
        if explicit is not None:
            action, query_kind, confidence = explicit, None, max(confidence, EXPLICIT_CONFIDENCE)
            refused = False
        reason = "the message does not say what to do" if action == "AMBIGUOUS" else None
        return base.model_copy(
            update={
                "out_of_scope": refused,
                "out_of_scope_likeliest": likeliest_refused and explicit is None,
                "out_of_scope_after_a_turn": refused_after_a_turn and explicit is None,
                "action": action,
                "query_kind": query_kind if action == "QUERY" else None,
                "confidence": round(confidence, 3),
                "required_skills": base.required_skills if action == "EXECUTE" else [],
                "domain": base.domain if action == "EXECUTE" else None,
                "ambiguity_reason": reason or base.ambiguity_reason if action == "AMBIGUOUS" else None,
            }
        )
