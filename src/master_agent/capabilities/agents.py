"""Tenant agents as data: an ``AgentDocument`` is what a tenant writes (JSON, through the API, the CLI or
the builder conversation); it is checked against the tenant's catalogue, listing every problem at once,
and compiled to the same ``AgentSpec`` the packs' agents are, so the one loop builder runs it.

A document names tools from the tenant's catalogue (its pack's tools, the read-only SQL tool, the
evolution tools), its own saved queries (read-only SELECTs run as the tenant's reader role, compiled to
tools), and sub-agents (the pack's or the tenant's own agents).
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError
from langchain_core.tools import BaseTool, StructuredTool
from psycopg_pool import AsyncConnectionPool
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, create_model

from master_agent.capabilities.numerals import digits_read, with_digits
from master_agent.capabilities.spec import AgentSpec, Tier, tier_allows
from master_agent.capabilities.tools.context import ToolContext
from master_agent.capabilities.tools.senses import SENSE_PARAMETER, sensed, sensed_items, senses_parameter
from master_agent.capabilities.tools.sql import ReadOnlySql
from master_agent.capabilities.tools.sql_check import check_select_only
from master_agent.errors import ToolInputError
from master_agent.untrusted.sql_text import MAX_SQL_CHARS, SqlText
from master_agent.untrusted.text_pattern import text_matching

NAME_PATTERN = r"^[a-z][a-z0-9_]{2,63}$"
#: Sizes of one agent document. Every skill is embedded for the front door's discovery and every tool
#: schema goes into the agent's prompt, so each list is bounded (the README's limits table).
MAX_SKILLS = 50
#: Skills of all of one tenant's agents together: the front door embeds each of them.
MAX_TENANT_SKILLS = 1_000
MAX_TOOLS = 40
MAX_SUB_AGENTS = 20
MAX_QUERIES = 20
MAX_REQUIRED_ENTITIES = 20
RiskLevel = Literal["low", "medium", "high"]
ParameterType = Literal["string", "integer", "number", "boolean"]
DEFAULT_INPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"task": {"type": "string", "description": "What to do, in plain words."}},
    "required": ["task"],
}
DEFAULT_OUTPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "answer": {"type": "string", "description": "The answer in plain words."},
        "rows": {"type": "array", "items": {"type": "object"}, "description": "Rows the answer rests on."},
    },
}
_JSON_TYPES: dict[str, Any] = {
    "string": str,
    "integer": int,
    "number": float,
    "boolean": bool,
    "array": list[Any],
    "object": dict[str, Any],
}


#: The placeholder a saved query reads the runtime clock by (bound at each call, never a tool argument).
CLOCK_PARAMETER = "%(now)s"


class SavedQuery(BaseModel):
    """A read-only SELECT the agent runs as a tool of its own (``%(name)s`` binds a parameter)."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=NAME_PATTERN, description="Tool name the agent calls it by.")
    description: str = Field(min_length=1, max_length=500)
    sql: SqlText = Field(min_length=1, max_length=MAX_SQL_CHARS)
    parameters: dict[str, ParameterType] = Field(
        default_factory=dict, description="Parameter name -> JSON type; each is a required tool argument."
    )


class AgentDocumentLimits(BaseModel):
    model_config = ConfigDict(extra="forbid")

    max_iterations: int | None = Field(default=None, ge=1, le=100)
    max_depth: int | None = Field(default=None, ge=0, le=20)
    """Deepest sub-agent level below this agent when it runs on its own."""
    timeout_s: float | None = Field(default=None, gt=0, le=3600)
    """Wall-clock limit of one call of this agent as a sub-agent."""
    max_tool_calls: int | None = Field(default=None, ge=0, le=1000)
    """Tool and sub-agent calls per run; calls beyond it are refused."""
    max_spawns: int | None = Field(default=None, ge=0, le=100)
    """Sub-agent calls per run; spawns beyond it are refused."""
    max_tokens: int | None = Field(default=None, ge=100, le=10_000_000)
    """Model tokens (prompt and answer) per run; past it the agent stops with what it has."""


