"""Graph views: DOT of the graph and segment levels, and their layered PNG/SVG drawings."""

from __future__ import annotations

import pytest

from crane.dialects.graph import LayerOp, NamedTensorOp
from crane.ir.types import TensorType
from crane.viz.dot import DotCluster, DotEdge, DotGraph, DotNode, quote
from crane.viz.graphs import graph_view, segment_view
from crane.viz.layered import layout, render_layered
from crane.viz.source import PictureError, funcs, schedules

from .dot_check import check_dot, parse_dot
from .support import ROOT, compiled, png_size, svg_ids, svg_root


def test_graph_dot_has_a_node_per_op_and_an_edge_per_use() -> None:
    module = compiled("")
    (func,) = funcs(module)
    body = func.regions[0].blocks[0]
    dot = check_dot(graph_view(module).render())
    node_of = {arg: f"f0.arg{k}" for k, arg in enumerate(body.args)}
    expected_nodes, expected_edges = set(node_of.values()), set()
    for k, op in enumerate(body.ops):
        if isinstance(op, NamedTensorOp):
            continue
        expected_nodes.add(f"f0.op{k}")
        expected_edges |= {(node_of[v], f"f0.op{k}") for v in op.operands if v in node_of}
        node_of.update((r, f"f0.op{k}") for r in op.results)
        if isinstance(op, LayerOp):
            label = dot.nodes[f"f0.op{k}"]["label"]
            shape = op.results[0].type
            assert isinstance(shape, TensorType)
            assert op.kind.name in label and "x".join(map(str, shape.shape)) in label
    assert set(dot.nodes) == expected_nodes
    assert {(a, b) for a, b, _ in dot.edges} == expected_edges
    assert len(dot.edges) == len(expected_edges)  # no duplicates
    assert set(dot.clusters["cluster_f0"]) == expected_nodes
    assert any("conv2d (+1 weight)" in n["label"] for n in dot.nodes.values())


def test_segment_dot_has_a_cluster_per_block_and_flow_between_blocks() -> None:
    module = compiled("segment,map")
    (schedule,) = schedules(module)
    dot = check_dot(segment_view(module).render())
    assert dot.attrs["compound"] == "true"
    blocks = schedule.blocks
    for m, op in enumerate(blocks):
        members = dot.clusters[f"cluster_s0.b{m}"]
        assert members == [f"s0.b{m}.c{j}" for j in range(len(op.layer_names))]
        for j, name in enumerate(op.layer_names):
            assert dot.nodes[f"s0.b{m}.c{j}"]["label"].startswith(name + "\n")
        deps = list(op.attributes["deps"])
        for a, b in zip(deps[0::2], deps[1::2], strict=True):
            assert (f"s0.b{m}.c{a}", f"s0.b{m}.c{b}") in {(x, y) for x, y, _ in dot.edges}
    assert set(dot.clusters["cluster_s0"]) == set(dot.nodes)
    between = [(int(a.split(".")[1][1:]), int(b.split(".")[1][1:])) for a, b, _ in dot.edges
               if a.split(".")[1] != b.split(".")[1]]
    assert between and all(src < dst for src, dst in between)
    # Every block after the first reads something an earlier block computed.
    assert {dst for _, dst in between} == set(range(1, len(blocks)))


def test_training_segment_dot_links_gradient_blocks() -> None:
    module = compiled("segment", training=True)
    dot = check_dot(segment_view(module).render())
    labels = {node: attrs["label"] for node, attrs in dot.nodes.items()}
    grads = {node for node, label in labels.items() if ".grad\n" in label}
    assert grads
    fed = {b for a, b, _ in dot.edges if a in grads and b in grads}
    assert fed, "gradient columns receive gradients from other gradient columns"
    block_labels = [line for line in segment_view(module).render().splitlines()
                    if line.strip().startswith('label="block')]
    assert any("bw1," in line for line in block_labels)
    assert any("bw2," in line for line in block_labels)


def test_quoting_survives_awkward_names() -> None:
    name = 'a "b" \\c\nd'
    graph = DotGraph("g", nodes=[DotNode(name, {"label": name}), DotNode("x")],
                     clusters=[DotCluster("k", nodes=[DotNode("in cluster")])],
                     edges=[DotEdge(name, "x"), DotEdge("x", "in cluster")])
    dot = check_dot(graph.render())
    assert name in dot.nodes and dot.nodes[name]["label"] == name
    assert dot.clusters["cluster_k"] == ["in cluster"]
    assert quote('"') == '"\\""'


def test_checker_rejects_broken_dot() -> None:
    with pytest.raises(AssertionError):
        parse_dot('digraph "g" { "a" -> "b";')
    with pytest.raises(AssertionError, match="undeclared"):
        check_dot('digraph "g" {\n  "a";\n  "a" -> "b";\n}\n')
    with pytest.raises(AssertionError, match="wrong graph kind"):
        parse_dot('graph "g" { "a"; "b"; "a" -> "b"; }')
    with pytest.raises(AssertionError, match="unquoted"):
        check_dot('digraph "g" {\n  a;\n}\n')


def test_layered_drawings_hold_every_node() -> None:
    view = segment_view(compiled("segment,map"))
    boxes, width, height = layout(view)
    assert {b.node.id for b in boxes} == {n.id for n in view.all_nodes()}
    for a in boxes:  # no two boxes overlap
        for b in boxes:
            if a is not b:
                apart_x = abs(a.x - b.x) >= (a.width + b.width) / 2 - 1e-9
                apart_y = abs(a.y - b.y) >= (a.height + b.height) / 2 - 1e-9
                assert apart_x or apart_y, (a.node.id, b.node.id)
    root = svg_root(render_layered(view, "svg"))
    assert set(svg_ids(root, "node-")) == {f"node-{n.id}" for n in view.all_nodes()}
    assert {f"cluster-s0.b{m}" for m in range(len(view.clusters[0].clusters))} <= \
        set(svg_ids(root, "cluster-"))
    png_w, png_h = png_size(render_layered(graph_view(compiled("")), "png"))
    assert png_w > 300 and png_h > 300


def test_views_need_their_level() -> None:
    with pytest.raises(PictureError, match="'segment' pass"):
        segment_view(compiled(""))


def test_schedule_without_a_workload_shows_the_execution_order() -> None:
    from crane.dialects import default_context
    from crane.tools.inputs import parse_ir

    path = ROOT / "tests" / "filecheck" / "segment" / "roundtrip.mlir"
    module = parse_ir(path.read_text(), str(path), default_context())
    dot = check_dot(segment_view(module).render())
    assert dot.clusters["cluster_s0.b0"] == ["s0.b0.c0", "s0.b0.c1"]
    assert ("s0.b0.c0", "s0.b1.c0", "then") in {(a, b, attrs.get("label"))
                                                 for a, b, attrs in dot.edges}
