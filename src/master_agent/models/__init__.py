"""Chat-model providers: any OpenAI-compatible endpoint, or the offline planner."""

from master_agent.models.chat import make_chat_model
from master_agent.models.offline import OfflinePlanner

__all__ = ["OfflinePlanner", "make_chat_model"]
