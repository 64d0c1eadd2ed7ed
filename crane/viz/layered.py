"""A layered drawing of a :class:`crane.viz.dot.DotGraph` with matplotlib (no Graphviz).

:func:`layout` places the nodes; :func:`render_layered` draws them. The layout is the
usual layered (Sugiyama-style) one, kept small:

* every innermost cluster is a band, bands in the order the clusters were added (so a
  block's layers stay together and blocks follow each other);
* inside a band a node's rank (its row) is the longest path to it from the band's sources
  (edges within the band only); within a row nodes are ordered by the mean position of
  their already placed predecessors (one barycentre sweep);
* rows are then wrapped into side-by-side columns, like a newspaper, so that a deep
  network gives a page rather than a strip; a band is split across columns only when it
  is taller than a column.

Units are inches. In SVG each node is an element with id ``node-<id>`` and each piece of a
cluster's frame ``cluster-<id>`` (``-<k>`` for its later pieces).
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass

from crane.viz.dot import DotCluster, DotGraph, DotNode
from crane.viz.figure import figure_bytes, new_figure

CHAR_W, LINE_H, PAD = 0.058, 0.135, 0.08
"""Inches per character and per text line at the drawing's font size (7 pt); box padding."""
GAP_X, GAP_Y, BAND_GAP, COLUMN_GAP = 0.22, 0.3, 0.45, 0.6
ASPECT = 1.4
"""Height / width the column wrapping aims at."""


@dataclass(frozen=True, slots=True)
class Placed:
    """A node's box: centre (x, y), width and height, in inches (y grows downwards)."""

    node: DotNode
    x: float
    y: float
    width: float
    height: float
    column: int


@dataclass
class _Row:
    band: int
    nodes: list[DotNode]
    sizes: list[tuple[float, float]]

    @property
    def width(self) -> float:
        return sum(w for w, _ in self.sizes) + GAP_X * (len(self.sizes) - 1)

    @property
    def height(self) -> float:
        return max(h for _, h in self.sizes)


def _size(node: DotNode) -> tuple[float, float]:
    lines = node.attrs.get("label", node.id).split("\n")
    return (max(len(line) for line in lines) * CHAR_W + 2 * PAD, len(lines) * LINE_H + 2 * PAD)


def bands(graph: DotGraph) -> list[tuple[DotCluster | None, list[DotNode]]]:
    """Innermost clusters with their own nodes, in order (nodes outside any cluster first)."""
    found: list[tuple[DotCluster | None, list[DotNode]]] = []
    if graph.nodes:
        found.append((None, list(graph.nodes)))
    stack = list(reversed(graph.clusters))
    while stack:
        cluster = stack.pop()
        if cluster.nodes:
            found.append((cluster, list(cluster.nodes)))
        stack += reversed(cluster.clusters)
    return found


def _ranks(nodes: list[DotNode], preds: dict[str, list[str]]) -> dict[str, int]:
    """Longest path from the band's sources; nodes come in a topological order (SSA or
    column order), so one pass suffices (a later predecessor counts as absent)."""
    inside = {n.id for n in nodes}
    rank: dict[str, int] = {}
    for node in nodes:
        before = [rank[p] + 1 for p in preds[node.id] if p in inside and p in rank]
        rank[node.id] = max(before, default=0)
    return rank


def _rows(graph: DotGraph, preds: dict[str, list[str]]) -> list[_Row]:
    rows: list[_Row] = []
    order: dict[str, float] = {}
    for b, (_, nodes) in enumerate(bands(graph)):
        rank = _ranks(nodes, preds)
        by_rank: dict[int, list[DotNode]] = defaultdict(list)
        for node in nodes:
            by_rank[rank[node.id]].append(node)
        for r in sorted(by_rank):
            row = _order(by_rank[r], preds, order)
            order.update((n.id, float(k)) for k, n in enumerate(row))
            rows.append(_Row(b, row, [_size(n) for n in row]))
    return rows


def _order(row: list[DotNode], preds: dict[str, list[str]],
           order: dict[str, float]) -> list[DotNode]:
    """Nodes of one row by the mean slot of their already placed predecessors."""
    def key(item: tuple[int, DotNode]) -> tuple[float, int]:
        k, node = item
        slots = [order[p] for p in preds[node.id] if p in order]
        return (sum(slots) / len(slots) if slots else float(k), k)

    return [node for _, node in sorted(enumerate(row), key=key)]


def _columns(rows: list[_Row]) -> list[list[_Row]]:
    """Rows wrapped into columns of about equal height. A band that fits in a column
    starts a new column rather than being cut; a taller band flows row by row."""
    band_height: dict[int, float] = defaultdict(lambda: BAND_GAP)
    for row in rows:
        band_height[row.band] += row.height + GAP_Y
    total = sum(band_height.values())
    width = max((r.width for r in rows), default=1.0)
    count = max(1, math.ceil(math.sqrt(total / (ASPECT * (width + COLUMN_GAP)))))
    # A row's worth of slack, so that rounding does not leave a last column of a row or two.
    limit = total / count + max((r.height + GAP_Y for r in rows), default=0.0)
    columns: list[list[_Row]] = [[]]
    height = 0.0
    for k, row in enumerate(rows):
        starts = k == 0 or rows[k - 1].band != row.band
        whole = band_height[row.band]
        need = whole if starts and whole <= limit else row.height + GAP_Y
        if columns[-1] and height + need > limit:
            columns.append([])
            height = 0.0
        columns[-1].append(row)
        height += row.height + GAP_Y + (BAND_GAP if starts else 0.0)
    return columns