class AgentDocument(BaseModel):
    """A tenant agent, as stored (one version of it)."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(
        pattern=NAME_PATTERN, description="Unique per tenant; the tool name parents call it by."
    )
    description: str = Field(min_length=1, max_length=500)
    skills: list[Annotated[str, Field(min_length=1, max_length=300)]] = Field(
        default_factory=list,
        max_length=MAX_SKILLS,
        description="What users ask it for, in their words; an agent with skills is offered by the chat front door.",
    )
    domain: str | None = Field(default=None, description="Business domain; default: the tenant's.")
    instructions: str = Field(
        default="", max_length=20_000, description="Role and method (the system prompt)."
    )
    tools: list[str] = Field(
        default_factory=list, max_length=MAX_TOOLS, description="Tool names from the tenant's catalogue."
    )
    sub_agents: list[str] = Field(
        default_factory=list, max_length=MAX_SUB_AGENTS, description="Pack or tenant agents it may call."
    )
    queries: list[SavedQuery] = Field(default_factory=list, max_length=MAX_QUERIES)
    input_schema: dict[str, Any] = Field(
        default_factory=lambda: dict(DEFAULT_INPUT_SCHEMA),
        description="JSON Schema (an object) of the arguments a parent calls it with.",
    )
    output_schema: dict[str, Any] = Field(
        default_factory=lambda: dict(DEFAULT_OUTPUT_SCHEMA),
        description="JSON Schema (an object) of its answer.",
    )
    limits: AgentDocumentLimits = Field(default_factory=AgentDocumentLimits)
    runtime: Literal["loop", "deepagents"] = Field(
        default="loop",
        description="What runs it: the agent loop, or a deepagents harness whose sub-agents are its sub_agents.",
    )
    tool_risk: dict[str, RiskLevel] = Field(
        default_factory=dict,
        max_length=MAX_TOOLS + MAX_QUERIES + MAX_SUB_AGENTS,
        description="Tool name -> risk level (high-risk tools ask for approval).",
    )
    required_entities: list[str] = Field(
        default_factory=list,
        max_length=MAX_REQUIRED_ENTITIES,
        description="Values a chat message must give before it is handed to it.",
    )

    def tool_names(self) -> list[str]:
        """Everything its loop may call, in the order it prefers them."""
        return [*self.tools, *(query.name for query in self.queries), *self.sub_agents]


def agent_document_schema() -> dict[str, Any]:
    """The published JSON Schema of an agent document."""
    return AgentDocument.model_json_schema()


@dataclass(frozen=True)
class AgentProblem:
    """One reason a document is refused."""

    field: str
    message: str

    def as_dict(self) -> dict[str, str]:
        return {"field": self.field, "message": self.message}


@dataclass(frozen=True, kw_only=True)
class AgentCatalogue:
    """What a tenant's agents may name."""

    tier: Tier
    domain: str
    max_depth: int
    tools: Mapping[str, Tier]
    """Tool name -> least tier that may use it."""
    pack_agents: Mapping[str, AgentSpec]
    """The pack's sub-agents."""
    descriptions: Mapping[str, str] = field(default_factory=dict)
    """What each tool and pack agent does (for drafting)."""
    reserved: frozenset[str] = frozenset()
    """Names no tenant agent may take (the pack's master agent)."""
    tenant_agents: Mapping[str, AgentDocument] = field(default_factory=dict)
    """The tenant's live agents by name (the one being changed included: it is replaced)."""
    tables: tuple[str, ...] | None = None
    """Tables the tenant's reader role may read (None: no business data)."""
    data_schema: str | None = None


def parse_document(payload: Any) -> tuple[AgentDocument | None, list[AgentProblem]]:
    """The document, or every shape problem of it (a field per problem)."""
    try:
        return AgentDocument.model_validate(payload), []
    except ValidationError as error:
        problems = [
            AgentProblem(
                ".".join(str(part) for part in item["loc"]) or "agent_spec",
                str(item["msg"]).removeprefix("Value error, "),
            )
            for item in error.errors()
        ]
        return None, problems


