"""Master Agent: a LangGraph-native orchestration service for goal-driven agents."""

from master_agent.errors import MasterAgentError
from master_agent.settings import Settings

__all__ = ["MasterAgentError", "Settings"]
__version__ = "0.1.0"
