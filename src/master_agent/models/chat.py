"""The chat model named by settings."""

from __future__ import annotations

from typing import Any

from langchain_core.language_models import BaseChatModel

from master_agent.errors import ConfigError
from master_agent.models.offline import OfflinePlanner
from master_agent.settings import Settings


def make_chat_model(settings: Settings, *, http_async_client: Any = None) -> BaseChatModel:
    """``offline`` -> OfflinePlanner; ``openai:<model>`` -> ChatOpenAI (honours OPENAI_BASE_URL).

    ``http_async_client`` replaces the OpenAI client's HTTP client (an ``httpx2.AsyncClient``, the HTTP
    library the openai package uses); tests pass one with a transport that replays recorded responses.
    """
    if settings.model == "offline":
        return OfflinePlanner()
    from langchain_openai import ChatOpenAI

    name = settings.model.split(":", 1)[1]
    key = settings.openai_api_key
    if key is None and settings.openai_base_url is None:
        raise ConfigError(
            f"MASTER_AGENT_MODEL: {settings.model!r} needs OPENAI_API_KEY (or OPENAI_BASE_URL for a "
            "server without keys)"
        )
    return ChatOpenAI(
        model=name,
        api_key=key if key is not None else "not-needed",
        base_url=settings.openai_base_url,
        timeout=settings.openai_timeout_s,
        max_retries=settings.openai_max_retries,
        temperature=0,
        http_async_client=http_async_client,
    )