def check_document(
    document: AgentDocument, catalogue: AgentCatalogue, *, replacing: str | None = None
) -> list[AgentProblem]:
    """Every reason ``document`` cannot be an agent of the tenant (none: it can). ``replacing``: the name
    of the agent this document is a new version of (its old name is free to keep or give up)."""
    problems: list[AgentProblem] = []
    others = {name: doc for name, doc in catalogue.tenant_agents.items() if name != replacing}
    other_queries = {query.name for doc in others.values() for query in doc.queries}
    skills_held = sum(len(doc.skills) for doc in others.values())
    if skills_held + len(document.skills) > MAX_TENANT_SKILLS:
        problems.append(
            AgentProblem(
                "skills",
                f"this tenant's agents hold {skills_held} skills; {len(document.skills)} more would pass the "
                f"{MAX_TENANT_SKILLS} one tenant may have (each is embedded for the chat front door)",
            )
        )
    name = document.name
    if name in catalogue.pack_agents or name in catalogue.reserved:
        problems.append(AgentProblem("name", f"{name!r} is taken by an agent of the domain pack"))
    elif name in catalogue.tools or name in other_queries:
        problems.append(AgentProblem("name", f"{name!r} is taken by a tool"))
    elif name in others:
        problems.append(AgentProblem("name", f"{name!r} is taken by another agent of this tenant"))
    for index, tool in enumerate(document.tools):
        if tool not in catalogue.tools:
            problems.append(
                AgentProblem(f"tools[{index}]", f"unknown tool {tool!r}; known: {sorted(catalogue.tools)}")
            )
        elif not tier_allows(catalogue.tier, catalogue.tools[tool]):
            needed = catalogue.tools[tool]
            problems.append(
                AgentProblem(
                    f"tools[{index}]", f"{tool!r} needs the {needed} tier; this tenant is {catalogue.tier}"
                )
            )
    for index, query in enumerate(document.queries):
        where = f"queries[{index}]"
        taken = {*catalogue.tools, *catalogue.pack_agents, *catalogue.reserved, name}
        if query.name in taken:
            problems.append(AgentProblem(f"{where}.name", f"{query.name!r} is taken by a tool or agent"))
        elif query.name in other_queries or query.name in others:
            problems.append(AgentProblem(f"{where}.name", f"{query.name!r} is taken by another agent"))
        if sum(1 for other in document.queries if other.name == query.name) > 1:
            problems.append(AgentProblem(f"{where}.name", f"{query.name!r} is used twice"))
        if catalogue.tables is None:
            problems.append(AgentProblem(f"{where}.sql", "this tenant has no business data to query"))
            continue
        try:
            check_select_only(
                query.sql,
                tables=catalogue.tables,
                schema=catalogue.data_schema,
                with_params=bool(query.parameters) or CLOCK_PARAMETER in query.sql,
            )
        except ToolInputError as error:
            problems.append(AgentProblem(f"{where}.sql", str(error)))
    agents = {**{n: _pack_children(spec, catalogue) for n, spec in catalogue.pack_agents.items()}}
    agents.update({n: list(doc.sub_agents) for n, doc in others.items()})
    agents[name] = list(document.sub_agents)
    for index, sub in enumerate(document.sub_agents):
        if sub not in catalogue.pack_agents and sub not in others and sub != name:
            known = sorted({*catalogue.pack_agents, *others})
            problems.append(AgentProblem(f"sub_agents[{index}]", f"unknown agent {sub!r}; known: {known}"))
        elif sub in catalogue.pack_agents and not tier_allows(
            catalogue.tier, catalogue.pack_agents[sub].get("min_tier", "free")
        ):
            needed = catalogue.pack_agents[sub].get("min_tier", "free")
            problems.append(
                AgentProblem(
                    f"sub_agents[{index}]",
                    f"{sub!r} needs the {needed} tier; this tenant is {catalogue.tier}",
                )
            )
    if document.runtime == "deepagents":
        for index, sub in enumerate(document.sub_agents):
            nested = agents.get(sub) or []
            if nested and sub != name:
                problems.append(
                    AgentProblem(
                        f"sub_agents[{index}]",
                        f"{sub!r} calls sub-agents of its own ({', '.join(nested)}); a deepagents harness "
                        "spawns one level, so they would never run",
                    )
                )
    cycle = _cycle_from(name, agents)
    if cycle:
        problems.append(AgentProblem("sub_agents", "sub-agent cycle: " + " -> ".join(cycle)))
    else:
        depth = _depth(name, agents)
        if depth > catalogue.max_depth:
            problems.append(
                AgentProblem(
                    "sub_agents",
                    f"sub-agents nest {depth} levels deep; MASTER_AGENT_MAX_DEPTH allows {catalogue.max_depth}",
                )
            )
    if document.limits.max_depth is not None and document.limits.max_depth > catalogue.max_depth:
        problems.append(
            AgentProblem(
                "limits.max_depth",
                f"{document.limits.max_depth} is beyond MASTER_AGENT_MAX_DEPTH ({catalogue.max_depth})",
            )
        )
    for key in ("input_schema", "output_schema"):
        problems.extend(AgentProblem(key, message) for message in schema_problems(getattr(document, key)))
    callable_names = set(document.tool_names())
    for tool in document.tool_risk:
        if tool not in callable_names:
            problems.append(AgentProblem(f"tool_risk.{tool}", f"{tool!r} is not one of the agent's tools"))
    return problems


