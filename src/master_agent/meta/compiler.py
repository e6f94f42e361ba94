"""The compiler (seed 004 section 6): a ``SystemSpec`` (with its ``PromptPack`` and ``ToolContract``)
checked (section 6.3) and turned into a runtime-specific ``CompiledSpec``.

Every problem found is a ``CompileError`` of a kind ``classify_failure`` routes (section 6.4): schema
inconsistencies, undefined handoffs, unbounded recursion, missing budgets and boundary mismatches go
back to the Architect, missing tool contracts to Tooling. All of them are reported at once.

The LangGraph target is built by our own loop builder: each component becomes a tenant agent document
(its prompt, its tools, its inputs and outputs as schemas) and the system becomes a supervisor agent
whose sub-agents are the components, so the agent-builder registry stores it and the front door can
route to it. The DeepAgents target is a ``deepagents`` planner/worker/critic configuration over the
same tools; hybrid keeps graph-zone components as sub-agents and hands the recursion zone to a deep
agent across the boundary contracts.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from typing import Any

from master_agent.capabilities.agents import AgentDocument, SavedQuery
from master_agent.meta.artifacts import (
    CompiledSpec,
    Component,
    PromptPack,
    RoutingRule,
    SpawnPolicy,
    StateKey,
    SystemSpec,
    ToolContract,
    avoided_pattern,
)
from master_agent.meta.failures import CompileError

#: The longest generated name a tenant agent or tool may have (``NAME_PATTERN``).
MAX_NAME = 64


class CompileFailed(Exception):
    """The spec cannot be compiled; ``errors`` lists every reason."""

    def __init__(self, errors: list[CompileError]) -> None:
        super().__init__("; ".join(f"{e.kind} at {e.where}: {e.message}" for e in errors))
        self.errors = errors


def fitted(name: str) -> str:
    """``name`` within ``MAX_NAME`` characters: a longer one keeps its start and ends with a digest of
    the whole, so two long names that share a start stay apart (shortened, never refused)."""
    if len(name) <= MAX_NAME:
        return name
    digest = hashlib.sha256(name.encode()).hexdigest()[:8]
    return f"{name[: MAX_NAME - 9].rstrip('_')}_{digest}"


def agent_name(system: SystemSpec, component: Component) -> str:
    return fitted(f"{system.name}_{component.id}")


def tool_name(system: SystemSpec, component: Component, tool: str) -> str:
    """A contract tool's name as the tenant's saved query: per system, and per component when several
    components use it (a saved query belongs to one agent); never an agent's name of the system."""
    users = sum(1 for c in system.components if tool in c.tool_usage)
    name = fitted(f"{system.name}_{tool}" if users == 1 else f"{system.name}_{component.id}_{tool}")
    return fitted(f"{name}_query") if name in system_agent_names(system) else name


def system_agent_names(system: SystemSpec) -> set[str]:
    """The agent names a system's compilation registers."""
    names = {system.name, *(agent_name(system, c) for c in system.components)}
    if system.runtime_target == "hybrid":
        names.add(recursion_agent_name(system))
    return names


def system_names(system: SystemSpec) -> set[str]:
    """Every tenant-wide name (agents and saved queries) a system's compilation takes."""
    return system_agent_names(system) | {
        tool_name(system, c, tool) for c in system.components for tool in c.tool_usage
    }


