"""``master_graph(resources, config)``: the tenant's compiled master agent (``langgraph.json`` reaches it
through ``service.graphs.make_master_agent_graph``).

It reads ``config["configurable"]`` (tenant_id, complexity, ab_test_variant, sub_agents,
max_iterations, the per-run budgets max_tool_calls, max_spawns and max_tokens), loads the tenant (tier, capability version), and returns the compiled master agent
loop for it. Compiled graphs are cached by everything that shapes them, with a TTL; a change of the
tenant's capabilities bumps its version and so misses the cache on the next run.

Complexity, when absent, is classified from ``configurable["goal"]`` (the CLI and the service pass
it), or else at run time from the input goal by a routing first step: ``simple`` ends sooner and
allows one level of sub-agents; ``strategic`` adds the human-review node.
"""

from __future__ import annotations

import dataclasses
import functools
import re
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any, Literal, Protocol

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.types import Command
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, model_validator

from master_agent.capabilities import (
    DomainPack,
    TenantCapabilities,
    TenantRecord,
    domain_pack,
    implied_entities,
    load_tenant,
    tenant_capabilities,
)
from master_agent.capabilities.agents import (
    AgentDocument,
    StoredAgent,
    agent_version,
    compile_document,
    live_agents,
    query_tools,
)
from master_agent.capabilities.terms import goal_target
from master_agent.capabilities.tools import ToolContext
from master_agent.errors import ConfigError, InputError
from master_agent.evolution.context import EvolutionContext
from master_agent.evolution.reuse import find_reusable
from master_agent.evolution.tools import DEPLOY_TOOL, DEPLOYED_KEY, build_evolution_tools
from master_agent.runtime.loop import (
    CompiledLoop,
    Gathering,
    LoopLimits,
    Recall,
    RecallStep,
    build_agent_loop,
    iterations_within,
    progress_keys,
    recursion_limit_for,
)
from master_agent.runtime.proposals import ProposalBook
from master_agent.runtime.resources import RuntimeResources
from master_agent.settings import Settings

Complexity = Literal["simple", "standard", "strategic"]
COMPLEXITIES: tuple[Complexity, ...] = ("simple", "standard", "strategic")
Variant = Literal["control", "planner_first", "parallel_research"]
DEFAULT_TENANT = "demo-retail"
CACHE_MAX_ENTRIES = 256
SIMPLE_MAX_ITERATIONS = 4

#: A lookup: a question about a figure or a list, not a change to make.
_LOOKUP = re.compile(r"^\s*(what|which|who|when|how many|how much|show|list)\b", re.I)


def classify_complexity(goal: str) -> Complexity:
    """``strategic`` for a goal that states a target for a figure (read as ``goal_target`` reads it:
    "to 8%", "three points higher", "double", "by a third"), ``simple`` for a lookup that states none,
    ``standard`` otherwise. The target, not the verb, decides: "Get Store 2 to 8%" is a goal."""
    if goal_target(goal) is not None:
        return "strategic"
    if _LOOKUP.match(goal) and len(goal) < 200:
        return "simple"
    return "standard"


