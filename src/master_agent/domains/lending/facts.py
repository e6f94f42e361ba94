"""The lending pack's documented product facts, as data: what the conversation answers when a customer
asks about the product inside the flow (prepayment, fees, data use...). Each fact carries the ways
customers phrase the question; a question is answered by the fact whose phrasings share the most
content words with it (word stems, so "prepay" meets "prepayment"), never by a model's invention."""

from __future__ import annotations

import re
from dataclasses import dataclass

from master_agent.domains.lending.rules import (
    AMOUNT_RANGE,
    MAX_EMI_SHARE,
    MAX_VERIFICATION_FAILURES,
    MIN_CREDIT_SCORE,
    PROCESSING_FEE_PCT,
    TENURE_MONTHS,
)


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

_WORD = re.compile(r"[a-z]+")
#: Words that carry no topic (a question's frame, pronouns, the loan itself: every fact is about it).
_FRAME = frozenset(
    [
        "a",
        "an",
        "the",
        "is",
        "are",
        "am",
        "be",
        "do",
        "does",
        "did",
        "can",
        "could",
        "will",
        "would",
        "should",
        "i",
        "my",
        "me",
        "we",
        "you",
        "your",
        "it",
        "its",
        "of",
        "to",
        "for",
        "on",
        "in",
        "at",
        "by",
        "and",
        "or",
        "if",
        "any",
        "there",
        "what",
        "how",
        "who",
        "when",
        "why",
        "which",
        "this",
        "that",
        "with",
        "from",
        "about",
        "loan",
        "loans",
        "personal",
        "get",
        "have",
        "has",
        "please",
        "tell",
        "know",
        "want",
        "need",
        "much",
        "many",
    ]
)
_QUESTION = re.compile(
    r"\?|^\s*(?:what|how|is|are|can|could|do|does|will|would|who|why|when|which|tell me|explain)\b", re.I
)
#: Shared content words a question needs with a fact's phrasing to be answered by it.
MIN_SHARED = 1


def _stems(text: str) -> set[str]:
    return {word[:5] for word in _WORD.findall(text.lower()) if word not in _FRAME and len(word) > 1}


_FACT_STEMS = [(fact, [_stems(phrasing) for phrasing in fact.phrasings]) for fact in FACTS]


def answer_questions(text: str) -> list[Fact]:
    """The documented facts the questions of ``text`` ask about, one per question sentence, in order
    and without repeats; empty for a message that asks about nothing documented."""
    found: list[Fact] = []
    for sentence in re.split(r"(?<=[?.!])\s+|\s+(?:also|and also)\s+", text, flags=re.I):
        fact = answer_question(sentence)
        if fact is not None and fact not in found:
            found.append(fact)
    return found


def answer_question(text: str) -> Fact | None:
    """The documented fact a product question asks about; None for a message that is no question or
    asks about nothing documented."""
    if not _QUESTION.search(text):
        return None
    asked = _stems(text)
    best: tuple[float, Fact] | None = None
    for fact, phrasings in _FACT_STEMS:
        for stems in phrasings:
            shared = len(asked & stems)
            if shared < MIN_SHARED:
                continue
            score = shared / len(stems | asked)
            if best is None or score > best[0]:
                best = (score, fact)
    return best[1] if best else None
