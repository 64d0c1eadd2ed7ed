"""The latency-energy Pareto front of a sweep's results, and its plot.

:func:`pareto_front` is the pure part: which points no other point beats in both latency
and energy. :func:`plot_pareto` draws one panel per workload and batch size (costs of different
networks and batches are orders of magnitude apart): every successful point in grey, the front in colour,
joined by a staircase, log-log axes. PNG, SVG or PDF by the output's suffix, written
atomically. matplotlib is imported only here, and only when plotting.

In an SVG the artists keep their ids: ``points-<n>`` and ``pareto-front-<n>`` for the
n-th panel (``<use>`` elements, one per marker), for tools and tests that read the file.
"""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from crane.atomic import write_atomically

FORMATS = {".png": "png", ".svg": "svg", ".pdf": "pdf"}


def pareto_front(costs: Sequence[tuple[float, float]]) -> list[int]:
    """Indices of the non-dominated (latency, energy) pairs, by increasing latency.

    A pair is dominated when another is no worse in both and better in one; equal pairs
    do not dominate each other, so all of them are on the front. O(n log n).
    """
    order = sorted(range(len(costs)), key=lambda i: (costs[i][0], costs[i][1]))
    front: list[int] = []
    for i in order:
        latency, energy = costs[i]
        if not front:
            front.append(i)
            continue
        last_latency, last_energy = costs[front[-1]]
        if energy < last_energy or (energy == last_energy and latency == last_latency):
            front.append(i)
    return front


@dataclass(frozen=True, slots=True)
class Panel:
    """The points of one workload (and batch) and their front (indices into ``records``)."""

    workload: str
    records: tuple[Mapping[str, Any], ...]
    front: tuple[int, ...]
    errors: int


def panels(records: Sequence[Mapping[str, Any]], per_sample: bool = False) -> list[Panel]:
    """One :class:`Panel` per workload and batch, in order of first appearance.

    A batch of 16 takes longer than a batch of 1 on any machine, so each batch size gets
    its own front; ``per_sample`` divides latency and energy by the batch instead and
    puts all batch sizes of a workload on one panel.
    """
    grouped: dict[str, list[Mapping[str, Any]]] = {}
    errors: dict[str, int] = {}
    for record in records:
        name = str(record.get("workload", "?"))
        if not per_sample:
            name += f", batch {record.get('batch')}"
        grouped.setdefault(name, [])
        if record.get("status") != "ok":
            errors[name] = errors.get(name, 0) + 1
            continue
        grouped[name].append(record)
    return [Panel(name, tuple(rows), tuple(pareto_front([cost(r, per_sample) for r in rows])),
                  errors.get(name, 0)) for name, rows in grouped.items()]


def cost(record: Mapping[str, Any], per_sample: bool = False) -> tuple[float, float]:
    """(latency in cycles, energy in pJ) of a record, per sample if asked."""
    scale = float(record.get("batch") or 1) if per_sample else 1.0
    return float(record["latency_cycles"]) / scale, float(record["energy_pj"]) / scale


def plot_pareto(records: Sequence[Mapping[str, Any]], output: str | Path,
                per_sample: bool = False, title: str | None = None) -> list[Panel]:
    """Draw the plot into ``output`` (format by suffix); the panels it drew.

    ValueError for an unknown suffix or when no record succeeded.
    """
    fmt = FORMATS.get(Path(output).suffix.lower())
    if fmt is None:
        raise ValueError(f"cannot tell the picture format of '{output}': use a "
                         f"{', '.join(FORMATS)} file name")
    drawn = [p for p in panels(records, per_sample) if p.records]
    if not drawn:
        raise ValueError("no successful point to plot")
    write_atomically(output, _render(drawn, fmt, per_sample, title))
    return drawn


def _render(drawn: list[Panel], fmt: str, per_sample: bool, title: str | None) -> bytes:
    from matplotlib.figure import Figure

    columns = min(3, len(drawn))
    rows = (len(drawn) + columns - 1) // columns
    figure = Figure(figsize=(5.2 * columns, 4.2 * rows), layout="constrained")
    unit = " per sample" if per_sample else ""
    for n, panel in enumerate(drawn):
        axes = figure.add_subplot(rows, columns, n + 1)
        xs, ys = zip(*(cost(r, per_sample) for r in panel.records), strict=True)
        axes.scatter(xs, ys, s=14, color="#9aa5b1", label=f"{len(xs)} points", gid=f"points-{n}")
        fx = [xs[i] for i in panel.front]
        fy = [ys[i] for i in panel.front]
        axes.step(fx, fy, where="post", color="#d1495b", linewidth=1.2)
        axes.scatter(fx, fy, s=34, color="#d1495b", edgecolor="black", linewidth=0.5, zorder=3,
                     label=f"Pareto front ({len(fx)})", gid=f"pareto-front-{n}")
        axes.set_xscale("log")
        axes.set_yscale("log")
        axes.set_xlabel(f"latency{unit} (cycles)")
        axes.set_ylabel(f"energy{unit} (pJ)")
        failed = f", {panel.errors} failed" if panel.errors else ""
        axes.set_title(f"{panel.workload}{failed}", fontsize=10)
        axes.grid(True, which="both", alpha=0.25)
        axes.legend(fontsize=8, loc="best")
    if title:
        figure.suptitle(title)
    buffer = io.BytesIO()
    figure.savefig(buffer, format=fmt, dpi=120)
    return buffer.getvalue()


def front_table(drawn: Sequence[Panel], per_sample: bool = False,
                columns: Sequence[str] = ()) -> str:
    """The front points of every panel as a text table (with the given parameter columns)."""
    lines: list[str] = []
    for panel in drawn:
        lines.append(f"{panel.workload}: {len(panel.front)} of {len(panel.records)} points on "
                     "the Pareto front")
        for i in panel.front:
            record = panel.records[i]
            latency, energy = cost(record, per_sample)
            params = " ".join(f"{c}={record.get(c)}" for c in columns if c in record)
            lines.append(f"  {record.get('key', '')}  latency {latency:.6g}  energy "
                         f"{energy:.6g}  {params}".rstrip())
    return "\n".join(lines)
