"""Embedding providers behind one protocol.

``hashing`` is the dependency-free fallback: signed feature hashing of word unigrams and bigrams into
384 dimensions (the local MiniLM's size), L2-normalised. It matches paraphrases only through shared
words, which is enough for minimal installs and deterministic tests; the better providers plug in here.
"""

from __future__ import annotations

import hashlib
import itertools
import math
import re
from collections.abc import Sequence
from typing import Protocol

HASHING_DIM = 384
_WORD = re.compile(r"[a-z0-9]+")
_STOP = frozenset(
    [
        "a",
        "an",
        "the",
        "of",
        "to",
        "in",
        "on",
        "for",
        "by",
        "at",
        "and",
        "or",
        "with",
        "my",
        "our",
        "is",
        "are",
        "be",
        "it",
        "this",
        "that",
        "how",
        "help",
        "me",
    ]
)


class Embedder(Protocol):
    """Turns texts into vectors of one fixed size."""

    @property
    def model_name(self) -> str: ...

    @property
    def dim(self) -> int: ...

    async def embed(self, texts: Sequence[str]) -> list[list[float]]: ...


class HashingEmbedder:
    """Signed feature hashing (see module docstring)."""

    model_name = f"hashing-{HASHING_DIM}"
    dim = HASHING_DIM

    def _vector(self, text: str) -> list[float]:
        words = [w for w in _WORD.findall(text.lower()) if w not in _STOP]
        features = words + [f"{a}_{b}" for a, b in itertools.pairwise(words)]
        vector = [0.0] * self.dim
        for feature in features:
            digest = hashlib.blake2b(feature.encode(), digest_size=8).digest()
            index = int.from_bytes(digest[:4], "little") % self.dim
            vector[index] += 1.0 if digest[4] & 1 else -1.0
        norm = math.sqrt(sum(v * v for v in vector)) or 1.0
        return [v / norm for v in vector]

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return [self._vector(text) for text in texts]


def to_pgvector(vector: Sequence[float]) -> str:
    """The text form pgvector parses (``'[0.1,0.2]'``), bound as a parameter and cast in SQL."""
    return "[" + ",".join(f"{value:.7g}" for value in vector) + "]"