def schema_problems(schema: dict[str, Any]) -> list[str]:
    """Why ``schema`` is not a JSON Schema of an object with named properties (none: it is)."""
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as error:
        path = "/".join(str(part) for part in error.path)
        return [f"not a valid JSON Schema: {error.message}" + (f" (at {path})" if path else "")]
    problems = []
    if schema.get("type") != "object":
        problems.append('must describe an object ("type": "object")')
    properties = schema.get("properties")
    if not isinstance(properties, dict) or not properties:
        problems.append("must name at least one property")
    else:
        missing = [key for key in schema.get("required") or [] if key not in properties]
        if missing:
            problems.append(f"required names no property: {missing}")
    return problems


def _pack_children(spec: AgentSpec, catalogue: AgentCatalogue) -> list[str]:
    return [name for name in spec["tools"] if name in catalogue.pack_agents]


def _cycle_from(start: str, agents: Mapping[str, list[str]]) -> list[str]:
    """The first sub-agent cycle through ``start`` (empty: none)."""
    path: list[str] = []

    def visit(name: str) -> list[str]:
        if name in path:
            return [*path[path.index(name) :], name]
        path.append(name)
        for child in agents.get(name, []):
            if child == start or child not in path:
                found = visit(child)
                if found and start in found:
                    return found
        path.pop()
        return []

    return visit(start)


def _depth(name: str, agents: Mapping[str, list[str]]) -> int:
    """Levels of sub-agents below ``name`` (0: it calls none)."""
    children = agents.get(name, [])
    return 1 + max(_depth(child, agents) for child in children) if children else 0


def model_from_schema(name: str, schema: dict[str, Any]) -> type[BaseModel]:
    """A pydantic model for a checked object schema: its properties typed by their JSON type (others
    ``Any``), required ones required, the rest optional; a text's ``pattern`` enforced; descriptions
    kept for the model to read."""
    fields: dict[str, Any] = {}
    required = set(schema.get("required") or [])
    for key, prop in (schema.get("properties") or {}).items():
        prop = prop if isinstance(prop, dict) else {}
        kind = prop.get("type")
        annotation: Any = _JSON_TYPES.get(kind, Any) if isinstance(kind, str) else Any
        description = prop.get("description")
        # A text's pattern binds what any writer answers ("never uses the words ..."), checked with a time
        # limit: the tenant wrote it, and look-aheads need a backtracking engine.
        pattern = prop.get("pattern") if kind == "string" and isinstance(prop.get("pattern"), str) else None
        if pattern is not None:
            annotation = Annotated[annotation, AfterValidator(text_matching(pattern))]
        if key in required:
            fields[key] = (annotation, Field(description=description))
        else:
            fields[key] = (annotation | None, Field(default=None, description=description))
    title = re.sub(r"(^|_)([a-z])", lambda match: match.group(2).upper(), name)
    model: type[BaseModel] = create_model(title, __config__=ConfigDict(extra="ignore"), **fields)
    return model


def compile_document(document: AgentDocument) -> AgentSpec:
    """The ``AgentSpec`` the loop builder compiles (its saved queries come from ``query_tools``)."""
    spec = AgentSpec(
        name=document.name,
        description=document.description,
        system_prompt=document.instructions or document.description,
        input_schema=model_from_schema(f"{document.name}_input", document.input_schema),
        output_schema=model_from_schema(f"{document.name}_output", document.output_schema),
        tools=document.tool_names(),
        skills=list(document.skills),
        required_entities=list(document.required_entities),
    )
    if document.domain:
        spec["domain"] = document.domain
    limits = {
        key: value
        for key, value in document.limits.model_dump().items()
        if key != "max_depth" and value is not None
    }
    if limits:
        spec["limits"] = limits  # type: ignore[typeddict-item]
    if document.runtime != "loop":
        spec["runtime"] = document.runtime
    return spec


