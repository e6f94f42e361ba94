"""Built-in plain tools and what they are bound to."""

from master_agent.capabilities.tools.context import ToolContext
from master_agent.capabilities.tools.readers import provision_readers, reader_password
from master_agent.capabilities.tools.sql import ReadOnlySql, SqlResult
from master_agent.capabilities.tools.sql_check import CheckedSelect, acheck_select_only, check_select_only

__all__ = [
    "CheckedSelect",
    "ReadOnlySql",
    "SqlResult",
    "ToolContext",
    "acheck_select_only",
    "check_select_only",
    "provision_readers",
    "reader_password",
]
