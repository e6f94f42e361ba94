"""The loan conversation's workers (seed 001): sales, verification, underwriting, sanction letter.
Each reads what it needs from the tenant's records (audited), applies the pack's rules and answers
with a task response; the master moves the stage."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage, SystemMessage
from pydantic import BaseModel, Field

from master_agent.capabilities.tools.context import ToolContext
from master_agent.domains.lending.data import customer_by_id, customer_by_phone
from master_agent.domains.lending.letters import (
    rupees,
    sanction_letter,
    slip_text,
    slips_dir,
    stated_employee,
    stated_salary,
)
from master_agent.domains.lending.records import (
    CustomerRecord,
    LoanConversation,
    SalarySlip,
    UnderwritingResult,
)
from master_agent.domains.lending.rules import (
    AMOUNT_RANGE,
    MAX_VERIFICATION_FAILURES,
    TENURE_MONTHS,
    Application,
    annual_rate_pct,
    underwrite,
)
from master_agent.models.chat import describe_model_failure
from master_agent.workflows import TaskAssignment, TaskResponse, TaskResult, WorkerContext

log = logging.getLogger(__name__)

PROFILE_FIELDS = ["customer_id", "name", "city", "age", "credit_score", "preapproved_limit"]


@dataclass(frozen=True)
class LendingResources:
    context: ToolContext
    model: BaseChatModel | None = None
    """A chat model the underwriting worker asks for an opinion (None: the rules alone)."""

    @property
    def schema(self) -> str:
        assert self.context.data_schema is not None, "a lending tenant has a data schema"
        return self.context.data_schema

    @property
    def data_dir(self) -> Path:
        return self.context.settings.data_dir


def _respond(
    task: TaskAssignment, status: Any, text: str, data: dict[str, Any], next_action: str
) -> TaskResponse:
    return TaskResponse(
        task_id=task.task_id,
        agent_name=task.agent_name,
        task_type=task.task_type,
        status=status,
        result=TaskResult(customer_response=text, internal_data=data, next_action=next_action),
    )


async def _customer(
    record: LoanConversation, worker: WorkerContext, fields: list[str]
) -> CustomerRecord | None:
    resources: LendingResources = worker.resources
    if record.customer_id is None:
        return None
    customer = await customer_by_id(resources.context.pool, resources.schema, record.customer_id)
    worker.audit.read("customers", fields, customer_id=record.customer_id)
    return customer


async def sales(task: TaskAssignment, worker: WorkerContext) -> TaskResponse:
    resources: LendingResources = worker.resources
    record = LoanConversation.model_validate(task.task_parameters)
    data: dict[str, Any] = {}
    customer: CustomerRecord | None
    if record.customer_id is None:
        phone = record.stated.phone or ""
        customer = await customer_by_phone(resources.context.pool, resources.schema, phone)
        worker.audit.tool("lookup_customer", {"phone": phone}, {"found": customer is not None})
        if customer is None:
            return _respond(
                task,
                "NEEDS_INPUT",
                f"I could not find a customer with the mobile number {phone}. Please check it and send "
                "your registered mobile number.",
                {},
                "ASK_PHONE",
            )
        worker.audit.read("customers", PROFILE_FIELDS, customer_id=customer.customer_id)
        data["customer_id"] = customer.customer_id
        data["customer_profile"] = {
            "name": customer.name,
            "city": customer.city,
            "age": customer.age,
            "preapproved_limit": customer.preapproved_limit,
        }
    else:
        customer = await _customer(record, worker, PROFILE_FIELDS)
        assert customer is not None
    rate = annual_rate_pct(customer.credit_score)
    offer = (
        f"Hello {customer.name.split()[0]}! You are pre-approved for a personal loan of up to "
        f"{rupees(customer.preapproved_limit)} at {rate:.1f}% a year."
    )
    amount, months = record.loan_details.amount, record.loan_details.tenure_months
    problems = []
    if amount is not None and not AMOUNT_RANGE[0] <= amount <= AMOUNT_RANGE[1]:
        problems.append(f"the amount must be between {rupees(AMOUNT_RANGE[0])} and {rupees(AMOUNT_RANGE[1])}")
        amount = None
    if months is not None and not TENURE_MONTHS[0] <= months <= TENURE_MONTHS[1]:
        problems.append(f"the tenure must be between {TENURE_MONTHS[0]} and {TENURE_MONTHS[1]} months")
        months = None
    data["loan_details"] = {"amount": amount, "tenure_months": months, "rate_pct": rate}
    if amount is None or months is None:
        example = Application(customer.preapproved_limit, 36, rate)
        asked = " and ".join(
            part
            for part, missing in (
                ("how much you need", amount is None),
                ("over how many months", months is None),
            )
            if missing
        )
        text = (
            f"{offer} "
            + (f"Note: {'; '.join(problems)}. " if problems else "")
            + f"Please tell me {asked} (for example, {rupees(example.amount)} over 36 months is an EMI of "
            f"{rupees(example.emi)})."
        )
        return _respond(task, "NEEDS_INPUT", text, data, "ASK_LOAN_DETAILS")
    application = Application(amount, months, rate)
    worker.audit.tool(
        "compute_emi", {"amount": amount, "tenure_months": months, "rate_pct": rate}, application.emi
    )
    data["loan_details"]["emi"] = application.emi
    worker.audit.add(
        "decision",
        decision="terms_offered",
        amount=amount,
        tenure_months=months,
        rate_pct=rate,
        emi=application.emi,
    )
    text = f"{offer} For {rupees(amount)} over {months} months your EMI would be {rupees(application.emi)} a month."
    return _respond(task, "COMPLETED", text, data, "VERIFY")


def _ask_kyc(task: TaskAssignment, missing: list[str]) -> TaskResponse:
    return _respond(
        task,
        "NEEDS_INPUT",
        f"Before we continue I need to verify your identity: please share your {' and '.join(missing)}"
        + (" (as YYYY-MM-DD)" if "date of birth" in missing else "")
        + ".",
        {},
        "ASK_KYC",
    )


LOCKED_TEXT = (
    "For your security this application is locked after {count} failed identity checks. Please visit a "
    "branch with your PAN card to continue."
)


async def verification(task: TaskAssignment, worker: WorkerContext) -> TaskResponse:
    record = LoanConversation.model_validate(task.task_parameters)
    status = record.verification_status
    if status.locked:
        return _respond(task, "COMPLETED", LOCKED_TEXT.format(count=status.failures), {}, "CLOSE")
    if (
        status.verified
        and status.checked_pan == record.stated.pan
        and status.checked_dob == record.stated.dob
    ):
        # Verified already (the customer came back from changing their terms): no new check.
        return _respond(task, "COMPLETED", "", {}, "UNDERWRITE")
    stated = (("PAN", record.stated.pan), ("date of birth", record.stated.dob))
    missing = [name for name, value in stated if not value]
    if len(missing) == len(stated):
        return _ask_kyc(task, missing)
    # Each detail is checked as soon as it is given: a wrong PAN sent again and again while the date
    # of birth is still asked for counts towards the lockout (a check never run is no check passed).
    customer = await _customer(record, worker, ["pan", "dob"])
    assert customer is not None
    known = {"PAN": customer.pan, "date of birth": customer.dob.isoformat()}
    mismatched = [name for name, value in stated if value and value != known[name]]
    worker.audit.tool("check_kyc", {"customer_id": customer.customer_id}, {"mismatched": mismatched})
    if not mismatched and missing:
        return _ask_kyc(task, missing)
    attempts = status.attempts + 1
    if mismatched:
        failed = {"PAN": status.failed_pan, "date of birth": status.failed_dob}
        # A failed check is one with a wrong value not already failed.
        new = any(value != failed[name] for name, value in stated if name in mismatched)
        failures = status.failures + (1 if new else 0)
        locked = failures >= MAX_VERIFICATION_FAILURES
        checked = {
            "verified": False,
            "checked": ["pan", "dob"],
            "mismatched": mismatched,
            "attempts": attempts,
            "failures": failures,
            "locked": locked,
            "failed_pan": record.stated.pan if "PAN" in mismatched else status.failed_pan,
            "failed_dob": record.stated.dob if "date of birth" in mismatched else status.failed_dob,
        }
        if locked:
            worker.audit.add("decision", decision="verification_locked", failures=failures)
            return _respond(
                task,
                "COMPLETED",
                LOCKED_TEXT.format(count=failures),
                {"verification_status": checked},
                "CLOSE",
            )
        left = MAX_VERIFICATION_FAILURES - failures
        wrong = " and ".join(mismatched)
        also = f" (and your {' and '.join(missing)})" if missing else ""
        return _respond(
            task,
            "NEEDS_INPUT",
            f"The {wrong} you gave {'does' if len(mismatched) == 1 else 'do'} not match our records. "
            f"Please check and send {'it' if len(mismatched) == 1 else 'them'} again{also} "
            f"({left} attempt{'s' if left != 1 else ''} left).",
            {"verification_status": checked},
            "ASK_KYC",
        )
    return _respond(
        task,
        "COMPLETED",
        "Thank you, your details are verified.",
        {
            "verification_status": {
                "verified": True,
                "checked": ["pan", "dob"],
                "mismatched": [],
                "attempts": attempts,
                "failures": 0,
                "checked_pan": record.stated.pan,
                "checked_dob": record.stated.dob,
            }
        },
        "UNDERWRITE",
    )


def latest_slip(resources: LendingResources, tenant_id: str, thread_id: str) -> Path | None:
    folder = slips_dir(resources.data_dir, tenant_id, thread_id)
    files = sorted(folder.glob("*"), key=lambda path: path.stat().st_mtime) if folder.exists() else []
    return files[-1] if files else None


async def read_slip(resources: LendingResources, worker: WorkerContext) -> SalarySlip | None:
    """The thread's newest salary slip as read (audited); None when there is none or it states no salary."""
    path = latest_slip(resources, worker.tenant_id, worker.thread_id)
    if path is None:
        return None
    text = await slip_text(path)
    salary = stated_salary(text) if text is not None else None
    employee = stated_employee(text) if text is not None else None
    worker.audit.read(
        "salary_slip",
        ["employee", "monthly_salary"],
        document_id=path.stem,
        monthly_salary=salary,
        employee=employee,
    )
    if salary is None:
        return None
    return SalarySlip(document_id=path.stem, monthly_salary=salary, employee=employee)


