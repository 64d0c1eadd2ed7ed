"""Mesh heatmap: tiles as cells coloured by SRAM use, NoC links as arrows coloured by bytes.

:func:`mesh_picture` turns a :class:`crane.viz.mesh_load.MeshLoad` into drawing data (cell
and arrow positions, values, labels); :func:`render_mesh` draws it with matplotlib (PNG or
SVG) and :func:`mesh_dot` writes it as DOT with pinned positions (``neato -n``).

Row 0 is at the top, column 0 at the left. Each pair of neighbouring tiles has two arrows,
one per direction, drawn side by side. DRAM ports are marked outside the mesh next to the
tile they attach to, with the bytes through them. In SVG, tiles are elements with ids
``tile-<id>``, links ``link-<from>-<to>`` and ports ``port-<index>``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from crane.viz.dot import DotEdge, DotGraph, DotNode
from crane.viz.figure import figure_bytes, human_bytes, new_figure
from crane.viz.mesh_load import Link, MeshLoad, port_tile

if TYPE_CHECKING:
    from matplotlib.colors import Colormap, Normalize
    from matplotlib.figure import Figure

OFFSET = 0.12
"""How far each direction's arrow sits from the line joining two tile centres."""


@dataclass(frozen=True, slots=True)
class Cell:
    tile: int
    row: int
    col: int
    sram: float


@dataclass(frozen=True, slots=True)
class Arrow:
    link: Link
    start: tuple[float, float]
    stop: tuple[float, float]
    nbytes: float


@dataclass(frozen=True, slots=True)
class PortMark:
    index: int
    tile: int
    at: tuple[float, float]
    nbytes: float


@dataclass(frozen=True, slots=True)
class MeshPicture:
    """Everything :func:`render_mesh` and :func:`mesh_dot` draw (x = col, y = row)."""

    title: str
    rows: int
    cols: int
    capacity: int
    cells: tuple[Cell, ...]
    arrows: tuple[Arrow, ...]
    ports: tuple[PortMark, ...]
    notes: tuple[str, ...]


def neighbour_links(rows: int, cols: int) -> list[Link]:
    """Every directed link of a rows x cols mesh."""
    links: list[Link] = []
    for t in range(rows * cols):
        r, c = divmod(t, cols)
        if c + 1 < cols:
            links += [(t, t + 1), (t + 1, t)]
        if r + 1 < rows:
            links += [(t, t + cols), (t + cols, t)]
    return links


def _arrow(link: Link, cols: int, nbytes: float) -> Arrow:
    (ra, ca), (rb, cb) = divmod(link[0], cols), divmod(link[1], cols)
    # Offset to the arrow's right (in a y-down picture), so the two directions separate.
    dx, dy = cb - ca, rb - ra
    ox, oy = -dy * OFFSET, dx * OFFSET
    shrink = 0.3
    start = (ca + dx * shrink + ox, ra + dy * shrink + oy)
    stop = (cb - dx * shrink + ox, rb - dy * shrink + oy)
    return Arrow(link, start, stop, nbytes)


def _port_position(row: int, col: int, rows: int, cols: int) -> tuple[float, float]:
    """Just outside the mesh border nearest to the tile (x, y)."""
    if col == 0:
        return (-0.75, float(row))
    if col == cols - 1:
        return (cols - 0.25, float(row))
    if row == 0:
        return (float(col), -0.75)
    if row == rows - 1:
        return (float(col), rows - 0.25)
    return (col - 0.35, row - 0.35)


