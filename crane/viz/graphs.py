"""Graph views of a module as :class:`crane.viz.dot.DotGraph`: the ``graph`` and ``segment`` levels.

* :func:`graph_view`: one cluster per ``graph.func``; one node per op (function arguments
  and the return included, ``graph.weight`` and other named tensors left out: they are
  counted on the ops reading them), labelled with the value name, the op kind and the
  result shape; one edge per SSA use.
* :func:`segment_view`: one cluster per ``segment.schedule`` holding one cluster per
  ``segment.block`` (number, layers, phase, sub-batches, latency) with a node per column
  (layer). Edges inside a block are its ``deps``; edges between blocks follow the
  workload's data flow: a layer's input comes from the latest block so far that computes
  its producer (for ``<layer>.grad`` columns, the gradient of its consumers). Without a
  workload, dashed edges give the execution order.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from crane.cost.workload import Workload
from crane.dialects.graph import LayerOp, NamedTensorOp
from crane.dialects.layers.definition import Work
from crane.dialects.layers.kinds import LAYER_KINDS
from crane.dialects.segment import BlockOp, ScheduleOp
from crane.ir.attributes import DenseIntsAttr, IntAttr, StringAttr
from crane.ir.core import Operation, Value
from crane.ir.types import TensorType
from crane.schedule.record import GRAD_SUFFIX
from crane.viz.dot import DotCluster, DotEdge, DotGraph, DotNode
from crane.viz.figure import block_colour
from crane.viz.source import (
    PictureError,
    func_name,
    funcs,
    machine,
    require_schedules,
    workloads,
)

WORK_COLOURS: Mapping[Work, str] = {
    Work.CONV: "#c6dbef", Work.FC: "#c6dbef", Work.MATMUL: "#c6dbef", Work.ATTENTION: "#c6dbef",
    Work.VECTOR: "#d9f0d3", Work.POOL: "#fdd0a2", Work.ELTWISE: "#fff2ae",
}
"""Node fill colours of the graph view by what a layer kind is to the scheduler (dense blue,
vector ops green, pools orange, elementwise joins yellow, as is a concat); gradient ops
are pink, others grey."""
JOIN_COLOUR = WORK_COLOURS[Work.ELTWISE]


def _shape(value: Value) -> str:
    kind = value.type
    if isinstance(kind, TensorType):
        return "x".join(str(d) for d in kind.shape) or "scalar"
    return str(kind)


def _kind(op: Operation) -> str:
    if isinstance(op, LayerOp):
        return op.kind.name
    return op.name.removeprefix("graph.")


def _colour(kind: str) -> str:
    layer = LAYER_KINDS.get(kind)
    if layer is not None and layer.variadic:
        return JOIN_COLOUR
    if layer is not None and layer.work in WORK_COLOURS:
        return WORK_COLOURS[layer.work]
    return "#f4cae4" if "grad" in kind or kind in ("accumulate", "update") else "#eeeeee"


def _op_label(op: Operation, skipped: set[Value]) -> str:
    name = op.results[0].name_hint if op.results and op.results[0].name_hint else ""
    kind = _kind(op)
    shape = _shape(op.results[0]) if op.results else ""
    weights = sum(1 for v in op.operands if v in skipped)
    extra = f" (+{weights} weight{'s' if weights > 1 else ''})" if weights else ""
    return "\n".join(part for part in (f"%{name}" if name else "", kind + extra, shape) if part)


def _func_cluster(index: int, func: Operation, edges: list[DotEdge]) -> DotCluster:
    prefix = f"f{index}"
    cluster = DotCluster(prefix, {"label": f"@{func_name(func)}", "style": "rounded",
                                  "color": "#888888"})
    body = func.regions[0].blocks[0] if func.regions and func.regions[0].blocks else None
    if body is None:
        return cluster
    node_of: dict[Value, str] = {}
    for k, arg in enumerate(body.args):
        node_of[arg] = f"{prefix}.arg{k}"
        cluster.nodes.append(DotNode(node_of[arg], {
            "label": f"%{arg.name_hint or k}\ninput\n{_shape(arg)}", "shape": "ellipse",
            "fillcolor": "#ffffff"}))
    skipped: set[Value] = set()
    for k, op in enumerate(body.ops):
        if isinstance(op, NamedTensorOp):
            skipped.update(op.results)
            continue
        node = f"{prefix}.op{k}"
        returns = op.name == "graph.return"
        cluster.nodes.append(DotNode(node, {
            "label": "return" if returns else _op_label(op, skipped),
            "shape": "ellipse" if returns else "box",
            "fillcolor": "#ffffff" if returns else _colour(_kind(op))}))
        sources = dict.fromkeys(node_of[v] for v in op.operands if v in node_of)
        edges += [DotEdge(src, node) for src in sources]
        node_of.update((r, node) for r in op.results)
    return cluster


def graph_view(module: Operation) -> DotGraph:
    """The ``graph`` level: ops as nodes, SSA uses as edges (see the module docstring)."""
    found = funcs(module)
    if not found:
        raise PictureError("the graph view needs a graph.func: give a .crn model or "
                           "graph-level IR")
    graph = DotGraph("graph", attrs={"rankdir": "TB", "fontname": "Helvetica"},
                     node_defaults={"style": "filled", "fontname": "Helvetica",
                                    "fontsize": "10"},
                     edge_defaults={"color": "#555555"})
    for k, func in enumerate(found):
        graph.clusters.append(_func_cluster(k, func, graph.edges))
    return graph


def _int(op: Operation, name: str) -> int:
    attr = op.attributes.get(name)
    return attr.value if isinstance(attr, IntAttr) else 0


def _block_cluster(prefix: str, index: int, op: BlockOp,
                   workload: Workload | None) -> DotCluster:
    tiles = op.tile_split()
    latency = f", {op.latency_cycles:,.0f} cycles" if op.latency_cycles else ""
    label = (f"block {index}: {op.label}\n{op.phase}, {_int(op, 'subbatches')} x "
             f"{_int(op, 'subbatch')} samples{latency}")
    cluster = DotCluster(f"{prefix}.b{index}", {"label": label, "style": "rounded,filled",
                                                "fillcolor": "#fafafa",
                                                "color": block_colour(index)})
    known = {layer.name: layer.kind for layer in workload.layers} if workload else {}
    for j, name in enumerate(op.layer_names):
        kind = known.get(name.removesuffix(GRAD_SUFFIX), "")
        most = max((row[j] for row in tiles), default=0)
        detail = " · ".join(part for part in (kind, f"up to {most} tiles") if part)
        cluster.nodes.append(DotNode(f"{prefix}.b{index}.c{j}", {
            "label": f"{name}\n{detail}", "fillcolor": block_colour(index) + "40"}))
    return cluster


def _sources(name: str, workload: Workload) -> list[str]:
    """Column names whose output a column named ``name`` reads (forward or gradient)."""
    if name.endswith(GRAD_SUFFIX):
        base = name.removesuffix(GRAD_SUFFIX)
        succ = workload.successors.get(base, ())
        return [s + GRAD_SUFFIX for s in succ]
    try:
        return list(workload.layer(name).predecessors)
    except KeyError:
        return []


def _flow_edges(prefix: str, blocks: Sequence[BlockOp], workload: Workload) -> list[DotEdge]:
    """Edges between blocks: each column's inputs from the latest block computing them."""
    latest: dict[str, tuple[int, int]] = {}
    edges: list[DotEdge] = []
    for m, op in enumerate(blocks):
        mine = {name: j for j, name in enumerate(op.layer_names)}
        for j, name in enumerate(op.layer_names):
            for source in _sources(name, workload):
                if source in mine or source not in latest:
                    continue  # inside the block (its deps) or from outside the schedule
                bm, bj = latest[source]
                edges.append(DotEdge(f"{prefix}.b{bm}.c{bj}", f"{prefix}.b{m}.c{j}",
                                     {"color": block_colour(bm)}))
        latest.update((name, (m, j)) for j, name in enumerate(op.layer_names))
    return edges


