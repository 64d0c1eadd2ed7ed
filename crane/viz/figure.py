"""Matplotlib plumbing shared by the renderers: figures without pyplot, bytes out, colours.

matplotlib is imported here, inside functions, so that importing :mod:`crane.viz` (and
starting ``crane-opt``) stays fast. Figures are made with ``matplotlib.figure.Figure``
directly, never through ``pyplot``: no global state, no GUI backend, safe in threads.
SVG keeps text as ``<text>`` elements (``svg.fonttype = none``) so that labels can be
searched and tested, and artists carry ``gid``s that become SVG element ids.
"""

from __future__ import annotations

import io
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from matplotlib.figure import Figure

RASTER_FORMATS = ("png",)
VECTOR_FORMATS = ("svg",)
DPI = 110

_PALETTE = ("#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1",
            "#ff9da7", "#9c755f", "#bab0ac", "#1f77b4", "#2ca02c", "#d62728", "#9467bd",
            "#8c564b", "#e377c2", "#17becf", "#bcbd22")
"""Distinct colours for blocks (Tableau 10 then more), cycled."""


MAX_PIXELS = 60_000
"""Largest side of a raster picture (matplotlib refuses 2^16 pixels and more)."""


def new_figure(width: float, height: float) -> Figure:
    """A figure of ``width`` x ``height`` inches (no pyplot); very large drawings get a
    lower resolution so that their PNG stays within matplotlib's limits."""
    from matplotlib.figure import Figure

    dpi = min(DPI, MAX_PIXELS / max(width, height, 1.0))
    return Figure(figsize=(width, height), dpi=dpi)


def figure_bytes(figure: Figure, fmt: str) -> bytes:
    """The figure as PNG or SVG bytes."""
    if fmt not in RASTER_FORMATS + VECTOR_FORMATS:
        raise ValueError(f"matplotlib pictures are png or svg, not '{fmt}'")
    import matplotlib

    buffer = io.BytesIO()
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "crane"}):
        figure.savefig(buffer, format=fmt, dpi=figure.dpi, metadata=_metadata(fmt))
    return buffer.getvalue()


def _metadata(fmt: str) -> dict[str, str | None]:
    """No creation dates: the same IR always gives the same file."""
    if fmt == "svg":
        return {"Date": None, "Creator": "crane"}
    return {"Software": "crane"}


def block_colour(index: int) -> str:
    return _PALETTE[index % len(_PALETTE)]


def shade(colour: str, column: int, columns: int) -> tuple[float, float, float]:
    """``colour`` lightened a little more for each later column of a block, so that the
    layers of one block share a hue but can be told apart."""
    from matplotlib.colors import to_rgb

    r, g, b = to_rgb(colour)
    mix = 0.45 * column / max(1, columns - 1) if columns > 1 else 0.0
    return (r + (1 - r) * mix, g + (1 - g) * mix, b + (1 - b) * mix)


def human_bytes(nbytes: float) -> str:
    """Bytes in the largest binary unit that keeps them at least one (``1.5 MiB``)."""
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if nbytes >= scale:
            return f"{nbytes / scale:.1f} {unit}"
    return f"{nbytes:.0f} B"
