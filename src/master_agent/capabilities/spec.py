"""Declarative agent specs. The master agent and every sub-agent are one of these, compiled by
``runtime.loop.build_agent_loop``."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, NotRequired

from pydantic import BaseModel
from typing_extensions import TypedDict

Tier = Literal["free", "pro", "enterprise"]
Risk = Literal["low", "medium", "high"]
"""How careful the runtime is with a tool's call (``runtime.proposals``)."""
TIERS: tuple[Tier, ...] = ("free", "pro", "enterprise")


#: The least time between two firings of a tenant's cron or playbook schedule, by tier: the configured
#: minimum (``MASTER_AGENT_CRON_MIN_INTERVAL_S``) raised to this floor; a configured 0 lifts both.
TIER_CRON_FLOOR_S: dict[Tier, int] = {"free": 3600, "pro": 900, "enterprise": 300}


def cron_min_interval(tier: Tier, configured_s: int) -> int:
    """Seconds a tenant of ``tier`` must leave between two firings of one schedule."""
    return 0 if configured_s == 0 else max(configured_s, TIER_CRON_FLOOR_S[tier])


def tier_allows(tenant_tier: Tier, required: Tier) -> bool:
    """True when a tenant of ``tenant_tier`` may use something that needs ``required``."""
    return TIERS.index(tenant_tier) >= TIERS.index(required)


class AgentLimits(TypedDict, total=False):
    """Per-agent overrides of the loop's limits (each defaults to the process settings)."""

    max_iterations: int
    """Agent turns before the loop escalates."""
    timeout_s: float
    """Wall-clock limit of one call of this agent as a sub-agent."""
    max_tool_calls: int
    """Tool and sub-agent calls per run of this agent; calls beyond it are refused."""
    max_spawns: int
    """Sub-agent calls per run of this agent; spawns beyond it are refused."""
    max_tokens: int
    """Model tokens (prompt and answer) per run of this agent; past it the loop stops (escalates)."""


class AgentSpec(TypedDict):
    """One agent: what it is for, what it takes and returns, and what it may call."""

    name: str
    """Unique name; also the tool name its parent calls it by."""
    description: str
    """One sentence a parent model reads to decide when to call it."""
    system_prompt: str
    """Role and method; the loop adds termination rules, the context box and the output schema."""
    input_schema: type[BaseModel]
    """Arguments of the tool its parent calls (also its own context)."""
    output_schema: type[BaseModel]
    """Shape of its final answer, returned as the ``data`` of its envelope."""
    tools: list[str]
    """Plain tools and sub-agents by name, in the order the agent should prefer them."""
    limits: NotRequired[AgentLimits]
    """Overrides of the loop limits for this agent."""
    runtime: NotRequired[Literal["loop", "deepagents"]]
    """What runs it: our agent loop (default) or a ``deepagents`` harness (``runtime.deep_agents``)."""
    progress_keys: NotRequired[list[str]]
    """Findings that make up progress; default: the output schema's required fields."""
    research: NotRequired[bool]
    """True for sub-agents that gather evidence; the parallel_research variant runs them all at once
    before the master agent's first turn."""
    min_tier: NotRequired[Tier]
    """Lowest tenant tier that gets this agent as a sub-agent (default ``free``)."""
    skills: NotRequired[list[str]]
    """What it can be asked to do, in a user's words. An agent with skills is one the chat front door
    can hand a message to; one without is only a part of another agent."""
    domain: NotRequired[str]
    """Business domain (default: its pack's)."""
    tool_risks: NotRequired[dict[str, Risk]]
    """Risk of its tools by name, replacing what each tool declares (``runtime.proposals``): low runs,
    medium asks to approve a draft, high stores a preview and ends the flow."""
    required_entities: NotRequired[list[str]]
    """Values a message must give (or the tenant imply) before it is handed to this agent, e.g.
    ``store_id``; the front door asks for a missing one."""
    ask_below_confidence: NotRequired[float]
    """A final answer less sure than this ends as a question to the user (seed 002: ask when
    confidence is below 70 %), with the answer kept beside it."""


