"""The self-evolution loop: village knowledge, embeddings (outcomes, learning and reuse follow)."""

from master_agent.evolution.embeddings import Embedder, HashingEmbedder
from master_agent.evolution.knowledge import KnowledgeStore, PatternCreate, PatternMatch, tenant_session

__all__ = ["Embedder", "HashingEmbedder", "KnowledgeStore", "PatternCreate", "PatternMatch", "tenant_session"]
