"""The self-evolution loop: village knowledge, embeddings (outcomes, learning and reuse follow)."""

from master_agent.evolution.embeddings import Embedder, HashingEmbedder, LocalMiniLMEmbedder, make_embedder
from master_agent.evolution.knowledge import KnowledgeStore, PatternCreate, PatternMatch, tenant_session

__all__ = [
    "Embedder",
    "HashingEmbedder",
    "KnowledgeStore",
    "LocalMiniLMEmbedder",
    "PatternCreate",
    "PatternMatch",
    "make_embedder",
    "tenant_session",
]
