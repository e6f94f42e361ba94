"""Seed 001's loan conversation: the stage machine on the real runtime (Postgres checkpointer, the
tenant's customer records), its rules, its audit trail and its sanction letter."""

from __future__ import annotations

import dataclasses
import uuid
from typing import Any

import pytest
from langchain_core.messages import HumanMessage
from pydantic import BaseModel

from master_agent.capabilities import load_tenant
from master_agent.domains.lending import DEMO_TENANT, LOAN_WORKFLOW, conversation_graph
from master_agent.domains.lending.data import PERSONAS
from master_agent.domains.lending.demo import InProcessChannel
from master_agent.domains.lending.facts import FACTS, answer_questions, fact_reader
from master_agent.domains.lending.letters import pdf_text, slips_dir
from master_agent.domains.lending.reading import read_message
from master_agent.domains.lending.records import LoanConversation, SalarySlip
from master_agent.domains.lending.rules import Application, emi, underwrite
from master_agent.domains.lending.simulator import PERSONAS as SIMULATED
from master_agent.domains.lending.simulator import simulate
from master_agent.errors import ConfigError
from master_agent.runtime import RuntimeResources, open_resources
from master_agent.runtime.factory import master_graph, tenant_tool_context
from master_agent.settings import Settings
from master_agent.storage.files import documents_dir
from master_agent.workflows import Guard, StageSpec, Transition, WorkflowSpec
from master_agent.workflows.audit import audit_events
from master_agent.workflows.spec import apply_updates
from tests.model_exchanges import Script, load_recordings


async def _say(resources: RuntimeResources, thread_id: str, text: str) -> dict[str, Any]:
    config: Any = {"configurable": {"tenant_id": DEMO_TENANT, "thread_id": thread_id}}
    graph = await master_graph(resources, config, checkpointer=resources.database.checkpointer)
    return dict(await graph.ainvoke({"messages": [HumanMessage(content=text)]}, config))


def test_emi_is_the_amortisation_formula() -> None:
    # 5 lakh over 36 months at 11.5 %: the figure any EMI calculator gives.
    assert emi(500_000, 11.5, 36) == pytest.approx(16_488.0, abs=1.0)
    assert emi(120_000, 0, 12) == 10_000


@pytest.mark.parametrize(
    ("persona", "amount", "salary", "decision", "rule"),
    [
        (0, 400_000, None, "APPROVED", "within_preapproved_limit"),
        (2, 100_000, None, "REJECTED", "credit_score_below_minimum"),
        (3, 500_000, None, "REJECTED", "above_twice_the_limit"),
        (1, 500_000, None, "NEEDS_SALARY_SLIP", "salary_slip_required"),
        (1, 500_000, 70_000, "APPROVED", "emi_within_half_salary"),
        (1, 500_000, 20_000, "REJECTED", "emi_above_half_salary"),
    ],
)
def test_every_underwriting_rule(
    persona: int, amount: float, salary: float | None, decision: str, rule: str
) -> None:
    result = underwrite(PERSONAS[persona], Application(amount, 36, 11.5), salary)
    assert (result.decision, result.rule) == (decision, rule)


def test_messages_are_read_into_the_typed_state() -> None:
    reading = read_message("Hi, my number is 9000000001 and I need 4 lakh for 3 years")
    assert reading.updates == {
        "stated.phone": "9000000001",
        "loan_details.amount": 400_000,
        "loan_details.tenure_months": 36,
        "customer_intent": "personal_loan",  # terms asked for are a loan request, "loan" said or not
    }
    assert read_message("PAN abcpv1234k, born 12/04/1988").updates == {
        "stated.pan": "ABCPV1234K",
        "stated.dob": "1988-04-12",
    }
    assert read_message("I'd like a personal loan of Rs 2,50,000").updates == {
        "loan_details.amount": 250_000,
        "customer_intent": "personal_loan",
    }
    assert not read_message("Who won the cricket match yesterday?").in_scope


def test_a_tenure_said_as_when_the_loan_is_paid_off_is_read_and_a_later_month_is_not() -> None:
    said = read_message("I need 3.8 lakh and want it paid off in a year").updates
    assert (said["loan_details.amount"], said["loan_details.tenure_months"]) == (380_000, 12)
    assert (
        read_message("2 lakh, and I can pay it back within a year").updates["loan_details.tenure_months"]
        == 12
    )
    assert "loan_details.tenure_months" not in read_message("I need 2 lakh, I will apply in a month").updates


@pytest.mark.parametrize(
    ("text", "amount", "months"),
    [("mujhe 4 lakh chahiye, 3 saal ke liye", 400_000, 36), ("2.8 lakh, 24 mahine", 280_000, 24)],
)
def test_a_tenure_in_hindi_units_is_a_loan_request(text: str, amount: float, months: int) -> None:
    said = read_message(text).updates
    assert (said["loan_details.amount"], said["loan_details.tenure_months"]) == (amount, months)
    assert said["customer_intent"] == "personal_loan"


class _Facts(BaseModel):
    ready: bool = False


