"""SFT benchmark: largest square image that trains on the 11 GB device, per method.

For the VGG-16 and Darknet-19 trunks (``../shared/reference/papers.md`` §2.4), float32,
batch 1, on ``Machine.gpu11()``: the predicted peak memory of plain training, of PyTorch's
5-segment ``checkpoint_sequential`` and of Crane's searched plan, at the paper's image sizes
(1024, 2048, ... in steps of 1024); the largest size each method fits; and the predicted
time of Crane's plan relative to sequential checkpointing where both fit. The SFT artifact's
own configuration (whole trunk as one segment, fixed 2x2 grid) is shown for comparison.

Run: ``python bench/sft.py [--max-size 30720] [--nets vgg16 darknet19]``.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass

from crane.hardware.machine import Machine
from crane.tiling.execute import Segment
from crane.tiling.layers import Layer, darknet19_trunk, vgg16_trunk
from crane.tiling.memory import CostModel, MemoryModel
from crane.tiling.plan import NoPlanFitsError, Plan, Planner

NETS: dict[str, Callable[[], tuple[Layer, ...]]] = {"vgg16": vgg16_trunk, "darknet19": darknet19_trunk}
STEP = 1024
GB = 1e9


@dataclass(frozen=True, slots=True)
class Row:
    """Predictions for one image size."""

    size: int
    plain: Plan
    sequential: Plan
    sft_2x2: Plan
    crane: Plan | None
    crane_minimum: int


def evaluate(layers: tuple[Layer, ...], size: int, machine: Machine) -> Row:
    """All methods at one square image size."""
    cap = _capacity(machine)
    cost = CostModel.of_machine(machine.total_macs_per_cycle * machine.frequency_hz, machine.dram_bandwidth)
    planner = Planner(layers, (size, size), MemoryModel.pytorch_float32(), cost)
    sft = planner.evaluate("SFT one segment 2x2", [Segment(0, len(layers), 2, 2)], stored_last=False)
    try:
        crane: Plan | None = planner.search(cap)
        minimum = 0
    except NoPlanFitsError as error:
        crane, minimum = None, error.minimum_bytes
    return Row(size, planner.no_checkpointing(), planner.sequential_checkpointing(5), sft, crane, minimum)


def sweep(layers: tuple[Layer, ...], machine: Machine, max_size: int) -> list[Row]:
    """Sizes 1024, 2048, ... until Crane's plan no longer fits (or ``max_size``)."""
    rows = []
    for size in range(STEP, max_size + 1, STEP):
        row = evaluate(layers, size, machine)
        rows.append(row)
        if row.crane is None:
            break
    return rows


def largest(rows: list[Row], fits: Callable[[Row], bool]) -> int:
    """Largest size of the sweep for which ``fits`` holds (0 when none)."""
    return max((row.size for row in rows if fits(row)), default=0)


def report(name: str, rows: list[Row], machine: Machine) -> dict[str, int | float]:
    """Print the table for one net and return its headline figures."""
    cap = _capacity(machine)
    print(f"\n== {name} trunk on {machine.name} ({cap / GB:.1f} GB), float32, batch 1")
    print(f"{'size':>6} {'plain GB':>9} {'seq5 GB':>8} {'crane GB':>9} {'crane/seq':>9} {'sft2x2/seq':>10}  crane plan")
    for row in rows:
        seq_fits = row.sequential.fits(cap)
        crane_gb = f"{row.crane.peak_bytes / GB:9.2f}" if row.crane else f"{'> cap':>9}"
        ratio = f"{row.crane.seconds / row.sequential.seconds:9.2f}" if row.crane and seq_fits else f"{'-':>9}"
        sft = f"{row.sft_2x2.seconds / row.sequential.seconds:10.2f}" if seq_fits else f"{'-':>10}"
        plan = row.crane.describe() if row.crane else f"none; needs {row.crane_minimum / GB:.2f} GB"
        print(f"{row.size:>6} {row.plain.peak_bytes / GB:9.2f} {row.sequential.peak_bytes / GB:8.2f} "
              f"{crane_gb} {ratio} {sft}  {plan}")
    figures: dict[str, int | float] = {
        "plain": largest(rows, lambda r: r.plain.fits(cap)),
        "sequential": largest(rows, lambda r: r.sequential.fits(cap)),
        "crane": largest(rows, lambda r: r.crane is not None),
    }
    at_2048 = next((r for r in rows if r.size == 2048), None)
    if at_2048 and at_2048.crane and at_2048.sequential.fits(cap):
        figures["overhead_2048"] = at_2048.crane.seconds / at_2048.sequential.seconds
    print(f"largest trainable: plain {figures['plain']}, 5-seg checkpointing {figures['sequential']}, "
          f"crane {figures['crane']}")
    return figures


PAPER_FIRST_OOM = {"plain": 2048, "sequential": 3072}
"""First VGG-16 size at which the baselines ran out of memory on the RTX 2080 Ti (papers.md §2.5)."""


