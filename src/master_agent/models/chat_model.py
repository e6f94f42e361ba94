"""The chat model named by settings, speaking what every OpenAI-compatible server accepts. The OpenAI
client is imported only when a model needs it (``models.openai_chat``): offline, every process starts
without it."""

from __future__ import annotations

from typing import Any

from langchain_core.language_models import BaseChatModel

from master_agent.errors import ConfigError
from master_agent.models.offline import OfflinePlanner
from master_agent.settings import Settings


def make_chat_model(settings: Settings, *, http_async_client: Any = None) -> BaseChatModel:
    """``offline`` -> OfflinePlanner; ``openai:<model>`` -> CompatibleChatOpenAI (honours OPENAI_BASE_URL).

    ``http_async_client`` replaces the OpenAI client's HTTP client (an ``httpx2.AsyncClient``, the HTTP
    library the openai package uses); tests pass one with a transport that replays recorded responses.
    """
    if settings.model == "offline":
        return OfflinePlanner()
    from master_agent.models.openai_chat import CompatibleChatOpenAI

    name = settings.model.split(":", 1)[1]
    key = settings.openai_api_key
    if key is None and settings.openai_base_url is None:
        raise ConfigError(
            f"MASTER_AGENT_MODEL: {settings.model!r} needs OPENAI_API_KEY (or OPENAI_BASE_URL for a "
            "server without keys)"
        )
    field = settings.max_tokens_field
    if field == "auto":
        field = "max_tokens" if settings.openai_base_url else "max_completion_tokens"
    timeout = settings.model_timeout_s()
    return CompatibleChatOpenAI(
        model=name,
        api_key=key if key is not None else "not-needed",
        base_url=settings.openai_base_url,
        timeout=timeout,
        # langchain-openai bounds the silence between streamed chunks on its own (120 s, or its
        # LANGCHAIN_OPENAI_STREAM_CHUNK_TIMEOUT_S): the one documented timeout governs it too.
        stream_chunk_timeout=timeout,
        max_retries=settings.model_max_retries(),
        max_tokens=settings.max_tokens,
        max_tokens_field=field,
        schema_mode=settings.model_schema_mode(),
        temperature=0,
        http_async_client=http_async_client,
    )
