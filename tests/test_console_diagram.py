"""The agent graph's layout (``service.console.diagram``): layers follow the edges, loops are set aside,
no two boxes overlap, every box is inside the drawing, a subgraph's box holds its nodes."""

from __future__ import annotations

import itertools
import re

from langgraph.graph import END, START, StateGraph
from typing_extensions import TypedDict

from master_agent.service.console.diagram import Diagram, PlacedNode, graph_diagram, layout
from tests.failing_graph import make_graph


def overlap(a: PlacedNode, b: PlacedNode) -> bool:
    return a.x < b.x + b.width and b.x < a.x + a.width and a.y < b.y + b.height and b.y < a.y + a.height


def assert_drawable(diagram: Diagram) -> None:
    for a, b in itertools.combinations(diagram.nodes, 2):
        assert not overlap(a, b), (a.node_id, b.node_id)
    for node in diagram.nodes:
        assert node.x >= 0 and node.x + node.width <= diagram.width
        assert node.y >= 0 and node.y + node.height <= diagram.height
    for box in diagram.groups:
        assert box.x >= 0 and box.x + box.width <= diagram.width
        assert box.y >= 0 and box.y + box.height <= diagram.height


class Loop(TypedDict, total=False):
    n: int


def _agent_loop() -> StateGraph[Loop, None, Loop, Loop]:
    graph: StateGraph[Loop, None, Loop, Loop] = StateGraph(Loop)
    graph.add_node("agent", lambda state: {"n": 1})
    graph.add_node("tools", lambda state: {"n": 2})
    graph.add_node("finalize", lambda state: {"n": 3})
    graph.add_edge(START, "agent")
    graph.add_conditional_edges("agent", lambda state: "tools", ["tools", "finalize"])
    graph.add_edge("tools", "agent")
    graph.add_edge("finalize", END)
    return graph


def test_the_agent_loop_is_drawn_downwards_with_its_loop_drawn_back_up() -> None:
    drawable = _agent_loop().compile().get_graph()
    diagram = graph_diagram(drawable)
    assert len(diagram.nodes) == len(drawable.nodes) and len(diagram.edges) == len(drawable.edges)
    at = {node.node_id: node for node in diagram.nodes}
    assert at["__start__"].y < at["agent"].y < at["tools"].y
    assert at["agent"].y < at["finalize"].y < at["__end__"].y
    back = [(edge.source, edge.target) for edge in diagram.edges if edge.back]
    assert back == [("tools", "agent")]
    dashed = {(edge.source, edge.target) for edge in diagram.edges if edge.conditional}
    assert dashed == {("agent", "tools"), ("agent", "finalize")}
    assert [at[n].label for n in ("__start__", "__end__")] == ["start", "end"]
    assert_drawable(diagram)


def test_subgraphs_drawn_in_are_boxed_around_their_nodes_at_every_depth() -> None:
    diagram = graph_diagram(make_graph({}).compile().get_graph(xray=2))
    boxes = {box.name: box for box in diagram.groups}
    assert set(boxes) == {"solve", "solve:analyst"}
    for node in diagram.nodes:
        for name, box in boxes.items():
            if node.node_id.startswith(name + ":"):
                assert box.x <= node.x and node.x + node.width <= box.x + box.width, (node.node_id, name)
                assert box.y <= node.y and node.y + node.height <= box.y + box.height, (node.node_id, name)
    outer, inner = boxes["solve"], boxes["solve:analyst"]
    assert outer.x < inner.x and outer.y < inner.y
    assert inner.x + inner.width < outer.x + outer.width
    assert_drawable(diagram)


def test_a_wide_layer_and_self_loops_and_long_names_stay_inside_the_drawing() -> None:
    names = [f"worker_{index}_with_a_name_long_enough_to_be_shortened" for index in range(6)]
    nodes = [("__start__", "__start__"), *((name, name) for name in names), ("__end__", "__end__")]
    edges = [("__start__", name, True) for name in names] + [(name, "__end__", False) for name in names]
    edges.append((names[0], names[0], False))
    diagram = layout(nodes, edges)
    assert len(diagram.edges) == len(edges)
    assert {node.y for node in diagram.nodes if node.node_id in names} == {diagram.nodes[1].y}
    assert all(node.label.endswith("…") and len(node.label) <= 28 for node in diagram.nodes[1:-1])
    assert all(node.title in names for node in diagram.nodes[1:-1])
    assert [edge.back for edge in diagram.edges].count(True) == 1
    assert_drawable(diagram)
    assert layout([], []).nodes == []


def test_an_edge_longer_than_a_layer_runs_around_the_nodes_it_passes() -> None:
    chain = ["__start__", "plan", "query", "check", "__end__"]
    nodes = [(node, node) for node in chain]
    edges = [(a, b, False) for a, b in itertools.pairwise(chain)] + [("plan", "__end__", True)]
    diagram = layout(nodes, edges)
    [long] = [edge for edge in diagram.edges if (edge.source, edge.target) == ("plan", "__end__")]
    # It passes the layers of query and check through a slot of its own: a straight stretch in each.
    ends = re.findall(r"L([\d.]+),([\d.]+)", long.path)
    points = [(float(x), float(y)) for x, y in ends]
    assert len(points) == 2
    for x, y in points:
        for node in diagram.nodes:
            assert not (node.x <= x <= node.x + node.width and node.y <= y <= node.y + node.height + 1)
    assert_drawable(diagram)
