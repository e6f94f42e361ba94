"""The OpenAI-compatible chat client (imported only when ``MASTER_AGENT_MODEL`` names one)."""

from __future__ import annotations

from typing import Any

from langchain_openai import ChatOpenAI

from master_agent.models.chat import content_text
from master_agent.models.schemas import portable_payload


class CompatibleChatOpenAI(ChatOpenAI):
    """ChatOpenAI whose requests every mainstream OpenAI-compatible server accepts.

    langchain-openai sends an assistant tool-call message with ``"content": null`` (the OpenAI spec
    allows it; llama.cpp's server answers 500 "Input should be a valid string"), may send content as a
    list of blocks, and renames ``max_tokens`` to ``max_completion_tokens`` (which older servers ignore,
    leaving answers unbounded). Here content is always a string, ``max_tokens_field`` says which
    field bounds the answer, and ``schema_mode`` whether the JSON schemas sent are made portable
    (``models.schemas``)."""

    max_tokens_field: str = "max_completion_tokens"
    """The request field that bounds the answer (``MASTER_AGENT_MAX_TOKENS_FIELD``)."""
    schema_mode: str = "strict"
    """``portable``: tool and response-format schemas lose what grammar servers choke on
    (``MASTER_AGENT_SCHEMA_MODE``); ``strict``: sent as pydantic wrote them."""

    def _get_request_payload(
        self, input_: Any, *, stop: list[str] | None = None, **kwargs: Any
    ) -> dict[str, Any]:
        payload: dict[str, Any] = super()._get_request_payload(input_, stop=stop, **kwargs)
        bound = payload.pop("max_completion_tokens", None) or payload.pop("max_tokens", None)
        if bound is not None:
            payload[self.max_tokens_field] = bound
        for message in payload.get("messages", []):
            message["content"] = content_text(message.get("content"))
            message.pop("name", None)  # optional, and refused by strict servers' schemas
        if self.schema_mode == "portable":
            payload = portable_payload(payload)
        return payload