class GraphOptions(BaseModel):
    """What ``configurable`` may say about the graph."""

    model_config = ConfigDict(extra="ignore")

    tenant_id: str = DEFAULT_TENANT
    """The tenant. ``client_id`` (LangGraph clients' name for it) is taken where ``tenant_id`` is absent:
    under ``langgraph dev`` no API key names the tenant, and an unknown one is refused, never replaced."""
    complexity: Complexity | None = None
    ab_test_variant: Variant = "control"
    sub_agents: list[str] | None = None
    max_iterations: int | None = Field(default=None, ge=1, le=100)
    max_tool_calls: int | None = Field(default=None, ge=0, le=10_000)
    """Tool and sub-agent calls per run of each agent loop of the run (its own limits may be tighter)."""
    max_spawns: int | None = Field(default=None, ge=0, le=1_000)
    """Sub-agent calls per run of each agent loop of the run."""
    max_tokens: int | None = Field(default=None, ge=100, le=100_000_000)
    """Model tokens per run of each agent loop of the run; the turn that reaches it is the last."""
    goal: str | None = None
    deploy_playbook: bool = False
    """The goal includes putting the playbook in place: the master agent is offered ``deploy_playbook``
    and its answer is complete only once the playbook is deployed."""
    agent_id: str | None = None
    """Run one of the tenant's own agents (its assistant id) instead of the master agent."""
    agent_version: int | None = Field(default=None, ge=1)
    """The version of that agent the run is pinned to (default: its live version when the run starts)."""

    _iteration_cap: int | None = PrivateAttr(default=None)
    """The most iterations the run's own ``recursion_limit`` leaves room for (None: no limit given)."""

    @model_validator(mode="before")
    @classmethod
    def _client_id_names_the_tenant(cls, data: Any) -> Any:
        if isinstance(data, dict) and data.get("client_id") is not None:
            client_id, tenant_id = data["client_id"], data.get("tenant_id")
            if tenant_id is not None and tenant_id != client_id:
                raise ValueError("client_id and tenant_id name different tenants; send one of them")
            data = {**data, "tenant_id": client_id}
        return data

    @classmethod
    def from_config(cls, config: RunnableConfig | None) -> GraphOptions:
        configurable = dict((config or {}).get("configurable") or {})
        try:
            options = cls.model_validate(configurable)
        except ValidationError as error:
            raise InputError.from_validation(error, "configurable") from None
        limit = (config or {}).get("recursion_limit")
        if limit is not None:
            least = recursion_limit_for(1)
            if isinstance(limit, bool) or not isinstance(limit, int) or limit < least:
                raise InputError("recursion_limit", f"an integer of at least {least}")
            # The stop rules must act before LangGraph's limit does: fewer iterations, never an error.
            options._iteration_cap = iterations_within(limit)
        return options

    @property
    def iteration_cap(self) -> int | None:
        return self._iteration_cap

    def resolved_complexity(self) -> Complexity:
        return self.complexity or classify_complexity(self.goal or "")


class GraphCache:
    """Compiled graphs by shape key, least recently used evicted, each valid for ``ttl_s``."""

    def __init__(self, ttl_s: float, max_entries: int = CACHE_MAX_ENTRIES) -> None:
        self.ttl_s = ttl_s
        self.max_entries = max_entries
        self._entries: OrderedDict[tuple[Any, ...], tuple[float, CompiledLoop]] = OrderedDict()
        self.hits = 0
        self.misses = 0

    def get(self, key: tuple[Any, ...]) -> CompiledLoop | None:
        entry = self._entries.get(key)
        if entry is None or entry[0] < time.monotonic():
            self._entries.pop(key, None)
            self.misses += 1
            return None
        self._entries.move_to_end(key)
        self.hits += 1
        return entry[1]

    def put(self, key: tuple[Any, ...], graph: CompiledLoop) -> None:
        self._entries[key] = (time.monotonic() + self.ttl_s, graph)
        self._entries.move_to_end(key)
        while len(self._entries) > self.max_entries:
            self._entries.popitem(last=False)

    def clear(self) -> None:
        self._entries.clear()


_caches: dict[int, GraphCache] = {}


def graph_cache(resources: RuntimeResources) -> GraphCache:
    cache = _caches.get(id(resources))
    if cache is None:
        cache = _caches[id(resources)] = GraphCache(resources.settings.graph_cache_ttl_s)
    return cache


def loop_limits(resources: RuntimeResources, options: GraphOptions) -> LoopLimits:
    settings = resources.settings
    complexity = options.resolved_complexity()
    default_iterations = (
        min(SIMPLE_MAX_ITERATIONS, settings.max_iterations)
        if complexity == "simple"
        else settings.max_iterations
    )
    max_iterations = options.max_iterations or default_iterations
    if options.iteration_cap is not None:
        max_iterations = min(max_iterations, options.iteration_cap)
    return LoopLimits(
        max_depth=1 if complexity == "simple" else settings.max_depth,
        max_iterations=max_iterations,
        subagent_timeout_s=settings.subagent_timeout_s,
        human_review=complexity == "strategic",
        variant=options.ab_test_variant,
        prompt_tokens=settings.prompt_tokens,
        count_tokens=resources.count_tokens,
        max_tool_calls=options.max_tool_calls,
        max_spawns=options.max_spawns,
        max_tokens=options.max_tokens,
    )


