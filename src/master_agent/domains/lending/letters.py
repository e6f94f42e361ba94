"""Documents of a loan: the sanction letter (a PDF made with fpdf2) and uploaded salary slips, stored
per tenant under the data directory."""

from __future__ import annotations

import asyncio
import io
import re
import uuid
from datetime import date
from pathlib import Path
from typing import Any

from pypdf import PdfReader
from pypdf.errors import PyPdfError

from master_agent.capabilities import FileUpload
from master_agent.domains.lending.records import CustomerRecord
from master_agent.storage.files import documents_dir


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
    return "\n".join(page.extract_text() or "" for page in PdfReader(str(path)).pages)


_SALARY = re.compile(
    r"net\s+(?:monthly\s+)?(?:salary|pay)\s*[:\-]?\s*(?:inr|rs\.?|₹)?\s*([\d,]+(?:\.\d+)?)", re.I
)


def stated_salary(text: str) -> float | None:
    """The net monthly salary a slip's text states ("Net salary: INR 85,000"), or None."""
    found = _SALARY.search(text)
    return float(found.group(1).replace(",", "")) if found else None


def monthly_salary_of(path: Path) -> float | None:
    return stated_salary(pdf_text(path) if path.suffix == ".pdf" else path.read_text(errors="replace"))


SALARY_SLIP_MAX_BYTES = 512 * 1024


def _slip_text(content: bytes) -> str:
    if not content.startswith(b"%PDF-"):
        raise ValueError("file: a salary slip must be a PDF (it does not start with %PDF-)")
    try:
        reader = PdfReader(io.BytesIO(content))
        return "\n".join(page.extract_text() or "" for page in reader.pages)
    except (PyPdfError, ValueError, KeyError, TypeError) as error:
        raise ValueError(f"file: not a readable PDF ({type(error).__name__})") from None


async def store_salary_slip(upload: FileUpload) -> dict[str, Any]:
    """Keeps an uploaded salary slip (a readable PDF) where underwriting reads the thread's newest."""
    text = await asyncio.to_thread(_slip_text, upload.content)
    document_id = str(uuid.uuid4())
    folder = slips_dir(upload.data_dir, upload.tenant_id, upload.thread_id)
    folder.mkdir(parents=True, exist_ok=True)
    await asyncio.to_thread((folder / f"{document_id}.pdf").write_bytes, upload.content)
    return {"document_id": document_id, "monthly_salary": stated_salary(text)}
