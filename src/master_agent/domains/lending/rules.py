"""The lending pack's documented rules: pricing, EMI and underwriting. Code, not a model's judgement:
whatever a model recommends, these decide."""

from __future__ import annotations

from dataclasses import dataclass

from master_agent.domains.lending.records import CustomerRecord, UnderwritingResult

MIN_CREDIT_SCORE = 700
MAX_EMI_SHARE = 0.5
TENURE_MONTHS = (12, 84)
AMOUNT_RANGE = (10_000.0, 5_000_000.0)

#: The underwriting rules in the order they are applied (their names appear in every decision).
UNDERWRITING_RULES: dict[str, str] = {
    "credit_score_below_minimum": f"A credit score below {MIN_CREDIT_SCORE} rejects.",
    "within_preapproved_limit": "An amount up to the pre-approved limit approves.",
    "salary_slip_required": "An amount above the limit and up to twice it needs a salary slip.",
    "emi_within_half_salary": f"With the slip, it approves only if the EMI is at most "
    f"{MAX_EMI_SHARE:.0%} of the monthly salary.",
    "emi_above_half_salary": f"With the slip, an EMI above {MAX_EMI_SHARE:.0%} of the monthly salary rejects.",
    "above_twice_the_limit": "An amount above twice the pre-approved limit rejects.",
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


@dataclass(frozen=True)
class Application:
    amount: float
    tenure_months: int
    rate_pct: float

    @property
    def emi(self) -> float:
        return emi(self.amount, self.rate_pct, self.tenure_months)


def underwrite(
    customer: CustomerRecord, application: Application, monthly_salary: float | None
) -> UnderwritingResult:
    """The decision by the documented rules (``monthly_salary``: read from an uploaded salary slip)."""
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