async def master_graph(
    resources: RuntimeResources,
    config: RunnableConfig | None,
    *,
    checkpointer: BaseCheckpointSaver[Any] | None = None,
) -> CompiledLoop:
    """The tenant's compiled master agent for ``config`` (cached).

    Without ``complexity`` or ``goal`` in ``configurable`` (chat, or a client of ``langgraph dev``
    passing only the input), the graph is the front door: a chat message is routed to the handler it
    needs; a ``goal`` input goes to the loop built for its complexity.
    """
    options = GraphOptions.from_config(config)
    pool = resources.database.pool
    tenant = await load_tenant(pool, options.tenant_id)
    agents = await live_agents(pool, tenant.tenant_id, tenant.capability_version)
    pinned: StoredAgent | None = None
    if options.agent_id is not None:
        pinned = await agent_version(pool, tenant.tenant_id, options.agent_id, options.agent_version)
        if pinned is None:
            version = f" version {options.agent_version}" if options.agent_version else ""
            raise InputError(
                "configurable.agent_id", f"no agent {options.agent_id!r}{version} of this tenant"
            )
    routed = pinned is None and options.complexity is None and options.goal is None
    if pinned is not None:
        kind: Any = ("agent", pinned.assistant_id, pinned.version)
    else:
        kind = "front_door" if routed else options.resolved_complexity()
    shape = (
        tenant.tenant_id,
        tenant.tier,
        tenant.capability_version,
        kind,
        options.ab_test_variant,
        tuple(sorted(options.sub_agents)) if options.sub_agents is not None else None,
        options.max_iterations,
        options.iteration_cap,
        (options.max_tool_calls, options.max_spawns, options.max_tokens),
        options.deploy_playbook,
        id(checkpointer),
    )
    cache = graph_cache(resources)
    graph = cache.get(shape)
    if graph is None:
        if pinned is not None:
            graph = _build_agent(resources, tenant, options, agents, pinned, checkpointer)
        elif routed and (conversation := domain_pack(tenant.domain or "retail").conversation_graph):
            context = tenant_tool_context(resources, tenant)
            graph = conversation(context, resources.model).compile(
                checkpointer=checkpointer, name="master_agent"
            )
        elif routed:
            graph = _front_door(resources, tenant, options, agents, checkpointer)
        else:
            graph = _build_loop(resources, tenant, options, agents, checkpointer)
        # The tenant's long-term memory for ``get_store()`` / ``Runtime.store`` in every node (nested
        # loops run inside the root's nodes and inherit it).
        graph.store = resources.tenant_store(tenant.tenant_id)
        cache.put(shape, graph)
    return graph


async def chat_turn(
    resources: RuntimeResources, tenant_id: str, thread_id: str, message: str | Command[Any]
) -> dict[str, Any]:
    """One user turn of a chat thread (a message, or ``Command(resume=...)`` answering what the thread
    waits for): the thread's values after it, with ``interrupts``, the questions it now waits on."""
    config: Any = {"configurable": {"tenant_id": tenant_id, "thread_id": thread_id}}
    graph = await master_graph(resources, config, checkpointer=resources.database.checkpointer)
    graph_input: Any = (
        message if isinstance(message, Command) else {"messages": [HumanMessage(content=message)]}
    )
    await graph.ainvoke(graph_input, config)
    snapshot = await graph.aget_state(config, subgraphs=True)
    values = dict(snapshot.values)
    values["interrupts"] = [i.value for task in snapshot.tasks for i in task.interrupts]
    return values


def _front_door(
    resources: RuntimeResources,
    tenant: TenantRecord,
    options: GraphOptions,
    agents: dict[str, StoredAgent],
    checkpointer: BaseCheckpointSaver[Any] | None,
) -> CompiledLoop:
    """Chat input's graph: the front door with the master agent's loop of each complexity, and each of
    the tenant's own agents, behind it."""
    # One resolution of the tenant's capabilities for every loop behind the door (complexity changes
    # only the limits).
    shared = _capabilities(resources, tenant, options, agents, tenant_tool_context(resources, tenant))
    solvers: dict[str, CompiledLoop] = {
        complexity: _build_loop(
            resources,
            tenant,
            options.model_copy(update={"complexity": complexity}),
            agents,
            capabilities=shared,
        )
        for complexity in COMPLEXITIES
    }
    own = {
        name: _build_agent(resources, tenant, options, agents, stored, capabilities=shared)
        for name, stored in agents.items()
        if stored.document.skills
    }
    door = front_door(resources, tenant, options, solvers, agents, own, capabilities=shared)
    graph: CompiledLoop = door.graph(checkpointer)
    return graph


