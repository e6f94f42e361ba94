"""The lending pack's documented rules: pricing, EMI and underwriting. Code, not a model's judgement:
whatever a model recommends, these decide."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from master_agent.domains.lending.records import CustomerRecord, LoanTerms, SalarySlip, UnderwritingResult

MIN_CREDIT_SCORE = 700
MAX_EMI_SHARE = 0.5
TENURE_MONTHS = (12, 84)
AMOUNT_RANGE = (10_000.0, 5_000_000.0)
PROCESSING_FEE_PCT = 1.5
#: Failed identity checks in a row that lock the application (no more checks on the thread).
MAX_VERIFICATION_FAILURES = 5
#: How far a slip's net salary may be from the salary on the customer's record before a person reviews
#: it (payslips vary with overtime and deductions; a slip three times the record is someone else's).
SLIP_SALARY_TOLERANCE = 0.25

#: The underwriting rules in the order they are applied (their names appear in every decision).
UNDERWRITING_RULES: dict[str, str] = {
    "credit_score_below_minimum": f"A credit score below {MIN_CREDIT_SCORE} rejects.",
    "within_preapproved_limit": "An amount up to the pre-approved limit approves.",
    "salary_slip_required": "An amount above the limit and up to twice it needs a salary slip.",
    "emi_within_half_salary": f"With the slip, it approves only if the EMI is at most "
    f"{MAX_EMI_SHARE:.0%} of the monthly salary.",
    "emi_above_half_salary": f"With the slip, an EMI above {MAX_EMI_SHARE:.0%} of the monthly salary rejects.",
    "above_twice_the_limit": "An amount above twice the pre-approved limit rejects.",
    "slip_name_mismatch": "A salary slip made out to someone other than the customer goes to manual review.",
    "slip_salary_mismatch": f"A slip whose net salary differs from the customer's record by more than "
    f"{SLIP_SALARY_TOLERANCE:.0%} goes to manual review.",
}


def annual_rate_pct(credit_score: int) -> float:
    """The offered rate: better scores pay less."""
    if credit_score >= 800:
        return 10.5
    if credit_score >= 750:
        return 11.5
    return 13.0


def emi(principal: float, annual_rate: float, months: int) -> float:
    """The standard amortisation formula: P r (1+r)^n / ((1+r)^n - 1), r the monthly rate."""
    rate = annual_rate / 12 / 100
    if rate == 0:
        return round(principal / months, 2)
    growth = (1 + rate) ** months
    return round(principal * rate * growth / (growth - 1), 2)


def largest_principal(budget: float, annual_rate: float, months: int, step: float = 1.0) -> float:
    """The largest principal, a multiple of ``step``, whose EMI (``emi``) is at most ``budget``: the
    amortisation formula solved for P."""
    rate = annual_rate / 12 / 100
    growth = (1 + rate) ** months
    exact = budget * months if rate == 0 else budget * (growth - 1) / (rate * growth)
    most = math.floor(exact / step) * step
    while most > 0 and emi(most, annual_rate, months) > budget:
        most -= step
    return float(most)


@dataclass(frozen=True)
class Application:
    amount: float
    tenure_months: int
    rate_pct: float

    @property
    def emi(self) -> float:
        return emi(self.amount, self.rate_pct, self.tenure_months)


def _name_words(name: str) -> list[str]:
    return sorted(re.findall(r"[a-z]+", name.lower()))


def slip_problem(customer: CustomerRecord, slip: SalarySlip) -> UnderwritingResult | None:
    """A slip that is not the customer's, or whose salary is not theirs: a manual-review decision."""
    # Every word of the customer's name on the slip (a middle name or initial there is no mismatch).
    if slip.employee is None or not set(_name_words(customer.name)) <= set(_name_words(slip.employee)):
        return UnderwritingResult(
            decision="MANUAL_REVIEW",
            rule="slip_name_mismatch",
            reasons=[f"the salary slip is made out to {slip.employee or 'no one'!s}, not {customer.name}"],
        )
    known = customer.monthly_salary
    if abs(slip.monthly_salary - known) > SLIP_SALARY_TOLERANCE * known:
        return UnderwritingResult(
            decision="MANUAL_REVIEW",
            rule="slip_salary_mismatch",
            reasons=[f"the slip states a net salary of {slip.monthly_salary:,.0f}, our records {known:,.0f}"],
        )
    return None


def underwrite(
    customer: CustomerRecord, application: Application, slip: SalarySlip | float | None
) -> UnderwritingResult:
    """The decision by the documented rules (``slip``: the uploaded salary slip, or its salary alone
    when its owner was checked already), with the terms it was made on."""
    result = _decide(customer, application, slip)
    return result.model_copy(
        update={
            "terms": LoanTerms(
                amount=application.amount,
                tenure_months=application.tenure_months,
                rate_pct=application.rate_pct,
                emi=application.emi,
            )
        }
    )


def _decide(
    customer: CustomerRecord, application: Application, slip: SalarySlip | float | None
) -> UnderwritingResult:
    limit = customer.preapproved_limit
    if customer.credit_score < MIN_CREDIT_SCORE:
        return UnderwritingResult(
            decision="REJECTED",
            rule="credit_score_below_minimum",
            reasons=[f"credit score {customer.credit_score} is below {MIN_CREDIT_SCORE}"],
        )
    if application.amount <= limit:
        return UnderwritingResult(
            decision="APPROVED",
            rule="within_preapproved_limit",
            reasons=[f"{application.amount:,.0f} is within the pre-approved limit {limit:,.0f}"],
        )
    if application.amount > 2 * limit:
        return UnderwritingResult(
            decision="REJECTED",
            rule="above_twice_the_limit",
            reasons=[f"{application.amount:,.0f} is above twice the pre-approved limit {limit:,.0f}"],
        )
    if isinstance(slip, SalarySlip):
        problem = slip_problem(customer, slip)
        if problem is not None:
            return problem
    monthly_salary = slip.monthly_salary if isinstance(slip, SalarySlip) else slip
    if monthly_salary is None:
        return UnderwritingResult(
            decision="NEEDS_SALARY_SLIP",
            rule="salary_slip_required",
            reasons=[f"{application.amount:,.0f} is above the pre-approved limit {limit:,.0f}"],
        )
    share = application.emi / monthly_salary
    if share <= MAX_EMI_SHARE:
        return UnderwritingResult(
            decision="APPROVED",
            rule="emi_within_half_salary",
            reasons=[
                f"EMI {application.emi:,.2f} is {share:.0%} of the monthly salary {monthly_salary:,.0f}"
            ],
        )
    return UnderwritingResult(
        decision="REJECTED",
        rule="emi_above_half_salary",
        reasons=[f"EMI {application.emi:,.2f} is {share:.0%} of the monthly salary {monthly_salary:,.0f}"],
    )
