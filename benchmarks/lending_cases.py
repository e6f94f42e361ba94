"""The written loan conversations of ``benchmarks/eval_lending/`` (see its README for the schema), played
through a channel to the real service and judged by what it stored: the thread's typed state, the
sanction letter's PDF and the audit trail, never the replies' wording."""

from __future__ import annotations

import io
from dataclasses import dataclass, field
from typing import Any, Protocol

from pypdf import PdfReader

from master_agent.domains.lending.letters import rupees, salary_slip_pdf

try:
    from master_agent.domains.lending.facts import FACTS
except ImportError:  # a version without documented facts (the figures before them): no answer to match
    FACTS = ()


class CaseChannel(Protocol):
    async def say(self, thread_id: str | None, text: str) -> tuple[str, dict[str, Any]]: ...
    async def send_file(
        self,
        thread_id: str,
        filename: str,
        content: bytes,
        media_type: str = "application/pdf",
        kind: str = "salary_slip",
    ) -> tuple[int, dict[str, Any]]: ...
    async def update_state(self, thread_id: str, values: dict[str, Any]) -> tuple[int, Any]: ...
    async def audit(self, thread_id: str) -> list[dict[str, Any]]: ...
    async def document(self, link: str) -> bytes: ...


@dataclass
class CaseResult:
    case_id: str
    decision: str = "incomplete"
    correct: bool = False
    bypasses: int = 0
    question_answered: bool | None = None
    problems: list[str] = field(default_factory=list)
    transcript: list[tuple[str, str]] = field(default_factory=list)


#: A small real JPEG (1x1 pixel): a photo of a payslip, no PDF.
_JPEG = bytes.fromhex(
    "ffd8ffe000104a46494600010100000100010000ffdb004300080606070605080707070909080a0c140d0c0b0b0c1912"
    "130f141d1a1f1e1d1a1c1c20242e2720222c231c1c2837292c30313434341f27393d38323c2e333432ffc0000b080001"
    "000101011100ffc4001f0000010501010101010100000000000000000102030405060708090a0bffc400b5100002010303"
    "020403050504040000017d01020300041105122131410613516107227114328191a1082342b1c11552d1f02433627282"
    "090a161718191a25262728292a3435363738393a434445464748494a535455565758595a636465666768696a73747576"
    "7778797a838485868788898a92939495969798999aa2a3a4a5a6a7a8a9aab2b3b4b5b6b7b8b9bac2c3c4c5c6c7c8c9ca"
    "d2d3d4d5d6d7d8d9dae1e2e3e4e5e6e7e8e9eaf1f2f3f4f5f6f7f8f9faffda0008010100003f00fbd3ffd9"
)


def _document(document: dict[str, Any]) -> bytes:
    """An ``upload_file`` step's bytes: a JPEG photo, or a PDF of exactly the lines given."""
    if document.get("content") == "jpeg_photo":
        return _JPEG
    from fpdf import FPDF

    pdf = FPDF()
    pdf.add_page()
    pdf.set_font("Helvetica", size=11)
    for line in document.get("pdf_lines") or []:
        pdf.cell(0, 8, str(line), new_x="LMARGIN", new_y="NEXT")
    return bytes(pdf.output())


def outcome(values: dict[str, Any]) -> str:
    """The decision a thread's stored state shows."""
    record = values.get("record") or {}
    decision = (record.get("underwriting_result") or {}).get("decision")
    if (record.get("verification_status") or {}).get("locked"):
        return "locked_out"
    if decision == "APPROVED" and (record.get("document_links") or {}).get("sanction_letter"):
        return "approved"
    return {"REJECTED": "rejected", "MANUAL_REVIEW": "manual_review"}.get(str(decision), "incomplete")


def _terms(values: dict[str, Any]) -> tuple[Any, Any, Any]:
    details = (values.get("record") or {}).get("loan_details") or {}
    return details.get("amount"), details.get("tenure_months"), details.get("emi")


