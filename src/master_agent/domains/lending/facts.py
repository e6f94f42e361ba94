"""The lending pack's documented product facts, as data: what the conversation answers when a customer
asks about the product inside the flow (prepayment, fees, data use...). Each fact carries the ways
customers phrase the question; a question is answered by the fact of its nearest phrasing in meaning
(the service's embedder, ``MASTER_AGENT_EMBEDDINGS``: the local MiniLM where installed), never by a
model's invention. Which fact a question asks about is read by the trained fact head
(``make train-facts``: ``benchmarks/train_facts.py``, a logistic regression over the embedding with a
``none`` class for chatter and changes of terms, answering only above the confidence at which no
validation question got a wrong fact); without a head for the embedder, by the nearest phrasing when
it is at least ``MIN_SIMILARITY`` close.

The floor was measured with the local MiniLM on questions written apart from the phrasings: eleven
paraphrased product questions were at 0.47-0.90 from their nearest phrasing (ten of them that of the
right fact; "will I be charged anything extra if I settle the whole thing ahead of schedule?" is
nearest the fees), eleven off-topic questions ("did India win the match?", "what time is it", "So is
it approved? Please send the sanction letter.") at most 0.37."""

from __future__ import annotations

import asyncio
import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np

from master_agent.domains.lending.rules import (
    AMOUNT_RANGE,
    MAX_EMI_SHARE,
    MAX_VERIFICATION_FAILURES,
    MIN_CREDIT_SCORE,
    PROCESSING_FEE_PCT,
    TENURE_MONTHS,
)
from master_agent.models.embeddings import Embedder, make_embedder
from master_agent.routing.intent_head import Features, LinearHead
from master_agent.settings import Settings

#: The trained fact head (``make train-facts``).
FACT_HEAD_PATH = Path(__file__).with_name("fact_head.json")
#: The head's label for a message that asks about no documented fact.
NONE = "none"


@dataclass(frozen=True)
class Fact:
    topic: str
    phrasings: tuple[str, ...]
    answer: str


FACTS: tuple[Fact, ...] = (
    Fact(
        topic="prepayment",
        phrasings=(
            "is there a prepayment penalty",
            "can I prepay or foreclose the loan early",
            "part payment charges for closing the loan before the tenure ends",
            "repay early close the loan foreclosure charges",
        ),
        answer="You can prepay part of the loan or close it early at any time after the first EMI; "
        "there is no prepayment or foreclosure charge on this personal loan.",
    ),
    Fact(
        topic="fees",
        phrasings=(
            "what are the processing fees and charges",
            "are there any hidden charges or fees",
            "how much is the processing fee",
            "what happens if I pay an EMI late or miss a payment",
        ),
        answer=f"The processing fee is {PROCESSING_FEE_PCT:g}% of the loan amount, deducted at disbursal; "
        "there are no other charges. A late EMI costs 2% a month on the overdue amount.",
    ),
    Fact(
        topic="data_use",
        phrasings=(
            "is my data safe and secure",
            "how do you use my personal data and information",
            "who do you share my details PAN documents with",
            "privacy of my salary slip",
        ),
        answer="Your details and documents are used only to decide and service this loan: they are "
        "kept encrypted, every access is recorded in an audit trail, and they are not shared with anyone "
        "outside the bank except the credit bureau check the law requires.",
    ),
    Fact(
        topic="interest_rate",
        phrasings=(
            "what is the interest rate",
            "how is my rate decided fixed or floating",
        ),
        answer="The rate is fixed for the whole tenure and depends on your credit score: 10.5% a year from "
        "800, 11.5% from 750, 13% below that.",
    ),
    Fact(
        topic="eligibility",
        phrasings=(
            "am I eligible what are the eligibility criteria",
            "how do you decide whether to approve my loan",
            "what documents do I need",
        ),
        answer=f"We need a credit score of at least {MIN_CREDIT_SCORE}. Up to your pre-approved limit no "
        "documents are needed besides your PAN and date of birth; above it (up to twice the limit) we need "
        f"your latest salary slip and the EMI must be at most {MAX_EMI_SHARE:.0%} of your net monthly salary.",
    ),
    Fact(
        topic="limits",
        phrasings=(
            "what is the minimum and maximum loan amount",
            "what tenure can I choose how long can the loan be",
        ),
        answer=f"You can borrow from INR {AMOUNT_RANGE[0]:,.0f} to INR {AMOUNT_RANGE[1]:,.0f}, over "
        f"{TENURE_MONTHS[0]} to {TENURE_MONTHS[1]} months.",
    ),
    Fact(
        topic="verification_attempts",
        phrasings=("what happens if I enter the wrong PAN too many times", "why is my verification locked"),
        answer=f"After {MAX_VERIFICATION_FAILURES} failed identity checks in a row the application is "
        "locked for your protection; please visit a branch with your PAN card to continue.",
    ),
)

