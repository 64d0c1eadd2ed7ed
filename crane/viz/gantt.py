"""Gantt chart of a schedule: time on x, tiles on y, one bar per (block, state, sub-block).

:func:`gantt_data` turns a :class:`crane.viz.timeline.Timeline` into plain drawing data;
:func:`render_gantt` draws it with matplotlib as PNG or SVG. Each bar covers the tiles one
sub-block (layer) runs on during one state and lasts that state's cost-model latency. Bars
of one block share a colour, later layers of the block in lighter shades; block numbers
and names run along the top, training phases are shaded bands, and a training step's
optimizer update (which runs on no tile's compute unit) is a hatched span at the end.

In SVG every bar is a group with id ``bar-b<block>-s<state>-c<column>`` and every block
label a text element with id ``block-<block>``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from crane.viz.figure import block_colour, figure_bytes, new_figure, shade
from crane.viz.timeline import BlockSpan, Step, Timeline, tile_rows

if TYPE_CHECKING:
    from matplotlib.axes import Axes

PHASE_COLOURS = {"forward": "#d6e4f0", "bw1": "#fbd5b0", "bw2": "#dccdee"}
"""Colours of the phase strip above the chart."""

STRIP_INCHES = 0.2
"""Height of the phase strip above the chart; the leader lines of the block labels take
``LEADER_INCHES`` above it (both fixed, whatever the chart's height)."""
LEADER_INCHES = 0.22

LABEL_CHARS = 30
"""Block labels longer than this are shortened in the middle."""

LABEL_GAP_PX = 9.0
"""Least distance between two rotated labels along the top."""


@dataclass(frozen=True, slots=True)
class Bar:
    """One sub-block during one state: where, when, and how to colour it."""

    block: int
    state: int
    column: int
    columns: int
    layer: str
    start: float
    cycles: float
    tiles: tuple[int, ...]

    @property
    def gid(self) -> str:
        return f"bar-b{self.block}-s{self.state}-c{self.column}"


@dataclass(frozen=True, slots=True)
class Gantt:
    """Everything :func:`render_gantt` draws."""

    title: str
    rows: int
    cols: int
    """Mesh columns (for the (row, col) of each tile label)."""
    total_cycles: float
    bars: tuple[Bar, ...]
    blocks: tuple[BlockSpan, ...]
    steps: tuple[Step, ...]
    phases: tuple[tuple[str, float, float], ...]
    """Runs of consecutive blocks in one phase: (phase, start, stop)."""
    notes: tuple[str, ...]


def cycles_text(cycles: float, scale: float) -> str:
    """A tick label: thousands of cycles (``1,200k``) on long charts, else plain cycles."""
    return f"{cycles / 1e3:,.0f}k" if scale >= 2e4 else f"{cycles:,.0f}"


def tile_runs(tiles: Sequence[int]) -> list[tuple[int, int]]:
    """Sorted tile ids as runs of consecutive ids: (first, count)."""
    runs: list[tuple[int, int]] = []
    for t in sorted(set(tiles)):
        if runs and runs[-1][0] + runs[-1][1] == t:
            runs[-1] = (runs[-1][0], runs[-1][1] + 1)
            continue
        runs.append((t, 1))
    return runs


def short_label(text: str, limit: int = LABEL_CHARS) -> str:
    """``text`` shortened in the middle to at most ``limit`` characters."""
    if len(text) <= limit:
        return text
    keep = limit - 1
    return text[: (keep + 1) // 2] + "…" + text[len(text) - keep // 2:]


def _phases(blocks: Sequence[BlockSpan]) -> tuple[tuple[str, float, float], ...]:
    bands: list[tuple[str, float, float]] = []
    for b in blocks:
        if bands and bands[-1][0] == b.phase and abs(bands[-1][2] - b.start) < 1e-9:
            bands[-1] = (b.phase, bands[-1][1], b.stop)
            continue
        bands.append((b.phase, b.start, b.stop))
    return tuple(bands)


def _notes(timeline: Timeline) -> tuple[str, ...]:
    notes = ["Bars: one per (state, layer), lasting the state's cost-model latency; colour = "
             "block, lighter = later layer of the block."]
    notes.append("Tiles: the 'map' pass's placement." if timeline.mapped else
                 "Tiles: the cost model's snake-order regions (run 'map' for the placement).")
    stretched = [b for b in timeline.blocks if abs(b.stretch - 1.0) > 1e-6]
    if stretched:
        ids = ", ".join(str(b.index) for b in stretched[:8]) + ("…" if len(stretched) > 8 else "")
        notes.append(f"Blocks {ids}: states scaled to the block's recorded latency (x"
                     f"{min(b.stretch for b in stretched):.2f}..{max(b.stretch for b in stretched):.2f}"
                     "; e.g. activations saved for training make the block DRAM-bound).")
    return tuple(notes)


def gantt_data(timeline: Timeline) -> Gantt:
    """The bars, labels and bands of a timeline's Gantt chart."""
    bars = tuple(Bar(b.index, s.state, c.column, len(b.layers), c.layer, s.start, s.cycles,
                     c.tiles)
                 for b in timeline.blocks for s in b.states for c in s.columns if s.cycles > 0)
    target = timeline.machine
    total = timeline.total_cycles
    funcs = ", ".join(f"@{f}" for f in timeline.funcs)
    title = (f"{funcs} on {target.name} ({target.rows}x{target.cols} tiles): "
             f"{len(timeline.blocks)} blocks, {total:,.0f} cycles = "
             f"{total / target.frequency_hz * 1e3:.3f} ms")
    rows = max(tile_rows(timeline.blocks), target.tiles)
    return Gantt(title, rows, target.cols, total, bars, timeline.blocks, timeline.steps,
                 _phases(timeline.blocks), _notes(timeline))


def _draw_bars(ax: Axes, gantt: Gantt, px_per_cycle: float, px_per_row: float) -> None:
    from matplotlib.collections import PatchCollection
    from matplotlib.patches import Rectangle

    for bar in gantt.bars:
        runs = tile_runs(bar.tiles)
        colour = shade(block_colour(bar.block), bar.column, bar.columns)
        patches = [Rectangle((bar.start, first), bar.cycles, count) for first, count in runs]
        collection = PatchCollection(patches, facecolor=colour, edgecolor="white",
                                     linewidth=0.4)
        collection.set_gid(bar.gid)
        ax.add_collection(collection)
        first, count = max(runs, key=lambda run: run[1])
        text = bar.layer
        if bar.cycles * px_per_cycle < 5.2 * len(text) + 6 or px_per_row * count < 9:
            continue  # too small for a readable label: the colour and top labels tell
        ax.text(bar.start + bar.cycles / 2, first + count / 2, text, ha="center",
                va="center", fontsize=6.5, clip_on=True, gid=f"label-{bar.gid}")


def spread(centres: Sequence[float], gap: float, low: float, high: float) -> list[float]:
    """Positions near ``centres`` (sorted) at least ``gap`` apart within [low, high]: a
    forward pass pushes crowded labels right, a backward pass pulls them back inside."""
    placed: list[float] = []
    for c in centres:
        placed.append(max(c, low, placed[-1] + gap if placed else low))
    limit = high
    for k in range(len(placed) - 1, -1, -1):
        placed[k] = min(placed[k], limit)
        limit = placed[k] - gap
    return placed


def _top_labels(gantt: Gantt) -> list[tuple[str, float, str, str]]:
    """(text, centre in cycles, colour, gid) of every label along the top, in time order."""
    labels = [(short_label(f"{b.index}: {b.label}"), (b.start + b.stop) / 2,
               block_colour(b.index), f"block-{b.index}") for b in gantt.blocks]
    labels += [(short_label(s.label), (s.start + s.stop) / 2, "#555555", f"step-label-{k}")
               for k, s in enumerate(gantt.steps)]
    return sorted(labels, key=lambda label: label[1])


def _draw_labels(ax: Axes, gantt: Gantt, px_per_cycle: float, inch: float) -> None:
    """Block names along the top; crowded ones fan out with a leader line to their block
    (every k-th is kept when even that cannot fit)."""
    labels = _top_labels(gantt)
    total = gantt.total_cycles or 1.0
    gap = LABEL_GAP_PX / px_per_cycle
    keep = max(1, -(-len(labels) * gap // total)) if labels else 1
    shown = [label for k, label in enumerate(labels) if k % int(keep) == 0]
    where = spread([c for _, c, _, _ in shown], gap, gap / 2, total - gap / 2)
    axis = ax.get_xaxis_transform()
    strip = 1.0 + STRIP_INCHES * inch
    bend, top = strip + 0.4 * LEADER_INCHES * inch, strip + LEADER_INCHES * inch
    for (text, centre, colour, gid), x in zip(shown, where, strict=True):
        ax.plot([centre, centre, x], [strip, bend, top], transform=axis, color=colour,
                linewidth=0.5, clip_on=False, gid=f"leader-{gid}")
        ax.text(x, top + 0.03 * inch, text, transform=axis, rotation=90, ha="center", va="bottom",
                fontsize=6.5, color=colour, gid=gid)


def _draw_blocks(ax: Axes, gantt: Gantt, px_per_cycle: float, inch: float) -> None:
    """Block boundaries, the phase strip above the chart, and the steps outside blocks."""
    from matplotlib.patches import Rectangle

    axis = ax.get_xaxis_transform()
    for b in gantt.blocks:
        ax.axvline(b.start, color="#555555", linewidth=0.5, zorder=3)
    low, high = 1.0, 1.0 + STRIP_INCHES * inch
    for phase, start, stop in gantt.phases:
        ax.add_patch(Rectangle((start, low), stop - start, high - low, transform=axis,
                               facecolor=PHASE_COLOURS.get(phase, "#eeeeee"), edgecolor="white",
                               linewidth=0.5, clip_on=False, gid=f"phase-{phase}-{start:.0f}"))
        if (stop - start) * px_per_cycle > 6.0 * len(phase) + 6:
            ax.text((start + stop) / 2, (low + high) / 2, phase, transform=axis, ha="center",
                    va="center", fontsize=6.5, color="#333333")
    for k, step in enumerate(gantt.steps):
        ax.axvspan(step.start, step.stop, facecolor="#dddddd", hatch="///", edgecolor="#999999",
                   zorder=1, gid=f"step-{k}")


def _legend(ax: Axes, gantt: Gantt) -> None:
    from matplotlib.patches import Patch

    handles = [Patch(facecolor=PHASE_COLOURS[p], label=f"{p} phase")
               for p in PHASE_COLOURS if any(band[0] == p for band in gantt.phases)]
    if gantt.steps:
        handles.append(Patch(facecolor="#dddddd", hatch="///", edgecolor="#999999",
                             label=gantt.steps[0].label))
    if len(handles) > 1:
        ax.figure.legend(handles=handles, loc="lower right", bbox_to_anchor=(0.92, 0.0),
                         ncols=len(handles), fontsize=7, frameon=False)


def render_gantt(gantt: Gantt, fmt: str) -> bytes:
    """The chart as PNG or SVG bytes."""
    from matplotlib.ticker import FuncFormatter

    width, margin_top, margin_bottom = 14.0, 2.3, 1.1
    height = min(30.0, max(5.0, margin_top + margin_bottom + 0.28 * gantt.rows))
    figure = new_figure(width, height)
    bottom, top = margin_bottom / height, 1.0 - margin_top / height
    ax = figure.add_axes((0.07, bottom, 0.85, top - bottom))
    total = gantt.total_cycles or 1.0
    ax.set_xlim(0, total)
    ax.set_ylim(gantt.rows, 0)
    px_per_cycle = figure.dpi * width * 0.85 / total
    px_per_row = figure.dpi * height * (top - bottom) / max(1, gantt.rows)
    inch = 1.0 / (height * (top - bottom))  # axes fraction per inch, vertically
    _draw_blocks(ax, gantt, px_per_cycle, inch)
    _draw_bars(ax, gantt, px_per_cycle, px_per_row)
    _draw_labels(ax, gantt, px_per_cycle, inch)
    step = max(1, -(-gantt.rows // 48))
    ticks = list(range(0, gantt.rows, step))
    ax.set_yticks([t + 0.5 for t in ticks])
    ax.set_yticklabels([f"t{t} ({t // gantt.cols},{t % gantt.cols})" for t in ticks], fontsize=7)
    ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: cycles_text(x, total)))
    ax.tick_params(axis="x", labelsize=7)
    ax.set_xlabel("time (cycles)", fontsize=8)
    ax.set_ylabel("tile (row, col)", fontsize=8)
    _legend(ax, gantt)
    figure.text(0.07, 1.0 - 0.2 / height, gantt.title, fontsize=10, va="top", gid="title")
    for k, note in enumerate(gantt.notes):
        figure.text(0.07, (0.42 - 0.15 * k) / height, note, fontsize=7, color="#444444",
                    gid=f"note-{k}")
    return figure_bytes(figure, fmt)