def test_a_workflow_that_cannot_run_is_refused_at_load() -> None:
    base = dict(
        name="w",
        state_model=_Facts,
        workers={},
        initial="A",
        read_message=lambda text, record: None,
        reader_writes=(),
        fallback=lambda record, stage: "",
    )
    with pytest.raises(ConfigError, match="unreachable"):
        WorkflowSpec(stages=(StageSpec(name="A"), StageSpec(name="B")), **base).check()  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="worker 'w1' is not declared"):
        WorkflowSpec(stages=(StageSpec(name="A", worker="w1"),), **base).check()  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="unknown field 'steady'"):
        WorkflowSpec(
            stages=(
                StageSpec(name="A", transitions=(Transition(to="B", when=(Guard(field="steady"),)),)),
                StageSpec(name="B"),
            ),
            **base,  # type: ignore[arg-type]
        ).check()
    LOAN_WORKFLOW.check()


@pytest.mark.parametrize(
    ("said", "noted"),
    [
        ("I want a loan of 4 lakh for 3 years", ("INR 400,000.00", "36 months")),
        ("hi, looking for 2.5L over 24 months", ("INR 250,000.00", "24 months")),
    ],
)
async def test_terms_said_before_the_mobile_number_are_kept_and_said_back(
    resources: RuntimeResources, said: str, noted: tuple[str, ...]
) -> None:
    """Terms given before the mobile number: the greeting is not said again as if unheard; the terms
    are said back with the mobile number still needed, and the offer uses them once it is given."""
    thread = str(uuid.uuid4())
    first = await _say(resources, thread, said)
    text = first["reply"]["text"]
    assert first["current_stage"] == "GREETING" and "Hello! I am" not in text
    assert all(part in text for part in noted) and "mobile number" in text, text
    offered = await _say(resources, thread, "9000000001")
    amount = float(noted[0].removeprefix("INR ").replace(",", ""))
    months = int(noted[1].split()[0])
    assert offered["record"]["loan_details"]["emi"] == pytest.approx(emi(amount, 11.5, months))


async def test_an_eligible_customer_gets_a_sanction_letter(resources: RuntimeResources) -> None:
    thread = str(uuid.uuid4())
    first = await _say(resources, thread, "Hello")
    assert first["current_stage"] == "GREETING"
    assert "mobile number" in first["reply"]["text"]

    offered = await _say(resources, thread, "My number is 9000000001, I want a personal loan")
    assert offered["current_stage"] == "SALES_EXPLORATION"
    assert "pre-approved" in offered["reply"]["text"] and offered["active_agent"] == "sales_agent"

    off_topic = await _say(resources, thread, "What's the weather like in Mumbai?")
    assert off_topic["reply"]["status"] == "out_of_scope"
    assert off_topic["current_stage"] == "SALES_EXPLORATION"
    assert "only help with personal loans" in off_topic["reply"]["text"]

    asked = await _say(resources, thread, "4 lakh over 36 months please")
    assert asked["current_stage"] == "VERIFICATION"
    assert asked["record"]["loan_details"]["emi"] == pytest.approx(emi(400_000, 11.5, 36))
    assert "PAN" in asked["reply"]["text"]

    done = await _say(resources, thread, "PAN ABCPV1234K, date of birth 1988-04-12")
    assert done["current_stage"] == "CLOSURE" and done["reply"]["status"] == "closed"
    assert done["record"]["underwriting_result"]["decision"] == "APPROVED"
    stages = [(t["from"], t["to"]) for t in done["transitions"]]
    assert stages == [
        ("GREETING", "INTENT_CAPTURE"),
        ("INTENT_CAPTURE", "SALES_EXPLORATION"),
        ("SALES_EXPLORATION", "VERIFICATION"),
        ("VERIFICATION", "UNDERWRITING"),
        ("UNDERWRITING", "DOCUMENTATION"),
        ("DOCUMENTATION", "CLOSURE"),
    ]
    assert [t["response"]["status"] for t in done["tasks"]][-3:] == ["COMPLETED"] * 3
    link = done["record"]["document_links"]["sanction_letter"]
    document_id = link.rsplit("/", 1)[-1]
    text = pdf_text(documents_dir(resources.settings.data_dir, DEMO_TENANT) / f"{document_id}.pdf")
    assert "Asha Verma" in text and "INR 400,000.00" in text and "36 months" in text
    assert f"INR {emi(400_000, 11.5, 36):,.2f}" in text

    events = await audit_events(resources.database.pool, DEMO_TENANT, thread_id=thread)
    kinds = {event.kind for event in events}
    assert {"message", "decision", "transition", "read", "tool", "document", "task"} <= kinds
    assert [e.detail["to_stage"] for e in events if e.kind == "transition"] == [t for _, t in stages]
    assert any(e.kind == "read" and "pan" in e.detail["fields"] for e in events)


