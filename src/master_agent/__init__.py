"""Master Agent: a LangGraph-native orchestration service for goal-driven agents."""

from __future__ import annotations

import typing as _typing

if _typing.TYPE_CHECKING:
    from master_agent.errors import MasterAgentError
    from master_agent.settings import Settings

__all__ = ["MasterAgentError", "Settings"]
__version__ = "0.1.0"


def __dir__() -> list[str]:
    return [*__all__, "__version__"]


def __getattr__(name: str) -> _typing.Any:
    # Loaded on first use: a process that needs one module of the package (a parser worker, a CLI
    # command) does not pay for the settings' and errors' imports.
    if name == "MasterAgentError":
        from master_agent.errors import MasterAgentError

        return MasterAgentError
    if name == "Settings":
        from master_agent.settings import Settings

        return Settings
    raise AttributeError(f"module 'master_agent' has no attribute {name!r}")