@dataclass(frozen=True)
class RoutingExample:
    """A labelled message the front door's offline intent classifier learns from."""

    text: str
    action: Literal["CREATE", "UPDATE", "EXECUTE", "QUERY", "AMBIGUOUS"]
    query_kind: str | None = None
    """For QUERY: the query handler that answers it (a built-in one or the pack's own)."""
    domain: str | None = None


def routing_examples(
    action: Literal["CREATE", "UPDATE", "EXECUTE", "QUERY", "AMBIGUOUS"],
    texts: str,
    query_kind: str | None = None,
    domain: str | None = None,
) -> list[RoutingExample]:
    """One example per non-blank line of ``texts``, all with the same label."""
    return [RoutingExample(line.strip(), action, query_kind, domain) for line in texts.strip().splitlines()]


@dataclass(frozen=True, kw_only=True)
class EntityOrder:
    """An order of an entity's members the tenant's data settles, so that words naming one of them by
    a property ("our newest store", "the longest-running shop") name that member: read by a query,
    never guessed."""

    entity: str
    """The entity it orders (``store_id``)."""
    query: str
    """SQL with columns ``member`` and ``value`` (one row per member)."""
    measure: str
    """What ``value`` is, in the user's words ("opening date", "staff count"), for the answer's claim."""
    high: tuple[str, ...] = ()
    """Words naming the member with the highest value ("newest" for an opening date)."""
    low: tuple[str, ...] = ()
    """Words naming the member with the lowest value ("oldest")."""


@dataclass(frozen=True, kw_only=True)
class DataMetric:
    """A figure of a tenant's data the front door answers questions about with one SQL query."""

    name: str
    """How users say it, e.g. ``attach rate``."""
    table: str
    expression: str
    """SQL aggregate over ``table`` giving the figure."""
    time_column: str | None
    """None: a snapshot (the table keeps no history), answered as it is now, for any window."""
    unit: Literal["ratio", "count", "currency", "number"] = "number"
    currency: str = "USD"
    """The currency a ``currency`` figure's amounts are in (the service's ``MASTER_AGENT_CURRENCY``)."""
    aliases: tuple[str, ...] = ()
    filters: dict[str, str] = field(default_factory=dict)
    """Entity name -> column: a question naming the entity (``store_id``) is narrowed to it."""
    observation_noun: str = "rows"
    description: str = ""
    """What the figure means in a user's words, to place a question that names none by meaning."""
    lower_is_better: bool = False
    """The best entity is the one with the lowest figure (a refund rate)."""
    groups: dict[str, tuple[str, str]] = field(default_factory=dict)
    """Group name -> (entity, SQL with columns ``value`` and ``member``): a question naming a group's
    value ("our east stores") is narrowed to its members; the values are read from the data."""
    money: str | None = None
    """The figure that is this count in money (the sales count's is the total revenue): a question
    asking the count "in dollars" or "in money terms" is asked of that figure."""
    average: str | None = None
    """The figure that is this total per observation (the device revenue's is the average device
    amount): "the average device revenue" is asked of it; an average of a total without one is a
    figure the data does not have, never answered with the total."""
    orders: tuple[EntityOrder, ...] = ()
    """Orders of the entities the figure filters by, to read "our newest store" as the store it is."""
    members: dict[str, str] = field(default_factory=dict)
    """Entity -> the table listing its members, one row each keyed by the entity's column (``store_id``
    -> ``stores``): a member named by a description ("the store we opened in summer 2019", "the
    flagship") is read against that table's columns, and asked about when they do not settle it."""


class MissingInformation(BaseModel):
    """Critical information a request lacks (seed 002's "ask the user" trigger): the fields the user
    must give, and the question that asks for them."""

    fields: list[str]
    question: str