async def test_a_low_score_is_rejected_and_a_slip_is_asked_above_the_limit(
    resources: RuntimeResources,
) -> None:
    low = str(uuid.uuid4())
    await _say(resources, low, "I need a loan of 1 lakh for 24 months, my mobile is 9000000003")
    closed = await _say(resources, low, "PAN CDEPN3456M dob 1985-01-27")
    assert closed["current_stage"] == "CLOSURE"
    assert closed["record"]["underwriting_result"]["rule"] == "credit_score_below_minimum"
    assert "sanction_letter" not in closed["record"]["document_links"]

    slip = str(uuid.uuid4())
    await _say(resources, slip, "Loan of 5 lakh for 36 months. Mobile 9000000002")
    waiting = await _say(resources, slip, "PAN BCDPM2345L, born 03/09/1991")
    assert waiting["current_stage"] == "UNDERWRITING"
    assert waiting["record"]["underwriting_result"]["decision"] == "NEEDS_SALARY_SLIP"
    assert "salary slip" in waiting["reply"]["text"]
    folder = slips_dir(resources.settings.data_dir, DEMO_TENANT, slip)
    folder.mkdir(parents=True)
    (folder / "slip.txt").write_text("ACME Corp payslip\nEmployee: Rohan Mehta\nNet salary: INR 70,000\n")
    approved = await _say(resources, slip, "I have uploaded my salary slip")
    assert approved["record"]["underwriting_result"]["rule"] == "emi_within_half_salary"
    assert approved["record"]["salary_slip"]["monthly_salary"] == 70_000
    assert approved["current_stage"] == "CLOSURE"
    assert approved["record"]["document_links"]["sanction_letter"].startswith("/documents/")


def test_only_a_worker_that_declares_a_field_writes_it() -> None:
    # A sales worker (or a model behind it) saying the customer is verified changes nothing.
    sales = LOAN_WORKFLOW.workers["sales_agent"]
    record, applied, refused = apply_updates(
        LoanConversation(),
        {"verification_status": {"verified": True}, "loan_details": {"amount": 1000.0}},
        sales.writes,
    )
    assert refused == ["verification_status"] and list(applied) == ["loan_details"]
    assert record.verification_status.verified is False  # type: ignore[attr-defined]
    assert record.loan_details.amount == 1000.0  # type: ignore[attr-defined]


@pytest.fixture
def lending_recordings() -> dict[str, dict[str, Any]]:
    return load_recordings("lending_underwriting")


def _with_model(resources: RuntimeResources, settings: Settings, script: Script) -> RuntimeResources:
    # Its own graphs (the graph cache is per resources), on the same database.
    return dataclasses.replace(resources, model=script.chat_model(settings))


async def test_the_rules_overrule_a_model_that_approves_an_ineligible_customer(
    resources: RuntimeResources, settings: Settings, lending_recordings: dict[str, dict[str, Any]]
) -> None:
    script = Script(["approve_ineligible"], recorded=lending_recordings)
    with_model = _with_model(resources, settings, script)
    thread = str(uuid.uuid4())
    await _say(with_model, thread, "I need a loan of 1 lakh for 24 months, my mobile is 9000000003")
    closed = await _say(with_model, thread, "PAN CDEPN3456M dob 1985-01-27")

    result = closed["record"]["underwriting_result"]
    assert (result["decision"], result["rule"]) == ("REJECTED", "credit_score_below_minimum")
    assert result["model_recommendation"].startswith("APPROVED")
    assert (
        closed["current_stage"] == "CLOSURE" and "sanction_letter" not in closed["record"]["document_links"]
    )
    assert "cannot approve" in closed["reply"]["text"]
    # The model was asked with the applicant's facts, through the real OpenAI client.
    (request,) = script.requests
    assert "Credit score: 655" in request["messages"][1]["content"]
    assert request["tools"][0]["function"]["name"] == "UnderwritingOpinion"
    events = await audit_events(resources.database.pool, DEMO_TENANT, thread_id=thread)
    overruled = [
        e.detail for e in events if e.kind == "decision" and e.detail["decision"] == "model_overruled"
    ]
    assert overruled == [
        {
            "decision": "model_overruled",
            "recommended": "APPROVED",
            "reason": overruled[0]["reason"],
            "decided": "REJECTED",
            "rule": "credit_score_below_minimum",
        }
    ]


async def test_a_failing_model_leaves_the_decision_to_the_rules(
    resources: RuntimeResources, settings: Settings, lending_recordings: dict[str, dict[str, Any]]
) -> None:
    with_model = _with_model(resources, settings, Script(["server_error"], recorded=lending_recordings))
    thread = str(uuid.uuid4())
    await _say(with_model, thread, "A loan of 4 lakh for 36 months please, mobile 9000000001")
    closed = await _say(with_model, thread, "PAN ABCPV1234K, date of birth 1988-04-12")
    result = closed["record"]["underwriting_result"]
    assert (result["decision"], result["model_recommendation"]) == ("APPROVED", None)
    assert closed["record"]["document_links"]["sanction_letter"].startswith("/documents/")
    events = await audit_events(resources.database.pool, DEMO_TENANT, thread_id=thread)
    assert any(e.kind == "decision" and e.detail["decision"] == "model_unavailable" for e in events)


async def test_every_simulated_customer_ends_as_the_rules_say(resources: RuntimeResources) -> None:
    """The customer simulator's personas in process (``make eval-lending`` drives them through the
    service): eligible, slips, low score, over twice the limit, out of order, off-topic, abandons."""
    channel = InProcessChannel(resources, DEMO_TENANT)
    results = [await simulate(persona, channel) for persona in SIMULATED]
    assert len(results) >= 10
    assert [(r.persona.key, r.decision, r.rule, r.stage) for r in results if not r.matches] == []
    by_key = {result.persona.key: result for result in results}
    assert by_key["off_topic_questions"].fallbacks == 2
    assert by_key["details_out_of_order"].values["record"]["stated"]["pan"] == "FGHPR6789Q"
    assert by_key["corrects_a_wrong_pan"].values["record"]["verification_status"]["attempts"] == 2


