"""SQL text as a pydantic type: the guard's size limits checked where the text is stored or sent."""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator

from master_agent.untrusted.sql_grammar import MAX_SQL_CHARS, within_limits

__all__ = ["MAX_SQL_CHARS", "SqlText"]


def _bounded(sql: str) -> str:
    within_limits(sql)
    return sql


SqlText = Annotated[str, AfterValidator(_bounded)]
"""SQL text a tenant stores or a model sends: refused at validation when it is too long, has too many
tokens or nests too deeply to parse safely (the JSON schema a model reads is a plain string)."""
