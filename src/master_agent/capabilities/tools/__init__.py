"""Built-in plain tools and what they are bound to."""

from master_agent.capabilities.tools.context import ToolContext
from master_agent.capabilities.tools.sql import ReadOnlySql, SqlResult, check_select_only

__all__ = ["ReadOnlySql", "SqlResult", "ToolContext", "check_select_only"]
