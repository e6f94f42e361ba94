"""The prompt budget: a model call's prompt is fitted to ``MASTER_AGENT_PROMPT_TOKENS`` before it is sent.

Each agent's prompt carries only that agent's tools and output schema (the loop binds them per agent),
schemas in their compact form (``models.schemas``). What gives way, in order: older tool results (the
largest first; a JSON object keeps its keys with long values shortened, other text a head of at least
300 characters), then the context box (its compact form), then the output schema's descriptions, then
the latest turn's results, then the oldest turns (an assistant turn with its tool results, so every
tool call sent is still answered), then (``runtime.loop``) the descriptions of the tools' parameters. The instructions, the tool schemas, the
goal and the latest turn always stay: a prompt still over budget then raises ``PromptBudgetError``
naming the budget, rather than being sent cut. The thread keeps everything: only what is sent is
trimmed.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from langchain_core.messages import AIMessage, AnyMessage, SystemMessage, ToolMessage

from master_agent.errors import ConfigError, PromptBudgetError
from master_agent.settings import Settings

logger = logging.getLogger(__name__)

TokenCounter = Callable[[str], int]

#: Tokens a chat template adds around each message (role markers, separators).
MESSAGE_OVERHEAD = 4
#: Characters of a tool result always kept when it is trimmed.
MIN_TOOL_CHARS = 300
TRIM_MARK = "… [trimmed {n} characters to fit the prompt budget]"
#: What each smaller form of the system prompt gave up (the loop passes them in this order).
SYSTEM_STAGES = ("context box compacted", "output schema descriptions left out")


def estimate_tokens(text: str) -> int:
    """An over-count for mainstream tokenizers (they average 3.5 to 4.5 bytes per token on English and
    JSON), so a prompt fitted by it fits the real window."""
    return (len(text.encode()) + 2) // 3


def make_token_counter(settings: Settings) -> TokenCounter:
    """The counter ``MASTER_AGENT_TOKENIZER`` names (see Settings.tokenizer)."""
    choice = settings.tokenizer
    if choice == "auto":
        if settings.model.startswith("openai:") and settings.openai_base_url is None:
            return _tiktoken_for_model(settings.model.split(":", 1)[1])
        return estimate_tokens
    if choice == "estimate":
        return estimate_tokens
    kind, _, name = choice.partition(":")
    try:
        if kind == "tiktoken":
            import tiktoken

            encoding = tiktoken.get_encoding(name)
            return lambda text: len(encoding.encode(text, disallowed_special=()))
        from tokenizers import Tokenizer

        tokenizer = Tokenizer.from_file(name)
        return lambda text: len(tokenizer.encode(text, add_special_tokens=False).ids)
    except Exception as error:
        raise ConfigError(f"MASTER_AGENT_TOKENIZER: cannot load {choice!r}: {error}") from None


@lru_cache(maxsize=8)
def _tiktoken_for_model(model: str) -> TokenCounter:
    try:
        import tiktoken

        encoding = tiktoken.encoding_for_model(model)
    except Exception as error:  # unknown model, or its encoding cannot be fetched
        logger.warning("no tiktoken encoding for %s (%s); prompt tokens are estimated", model, error)
        return estimate_tokens
    return lambda text: len(encoding.encode(text, disallowed_special=()))


def message_tokens(message: AnyMessage, count: TokenCounter) -> int:
    text = message.content if isinstance(message.content, str) else json.dumps(message.content, default=str)
    tokens = count(text) + MESSAGE_OVERHEAD
    if isinstance(message, AIMessage):
        for call in [*message.tool_calls, *message.invalid_tool_calls]:
            tokens += count(str(call.get("name") or "")) + count(json.dumps(call.get("args"), default=str))
    return tokens


@dataclass(frozen=True)
class FittedPrompt:
    messages: list[AnyMessage]
    tokens: int
    """Tokens of the messages sent (with the fixed part, e.g. tool schemas)."""
    trimmed: tuple[str, ...] = ()
    """What gave way (empty when the prompt fitted as it was)."""


def fit_prompt(
    systems: Sequence[str],
    history: Sequence[AnyMessage],
    *,
    budget: int,
    count: TokenCounter,
    fixed_tokens: int = 0,
) -> FittedPrompt:
    """The prompt to send: ``systems`` are the system prompt from fullest to most compact, ``history``
    the conversation; ``fixed_tokens`` what is sent besides (tool schemas). Over budget even at its
    smallest, ``PromptBudgetError`` says how large that smallest form is."""
    messages = list(history)
    sizes = [message_tokens(message, count) for message in messages]
    system_index = 0

    def total() -> int:
        return fixed_tokens + count(systems[system_index]) + MESSAGE_OVERHEAD + sum(sizes)

    trimmed: list[str] = []
    # The latest turn's results are what the model is about to read: they give way last.
    latest = _latest_turn_start(messages)
    results = [i for i, message in enumerate(messages) if isinstance(message, ToolMessage)]
    shortened: set[int] = set()
    if total() > budget:
        older = [i for i in results if i < latest]
        shortened.update(_trim_tool_results(messages, sizes, older, total() - budget, count))
    while total() > budget and system_index < len(systems) - 1:
        system_index += 1
        trimmed.append(SYSTEM_STAGES[min(system_index, len(SYSTEM_STAGES)) - 1])
    if total() > budget:
        shortened.update(_trim_tool_results(messages, sizes, results, total() - budget, count))
    if shortened:
        trimmed.insert(0, f"{len(shortened)} tool results shortened")
    dropped = 0
    while total() > budget:
        span = _oldest_turn(messages)
        if span is None:
            break
        start, end = span
        del messages[start:end], sizes[start:end]
        dropped += 1
    if dropped:
        trimmed.append(f"{dropped} oldest turns left out")
    sent = total()
    if sent > budget:
        system = count(systems[system_index]) + MESSAGE_OVERHEAD
        raise PromptBudgetError(
            budget,
            sent,
            {"system prompt": system, "tool schemas": fixed_tokens, "goal and latest turn": sum(sizes)},
        )
    if trimmed:
        logger.info("prompt fitted to %d of %d tokens: %s", sent, budget, "; ".join(trimmed))
    return FittedPrompt(
        messages=[SystemMessage(content=systems[system_index]), *messages],
        tokens=sent,
        trimmed=tuple(trimmed),
    )


def _trim_tool_results(
    messages: list[AnyMessage], sizes: list[int], candidates: list[int], excess: int, count: TokenCounter
) -> list[int]:
    """Shorten the tool results at ``candidates``, the largest first (one common cap), until ``excess``
    tokens are saved or every one is down to its head. Returns the indexes shortened."""
    texts = {i: str(messages[i].content) for i in candidates}
    longest = max((len(text) for text in texts.values()), default=0)
    low, high = MIN_TOOL_CHARS, longest
    if longest <= MIN_TOOL_CHARS:
        return []

    def saved(cap: int) -> int:
        return sum(
            sizes[i] - _size_at(messages[i], texts[i], cap, count)
            for i in candidates
            if _worth_cutting(texts[i], cap)
        )

    if saved(low) < excess:
        high = low
    while low < high:  # the largest cap that saves enough
        middle = (low + high + 1) // 2
        if saved(middle) >= excess:
            low = middle
        else:
            high = middle - 1
    shortened = [i for i in candidates if _worth_cutting(texts[i], low)]
    for i in shortened:
        messages[i] = _shortened(messages[i], texts[i], low)
        sizes[i] = message_tokens(messages[i], count)
    return shortened


def _worth_cutting(text: str, cap: int) -> bool:
    return len(text) - cap > 2 * len(TRIM_MARK)


#: Longest strings a JSON tool result's strings are shortened to, in turn, before its text is cut.
JSON_STRING_CAPS = (400, 160, 60, 24)
TRIM_KEY = "_trimmed"


def _shortened(message: AnyMessage, text: str, cap: int) -> AnyMessage:
    """``message`` with its content within about ``cap`` characters: a JSON object stays JSON (its
    long strings and lists shortened, so its keys and status still read), anything else is cut."""
    shrunk = _shrunk_json(text, cap)
    if shrunk is not None:
        return message.model_copy(update={"content": shrunk})
    return message.model_copy(update={"content": text[:cap] + TRIM_MARK.format(n=len(text) - cap)})


@lru_cache(maxsize=256)
def _parsed_object(text: str) -> dict[str, Any] | None:
    if not text.startswith("{"):
        return None
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


def _shrunk_json(text: str, cap: int) -> str | None:
    """Only strings are shortened: every list, number and key keeps its type and place, so an answer
    built from the result still fits its schema."""
    value = _parsed_object(text)
    if value is None:
        return None
    for max_string in JSON_STRING_CAPS:
        shrunk = _shrink(value, max_string)
        shrunk[TRIM_KEY] = "long strings shortened to fit the prompt budget"
        rendered = json.dumps(shrunk, separators=(",", ":"), ensure_ascii=False, default=str)
        if len(rendered) <= cap:
            return rendered
    return None


def _shrink(value: Any, max_string: int) -> Any:
    if isinstance(value, str) and len(value) > max_string:
        return value[:max_string] + "…"
    if isinstance(value, list):
        return [_shrink(item, max_string) for item in value]
    if isinstance(value, dict):
        return {key: _shrink(item, max_string) for key, item in value.items()}
    return value


def _size_at(message: AnyMessage, text: str, cap: int, count: TokenCounter) -> int:
    return message_tokens(_shortened(message, text, cap), count)


def _latest_turn_start(messages: list[AnyMessage]) -> int:
    for i in range(len(messages) - 1, -1, -1):
        if isinstance(messages[i], AIMessage):
            return i
    return len(messages)


def _oldest_turn(messages: list[AnyMessage]) -> tuple[int, int] | None:
    """(start, end) of the oldest assistant turn with its tool results, never the latest turn."""
    latest = _latest_turn_start(messages)
    for start, message in enumerate(messages):
        if start >= latest:
            return None
        if isinstance(message, AIMessage):
            end = start + 1
            while end < len(messages) and isinstance(messages[end], ToolMessage):
                end += 1
            return start, end
    return None


def schema_tokens(schemas: Sequence[dict[str, Any]], count: TokenCounter) -> int:
    """Tokens of the tool schemas sent with a request."""
    return sum(count(json.dumps(schema, sort_keys=True)) for schema in schemas)
