"""A compiled LangGraph drawn as a diagram, laid out here and drawn by the page as inline SVG (no script,
nothing fetched: the console's content security policy holds).

The layout is the layered kind graph drawers use (Sugiyama's, kept small): edges that close a loop are
set aside so the rest is acyclic; each node goes one layer below the furthest node pointing at it; nodes
are ordered within their layer by the mean position of their neighbours, a few sweeps down and up, with a
subgraph's nodes kept side by side; layers run top to bottom; an edge longer than a layer passes a narrow
slot in each layer between. Edges that close a loop are drawn back up into the target's right side; conditional edges are dashed (by the stylesheet); a subgraph drawn in (``xray``) is a box
around its nodes, named after the node that runs it.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

#: LangGraph's entry and exit nodes, shown as words.
TERMINALS = {"__start__": "start", "__end__": "end"}
#: Sizes in px: a label's character, a node's height, padding around its label, gaps between nodes and layers.
CHAR_PX = 7.4
NODE_H = 32
LABEL_PAD = 14
MIN_NODE_W = 64
MAX_LABEL_CHARS = 28
GAP_X = 24
GAP_Y = 64
MARGIN = 16
#: Room at the top of a subgraph's box for its name.
GROUP_PAD = 22
#: The width a long edge takes in each layer it passes.
SLOT_W = 10
#: Ordering sweeps (each one down and one up).
SWEEPS = 4


@dataclass(frozen=True, kw_only=True)
class PlacedNode:
    node_id: str
    label: str
    """What the box says (shortened when long: ``title`` has it whole)."""
    title: str
    group: str | None
    terminal: bool
    x: float
    y: float
    width: float
    height: float = NODE_H


@dataclass(frozen=True, kw_only=True)
class PlacedEdge:
    source: str
    target: str
    conditional: bool
    path: str
    """The SVG path's ``d``: a curve from the source's box to the target's."""
    back: bool
    """It closes a loop (drawn back up into the target's right side)."""


@dataclass(frozen=True, kw_only=True)
class PlacedGroup:
    name: str
    x: float
    y: float
    width: float
    height: float


@dataclass(frozen=True, kw_only=True)
class Diagram:
    width: float
    height: float
    nodes: list[PlacedNode] = field(default_factory=list)
    edges: list[PlacedEdge] = field(default_factory=list)
    groups: list[PlacedGroup] = field(default_factory=list)


def group_of(node_id: str) -> str | None:
    """The subgraph a node drawn in by ``xray`` belongs to: its id's part before the last ``:``."""
    head, separator, _ = node_id.rpartition(":")
    return head if separator else None


def _terminal(node_id: str) -> bool:
    """A graph's entry or exit, a subgraph's drawn in (``solve:__start__``) too."""
    return node_id.rpartition(":")[2] in TERMINALS


def _label(node_id: str, name: str) -> str:
    if _terminal(node_id):
        return TERMINALS[node_id.rpartition(":")[2]]
    text = name.rpartition(":")[2] or node_id
    return text if len(text) <= MAX_LABEL_CHARS else text[: MAX_LABEL_CHARS - 1] + "…"


def _back_edges(order: list[str], out: dict[str, list[str]]) -> set[tuple[str, str]]:
    """The edges that close a loop, found by a depth-first walk from each node in ``order``."""
    state: dict[str, int] = {}  # 1: on the walk's path, 2: done
    back: set[tuple[str, str]] = set()
    for root in order:
        if root in state:
            continue
        stack: list[tuple[str, int]] = [(root, 0)]
        state[root] = 1
        while stack:
            node, index = stack[-1]
            targets = out[node]
            if index == len(targets):
                state[node] = 2
                stack.pop()
                continue
            stack[-1] = (node, index + 1)
            target = targets[index]
            if state.get(target) == 1:
                back.add((node, target))
            elif target not in state:
                state[target] = 1
                stack.append((target, 0))
    return back


def _layers(order: list[str], forward: list[tuple[str, str]]) -> dict[str, int]:
    """Each node one layer below the furthest node pointing at it (longest path from the sources)."""
    incoming: dict[str, list[str]] = defaultdict(list)
    outgoing: dict[str, list[str]] = defaultdict(list)
    for source, target in forward:
        incoming[target].append(source)
        outgoing[source].append(target)
    pending = {node: len(set(incoming[node])) for node in order}
    ready = [node for node in order if pending[node] == 0]
    layer = dict.fromkeys(order, 0)
    while ready:
        node = ready.pop(0)
        for target in dict.fromkeys(outgoing[node]):
            layer[target] = max(layer[target], layer[node] + 1)
            pending[target] -= 1
            if pending[target] == 0:
                ready.append(target)
    return layer


