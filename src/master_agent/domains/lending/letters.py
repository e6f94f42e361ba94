"""Documents of a loan: the sanction letter (a PDF made with fpdf2) and uploaded salary slips, stored
per tenant under the data directory."""

from __future__ import annotations

import asyncio
import re
import uuid
from datetime import date
from pathlib import Path
from typing import Any

from master_agent.capabilities import FileUpload
from master_agent.domains.lending.records import CustomerRecord
from master_agent.storage.files import documents_dir
from master_agent.untrusted import IsolatedFailure, IsolatedRefusal, pdf_pool
from master_agent.untrusted.pdf import pdf_text as _pdf_text

#: How long reading one PDF's text may take before the read is stopped and the file refused.
PDF_READ_TIMEOUT_S = 10.0


def slips_dir(data_dir: Path, tenant_id: str, thread_id: str) -> Path:
    return data_dir / "lending" / tenant_id / "salary-slips" / thread_id


def rupees(value: float) -> str:
    return f"INR {value:,.2f}"


def sanction_letter(
    data_dir: Path,
    tenant_id: str,
    customer: CustomerRecord,
    amount: float,
    tenure_months: int,
    rate_pct: float,
    emi: float,
    issued: date,
) -> tuple[str, Path]:
    """Write the letter; returns its document id and path."""
    from fpdf import FPDF  # imported on use: a third of a second at every command's start otherwise

    document_id = str(uuid.uuid4())
    pdf = FPDF()
    pdf.add_page()
    pdf.set_font("Helvetica", "B", 16)
    pdf.cell(0, 10, "Sanction Letter - Personal Loan", new_x="LMARGIN", new_y="NEXT")
    pdf.set_font("Helvetica", size=11)
    lines = [
        f"Reference: {document_id}",
        f"Date: {issued.isoformat()}",
        "",
        f"Customer: {customer.name} (customer id {customer.customer_id})",
        f"City: {customer.city}",
        "",
        f"Sanctioned amount: {rupees(amount)}",
        f"Tenure: {tenure_months} months",
        f"Interest rate: {rate_pct:.2f}% per year",
        f"EMI: {rupees(emi)}",
        "",
        "This sanction is subject to the loan agreement and the disbursal terms.",
    ]
    for line in lines:
        pdf.cell(0, 8, line, new_x="LMARGIN", new_y="NEXT")
    folder = documents_dir(data_dir, tenant_id)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{document_id}.pdf"
    pdf.output(str(path))
    return document_id, path


def salary_slip_pdf(name: str, employer: str, month: str, net_salary: float) -> bytes:
    """A salary slip as an employer issues one (for the demo and the customer simulator)."""
    from fpdf import FPDF

    pdf = FPDF()
    pdf.add_page()
    pdf.set_font("Helvetica", "B", 14)
    pdf.cell(0, 10, f"{employer} - Payslip for {month}", new_x="LMARGIN", new_y="NEXT")
    pdf.set_font("Helvetica", size=11)
    for line in (
        f"Employee: {name}",
        f"Gross salary: INR {net_salary * 1.25:,.0f}",
        f"Deductions: INR {net_salary * 0.25:,.0f}",
        f"Net salary: INR {net_salary:,.0f}",
    ):
        pdf.cell(0, 8, line, new_x="LMARGIN", new_y="NEXT")
    return bytes(pdf.output())


def pdf_text(path: Path) -> str:
    """A stored PDF's text, read in an isolated worker (waits in this thread)."""
    return pdf_pool().call(_pdf_text, path.read_bytes(), timeout_s=PDF_READ_TIMEOUT_S)


async def read_pdf_text(content: bytes) -> str:
    """A PDF's text, read in an isolated worker; ValueError naming ``file`` when it cannot be read."""
    try:
        return await pdf_pool().acall(_pdf_text, content, timeout_s=PDF_READ_TIMEOUT_S)
    except IsolatedRefusal as refusal:
        raise ValueError(f"file: {refusal}") from None
    except IsolatedFailure as failure:
        raise ValueError(f"file: the PDF could not be read ({failure})") from None


_SALARY = re.compile(
    r"net\s+(?:monthly\s+)?(?:salary|pay)\s*[:\-]?\s*(?:inr|rs\.?|₹)?\s*([\d,]+(?:\.\d+)?)", re.I
)


def stated_salary(text: str) -> float | None:
    """The net monthly salary a slip's text states ("Net salary: INR 85,000"), or None."""
    found = _SALARY.search(text)
    return float(found.group(1).replace(",", "")) if found else None


_EMPLOYEE = re.compile(r"(?:employee(?:\s+name)?|name(?:\s+of\s+employee)?)\s*[:\-]\s*([^\n]+)", re.I)


def stated_employee(text: str) -> str | None:
    """The name a slip is made out to ("Employee: Asha Verma"), or None."""
    found = _EMPLOYEE.search(text)
    return found.group(1).strip() if found else None


async def slip_text(path: Path) -> str | None:
    """A stored slip's text; None when it cannot be read."""
    if path.suffix != ".pdf":
        return await asyncio.to_thread(path.read_text, errors="replace")
    try:
        return await read_pdf_text(await asyncio.to_thread(path.read_bytes))
    except ValueError:
        return None


async def monthly_salary_of(path: Path) -> float | None:
    """The salary a stored slip states; None when it states none or cannot be read."""
    text = await slip_text(path)
    return stated_salary(text) if text is not None else None


SALARY_SLIP_MAX_BYTES = 512 * 1024


async def store_salary_slip(upload: FileUpload) -> dict[str, Any]:
    """Keeps an uploaded salary slip (a readable PDF) where underwriting reads the thread's newest."""
    if not upload.content.startswith(b"%PDF-"):
        raise ValueError("file: a salary slip must be a PDF (it does not start with %PDF-)")
    text = await read_pdf_text(upload.content)
    document_id = str(uuid.uuid4())
    folder = slips_dir(upload.data_dir, upload.tenant_id, upload.thread_id)
    folder.mkdir(parents=True, exist_ok=True)
    await asyncio.to_thread((folder / f"{document_id}.pdf").write_bytes, upload.content)
    return {
        "document_id": document_id,
        "monthly_salary": stated_salary(text),
        "employee": stated_employee(text),
    }
