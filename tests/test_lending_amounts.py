"""Which number of a loan conversation is the loan: a sum's role in its sentence (the object of a
request, a bare answer, an income, or a figure said of something else), ranges, what-if questions."""

from __future__ import annotations

import pytest

from master_agent.domains.lending import LOAN_WORKFLOW
from master_agent.domains.lending.reading import loan_amount, read_message, read_terms
from master_agent.domains.lending.records import LoanConversation
from master_agent.domains.lending.rules import emi

SELLING = LOAN_WORKFLOW.stage("SALES_EXPLORATION").asks
VERIFYING = LOAN_WORKFLOW.stage("VERIFICATION").asks


def _offered(amount: float = 300_000, months: int = 36, rate: float = 11.5) -> LoanConversation:
    return LoanConversation.model_validate(
        {
            "customer_id": "C001",
            "stated": {"phone": "9000000001"},
            "loan_details": {
                "amount": amount,
                "tenure_months": months,
                "rate_pct": rate,
                "emi": emi(amount, rate, months),
            },
        }
    )


@pytest.mark.parametrize(
    ("text", "amount", "months"),
    [
        ("We pay 18k rent and I'd like 2.75 lakh over 30 months", 275_000, 30),
        ("my wife's car EMI is 9,500; we need Rs 1,20,000 for 15 months", 120_000, 15),
        (
            "The sofa set costs 85,000 and I've put down 20,000, so please lend me 65,000 for a year",
            65_000,
            12,
        ),
        ("House is valued at 2.2 crore. Need ₹7,50,000/- over 5 years", 750_000, 60),
        ("pin code 560034, I want INR 3,10,000 repaid in 28 months", 310_000, 28),
        ("I'm 38 with 3 kids; 4.2 lacs for 3 yrs", 420_000, 36),
        ("Savings of 90k are for emergencies. Could I get one lakh twenty thousand, 20 months?", 120_000, 20),
        ("mujhe 1.6 lakh chahiye, 2 saal ke liye", 160_000, 24),
        (
            "The course costs 2.4 lakh and I've saved 90k, so I want to borrow the remaining 1.5 lakh for 2 years",
            150_000,
            24,
        ),
    ],
)
def test_only_the_sum_asked_for_is_the_loan(text: str, amount: float, months: int) -> None:
    """Rents, prices, down payments, savings, a house's value, a pincode, an age, a count of children
    are said with the loan; the loan is the sum a request governs (or the one said bare)."""
    updates = read_message(text, LoanConversation(), SELLING).updates
    assert (updates.get("loan_details.amount"), updates.get("loan_details.tenure_months")) == (amount, months)
    assert loan_amount(text) == amount


@pytest.mark.parametrize(
    "text",
    [
        "the laptop I want is priced at 1.1 lakh",
        "my rent is 22k and the society charges 3,500",
        "We have savings of 4 lakh in FDs",
        "school fees come to 1.6 lakh a year",
        "I have already paid 40,000 as advance to the builder",
        "our office is at 411014, near the station",
    ],
)
def test_a_figure_of_something_else_is_no_amount_and_is_never_guessed(text: str) -> None:
    reading = read_message(text, LoanConversation(), SELLING)
    assert "loan_details.amount" not in reading.updates
    assert "stated.monthly_salary" not in reading.updates
    assert loan_amount(text) is None


@pytest.mark.parametrize(
    ("text", "salary", "amount"),
    [
        ("gross 1.1 lakh, net 96k. Want 2 lakh for 2 years", 96_000, 200_000),
        ("package is 18 lakh per annum, looking for 3L over 36 months", 150_000, 300_000),
        ("I draw 72,000 a month; can you give me 2.4 lakh over 24 months?", 72_000, 240_000),
    ],
)
def test_an_income_said_with_the_request_is_the_salary_per_month_never_the_loan(
    text: str, salary: float, amount: float
) -> None:
    updates = read_message(text, LoanConversation(), SELLING).updates
    assert (updates["stated.monthly_salary"], updates["loan_details.amount"]) == (salary, amount)


@pytest.mark.parametrize(
    ("text", "low", "high"),
    [
        ("between 2 and 3 lakh would do, 24 months", 200_000, 300_000),
        ("I'm thinking 5-6 lakh", 500_000, 600_000),
        ("anything from 4 to 4.5 lakh", 400_000, 450_000),
        ("maybe 2 or 3 lakh, over 3 years", 200_000, 300_000),
    ],
)
def test_a_range_is_asked_about_and_no_bound_is_taken(text: str, low: float, high: float) -> None:
    _, _, _, ranges = read_terms(text)
    assert [(found.low, found.high) for found in ranges] == [(low, high)]
    reading = read_message(text, LoanConversation(), SELLING)
    assert "loan_details.amount" not in reading.updates
    assert f"{low:,.2f}" in (reading.reply or "") and f"{high:,.2f}" in (reading.reply or "")
    # Said as a wish, with a tenure or a verb of wanting, it is a loan request all the same.
    if "24 months" in text or "3 years" in text:
        assert reading.updates["customer_intent"] == "personal_loan"


def test_a_what_if_question_is_answered_and_the_offer_stays() -> None:
    offered = _offered(300_000, 36)
    asked = read_message("what would the EMI be over 48 months?", offered, VERIFYING)
    assert not any(key.startswith("loan_details") for key in asked.updates)
    assert f"{emi(300_000, 11.5, 48):,.2f}" in (asked.reply or "")
    bigger = read_message("and if I took 3.5 lakh, how much would I pay monthly?", offered, VERIFYING)
    assert f"{emi(350_000, 11.5, 36):,.2f}" in (bigger.reply or "")
    assert "loan_details.amount" not in bigger.updates
    # Keeping the offered tenure is said back, nothing changes; a change said as one still changes it.
    kept = read_message("ok no, stick with 36", offered, VERIFYING)
    assert (
        kept.in_scope and "stays" in (kept.reply or "") and "loan_details.tenure_months" not in kept.updates
    )
    changed = read_message("make it 48 months then", offered, VERIFYING).updates
    assert changed["loan_details.tenure_months"] == 48 and changed["loan_details.emi"] is None


def test_a_second_phone_number_once_the_customer_is_known_is_a_contact() -> None:
    said = "PAN ABCPV1234K. My office number is 9988776655 if I miss your call"
    updates = read_message(said, _offered(), VERIFYING).updates
    assert "stated.phone" not in updates and updates["stated.pan"] == "ABCPV1234K"
    # Before the customer is found, a number given is who they are (a wrong one corrected).
    assert read_message("sorry, it is 9000000002", LoanConversation(), SELLING).updates["stated.phone"] == (
        "9000000002"
    )
