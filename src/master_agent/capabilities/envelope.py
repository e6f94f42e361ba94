"""The one result shape every sub-agent hands back to its parent."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class SubAgentEnvelope(BaseModel):
    """A sub-agent's result as its parent's tool message."""

    model_config = ConfigDict(extra="forbid")

    status: Literal["success", "partial", "error"]
    """success: a valid answer; partial: usable but incomplete; error: nothing usable."""
    data: dict[str, Any] = Field(default_factory=dict)
    """The answer, shaped by the sub-agent's output schema (possibly incomplete when partial)."""
    confidence: float = Field(default=0.0, ge=0.0, le=1.0)
    """The sub-agent's confidence in ``data``."""
    limitations: list[str] = Field(default_factory=list)
    """What the answer lacks or assumes."""
    error: str | None = None
    """Why it failed, when status is error."""
    steps: list[dict[str, Any]] = Field(default_factory=list)
    """The sub-agent's own call tree (for the solution's step tree)."""

    @classmethod
    def failure(cls, message: str) -> SubAgentEnvelope:
        return cls(status="error", error=message, limitations=[message])
