"""An amount of money written for people, with its currency: what the console's tables and the
front door's sentences both show, so one figure reads the same everywhere."""

from __future__ import annotations

#: Symbols of the currencies a reader knows by sight; any other is written before the amount as its code.
CURRENCY_SYMBOLS = {"USD": "$", "EUR": "€", "GBP": "£", "JPY": "¥", "INR": "₹"}


def money(value: float | None, currency: str = "USD", *, cents: bool = False) -> str:
    """$9,000 or CHF 9,000.50; with ``cents``, always two decimals ($2,965.30)."""
    if value is None:
        return "—"
    amount = float(value)
    digits = f"{abs(amount):,.0f}" if amount.is_integer() and not cents else f"{abs(amount):,.2f}"
    sign = "-" if amount < 0 else ""
    symbol = CURRENCY_SYMBOLS.get(currency.upper())
    return f"{sign}{symbol}{digits}" if symbol else f"{sign}{currency.upper()} {digits}"
