"""What a customer's message states, read by rules (amounts in lakh or thousands, tenures in months
or years, a mobile number, a PAN, a date of birth) and whether it is about a loan at all."""

from __future__ import annotations

import re
from datetime import date
from typing import Any

from master_agent.workflows import MessageReading

_PHONE = re.compile(r"(?<![\d₹])(?:\+?91[\s-]?)?([6-9]\d{9})(?!\d)")
_PAN = re.compile(r"\b([A-Za-z]{5}\d{4}[A-Za-z])\b")
_ISO_DATE = re.compile(r"\b(19\d{2}|20\d{2})-(\d{1,2})-(\d{1,2})\b")
_DMY_DATE = re.compile(r"\b(\d{1,2})[/.-](\d{1,2})[/.-](19\d{2}|20\d{2})\b")
_SCALED = re.compile(
    r"(?:₹|rs\.?|inr)?\s*(\d+(?:[.,]\d+)?)\s*(lakhs?|lacs?|lakh|l|k|thousand|crores?|cr)\b", re.I
)
_PLAIN_AMOUNT = re.compile(
    r"(?:₹|rs\.?|inr|rupees)\s*([\d,]{4,}(?:\.\d+)?)|\b(\d{1,3}(?:,\d{2,3})+|\d{5,8})\b", re.I
)
_TENURE = re.compile(r"\b(\d{1,3})\s*(years?|yrs?|months?|mos?)\b", re.I)
_LOAN = re.compile(r"\b(loan|borrow|finance|funds?|money|credit|emi)\b", re.I)
#: Words of a loan conversation: a message with none of them (and stating nothing) is out of scope.
_DOMAIN = re.compile(
    r"\b(loans?|emi|interest|rate|amount|tenure|months?|years?|pan|dob|birth|salary|slip|documents?|"
    r"verif\w*|sanction\w*|apply|applying|application|eligib\w*|limit|offer|yes|yeah|no|ok|okay|sure|hi|"
    r"hello|hey|thanks?|thank you|proceed|continue|go ahead|help|borrow|mobile|number|phone|details?|"
    r"letter|approved?|status|lakhs?|rupees|pay|repay\w*|upload\w*|attached|sent|done)\b",
    re.I,
)
_SCALE = {
    "l": 1e5,
    "lakh": 1e5,
    "lakhs": 1e5,
    "lac": 1e5,
    "lacs": 1e5,
    "k": 1e3,
    "thousand": 1e3,
    "cr": 1e7,
    "crore": 1e7,
    "crores": 1e7,
}


def read_message(text: str, _record: Any = None) -> MessageReading:
    updates: dict[str, Any] = {}
    phones = _PHONE.findall(text)
    if phones:
        updates["stated.phone"] = phones[0]
    pan = _PAN.search(text)
    if pan:
        updates["stated.pan"] = pan.group(1).upper()
    born = _date_of_birth(text)
    if born is not None:
        updates["stated.dob"] = born.isoformat()
    amount = loan_amount(_without(text, phones, pan))
    if amount is not None:
        updates["loan_details.amount"] = amount
    tenure = _TENURE.search(text)
    if tenure:
        count = int(tenure.group(1))
        months = count * 12 if tenure.group(2).lower().startswith(("y", "yr")) else count
        updates["loan_details.tenure_months"] = months
    if _LOAN.search(text):
        updates["customer_intent"] = "personal_loan"
    in_scope = bool(updates) or _DOMAIN.search(text) is not None
    return MessageReading(in_scope=in_scope, updates=updates)


def _without(text: str, phones: list[str], pan: re.Match[str] | None) -> str:
    for phone in phones:
        text = text.replace(phone, " ")
    if pan:
        text = text.replace(pan.group(1), " ")
    text = _ISO_DATE.sub(" ", _DMY_DATE.sub(" ", text))
    return _TENURE.sub(" ", text)


def loan_amount(text: str) -> float | None:
    scaled = _SCALED.search(text)
    if scaled:
        value = float(scaled.group(1).replace(",", ""))
        return value * _SCALE[scaled.group(2).lower()]
    plain = _PLAIN_AMOUNT.search(text)
    if plain:
        return float((plain.group(1) or plain.group(2)).replace(",", ""))
    return None


def _date_of_birth(text: str) -> date | None:
    try:
        iso = _ISO_DATE.search(text)
        if iso:
            return date(int(iso.group(1)), int(iso.group(2)), int(iso.group(3)))
        dmy = _DMY_DATE.search(text)
        if dmy:
            return date(int(dmy.group(3)), int(dmy.group(2)), int(dmy.group(1)))
    except ValueError:
        return None
    return None