async def decide(
    record: LoanConversation, worker: WorkerContext, fields: list[str]
) -> tuple[CustomerRecord, Application, SalarySlip | None, UnderwritingResult, bool]:
    """The rules' decision on the thread's offered terms, from the records and the newest slip: (the
    customer, the application, the slip read, the decision, whether a slip was uploaded at all)."""
    resources: LendingResources = worker.resources
    customer = await _customer(record, worker, fields)
    assert customer is not None
    details = record.loan_details
    assert details.amount is not None and details.tenure_months is not None
    # The rate is the customer's by the rules, whatever the state says.
    application = Application(details.amount, details.tenure_months, annual_rate_pct(customer.credit_score))
    uploaded = latest_slip(resources, worker.tenant_id, worker.thread_id) is not None
    slip = None
    if uploaded and application.amount > customer.preapproved_limit:
        slip = await read_slip(resources, worker)
    return customer, application, slip, underwrite(customer, application, slip), uploaded


async def underwriting(task: TaskAssignment, worker: WorkerContext) -> TaskResponse:
    resources: LendingResources = worker.resources
    record = LoanConversation.model_validate(task.task_parameters)
    data: dict[str, Any] = {}
    if not record.verification_status.verified:
        # Only a verified customer is decided on (a state set by hand does not skip verification).
        result = UnderwritingResult(
            decision="MANUAL_REVIEW", rule="not_verified", reasons=["the customer's identity is not verified"]
        )
        worker.audit.add("refused", by="underwriting_agent", reason="not verified")
        data["underwriting_result"] = result.model_dump(mode="json")
        return _respond(
            task, "COMPLETED", "I cannot decide on this loan before your identity is verified.", data, "CLOSE"
        )
    customer, application, slip, result, uploaded = await decide(
        record, worker, ["credit_score", "preapproved_limit", "monthly_salary", "name"]
    )
    if slip is not None:
        data["salary_slip"] = slip.model_dump(mode="json")
    worker.audit.tool(
        "underwrite",
        {"amount": application.amount, "tenure_months": application.tenure_months, "emi": application.emi},
        result.model_dump(mode="json"),
    )
    salary = slip.monthly_salary if slip is not None else None
    if resources.model is not None:
        opinion = await model_opinion(resources.model, customer, application, salary, worker)
        if opinion is not None:
            result = result.model_copy(
                update={"model_recommendation": f"{opinion.decision}: {opinion.reason}"}
            )
            if opinion.decision != result.decision:
                # Compliance: the documented rules decide, whatever the model recommends.
                worker.audit.add(
                    "decision",
                    decision="model_overruled",
                    recommended=opinion.decision,
                    reason=opinion.reason,
                    decided=result.decision,
                    rule=result.rule,
                )
    data["underwriting_result"] = result.model_dump(mode="json")
    why = "; ".join(result.reasons)
    if result.decision == "APPROVED":
        return _respond(
            task,
            "COMPLETED",
            f"Good news: your loan of {rupees(application.amount)} over {application.tenure_months} months "
            f"(EMI {rupees(application.emi)}) is approved ({why}).",
            data,
            "SANCTION_LETTER",
        )
    if result.decision == "REJECTED":
        return _respond(task, "COMPLETED", f"I am sorry, we cannot approve this loan: {why}.", data, "CLOSE")
    if result.decision == "MANUAL_REVIEW":
        return _respond(
            task,
            "COMPLETED",
            f"I cannot approve this loan here: {why}. A loan officer will review your application and "
            "contact you; no sanction letter is issued until then.",
            data,
            "CLOSE",
        )
    unreadable = " The slip you uploaded does not state a net monthly salary." if uploaded else ""
    return _respond(
        task,
        "NEEDS_INPUT",
        f"Your amount is above your pre-approved limit of {rupees(customer.preapproved_limit)}, so I need your "
        f"latest salary slip (PDF).{unreadable} Please upload it (POST /threads/{worker.thread_id}/files "
        "with kind salary_slip) and tell me when it is done.",
        data,
        "ASK_SALARY_SLIP",
    )