def _ordered(rows: list[list[str]], edges: list[tuple[str, str]], groups: dict[str, str | None]) -> None:
    """Order each layer by its nodes' neighbours' mean position in the layers already placed (sweeping
    down, then up), a subgraph's nodes kept together; in place."""
    above: dict[str, list[str]] = defaultdict(list)
    below: dict[str, list[str]] = defaultdict(list)
    for source, target in edges:
        above[target].append(source)
        below[source].append(target)

    def place(row: list[str], neighbours: dict[str, list[str]], at: dict[str, float]) -> None:
        where = {}
        for index, node in enumerate(row):
            known = [at[other] for other in neighbours[node] if other in at]
            where[node] = sum(known) / len(known) if known else float(index)
        by_group: dict[str | None, list[float]] = defaultdict(list)
        for node in row:
            by_group[groups[node]].append(where[node])
        centre = {group: sum(values) / len(values) for group, values in by_group.items()}
        row.sort(
            key=lambda node: (
                centre[groups[node]] if groups[node] else where[node],
                groups[node] or "",
                where[node],
            )
        )

    for _ in range(SWEEPS):
        for rows_in_turn, neighbours in ((rows, above), (rows[::-1], below)):
            at: dict[str, float] = {}
            for row in rows_in_turn:
                place(row, neighbours, at)
                at.update((node, float(index)) for index, node in enumerate(row))


def _bend(x1: float, y1: float, x2: float, y2: float) -> str:
    """A path's curve from (x1, y1), where it is, down to (x2, y2), leaving and arriving vertically."""
    bend = max(abs(y2 - y1) / 2, 12)
    return f"C{x1:.1f},{y1 + bend:.1f} {x2:.1f},{y2 - bend:.1f} {x2:.1f},{y2:.1f}"


