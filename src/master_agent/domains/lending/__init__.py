"""Personal-loan sales (seed 001) as a stage-driven conversation: the lending pack.

The conversation walks GREETING -> INTENT_CAPTURE -> SALES_EXPLORATION -> VERIFICATION -> UNDERWRITING
-> DOCUMENTATION -> CLOSURE by the guards below (seed 001 section 4.1's ``select_next_agent``), each
stage delegated to its worker. Chat and the LangGraph API run this graph for the pack's tenants.
"""

from __future__ import annotations

from typing import Any

from langchain_core.language_models import BaseChatModel
from langgraph.graph import StateGraph
from pydantic import BaseModel, Field

from master_agent.capabilities import AgentSpec, DomainPack, UploadKind
from master_agent.capabilities.tools.context import ToolContext
from master_agent.domains.lending.data import DEMO_TENANT, install
from master_agent.domains.lending.facts import answer_questions
from master_agent.domains.lending.letters import SALARY_SLIP_MAX_BYTES, rupees, store_salary_slip
from master_agent.domains.lending.reading import read_message
from master_agent.domains.lending.records import LoanConversation
from master_agent.domains.lending.workers import (
    LendingResources,
    sales,
    sanction_letter_generator,
    underwriting,
    verification,
)
from master_agent.models.embeddings import Embedder, make_embedder
from master_agent.models.offline import OfflinePlanner
from master_agent.routing.graph.follow_ups import is_closing
from master_agent.settings import Settings
from master_agent.workflows import Guard, StageSpec, Transition, WorkerSpec, WorkflowSpec, compile_workflow
from master_agent.workflows.spec import update_skips_a_guard


def _greeting(record: LoanConversation) -> str:
    details = record.loan_details
    noted = [
        *([f"of {rupees(details.amount)}"] if details.amount else []),
        *([f"over {details.tenure_months} months"] if details.tenure_months else []),
    ]
    if noted:
        # Terms said before the mobile number are kept (the offer uses them once the customer is
        # known): said back, with what is still needed, never the opening again as if unheard.
        return (
            f"Thank you, I have noted a personal loan {' '.join(noted)}. To look up your offer I still "
            "need your registered mobile number: please share it."
        )
    return (
        "Hello! I am the Smart Loan Assistant. I can help you with a personal loan. To begin, please "
        "share your registered mobile number."
    )


def _intent(_: LoanConversation) -> str:
    return "How can I help you today? I can offer you a personal loan: tell me if you would like one."


def _closing(record: LoanConversation) -> str:
    link = record.document_links.get("sanction_letter")
    name = str(record.customer_profile.get("name") or "").split(" ")[0] or "there"
    if record.underwriting_result.decision == "APPROVED" and link:
        amount = record.loan_details.amount or 0
        return (
            f"Thank you, {name}. Your personal loan of {rupees(amount)} is sanctioned; your sanction letter "
            f"is at {link}. This conversation is complete."
        )
    return f"Thank you for your time, {name}. This conversation is complete."


STAGE_HINTS = {
    "GREETING": "please share your registered mobile number",
    "INTENT_CAPTURE": "tell me if you would like a personal loan",
    "SALES_EXPLORATION": "tell me the amount and the tenure you would like",
    "VERIFICATION": "please share your PAN and date of birth",
    "UNDERWRITING": "please upload your salary slip, or tell me if you have questions about the offer",
    "DOCUMENTATION": "your documents are being prepared",
    "CLOSURE": "this conversation is complete",
}


def fallback(_: LoanConversation, stage: str) -> str:
    """Seed 001 section 8.2: the answer to a message outside what the assistant does."""
    return (
        "I can only help with personal loans here, so I cannot answer that. To continue with your loan, "
        f"{STAGE_HINTS.get(stage, 'tell me how I can help with your loan')}."
    )


_EMBEDDERS: dict[str, Embedder] = {}


