"""The meta-orchestrator's artifacts (seed 004 section 5): versioned, validated documents, each owned by
one role. ``SystemSpec`` is the abstract source of truth; ``CompiledSpec`` is what the compiler made of
it. Payloads are stored by the state broker (``meta.broker``); graph state carries references only.

Every artifact has a bounded plain-text ``summary()`` (what non-owners and workers read) and its
sections can be read by dotted path (``read_section``).
"""

from __future__ import annotations

import json
import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from master_agent.capabilities.agents import NAME_PATTERN
from master_agent.errors import InputError
from master_agent.untrusted.sql_text import MAX_SQL_CHARS, SqlText

RuntimeTarget = Literal["langgraph", "deepagent", "hybrid"]
TopologyType = Literal["DAG", "conditional", "recursive", "supervisor-tree", "swarm", "hybrid"]
Role = Literal["architect", "prompt_policy", "tooling", "eval", "optimizer", "ops", "compiler"]
ROLES: tuple[Role, ...] = ("architect", "prompt_policy", "tooling", "eval", "optimizer", "ops", "compiler")
ArtifactType = Literal[
    "SystemSpec",
    "PromptPack",
    "ToolContract",
    "EvalSpec",
    "ExperimentReport",
    "ExperimentSpec",
    "PromotionDecision",
    "TelemetrySpec",
    "SLOReport",
    "CompiledSpec",
    "BugReport",
]
ValueType = Literal["string", "integer", "number", "boolean", "array", "object"]
#: Characters of an artifact summary (about 500 tokens, seed 004 section 11.2).
SUMMARY_CHARS = 2000

#: Who may write what (seed 004 section 4.1). The broker refuses any other writer, whatever it is told.
OWNERS: dict[ArtifactType, Role] = {
    "SystemSpec": "architect",
    "PromptPack": "prompt_policy",
    "ToolContract": "tooling",
    "EvalSpec": "eval",
    "ExperimentReport": "eval",
    "BugReport": "eval",
    "ExperimentSpec": "optimizer",
    "PromotionDecision": "optimizer",
    "TelemetrySpec": "ops",
    "SLOReport": "ops",
    "CompiledSpec": "compiler",
}
#: Artifacts each role reads whole besides its own (section 4.1); anything else it reads as a summary.
FULL_READS: dict[Role, frozenset[ArtifactType]] = {
    # Beyond the seed's table: owners read the PromotionDecisions they decide (section 9), Eval runs
    # the compiled system, Ops measures the eval's runs.
    "architect": frozenset({"EvalSpec", "ToolContract", "BugReport", "PromotionDecision"}),
    "prompt_policy": frozenset({"SystemSpec", "ToolContract", "BugReport", "PromotionDecision"}),
    "tooling": frozenset({"SystemSpec", "BugReport", "PromotionDecision"}),
    "eval": frozenset({"SystemSpec", "PromptPack", "ToolContract", "CompiledSpec", "PromotionDecision"}),
    "optimizer": frozenset(OWNERS),
    "ops": frozenset({"SystemSpec", "ToolContract", "ExperimentReport", "PromotionDecision"}),
    "compiler": frozenset({"SystemSpec", "PromptPack", "ToolContract"}),
}


class Artifact(BaseModel):
    """Base of every artifact: strict about unknown fields, so a typo is an error, not a lost value."""

    model_config = ConfigDict(extra="forbid")

    def summary(self) -> str:
        """What a non-owner reads: the artifact's key facts, bounded to ``SUMMARY_CHARS``."""
        return _bounded(json.dumps(self.model_dump(mode="json", exclude_defaults=True), sort_keys=True))


def _bounded(text: str) -> str:
    return text if len(text) <= SUMMARY_CHARS else text[: SUMMARY_CHARS - 1] + "…"


# --- SystemSpec (section 5.1) -------------------------------------------------------------------


class StateKey(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=r"^[a-z][a-z0-9_]{0,63}$")
    type: ValueType = "string"
    reducer: Literal["replace", "append", "merge"] = "replace"
    description: str = ""
    external: bool = False
    """Given by the caller (an input of the system), not written by a component."""
    avoid: list[str] = Field(default_factory=list)
    """Words or characters its text never contains ("The reply never uses the words ..."): the output
    schema's pattern refuses a value holding one, whoever wrote it."""


