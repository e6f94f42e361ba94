"""Per-tenant capability registry: which specs and tools a tenant's graph is built from.

A tenant row names its domain pack and tier; the pack declares specs and builds tools; the tier (and an
optional per-tenant subset) decides which sub-agents exist. ``capability_version`` is bumped on every
change so cached graphs are rebuilt on their next use.
"""

from __future__ import annotations

import importlib
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import date
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any, Protocol

from langchain_core.tools import BaseTool
from psycopg_pool import AsyncConnectionPool
from pydantic import BaseModel, ConfigDict

from master_agent.capabilities.agents import StoredAgent, compile_document, query_tools
from master_agent.capabilities.spec import (
    AgentSpec,
    DataMetric,
    MissingInformation,
    RoutingExample,
    Tier,
    tier_allows,
)
from master_agent.capabilities.tools.context import ToolContext
from master_agent.capabilities.tools.readers import provision_readers
from master_agent.errors import ConfigError, InputError, ToolInputError, UnknownTenantError
from master_agent.settings import Settings

SELECT_TENANT = """
SELECT tenant_id, name, tier, capability_version, enabled_sub_agents, data_schema, domain
FROM tenants WHERE tenant_id = %s
"""
BUMP_VERSION = """
UPDATE tenants SET capability_version = capability_version + 1, updated_at = now(),
       tier = COALESCE(%(tier)s, tier),
       enabled_sub_agents = CASE WHEN %(set_subset)s THEN %(subset)s ELSE enabled_sub_agents END
WHERE tenant_id = %(tenant_id)s
RETURNING capability_version
"""


class TenantRecord(BaseModel):
    """A row of ``tenants``."""

    model_config = ConfigDict(frozen=True)

    tenant_id: str
    name: str
    tier: Tier
    capability_version: int
    enabled_sub_agents: list[str] | None = None
    data_schema: str | None = None
    domain: str | None = None


@dataclass(frozen=True)
class FileUpload:
    """A file a caller uploaded to one of its tenant's threads."""

    data_dir: Path
    tenant_id: str
    thread_id: str
    filename: str
    media_type: str
    content: bytes


@dataclass(frozen=True, kw_only=True)
class UploadKind:
    """A file a pack's conversations take from their users (a salary slip): ``POST
    /threads/{thread_id}/files`` checks the size and type, then ``store`` keeps it where the pack's
    workers read it."""

    description: str
    media_types: tuple[str, ...]
    max_bytes: int
    workflow: str
    """The audit trail's workflow name for the upload event."""
    store: Callable[[FileUpload], Awaitable[dict[str, Any]]]
    """Keeps the file; returns its ``document_id`` and what was read from it. Raises ``ValueError``
    naming the problem when the content is not what the kind takes (nothing is kept then)."""


class SureRequest(Protocol):
    """A pack's second opinion on a message (``DomainPack.sure_request``)."""

    def __call__(
        self, message: str, settings: Settings, today: date, /, *, refused: bool = False
    ) -> Awaitable[bool]: ...


