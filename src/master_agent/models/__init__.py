"""Chat-model providers (any OpenAI-compatible endpoint, or the offline planner) and embedders."""

from master_agent.models.chat_model import make_chat_model
from master_agent.models.embeddings import Embedder, HashingEmbedder, LocalMiniLMEmbedder, make_embedder
from master_agent.models.offline import OfflinePlanner

__all__ = [
    "Embedder",
    "HashingEmbedder",
    "LocalMiniLMEmbedder",
    "OfflinePlanner",
    "make_chat_model",
    "make_embedder",
]