def avoided_pattern(words: list[str]) -> str:
    """A regular expression (Python and ECMA alike) matching a text holding none of ``words``, in any case."""
    alternatives = "|".join(
        "".join(
            f"[{c.lower()}{c.upper()}]" if c.lower() != c.upper() else re.escape(c).replace("\\ ", r"\s+")
            for c in word
        )
        for word in words
    )
    return rf"^(?![\s\S]*(?:{alternatives}))"


class RoutingRule(BaseModel):
    model_config = ConfigDict(extra="forbid")

    condition: str = Field(min_length=1, description="When it applies, e.g. 'urgency == high'.")
    target: str = Field(description="The component it routes to.")


class ComponentBudget(BaseModel):
    model_config = ConfigDict(extra="forbid")

    max_steps: int = Field(ge=1, le=1000)
    max_tool_calls: int = Field(ge=0, le=1000)
    max_tokens: int = Field(default=20_000, ge=100, le=2_000_000)


class Component(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str = Field(pattern=r"^[a-z][a-z0-9_]{1,40}$")
    role: str = Field(min_length=1, max_length=500, description="What it does, one sentence.")
    inputs: list[str] = Field(default_factory=list, description="State keys it takes.")
    outputs: list[str] = Field(default_factory=list, description="State keys it returns.")
    state_reads: list[str] = Field(default_factory=list)
    state_writes: list[str] = Field(default_factory=list)
    routing_rules: list[RoutingRule] = Field(default_factory=list)
    tool_usage: list[str] = Field(default_factory=list, description="Tools it calls, by contract name.")
    memory_model: Literal["none", "short_term", "long_term"] = "short_term"
    budget: ComponentBudget | None = None
    max_iterations: int | None = Field(default=None, ge=1, le=100)
    """Its loop breaker: turns before it stops (None: unbounded unless safety_reliability names one)."""
    decision: list[Rule] = Field(default_factory=list)
    """Rules it decides its output by, compiled into its tool (a comparison on the parsed amount)."""


class Edge(BaseModel):
    model_config = ConfigDict(extra="forbid")

    source: str
    target: str


class ComponentContract(BaseModel):
    """An artifact handoff between components: ``producer`` writes ``key``, ``consumer`` reads it."""

    model_config = ConfigDict(extra="forbid")

    producer: str
    consumer: str
    key: str


class Contracts(BaseModel):
    model_config = ConfigDict(extra="forbid")

    tools: list[str] = Field(default_factory=list, description="Tools the system relies on, by name.")
    components: list[ComponentContract] = Field(default_factory=list)


class SafetyReliability(BaseModel):
    model_config = ConfigDict(extra="forbid")

    loop_breakers: dict[str, int] = Field(default_factory=dict, description="Component -> max turns.")
    timeout_s: float = Field(default=120.0, gt=0, le=3600)
    spawn_cap: int = Field(default=10, ge=0, le=100)
    fallbacks: dict[str, str] = Field(default_factory=dict, description="Component -> what it falls back to.")


class FailureMode(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    detection: str
    remediation: str


class ConditionalEdge(BaseModel):
    model_config = ConfigDict(extra="forbid")

    source: str
    condition: str
    targets: dict[str, str] = Field(description="Condition value -> target component.")


class LangGraphExt(BaseModel):
    model_config = ConfigDict(extra="forbid")

    reducers: dict[str, str] = Field(default_factory=dict)
    conditional_edges: list[ConditionalEdge] = Field(default_factory=list)
    checkpointer_config: dict[str, Any] = Field(default_factory=lambda: {"kind": "postgres"})
    interrupt_points: list[str] = Field(default_factory=list)


class SpawnPolicy(BaseModel):
    model_config = ConfigDict(extra="forbid")

    max_depth: int | None = Field(default=None, ge=0, le=10)
    max_breadth: int | None = Field(default=None, ge=1, le=50)
    termination: str = "stop when the critic accepts or the budget ends"


class DeepAgentExt(BaseModel):
    model_config = ConfigDict(extra="forbid")

    planner_config: dict[str, Any] = Field(default_factory=lambda: {"granularity": "task"})
    critic_config: dict[str, Any] = Field(default_factory=lambda: {"reflection_depth": 1})
    spawn_policy: SpawnPolicy = Field(default_factory=SpawnPolicy)
    escalation_rules: list[str] = Field(default_factory=list)


class GraphSide(BaseModel):
    model_config = ConfigDict(extra="forbid")

    node_id: str
    output_schema: dict[str, ValueType] = Field(default_factory=dict)
    state_writes: list[str] = Field(default_factory=list)


class RecursionSide(BaseModel):
    model_config = ConfigDict(extra="forbid")

    entry_point: Literal["planner", "worker"] = "planner"
    component: str
    input_schema: dict[str, ValueType] = Field(default_factory=dict)
    state_reads: list[str] = Field(default_factory=list)


class StateOwnership(BaseModel):
    model_config = ConfigDict(extra="forbid")

    shared_keys: dict[str, Literal["replace", "append", "merge"]] = Field(default_factory=dict)
    graph_owned: list[str] = Field(default_factory=list)
    recursion_owned: list[str] = Field(default_factory=list)


class BoundaryFailureProtocol(BaseModel):
    model_config = ConfigDict(extra="forbid")

    recursion_timeout_s: float = Field(default=60.0, gt=0, le=3600)
    recursion_max_steps: int = Field(default=20, ge=1, le=1000)
    on_failure: str = Field(default="escalate", description="A fallback node id, 'escalate' or 'fail'.")


class BoundaryContract(BaseModel):
    """One crossing between the graph zone and the recursion zone (seed 004 section 7.2)."""

    model_config = ConfigDict(extra="forbid")

    id: str
    graph_side: GraphSide | None = None
    recursion_side: RecursionSide | None = None
    state_ownership: StateOwnership = Field(default_factory=StateOwnership)
    failure_protocol: BoundaryFailureProtocol = Field(default_factory=BoundaryFailureProtocol)
    trace_propagation: bool = True
    shared_trace_id_key: str = "trace_id"


class HybridExt(BaseModel):
    model_config = ConfigDict(extra="forbid")

    boundary_map: dict[str, Literal["graph", "recursion"]] = Field(default_factory=dict)
    boundary_contracts: list[BoundaryContract] = Field(default_factory=list)
    failure_propagation: str = "a recursion-zone failure returns an error envelope to its graph node"
    shared_state_protocol: str = "only shared_keys cross a boundary, merged by their strategy"


RequirementKind = Literal["threshold", "route", "escalation", "output_field", "tone", "forbidden"]
RuleValue = str | bool | int | float | None


class Comparison(BaseModel):
    """A comparison of a quantity read from the input ("over $500": ``> 500 $``)."""

    model_config = ConfigDict(extra="forbid")

    op: Literal[">", ">=", "<", "<="]
    value: float
    unit: str = Field(
        default="",
        description="'$', 'EUR', '%', 'clock' (minutes after midnight: 'before 14:00'), or the noun after the number.",
    )
    total: bool = False
    """The request says the quantity is a total: the input's "Total" line, else every amount of the
    unit in the input summed (its tax lines too)."""
    subtotal: bool = False
    """The request compares an amount before tax ("a subtotal over $500", "$500 before tax"): the
    input's "Subtotal" line, else its "Total" less its tax lines, else its amounts less its tax lines."""
    since: str | None = None
    """A time between dates: the quantity is the days from the input's date written after these
    words ("delivered") to the later date (``until``)."""
    until: str | None = None
    """The later date's label in the input ("ticket date"); none: the runtime clock."""
    label: str | None = None
    """The words the request names the quantity by ("on-hand stock", "expected downtime"): where the
    input writes no amount of the unit, the quantity is what it writes after its label (or after the
    unit's own noun: "Services: a, b, c" is 3 services, "Hours Mon-Sun: 8, 9" lists hours)."""
    each: bool = False
    """"any single day of more than 12 hours", "alters a table of at least 5,000,000 rows" (of a
    request saying "every table it alters"): one of the listed values compares so."""
    every: bool = False
    """"when every table it alters has fewer than 5,000,000 rows": all of the listed values compare so."""
    change: Literal["fall", "rise"] | None = None
    """A change between two values ("coverage falls by more than 2.0 points"): the quantity is the
    number after "<label> before" less the one after "<label> after" (a fall), or the other way."""
    of: str | None = None
    """The label of the amount a percentage is of ("below 80% of the budget"): the quantity is the
    amount after ``label`` as a percentage of the amount after this label."""
    per: Literal["year", "quarter", "month", "fortnight", "week", "day"] | None = None
    """The period the request says an amount of money is per ("the annual value", "$3,000 a month"):
    an amount the input writes per another period ("$8,500/mo") is read per this one (times 12)."""
    times: str | None = None
    """The output field counting the units of what the quantity is the worth of ("an order worth more
    than $25,000" of an order of ``quantity`` units): where the input writes its amount per unit
    ("unit cost: $260.00", "$4 each"), the quantity is that amount times the field's decided value."""


class Operand(BaseModel):
    """A number of a computed value: written in the request, or read from the input after a label."""

    model_config = ConfigDict(extra="forbid")

    number: float | None = None
    label: str | None = None
    """The words naming it ("current balance"): the input's number after them (0 when it writes the
    label with no number: "Payments: none"; unknown when it writes no such label)."""
    total: bool = False
    """Every number listed after the label, summed ("the payments listed", "total hours")."""
    computed: Computation | None = None
    """A value computed itself: the bracket of a formula ("(requested limit - current limit) /
    current limit x 100")."""


class Computation(BaseModel):
    """A value computed from the input's numbers: ``left - right``, ``left + right``, ``left * right``,
    ``left / right`` (null when ``right`` is 0), ``left`` above ``right`` (the part over it, never
    below 0: "total hours above 40"), or ``days_after``: the date written after ``left``'s label moved
    by ``right`` days, as an ISO date ("90 days after the start date"; a date before it is a negative
    number of days), ``months_after``: moved by ``right`` calendar months (the same day number, clipped
    to the month's last day: "the same day one year after the last service"), or ``days_between``: the
    days from the date after ``left``'s label to the one after ``right``'s (the input's first date
    range where it writes neither label: "Freeze from 2024-06-01 to 2024-06-30"), or ``date_minus`` /
    ``date_plus``: the date after ``left``'s label moved back or on by the time the input writes after
    ``right``'s ("renewal date minus the notice period" of "Notice period: 3 months": calendar months
    clipped to the month's last day, else days or weeks). A number is then capped and rounded as the
    request says."""

    model_config = ConfigDict(extra="forbid")

    op: Literal[
        "-", "+", "*", "/", "above", "days_after", "months_after", "days_between", "date_minus", "date_plus"
    ]
    left: Operand
    right: Operand
    inclusive: bool = False
    """Of ``days_between``: both ends counted ("from the first to the last day, both included": 1 to
    30 June is 30 days)."""
    cap: float | None = None
    """The most it may be ("capped at $300", "at most 40")."""
    digits: int | None = Field(default=None, ge=0, le=6)
    """Rounded to this many decimals ("rounded to one decimal place")."""


Operand.model_rebuild()  # its ``computed`` names the class declared after it


class Rule(BaseModel):
    """One line of a decision: when it applies, the output ``field`` gets ``value``. Its conditions
    (``when``, ``also``, ``mentions``, ``mentions_too``, ``absent``) must all hold; alternatives are
    separate rules."""

    model_config = ConfigDict(extra="forbid")

    field: str
    value: RuleValue = None
    when: Comparison | None = None
    """Applies when the input's quantity compares so."""
    also: list[Comparison] = Field(default_factory=list)
    """Further comparisons that must all hold too ("between $100 and $500", "over $5,000 and ...")."""
    mentions: list[str] = Field(default_factory=list)
    """Applies when the input mentions (not negated: "no receipt") any of these."""
    mentions_too: list[str] = Field(default_factory=list)
    """Applies only when the input also mentions any of these: a second list that must hold with the
    first ("write or admin access to the production database or the payments ledger")."""
    absent: list[str] = Field(default_factory=list)
    """Applies when the input mentions none of these ("a vendor not on the list (A, B, C)")."""
    computed: Computation | None = None
    """The value is computed from the input's numbers (``value`` is then unused)."""
    given: dict[str, RuleValue] = Field(default_factory=dict)
    """Applies when the answer's other fields have these values, as their own rules decide them
    ("every sev1 pages the on-call engineer": page true given severity "sev1")."""
    copy_of: str | None = None
    """The value is the identifier the input writes after this label ("order": "Order #A-20931" gives
    "A-20931"); null when it writes none."""
    within: dict[str, str] = Field(default_factory=dict)
    """The input label a mention is read after, by item ("enterprise": "plan" reads "Plan: enterprise",
    not a claim inside the message); the whole input where it writes no such label."""
    weekdays: list[int] = Field(default_factory=list)
    """Applies when the input's day (the first date it writes) falls on one of these ISO weekdays,
    1 Monday to 7 Sunday ("Monday to Friday", "on a Saturday or Sunday")."""
    differ: list[str] = Field(default_factory=list)
    """Applies when the input writes different values after each of these nouns ("a swap between
    nurses on different bands": "band 5" and "band 7")."""
    default: bool = False
    """The value when no other rule of the field applies."""


class Requirement(BaseModel):
    """One constraint of the request, traced to its words (``text`` is ``request[start:end]``)."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(pattern=r"^[a-z0-9_]{1,32}$")
    kind: RequirementKind
    text: str = Field(min_length=1, max_length=2000)
    start: int = Field(ge=0)
    end: int = Field(ge=0)
    fields: list[str] = Field(default_factory=list, description="Output fields it decides.")
    rules: list[Rule] = Field(default_factory=list)
    buildable: bool = True
    """Compiled into the system's tools; False: it needs a model (``why_not`` says why)."""
    why_not: str | None = None
    avoid: list[str] = Field(default_factory=list)
    """Words or characters the text of its field never contains ("never uses the words "demand" or
    "failure"", "never contain an exclamation mark": "!")."""
    loose: list[str] = Field(default_factory=list)
    """Conditions read as words that stand apart in the request ("international held customs" from
    "International shipments held at customs"): built as "all these words", which is no phrase an
    input writes, so the gate reports the requirement as not met (judging it needs a model)."""
    unread: list[str] = Field(default_factory=list)
    """Alternatives of its conditions no built rule reads ("already received same calendar year" of
    "unless the customer is on the enterprise plan or already received a discount in the same calendar
    year"): its rules were built without them, so the gate reports the requirement as not met."""


class SystemSpec(Artifact):
    """The canonical architecture of an agent system."""

    version: int = Field(default=1, ge=1)
    name: str = Field(pattern=NAME_PATTERN, description="The system's name; its agent is registered by it.")
    description: str = Field(min_length=1, max_length=500)
    skills: list[str] = Field(default_factory=list, description="What users ask it for, in their words.")
    runtime_target: RuntimeTarget
    topology_type: TopologyType
    state_schema: list[StateKey]
    components: list[Component] = Field(min_length=1)
    entry: str
    edges: list[Edge] = Field(default_factory=list)
    outputs: list[str] = Field(default_factory=list, description="State keys the system answers with.")
    contracts: Contracts = Field(default_factory=Contracts)
    safety_reliability: SafetyReliability = Field(default_factory=SafetyReliability)
    failure_modes: list[FailureMode] = Field(default_factory=list)
    langgraph_ext: LangGraphExt | None = None
    deepagent_ext: DeepAgentExt | None = None
    hybrid_ext: HybridExt | None = None
    requirements: list[Requirement] = Field(default_factory=list)
    """The constraints the request states, as data (``meta.requirements``)."""
    output_values: dict[str, list[str]] = Field(default_factory=dict)
    """Output fields the request declares -> their allowed values (empty: any)."""

    def component(self, component_id: str) -> Component | None:
        return next((c for c in self.components if c.id == component_id), None)

    def summary(self) -> str:
        lines = [
            f"SystemSpec {self.name} v{self.version}: {self.description}",
            f"runtime {self.runtime_target}, topology {self.topology_type}, entry {self.entry}",
            f"state: {', '.join(f'{k.name}:{k.type}' for k in self.state_schema)}",
            f"outputs: {', '.join(self.outputs)}",
        ]
        for c in self.components:
            tools = f" tools {', '.join(c.tool_usage)}" if c.tool_usage else ""
            lines.append(f"- {c.id}: {c.role} ({', '.join(c.inputs)} -> {', '.join(c.outputs)}){tools}")
        lines.append("edges: " + ", ".join(f"{e.source}->{e.target}" for e in self.edges))
        return _bounded("\n".join(lines))


# --- The other artifacts --------------------------------------------------------------------------


class ComponentPrompt(BaseModel):
    model_config = ConfigDict(extra="forbid")

    system_prompt: str = Field(min_length=1, max_length=20_000)
    policies: list[str] = Field(default_factory=list)


class PromptPack(Artifact):
    version: int = Field(default=1, ge=1)
    prompts: dict[str, ComponentPrompt] = Field(description="Component id -> its prompt.")

    def summary(self) -> str:
        return _bounded(
            "\n".join(f"- {cid}: {p.system_prompt[:160]}" for cid, p in sorted(self.prompts.items()))
        )


class QueryImplementation(BaseModel):
    """A tool implemented as a read-only SELECT on the tenant's data (``%(name)s`` binds a parameter)."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["query"] = "query"
    sql: SqlText = Field(min_length=1, max_length=MAX_SQL_CHARS)


class CatalogueImplementation(BaseModel):
    """A tool the tenant already has (its pack's, the SQL tool, the evolution tools)."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["catalogue"] = "catalogue"
    tool: str


class ToolEntry(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=NAME_PATTERN)
    description: str = Field(min_length=1, max_length=500)
    parameters: dict[str, Literal["string", "integer", "number", "boolean"]] = Field(default_factory=dict)
    returns: list[str] = Field(default_factory=list, description="Keys of its result.")
    retries: int = Field(default=1, ge=0, le=5)
    idempotent: bool = True
    timeout_s: float = Field(default=30.0, gt=0, le=600)
    implementation: QueryImplementation | CatalogueImplementation = Field(discriminator="kind")


class ToolContract(Artifact):
    version: int = Field(default=1, ge=1)
    tools: list[ToolEntry] = Field(default_factory=list)

    def entry(self, name: str) -> ToolEntry | None:
        return next((t for t in self.tools if t.name == name), None)

    def summary(self) -> str:
        return _bounded(
            "\n".join(
                f"- {t.name}({', '.join(t.parameters)}) -> {', '.join(t.returns)} [{t.implementation.kind}]"
                for t in self.tools
            )
        )


MetricKind = Literal["rubric", "coverage", "reasoning", "instruction_following", "latency", "cost"]


#: Cases one EvalSpec may hold: each runs the compiled system once per evaluation.
MAX_EVAL_CASES = 50


class EvalCase(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str = Field(pattern=r"^[a-z0-9_-]{1,64}$")
    inputs: dict[str, Any] = Field(description="State key -> value given to the system.")
    expect: dict[str, Any] = Field(
        default_factory=dict, description="Output key -> the value it must have (strings: contained)."
    )
    metric: MetricKind = "instruction_following"
    hard: bool = False
    requirement: str | None = None
    """The requirement it tests (its id in the SystemSpec); any failing case leaves it unmet."""
    exact: bool = False
    """Outputs must equal the expected values (case aside), not merely contain them."""
    avoid: dict[str, list[str]] = Field(default_factory=dict)
    """Output key -> words its text must not contain (the key must be answered, as a text)."""


class EvalSpec(Artifact):
    version: int = Field(default=1, ge=1)
    cases: list[EvalCase] = Field(min_length=1, max_length=MAX_EVAL_CASES)
    pass_threshold: float = Field(default=0.8, ge=0, le=1)
    metrics: list[str] = Field(default_factory=lambda: ["pass_rate", "latency_p95_ms", "tokens"])


class CaseResult(BaseModel):
    model_config = ConfigDict(extra="forbid")

    case_id: str
    passed: bool
    metric: MetricKind
    outputs: dict[str, Any] = Field(default_factory=dict)
    mismatches: list[str] = Field(default_factory=list)
    latency_ms: float = 0.0
    tokens: int = 0
    tool_calls: int = 0
    status: str = "success"
    error: str | None = None


class ExperimentReport(Artifact):
    version: int = Field(default=1, ge=1)
    system_version: int
    runtime: RuntimeTarget
    results: list[CaseResult]
    pass_rate: float
    latency_p95_ms: float
    tokens: int
    failure_signals: dict[str, Any] = Field(default_factory=dict)
    """The ``FailureSignals`` of the failing cases (``meta.failures``)."""
    requirements: dict[str, str] = Field(default_factory=dict)
    """Requirement id -> ``met``, ``not met: <cases>`` or ``not built: <why>``."""

    def summary(self) -> str:
        failed = [r.case_id for r in self.results if not r.passed]
        return _bounded(
            f"ExperimentReport v{self.version} on SystemSpec v{self.system_version} ({self.runtime}): "
            f"pass rate {self.pass_rate:.0%} over {len(self.results)} cases, p95 {self.latency_p95_ms:.0f} ms, "
            f"{self.tokens} tokens; failed: {', '.join(failed) or 'none'}"
        )


class BugReport(Artifact):
    version: int = Field(default=1, ge=1)
    symptom: str
    reproduced: bool
    failure_signals: dict[str, Any] = Field(default_factory=dict)


class Experiment(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str
    hypothesis: str
    target_artifact: ArtifactType
    changes: list[Change]


class ExperimentSpec(Artifact):
    version: int = Field(default=1, ge=1)
    experiments: list[Experiment] = Field(default_factory=list)


class Change(BaseModel):
    """One structured edit of an artifact (a diff, not prose)."""

    model_config = ConfigDict(extra="forbid")

    op: Literal["set", "append", "remove"]
    path: str = Field(min_length=1, description="Dotted path; list items by index or by their id.")
    value: Any = None


class PromotionDecision(Artifact):
    """A proposed change of an artifact the proposer does not own: a request, never a command."""

    version: int = Field(default=1, ge=1)
    target_artifact: ArtifactType
    base_version: int = Field(ge=1)
    proposed_changes: list[Change] = Field(min_length=1)
    justification: str = Field(min_length=1)
    expected_impact: dict[str, float] = Field(default_factory=dict)


class TelemetrySpec(Artifact):
    version: int = Field(default=1, ge=1)
    spans: list[str] = Field(default_factory=list)
    metrics: list[str] = Field(default_factory=list)
    trace_id_key: str = "trace_id"


class SLOReport(Artifact):
    version: int = Field(default=1, ge=1)
    latency_p95_ms_ceiling: float = Field(gt=0)
    tokens_per_case_ceiling: int = Field(gt=0)
    measured_latency_p95_ms: float | None = None
    measured_tokens_per_case: float | None = None
    met: bool | None = None


class CompiledSpec(Artifact):
    version: int = Field(default=1, ge=1)
    runtime_target: RuntimeTarget
    system_name: str
    system_version: int
    config: dict[str, Any] = Field(description="The structured config of the compiled runtime.")
    stubs: dict[str, str] = Field(default_factory=dict, description="File name -> code (# STUB markers).")
    warnings: list[str] = Field(default_factory=list)
    assumptions: list[str] = Field(default_factory=list)
    registered_agent: str | None = None

    def summary(self) -> str:
        return _bounded(
            f"CompiledSpec v{self.version} of {self.system_name} v{self.system_version} "
            f"({self.runtime_target}); agent {self.registered_agent or '-'}; "
            f"warnings: {'; '.join(self.warnings) or 'none'}"
        )


Experiment.model_rebuild()

ARTIFACT_MODELS: dict[ArtifactType, type[Artifact]] = {
    "SystemSpec": SystemSpec,
    "PromptPack": PromptPack,
    "ToolContract": ToolContract,
    "EvalSpec": EvalSpec,
    "ExperimentReport": ExperimentReport,
    "ExperimentSpec": ExperimentSpec,
    "PromotionDecision": PromotionDecision,
    "TelemetrySpec": TelemetrySpec,
    "SLOReport": SLOReport,
    "CompiledSpec": CompiledSpec,
    "BugReport": BugReport,
}


def artifact_type_of(artifact: Artifact) -> ArtifactType:
    for name, model in ARTIFACT_MODELS.items():
        if type(artifact) is model:
            return name
    raise TypeError(f"not an artifact: {type(artifact).__name__}")


def parse_artifact(artifact_type: ArtifactType, payload: Any, field: str = "artifact") -> Artifact:
    """The validated artifact, or an ``InputError`` naming the first bad field."""
    try:
        return ARTIFACT_MODELS[artifact_type].model_validate(payload)
    except ValidationError as error:
        raise InputError.from_validation(error, prefix=field) from None


def read_section(payload: Any, path: str) -> Any:
    """The part of an artifact's payload at a dotted path (``components.classify.tool_usage``: a list
    item by index or by its ``id``/``name``); an ``InputError`` naming the path when there is none."""
    node = payload
    for part in path.split("."):
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list):
            found = next(
                (
                    item
                    for item in node
                    if isinstance(item, dict) and part in (item.get("id"), item.get("name"))
                ),
                None,
            )
            if found is None and part.isdigit() and int(part) < len(node):
                found = node[int(part)]
            if found is None:
                raise InputError("section", f"no {part!r} in {path!r}")
            node = found
        else:
            raise InputError("section", f"no {part!r} in {path!r}")
    return node


def apply_changes(payload: dict[str, Any], changes: list[Change]) -> dict[str, Any]:
    """A copy of ``payload`` with ``changes`` applied in order (validated by the caller afterwards)."""
    result: dict[str, Any] = json.loads(json.dumps(payload))
    for change in changes:
        *parents, last = change.path.split(".")
        container = read_section(result, ".".join(parents)) if parents else result
        if isinstance(container, list):
            index = next(
                (
                    i
                    for i, item in enumerate(container)
                    if isinstance(item, dict) and last in (item.get("id"), item.get("name"))
                ),
                int(last) if last.isdigit() else None,
            )
            if index is None or index >= len(container):
                raise InputError("path", f"no {last!r} in {change.path!r}")
            if change.op == "remove":
                container.pop(index)
            elif change.op == "set":
                container[index] = change.value
            else:
                _append(container[index], change)
            continue
        if not isinstance(container, dict):
            raise InputError("path", f"{change.path!r} is not inside an object")
        if change.op == "set":
            container[last] = change.value
        elif change.op == "remove":
            if last not in container:
                raise InputError("path", f"no {last!r} in {change.path!r}")
            del container[last]
        else:
            container.setdefault(last, [])
            _append(container[last], change)
    return result


def diff_changes(before: Any, after: Any, path: str = "") -> list[Change]:
    """The structured changes that turn ``before`` into ``after`` (``apply_changes`` reverses it):
    objects key by key, lists of items with ids item by id, anything else set whole."""
    if before == after:
        return []
    if isinstance(before, dict) and isinstance(after, dict) and not any("." in str(k) for k in after):
        changes = [Change(op="remove", path=_join(path, key)) for key in before if key not in after]
        for key, value in after.items():
            if key in before:
                changes.extend(diff_changes(before[key], value, _join(path, key)))
            else:
                changes.append(Change(op="set", path=_join(path, key), value=value))
        return changes
    old_ids, new_ids = _item_ids(before), _item_ids(after)
    if path and old_ids is not None and new_ids is not None:
        kept = [key for key in new_ids if key in old_ids]
        if kept == [key for key in old_ids if key in new_ids]:  # same order: edit item by item
            assert isinstance(before, list) and isinstance(after, list)
            changes = [Change(op="remove", path=_join(path, key)) for key in old_ids if key not in new_ids]
            for key, item in zip(new_ids, after, strict=True):
                if key in old_ids:
                    changes.extend(diff_changes(before[old_ids.index(key)], item, _join(path, key)))
                else:
                    changes.append(Change(op="append", path=path, value=item))
            if [key for key in new_ids if key in old_ids] == new_ids[: len(kept)]:
                return changes
    if not path:
        raise InputError("artifact", "only an object can be changed")
    return [Change(op="set", path=path, value=after)]


def _join(path: str, key: Any) -> str:
    return f"{path}.{key}" if path else str(key)


def _item_ids(value: Any) -> list[str] | None:
    """The ids (or names) of a list's items, when every item has a distinct one."""
    if not isinstance(value, list) or not all(isinstance(item, dict) for item in value):
        return None
    ids = [str(item.get("id") or item.get("name") or "") for item in value]
    return ids if all(ids) and len(set(ids)) == len(ids) and not any("." in i for i in ids) else None


def _append(target: Any, change: Change) -> None:
    if not isinstance(target, list):
        raise InputError("path", f"{change.path!r} is not a list")
    target.append(change.value)
