"""The package's imports point one way and close no circle (DESIGN.md "Rooms").

The test reads the source with ``ast`` (nothing is imported), so it sees imports inside functions as well as at
module level: a function-level import is a dependency all the same, only deferred. Imports under
``if TYPE_CHECKING:`` are left out: they never run.

Rooms from the top down; a room may import its own modules and the rooms below it, never one above:

    service, cli          -> the composition roots (HTTP app, command line)
    domains               -> packs: import the engine, the engine never imports them (only the CLI's demos do)
    routing, builder, meta
    runtime, workflows
    evolution             -> knowledge, learnings, playbooks: built on the tenant's capabilities
    capabilities
    models, storage       -> chat models and embedders; the database
    settings, errors, untrusted

DESIGN.md drew ``capabilities -> models, evolution, storage``; the code has evolution built on capabilities
(playbooks check their tools against the tenant's registry, reuse reads metrics in the pack's terms, outcomes
query through the read-only SQL tool) while capabilities needed only the embedders from evolution, which DESIGN.md
places in ``models/`` anyway. So the embedders moved to ``models/`` and evolution stands above capabilities, as
the issue's order ``runtime -> capabilities/evolution -> storage/models`` allows.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

PACKAGE = "master_agent"
SOURCE = Path(__file__).resolve().parents[1] / "src" / PACKAGE

# Rank of each room: an import from a room to a room of higher rank is an upward import.
RANKS: dict[str, int] = {
    "settings": 0,
    "errors": 0,
    "untrusted": 0,
    "models": 1,
    "storage": 1,
    "capabilities": 2,
    "evolution": 3,
    "runtime": 4,
    "workflows": 4,
    "routing": 5,
    "builder": 5,
    "meta": 5,
    "domains": 6,
    "service": 7,
    "cli": 7,
    "cli_evolution": 7,
    "cli_meta": 7,
}
# The only rooms outside ``domains`` that may name a pack: the CLI's demo commands pick one.
PACK_IMPORTERS = frozenset({"cli", "cli_evolution", "cli_meta"})

# Circles known and owned by a change in flight; each entry is the set of modules of one circle. Drop an entry
# when its circle is gone (the test fails on an entry that no longer matches a circle, so it cannot go stale).
ALLOWED_CIRCLES: list[frozenset[str]] = []


@dataclass(frozen=True)
class Edge:
    """One import statement: ``source`` imports ``target`` at ``line`` (inside a function when ``deferred``)."""

    source: str
    target: str
    line: int
    deferred: bool


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SOURCE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(path): path for path in sorted(SOURCE.rglob("*.py"))}


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(tree: ast.AST, deferred: bool = False) -> Iterator[tuple[ast.Import | ast.ImportFrom, bool]]:
    """Every import statement under ``tree`` except those that only a type checker runs."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node, deferred
        elif isinstance(node, ast.If) and _is_type_checking(node.test):
            yield from (item for child in node.orelse for item in _imports_of(child, deferred))
        elif isinstance(node, ast.stmt | ast.excepthandler | ast.match_case):
            # An import is a statement: only statements hold one (an expression, a lambda's body
            # included, never does), so expressions are not walked.
            inner = deferred or isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
            yield from _imports(node, inner)


def _imports_of(node: ast.AST, deferred: bool) -> Iterator[tuple[ast.Import | ast.ImportFrom, bool]]:
    if isinstance(node, ast.Import | ast.ImportFrom):
        yield node, deferred
    else:
        yield from _imports(node, deferred)


def _edges(modules: dict[str, Path]) -> list[Edge]:
    edges: list[Edge] = []
    seen: set[Edge] = set()  # ``edges`` without repeats, looked up in constant time
    for name, path in modules.items():
        is_package = path.name == "__init__.py"
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node, deferred in _imports(tree):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                base = node.module or ""
                if node.level:
                    anchor = name.split(".") if is_package else name.split(".")[:-1]
                    anchor = anchor[: len(anchor) - (node.level - 1)]
                    base = ".".join([*anchor, base] if base else anchor)
                # ``from package import submodule`` depends on the submodule; ``from module import name`` on
                # the module.
                for alias in node.names:
                    child = f"{base}.{alias.name}"
                    targets.append(child if child in modules else base)
            for target in targets:
                while target and target not in modules:
                    target = target.rpartition(".")[0]
                edge = Edge(name, target, node.lineno, deferred)
                if target.startswith(PACKAGE + ".") and target != name and edge not in seen:
                    seen.add(edge)
                    edges.append(edge)
    return edges


def _room(module: str) -> str:
    return module.split(".")[1]


def _describe(edge: Edge) -> str:
    where = "inside a function" if edge.deferred else "at module level"
    return f"{edge.source} -> {edge.target} (line {edge.line}, {where})"


