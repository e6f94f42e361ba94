"""The answer head: what a user's answer to a draft or a preview does to it, read by meaning where the
runtime's rules (``proposals.read_feedback``) read nothing: "that works", "off you go", "👍", "correct,
go on then" approve; "let me think about it" withdraws. A logistic regression over the local MiniLM
sentence embedding (``benchmarks/train_answers.py``, ``make train-answers``), acted on only to accept or
cancel, each at or above its own floor (no answer of the training pool's out-of-fold readings or of
validation read wrongly at or above it). Without the local model or the head's file, nothing changes:
the rules alone read answers.
"""

from __future__ import annotations

import asyncio
import json
import re
import unicodedata
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Literal

import numpy as np

from master_agent.models.embeddings import LocalMiniLMEmbedder
from master_agent.runtime.proposals import Feedback, read_feedback

ANSWER_HEAD_PATH = Path(__file__).with_name("answer_head.json")
#: What the head is acted on for: a change needs the rules' reading of what it changes.
ACTED_ON: tuple[Literal["accept", "cancel"], ...] = ("accept", "cancel")
#: The most words an answer the head reads has: more says something the rules must read.
MOST_WORDS = 8
#: A value of its own (a number, an address, quoted words): a change, never a bare yes or no.
_VALUE = re.compile(r"\d|@|[\"“”]|'[^']+'", re.I)


#: Emoji modifiers (skin tones, variation selectors): "👍🏼" is "👍".
_EMOJI_MODIFIERS = re.compile("[\U0001f3fb-\U0001f3ff\ufe0e\ufe0f]")


def _named(char: str) -> str:
    """A symbol as its Unicode name ("👍" -> " thumbs up sign "): the sentence model reads no emoji."""
    if unicodedata.category(char) != "So":
        return char
    return f" {unicodedata.name(char, '').lower()} "


def answer_text_read(text: str) -> str:
    """What the head reads of an answer (in training as in reading): its words, spaces made one, emoji
    named, without their modifiers."""
    return " ".join("".join(_named(char) for char in _EMOJI_MODIFIERS.sub("", text)).split())


@dataclass(frozen=True)
class AnswerHead:
    embedder: str
    labels: tuple[str, ...]
    coef: np.ndarray
    intercept: np.ndarray
    floors: dict[str, float]

    def reading(self, vector: list[float]) -> tuple[str, float]:
        logits = self.coef @ np.asarray(vector, dtype=np.float64) + self.intercept
        shares = np.exp(logits - logits.max())
        shares /= shares.sum()
        top = int(shares.argmax())
        return self.labels[top], float(shares[top])


@cache
def load_answer_head(path: Path = ANSWER_HEAD_PATH) -> AnswerHead | None:
    if not path.exists():
        return None
    raw = json.loads(path.read_text())
    return AnswerHead(
        embedder=str(raw["embedder"]),
        labels=tuple(str(label) for label in raw["labels"]),
        coef=np.asarray(raw["coef"], dtype=np.float64),
        intercept=np.asarray(raw["intercept"], dtype=np.float64),
        floors={str(key): float(value) for key, value in raw["floors"].items()},
    )


_EMBEDDERS: list[LocalMiniLMEmbedder] = []
_LOCK = asyncio.Lock()


async def _embedder() -> LocalMiniLMEmbedder | None:
    """One local MiniLM per process for the head (None where it is not installed)."""
    async with _LOCK:
        if not _EMBEDDERS and LocalMiniLMEmbedder.available():
            _EMBEDDERS.append(LocalMiniLMEmbedder())
    return _EMBEDDERS[0] if _EMBEDDERS else None


async def head_reading(text: str) -> tuple[str, float] | None:
    """The head's label of an answer and its share, whatever it is (None: no head or no model)."""
    head = load_answer_head()
    said = answer_text_read(text)
    if head is None or not said:
        return None
    embedder = await _embedder()
    if embedder is None or embedder.model_name != head.embedder:
        return None
    return head.reading((await embedder.embed([said]))[0])


async def asks_a_change(text: str) -> bool:
    """Whether an answer no rule reads asks for a change of the draft rather than holding it back
    ("let me check with Tom first", "what does it say?"): the head's likeliest reading is a revise.
    Without the head, every such answer is taken as a change nothing applied (the safer record)."""
    reading = await head_reading(text)
    return reading is None or reading[0] == "revise"


async def head_answer(text: str) -> Feedback | None:
    """The head's reading of a short answer with no value of its own, when it is an accept or a
    cancel at or above its floor; else None."""
    head = load_answer_head()
    said = answer_text_read(text)
    if head is None or not said or len(said.split()) > MOST_WORDS or _VALUE.search(said):
        return None
    reading = await head_reading(said)
    if reading is None:
        return None
    label, share = reading
    if label == "accept" and share >= head.floors["accept"]:
        return "accept"
    if label == "cancel" and share >= head.floors["cancel"]:
        return "cancel"
    return None


#: Where an answer's clauses part: "spot on, book it", "all fine - go".
_CLAUSES = re.compile(r"\s*[,;.!…]+\s*|\s+[-–—]\s+")


async def read_answer(text: str) -> Feedback | None:
    """What an answer does to the draft or preview waiting: the rules' reading, else the head's of the
    whole answer, else of its clauses: an approval when each approves ("spot on, book it"), a cancel
    when the last clause read takes it back ("yes, actually no. don't book it", "sure... wait, no"),
    else nothing (a hedge or a condition after a yes approves nothing)."""
    found = read_feedback(text)
    if found is not None:
        return found
    whole = await head_answer(text)
    if whole is not None:
        return whole
    clauses = [part for part in _CLAUSES.split(text.strip()) if part]
    if len(clauses) < 2:
        return None
    readings = [read_feedback(part) or await head_answer(part) for part in clauses]
    said = [reading for reading in readings if reading is not None]
    if said and said[-1] == "cancel":
        # Withdrawn at the end: what was said before it ("yeah", "sure") only acknowledged the draft.
        return "cancel"
    return said[0] if len(said) == len(readings) and len(set(said)) == 1 else None