class FrontDoorMaker(Protocol):
    """Makes a tenant's front door: the chat graph that routes each message to the loop, agent, query
    or builder it needs (``routing.graph.make_front_door``). The runtime is given it, never imports it:
    the front door stands above the loops it hands goals to."""

    def __call__(
        self,
        *,
        tenant: TenantRecord,
        pack: DomainPack,
        capabilities: TenantCapabilities,
        tool_context: ToolContext,
        settings: Settings,
        evolution: EvolutionContext,
        model: BaseChatModel,
        solvers: Mapping[str, CompiledLoop],
        classify: Callable[[str], Complexity],
        agent_loops: Mapping[str, CompiledLoop] | None = None,
        resources: RuntimeResources | None = None,
    ) -> Any: ...


_front_doors: list[FrontDoorMaker] = []


def register_front_door(maker: FrontDoorMaker) -> None:
    """Give the factory the front door chat threads start at (the service and the CLI do at start)."""
    _front_doors[:] = [maker]


def front_door(
    resources: RuntimeResources,
    tenant: TenantRecord,
    options: GraphOptions | None = None,
    solvers: dict[str, CompiledLoop] | None = None,
    agents: dict[str, StoredAgent] | None = None,
    agent_loops: dict[str, CompiledLoop] | None = None,
    *,
    capabilities: TenantCapabilities | None = None,
) -> Any:
    """The tenant's front door (made by the registered ``FrontDoorMaker``), given the loops it hands
    goals to (none: it only decides, as the routing eval and benchmark use it)."""
    if not _front_doors:
        raise ConfigError(
            "no front door is registered: call master_agent.service.graphs.register_graphs() at start"
        )
    tool_context = tenant_tool_context(resources, tenant)
    sub_agents = options.sub_agents if options else None
    return _front_doors[0](
        tenant=tenant,
        pack=domain_pack(tenant.domain or "retail"),
        capabilities=capabilities
        or tenant_capabilities(tenant, tool_context, only_sub_agents=sub_agents, agents=agents),
        tool_context=tool_context,
        settings=resources.settings,
        evolution=resources.evolution,
        model=resources.model,
        solvers=solvers or {},
        agent_loops=agent_loops or {},
        classify=classify_complexity,
        resources=resources if solvers else None,
    )


def tenant_tool_context(resources: RuntimeResources, tenant: TenantRecord) -> ToolContext:
    return ToolContext(
        pool=resources.database.pool,
        database_uri=resources.database.uri,
        tenant_id=tenant.tenant_id,
        data_schema=tenant.data_schema,
        settings=resources.settings,
        now=lambda: resources.evolution.clock.now(),  # the clock current at each call
        embedder=resources.evolution.knowledge.embedder,
    )


def _capabilities(
    resources: RuntimeResources,
    tenant: TenantRecord,
    options: GraphOptions,
    agents: dict[str, StoredAgent],
    tool_context: ToolContext,
) -> TenantCapabilities:
    capabilities = tenant_capabilities(
        tenant, tool_context, only_sub_agents=options.sub_agents, agents=agents
    )
    # The evolution tools exist for every tenant; a spec offers them by listing their names.
    tools = {**build_evolution_tools(resources.evolution, tenant.tenant_id), **capabilities.tools}
    return dataclasses.replace(capabilities, tools=tools)


def _build_loop(
    resources: RuntimeResources,
    tenant: TenantRecord,
    options: GraphOptions,
    agents: dict[str, StoredAgent],
    checkpointer: BaseCheckpointSaver[Any] | None = None,
    *,
    capabilities: TenantCapabilities | None = None,
) -> CompiledLoop:
    tool_context = tenant_tool_context(resources, tenant)
    capabilities = capabilities or _capabilities(resources, tenant, options, agents, tool_context)
    if options.deploy_playbook:
        master = capabilities.master
        keys = list(master.get("progress_keys") or progress_keys(master))
        capabilities = dataclasses.replace(
            capabilities,
            master={
                **master,
                "tools": [*master["tools"], DEPLOY_TOOL],
                "progress_keys": [*keys, DEPLOYED_KEY],
            },
        )
    return build_agent_loop(
        capabilities.master,
        capabilities=capabilities,
        model=resources.model,
        limits=loop_limits(resources, options),
        sink=resources.terminations,
        checkpointer=checkpointer,
        recall=recall_step(resources, tenant, tool_context),
        gathering=gathering_for(tenant, tool_context),
        proposals=ProposalBook(resources.database.pool),
    )