def mesh_picture(load: MeshLoad) -> MeshPicture:
    """The cells, arrows and port marks of a mesh load."""
    target = load.machine
    rows, cols = target.rows, target.cols
    cells = tuple(Cell(t, *divmod(t, cols), load.sram[t]) for t in range(target.tiles))
    arrows = tuple(_arrow(link, cols, load.links.get(link, 0.0))
                   for link in neighbour_links(rows, cols))
    marks = []
    for k, nbytes in enumerate(load.ports[: len(target.dram_ports)]):
        tile = port_tile(target, k)
        marks.append(PortMark(k, tile, _port_position(*divmod(tile, cols), rows, cols), nbytes))
    total_links = sum(load.links.values())
    title = (f"{target.name} mesh ({rows}x{cols}), from the {load.source}: "
             f"SRAM per tile, NoC bytes per link")
    notes = (f"SRAM: {load.sram_measure}; capacity {human_bytes(target.sram_bytes)} per tile.",
             f"Links: XY routes, {human_bytes(total_links)} over all links; DRAM ports: "
             f"{human_bytes(sum(load.ports))} through {len(marks)} ports.")
    return MeshPicture(title, rows, cols, target.sram_bytes, cells, arrows, tuple(marks), notes)


def link_level(nbytes: float, low: float, high: float) -> float:
    """Where ``nbytes`` sits between ``low`` and ``high`` on a log scale, in [0, 1] (0 for
    an idle link)."""
    if nbytes <= 0:
        return 0.0
    clipped = min(max(nbytes, low), high)
    return math.log(clipped / low) / math.log(high / low) if high > low else 1.0


def render_mesh(picture: MeshPicture, fmt: str) -> bytes:
    """The heatmap as PNG or SVG bytes."""
    from matplotlib import colormaps
    from matplotlib.colors import LogNorm
    from matplotlib.colors import Normalize as Linear
    from matplotlib.patches import FancyArrowPatch, Rectangle

    rows, cols = picture.rows, picture.cols
    cell_in = min(1.6, max(0.45, 9.0 / max(rows, cols)))
    figure = new_figure(cols * cell_in + 4.2, rows * cell_in + 2.0)
    ax = figure.add_axes((0.03, 0.1, 0.7, 0.8))
    ax.set_xlim(-1.2, cols + 0.2)
    ax.set_ylim(rows + 0.2, -1.2)
    ax.set_aspect("equal")
    ax.axis("off")
    sram_cmap, link_cmap = colormaps["YlGnBu"], colormaps["plasma"]
    sram_norm = Linear(0, max(picture.capacity, max(c.sram for c in picture.cells)))
    busiest = max((a.nbytes for a in picture.arrows), default=0.0)
    low, high = max(1.0, busiest / 1e4), max(2.0, busiest)
    link_norm = LogNorm(low, high)
    font = 6.5 if cell_in < 0.9 else 8
    for cell in picture.cells:
        colour = sram_cmap(sram_norm(cell.sram))
        ax.add_patch(Rectangle((cell.col - 0.4, cell.row - 0.4), 0.8, 0.8, facecolor=colour,
                               edgecolor="#333333", linewidth=0.6, gid=f"tile-{cell.tile}"))
        dark = sram_norm(cell.sram) > 0.55
        ax.text(cell.col, cell.row, f"t{cell.tile}\n{human_bytes(cell.sram)}\n"
                f"{100 * cell.sram / max(1, picture.capacity):.0f}%", ha="center", va="center",
                fontsize=font, color="white" if dark else "black", gid=f"tile-label-{cell.tile}")
    for arrow in picture.arrows:
        level = link_level(arrow.nbytes, low, high)
        paint = link_cmap(level) if arrow.nbytes > 0 else "#cccccc"
        width = 0.6 + 2.4 * level
        ax.add_patch(FancyArrowPatch(arrow.start, arrow.stop, arrowstyle="-|>",
                                     mutation_scale=7, color=paint, linewidth=width,
                                     gid=f"link-{arrow.link[0]}-{arrow.link[1]}"))
    for mark in picture.ports:
        x, y = mark.at
        ax.add_patch(Rectangle((x - 0.16, y - 0.16), 0.32, 0.32, facecolor="#f2c14e",
                               edgecolor="#7a5c00", linewidth=0.8, gid=f"port-{mark.index}"))
        ax.text(x, y + 0.3, f"P{mark.index}\n{human_bytes(mark.nbytes)}", ha="center",
                va="top", fontsize=font - 1, gid=f"port-label-{mark.index}")
    _colourbars(figure, [(sram_cmap, sram_norm, "SRAM per tile"),
                         (link_cmap, link_norm, "bytes per link (log scale)")],
                [picture.capacity * k / 4 for k in range(5)])
    figure.text(0.02, 0.97, picture.title, fontsize=10, va="top", gid="title")
    for k, note in enumerate(picture.notes):
        figure.text(0.02, 0.065 - 0.03 * k, note, fontsize=7, color="#444444", gid=f"note-{k}")
    return figure_bytes(figure, fmt)


