"""A loan conversation with a history: which sum is the ask now and which number is a tenure, read from
tense and time (an earlier loan, an ask given up), revisions ("X but Y"), the unit a number takes from
the conversation ("make it 3.5"), differences and top-ups ("by 50k"), and going back to an earlier ask;
unit tests of the reader and one conversation through the real graph."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from langchain_core.messages import HumanMessage

from master_agent.domains.lending import DEMO_TENANT, LOAN_WORKFLOW
from master_agent.domains.lending.reading import read_message
from master_agent.domains.lending.records import LoanConversation
from master_agent.domains.lending.rules import emi, largest_principal
from master_agent.domains.lending.tense import past_form
from master_agent.runtime import RuntimeResources
from master_agent.runtime.factory import master_graph
from master_agent.workflows.spec import apply_updates

SELLING = LOAN_WORKFLOW.stage("SALES_EXPLORATION").asks
VERIFYING = LOAN_WORKFLOW.stage("VERIFICATION").asks


def _offered(amount: float, months: int, asked: list[float] | None = None) -> LoanConversation:
    return LoanConversation.model_validate(
        {
            "customer_id": "C001",
            "stated": {"phone": "9000000001"},
            "loan_details": {
                "amount": amount,
                "tenure_months": months,
                "rate_pct": 11.5,
                "emi": emi(amount, 11.5, months),
                "asked": asked or [],
            },
        }
    )


def _terms(updates: dict[str, Any]) -> tuple[Any, Any]:
    return updates.get("loan_details.amount"), updates.get("loan_details.tenure_months")


@pytest.mark.parametrize(
    ("word", "past"),
    [
        ("borrowed", True),
        ("repaid", True),
        ("had", True),
        ("was", True),
        ("has", False),
        ("is", False),
        ("needs", False),
    ],
)
def test_a_past_form_is_read_from_wordnets_morphology(word: str, past: bool) -> None:
    assert past_form(word) is past


@pytest.mark.parametrize(
    ("text", "amount", "months"),
    [
        (
            "Last month I borrowed 1.5 lakh from my cousin; today I'd like 2.5 lakh over 30 months",
            250_000,
            30,
        ),
        ("I had taken 80k from you in 2021 and I want 1.8 lakh now for 2 years", 180_000, 24),
        ("We repaid 2.2 lakh over 20 months. Need 3 lakh for 3 yrs", 300_000, 36),
        ("pehle 2 lakh liya tha. abhi 4 lakh chahiye 2 saal ke liye", 400_000, 24),
        ("Need 3.2 lakh for 40 months; my first loan with you was 1 lakh", 320_000, 40),
        ("I am interested in a loan of 1.75 lakh for 21 months", 175_000, 21),
        ("I need around 2.1 lakh as a personal loan, repaid over 20 months", 210_000, 20),
        ("Need 2.6 lakh, settled my old loan in 15 months though. Make it 27 months", 260_000, 27),
        ("I'd take 2.6 lakh, returned over 26 months", 260_000, 26),
    ],
)
def test_a_sum_or_a_tenure_said_of_the_past_is_history_not_the_ask(
    text: str, amount: float, months: int
) -> None:
    """An earlier loan, an amount repaid, an old loan's tenure: the past by its verb's form, a past
    time or Hindi's past auxiliary; only the ask said now is the loan."""
    assert _terms(read_message(text, LoanConversation(), SELLING).updates) == (amount, months)


def test_history_alone_records_no_amount_and_no_tenure() -> None:
    updates = read_message(
        "I paid off a 4 lakh loan with you in 18 months back in 2022. Can I apply again?",
        LoanConversation(),
        SELLING,
    ).updates
    assert _terms(updates) == (None, None)


@pytest.mark.parametrize(
    ("text", "amount", "months"),
    [
        ("I originally wanted 6.5 lakh but 5 lakh will do, 48 months", 500_000, 48),
        ("I was hoping for 7 lakh, but 4.5 lakh is okay for 3 years", 450_000, 36),
        ("I wanted 2 lakh for 2 years", 200_000, 24),
    ],
)
def test_an_ask_given_up_is_replaced_by_the_one_after_it(text: str, amount: float, months: int) -> None:
    """ "X but Y": the ask in the past ("wanted") or before the contrast gives way to the one after it;
    said alone, a past "wanted" is still the ask."""
    assert _terms(read_message(text, LoanConversation(), SELLING).updates) == (amount, months)


@pytest.mark.parametrize(
    ("offer", "text", "amount", "months"),
    [
        ((400_000, 36), "bring it down to 3 please", 300_000, None),
        ((400_000, 36), "lower the amount to 2.5", 250_000, None),
        ((400_000, 36), "can you do 48 instead?", None, 48),
        ((50_000, 24), "make it 60", 60_000, None),
        ((400_000, 48), "too steep. drop it to 3 and stretch it to 60", 300_000, 60),
    ],
)
def test_a_number_said_without_its_unit_takes_the_conversations_unit(
    offer: tuple[float, int], text: str, amount: float | None, months: int | None
) -> None:
    """With an offer on the table a bare number is a counteroffer: lakh for a loan of lakhs (never 3
    rupees), months for a tenure, whichever the number can be and is nearer to."""
    updates = read_message(text, _offered(*offer), VERIFYING).updates
    assert _terms(updates) == (amount, months), updates
    assert updates["loan_details.emi"] is None