@dataclass(frozen=True, kw_only=True)
class DomainPack:
    """A domain's agents, tools and demo data."""

    name: str
    """Pack name stored in ``tenants.domain``."""
    master: AgentSpec
    """The master agent's spec for this domain."""
    sub_agents: dict[str, AgentSpec]
    """Every sub-agent spec the pack offers, by name."""
    build_tools: Callable[[ToolContext], dict[str, BaseTool]]
    """Plain tools bound to one tenant's data."""
    install: Callable[[AsyncConnectionPool[Any], str], Awaitable[None]]
    """Create one of the pack's demo tenants and its data if missing (idempotent)."""
    demo_tenants: tuple[str, ...] = ()
    """The demo tenants ``install`` knows how to create."""
    default_entities: Callable[[ToolContext], Awaitable[dict[str, Any]]] | None = None
    """Entities a tenant implies when a goal does not say them (e.g. its only store)."""
    hidden_columns: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """Columns of its tenants' tables that agents must not read (e.g. ground truth kept only to
    simulate the world): not granted to the tenant's reader role."""
    problems: tuple[tuple[str, str], ...] = ()
    """(metric, description) of each problem the pack's goals can be about. With them, a learned
    pattern is reused only for a goal whose problem statement is nearest its metric's description;
    without them, for a goal near enough to the pattern (``MASTER_AGENT_REUSE_MIN_SIMILARITY``)."""
    problem_metrics: Mapping[str, str] = field(default_factory=dict)
    """Problem -> the ``data_metrics`` name measuring it: a goal or question whose words name no figure
    is placed by meaning (the nearest problem), and a problem without a figure is data it lacks."""
    check_precondition: Callable[[ToolContext, dict[str, Any], dict[str, Any]], Awaitable[bool]] | None = None
    """Whether a learned pattern's precondition (its ``applicability.precondition``) holds for a new
    goal's entities: one cheap check before research is skipped. None: patterns need no check."""
    routing_examples: tuple[RoutingExample, ...] = ()
    """Labelled messages of this domain for the front door's intent classifier."""
    data_metrics: tuple[DataMetric, ...] = ()
    """Figures of its tenants' data the front door answers questions about."""
    query_handlers: Mapping[str, Callable[[Any], Awaitable[Any]]] = field(default_factory=dict)
    """Query kinds the pack answers itself: kind -> async handler taking a ``routing.queries.QueryRequest``
    and returning a ``QueryAnswer``; its ``routing_examples`` teach the classifier the kind."""
    goal_entities: Callable[[str, ToolContext], Awaitable[dict[str, Any]]] | None = None
    """Values a goal states in the pack's own terms (a day, a person, a topic), added to the master
    loop's input at its first step (the request's own values win)."""
    describe_answer: Callable[[dict[str, Any]], list[str]] | None = None
    """The lines a chat reply shows of a solution of this pack (after its status)."""
    missing_information: Callable[[dict[str, Any]], MissingInformation | None] | None = None
    """What a request of this pack cannot go on without, given the values its goal states (and the
    request's own): the master loop asks the user for it (``interrupt()``) before its first turn, and
    reads the answer with ``goal_entities``."""
    conversation_graph: Callable[[ToolContext, Any], Any] | None = None
    """A stage-driven pack's chat graph: (tool context, chat model) -> an uncompiled ``StateGraph``
    (e.g. ``workflows.compile_workflow``). Chat and the LangGraph API run it for the pack's tenants
    instead of the front door; explicit goals still go to the master agent's loop."""
    uploads: Mapping[str, UploadKind] = field(default_factory=dict)
    """Files its tenants' threads take, by kind (``POST /threads/{thread_id}/files``)."""
    sure_request: SureRequest | None = None
    """(message, settings, today, refused=) -> whether the pack's own reader of requests is sure the
    message asks its master agent for something it does: the front door's second opinion on a message it
    would otherwise ask an open question about (its intent head reads requests without their days, times
    and names, where a pack's requests carry what they are about), or with ``refused``, on one its intent
    head refuses outright (the pack then needs stronger evidence than for an ambiguous one)."""
    state_guard: Callable[[dict[str, Any], dict[str, Any]], list[str]] | None = None
    """(current values, update) -> what a direct state update of one of its conversations would change
    that only its stage machine's guards may (``workflows.spec.update_skips_a_guard``): such an update is refused (409), or for an
    operator, applied and audited as an override."""


@dataclass(frozen=True, kw_only=True)
class TenantCapabilities:
    """Everything a tenant's graph is built from."""

    tenant: TenantRecord
    master: AgentSpec
    sub_agents: dict[str, AgentSpec]
    """Sub-agents this tenant may use (tier and subset applied)."""
    tools: dict[str, BaseTool]
    tenant_agents: frozenset[str] = frozenset()
    """Which of ``sub_agents`` are the tenant's own (defined as data, not by its pack)."""


_PACKS: dict[str, DomainPack] = {}
#: Entry-point group through which installed packages offer domain packs.
DOMAIN_ENTRY_POINTS = "master_agent.domains"


def register_domain_pack(pack: DomainPack) -> None:
    _PACKS[pack.name] = pack


_plugins_loaded = False


def _load_plugin_packs() -> None:
    """Register the packs of the ``master_agent.domains`` entry-point group (the retail pack is one of
    them): the registry is given packs, it never imports them."""
    global _plugins_loaded
    if _plugins_loaded:
        return
    _plugins_loaded = True
    for entry in entry_points(group=DOMAIN_ENTRY_POINTS):
        try:
            pack = entry.load()
        except ImportError as error:
            raise ConfigError(
                f"domain pack {entry.name!r} ({entry.value}) cannot be imported: {error}"
            ) from None
        if not isinstance(pack, DomainPack):
            raise ConfigError(f"domain pack {entry.name!r} ({entry.value}) is not a DomainPack")
        _PACKS.setdefault(pack.name, pack)


def domain_pack(name: str) -> DomainPack:
    _load_plugin_packs()
    try:
        return _PACKS[name]
    except KeyError:
        raise InputError("domain", f"unknown domain pack {name!r}; known: {sorted(_PACKS)}") from None