def first_failure(rows: list[Row], fits: Callable[[Row], bool]) -> int:
    """Smallest size of the sweep at which ``fits`` fails (one step past the sweep if never)."""
    return min((row.size for row in rows if not fits(row)), default=rows[-1].size + STEP)


def acceptance(rows: list[Row], figures: dict[str, int | float], cap: int) -> list[tuple[str, bool]]:
    """The issue's VGG-16 targets, judged on the computed figures."""
    plain_oom = first_failure(rows, lambda r: r.plain.fits(cap))
    seq_oom = first_failure(rows, lambda r: r.sequential.fits(cap))
    return [
        ("crane trains VGG-16 at 20480x20480 within the cap", figures["crane"] >= 20480),
        (f"plain training first fails at {plain_oom} (paper: {PAPER_FIRST_OOM['plain']}, one step allowed)",
         abs(plain_oom - PAPER_FIRST_OOM["plain"]) <= STEP),
        (f"5-segment checkpointing first fails at {seq_oom} (paper: {PAPER_FIRST_OOM['sequential']}, "
         "one step allowed)", abs(seq_oom - PAPER_FIRST_OOM["sequential"]) <= STEP),
        (f"crane's overhead over checkpointing at 2048 is {figures.get('overhead_2048', float('nan')):.2f} "
         "(target <= 1.3)", figures.get("overhead_2048", 99.0) <= 1.3),
    ]


MEASURED_SFT_OVER_SEQ_2048 = {2: 2.21 / 1.70, 4: 2.69 / 1.70, 8: 4.48 / 1.70, 16: 9.58 / 1.70}
"""Artifact's RTX 2080 Ti VGG-16 times at 2048x2048 (papers.md §2.5): SFT n x n over seq-ckpt."""


def fidelity(machine: Machine) -> None:
    """Predicted vs measured time ratio of the artifact's one-segment n x n plans at 2048."""
    layers = vgg16_trunk()
    cost = CostModel.of_machine(machine.total_macs_per_cycle * machine.frequency_hz, machine.dram_bandwidth)
    planner = Planner(layers, (2048, 2048), MemoryModel.pytorch_float32(), cost)
    seq = planner.sequential_checkpointing(5)
    print("\n== cost-model check: VGG-16 2048x2048, SFT one segment n x n over 5-seg checkpointing")
    print(f"{'grid':>6} {'predicted':>10} {'measured':>9} {'peak GB':>8}")
    for n, measured in MEASURED_SFT_OVER_SEQ_2048.items():
        plan = planner.evaluate(f"SFT {n}x{n}", [Segment(0, len(layers), n, n)], stored_last=False)
        print(f"{f'{n}x{n}':>6} {plan.seconds / seq.seconds:10.2f} {measured:9.2f} {plan.peak_bytes / GB:8.2f}")


MEASURED_SMALLEST_FITTING_GRID = {2048: 2, 3072: 4, 4096: 8}
"""Artifact, RTX 2080 Ti, VGG-16: smallest n x n grid that did not run out of memory (§2.5)."""


def memory_fidelity(machine: Machine) -> None:
    """Smallest one-segment n x n grid our model fits, next to the one the artifact needed."""
    layers, cap = vgg16_trunk(), _capacity(machine)
    cost = CostModel.of_machine(machine.total_macs_per_cycle * machine.frequency_hz, machine.dram_bandwidth)
    models = {"implicit pad": MemoryModel.pytorch_float32(), "explicit pad": MemoryModel.sft_artifact()}
    print("\n== memory-model check: VGG-16, SFT one segment, smallest n x n grid within the cap")
    print(f"{'size':>6} {'measured':>9} " + " ".join(f"{name:>13}" for name in models))
    for size, measured in MEASURED_SMALLEST_FITTING_GRID.items():
        found = []
        for model in models.values():
            planner = Planner(layers, (size, size), model, cost)
            fits = [n for n in (1, 2, 4, 8, 16) if planner.evaluate(
                "sft", [Segment(0, len(layers), n, n)], stored_last=False).fits(cap)]
            found.append(f"{min(fits, default=0)}x{min(fits, default=0)}")
        print(f"{size:>6} {f'{measured}x{measured}':>9} " + " ".join(f"{f:>13}" for f in found))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--max-size", type=int, default=40 * STEP)
    parser.add_argument("--nets", nargs="+", choices=sorted(NETS), default=["vgg16", "darknet19"])
    args = parser.parse_args()
    machine = Machine.gpu11()
    fidelity(machine)
    memory_fidelity(machine)
    for name in args.nets:
        rows = sweep(NETS[name](), machine, args.max_size)
        figures = report(name, rows, machine)
        if name != "vgg16":
            continue
        for label, ok in acceptance(rows, figures, _capacity(machine)):
            print(f"  [{'PASS' if ok else 'FAIL'}] {label}")


def _capacity(machine: Machine) -> int:
    if machine.dram_capacity_bytes is None:
        raise ValueError(f"machine {machine.name} has no memory cap")
    return machine.dram_capacity_bytes


if __name__ == "__main__":
    main()