async def test_a_conversation_cut_mid_turn_resumes_from_its_checkpoint(
    resources: RuntimeResources, settings: Settings
) -> None:
    """The process stops after the master delegated to underwriting (the checkpoint holds the pending
    task); a new process resumes the thread from that checkpoint: the task runs once, the turn ends."""
    thread = str(uuid.uuid4())
    config: Any = {"configurable": {"tenant_id": DEMO_TENANT, "thread_id": thread}}
    context = tenant_tool_context(resources, await load_tenant(resources.database.pool, DEMO_TENANT))
    cut = conversation_graph(context, resources.model).compile(
        checkpointer=resources.database.checkpointer, interrupt_before=["underwriting_agent"]
    )
    await cut.ainvoke(
        {"messages": [HumanMessage(content="A loan of 3 lakh for 24 months, 9000000001")]}, config
    )
    await cut.ainvoke({"messages": [HumanMessage(content="PAN ABCPV1234K, born 1988-04-12")]}, config)
    stopped = await cut.aget_state(config)
    assert stopped.next == ("underwriting_agent",)
    assert stopped.values["current_stage"] == "UNDERWRITING"
    assert stopped.values["pending_task"]["task_type"] == "UNDERWRITING"

    async with open_resources(settings, install_demo=False) as restarted:
        graph = await master_graph(restarted, config, checkpointer=restarted.database.checkpointer)
        values = await graph.ainvoke(None, config)
    assert values["current_stage"] == "CLOSURE" and values["turn_count"] == 2
    assert values["record"]["underwriting_result"]["decision"] == "APPROVED"
    task_types = [task["assignment"]["task_type"] for task in values["tasks"]]
    assert task_types.count("UNDERWRITING") == 1 and task_types.count("SANCTION_LETTER") == 1
    assert values["record"]["document_links"]["sanction_letter"].startswith("/documents/")
    # The conversation goes on on the same thread after the resumed turn.
    after = await _say(resources, thread, "Thanks!")
    assert after["current_stage"] == "CLOSURE" and after["turn_count"] == 3


# Issue 40: the conversation reads what the customer means, and every rule holds where it decides and
# again before a letter.

VERIFYING = LOAN_WORKFLOW.stage("VERIFICATION").asks
UNDERWRITING = LOAN_WORKFLOW.stage("UNDERWRITING").asks
SELLING = LOAN_WORKFLOW.stage("SALES_EXPLORATION").asks


@pytest.mark.parametrize(
    ("text", "asks", "updates"),
    [
        ("My net salary is 70,000 a month", VERIFYING, {"stated.monthly_salary": 70_000}),
        ("85000", UNDERWRITING, {"stated.monthly_salary": 85_000}),
        ("85000", SELLING, {"loan_details.amount": 85_000}),
        (
            "₹1.5 lakh over 2 years and 6 months",
            SELLING,
            {"loan_details.amount": 150_000, "loan_details.tenure_months": 30},
        ),
        (
            "Rs 12,00,000 for 84 months",
            SELLING,
            {"loan_details.amount": 1_200_000, "loan_details.tenure_months": 84},
        ),
        ("50k, 18", SELLING, {"loan_details.amount": 50_000, "loan_details.tenure_months": 18}),
        ("2 crore", SELLING, {"loan_details.amount": 20_000_000}),
        ("not 5 lakh, 3 lakh", SELLING, {"loan_details.amount": 300_000}),
        ("born 2nd May 1966", VERIFYING, {"stated.dob": "1966-05-02"}),
        (
            "My salary is 60,000 so I need 3 lakh for 2 years",
            SELLING,
            {
                "stated.monthly_salary": 60_000,
                "loan_details.amount": 300_000,
                "loan_details.tenure_months": 24,
            },
        ),
        ("dob 14-Feb-1990", VERIFYING, {"stated.dob": "1990-02-14"}),
        ("I make 60k a month", VERIFYING, {"stated.monthly_salary": 60_000}),
        ("my mobile: +91 90000 00001", (), {"stated.phone": "9000000001"}),
        ("call me on 09000000001", (), {"stated.phone": "9000000001"}),
        (
            "2.5 lakhs for 1.5 years",
            SELLING,
            {"loan_details.amount": 250_000, "loan_details.tenure_months": 18},
        ),
        ("one lakh for a year", SELLING, {"loan_details.amount": 100_000, "loan_details.tenure_months": 12}),
        ("can I keep the EMI under 9,000 a month?", SELLING, {}),
        (
            "loan 4 lakh 36 months",
            SELLING,
            {"loan_details.amount": 400_000, "loan_details.tenure_months": 36},
        ),
        (
            "two lakh fifty thousand for three years",
            SELLING,
            {"loan_details.amount": 250_000, "loan_details.tenure_months": 36},
        ),
        (
            "What EMI would I pay on 4 lakh over 3 years?",
            SELLING,
            {"loan_details.amount": 400_000, "loan_details.tenure_months": 36},
        ),
        (
            "I joined a year ago; 2 lakh over a couple of years",
            SELLING,
            {"loan_details.amount": 200_000, "loan_details.tenure_months": 24},
        ),
    ],
)
def test_a_value_is_read_as_the_field_the_stage_asks(
    text: str, asks: tuple[str, ...], updates: dict[str, Any]
) -> None:
    found = read_message(text, LoanConversation(), asks).updates
    found.pop("customer_intent", None)
    assert found == updates