def registered_domain_packs() -> dict[str, DomainPack]:
    """Every registered pack, by name (the plugins' included)."""
    _load_plugin_packs()
    return dict(_PACKS)


async def implied_entities(pack: DomainPack, tool_context: ToolContext) -> dict[str, Any]:
    """The entities a tenant implies when a message or goal does not say them (its pack's
    ``default_entities``); nothing for a tenant without business data."""
    if pack.default_entities is None:
        return {}
    try:
        return await pack.default_entities(tool_context)
    except ToolInputError:
        return {}


async def install_tenant(
    pool: AsyncConnectionPool[Any], settings: Settings, pack: DomainPack | str, tenant_id: str
) -> None:
    """Create a tenant of a pack with its data (the pack's ``install``), then its reader role."""
    pack = domain_pack(pack) if isinstance(pack, str) else pack
    await pack.install(pool, tenant_id)
    await provision_tenant_readers(pool, settings)


async def provision_tenant_readers(pool: AsyncConnectionPool[Any], settings: Settings) -> None:
    """Give every tenant with a data schema its hardened reader role, hiding what its pack hides."""
    hidden = {name: pack.hidden_columns for name, pack in registered_domain_packs().items()}
    await provision_readers(pool, settings, hidden)


def load_domain_packs(modules: Iterable[str]) -> None:
    """Import modules that register extra domain packs (``MASTER_AGENT_DOMAIN_PACKS``)."""
    for module in modules:
        try:
            importlib.import_module(module)
        except ImportError as error:
            raise ConfigError(f"MASTER_AGENT_DOMAIN_PACKS: cannot import {module!r}: {error}") from None


async def load_tenant(pool: AsyncConnectionPool[Any], tenant_id: str) -> TenantRecord:
    async with pool.connection() as conn:
        cursor = await conn.execute(SELECT_TENANT, (tenant_id,))
        row = await cursor.fetchone()
    if row is None:
        raise UnknownTenantError(tenant_id)
    return TenantRecord.model_validate(row)


async def bump_capability_version(
    pool: AsyncConnectionPool[Any],
    tenant_id: str,
    *,
    tier: Tier | None = None,
    enabled_sub_agents: Iterable[str] | None = None,
    clear_subset: bool = False,
) -> int:
    """Change a tenant's tier or sub-agent subset (or just mark a change); return the new version."""
    subset = None if enabled_sub_agents is None else list(enabled_sub_agents)
    async with pool.connection() as conn:
        cursor = await conn.execute(
            BUMP_VERSION,
            {
                "tier": tier,
                "set_subset": subset is not None or clear_subset,
                "subset": subset,
                "tenant_id": tenant_id,
            },
        )
        row = await cursor.fetchone()
    if row is None:
        raise UnknownTenantError(tenant_id)
    return int(row["capability_version"])


def tenant_capabilities(
    tenant: TenantRecord,
    tool_context: ToolContext,
    *,
    only_sub_agents: Iterable[str] | None = None,
    agents: Mapping[str, StoredAgent] | None = None,
) -> TenantCapabilities:
    """Resolve the tenant's pack, filter sub-agents by tier and subsets, build its tools. ``agents``: the
    tenant's own (live) agents; they join the sub-agents, and the master agent is offered those of its
    domain."""
    pack = domain_pack(tenant.domain or "retail")
    own = {name: compile_document(stored.document) for name, stored in (agents or {}).items()}
    known = {**pack.sub_agents, **own}
    allowed = {
        name: spec for name, spec in known.items() if tier_allows(tenant.tier, spec.get("min_tier", "free"))
    }
    for subset in (tenant.enabled_sub_agents, only_sub_agents):
        if subset is None:
            continue
        wanted = set(subset)
        unknown = wanted - set(known)
        if unknown:
            raise InputError(
                "sub_agents",
                f"unknown sub-agents {sorted(unknown)}; known: {sorted(known)}",
            )
        allowed = {name: spec for name, spec in allowed.items() if name in wanted}
    tools = pack.build_tools(tool_context)
    for stored in (agents or {}).values():
        tools.update(query_tools(stored.document, tool_context))
    offered = [
        name
        for name, stored in (agents or {}).items()
        if name in allowed and (stored.document.domain or pack.name) == pack.name
    ]
    master = pack.master
    if offered:
        master = {**master, "tools": [*master["tools"], *offered]}
    return TenantCapabilities(
        tenant=tenant,
        master=master,
        sub_agents=allowed,
        tools=tools,
        tenant_agents=frozenset(own),
    )