_QUESTION = re.compile(
    r"\?|^\s*(?:what|how|is|are|can|could|do|does|will|would|who|why|when|which|tell me|explain)\b", re.I
)
#: The least cosine similarity between a question and a fact's phrasing for the fact to answer it.
MIN_SIMILARITY = 0.42


def questions(text: str) -> list[str]:
    """The question sentences of ``text`` ("Is the rate fixed? Also, any hidden charges?" is two)."""
    parts = re.split(r"(?<=[?.!])\s+|\s+(?:also|and also)\s+", text, flags=re.I)
    return [part for part in parts if part.strip() and _QUESTION.search(part)]


def _cosine(left: Sequence[float], right: Sequence[float]) -> float:
    dot = sum(a * b for a, b in zip(left, right, strict=True))
    norm = math.sqrt(sum(a * a for a in left)) * math.sqrt(sum(b * b for b in right))
    return dot / norm if norm else 0.0


@dataclass(frozen=True, kw_only=True)
class FactHead:
    embedder: str
    """``model_name`` of the embedder whose vectors it reads."""
    head: LinearHead
    answer_above: float
    """The least confidence at which a fact answers a question."""


@cache
def load_fact_head(path: Path = FACT_HEAD_PATH) -> FactHead | None:
    if not path.exists():
        return None
    raw = json.loads(path.read_text())
    temperature = float(raw["temperature"])
    return FactHead(
        embedder=str(raw["embedder"]),
        head=LinearHead(
            labels=tuple(raw["labels"]),
            coef=np.asarray(raw["coef"], dtype=np.float64) / temperature,
            intercept=np.asarray(raw["intercept"], dtype=np.float64) / temperature,
            features=Features(),
        ),
        answer_above=float(raw["answer_above"]),
    )


class FactReader:
    """Answers with one embedder: the trained head for it, else the nearest phrasing (the phrasings
    embedded once)."""

    def __init__(self, embedder: Embedder, head: FactHead | None = None) -> None:
        self.embedder = embedder
        found = head if head is not None else load_fact_head()
        self.head = found if found is not None and found.embedder == embedder.model_name else None
        self._phrasings: list[tuple[Fact, list[float]]] | None = None
        self._lock = asyncio.Lock()

    def _by_head(self, vector: list[float], text: str) -> Fact | None:
        assert self.head is not None
        shares = self.head.head.probabilities(vector, text)
        topic = max(shares, key=lambda label: shares[label])
        if topic == NONE or shares[topic] < self.head.answer_above:
            return None
        return next((fact for fact in FACTS if fact.topic == topic), None)

    async def _ready(self) -> list[tuple[Fact, list[float]]]:
        async with self._lock:
            if self._phrasings is None:
                pairs = [(fact, phrasing) for fact in FACTS for phrasing in fact.phrasings]
                vectors = await self.embedder.embed([phrasing for _, phrasing in pairs])
                self._phrasings = [(fact, vector) for (fact, _), vector in zip(pairs, vectors, strict=True)]
        return self._phrasings

    async def answer(self, text: str) -> list[Fact]:
        """The documented facts the questions of ``text`` ask about, one per question sentence, in order
        and without repeats; empty for a message that asks about nothing documented."""
        asked = questions(text)
        if not asked:
            return []
        found: list[Fact] = []
        vectors = await self.embedder.embed(asked)
        if self.head is not None:
            for vector, question in zip(vectors, asked, strict=True):
                fact = self._by_head(vector, question)
                if fact is not None and fact not in found:
                    found.append(fact)
            return found
        phrasings = await self._ready()
        for vector in vectors:
            similarity, nearest = max(
                ((_cosine(vector, known), fact) for fact, known in phrasings), key=lambda pair: pair[0]
            )
            if similarity >= MIN_SIMILARITY and nearest not in found:
                found.append(nearest)
        return found


_READERS: dict[str, FactReader] = {}


def fact_reader(settings: Settings) -> FactReader:
    """One reader per embedder choice and process (loading a model is slow, reading is not)."""
    if settings.embeddings not in _READERS:
        _READERS[settings.embeddings] = FactReader(make_embedder(settings.embeddings, settings))
    return _READERS[settings.embeddings]


async def answer_questions(text: str, settings: Settings) -> str | None:
    """The answer to the product questions ``text`` asks (``WorkflowSpec.answer_questions``), or None."""
    facts = await fact_reader(settings).answer(text)
    return " ".join(fact.answer for fact in facts) or None
