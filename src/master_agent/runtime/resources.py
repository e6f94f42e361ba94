"""The process-wide things graphs are built on: settings, database, chat model, termination log."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass

from langchain_core.language_models import BaseChatModel

from master_agent.capabilities import domain_pack, load_domain_packs
from master_agent.models import make_chat_model
from master_agent.runtime.termination import PostgresTerminationLog
from master_agent.settings import Settings
from master_agent.storage import Database, open_database


@dataclass(frozen=True, kw_only=True)
class RuntimeResources:
    settings: Settings
    database: Database
    model: BaseChatModel
    terminations: PostgresTerminationLog


@asynccontextmanager
async def open_resources(
    settings: Settings, *, model: BaseChatModel | None = None, install_demo: bool = True
) -> AsyncIterator[RuntimeResources]:
    """Open the database (migrated), install the demo tenant, pick the chat model."""
    load_domain_packs(settings.domain_packs)
    chat_model = model or make_chat_model(settings)
    async with open_database(settings) as database:
        if install_demo:
            await domain_pack("retail").install(database.pool, "demo-retail")
        yield RuntimeResources(
            settings=settings,
            database=database,
            model=chat_model,
            terminations=PostgresTerminationLog(database.pool),
        )


_shared: RuntimeResources | None = None
_shared_stack: AsyncExitStack | None = None
_shared_lock = asyncio.Lock()


async def shared_resources() -> RuntimeResources:
    """Resources for hosts that only call the graph factory (``langgraph dev``): opened on first use
    from the environment and kept for the life of the process."""
    global _shared, _shared_stack
    async with _shared_lock:
        if _shared is None:
            stack = AsyncExitStack()
            _shared = await stack.enter_async_context(open_resources(Settings.from_env()))
            _shared_stack = stack
        return _shared


def use_shared_resources(resources: RuntimeResources | None) -> None:
    """Make ``resources`` the process's shared ones (CLI and service set this at start)."""
    global _shared
    _shared = resources
