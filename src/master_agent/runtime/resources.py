"""The process-wide things graphs are built on: settings, database, chat model, termination log."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from typing import Literal

from langchain_core.language_models import BaseChatModel
from langgraph.store.base import TTLConfig
from langgraph.store.postgres.aio import AsyncPostgresStore

from master_agent.capabilities import (
    load_domain_packs,
    provision_tenant_readers,
    registered_domain_packs,
)
from master_agent.capabilities.tools import lexicon
from master_agent.evolution import KnowledgeStore
from master_agent.evolution.clock import runtime_clock
from master_agent.evolution.context import EvolutionContext
from master_agent.evolution.jobs import leader_tick, reconcile_jobs, use_evolution_context
from master_agent.evolution.outbox import load_notifier
from master_agent.evolution.scheduler import EvolutionScheduler
from master_agent.models import make_chat_model, make_embedder
from master_agent.models.budget import TokenCounter, estimate_tokens, make_token_counter
from master_agent.runtime.termination import PostgresTerminationLog
from master_agent.settings import Settings
from master_agent.storage import Database, open_database
from master_agent.storage.store import TenantStore, open_store
from master_agent.untrusted import sql_pool


@dataclass(frozen=True, kw_only=True)
class RuntimeResources:
    settings: Settings
    database: Database
    model: BaseChatModel
    terminations: PostgresTerminationLog
    evolution: EvolutionContext
    store: AsyncPostgresStore
    """Long-term memory (LangGraph's Postgres store); each tenant sees it through ``tenant_store``."""
    count_tokens: TokenCounter = estimate_tokens
    """How prompt tokens are counted (``MASTER_AGENT_TOKENIZER``)."""

    def tenant_store(self, tenant_id: str) -> TenantStore:
        return TenantStore(self.store, tenant_id)


SchedulerRole = Literal["none", "add", "lead"]


@asynccontextmanager
async def open_resources(
    settings: Settings,
    *,
    model: BaseChatModel | None = None,
    install_demo: bool = True,
    scheduler: SchedulerRole = "none",
) -> AsyncIterator[RuntimeResources]:
    """Open the database (migrated), install the demo tenants, pick the chat model and embedder.

    ``scheduler``: ``none`` (outcome checks and playbooks are stored; a leader elsewhere schedules them
    when it starts), ``add`` (also add their jobs to the shared job store) or ``lead`` (also compete to
    run the jobs in this process)."""
    await asyncio.to_thread(lexicon.warm)  # WordNet's files are read off the loop, once
    load_domain_packs(settings.domain_packs)
    chat_model = model or make_chat_model(settings)
    count_tokens = make_token_counter(settings)
    # Configuration errors surface before the database starts.
    embedder = make_embedder(settings.embeddings, settings)
    notifier = load_notifier(settings.notifier)
    sql_pool().warm()  # the SQL guard's workers start while the database opens
    async with open_database(settings) as database:
        if install_demo:
            for pack in registered_domain_packs().values():
                for tenant_id in pack.demo_tenants:
                    await pack.install(database.pool, tenant_id)
        await provision_tenant_readers(database.pool, settings)
        evolution = EvolutionContext(
            pool=database.pool,
            database_uri=database.uri,
            settings=settings,
            knowledge=KnowledgeStore(database.pool, embedder),
            notifier=notifier,
            clock=runtime_clock(settings.now),
        )
        async with AsyncExitStack() as stack:
            store = await stack.enter_async_context(
                open_store(
                    database.pool,
                    embedder,
                    fields=settings.store_index_fields,
                    ttl=TTLConfig(
                        refresh_on_read=True,
                        default_ttl=settings.store_default_ttl_minutes,
                        sweep_interval_minutes=settings.store_sweep_minutes,
                    ),
                    sweep=scheduler == "lead",
                )
            )
            if scheduler != "none":
                evolution.scheduler = EvolutionScheduler(
                    database.uri,
                    poll_s=settings.scheduler_poll_s,
                    on_lead=lambda: reconcile_jobs(evolution),
                    on_tick=lambda: leader_tick(evolution),
                )
                if scheduler == "lead":
                    use_evolution_context(evolution)
                await evolution.scheduler.start(lead=scheduler == "lead")
                stack.push_async_callback(evolution.scheduler.stop)
            yield RuntimeResources(
                settings=settings,
                database=database,
                model=chat_model,
                terminations=PostgresTerminationLog(database.pool),
                evolution=evolution,
                store=store,
                count_tokens=count_tokens,
            )


#: Where the service hands a graph it serves (other than the master graph, built with them) its
#: resources: a ``configurable`` key, kept out of checkpoint metadata by its ``__`` prefix.
RESOURCES_KEY = "__master_agent_resources"

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