def test_a_difference_is_confirmed_with_the_sum_it_makes() -> None:
    reading = read_message("push it up by 75k", _offered(300_000, 36), VERIFYING)
    assert reading.hold and "loan_details.amount" not in reading.updates
    assert reading.updates["pending_change"] == {"amount": 375_000}
    lowered = read_message("cut it by 50,000", _offered(300_000, 36), VERIFYING)
    assert lowered.updates["pending_change"] == {"amount": 250_000}


def test_a_top_up_of_a_loan_the_customer_has_is_said_to_be_no_product_and_never_booked() -> None:
    reading = read_message(
        "Could you top up the loan I already have by 60k? 90k is still pending on it",
        LoanConversation(),
        SELLING,
    )
    assert "loan_details.amount" not in reading.updates and reading.hold
    assert "cannot top up" in (reading.reply or "")
    assert reading.updates["pending_change"] == {"amount": 60_000}


def test_going_back_to_an_earlier_ask_reads_it_from_the_asks_recorded() -> None:
    record = _offered(300_000, 36)
    raised = read_message("raise it to 4 lakh", record, VERIFYING).updates
    assert raised["loan_details.asked"] == [300_000]
    record, _, _ = apply_updates(record, raised, LOAN_WORKFLOW.reader_writes)
    assert isinstance(record, LoanConversation)
    back = read_message("hmm no, let's return to my original amount", record, VERIFYING).updates
    assert back["loan_details.amount"] == 300_000


async def _say(resources: RuntimeResources, thread_id: str, text: str) -> dict[str, Any]:
    config: Any = {"configurable": {"tenant_id": DEMO_TENANT, "thread_id": thread_id}}
    graph = await master_graph(resources, config, checkpointer=resources.database.checkpointer)
    return dict(await graph.ainvoke({"messages": [HumanMessage(content=text)]}, config))


async def test_a_conversation_with_a_history_books_only_the_last_ask(resources: RuntimeResources) -> None:
    """Through the graph: an earlier loan and its tenure are not the terms; a bare counteroffer is in
    lakh and recomputes the offer; going back to the first ask restores it; the letter has those terms."""
    thread = str(uuid.uuid4())
    await _say(resources, thread, "hello, 9000000001")
    first = await _say(
        resources,
        thread,
        "Back in 2022 I borrowed 1 lakh from you and cleared it in 12 months. Now I need 2 lakh for 24 months",
    )
    details = first["record"]["loan_details"]
    assert (details["amount"], details["tenure_months"]) == (200_000, 24)
    assert details["emi"] == pytest.approx(emi(200_000, 11.5, 24))
    raised = await _say(resources, thread, "actually can you make it 2.75 instead")
    details = raised["record"]["loan_details"]
    assert (details["amount"], details["emi"]) == (275_000, pytest.approx(emi(275_000, 11.5, 24)))
    back = await _say(resources, thread, "no, go back to the first amount please")
    details = back["record"]["loan_details"]
    assert (details["amount"], details["emi"]) == (200_000, pytest.approx(emi(200_000, 11.5, 24)))
    done = await _say(resources, thread, "ABCPV1234K, 12/04/1988")
    assert done["record"]["underwriting_result"]["decision"] == "APPROVED"
    assert done["record"]["underwriting_result"]["terms"]["amount"] == 200_000


def test_the_largest_principal_is_the_amortisation_formula_solved_for_it() -> None:
    most = largest_principal(10_000, 11.5, 36, step=1000)
    assert emi(most, 11.5, 36) <= 10_000 < emi(most + 1000, 11.5, 36)
    assert largest_principal(1_000, 0, 12) == 12_000


@pytest.mark.parametrize(
    "text",
    ["can't stretch beyond 11k a month, bring the loan down", "reduce it so the EMI stays below 11,000"],
)
def test_an_emi_budget_is_never_the_loan_and_the_amount_that_fits_is_confirmed(text: str) -> None:
    reading = read_message(text, _offered(500_000, 48), VERIFYING)
    assert "loan_details.amount" not in reading.updates and reading.hold
    fitting = largest_principal(11_000, 11.5, 48, step=1000)
    assert reading.updates["pending_change"] == {"amount": fitting}
    assert emi(fitting, 11.5, 48) <= 11_000
    record, _, _ = apply_updates(_offered(500_000, 48), reading.updates, LOAN_WORKFLOW.reader_writes)
    agreed = read_message("yes", record, VERIFYING).updates
    assert agreed["loan_details.amount"] == fitting and agreed["loan_details.emi"] is None