def _order_edges(prefix: str, blocks: Sequence[BlockOp]) -> list[DotEdge]:
    return [DotEdge(f"{prefix}.b{m}.c0", f"{prefix}.b{m + 1}.c0",
                    {"style": "dashed", "ltail": f"cluster_{prefix}.b{m}",
                     "lhead": f"cluster_{prefix}.b{m + 1}", "label": "then"})
            for m in range(len(blocks) - 1)]


def _deps(op: BlockOp) -> list[tuple[int, int]]:
    attr = op.attributes.get("deps")
    flat = tuple(attr) if isinstance(attr, DenseIntsAttr) else ()
    return [(flat[k], flat[k + 1]) for k in range(0, len(flat) - 1, 2)]


def _schedule_cluster(k: int, schedule: ScheduleOp, workload: Workload | None,
                      edges: list[DotEdge]) -> DotCluster:
    prefix = f"s{k}"
    policy = schedule.attributes.get("policy")
    how = f", policy {policy.value}" if isinstance(policy, StringAttr) else ""
    cluster = DotCluster(prefix, {
        "label": f"schedule of @{schedule.func_name}{how}, batch {_int(schedule, 'batch')}",
        "style": "dashed", "color": "#888888"})
    blocks = schedule.blocks
    for m, op in enumerate(blocks):
        cluster.clusters.append(_block_cluster(prefix, m, op, workload))
        edges += [DotEdge(f"{prefix}.b{m}.c{a}", f"{prefix}.b{m}.c{b}") for a, b in _deps(op)]
    edges += _flow_edges(prefix, blocks, workload) if workload else _order_edges(prefix, blocks)
    return cluster


def segment_view(module: Operation) -> DotGraph:
    """The ``segment`` level: blocks as clusters of their layers (see the module docstring)."""
    found = require_schedules(module, "segment graph")
    loads = workloads(module, machine(module))
    graph = DotGraph("segment", attrs={"rankdir": "TB", "compound": "true",
                                       "fontname": "Helvetica"},
                     node_defaults={"shape": "box", "style": "filled,rounded",
                                    "fontname": "Helvetica", "fontsize": "10"},
                     edge_defaults={"color": "#555555"})
    for k, schedule in enumerate(found):
        graph.clusters.append(_schedule_cluster(k, schedule, loads.get(schedule.func_name),
                                                graph.edges))
    return graph