def _colourbars(figure: Figure, bars: Sequence[tuple[Colormap, Normalize, str]],
                sram_ticks: Sequence[float]) -> None:
    """The SRAM scale (ticks at quarters of the capacity) and the link scale, side by side."""
    from matplotlib.cm import ScalarMappable
    from matplotlib.ticker import FuncFormatter

    for k, (cmap, norm, label) in enumerate(bars):
        cax = figure.add_axes((0.76 + 0.11 * k, 0.15, 0.022, 0.7))
        bar = figure.colorbar(ScalarMappable(norm=norm, cmap=cmap), cax=cax)
        if k == 0:
            bar.set_ticks(list(sram_ticks))
        bar.set_label(label, fontsize=8)
        bar.ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: human_bytes(v)))
        bar.ax.tick_params(labelsize=7)


def _hex(rgba: tuple[float, float, float, float]) -> str:
    return "#" + "".join(f"{round(255 * v):02x}" for v in rgba[:3])


def mesh_dot(picture: MeshPicture) -> str:
    """The mesh as DOT: pinned tile and port nodes, one edge per directed link."""
    graph = DotGraph("mesh", directed=True,
                     attrs={"layout": "neato", "label": picture.title, "labelloc": "t",
                            "fontsize": "11", "splines": "true", "overlap": "true"},
                     node_defaults={"shape": "box", "style": "filled", "fontsize": "9",
                                    "width": "0.9", "height": "0.9", "fixedsize": "true"})
    busiest = max((a.nbytes for a in picture.arrows), default=0.0) or 1.0
    for cell in picture.cells:
        level = cell.sram / max(1, picture.capacity)
        grey = _hex((1 - 0.7 * min(1.0, level),) * 3 + (1.0,))
        graph.nodes.append(DotNode(f"t{cell.tile}", {
            "label": f"t{cell.tile}\n{human_bytes(cell.sram)}\n{100 * level:.0f}%",
            "pos": f"{cell.col * 1.5:g},{-cell.row * 1.5:g}!", "fillcolor": grey}))
    for mark in picture.ports:
        graph.nodes.append(DotNode(f"P{mark.index}", {
            "label": f"P{mark.index}\n{human_bytes(mark.nbytes)}", "shape": "cds",
            "fillcolor": "#f2c14e", "width": "0.6", "height": "0.4",
            "pos": f"{mark.at[0] * 1.5:g},{-mark.at[1] * 1.5:g}!"}))
        graph.edges.append(DotEdge(f"P{mark.index}", f"t{mark.tile}",
                                   {"style": "dashed", "arrowhead": "none"}))
    for arrow in picture.arrows:
        share = arrow.nbytes / busiest
        graph.edges.append(DotEdge(f"t{arrow.link[0]}", f"t{arrow.link[1]}", {
            "label": human_bytes(arrow.nbytes) if arrow.nbytes else "",
            "penwidth": f"{0.5 + 3.5 * share:.2f}", "fontsize": "7",
            "color": "#cccccc" if not arrow.nbytes else _hex((share, 0.1, 0.6 * (1 - share), 1.0))}))
    return graph.render()