async def closes(text: str, settings: Settings) -> bool:
    """Whether the customer's message only thanks or says goodbye (the front door's reading of a
    closing: ``routing.graph.follow_ups.is_closing``), by the service's embedder."""
    if settings.embeddings not in _EMBEDDERS:
        _EMBEDDERS[settings.embeddings] = make_embedder(settings.embeddings, settings)
    return await is_closing(text, _EMBEDDERS[settings.embeddings], ())


def farewell(record: LoanConversation, stage: str) -> str:
    """The answer to a goodbye: thanks, and where the application stands when the customer is back."""
    name = str(record.customer_profile.get("name") or "").split(" ")[0]
    thanks = f"Thank you, {name}. Goodbye!" if name else "Thank you. Goodbye!"
    if stage == LOAN_WORKFLOW.initial:
        return f"{thanks} Whenever you would like a personal loan, write to me here."
    return f"{thanks} Your application is saved; when you are back, {STAGE_HINTS.get(stage, 'write to me here')}."


def decided_on_the_offered_terms(record: LoanConversation) -> bool:
    """Underwriting decided on the terms offered last (a letter is never made from older ones)."""
    terms, details = record.underwriting_result.terms, record.loan_details
    return terms is not None and (terms.amount, terms.tenure_months, terms.rate_pct, terms.emi) == (
        details.amount,
        details.tenure_months,
        details.rate_pct,
        details.emi,
    )


#: New terms (the reader clears the EMI of a changed offer): back to the offer, before any other work.
_TERMS_CHANGED = Transition(
    to="SALES_EXPLORATION", when=(Guard(field="loan_details.emi", op="absent"),), first=True
)

LOAN_WORKFLOW = WorkflowSpec(
    name="personal_loan",
    state_model=LoanConversation,
    initial="GREETING",
    stages=(
        StageSpec(
            name="GREETING",
            say=_greeting,
            asks=("stated.phone",),
            transitions=(Transition(to="INTENT_CAPTURE", when=(Guard(field="stated.phone"),)),),
        ),
        StageSpec(
            name="INTENT_CAPTURE",
            say=_intent,
            asks=("customer_intent",),
            transitions=(
                Transition(
                    to="SALES_EXPLORATION",
                    when=(Guard(field="customer_intent", op="eq", value="personal_loan"),),
                ),
            ),
        ),
        StageSpec(
            name="SALES_EXPLORATION",
            worker="sales_agent",
            asks=("loan_details.amount", "loan_details.tenure_months"),
            transitions=(
                Transition(
                    to="VERIFICATION",
                    when=(
                        Guard(field="customer_id"),
                        Guard(field="loan_details.amount"),
                        Guard(field="loan_details.tenure_months"),
                        Guard(field="loan_details.emi"),
                    ),
                ),
            ),
        ),
        StageSpec(
            name="VERIFICATION",
            worker="verification_agent",
            # Its worker asks for the PAN and the date of birth, not the salary: a bare sum here
            # answers nothing asked (a new amount or a salary), and is confirmed before it is either.
            asks=("stated.pan", "stated.dob"),
            transitions=(
                _TERMS_CHANGED,
                Transition(to="CLOSURE", when=(Guard(field="verification_status.locked", op="true"),)),
                Transition(to="UNDERWRITING", when=(Guard(field="verification_status.verified", op="true"),)),
            ),
        ),
        StageSpec(
            name="UNDERWRITING",
            worker="underwriting_agent",
            asks=("stated.monthly_salary",),
            transitions=(
                _TERMS_CHANGED,
                Transition(
                    to="DOCUMENTATION",
                    when=(
                        Guard(field="verification_status.verified", op="true"),
                        Guard(field="underwriting_result.decision", op="eq", value="APPROVED"),
                    ),
                    rule=decided_on_the_offered_terms,
                    reads=("underwriting_result.terms", "loan_details"),
                ),
                Transition(
                    to="CLOSURE",
                    when=(
                        Guard(
                            field="underwriting_result.decision", op="in", value=["REJECTED", "MANUAL_REVIEW"]
                        ),
                    ),
                ),
            ),
        ),
        StageSpec(
            name="DOCUMENTATION",
            worker="sanction_letter_generator",
            transitions=(
                Transition(to="CLOSURE", when=(Guard(field="document_links.sanction_letter"),)),
                Transition(
                    to="CLOSURE",
                    when=(Guard(field="underwriting_result.decision", op="ne", value="APPROVED"),),
                ),
            ),
        ),
        StageSpec(name="CLOSURE", say=_closing, final=True),
    ),
    workers={
        "sales_agent": WorkerSpec(
            name="sales_agent",
            task_type="LOAN_OFFER",
            run=sales,
            writes=("customer_id", "customer_profile", "loan_details"),
            description="Explores loan options: the pre-approved offer, the rate, the EMI.",
        ),
        "verification_agent": WorkerSpec(
            name="verification_agent",
            task_type="KYC_VERIFICATION",
            run=verification,
            writes=("verification_status",),
            description="Checks the customer's PAN and date of birth against the records.",
        ),
        "underwriting_agent": WorkerSpec(
            name="underwriting_agent",
            task_type="UNDERWRITING",
            run=underwriting,
            writes=("underwriting_result", "salary_slip"),
            description="Decides eligibility by the documented rules.",
        ),
        "sanction_letter_generator": WorkerSpec(
            name="sanction_letter_generator",
            task_type="SANCTION_LETTER",
            run=sanction_letter_generator,
            writes=("document_links", "underwriting_result"),
            description="Generates the sanction letter (PDF).",
        ),
    },
    read_message=read_message,
    reader_writes=("stated", "loan_details", "customer_intent", "pending_change"),
    answer_questions=answer_questions,
    fallback=fallback,
    closes=closes,
    farewell=farewell,
).check()


