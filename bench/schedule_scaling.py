"""The scaling rows of ``bench/schedule.py``: how long Crane's search (the ``segment``
pass's default: the ``crane`` policy, EDP, blocks of up to 12 layers, 0.05 s per MILP) takes
as the mesh and the batch grow, against the targets of issues 21 and 24. The search runs as
the pass runs it: its distinct blocks solved in one process per usable CPU (at most 8;
``workers`` in the table).

Mesh rows: ResNet-50 at batch 8 on square meshes of the ``edge`` tile (1 MiB SRAM, 1024
MACs per cycle), 4 x 4 to 64 x 64, DRAM ports along the left and right columns. Batch rows:
ResNet-50 on ``edge`` at batch 1 to 256, and on ``cloud`` at batch 64; ResNet-18 on
``edge`` at batch 8. Each row gives the wall and CPU seconds of the search (the workload is
built before); a row with a target says whether the wall time meets it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from crane.cost.workload import Workload
from crane.hardware.machine import Machine
from crane.schedule.policies import schedule
from crane.schedule.search import usable_workers

MESH_SIDES = (4, 8, 16, 32, 64)
BATCHES = (1, 8, 64, 256)
TARGETS: dict[tuple[str, str, int], float] = {
    ("resnet50", "edge", 8): 4.0,
    ("resnet50", "cloud", 64): 10.0,
    ("resnet50", "mesh64x64", 8): 60.0,
    ("resnet18", "edge", 8): 3.0,
}
"""Seconds ``segment`` may take (issue 24; ResNet-18: issue 21)."""


@dataclass(frozen=True, slots=True)
class ScalingRow:
    network: str
    machine: str
    batch: int
    tiles: int
    seconds: float
    cpu_seconds: float
    edp: float
    workers: int = 1

    @property
    def target(self) -> float | None:
        return TARGETS.get((self.network, self.machine, self.batch))


def mesh(side: int) -> Machine:
    """The ``edge`` tile on a ``side`` x ``side`` mesh (``edge`` itself at 4)."""
    if side == 4:
        return Machine.edge()
    return Machine.edge().with_changes(name=f"mesh{side}x{side}", rows=side, cols=side,
                                       dram_ports=Machine.edge_ports(side, side))


def cases(sides: Iterable[int] = MESH_SIDES,
          batches: Iterable[int] = BATCHES) -> list[tuple[str, Machine, int]]:
    """(network, machine, batch) of the scaling rows over ``sides`` and ``batches``."""
    found = [("resnet50", mesh(side), 8) for side in sides]
    found += [("resnet50", Machine.edge(), b) for b in batches if b != 8]
    return found + [("resnet50", Machine.cloud(), 64), ("resnet18", Machine.edge(), 8)]


def run_row(load: Callable[[str, int], Workload], network: str, machine: Machine,
            batch: int, workers: int = 0) -> ScalingRow:
    """Time one row: the schedule of ``network``'s workload (``load`` reads it), with the
    ``segment`` pass's ``workers`` (0: one per usable CPU). CPU seconds are this process's."""
    workload = load(network, machine.data_bytes)
    processes = usable_workers(workers)
    began, cpu = time.perf_counter(), time.process_time()
    found = schedule(workload, batch, machine, workers=processes)
    return ScalingRow(network, machine.name, batch, machine.tiles,
                      time.perf_counter() - began, time.process_time() - cpu, found.edp,
                      processes)


def report(rows: list[ScalingRow]) -> str:
    """One line per row, with its target and whether it is met."""
    lines = [f"{'network':<10} {'machine':<10} {'tiles':>6} {'batch':>5} {'sec':>8} "
             f"{'cpu sec':>8} {'workers':>7} {'target':>7}  ok"]
    for r in rows:
        target = f"{r.target:>7.0f}" if r.target is not None else f"{'':>7}"
        verdict = "" if r.target is None else ("yes" if r.seconds <= r.target else "NO")
        lines.append(f"{r.network:<10} {r.machine:<10} {r.tiles:>6} {r.batch:>5} "
                     f"{r.seconds:>8.2f} {r.cpu_seconds:>8.2f} {r.workers:>7} {target}  {verdict}")
    return "\n".join(lines)
