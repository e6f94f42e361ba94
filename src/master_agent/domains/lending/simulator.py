"""A customer simulator for the loan conversation: scripted personas (eligible at once, needs a salary
slip, low credit score, over twice the limit, details out of order, off-topic questions, abandons
midway) with the outcome each must reach. ``make eval-lending`` drives them through the real service;
``master-agent demo lending`` shows one in-process. A channel is how messages and uploads reach the
conversation."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Protocol

from master_agent.domains.lending.letters import salary_slip_pdf


@dataclass(frozen=True)
class Say:
    text: str


@dataclass(frozen=True)
class UploadSlip:
    """The persona uploads a salary slip stating ``net_salary``."""

    net_salary: float


Step = Say | UploadSlip


@dataclass(frozen=True)
class Persona:
    key: str
    customer: str
    """The customer's name (on the slip they upload)."""
    behaviour: str
    steps: tuple[Step, ...]
    decision: str | None
    """The underwriting decision the conversation must end with (None: it must not reach one)."""
    stage: str
    """The stage it must be in at its end."""
    rule: str | None = None


class Channel(Protocol):
    async def say(self, thread_id: str | None, text: str) -> tuple[str, dict[str, Any]]:
        """Sends a message; the thread id and the thread's values after the turn."""
        ...

    async def upload(self, thread_id: str, filename: str, content: bytes) -> dict[str, Any]:
        """Uploads a salary slip to the thread; what was kept."""
        ...


@dataclass
class Conversation:
    persona: Persona
    thread_id: str = ""
    turns: int = 0
    decision: str | None = None
    rule: str | None = None
    stage: str | None = None
    fallbacks: int = 0
    seconds: float = 0.0
    transcript: list[tuple[str, str]] = field(default_factory=list)
    """(who, text): the customer's messages and uploads, the assistant's replies."""
    values: dict[str, Any] = field(default_factory=dict)

    @property
    def matches(self) -> bool:
        expected = self.persona
        return (
            self.decision == expected.decision
            and self.stage == expected.stage
            and (expected.rule is None or self.rule == expected.rule)
        )


async def simulate(persona: Persona, channel: Channel) -> Conversation:
    """Plays ``persona``'s script through ``channel``; the outcome it reached."""
    conversation = Conversation(persona)
    started = time.perf_counter()
    for step in persona.steps:
        if isinstance(step, UploadSlip):
            content = salary_slip_pdf(persona.customer, "Acme Corp", "October 2026", step.net_salary)
            await channel.upload(conversation.thread_id, "salary-slip.pdf", content)
            conversation.transcript.append(("upload", f"salary slip (net {step.net_salary:,.0f})"))
            continue
        conversation.transcript.append(("customer", step.text))
        thread_id, values = await channel.say(conversation.thread_id or None, step.text)
        conversation.thread_id = thread_id
        conversation.turns += 1
        reply = values.get("reply") or {}
        conversation.fallbacks += reply.get("status") == "out_of_scope"
        conversation.transcript.append(("assistant", str(reply.get("text") or "")))
        conversation.values = values
    conversation.seconds = time.perf_counter() - started
    record = conversation.values.get("record") or {}
    result = record.get("underwriting_result") or {}
    decision = result.get("decision")
    conversation.decision = decision if decision in ("APPROVED", "REJECTED") else None
    conversation.rule = result.get("rule") if conversation.decision else None
    conversation.stage = conversation.values.get("current_stage")
    return conversation


ASHA = "Asha Verma"  # C001: score 782, limit 5 lakh
ROHAN = "Rohan Mehta"  # C002: limit 3 lakh, salary 70,000
PRIYA = "Priya Nair"  # C003: score 655
VIKRAM = "Vikram Singh"  # C004: limit 2 lakh
NEHA = "Neha Gupta"  # C005: limit 2.5 lakh, salary 22,000
ARJUN = "Arjun Rao"  # C006: limit 8 lakh