def conversation_graph(context: ToolContext, model: BaseChatModel) -> StateGraph[Any]:
    """The loan conversation for one tenant; a real chat model gives underwriting its opinion (the
    offline planner has none to give)."""
    opinion_model = None if isinstance(model, OfflinePlanner) else model
    return compile_workflow(LOAN_WORKFLOW, context, LendingResources(context, opinion_model))


class LoanRequest(BaseModel):
    goal: str = Field(min_length=1, max_length=4000)


class LoanAnswer(BaseModel):
    answer: str | None = None
    confidence: float = Field(ge=0, le=1)


MASTER = AgentSpec(
    name="loan_sales_assistant",
    description="Walks a customer through a personal-loan sale: offer, verification, underwriting, "
    "sanction letter.",
    system_prompt="You are the Smart Loan Assistant. Answer questions about personal loans briefly.",
    input_schema=LoanRequest,
    output_schema=LoanAnswer,
    tools=[],
    progress_keys=[],
    domain="lending",
    skills=["apply for a personal loan", "what EMI would I pay", "check my loan eligibility"],
)

LENDING = DomainPack(
    name="lending",
    master=MASTER,
    sub_agents={},
    build_tools=lambda _context: {},
    install=install,
    demo_tenants=(DEMO_TENANT,),
    conversation_graph=conversation_graph,
    state_guard=lambda current, values: update_skips_a_guard(LOAN_WORKFLOW, current, values),
    uploads={
        "salary_slip": UploadKind(
            description="The customer's latest salary slip (a PDF stating the net monthly salary), read "
            "by underwriting when the amount is above the pre-approved limit.",
            media_types=("application/pdf",),
            max_bytes=SALARY_SLIP_MAX_BYTES,
            workflow=LOAN_WORKFLOW.name,
            store=store_salary_slip,
        )
    },
)

__all__ = ["DEMO_TENANT", "LENDING", "LOAN_WORKFLOW", "conversation_graph"]
