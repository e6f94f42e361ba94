"""Domain packs shipped with Master Agent (each registers itself on import)."""

from master_agent.domains.assistant import ASSISTANT
from master_agent.domains.retail import RETAIL

__all__ = ["ASSISTANT", "RETAIL"]