class UnderwritingOpinion(BaseModel):
    """A model's recommendation on a loan application (recorded; the rules decide)."""

    decision: Literal["APPROVED", "REJECTED", "NEEDS_SALARY_SLIP"]
    reason: str = Field(max_length=2000)


OPINION_PROMPT = """You are a credit analyst. Recommend a decision on this personal-loan application:
APPROVED, REJECTED, or NEEDS_SALARY_SLIP (when income must be proven), with a one-sentence reason."""


async def model_opinion(
    model: BaseChatModel,
    customer: CustomerRecord,
    application: Application,
    monthly_salary: float | None,
    worker: WorkerContext,
) -> UnderwritingOpinion | None:
    """The model's recommendation, or None when it fails or answers out of shape (audited)."""
    facts = (
        f"Credit score: {customer.credit_score}. Pre-approved limit: {rupees(customer.preapproved_limit)}. "
        f"Requested: {rupees(application.amount)} over {application.tenure_months} months at "
        f"{application.rate_pct:.1f}% (EMI {rupees(application.emi)}). Monthly salary from a slip: "
        + (rupees(monthly_salary) if monthly_salary is not None else "not provided")
        + "."
    )
    runnable = model.with_structured_output(UnderwritingOpinion, method="function_calling")
    try:
        answer = await runnable.ainvoke([SystemMessage(content=OPINION_PROMPT), HumanMessage(content=facts)])
        opinion = (
            answer if isinstance(answer, UnderwritingOpinion) else UnderwritingOpinion.model_validate(answer)
        )
    except Exception as error:  # a model fault must not stop underwriting: the rules decide alone
        why = describe_model_failure(error)
        log.warning("underwriting opinion unavailable: %s", why)
        worker.audit.add("decision", decision="model_unavailable", reason=why)
        return None
    worker.audit.tool("underwriting_opinion", {"facts": facts}, opinion.model_dump(mode="json"))
    return opinion