def layout(graph: DotGraph) -> tuple[list[Placed], float, float]:
    """Node boxes and the drawing's width and height (inches)."""
    preds: dict[str, list[str]] = defaultdict(list)
    for edge in graph.edges:
        preds[edge.dst].append(edge.src)
    placed: list[Placed] = []
    left, bottom = 0.3, 0.0
    for c, column in enumerate(_columns(_rows(graph, preds))):
        top, band = 0.5, -1
        for row in column:
            if row.band != band:
                top += BAND_GAP
                band = row.band
            x = left
            for node, (w, h) in zip(row.nodes, row.sizes, strict=True):
                placed.append(Placed(node, x + w / 2, top + row.height / 2, w, h, c))
                x += w + GAP_X
            top += row.height + GAP_Y
        left += max(r.width for r in column) + COLUMN_GAP
        bottom = max(bottom, top)
    return placed, left, bottom + 0.3


def cluster_frames(graph: DotGraph, at: dict[str, Placed]
                   ) -> list[tuple[DotCluster, int, tuple[float, float, float, float]]]:
    """(cluster, piece, (x0, y0, x1, y1)) of every cluster, one piece per column it spans;
    outer clusters get wider margins than the ones they hold."""
    frames = []
    stack: list[tuple[DotCluster, int]] = [(c, 0) for c in reversed(graph.clusters)]
    while stack:
        cluster, depth = stack.pop()
        members = [at[n.id] for n in cluster.all_nodes() if n.id in at]
        margin = 0.06 + 0.08 * max(0, 2 - depth)
        for piece, column in enumerate(sorted({p.column for p in members})):
            inside = [p for p in members if p.column == column]
            frames.append((cluster, piece, (
                min(p.x - p.width / 2 for p in inside) - margin,
                min(p.y - p.height / 2 for p in inside) - margin - 0.18,
                max(p.x + p.width / 2 for p in inside) + margin,
                max(p.y + p.height / 2 for p in inside) + margin)))
        stack += [(child, depth + 1) for child in reversed(cluster.clusters)]
    return frames


def render_layered(graph: DotGraph, fmt: str) -> bytes:
    """The graph drawn in layers, as PNG or SVG bytes."""
    from matplotlib.patches import FancyArrowPatch, FancyBboxPatch

    boxes, width, height = layout(graph)
    width, height = max(width, 4.0), max(height, 3.0)
    figure = new_figure(width, height)
    ax = figure.add_axes((0, 0, 1, 1))
    ax.set_xlim(0, width)
    ax.set_ylim(height, 0)
    ax.axis("off")
    at = {p.node.id: p for p in boxes}
    for cluster, piece, (x0, y0, x1, y1) in cluster_frames(graph, at):
        dashed = "dashed" in cluster.attrs.get("style", "")
        ax.add_patch(FancyBboxPatch(
            (x0, y0), x1 - x0, y1 - y0, boxstyle="round,pad=0,rounding_size=0.06",
            facecolor="none", edgecolor=cluster.attrs.get("color", "#888888")[:7],
            linewidth=0.8, linestyle="--" if dashed else "-",
            gid=f"cluster-{cluster.id}" + (f"-{piece}" if piece else "")))
        title = cluster.attrs.get("label", cluster.id).split("\n")[0]
        ax.text(x0 + 0.06, y0 + 0.03, title + (" (cont.)" if piece else ""), ha="left",
                va="top", fontsize=6.5, color="#333333")
    for p in boxes:
        ax.add_patch(FancyBboxPatch((p.x - p.width / 2, p.y - p.height / 2), p.width, p.height,
                                    boxstyle="round,pad=0,rounding_size=0.04",
                                    facecolor=p.node.attrs.get("fillcolor", "#eeeeee"),
                                    edgecolor="#444444", linewidth=0.6, gid=f"node-{p.node.id}"))
        ax.text(p.x, p.y, p.node.attrs.get("label", p.node.id), ha="center", va="center",
                fontsize=7, linespacing=1.1)
    for edge in graph.edges:
        src, dst = at.get(edge.src), at.get(edge.dst)
        if src is None or dst is None:
            continue
        bend = 0.0 if src.column == dst.column else -0.15
        ax.add_patch(FancyArrowPatch(
            (src.x, src.y + src.height / 2), (dst.x, dst.y - dst.height / 2), arrowstyle="-|>",
            mutation_scale=7, linewidth=0.6, color=edge.attrs.get("color", "#555555")[:7],
            linestyle="--" if edge.attrs.get("style") == "dashed" else "-",
            connectionstyle=f"arc3,rad={bend}", alpha=0.8))
    return figure_bytes(figure, fmt)