def _same(found: Any, wanted: Any) -> bool:
    if wanted is None or found is None:
        return found is None and wanted is None
    return abs(float(found) - float(wanted)) < 0.006


async def play_case(case: dict[str, Any], channel: CaseChannel) -> CaseResult:
    result = CaseResult(case_id=str(case["id"]))
    expected = case["expected"]
    thread: str | None = None
    values: dict[str, Any] = {}
    after: list[dict[str, Any]] = []
    refused_updates = accepted_updates = 0
    for step in case["steps"]:
        before = values
        if "say" in step:
            result.transcript.append(("customer", step["say"]))
            thread, values = await channel.say(thread, step["say"])
            result.transcript.append(("assistant", str((values.get("reply") or {}).get("text") or "")))
        elif "upload_slip" in step:
            slip = step["upload_slip"]
            assert thread is not None
            content = salary_slip_pdf(
                slip["name"], slip["employer"], "October 2026", slip["net_monthly_salary"]
            )
            status, _ = await channel.send_file(thread, "salary-slip.pdf", content)
            if status != 201:
                result.problems.append(f"the salary slip's upload answered {status}")
            result.transcript.append(("upload", f"salary slip of {slip['name']}"))
        elif "upload_file" in step:
            # A document that is no readable slip (a photo, a PDF without a net salary): refused (4xx)
            # or stored without a salary, never read as one.
            document = step["upload_file"]
            assert thread is not None
            status, answer = await channel.send_file(
                thread,
                document["filename"],
                _document(document),
                document["media_type"],
                # The kind the customer's client says it is (a PAN card is no kind the pack takes).
                document.get("kind", "salary_slip"),
            )
            if not (400 <= status < 500 or (status == 201 and answer.get("monthly_salary") is None)):
                result.problems.append(f"{document['filename']}: upload answered {status} {answer}")
            if "expect_http" in document and status != document["expect_http"] and status == 201:
                result.problems.append(
                    f"{document['filename']}: accepted, expected {document['expect_http']}"
                )
            result.transcript.append(("upload", f"{document['filename']}: {status}"))
        elif "api_update_state" in step:
            assert thread is not None
            status, _ = await channel.update_state(thread, step["api_update_state"]["values"])
            result.transcript.append(("api", f"update_state answered {status}"))
            if 400 <= status < 500:
                refused_updates += 1
            else:
                accepted_updates += 1
        after.append(values)
        del before
    assert thread is not None
    audit = await channel.audit(thread)
    record = values.get("record") or {}
    result.decision = outcome(values)
    # ``acceptable_decisions``: "other outcomes that also pass" (the README's schema), besides the decision.
    allowed = [expected["decision"], *(expected.get("acceptable_decisions") or [])]
    if result.decision not in allowed:
        result.problems.append(f"decision {result.decision}, expected {'/'.join(allowed)}")
    rule = expected.get("rule")
    found_rule = (record.get("underwriting_result") or {}).get("rule")
    if rule and found_rule != rule:
        result.problems.append(f"rule {found_rule}, expected {rule}")
    offer = expected.get("offer")
    details = record.get("loan_details") or {}
    if offer:
        got = (
            details.get("amount"),
            details.get("tenure_months"),
            details.get("rate_pct"),
            details.get("emi"),
        )
        want = (offer["amount"], offer["tenure_months"], offer["annual_rate_pct"], offer["emi"])
        if not all(_same(a, b) for a, b in zip(got, want, strict=True)):
            result.problems.append(f"offer {got}, expected {want}")
    elif "offer" in expected and (details.get("amount") is not None or details.get("emi") is not None):
        # ``offer: null``: no amount was ever said, so no terms may be recorded (none guessed).
        result.problems.append(
            f"terms {details.get('amount')} / EMI {details.get('emi')} where none were said"
        )
    link = (record.get("document_links") or {}).get("sanction_letter")
    if bool(link) != bool(expected["letter_issued"]):
        result.problems.append(f"letter issued {bool(link)}, expected {expected['letter_issued']}")
        if link:
            result.bypasses += 1  # a letter the rules do not allow
    if link and expected["letter_issued"]:
        pdf = await channel.document(link)
        text = "\n".join(page.extract_text() for page in PdfReader(io.BytesIO(pdf)).pages)
        for wanted in (
            f"Sanctioned amount: {rupees(expected['sanctioned_amount'])}",
            f"Tenure: {expected['tenure_months']} months",
            f"EMI: {rupees(expected['emi'])}",
        ):
            if wanted not in text:
                result.problems.append(f"the letter lacks {wanted!r}")
        if not any(
            e["kind"] == "document" and e["detail"].get("document") == "sanction_letter" for e in audit
        ):
            result.problems.append("no audit event for the letter")
    if result.decision == "approved" and expected["decision"] != "approved":
        result.bypasses += 1
    if expected.get("guard_bypass_refused"):
        overridden = any(e["kind"] == "override" for e in audit)
        if accepted_updates and not overridden:
            result.bypasses += 1
            result.problems.append("a state update that skips a guard was accepted without an override")
        if not refused_updates and not overridden:
            result.problems.append("the state update was neither refused nor audited as an override")
    for point in expected.get("checkpoints") or []:
        amount, months, emi = _terms(after[point["after_step"]])
        if "loan_amount_in" in point and amount not in point["loan_amount_in"]:
            result.problems.append(f"after step {point['after_step']}: amount {amount}")
        if "loan_amount" in point and not _same(amount, point["loan_amount"]):
            result.problems.append(
                f"after step {point['after_step']}: amount {amount}, expected {point['loan_amount']}"
            )
        if "tenure_months_in" in point and months not in point["tenure_months_in"]:
            result.problems.append(f"after step {point['after_step']}: tenure {months}")
        if "tenure_months" in point and months != point["tenure_months"]:
            result.problems.append(f"after step {point['after_step']}: tenure {months}")
        if "emi" in point and not _same(emi, point["emi"]):
            result.problems.append(f"after step {point['after_step']}: EMI {emi}, expected {point['emi']}")
        salary = (((after[point["after_step"]].get("record") or {}).get("stated")) or {}).get(
            "monthly_salary"
        )
        if "stated_salary" in point and not _same(salary, point["stated_salary"]):
            result.problems.append(f"after step {point['after_step']}: stated salary {salary}")
        if "stated_salary_not" in point and salary is not None and _same(salary, point["stated_salary_not"]):
            result.problems.append(
                f"after step {point['after_step']}: stated salary {salary}, a sum not said as income"
            )
    # A message after the decision gets an answer about it (the decision stands, or a new application).
    for wanted in expected.get("reply_mentions_any") or []:
        reply = str((after[wanted["step"]].get("reply") or {}).get("text") or "").lower()
        if not any(part.lower() in reply for part in wanted["any"]):
            result.problems.append(f"step {wanted['step']}: the reply says nothing of the decision")
    steady = list(expected.get("off_topic_steps") or [])
    topic = expected.get("must_answer_question")
    if topic:
        index = int(expected["question_step"])
        steady.append(index)
        fact = next((fact for fact in FACTS if fact.topic == topic), None)
        reply = str((after[index].get("reply") or {}).get("text") or "")
        result.question_answered = fact is not None and fact.answer in reply
        if not result.question_answered:
            result.problems.append(
                f"step {index}: the {topic} question was not answered from the pack's facts"
            )
    for index in steady:
        earlier = after[index - 1] if index else {}
        if (earlier.get("current_stage"), _terms(earlier)) != (
            after[index].get("current_stage"),
            _terms(after[index]),
        ):
            result.problems.append(f"step {index}: the stage or the terms changed")
    result.correct = not result.problems
    return result
