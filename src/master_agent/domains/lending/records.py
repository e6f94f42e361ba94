"""The loan conversation's typed state (seed 001 section 3.1) and the customer record."""

from __future__ import annotations

from datetime import date
from typing import Any, Literal

from pydantic import BaseModel, Field


class StatedDetails(BaseModel):
    """What the customer said about themselves (checked against the records by verification)."""

    phone: str | None = None
    pan: str | None = None
    dob: str | None = None
    """ISO date."""


class LoanDetails(BaseModel):
    amount: float | None = None
    tenure_months: int | None = None
    rate_pct: float | None = None
    emi: float | None = None


class VerificationStatus(BaseModel):
    verified: bool = False
    checked: list[str] = Field(default_factory=list)
    mismatched: list[str] = Field(default_factory=list)
    attempts: int = 0


class UnderwritingResult(BaseModel):
    decision: Literal["APPROVED", "REJECTED", "NEEDS_SALARY_SLIP"] | None = None
    rule: str | None = None
    """The documented rule that decided (``rules.UNDERWRITING_RULES``)."""
    reasons: list[str] = Field(default_factory=list)
    model_recommendation: str | None = None


class SalarySlip(BaseModel):
    document_id: str
    monthly_salary: float


class LoanConversation(BaseModel):
    customer_id: str | None = None
    customer_profile: dict[str, Any] = Field(default_factory=dict)
    customer_intent: str | None = None
    stated: StatedDetails = Field(default_factory=StatedDetails)
    loan_details: LoanDetails = Field(default_factory=LoanDetails)
    verification_status: VerificationStatus = Field(default_factory=VerificationStatus)
    underwriting_result: UnderwritingResult = Field(default_factory=UnderwritingResult)
    salary_slip: SalarySlip | None = None
    document_links: dict[str, str] = Field(default_factory=dict)


class CustomerRecord(BaseModel):
    """A row of the tenant's ``customers`` table."""

    customer_id: str
    name: str
    phone: str
    pan: str
    dob: date
    city: str
    age: int
    credit_score: int
    preapproved_limit: float
    monthly_salary: float
