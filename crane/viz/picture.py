"""The pictures by name, with their formats: the one entry point of ``crane-opt --emit``.

=================  ==================  ==========================================
kind               formats             picture
=================  ==================  ==========================================
``gantt``          svg, png            schedule over time on the tiles
``mesh``           svg, png, dot       SRAM per tile, bytes per NoC link and port
``graph``          dot, png, svg       the ``graph`` level: ops and SSA uses
``segment-graph``  dot, png, svg       the ``segment`` level: blocks and layers
=================  ==================  ==========================================

The first format is the default when neither an output suffix nor an explicit format
says otherwise. The PNG/SVG of the graph views is a layered drawing with matplotlib
(``crane.viz.layered``); Graphviz does better with the DOT.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from crane.ir.core import Operation


@dataclass(frozen=True)
class PictureKind:
    name: str
    formats: tuple[str, ...]
    summary: str


PICTURES: dict[str, PictureKind] = {k.name: k for k in (
    PictureKind("gantt", ("svg", "png"), "schedule over time on the tiles"),
    PictureKind("mesh", ("svg", "png", "dot"), "SRAM per tile, bytes per NoC link and port"),
    PictureKind("graph", ("dot", "png", "svg"), "graph level: ops and SSA uses"),
    PictureKind("segment-graph", ("dot", "png", "svg"), "segment level: blocks and layers"),
)}

FORMATS = ("png", "svg", "dot")


def picture_format(kind: str, output: str | None, requested: str | None) -> str:
    """The format to write: ``requested``, else the output's suffix, else the kind's default.

    Raises ``ValueError`` naming the formats the kind supports."""
    picture = PICTURES[kind]
    suffix = output.rsplit(".", 1)[-1].lower() if output and "." in output else ""
    fmt = requested or (suffix if suffix in FORMATS else picture.formats[0])
    if fmt not in picture.formats:
        raise ValueError(f"--emit={kind} can be written as {', '.join(picture.formats)}, "
                         f"not {fmt}")
    return fmt


def _gantt(module: Operation, fmt: str) -> bytes:
    from crane.viz.gantt import gantt_data, render_gantt
    from crane.viz.timeline import timeline

    return render_gantt(gantt_data(timeline(module)), fmt)


def _mesh(module: Operation, fmt: str) -> bytes:
    from crane.viz.mesh import mesh_dot, mesh_picture, render_mesh
    from crane.viz.mesh_load import mesh_load

    picture = mesh_picture(mesh_load(module))
    return mesh_dot(picture).encode() if fmt == "dot" else render_mesh(picture, fmt)


def _graph(module: Operation, fmt: str) -> bytes:
    from crane.viz.graphs import graph_view
    from crane.viz.layered import render_layered

    view = graph_view(module)
    return view.render().encode() if fmt == "dot" else render_layered(view, fmt)


def _segment_graph(module: Operation, fmt: str) -> bytes:
    from crane.viz.graphs import segment_view
    from crane.viz.layered import render_layered

    view = segment_view(module)
    return view.render().encode() if fmt == "dot" else render_layered(view, fmt)


_RENDER: dict[str, Callable[[Operation, str], bytes]] = {
    "gantt": _gantt, "mesh": _mesh, "graph": _graph, "segment-graph": _segment_graph,
}


def render_picture(module: Operation, kind: str, fmt: str) -> bytes:
    """The picture ``kind`` of ``module`` as ``fmt`` bytes (DOT as UTF-8 text).

    Raises :class:`crane.viz.source.PictureError` when the module lacks what it needs."""
    if fmt not in PICTURES[kind].formats:
        raise ValueError(f"'{kind}' pictures cannot be written as {fmt}")
    return _RENDER[kind](module, fmt)
