"""Documents of a loan: the sanction letter (a PDF made with fpdf2) and uploaded salary slips, stored
per tenant under the data directory."""

from __future__ import annotations

import re
import uuid
from datetime import date
from pathlib import Path

from fpdf import FPDF
from pypdf import PdfReader

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


def pdf_text(path: Path) -> str:
    return "\n".join(page.extract_text() or "" for page in PdfReader(str(path)).pages)


_SALARY = re.compile(
    r"net\s+(?:monthly\s+)?(?:salary|pay)\s*[:\-]?\s*(?:inr|rs\.?|₹)?\s*([\d,]+(?:\.\d+)?)", re.I
)


def monthly_salary_of(path: Path) -> float | None:
    """The net monthly salary a slip states ("Net salary: INR 85,000"), or None."""
    found = _SALARY.search(pdf_text(path) if path.suffix == ".pdf" else path.read_text(errors="replace"))
    return float(found.group(1).replace(",", "")) if found else None
