"""One model call of an agent turn: the prompt fitted to its token budget (``models.budget``), the
lean tool schemas as the last resort, and a failing model told as text, never raised out of a loop
(an outage still raises: the run waits for the database)."""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import AIMessage, AnyMessage
from langchain_core.runnables import Runnable, RunnableConfig
from langgraph.errors import GraphBubbleUp

from master_agent.errors import PromptBudgetError
from master_agent.models.budget import fit_prompt, message_tokens
from master_agent.models.chat import describe_model_failure
from master_agent.storage.outages import is_outage

logger = logging.getLogger(__name__)


def with_call_ids(reply: AIMessage) -> AIMessage:
    """The reply with every tool call named by an id (some servers send none; each needs an answer)."""
    ids = [call.get("id") for call in [*reply.tool_calls, *reply.invalid_tool_calls]]
    if all(ids) and len(set(ids)) == len(ids):
        return reply
    stamp = hashlib.sha1(str(ids).encode() + str(reply.content).encode()).hexdigest()[:8]
    tool_calls = [{**call, "id": f"call_{stamp}_{i}"} for i, call in enumerate(reply.tool_calls)]
    offset = len(tool_calls)
    invalid = [
        {**call, "id": f"call_{stamp}_{offset + i}"} for i, call in enumerate(reply.invalid_tool_calls)
    ]
    return reply.model_copy(update={"tool_calls": tool_calls, "invalid_tool_calls": invalid})


@dataclass(frozen=True, kw_only=True)
class ModelCaller:
    """Calls the model for one agent."""

    agent: str
    """The agent calling (named in logs and in a refusal)."""
    depth: int
    """Its depth."""
    limits: Any
    """The graph's ``LoopLimits`` (``prompt_tokens``, ``count_tokens``)."""

    async def __call__(
        self,
        model: Runnable[Any, Any],
        systems: list[str],
        history: list[AnyMessage],
        config: RunnableConfig,
        *,
        tool_tokens: int,
        lean_tools: tuple[Runnable[Any, Any], int] | None = None,
    ) -> tuple[AIMessage | str, int]:
        """One model call on a prompt fitted to the budget: the reply, or why the call failed (after the
        client's own retries), and the tokens it used (the server's count when it gives one). A failing
        model never raises out of a loop."""
        count = self.limits.count_tokens
        try:
            fitted = fit_prompt(
                systems, history, budget=self.limits.prompt_tokens, count=count, fixed_tokens=tool_tokens
            )
        except PromptBudgetError as error:
            if lean_tools is None:
                logger.warning("agent %s (depth %d) not called: %s", self.agent, self.depth, error)
                return f"agent '{self.agent}': {error}", 0
            # The last resort: the tools' parameters without their descriptions.
            model, tool_tokens = lean_tools
            return await self(model, systems, history, config, tool_tokens=tool_tokens)
        try:
            reply = await model.ainvoke(fitted.messages, config)
        except GraphBubbleUp:
            raise
        except Exception as error:
            if is_outage(error):
                raise
            logger.warning("model call of %s (depth %d) failed: %r", self.agent, self.depth, error)
            return describe_model_failure(error), fitted.tokens
        if not isinstance(reply, AIMessage):
            return f"the model answered with a {type(reply).__name__}, not a message", fitted.tokens
        usage = reply.usage_metadata
        return reply, usage["total_tokens"] if usage else fitted.tokens + message_tokens(reply, count)