PERSONAS: tuple[Persona, ...] = (
    Persona(
        key="eligible_instantly",
        customer=ASHA,
        behaviour="asks within the pre-approved limit, answers each question in turn",
        steps=(
            Say("Hi, I'd like a personal loan"),
            Say("My mobile number is 9000000001"),
            Say("4 lakh over 3 years"),
            Say("PAN ABCPV1234K, date of birth 1988-04-12"),
        ),
        decision="APPROVED",
        rule="within_preapproved_limit",
        stage="CLOSURE",
    ),
    Persona(
        key="needs_salary_slip",
        customer=ROHAN,
        behaviour="asks above the limit, uploads a slip that supports the EMI",
        steps=(
            Say("I want a loan of 5 lakh for 36 months, mobile 9000000002"),
            Say("PAN BCDPM2345L, born 03/09/1991"),
            UploadSlip(70_000),
            Say("I have uploaded my salary slip"),
        ),
        decision="APPROVED",
        rule="emi_within_half_salary",
        stage="CLOSURE",
    ),
    Persona(
        key="slip_does_not_support_the_emi",
        customer=NEHA,
        behaviour="asks above the limit; the slip shows an EMI above half the salary",
        steps=(
            Say("Need a loan of 4.5 lakh for 2 years. Phone 9000000005"),
            Say("PAN EFGPG5678P DOB 08/11/1994"),
            UploadSlip(22_000),
            Say("Done, the slip is uploaded"),
        ),
        decision="REJECTED",
        rule="emi_above_half_salary",
        stage="CLOSURE",
    ),
    Persona(
        key="low_credit_score",
        customer=PRIYA,
        behaviour="a credit score below 700",
        steps=(
            Say("I need a loan of 1 lakh for 24 months, my mobile is 9000000003"),
            Say("PAN CDEPN3456M dob 1985-01-27"),
        ),
        decision="REJECTED",
        rule="credit_score_below_minimum",
        stage="CLOSURE",
    ),
    Persona(
        key="over_twice_the_limit",
        customer=VIKRAM,
        behaviour="asks more than twice the pre-approved limit",
        steps=(
            Say("Hello, loan please. 9000000004"),
            Say("5 lakh for 5 years"),
            Say("PAN DEFPS4567N, born 18-06-1979"),
        ),
        decision="REJECTED",
        rule="above_twice_the_limit",
        stage="CLOSURE",
    ),
    Persona(
        key="details_out_of_order",
        customer=ARJUN,
        behaviour="gives PAN and date of birth first, then the amount, the mobile number last",
        steps=(
            Say("My PAN is FGHPR6789Q and my date of birth is 1990-02-14"),
            Say("I want a loan of 6 lakh for 4 years"),
            Say("Sure, my mobile is 9000000006"),
        ),
        decision="APPROVED",
        rule="within_preapproved_limit",
        stage="CLOSURE",
    ),
    Persona(
        key="off_topic_questions",
        customer=ASHA,
        behaviour="asks about the weather and for a joke along the way",
        steps=(
            Say("Hi, I'm looking for a personal loan, mobile 9000000001"),
            Say("What's the weather like in Mumbai today?"),
            Say("2 lakh for 12 months"),
            Say("Tell me a joke first"),
            Say("OK. PAN ABCPV1234K and DOB 12/04/1988"),
        ),
        decision="APPROVED",
        rule="within_preapproved_limit",
        stage="CLOSURE",
    ),
    Persona(
        key="corrects_a_wrong_pan",
        customer=ARJUN,
        behaviour="gives a wrong PAN, then the right one",
        steps=(
            Say("Personal loan of 3 lakh for 24 months. Mobile 9000000006"),
            Say("PAN FGHPR6788Q, DOB 1990-02-14"),
            Say("Sorry, my PAN is FGHPR6789Q"),
        ),
        decision="APPROVED",
        rule="within_preapproved_limit",
        stage="CLOSURE",
    ),
    Persona(
        key="unknown_number_then_the_right_one",
        customer=ROHAN,
        behaviour="gives a mobile number the bank does not know, then the registered one",
        steps=(
            Say("I'd like a loan of 2 lakh for 36 months, my number is 9811111111"),
            Say("Sorry, my registered mobile is 9000000002"),
            Say("PAN BCDPM2345L, born 1991-09-03"),
        ),
        decision="APPROVED",
        rule="within_preapproved_limit",
        stage="CLOSURE",
    ),
    Persona(
        key="abandons_at_verification",
        customer=ARJUN,
        behaviour="hears the offer, then stops answering",
        steps=(Say("Hi, can I get a loan? Mobile 9000000006"), Say("1.5 lakh for 18 months")),
        decision=None,
        stage="VERIFICATION",
    ),
    Persona(
        key="abandons_at_the_salary_slip",
        customer=ROHAN,
        behaviour="asks above the limit and never uploads the slip",
        steps=(
            Say("Loan of 4 lakh for 48 months please, 9000000002"),
            Say("My PAN is BCDPM2345L and I was born on 1991-09-03"),
        ),
        decision=None,
        stage="UNDERWRITING",
    ),
)
