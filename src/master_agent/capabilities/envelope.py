"""The one result shape every sub-agent hands back to its parent."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

Band = Literal["COMPLETE", "PARTIAL", "BLOCKED"]
COMPLETE_AT = 0.9
PARTIAL_AT = 0.5


def confidence_band(confidence: float) -> Band:
    """COMPLETE >= 0.9, PARTIAL 0.5-0.9, BLOCKED < 0.5 (reported beside every status)."""
    if confidence >= COMPLETE_AT:
        return "COMPLETE"
    if confidence >= PARTIAL_AT:
        return "PARTIAL"
    return "BLOCKED"


class SubAgentEnvelope(BaseModel):
    """A sub-agent's result as its parent's tool message."""

    model_config = ConfigDict(extra="forbid")

    status: Literal["success", "partial", "error"]
    """success: a valid answer; partial: usable but incomplete; error: nothing usable."""
    data: dict[str, Any] = Field(default_factory=dict)
    """The answer, shaped by the sub-agent's output schema (possibly incomplete when partial)."""
    confidence: float = Field(default=0.0, ge=0.0, le=1.0)
    """The sub-agent's confidence in ``data``."""
    confidence_band: Band = "BLOCKED"
    """``confidence`` as a band (always derived from it)."""
    limitations: list[str] = Field(default_factory=list)
    """What the answer lacks or assumes."""
    error: str | None = None
    """Why it failed, when status is error."""
    error_type: str | None = None
    """What kind of failure (``api_down``, ``not_found``, ``permission``, ``invalid_input``,
    ``timeout``, ``conflict``), when a typed failure stopped it; the parent decides by it."""
    error_context: dict[str, Any] = Field(default_factory=dict)
    """Where it failed (service, operation, detail)."""
    handoff: dict[str, Any] | None = None
    """What the flow hands the user instead of an answer: a ``preview`` of a high-risk call, a
    ``question``, or a ``failure`` with what to do (``runtime.recovery``); a parent ends with it too."""
    steps: list[dict[str, Any]] = Field(default_factory=list)
    """The sub-agent's own call tree (for the solution's step tree)."""
    verification: list[dict[str, Any]] = Field(default_factory=list)
    """Each claim of ``data`` checked before answering: claim, evidence, verdict (``backed``, ``weak``,
    ``unbacked``); anything not backed made a success partial (``runtime.verification``)."""
    context_box: dict[str, Any] | None = None
    """The flow's context box as it ended (goal, entities, constraints, progress, blockers, next)."""

    @model_validator(mode="after")
    def _band_follows_confidence(self) -> SubAgentEnvelope:
        self.confidence_band = confidence_band(self.confidence)
        return self

    @classmethod
    def failure(cls, message: str, error_type: str | None = None) -> SubAgentEnvelope:
        return cls(status="error", error=message, limitations=[message], error_type=error_type)
