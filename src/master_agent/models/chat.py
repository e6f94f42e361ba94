"""What every chat model's callers share: a message's content as one string, and the words a failed
model call is reported in (the model itself is made in ``models.chat_model``)."""

from __future__ import annotations

import json
from typing import Any

from master_agent.errors import PromptBudgetError


def content_text(content: Any) -> str:
    """A message's content as one string (text blocks joined), as every compatible server accepts it."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [
            part
            if isinstance(part, str)
            else str(part.get("text", ""))
            if isinstance(part, dict)
            else str(part)
            for part in content
        ]
        return "".join(parts)
    return json.dumps(content, default=str)


def describe_model_failure(error: BaseException) -> str:
    """One line saying why a model call failed, for limitations, the termination report and run errors."""
    import openai

    if isinstance(error, PromptBudgetError):
        return str(error)
    if isinstance(error, openai.APITimeoutError):
        return (
            "the model did not answer in time (request timed out after the client's retries; "
            "the limit is OPENAI_TIMEOUT_S)"
        )
    if isinstance(error, openai.APIConnectionError):
        return f"the model server could not be reached: {error}"
    if isinstance(error, openai.APIStatusError):
        detail = error.message
        body = error.body
        if isinstance(body, dict):
            inner = body.get("error", body)
            detail = str(inner.get("message", detail)) if isinstance(inner, dict) else str(inner)
        return f"the model server answered HTTP {error.status_code}: {detail}"
    if isinstance(error, TimeoutError):
        # langchain-openai's stream guard names its own knob; ours is the one to turn.
        return "the model did not answer in time (a streamed answer stalled; the limit is OPENAI_TIMEOUT_S)"
    return f"the model call failed: {type(error).__name__}: {error}"