def validate_system(system: SystemSpec, tools: ToolContract | None) -> list[CompileError]:
    """Every reason ``system`` cannot be compiled (section 6.3); none: it can."""
    errors: list[CompileError] = []

    def problem(kind: Any, where: str, message: str) -> None:
        errors.append(CompileError(kind=kind, where=where, message=message))

    declared = {key.name: key for key in system.state_schema}
    ids = [c.id for c in system.components]
    for duplicate in sorted({i for i in ids if ids.count(i) > 1}):
        problem("schema_inconsistency", f"components.{duplicate}", "component id used twice")
    components = {c.id: c for c in system.components}
    written: dict[str, list[str]] = {}
    for c in system.components:
        for key in {*c.outputs, *c.state_writes}:
            written.setdefault(key, []).append(c.id)
    for c in system.components:
        where = f"components.{c.id}"
        for field in ("inputs", "outputs", "state_reads", "state_writes"):
            for key in getattr(c, field):
                if key not in declared:
                    problem("schema_inconsistency", f"{where}.{field}", f"{key!r} is not in state_schema")
        for key in {*c.inputs, *c.state_reads}:
            if key in declared and not declared[key].external and key not in written:
                problem(
                    "schema_inconsistency", f"{where}.inputs", f"reads {key!r}, which no component writes"
                )
        for key in c.state_writes:
            if key in declared and declared[key].external:
                problem("schema_inconsistency", f"{where}.state_writes", f"writes the external input {key!r}")
        for rule in c.routing_rules:
            if rule.target not in components:
                problem(
                    "schema_inconsistency", f"{where}.routing_rules", f"routes to unknown {rule.target!r}"
                )
        if c.budget is None:
            problem("missing_budget", f"{where}.budget", "no budget (max_steps, max_tool_calls) set")
    for key in system.outputs:
        if key not in written:
            problem(
                "schema_inconsistency", "outputs", f"the system answers {key!r}, which no component writes"
            )
    if system.entry not in components:
        problem("schema_inconsistency", "entry", f"unknown component {system.entry!r}")
    for index, edge in enumerate(system.edges):
        for end in (edge.source, edge.target):
            if end not in components:
                problem("schema_inconsistency", f"edges[{index}]", f"unknown component {end!r}")
    errors.extend(_handoff_errors(system, components, declared))
    errors.extend(_loop_errors(system, components))
    errors.extend(_tool_errors(system, tools))
    if system.runtime_target == "hybrid":
        errors.extend(_boundary_errors(system, components))
    return errors


def _handoff_errors(
    system: SystemSpec, components: dict[str, Component], declared: dict[str, StateKey]
) -> Iterable[CompileError]:
    covered = set()
    for index, contract in enumerate(system.contracts.components):
        where = f"contracts.components[{index}]"
        producer, consumer = components.get(contract.producer), components.get(contract.consumer)
        if producer is None or consumer is None:
            missing = contract.producer if producer is None else contract.consumer
            yield CompileError(
                kind="undefined_handoff", where=where, message=f"unknown component {missing!r}"
            )
            continue
        if contract.key not in {*producer.outputs, *producer.state_writes}:
            yield CompileError(
                kind="undefined_handoff",
                where=where,
                message=f"{producer.id} does not write {contract.key!r}",
            )
        if contract.key not in {*consumer.inputs, *consumer.state_reads}:
            yield CompileError(
                kind="undefined_handoff", where=where, message=f"{consumer.id} does not read {contract.key!r}"
            )
        covered.add((contract.consumer, contract.key))
    for c in system.components:
        for key in c.inputs:
            if key in declared and not declared[key].external and (c.id, key) not in covered:
                yield CompileError(
                    kind="undefined_handoff",
                    where=f"components.{c.id}.inputs",
                    message=f"{key!r} reaches {c.id} with no component contract naming its producer",
                )


