"""The analytical cost next to the timing simulation, and the report ``crane-sim --timing`` prints.

The ``segment`` pass leaves the analytical cost as the module attribute ``crane.cost``
(``crane.cost.report``); :func:`compare_with_cost` pairs its latency, energy, DRAM bytes and
NoC byte-hops with the simulated figures. The difference is the analytical model's error
relative to the simulator, in percent: ``(analytical - simulated) / simulated * 100``
(negative: the model is optimistic).
"""

from __future__ import annotations

from dataclasses import dataclass

from crane.cost.report import cost_report_of
from crane.exec.tile_sim.timing import TimingReport
from crane.exec.tile_sim.timing_blocks import block_timings, format_block_timings
from crane.ir.core import Operation

COMPARED = ("latency_cycles", "energy_pj", "dram_bytes", "noc_byte_hops")
"""Keys of the ``crane.cost`` report that the simulator measures too."""


@dataclass(frozen=True, slots=True)
class Comparison:
    """One figure from both models."""

    metric: str
    analytical: float
    simulated: float

    @property
    def difference_percent(self) -> float | None:
        """The analytical model's error relative to the simulation (None if it simulated 0)."""
        if not self.simulated:
            return None
        return (self.analytical - self.simulated) / self.simulated * 100.0


def compare_with_cost(module: Operation, report: TimingReport) -> list[Comparison]:
    """The ``COMPARED`` figures of the module's ``crane.cost`` beside ``report``'s ([] if uncosted)."""
    cost = cost_report_of(module)
    if cost is None:
        return []
    simulated = report.summary()
    return [Comparison(key, float(cost[key]), float(simulated[key]))
            for key in COMPARED if key in cost]


def _number(value: float) -> str:
    return f"{value:.4e}" if abs(value) >= 1e6 else f"{value:,.1f}"


def format_comparison(rows: list[Comparison]) -> str:
    """A table: metric, analytical, simulated, difference in percent."""
    lines = [f"{'metric':<16}{'analytical':>14}{'simulated':>14}{'diff':>10}"]
    for row in rows:
        diff = row.difference_percent
        shown = f"{diff:+.1f}%" if diff is not None else "n/a"
        lines.append(f"{row.metric:<16}{_number(row.analytical):>14}"
                     f"{_number(row.simulated):>14}{shown:>10}")
    return "\n".join(lines)


def format_report(report: TimingReport, module: Operation | None = None,
                  per_tile: bool = True) -> str:
    """What ``crane-sim --timing`` prints: totals, the comparison, the comparison per
    scheduled block (``crane.exec.tile_sim.timing_blocks``), and one line per tile."""
    summary = report.summary()
    lines = [
        f"timing: {len(report.tiles)} tiles, {int(summary['instructions']):,} instructions "
        f"simulated in {report.wall_seconds:.2f} s",
        f"cycles {report.cycles:,.0f} ({report.seconds * 1e6:,.3f} us), energy "
        f"{report.energy_pj:.4e} pJ, compute utilisation "
        f"{100 * summary['compute_utilisation']:.1f}%",
    ]
    if report.cycles:
        lines.append(f"floors of this traffic and work: DRAM {report.dram_floor_cycles:,.0f} cycles "
                     f"({100 * report.dram_floor_cycles / report.cycles:.0f}% of the run), "
                     f"busiest tile's compute {report.compute_floor_cycles:,.0f} "
                     f"({100 * report.compute_floor_cycles / report.cycles:.0f}%)")
    rows = compare_with_cost(module, report) if module is not None else []
    if rows:
        lines += ["", format_comparison(rows)]
    blocks = block_timings(module, report) if module is not None else []
    if blocks:
        lines += ["", "per block: the model's latency_cycles and energy_pj beside the simulated "
                  "time and energy of its phases",
                  format_block_timings(blocks)]
    if per_tile and report.tiles:
        lines += ["", f"{'tile':<12}{'busy':>14}{'idle':>14}{'compute':>14}{'dma':>14}{'noc':>14}"]
        for t in report.tiles:
            lines.append(f"{f'{t.tile} ({t.row},{t.col})':<12}{t.busy_cycles:>14,.0f}"
                         f"{t.idle_cycles:>14,.0f}{t.compute_cycles:>14,.0f}"
                         f"{t.load_cycles + t.store_cycles:>14,.0f}{t.noc_cycles:>14,.0f}")
    return "\n".join(lines)
