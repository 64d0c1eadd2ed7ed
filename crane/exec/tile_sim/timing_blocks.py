"""The model's latency and energy of each scheduled block beside the simulated time and
energy of its phases.

``crane-sim --timing`` compares whole runs; this finds *where* the model and the program
part. Codegen closes every phase with a barrier whose label names it:

* ``BLOCK:STATE`` — a forward phase of the block labelled ``BLOCK`` (``@k`` follows when
  a grouped block runs on a later slice of the samples, ``+refresh`` when a phase runs
  its layer's forward ops again);
* ``backward:LAYER`` — the training ops of ``LAYER``, in the block whose layers hold
  ``LAYER.grad``;
* ``recompute:BLOCK:STATE`` — a forward block run again in backward (the schedule's later
  block with that label);
* ``stream:...`` and ``flush:...`` barriers fall inside a phase.

A phase's simulated time runs from the release of the barrier before it to the release of
its own; a block's row adds up its phases (a grouped block's ``latency_cycles`` covers all
its runs). Time no block claims (an unknown label, the tail after the last barrier) is
a row of its own, so the rows add up to the simulated run. A phase's simulated energy is
that of the instructions its closing barrier closes on every tile (the energy of a
``stream:``/``flush:`` stretch goes to the phase holding it); the row of no block takes
the rest, so the energies add up to the run's too.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from crane.dialects.segment import BlockOp, ScheduleOp
from crane.exec.tile_sim.functional import module_ops
from crane.exec.tile_sim.timing import TimingReport
from crane.ir.core import Operation

INSIDE_PHASE = ("stream:", "flush:")
"""Labels of barriers codegen puts inside a phase (a stream of steps, a mid-phase flush)."""


@dataclass(frozen=True, slots=True)
class BlockTiming:
    """One block's model latency and simulated time (``index`` -1: time no block claims)."""

    index: int
    label: str
    model_cycles: float | None
    simulated_cycles: float
    phases: int
    model_energy_pj: float | None = None
    simulated_energy_pj: float = 0.0

    @property
    def difference_percent(self) -> float | None:
        """``(model - simulated) / simulated`` latency in percent (None without both)."""
        return _percent(self.model_cycles, self.simulated_cycles)

    @property
    def energy_difference_percent(self) -> float | None:
        """``(model - simulated) / simulated`` energy in percent (None without both)."""
        return _percent(self.model_energy_pj, self.simulated_energy_pj)


def _percent(model: float | None, simulated: float) -> float | None:
    if model is None or not simulated:
        return None
    return (model - simulated) / simulated * 100.0


def scheduled_blocks(module: Operation) -> list[BlockOp]:
    """Every ``segment.block`` of the module's schedules, in schedule order (the tile
    programs beside them are not walked)."""
    return [block for op in module_ops(module) if isinstance(op, ScheduleOp)
            for block in op.blocks]


def owner_of(label: str, blocks: Sequence[BlockOp]) -> int:
    """The index of the block a phase-closing barrier's label names (-1: none)."""
    if label.startswith("recompute:"):
        name = label.removeprefix("recompute:").split(":")[0]
        found = [k for k, block in enumerate(blocks) if block.label == name]
        return found[-1] if found else -1
    if label.startswith("backward:"):
        gradient = label.removeprefix("backward:").split("+")[0] + ".grad"
        return next((k for k, block in enumerate(blocks) if gradient in block.layer_names), -1)
    name = label.split(":")[0]
    return next((k for k, block in enumerate(blocks) if block.label == name), -1)


def block_timings(module: Operation, report: TimingReport) -> list[BlockTiming]:
    """Per block of ``module``'s schedule that has phases, in schedule order, then the
    time no block claims (see the module docstring); [] without barriers or blocks."""
    blocks = scheduled_blocks(module)
    if not blocks or not report.barriers:
        return []
    simulated: dict[int, float] = {}
    energy: dict[int, float] = {}
    phases: dict[int, int] = {}
    released, pending, spent = 0.0, 0.0, 0.0
    for (label, at), pj in zip(report.barriers, report.barrier_energy, strict=True):
        pending, released, spent = pending + at - released, at, spent + pj
        if label.startswith(INSIDE_PHASE):
            continue
        owner = owner_of(label, blocks)
        simulated[owner] = simulated.get(owner, 0.0) + pending
        energy[owner] = energy.get(owner, 0.0) + spent
        phases[owner] = phases.get(owner, 0) + 1
        pending, spent = 0.0, 0.0
    unclaimed = simulated.pop(-1, 0.0) + pending + max(0.0, report.cycles - released)
    rows = [BlockTiming(k, blocks[k].label, blocks[k].latency_cycles, simulated[k], phases[k],
                        blocks[k].energy_pj, energy[k])
            for k in sorted(simulated)]
    if unclaimed > 0:
        # Energy no barrier closes: the tail after the last barrier, blocks no label names.
        tail = report.energy_pj - sum(energy.values()) + energy.get(-1, 0.0)
        rows.append(BlockTiming(-1, "(no block)", None, unclaimed, phases.get(-1, 0),
                                None, max(0.0, tail)))
    return rows


def format_block_timings(rows: Sequence[BlockTiming], limit: int = 48) -> str:
    """A table of the rows, in schedule order; past ``limit`` rows, the ``limit`` that
    differ most in cycles (model against simulated) and a count of the rest."""
    shown = list(rows)
    if len(shown) > limit:
        keep = sorted(shown, key=lambda r: -abs((r.model_cycles or 0.0) - r.simulated_cycles))[:limit]
        shown = [r for r in rows if r in keep]
    width = min(48, max((len(r.label) for r in shown), default=5))
    lines = [f"{'block':>5}  {'label':<{width}}{'phases':>8}{'model':>14}{'simulated':>14}"
             f"{'diff':>10}{'model pJ':>12}{'sim pJ':>12}{'diff':>10}"]
    for row in shown:
        model = f"{row.model_cycles:,.0f}" if row.model_cycles is not None else "-"
        pj = f"{row.model_energy_pj:.4g}" if row.model_energy_pj is not None else "-"
        lines.append(f"{row.index if row.index >= 0 else '-':>5}  {_cut(row.label, width):<{width}}"
                     f"{row.phases:>8}{model:>14}{row.simulated_cycles:>14,.0f}"
                     f"{_shown(row.difference_percent):>10}{pj:>12}"
                     f"{row.simulated_energy_pj:>12.4g}{_shown(row.energy_difference_percent):>10}")
    if len(shown) < len(rows):
        lines.append(f"({len(rows) - len(shown)} more blocks within a smaller difference)")
    return "\n".join(lines)


def _shown(percent: float | None) -> str:
    return f"{percent:+.1f}%" if percent is not None else "n/a"


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[:width - 3] + "..."