def test_terms_nobody_asked_for_are_confirmed_before_they_replace_the_offer() -> None:
    offered = LoanConversation.model_validate(
        {"loan_details": {"amount": 400_000, "tenure_months": 36, "rate_pct": 11.5, "emi": 13_190.0}}
    )
    # At documentation a bare sum could be anything: it is asked about before it is the loan.
    documenting = LOAN_WORKFLOW.stage("DOCUMENTATION").asks
    asked = read_message("5 lakh", offered, documenting)
    assert asked.hold and "yes or no" in (asked.reply or "")
    assert asked.updates == {"pending_change": {"amount": 500_000, "tenure_months": None}}
    pending, _, _ = apply_updates(offered, asked.updates, LOAN_WORKFLOW.reader_writes)
    confirmed = read_message("yes please", pending, documenting).updates
    assert confirmed["loan_details.amount"] == 500_000 and confirmed["loan_details.emi"] is None
    assert read_message("no", pending, documenting).updates == {"pending_change": None}
    assert read_message("PAN ABCPV1234K", pending, VERIFYING).updates["pending_change"] is None
    # With a tenure they are plainly the loan's terms.
    plain = read_message("2 lakh over 2 years", offered, VERIFYING).updates
    assert (plain["loan_details.amount"], plain["loan_details.tenure_months"]) == (200_000, 24)
    # Said as a change, it needs no confirmation; "yes" where a loan is offered is the intent.
    direct = read_message("make it 4.5 lakh", offered, VERIFYING).updates
    assert direct["loan_details.amount"] == 450_000 and direct["loan_details.emi"] is None
    assert read_message("Yes", LoanConversation(), ("customer_intent",)).updates == {
        "customer_intent": "personal_loan"
    }
    assert (
        read_message("want 6 lakh over 5 years", LoanConversation(), ("customer_intent",)).updates[
            "customer_intent"
        ]
        == "personal_loan"
    )


@pytest.mark.parametrize(
    ("text", "amount"),
    [
        ("I need a lakh and a half for 2 years", 150_000),
        ("one and a half lakh, 12 months", 150_000),
        ("two and a half lakhs over 3 years", 250_000),
        ("looking for 2.5L over 3 years", 250_000),
        ("fifteen thousand rupees for a year", 15_000),
        ("1 and a quarter crore for 5 years", 12_500_000),
    ],
)
def test_spoken_amounts_are_read_whole(text: str, amount: float) -> None:
    assert read_message(text, LoanConversation(), SELLING).updates["loan_details.amount"] == amount


def test_a_sum_not_said_as_income_is_asked_about_before_it_is_the_salary() -> None:
    verifying = LoanConversation.model_validate(
        {"loan_details": {"amount": 350_000, "tenure_months": 36, "rate_pct": 11.5, "emi": 11_541.6}}
    )
    # A bare figure among many words (nothing said of it) is asked about before it is the salary.
    unsure = read_message("ok so well it is about 62,500 now then", verifying, UNDERWRITING)
    assert "stated.monthly_salary" not in unsure.updates and unsure.hold
    assert "62,500" in (unsure.reply or "") and "salary" in (unsure.reply or "")
    pending, _, _ = apply_updates(verifying, unsure.updates, LOAN_WORKFLOW.reader_writes)
    assert pending.loan_details == verifying.loan_details
    assert read_message("no", pending, VERIFYING).updates == {"pending_change": None}
    assert read_message("yes", pending, VERIFYING).updates["stated.monthly_salary"] == 62_500
    # A figure said of something else (a dinner paid, a rent) is neither the salary nor a loan term,
    # and nothing is asked about it.
    for other in ("I paid 2000 for dinner yesterday, lol", "my rent alone is 15000 so money is tight"):
        said = read_message(other, verifying, VERIFYING)
        assert not any(key.startswith(("loan_details", "stated", "pending")) for key in said.updates), other
        assert not said.hold, other
    # A short answer to the question asked is the salary.
    assert read_message("about 60,000", verifying, UNDERWRITING).updates == {"stated.monthly_salary": 60_000}


@pytest.mark.parametrize("said", ["2,50,000", "85000", "about 60,000", "Rs 2.5 lakh", "₹1,20,000 only"])
def test_a_bare_sum_where_no_sum_was_asked_is_confirmed_as_the_amount_never_taken_unasked(said: str) -> None:
    """Verification asks for the PAN and the date of birth: a bare sum there answers nothing asked. It
    is neither the salary nor the loan amount until the customer confirms it as the new amount; a
    monthly figure ("60k a month") is a salary, never the amount."""
    offered = LoanConversation.model_validate(
        {"loan_details": {"amount": 300_000, "tenure_months": 24, "rate_pct": 11.5, "emi": 14_052.09}}
    )
    asked = read_message(said, offered, VERIFYING)
    assert asked.hold and "change your loan" in (asked.reply or "")
    assert not any(key.startswith(("loan_details", "stated")) for key in asked.updates)
    pending, _, _ = apply_updates(offered, asked.updates, LOAN_WORKFLOW.reader_writes)
    confirmed = read_message("yes, that's right", pending, VERIFYING).updates
    assert confirmed["loan_details.amount"] == pending.pending_change.amount  # type: ignore[union-attr]
    assert confirmed["loan_details.emi"] is None  # the offer is made again on the new amount
    assert "stated.monthly_salary" not in confirmed
    declined = read_message("no", pending, VERIFYING).updates
    assert declined == {"pending_change": None}
    for monthly in ("60k a month", "Rs 45,000 per month"):
        assert set(read_message(monthly, offered, VERIFYING).updates) == {"stated.monthly_salary"}, monthly