def _successors(system: SystemSpec, components: dict[str, Component]) -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {cid: set() for cid in components}
    for edge in system.edges:
        if edge.source in graph and edge.target in components:
            graph[edge.source].add(edge.target)
    for c in system.components:
        graph[c.id].update(rule.target for rule in c.routing_rules if rule.target in components)
    if system.langgraph_ext is not None:
        for conditional in system.langgraph_ext.conditional_edges:
            if conditional.source in graph:
                graph[conditional.source].update(t for t in conditional.targets.values() if t in components)
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle per strongly connected component that loops (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                item = stack.pop()
                on_stack.discard(item)
                group.append(item)
                if item == node:
                    break
            if len(group) > 1 or node in graph[node]:
                found.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def _loop_errors(system: SystemSpec, components: dict[str, Component]) -> Iterable[CompileError]:
    breakers = system.safety_reliability.loop_breakers
    for cycle in _cycles(_successors(system, components)):
        if not any(components[cid].max_iterations or breakers.get(cid) for cid in cycle):
            yield CompileError(
                kind="unbounded_recursion",
                where="edges",
                message=f"the loop {' -> '.join(cycle)} has no loop breaker (max_iterations or loop_breakers)",
            )
    if system.runtime_target in ("deepagent", "hybrid") or system.topology_type == "recursive":
        policy = system.deepagent_ext.spawn_policy if system.deepagent_ext else None
        if policy is None or policy.max_depth is None or policy.max_breadth is None:
            yield CompileError(
                kind="unbounded_recursion",
                where="deepagent_ext.spawn_policy",
                message="recursion without max_depth and max_breadth",
            )


def _tool_errors(system: SystemSpec, tools: ToolContract | None) -> Iterable[CompileError]:
    known = {entry.name for entry in tools.tools} if tools else set()
    for c in system.components:
        for tool in c.tool_usage:
            if tool not in known:
                yield CompileError(
                    kind="missing_contract",
                    where=f"components.{c.id}.tool_usage",
                    message=f"{tool!r} has no ToolContract entry",
                )
    for tool in system.contracts.tools:
        if tool not in known:
            yield CompileError(
                kind="missing_contract",
                where="contracts.tools",
                message=f"{tool!r} has no ToolContract entry",
            )


def _boundary_errors(system: SystemSpec, components: dict[str, Component]) -> Iterable[CompileError]:
    ext = system.hybrid_ext
    if ext is None:
        yield CompileError(
            kind="boundary_mismatch", where="hybrid_ext", message="a hybrid system needs hybrid_ext"
        )
        return
    for cid in components:
        if cid not in ext.boundary_map:
            yield CompileError(
                kind="boundary_mismatch", where="hybrid_ext.boundary_map", message=f"{cid!r} is in no zone"
            )
    crossings = {
        (source, target)
        for source, targets in _successors(system, components).items()
        for target in targets
        if ext.boundary_map.get(source)
        and ext.boundary_map.get(target)
        and ext.boundary_map[source] != ext.boundary_map[target]
    }
    for source, target in sorted(crossings):
        graph_node, recursion_node = (
            (source, target) if ext.boundary_map[source] == "graph" else (target, source)
        )
        contract = next(
            (
                b
                for b in ext.boundary_contracts
                if b.graph_side is not None
                and b.recursion_side is not None
                and b.graph_side.node_id == graph_node
                and b.recursion_side.component == recursion_node
            ),
            None,
        )
        if contract is None:
            yield CompileError(
                kind="boundary_mismatch",
                where="hybrid_ext.boundary_contracts",
                message=f"the crossing {source} -> {target} has no contract defining both sides",
            )
    for index, contract in enumerate(ext.boundary_contracts):
        if contract.graph_side is None or contract.recursion_side is None:
            side = "graph_side" if contract.graph_side is None else "recursion_side"
            yield CompileError(
                kind="boundary_mismatch",
                where=f"hybrid_ext.boundary_contracts[{index}]",
                message=f"{contract.id}: {side} is not defined",
            )


def topological_order(system: SystemSpec) -> list[Component]:
    """Components from the entry along the edges (each once; unreached ones last, in spec order)."""
    components = {c.id: c for c in system.components}
    graph = _successors(system, components)
    order: list[str] = []
    frontier = [system.entry] if system.entry in components else []
    while frontier:
        node = frontier.pop(0)
        if node in order:
            continue
        order.append(node)
        frontier.extend(sorted(graph[node] - set(order)))
    order.extend(cid for cid in components if cid not in order)
    return [components[cid] for cid in order]


def _schema(keys: Iterable[str], declared: dict[str, StateKey], *, required: bool) -> dict[str, Any]:
    names = list(dict.fromkeys(keys))
    return {
        "type": "object",
        "properties": {
            key: {
                "type": declared[key].type,
                "description": declared[key].description or key,
                # Words its text never contains: an answer holding one is refused, whoever wrote it.
                **({"pattern": avoided_pattern(declared[key].avoid)} if declared[key].avoid else {}),
            }
            for key in names
        },
        **({"required": names} if required else {}),
    }


def agent_documents(
    system: SystemSpec, prompts: PromptPack | None, tools: ToolContract
) -> list[AgentDocument]:
    """The tenant agent documents of a LangGraph-target system: each component, then the system's
    supervisor (last: it names the others as sub-agents)."""
    declared = {key.name: key for key in system.state_schema}
    documents = []
    ordered = topological_order(system)
    for c in ordered:
        prompt = prompts.prompts.get(c.id) if prompts else None
        catalogue_tools: list[str] = []
        queries: list[SavedQuery] = []
        for name in c.tool_usage:
            entry = tools.entry(name)
            assert entry is not None  # validate_system checked the coverage
            if entry.implementation.kind == "catalogue":
                catalogue_tools.append(entry.implementation.tool)
            else:
                queries.append(
                    SavedQuery(
                        name=tool_name(system, c, entry.name),
                        description=entry.description,
                        sql=entry.implementation.sql,
                        parameters=dict(entry.parameters),
                    )
                )
        instructions = prompt.system_prompt if prompt else c.role
        if prompt and prompt.policies:
            instructions += "\n\nPolicies:\n" + "\n".join(f"- {p}" for p in prompt.policies)
        iterations = c.max_iterations or system.safety_reliability.loop_breakers.get(c.id)
        if iterations is None and c.budget is not None:
            iterations = min(c.budget.max_steps, 100)
        documents.append(
            AgentDocument.model_validate(
                {
                    "name": agent_name(system, c),
                    "description": c.role,
                    "instructions": instructions,
                    "tools": catalogue_tools,
                    "queries": [q.model_dump() for q in queries],
                    "input_schema": _schema(c.inputs, declared, required=True),
                    "output_schema": _schema(c.outputs, declared, required=False),
                    "limits": {
                        "max_iterations": iterations,
                        "timeout_s": system.safety_reliability.timeout_s,
                        # The component's budget binds every run of it (the runtime enforces it).
                        **(
                            {"max_tool_calls": c.budget.max_tool_calls, "max_tokens": c.budget.max_tokens}
                            if c.budget is not None
                            else {}
                        ),
                    },
                }
            )
        )
    external = [key.name for key in system.state_schema if key.external]
    deep = system.deepagent_ext.spawn_policy if system.deepagent_ext else None
    zone = hybrid_zone(system, ordered)
    members: list[tuple[str, str, list[RoutingRule]]] = []
    for c in ordered:
        if c not in zone:
            members.append((agent_name(system, c), f"{c.id}: {c.role}", c.routing_rules))
        elif c is zone[0]:
            # The recursion zone runs as one deep agent where its first component would run.
            assert deep is not None  # validated: a hybrid system has a spawn policy
            documents.append(_recursion_document(system, zone, declared, deep))
            zone_ids = ", ".join(z.id for z in zone)
            members.append((recursion_agent_name(system), f"{zone_ids}: the recursion zone", []))
    flow = "; ".join(
        text + "".join(f" If {r.condition}, go to {r.target}." for r in rules) for _, text, rules in members
    )
    supervisor = prompts.prompts.get("supervisor") if prompts else None
    deep_runtime = system.runtime_target == "deepagent"
    limits: dict[str, Any] = {"max_iterations": min(2 * len(members) + 2, 100)}
    if deep_runtime and deep is not None and deep.max_breadth is not None:
        limits["max_spawns"] = deep.max_breadth if deep.max_depth else 0
    documents.append(
        AgentDocument.model_validate(
            {
                "name": system.name,
                "description": system.description,
                "skills": system.skills,
                "instructions": (supervisor.system_prompt if supervisor else system.description)
                + f"\n\nCall the components in this order, each with what it needs: {flow}",
                "sub_agents": [name for name, _, _ in members],
                "input_schema": _schema(external, declared, required=True),
                "output_schema": _schema(system.outputs, declared, required=False),
                "limits": limits,
                "runtime": "deepagents" if deep_runtime else "loop",
            }
        )
    )
    return documents


def hybrid_zone(system: SystemSpec, ordered: list[Component]) -> list[Component]:
    """A hybrid system's recursion-zone components, in order (none for other targets)."""
    if system.runtime_target != "hybrid" or system.hybrid_ext is None:
        return []
    return [c for c in ordered if system.hybrid_ext.boundary_map.get(c.id) == "recursion"]


def recursion_agent_name(system: SystemSpec) -> str:
    """The deep agent a hybrid system's recursion zone runs in."""
    return fitted(f"{system.name}_recursion")


def _recursion_document(
    system: SystemSpec, zone: list[Component], declared: dict[str, StateKey], policy: SpawnPolicy
) -> AgentDocument:
    """A hybrid system's recursion zone as one deep agent: its components are the harness's sub-agents;
    it takes what the zone reads from the graph zone and answers what the zone writes, as the boundary
    contracts say, within their failure protocol's time and steps."""
    assert system.hybrid_ext is not None
    written = {key for c in zone for key in (*c.outputs, *c.state_writes)}
    reads = [key for c in zone for key in (*c.inputs, *c.state_reads) if key not in written]
    ids = {c.id for c in zone}
    contracts = [
        b
        for b in system.hybrid_ext.boundary_contracts
        if b.recursion_side and b.recursion_side.component in ids
    ]
    protocols = [b.failure_protocol for b in contracts]
    steps = min((p.recursion_max_steps for p in protocols), default=2 * len(zone) + 2)
    limits: dict[str, Any] = {
        "max_iterations": min(steps, 100),
        "max_spawns": policy.max_breadth if policy.max_depth else 0,
    }
    if protocols:
        limits["timeout_s"] = min(p.recursion_timeout_s for p in protocols)
    crossing = "; ".join(
        f"{b.id}: {b.graph_side.node_id if b.graph_side else '?'} hands over "
        f"{', '.join(b.recursion_side.state_reads) if b.recursion_side else ''}"
        for b in contracts
    )
    return AgentDocument.model_validate(
        {
            "name": recursion_agent_name(system),
            "description": f"The recursion zone of {system.name}: {', '.join(c.role for c in zone)}"[:500],
            "instructions": f"Work the recursion zone of {system.name} across its boundary contracts ({crossing}). "
            + "; ".join(f"{c.id}: {c.role}" for c in zone),
            "sub_agents": [agent_name(system, c) for c in zone],
            "input_schema": _schema(reads, declared, required=True),
            "output_schema": _schema([key for c in zone for key in c.outputs], declared, required=False),
            "limits": limits,
            "runtime": "deepagents",
        }
    )


def _langgraph_config(system: SystemSpec, tools: ToolContract) -> dict[str, Any]:
    ext = system.langgraph_ext
    return {
        "nodes": [
            {
                "id": c.id,
                "agent": agent_name(system, c),
                "inputs": c.inputs,
                "outputs": c.outputs,
                "state_reads": c.state_reads,
                "state_writes": c.state_writes,
            }
            for c in topological_order(system)
        ],
        "entry": system.entry,
        "edges": [edge.model_dump() for edge in system.edges],
        "conditional_edges": [edge.model_dump() for edge in ext.conditional_edges] if ext else [],
        "state": {key.name: key.type for key in system.state_schema},
        "reducers": {
            key.name: (ext.reducers.get(key.name) if ext else None) or key.reducer
            for key in system.state_schema
        },
        "tool_wrappers": [
            {"tool": t.name, "retries": t.retries, "timeout_s": t.timeout_s, "idempotent": t.idempotent}
            for t in tools.tools
        ],
        "checkpointer": ext.checkpointer_config if ext else {"kind": "postgres"},
        "interrupt_points": ext.interrupt_points if ext else [],
    }


def _deepagent_config(system: SystemSpec, components: list[Component]) -> dict[str, Any]:
    ext = system.deepagent_ext
    assert ext is not None and ext.spawn_policy.max_depth is not None  # validated
    return {
        "planner": {"component": system.entry, **ext.planner_config},
        "workers": [
            {"name": agent_name(system, c), "component": c.id, "tools": c.tool_usage}
            for c in components
            if c.id != system.entry or len(components) == 1
        ],
        "critic": ext.critic_config,
        "loop": {
            "max_iterations": max(
                c.max_iterations or (c.budget.max_steps if c.budget else 10) for c in components
            )
        },
        "spawn_policy": ext.spawn_policy.model_dump(),
        "escalation_rules": ext.escalation_rules,
    }


def _stubs(system: SystemSpec) -> dict[str, str]:
    """Code stubs of what the spec leaves to code: the conditions of its conditional routing."""
    conditions = [(c.id, rule.condition, rule.target) for c in system.components for rule in c.routing_rules]
    if system.langgraph_ext:
        conditions.extend(
            (edge.source, edge.condition, ", ".join(edge.targets.values()))
            for edge in system.langgraph_ext.conditional_edges
        )
    if not conditions:
        return {}
    lines = [f'"""Routing conditions of {system.name} v{system.version}."""', ""]
    for index, (source, condition, target) in enumerate(conditions):
        lines += [
            f"def route_{source}_{index}(state: dict) -> str:",
            f'    """{condition} -> {target}"""',
            "    # STUB: implement",
            f'    return "{target.split(", ")[0]}"',
            "",
        ]
    return {f"{system.name}_routing.py": "\n".join(lines)}


def compile_system(
    system: SystemSpec, prompts: PromptPack | None, tools: ToolContract | None
) -> CompiledSpec:
    """The compiled spec of ``system`` for its runtime target; ``CompileFailed`` with every problem."""
    errors = validate_system(system, tools)
    if errors:
        raise CompileFailed(errors)
    assert tools is not None or not any(c.tool_usage for c in system.components)
    tools = tools or ToolContract(tools=[])
    warnings = [
        f"{c.id}: no prompt in the PromptPack; its role is its prompt"
        for c in system.components
        if prompts is None or c.id not in prompts.prompts
    ]
    assumptions = ["components run as sub-agents of a supervisor, in the order of the edges"]
    config: dict[str, Any] = {}
    if system.runtime_target in ("langgraph", "hybrid"):
        config["langgraph"] = _langgraph_config(system, tools)
    config["agents"] = [d.model_dump(mode="json") for d in agent_documents(system, prompts, tools)]
    if system.runtime_target == "deepagent":
        config["deepagent"] = _deepagent_config(system, system.components)
        assumptions[0] = "components run as sub-agents of a deepagents harness, spawned through its task tool"
    if system.runtime_target == "hybrid":
        assert system.hybrid_ext is not None
        zone = hybrid_zone(system, topological_order(system))
        config["deepagent"] = _deepagent_config(system, zone)
        config["boundaries"] = [b.model_dump() for b in system.hybrid_ext.boundary_contracts]
        assumptions.append(
            f"recursion-zone components run in one deep agent, {recursion_agent_name(system)}, behind "
            "their boundary contracts"
        )
    policy = system.deepagent_ext.spawn_policy if system.deepagent_ext else None
    if system.runtime_target != "langgraph" and policy is not None and (policy.max_depth or 0) > 1:
        warnings.append(
            f"spawn_policy.max_depth {policy.max_depth}: deepagents sub-agents do not spawn further; "
            "the depth is 1"
        )
    return CompiledSpec(
        runtime_target=system.runtime_target,
        system_name=system.name,
        system_version=system.version,
        config=config,
        stubs=_stubs(system),
        warnings=warnings,
        assumptions=assumptions,
    )
