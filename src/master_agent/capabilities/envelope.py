"""The one result shape every sub-agent hands back to its parent."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

Band = Literal["COMPLETE", "PARTIAL", "BLOCKED"]
COMPLETE_AT = 0.9
PARTIAL_AT = 0.5


Status = Literal["success", "partial", "error"]


def confidence_band(confidence: float) -> Band:
    """COMPLETE >= 0.9, PARTIAL 0.5-0.9, BLOCKED < 0.5: the seed's thresholds on a confidence alone."""
    if confidence >= COMPLETE_AT:
        return "COMPLETE"
    if confidence >= PARTIAL_AT:
        return "PARTIAL"
    return "BLOCKED"


def settle(status: Status, confidence: float) -> tuple[Status, Band, str | None]:
    """The status and band a result reports, decided together so they never contradict (with the
    limitation a downgrade adds, third). The band is the completion check of the answer: COMPLETE is a
    success (whole, every claim backed), PARTIAL a partial, BLOCKED an error or an answer below
    ``PARTIAL_AT``. ``confidence`` stays what it estimates (for a plan, P(target met)): a success the
    confidence puts below ``PARTIAL_AT`` is more likely wrong than right, so it is a partial, BLOCKED."""
    if status == "error":
        return status, "BLOCKED", None
    if confidence < PARTIAL_AT:
        limitation = (
            f"confidence {confidence:.2f} is below {PARTIAL_AT:.2f}: more likely wrong than right"
            if status == "success"
            else None
        )
        return "partial", "BLOCKED", limitation
    return status, "COMPLETE" if status == "success" else "PARTIAL", None


class SubAgentEnvelope(BaseModel):
    """A sub-agent's result as its parent's tool message."""

    model_config = ConfigDict(extra="forbid")

    status: Status
    """success: a whole answer every check backs; partial: usable but incomplete, not wholly backed or
    unlikely; error: nothing usable (``settle`` decides it with the band)."""
    data: dict[str, Any] = Field(default_factory=dict)
    """The answer, shaped by the sub-agent's output schema (possibly incomplete when partial)."""
    confidence: float = Field(default=0.0, ge=0.0, le=1.0)
    """The sub-agent's confidence in ``data``."""
    confidence_band: Band = "BLOCKED"
    """``confidence`` as a band, never contradicting ``status`` (always derived by ``settle``)."""
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
    def _status_and_band_settled(self) -> SubAgentEnvelope:
        status, band, limitation = settle(self.status, self.confidence)
        self.status, self.confidence_band = status, band
        if limitation is not None and limitation not in self.limitations:
            self.limitations.append(limitation)
        return self

    @classmethod
    def failure(cls, message: str, error_type: str | None = None) -> SubAgentEnvelope:
        return cls(status="error", error=message, limitations=[message], error_type=error_type)