@pytest.mark.parametrize(
    ("decided", "said"),
    [
        (
            {"underwriting_result": {"decision": "APPROVED"}, "document_links": {"sanction_letter": "/d/1"}},
            "sanctioned",
        ),
        ({"underwriting_result": {"decision": "REJECTED"}}, "declined"),
        ({"verification_status": {"locked": True}}, "locked"),
    ],
)
def test_new_terms_after_the_decision_get_an_answer_and_change_nothing(
    decided: dict[str, Any], said: str
) -> None:
    closed = LoanConversation.model_validate(
        {
            "loan_details": {"amount": 300_000, "tenure_months": 36, "rate_pct": 13.0, "emi": 10_108.19},
            **decided,
        }
    )
    reading = read_message("What if I take just 1 lakh instead?", closed, ())
    assert not any(key.startswith("loan_details") for key in reading.updates)
    assert reading.reply is not None and said in reading.reply and "new application" in reading.reply
    assert read_message("thanks, bye", closed, ()).reply is None


async def test_changed_terms_go_back_to_the_offer_and_the_letter_has_only_the_last(
    resources: RuntimeResources,
) -> None:
    thread = str(uuid.uuid4())
    await _say(resources, thread, "Hello, 9000000001, I want a personal loan")
    first = await _say(resources, thread, "6 lakh for 60 months")
    assert first["current_stage"] == "VERIFICATION"
    salary = await _say(resources, thread, "My net salary is 95,000 a month")
    assert salary["record"]["loan_details"]["amount"] == 600_000
    assert salary["record"]["stated"]["monthly_salary"] == 95_000
    changed = await _say(resources, thread, "Actually, make it 4.5 lakh for 36 months")
    details = changed["record"]["loan_details"]
    assert (details["amount"], details["tenure_months"], details["emi"]) == (
        450_000,
        36,
        emi(450_000, 11.5, 36),
    )
    assert f"INR {emi(450_000, 11.5, 36):,.2f}" in changed["reply"]["text"]
    assert [t["to"] for t in changed["transitions"]][-2:] == ["SALES_EXPLORATION", "VERIFICATION"]
    done = await _say(resources, thread, "PAN ABCPV1234K, born 12 April 1988")
    assert done["current_stage"] == "CLOSURE"
    assert done["record"]["underwriting_result"]["terms"]["amount"] == 450_000
    link = done["record"]["document_links"]["sanction_letter"]
    text = pdf_text(
        documents_dir(resources.settings.data_dir, DEMO_TENANT) / f"{link.rsplit('/', 1)[-1]}.pdf"
    )
    assert "INR 450,000.00" in text and "36 months" in text and f"INR {emi(450_000, 11.5, 36):,.2f}" in text


async def test_a_slip_of_someone_else_goes_to_manual_review_without_a_letter(
    resources: RuntimeResources,
) -> None:
    thread = str(uuid.uuid4())
    await _say(resources, thread, "Loan of 4 lakh for 36 months, mobile 9000000005")
    waiting = await _say(resources, thread, "PAN EFGPG5678P DOB 08/11/1994")
    assert waiting["record"]["underwriting_result"]["decision"] == "NEEDS_SALARY_SLIP"
    folder = slips_dir(resources.settings.data_dir, DEMO_TENANT, thread)
    folder.mkdir(parents=True)
    (folder / "slip.txt").write_text("Payslip\nEmployee: Someone Else\nNet salary: INR 300,000\n")
    review = await _say(resources, thread, "uploaded")
    result = review["record"]["underwriting_result"]
    assert (result["decision"], result["rule"]) == ("MANUAL_REVIEW", "slip_name_mismatch")
    assert review["current_stage"] == "CLOSURE" and review["record"]["document_links"] == {}
    # Her own name but a salary far from her record's (22,000): a person reviews it too.
    assert (
        underwrite(
            PERSONAS[4],
            Application(400_000, 36, 13.0),
            SalarySlip(document_id="s", monthly_salary=300_000, employee="Neha Gupta"),
        ).rule
        == "slip_salary_mismatch"
    )


async def test_five_wrong_pans_lock_the_application(resources: RuntimeResources) -> None:
    thread = str(uuid.uuid4())
    await _say(resources, thread, "2 lakh for 24 months please, 9000000006, dob 1990-02-14")
    for wrong in ("FGHPR6780Q", "FGHPR6781Q", "FGHPR6782Q", "FGHPR6783Q"):
        still = await _say(resources, thread, f"PAN {wrong}")
        assert still["current_stage"] == "VERIFICATION"
    locked = await _say(resources, thread, "PAN FGHPR6784Q")
    assert locked["record"]["verification_status"]["locked"] is True
    assert locked["current_stage"] == "CLOSURE"
    right = await _say(resources, thread, "PAN FGHPR6789Q")
    assert right["record"]["verification_status"]["verified"] is False
    assert right["record"]["document_links"] == {}
    events = await audit_events(resources.database.pool, DEMO_TENANT, thread_id=thread)
    assert [e.detail["failures"] for e in events if e.detail.get("decision") == "verification_locked"] == [5]