def _build_agent(
    resources: RuntimeResources,
    tenant: TenantRecord,
    options: GraphOptions,
    agents: dict[str, StoredAgent],
    pinned: StoredAgent,
    checkpointer: BaseCheckpointSaver[Any] | None = None,
    *,
    capabilities: TenantCapabilities | None = None,
) -> CompiledLoop:
    """One of the tenant's own agents as the root of a run, at the version the run is pinned to (its
    sub-agents are the tenant's live ones)."""
    tool_context = tenant_tool_context(resources, tenant)
    capabilities = capabilities or _capabilities(resources, tenant, options, agents, tool_context)
    document = pinned.document
    own = capabilities.sub_agents.get(document.name)
    # The live version is compiled already; an older (or newer) pinned one is compiled for this run.
    spec = own if own is not None and agents.get(document.name) == pinned else compile_document(document)
    tools = {**capabilities.tools, **query_tools(document, tool_context)}
    capabilities = dataclasses.replace(capabilities, tools=tools)
    limits = loop_limits(
        resources, options.model_copy(update={"complexity": options.complexity or "standard"})
    )
    if document.limits.max_depth is not None:
        limits = dataclasses.replace(limits, max_depth=min(limits.max_depth, document.limits.max_depth))
    if document.limits.max_iterations is not None and options.max_iterations is None:
        limits = dataclasses.replace(limits, max_iterations=document.limits.max_iterations)
    return build_agent_loop(
        spec,
        capabilities=capabilities,
        model=resources.model,
        limits=limits,
        sink=resources.terminations,
        checkpointer=checkpointer,
        proposals=ProposalBook(resources.database.pool),
    )


async def candidate_graph(
    resources: RuntimeResources, tenant_id: str, documents: list[AgentDocument]
) -> CompiledLoop:
    """The last of ``documents`` as the root of a run whose sub-agents include the others, none of
    them stored: how a system is tried before it is registered (nothing of it is routable). Not
    cached: a candidate runs for its evaluation only."""
    pool = resources.database.pool
    tenant = await load_tenant(pool, tenant_id)
    live = await live_agents(pool, tenant.tenant_id, tenant.capability_version)
    candidates = {d.name: StoredAgent(f"candidate:{d.name}", 0, d) for d in documents}
    agents = {**live, **candidates}
    options = GraphOptions(tenant_id=tenant.tenant_id)
    graph = _build_agent(resources, tenant, options, agents, candidates[documents[-1].name])
    graph.store = resources.tenant_store(tenant.tenant_id)
    return graph


def gathering_for(tenant: TenantRecord, tool_context: ToolContext) -> Gathering | None:
    """The question for missing information, when the tenant's pack says what its requests need."""
    pack = domain_pack(tenant.domain or "retail")
    stated, missing = pack.goal_entities, pack.missing_information
    if stated is None or missing is None:
        return None

    async def read(answer: str) -> dict[str, Any]:
        return await stated(answer, tool_context)

    return Gathering(missing=missing, read=read)


def recall_step(resources: RuntimeResources, tenant: TenantRecord, tool_context: ToolContext) -> RecallStep:
    """The master loop's first step: the tenant's default entities (read once per compiled graph) and
    what the goal states in its pack's terms, then a reusable village-knowledge pattern for the goal."""
    pack = domain_pack(tenant.domain or "retail")
    defaults: dict[str, Any] | None = None
    check = pack.check_precondition
    precondition = None if check is None else functools.partial(check, tool_context)

    async def recall(goal: str, known: dict[str, Any]) -> Recall:
        nonlocal defaults
        if defaults is None:
            defaults = await implied_entities(pack, tool_context)
        stated = await pack.goal_entities(goal, tool_context) if pack.goal_entities else {}
        context = {key: value for key, value in {**defaults, **stated}.items() if key not in known}
        found = await find_reusable(
            resources.evolution.knowledge,
            resources.settings,
            tenant.tenant_id,
            tenant.domain,
            goal,
            {**context, **known},
            problems=pack.problems,
            precondition=precondition,
        )
        if found is None:
            return Recall(context=context)
        context.update({key: value for key, value in found.values.items() if key not in known})
        return Recall(context=context, reused_pattern=found.model_dump())

    return recall