def layout(nodes: Sequence[tuple[str, str]], edges: Sequence[tuple[str, str, bool]]) -> Diagram:
    """The diagram of a graph: ``nodes`` as (id, name), ``edges`` as (source, target, conditional)."""
    order = [node_id for node_id, _ in nodes]
    names = dict(nodes)
    known = set(order)
    links = [(s, t, c) for s, t, c in edges if s in known and t in known]
    out: dict[str, list[str]] = defaultdict(list)
    for source, target, _ in links:
        out[source].append(target)
    back = _back_edges(order, out)
    forward = [(s, t) for s, t, _ in links if (s, t) not in back and s != t]
    layer = _layers(order, forward)
    # An edge longer than one layer passes through a narrow slot in each layer between, so it runs
    # around the nodes there instead of through them (the slots are ordered like nodes).
    slots: dict[tuple[str, str], list[str]] = {}
    steps: list[tuple[str, str]] = []
    for source, target in dict.fromkeys(forward):
        between = [f"\0{source}\0{target}\0{at}" for at in range(layer[source] + 1, layer[target])]
        for at, slot in zip(range(layer[source] + 1, layer[target]), between, strict=True):
            layer[slot] = at
        slots[(source, target)] = between
        chain = [source, *between, target]
        steps.extend(itertools.pairwise(chain))
    rows: list[list[str]] = [[] for _ in range(max(layer.values(), default=-1) + 1)]
    for node in [*order, *(slot for between in slots.values() for slot in between)]:
        rows[layer[node]].append(node)
    groups: dict[str, str | None] = {node: (None if node in TERMINALS else group_of(node)) for node in order}
    groups.update((slot, None) for between in slots.values() for slot in between)
    _ordered(rows, steps, groups)

    labels = {node: _label(node, names[node]) for node in order}
    widths = {node: max(MIN_NODE_W, len(labels[node]) * CHAR_PX + 2 * LABEL_PAD) for node in order}
    widths.update((slot, SLOT_W) for between in slots.values() for slot in between)
    row_widths = [sum(widths[node] for node in row) + GAP_X * max(len(row) - 1, 0) for row in rows]
    inner = max(row_widths, default=0.0)
    placed: dict[str, PlacedNode] = {}
    centre: dict[str, tuple[float, float]] = {}  # each slot's x and its row's top
    # Room around the nodes for the boxes of the subgraphs they are in (one step per level).
    nesting = max((node.count(":") for node in order if groups[node]), default=0)
    left_edge = MARGIN + 8 * nesting
    top = MARGIN + GROUP_PAD * nesting
    for index, row in enumerate(rows):
        x = left_edge + (inner - row_widths[index]) / 2
        y = top + index * (NODE_H + GAP_Y)
        for node in row:
            if node in names:
                placed[node] = PlacedNode(
                    node_id=node,
                    label=labels[node],
                    title=labels[node] if _terminal(node) else names[node],
                    group=groups[node],
                    terminal=_terminal(node),
                    x=x,
                    y=y,
                    width=widths[node],
                )
            else:
                centre[node] = (x + widths[node] / 2, y)
            x += widths[node] + GAP_X

    drawn: list[PlacedEdge] = []
    loops = 0
    right = left_edge + inner
    for source, target, conditional in links:
        a, b = placed[source], placed[target]
        closes = (source, target) in back or source == target
        if source == target:
            edge_x = a.x + a.width
            path = (
                f"M{edge_x:.1f},{a.y + 6:.1f} C{edge_x + 34:.1f},{a.y - 10:.1f} "
                f"{edge_x + 34:.1f},{a.y + NODE_H + 10:.1f} {edge_x:.1f},{a.y + NODE_H - 6:.1f}"
            )
        elif closes:
            # Up from the source's top (beside its incoming arrows, never across its row's nodes) into
            # the target's right side; one spanning more than a layer goes by a lane along the right.
            up_x, up_y = a.x + a.width / 2 + 8, a.y
            end_x, end_y = b.x + b.width, b.y + NODE_H / 2
            lift = f"M{up_x:.1f},{up_y:.1f} C{up_x:.1f},{up_y - GAP_Y / 2:.1f} "
            if a.y - b.y <= NODE_H + GAP_Y:
                path = lift + f"{end_x + 30:.1f},{end_y:.1f} {end_x:.1f},{end_y:.1f}"
            else:
                loops += 1
                reach = right + 14 * loops
                middle = (up_y + end_y) / 2
                path = (
                    lift + f"{reach:.1f},{up_y - GAP_Y / 2:.1f} {reach:.1f},{middle:.1f} "
                    f"S{end_x + 30:.1f},{end_y:.1f} {end_x:.1f},{end_y:.1f}"
                )
        else:
            pen_x, pen_y = a.x + a.width / 2, a.y + NODE_H
            parts = [f"M{pen_x:.1f},{pen_y:.1f}"]
            for slot in slots.get((source, target), []):
                slot_x, slot_y = centre[slot]
                parts.append(_bend(pen_x, pen_y, slot_x, slot_y))
                pen_x, pen_y = slot_x, slot_y + NODE_H
                parts.append(f"L{pen_x:.1f},{pen_y:.1f}")
            parts.append(_bend(pen_x, pen_y, b.x + b.width / 2, b.y))
            path = " ".join(parts)
        drawn.append(
            PlacedEdge(source=source, target=target, conditional=conditional, path=path, back=closes)
        )

    boxes: list[PlacedGroup] = []
    members: dict[str, list[PlacedNode]] = defaultdict(list)
    for box in placed.values():
        parts = box.node_id.split(":") if box.group else []
        for depth in range(1, len(parts)):  # every subgraph around it, outermost first
            members[":".join(parts[:depth])].append(box)
    for name, inside in members.items():
        # A box holding a box is wider by a step on every side, and taller by the name above it.
        nested = max(node.node_id.count(":") for node in inside) - name.count(":") - 1
        side = 8 + 8 * nested
        left = min(node.x for node in inside) - side
        upper = min(node.y for node in inside) - GROUP_PAD * (1 + nested)
        boxes.append(
            PlacedGroup(
                name=name,
                x=left,
                y=upper,
                width=max(node.x + node.width for node in inside) + side - left,
                height=max(node.y + NODE_H for node in inside) + side - upper,
            )
        )
    boxes.sort(key=lambda box: box.name.count(":"))  # outer boxes drawn first, under inner ones
    extra = max((box.x + box.width for box in boxes), default=0.0) - right
    self_loops = 34 if any(s == t or (s, t) in back for s, t, _ in links) else 0
    width = right + MARGIN + max(14 * loops, extra, self_loops)
    height = (
        max([top + len(rows) * (NODE_H + GAP_Y) - GAP_Y, *(box.y + box.height for box in boxes)]) + MARGIN
    )
    return Diagram(width=width, height=height, nodes=list(placed.values()), edges=drawn, groups=boxes)


def graph_diagram(drawable: Any) -> Diagram:
    """The diagram of ``compiled.get_graph(xray=...)`` (a ``langchain_core`` drawable graph)."""
    nodes = [(node.id, str(node.name or node.id)) for node in drawable.nodes.values()]
    edges = [(edge.source, edge.target, bool(edge.conditional)) for edge in drawable.edges]
    return layout(nodes, edges)