async def test_the_letter_generator_refuses_a_customer_the_rules_reject(resources: RuntimeResources) -> None:
    """A state written past the guards (in process, as ``update_state`` would) says approved for a
    score of 655: the generator checks the rules again from the records and issues nothing."""
    thread = str(uuid.uuid4())
    config: Any = {"configurable": {"tenant_id": DEMO_TENANT, "thread_id": thread}}
    await _say(resources, thread, "I need a loan of 1 lakh for 24 months, my mobile is 9000000003")
    graph = await master_graph(resources, config, checkpointer=resources.database.checkpointer)
    state = (await graph.aget_state(config)).values
    record = state["record"]
    record["verification_status"] = {"verified": True}
    record["stated"] |= {"pan": "CDEPN3456M", "dob": "1985-01-27"}
    record["underwriting_result"] = {"decision": "APPROVED", "rule": "within_preapproved_limit"}
    await graph.aupdate_state(config, {"record": record, "current_stage": "DOCUMENTATION"})
    after = await _say(resources, thread, "Please send my sanction letter")
    assert after["record"]["document_links"] == {}
    assert after["record"]["underwriting_result"]["rule"] == "letter_refused"
    assert after["current_stage"] == "CLOSURE"
    events = await audit_events(resources.database.pool, DEMO_TENANT, thread_id=thread)
    assert not [e for e in events if e.kind == "document"]
    assert any(e.kind == "refused" and "credit_score_below_minimum" in e.detail["reason"] for e in events)


async def test_a_product_question_is_answered_from_the_facts_and_the_stage_stays(
    resources: RuntimeResources,
) -> None:
    thread = str(uuid.uuid4())
    offered = await _say(resources, thread, "Loan of 2 lakh for 24 months, mobile 9000000001")
    asked = await _say(resources, thread, "Is there any penalty if I prepay the loan early?")
    prepayment = next(fact for fact in FACTS if fact.topic == "prepayment")
    assert asked["reply"]["text"].startswith(prepayment.answer)
    assert asked["current_stage"] == offered["current_stage"] == "VERIFICATION"
    assert asked["record"]["loan_details"] == offered["record"]["loan_details"]
    data = await _say(resources, thread, "How will you use my personal data?")
    assert next(fact for fact in FACTS if fact.topic == "data_use").answer in data["reply"]["text"]
    both = await answer_questions("Is the rate fixed? Also, any hidden charges?", resources.settings)
    assert [fact.topic for fact in FACTS if fact.answer in (both or "")] == ["fees", "interest_rate"]
    assert await answer_questions("Tell me a joke", resources.settings) is None
    # Read by meaning: a question sharing no word with a fact's phrasings is still answered by it, and
    # an off-topic question is not answered at all (it gets the fallback, the stage stays).
    sold = await _say(resources, thread, "Do you sell my information to marketing companies?")
    assert next(fact for fact in FACTS if fact.topic == "data_use").answer in sold["reply"]["text"]
    match = await _say(resources, thread, "By the way, did India win the match yesterday?")
    assert match["reply"]["status"] == "out_of_scope" and match["current_stage"] == "VERIFICATION"


async def test_the_fact_head_reads_what_a_question_asks_not_the_words_it_shares(
    resources: RuntimeResources,
) -> None:
    """Early settlement asked about as a charge is the prepayment fact, not the fees; a change of
    terms phrased as a question is no product question (the stage handles it)."""
    reader = fact_reader(resources.settings)
    if reader.head is None:
        pytest.skip("no trained fact head for this embedder (the local MiniLM is not installed)")

    async def topics(text: str) -> list[str]:
        return [fact.topic for fact in await reader.answer(text)]

    assert await topics("Would there be an extra charge if I clear the loan off before the term ends?") == [
        "prepayment"
    ]
    assert await topics("Is anything deducted from the amount when it is paid out?") == ["fees"]
    assert await topics("Will you share my salary details with my employer?") == ["data_use"]
    assert await topics("Can I make it 8 lakh now?") == []
    assert await topics("Who won the election?") == []
    # What may be borrowed without a document is eligibility, not a charge (it was answered with the fees).
    assert await topics("Would I need any income proof if I stay under my limit?") == ["eligibility"]


def test_a_length_said_of_the_past_is_no_tenure() -> None:
    """ "I've banked with you for ten years" says how long something has lasted: the loan's tenure
    stays what the customer asked for."""
    said = read_message("I'm self-employed. I've banked with you for ten years, just approve it").updates
    assert "loan_details.tenure_months" not in said
    both = read_message("I have been a customer for 5 years. I need 2 lakh for 2 years").updates
    assert both["loan_details.tenure_months"] == 24
    assert read_message("the loan has to be over 3 years").updates["loan_details.tenure_months"] == 36


@pytest.mark.parametrize(
    ("text", "months"),
    [
        ("3.5 lakh, to repay in one and a half years", 18),
        ("Need 3.6 lakh over two and a half years", 30),
        ("2 lakh over a year and a half", 18),
        ("2 lakh over 1 1/2 years", 18),
        ("2 lakh over 2 years and a half", 30),
        ("2 lakh for three and a quarter years", 39),
    ],
)
def test_a_tenure_said_with_a_fraction_of_its_unit_is_read_whole(text: str, months: int) -> None:
    """Duckling reads "one and a half years" as "half years" (6 months): the whole is read here."""
    said = read_message(text, LoanConversation(), SELLING).updates
    assert said["loan_details.tenure_months"] == months
    assert said["loan_details.amount"] in (200_000, 350_000, 360_000)


