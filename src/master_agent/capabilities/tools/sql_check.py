"""The SQL guard as the rest of the service calls it: limits here, the parse in an isolated worker.

``untrusted.sql_grammar`` decides what a read-only query may be (PostgreSQL's own grammar, allow-lists).
Its size limits run here with the scanner alone; the parse and the tree check run in a worker process
(``untrusted.isolated``), so a text that crashes or stalls the parser costs that call, never the
service. Text that cannot be read safely is refused like any other bad query, with the reason.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator
from contextlib import contextmanager

from master_agent.errors import ToolInputError
from master_agent.untrusted import (
    IsolatedFailure,
    IsolatedRefusal,
    sql_pool,
)
from master_agent.untrusted.sql_grammar import CheckedSelect, SqlRefused, checked_text, within_limits

#: How long one check may take in its worker; a longer one is refused (a 16,000-character query
#: parses in a few milliseconds).
CHECK_TIMEOUT_S = 5.0

__all__ = ["CheckedSelect", "acheck_select_only", "check_select_only"]


def check_select_only(
    sql: str, *, tables: Collection[str], schema: str | None = None, with_params: bool = False
) -> CheckedSelect:
    """Accept ``sql`` if it is one bounded read of ``tables``, else raise ToolInputError saying why.

    ``tables`` are the relation names the tenant may read; ``schema`` is the tenant's schema (a name
    qualified by it is accepted too). ``with_params``: the text carries psycopg placeholders
    (``%(name)s``) that the driver binds. Waits in this thread: async callers use
    ``acheck_select_only``."""
    _within_limits(sql)
    with _refusals():
        text = sql_pool().call(
            checked_text, sql, tuple(tables), schema, with_params, timeout_s=CHECK_TIMEOUT_S
        )
    return CheckedSelect(text=text)


async def acheck_select_only(
    sql: str, *, tables: Collection[str], schema: str | None = None, with_params: bool = False
) -> CheckedSelect:
    """``check_select_only`` for async callers: the event loop waits on the worker, no thread is held."""
    _within_limits(sql)
    with _refusals():
        text = await sql_pool().acall(
            checked_text, sql, tuple(tables), schema, with_params, timeout_s=CHECK_TIMEOUT_S
        )
    return CheckedSelect(text=text)


@contextmanager
def _refusals() -> Iterator[None]:
    """What the worker says, as the error a model or a client reads."""
    try:
        yield
    except IsolatedRefusal as refusal:
        raise ToolInputError(str(refusal)) from None
    except IsolatedFailure as failure:
        raise ToolInputError(f"SQL refused: it could not be read safely ({failure})") from None


def _within_limits(sql: str) -> None:
    if not isinstance(sql, str) or not sql.strip():
        raise ToolInputError("SQL refused: the query is empty")
    try:
        within_limits(sql)
    except SqlRefused as refusal:
        raise ToolInputError(str(refusal)) from None