def _circles(edges: list[Edge]) -> list[tuple[frozenset[str], list[Edge]]]:
    """Each strongly connected part of the import graph (Tarjan) with one shortest circle through it."""
    graph: dict[str, list[Edge]] = {}
    for edge in edges:
        graph.setdefault(edge.source, []).append(edge)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    parts: list[frozenset[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for edge in graph.get(node, []):
            if edge.target not in index:
                visit(edge.target)
                low[node] = min(low[node], low[edge.target])
            elif edge.target in on_stack:
                low[node] = min(low[node], index[edge.target])
        if low[node] == index[node]:
            part: set[str] = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                part.add(member)
                if member == node:
                    break
            if len(part) > 1:
                parts.append(frozenset(part))

    for node in sorted(graph):
        if node not in index:
            visit(node)

    circles: list[tuple[frozenset[str], list[Edge]]] = []
    for part in parts:
        best: list[Edge] | None = None
        for start in sorted(part):
            # Breadth-first from ``start`` back to itself, staying inside the part: the shortest circle through it.
            paths: dict[str, list[Edge]] = {start: []}
            frontier = [start]
            found: list[Edge] | None = None
            while frontier and found is None:
                following: list[str] = []
                for node in frontier:
                    for edge in graph.get(node, []):
                        if edge.target not in part:
                            continue
                        if edge.target == start:
                            found = [*paths[node], edge]
                            break
                        if edge.target not in paths:
                            paths[edge.target] = [*paths[node], edge]
                            following.append(edge.target)
                    if found is not None:
                        break
                frontier = following
            if found is not None and (best is None or len(found) < len(best)):
                best = found
        assert best is not None
        circles.append((part, best))
    return circles


def _circle_text(circle: list[Edge], members: frozenset[str]) -> str:
    chain = "\n    ".join(_describe(edge) for edge in circle)
    return f"circle among {len(members)} modules ({', '.join(sorted(members))}):\n    {chain}"


@pytest.fixture(scope="module")
def edges() -> list[Edge]:
    return _edges(_modules())


def test_every_room_has_a_rank() -> None:
    rooms = {_room(name) for name in _modules() if name != PACKAGE}
    assert rooms <= set(RANKS), f"rooms without a place in the layer order: {sorted(rooms - set(RANKS))}"


def test_no_upward_import(edges: list[Edge]) -> None:
    upward = [
        edge
        for edge in edges
        if edge.source != PACKAGE and RANKS[_room(edge.source)] < RANKS[_room(edge.target)]
    ]
    report = "\n  ".join(
        f"{_room(edge.source)} (rank {RANKS[_room(edge.source)]}) imports {_room(edge.target)} "
        f"(rank {RANKS[_room(edge.target)]}): {_describe(edge)}"
        for edge in upward
    )
    assert not upward, f"{len(upward)} upward imports:\n  {report}"


def test_only_the_cli_names_a_pack(edges: list[Edge]) -> None:
    into_packs = [
        edge
        for edge in edges
        if _room(edge.target) == "domains" and _room(edge.source) not in PACK_IMPORTERS | {"domains"}
    ]
    assert not into_packs, "the engine imports a pack:\n  " + "\n  ".join(map(_describe, into_packs))


def test_no_import_circle(edges: list[Edge]) -> None:
    parts = _circles(edges)
    unexpected = [(members, circle) for members, circle in parts if members not in ALLOWED_CIRCLES]
    report = "\n".join(_circle_text(circle, members) for members, circle in unexpected)
    assert not unexpected, f"{len(unexpected)} import circles:\n{report}"
    stale = set(ALLOWED_CIRCLES) - {members for members, _ in parts}
    assert not stale, f"allowed circles that no longer exist (drop them from ALLOWED_CIRCLES): {stale}"


def test_the_walk_sees_deferred_imports_and_draws_the_circle() -> None:
    """The walker itself: a function-level import counts, a TYPE_CHECKING one does not."""
    source = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from master_agent.service import app\n"
        "def f():\n"
        "    from master_agent.runtime import factory\n"
        "    return factory\n"
    )
    tree = ast.parse(source)
    found = [(node.module, deferred) for node, deferred in _imports(tree) if isinstance(node, ast.ImportFrom)]
    assert found == [("typing", False), ("master_agent.runtime", True)]
    circles = _circles(
        [
            Edge("master_agent.a", "master_agent.b", 1, False),
            Edge("master_agent.b", "master_agent.c", 2, True),
            Edge("master_agent.c", "master_agent.a", 3, False),
            Edge("master_agent.c", "master_agent.d", 4, False),
        ]
    )
    assert [(members, [(edge.source, edge.target) for edge in circle]) for members, circle in circles] == [
        (
            frozenset({"master_agent.a", "master_agent.b", "master_agent.c"}),
            [
                ("master_agent.a", "master_agent.b"),
                ("master_agent.b", "master_agent.c"),
                ("master_agent.c", "master_agent.a"),
            ],
        )
    ]


def _names_graph_id(node: ast.expr) -> bool:
    return (isinstance(node, ast.Name) and node.id == "graph_id") or (
        isinstance(node, ast.Attribute) and node.attr == "graph_id"
    )


def _picks_a_graph(node: ast.Compare) -> bool:
    """A graph id compared for equality, or for membership in a list written out (membership in the
    registry's ids, ``graph_id in graph_ids(resources)``, is the generic check)."""
    operands = [node.left, *node.comparators]
    equality = any(isinstance(op, ast.Eq | ast.NotEq) for op in node.ops)
    listed = any(isinstance(operand, ast.Tuple | ast.List | ast.Set) for operand in node.comparators)
    return (equality or listed) and any(_names_graph_id(operand) for operand in operands)


def test_the_api_layer_names_no_particular_graph() -> None:
    """``service/`` neither imports a graph's id nor compares a graph id with anything: what differs
    between graphs comes with their registration (``runtime.graphs.GraphRegistration``)."""
    found = []
    for path in sorted((SOURCE / "service").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and any(
                alias.name.endswith("_GRAPH_ID") for alias in node.names
            ):
                found.append(f"{path.name}:{node.lineno} imports {[alias.name for alias in node.names]}")
            if isinstance(node, ast.Compare) and _picks_a_graph(node):
                found.append(f"{path.name}:{node.lineno} compares a graph id: {ast.unparse(node)}")
    assert not found, "the API layer names particular graphs:\n  " + "\n  ".join(found)