@pytest.mark.parametrize(
    "text", ["Date of birth is November 15, 1976", "born on 15th of November, 1976", "dob nov 15 1976"]
)
def test_a_date_of_birth_with_its_month_named_is_read_in_any_order_and_is_no_sum(text: str) -> None:
    offered = LoanConversation.model_validate(
        {"loan_details": {"amount": 420_000, "tenure_months": 36, "rate_pct": 10.5, "emi": 13_651.03}}
    )
    reading = read_message(text, offered, VERIFYING)
    assert reading.updates == {"stated.dob": "1976-11-15"}, reading.updates
    assert reading.reply is None
    # A date written in figures is day first, whatever Duckling would make of it.
    assert read_message("09/03/1991", offered, VERIFYING).updates == {"stated.dob": "1991-03-09"}


def test_a_question_naming_other_terms_checks_the_offer_and_a_correction_changes_it() -> None:
    offered = LoanConversation.model_validate(
        {"loan_details": {"amount": 700_000, "tenure_months": 60, "rate_pct": 10.5, "emi": 15_045.73}}
    )
    asked = read_message("just to check, the EMI you gave me is for 7.5 lakh right?", offered, VERIFYING)
    assert asked.hold and "loan_details.amount" not in asked.updates
    assert asked.updates["pending_change"] == {"amount": 750_000, "tenure_months": None}
    assert "INR 700,000.00 over 60 months" in (asked.reply or "")
    pending, _, _ = apply_updates(offered, asked.updates, LOAN_WORKFLOW.reader_writes)
    kept = read_message("no no, 7 is correct, keep 7", pending, VERIFYING)
    assert kept.updates == {"pending_change": None}
    corrected = read_message("sorry, typo - I meant 7.5 lakh, not 7", offered, VERIFYING).updates
    assert corrected["loan_details.amount"] == 750_000 and corrected["loan_details.emi"] is None


async def test_a_goodbye_is_answered_as_one_and_the_conversation_goes_on(resources: RuntimeResources) -> None:
    """A closing ("Thank you madam... Bye") gets a goodbye, not the greeting again (audited as a
    farewell); the conversation goes on when the customer comes back."""
    thread = str(uuid.uuid4())
    hello = await _say(resources, thread, "Thank you madam... Bye")
    assert hello["current_stage"] == "GREETING" and "Goodbye" in hello["reply"]["text"]
    assert "Hello! I am" not in hello["reply"]["text"] and "mobile number" not in hello["reply"]["text"]
    again = await _say(resources, thread, "Loan of 2 lakh for 24 months, mobile 9000000001")
    assert again["current_stage"] == "VERIFICATION"
    events = await audit_events(resources.database.pool, DEMO_TENANT, thread_id=thread)
    farewells = [e.stage for e in events if e.kind == "decision" and e.detail.get("decision") == "farewell"]
    assert farewells == ["GREETING"]


async def test_numbers_that_are_not_the_loan_leave_it_unset_until_the_customer_says_it(
    resources: RuntimeResources,
) -> None:
    """A rent, a price, a take-home pay and a range said at sales: no amount is recorded and the range
    is asked about; the amount said next is offered; a what-if after the offer is answered and the
    offer, the decision and the letter keep the terms the customer chose."""
    thread = str(uuid.uuid4())
    await _say(resources, thread, "Hi, 9000000001 here. I'd like a personal loan")
    told = await _say(
        resources,
        thread,
        "We pay 21k rent and the bike I'm eyeing is priced at 1.9 lakh; my take-home is 95,000. "
        "Somewhere in the 2 to 3 lakh range would help",
    )
    assert told["current_stage"] == "SALES_EXPLORATION"
    assert told["record"]["loan_details"]["amount"] is None and told["record"]["loan_details"]["emi"] is None
    assert told["record"]["stated"]["monthly_salary"] == 95_000
    assert "INR 200,000.00" in told["reply"]["text"] and "INR 300,000.00" in told["reply"]["text"]
    offered = await _say(resources, thread, "ok, 2.6 lakh then, over 40 months")
    details = offered["record"]["loan_details"]
    assert (details["amount"], details["tenure_months"], details["emi"]) == (
        260_000,
        40,
        emi(260_000, 11.5, 40),
    )
    assert offered["current_stage"] == "VERIFICATION"
    what_if = await _say(resources, thread, "what would the EMI be over 24 months?")
    assert f"INR {emi(260_000, 11.5, 24):,.2f}" in what_if["reply"]["text"]
    assert what_if["record"]["loan_details"] == details and what_if["current_stage"] == "VERIFICATION"
    done = await _say(resources, thread, "ABCPV1234K, 12/04/1988")
    assert done["current_stage"] == "CLOSURE"
    assert done["record"]["underwriting_result"]["decision"] == "APPROVED"
    link = done["record"]["document_links"]["sanction_letter"]
    text = pdf_text(
        documents_dir(resources.settings.data_dir, DEMO_TENANT) / f"{link.rsplit('/', 1)[-1]}.pdf"
    )
    assert "INR 260,000.00" in text and "40 months" in text and f"INR {emi(260_000, 11.5, 40):,.2f}" in text
