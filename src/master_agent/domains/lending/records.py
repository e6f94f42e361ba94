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
    monthly_salary: float | None = None
    """What the customer says they earn a month (a slip, not this, proves it)."""


class LoanDetails(BaseModel):
    amount: float | None = None
    tenure_months: int | None = None
    rate_pct: float | None = None
    emi: float | None = None
    asked: list[float] = Field(default_factory=list)
    """The amounts the customer asked for in this conversation before ``amount``, in order ("go back
    to the first amount")."""


class VerificationStatus(BaseModel):
    verified: bool = False
    checked: list[str] = Field(default_factory=list)
    mismatched: list[str] = Field(default_factory=list)
    attempts: int = 0
    failures: int = 0
    """Failed checks in a row: at ``rules.MAX_VERIFICATION_FAILURES`` the conversation is locked."""
    locked: bool = False
    checked_pan: str | None = None
    """The PAN and date of birth that were verified (new ones are checked again)."""
    checked_dob: str | None = None
    failed_pan: str | None = None
    """The PAN and date of birth of the last failed check: the same wrong value, said again or left
    standing while the other is asked for, is not another failed check."""
    failed_dob: str | None = None


class LoanTerms(BaseModel):
    """Terms a decision was made on: a letter is issued only for the terms underwriting approved."""

    amount: float
    tenure_months: int
    rate_pct: float
    emi: float


class UnderwritingResult(BaseModel):
    decision: Literal["APPROVED", "REJECTED", "NEEDS_SALARY_SLIP", "MANUAL_REVIEW"] | None = None
    rule: str | None = None
    """The documented rule that decided (``rules.UNDERWRITING_RULES``)."""
    reasons: list[str] = Field(default_factory=list)
    model_recommendation: str | None = None
    terms: LoanTerms | None = None


class SalarySlip(BaseModel):
    document_id: str
    monthly_salary: float
    employee: str | None = None
    """The name the slip is made out to."""


class PendingChange(BaseModel):
    """Terms the customer stated where the stage did not ask for them, or a sum not said to be an income
    where the salary was asked: kept until they confirm."""

    amount: float | None = None
    tenure_months: int | None = None
    monthly_salary: float | None = None


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
    pending_change: PendingChange | None = None


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