async def letter_refusal(
    record: LoanConversation, worker: WorkerContext
) -> tuple[str | None, CustomerRecord]:
    """Why no letter may be issued for ``record`` (the rules checked again from the records, never
    from what the state says was decided), or None; with the customer."""
    customer = await _customer(
        record, worker, ["name", "city", "pan", "dob", "credit_score", "preapproved_limit"]
    )
    assert customer is not None
    status = record.verification_status
    if not status.verified or status.locked:
        return "the customer's identity is not verified", customer
    if (record.stated.pan, record.stated.dob) != (customer.pan, customer.dob.isoformat()):
        return "the verified PAN and date of birth do not match the customer's record", customer
    details = record.loan_details
    if details.amount is None or details.tenure_months is None:
        return "the loan has no terms", customer
    _, application, _, result, _ = await decide(record, worker, ["monthly_salary"])
    if result.decision != "APPROVED":
        return f"the rules do not approve this loan ({result.rule}: {'; '.join(result.reasons)})", customer
    decided = record.underwriting_result.terms
    if (
        decided is None
        or record.underwriting_result.decision != "APPROVED"
        or (decided.amount, decided.tenure_months, decided.emi)
        != (application.amount, application.tenure_months, application.emi)
        or details.emi != application.emi
    ):
        return "the terms to be sanctioned are not the terms underwriting approved", customer
    return None, customer


async def sanction_letter_generator(task: TaskAssignment, worker: WorkerContext) -> TaskResponse:
    resources: LendingResources = worker.resources
    record = LoanConversation.model_validate(task.task_parameters)
    refusal, customer = await letter_refusal(record, worker)
    if refusal is not None:
        worker.audit.add("refused", by="sanction_letter_generator", reason=refusal)
        result = UnderwritingResult(decision="MANUAL_REVIEW", rule="letter_refused", reasons=[refusal])
        return _respond(
            task,
            "COMPLETED",
            f"I cannot issue a sanction letter: {refusal}. A loan officer will review your application.",
            {"underwriting_result": result.model_dump(mode="json")},
            "CLOSE",
        )
    details = record.loan_details
    assert details.amount and details.tenure_months and details.rate_pct and details.emi
    document_id, _ = sanction_letter(
        resources.data_dir,
        worker.tenant_id,
        customer,
        details.amount,
        details.tenure_months,
        details.rate_pct,
        details.emi,
        resources.context.now().date(),
    )
    link = f"/documents/{document_id}"
    worker.audit.document("sanction_letter", document_id, customer_id=customer.customer_id, link=link)
    return _respond(
        task,
        "COMPLETED",
        f"Your sanction letter is ready: {link}",
        {"document_links": {"sanction_letter": link}},
        "CLOSE",
    )