def query_tools(document: AgentDocument, context: ToolContext) -> dict[str, BaseTool]:
    """The document's saved queries as tools bound to the tenant's reader role."""
    reader = ReadOnlySql(context)
    tools: dict[str, BaseTool] = {}
    for query in document.queries:
        run = _query_runner(reader, query.sql, bound=bool(query.parameters), context=context)
        args = create_model(
            f"{query.name}_args",
            **{key: (_JSON_TYPES[kind], ...) for key, kind in query.parameters.items()},  # type: ignore[call-overload]
        )
        tools[query.name] = StructuredTool.from_function(
            coroutine=run, name=query.name, description=query.description, args_schema=args
        )
    return tools


def _query_runner(
    reader: ReadOnlySql, sql: str, *, bound: bool, context: ToolContext
) -> Callable[..., Awaitable[dict[str, Any]]]:
    # ``%(now)s`` reads the runtime clock (``MASTER_AGENT_NOW`` moves it), bound at each call: a rule
    # on "the last 90 days" must not read the database server's clock, nor take "now" from the model.
    clocked = CLOCK_PARAMETER in sql
    # ``%(senses)s``: the categories the SQL names that the call's texts mention by meaning (``senses``).
    items = sensed_items(sql) if SENSE_PARAMETER in sql else []
    # ``%(x_in_digits)s``: the parameter ``x`` with its numbers in words or suffixes written in digits
    # ("fifteen thousand dollars" is "$15000"), for the SQL that compares amounts (``numerals``).
    digits = digits_read(sql)

    async def run(**parameters: Any) -> dict[str, Any]:
        if clocked:
            parameters = {**parameters, "now": context.now()}
        if digits:
            parameters = with_digits(sql, parameters)
        if SENSE_PARAMETER in sql:
            text = "\n".join(str(v) for v in parameters.values() if isinstance(v, str))
            parameters = {
                **parameters,
                "senses": senses_parameter(await sensed(context.embedder, text, items)),
            }
        bound_now = bound or clocked or SENSE_PARAMETER in sql or bool(digits)
        return (await reader.query(sql, parameters if bound_now else None)).model_dump()

    return run


@dataclass(frozen=True)
class StoredAgent:
    """One version of a tenant agent, as stored."""

    assistant_id: str
    version: int
    document: AgentDocument


LIVE_AGENTS = """
SELECT assistant_id::text, version, agent_spec FROM assistants
WHERE tenant_id = %s AND agent_spec IS NOT NULL ORDER BY agent_name
"""
AGENT_VERSION = """
SELECT v.assistant_id::text, v.version, v.agent_spec FROM assistant_versions v
WHERE v.tenant_id = %(tenant)s AND v.assistant_id::text = %(assistant)s AND v.agent_spec IS NOT NULL
  AND v.version = COALESCE(
      %(version)s, (SELECT a.version FROM assistants a WHERE a.assistant_id = v.assistant_id))
"""
#: Live agents per (tenant, capability version): a change bumps the version, so an entry never goes stale.
_live: dict[tuple[str, int], dict[str, StoredAgent]] = {}
#: Versions are immutable: each is read once.
_versions: dict[tuple[str, str, int], StoredAgent] = {}


async def live_agents(
    pool: AsyncConnectionPool[Any], tenant_id: str, capability_version: int
) -> dict[str, StoredAgent]:
    """The tenant's agents at their live versions, by name."""
    key = (tenant_id, capability_version)
    if key not in _live:
        async with pool.connection() as conn:
            rows = await (await conn.execute(LIVE_AGENTS, (tenant_id,))).fetchall()
        for stale in [old for old in _live if old[0] == tenant_id]:
            del _live[stale]
        _live[key] = {
            row["agent_spec"]["name"]: StoredAgent(
                row["assistant_id"], int(row["version"]), AgentDocument.model_validate(row["agent_spec"])
            )
            for row in rows
        }
    return _live[key]


async def agent_version(
    pool: AsyncConnectionPool[Any], tenant_id: str, assistant_id: str, version: int | None
) -> StoredAgent | None:
    """One version of a tenant agent (None: the live one); None when the tenant has no such agent."""
    if version is not None and (tenant_id, assistant_id, version) in _versions:
        return _versions[(tenant_id, assistant_id, version)]
    async with pool.connection() as conn:
        row = await (
            await conn.execute(
                AGENT_VERSION, {"tenant": tenant_id, "assistant": assistant_id, "version": version}
            )
        ).fetchone()
    if row is None:
        return None
    stored = StoredAgent(
        row["assistant_id"], int(row["version"]), AgentDocument.model_validate(row["agent_spec"])
    )
    _versions[(tenant_id, assistant_id, stored.version)] = stored
    return stored
