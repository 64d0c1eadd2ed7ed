"""Points of a sweep: one workload at one batch on one machine under one set of options.

:func:`expand` turns a :class:`crane.dse.sweep.Sweep` into its points, in a fixed order.
Every point has a **key**: 16 hex digits of a SHA-256 over everything that decides its
result (the workload's name and file digest, the batch, every field of the machine, the
scheduler options). Results files are indexed by key, so a sweep that is run again, or
extended with new values, computes only the points whose keys are new.
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from crane.dse.sweep import SCHEDULER_KEYS, Sweep
from crane.dse.workload import WorkloadInfo
from crane.hardware.machine import Machine, builtin_machines

HARDWARE = ("rows", "cols", "macs_per_cycle", "sram_bytes", "frequency_hz", "noc_bandwidth",
            "dram_bandwidth")
"""Machine fields every record shows (others only when the sweep varies them)."""


@dataclass(frozen=True, slots=True)
class SchedulerOptions:
    """Options of the ``segment`` pass a point runs with (its defaults are the pass's)."""

    policy: str = "crane"
    objective: str = "edp"
    time_limit: float = 0.05
    max_block: int = 12
    recompute: str = "crane"


@dataclass(frozen=True, slots=True)
class Point:
    """One design point; picklable, so that it can travel to a Dask worker."""

    key: str
    workload: str
    """The workload as the sweep file names it."""
    path: str
    """The workload file (absolute)."""
    batch: int
    machine: Machine
    scheduler: SchedulerOptions
    swept: tuple[str, ...] = ()
    """Machine fields the sweep sets besides :data:`HARDWARE` (shown in records)."""

    def params(self) -> dict[str, Any]:
        """The point's parameters as flat, JSON-ready record fields."""
        fields: dict[str, Any] = {"workload": self.workload, "batch": self.batch,
                                  "machine": self.machine.name}
        for name in (*HARDWARE, *(f for f in self.swept if f not in HARDWARE)):
            fields[name] = getattr(self.machine, name)
        fields.update(dataclasses.asdict(self.scheduler))
        return fields


def point_key(workload: str, digest: str, batch: int, machine: Machine,
              scheduler: SchedulerOptions) -> str:
    """The stable key of a point (see the module docstring)."""
    identity = {"workload": workload, "digest": digest, "batch": batch,
                "machine": machine.as_dict(),
                "scheduler": dataclasses.asdict(scheduler)}
    blob = json.dumps(identity, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:16]


def derive_machine(base: Machine, changes: Mapping[str, Any]) -> Machine:
    """``base`` with ``changes`` (Machine field names); DRAM ports follow a new mesh.

    A base with the ``edges`` port layout gets the edges of the new mesh; other layouts are
    kept, which must then still lie on the mesh (ValueError otherwise).
    """
    machine = _floats(base.with_changes(**changes))
    if (machine.rows, machine.cols) == (base.rows, base.cols):
        return machine
    if base.dram_ports == Machine.edge_ports(base.rows, base.cols):
        return machine.with_changes(dram_ports=Machine.edge_ports(machine.rows, machine.cols))
    outside = [p for p in base.dram_ports if p.row >= machine.rows or p.col >= machine.cols]
    if outside:
        raise ValueError(f"machine '{base.name}' has a DRAM port at [{outside[0].row}, "
                         f"{outside[0].col}], outside the {machine.rows} x {machine.cols} mesh")
    return machine


def _floats(machine: Machine) -> Machine:
    """``machine`` with its float fields as floats (``24 * GB`` is an int), so that the same
    machine always has the same key and the same record."""
    changes = {f.name: float(getattr(machine, f.name)) for f in Machine.described_by()
               if f.type == "float" and not isinstance(getattr(machine, f.name), float)}
    return machine.with_changes(**changes) if changes else machine


def expand(sweep: Sweep, infos: Mapping[Path, WorkloadInfo]) -> list[Point]:
    """Every point of ``sweep``, workloads outermost, then the axes in file order.

    ``infos`` holds :func:`crane.dse.workload.inspect_workload` of every workload. A mesh
    the base machine's DRAM ports do not fit is an error at the mesh in the sweep file.
    """
    points: list[Point] = []
    swept = tuple(sorted({name for axis in sweep.axes if axis.table == "machine"
                          for change in axis.values for name, _ in change}))
    for ref in sweep.workloads:
        info = infos[ref.path]
        base = builtin_machines()[sweep.base] if sweep.base is not None else info.machine
        for combination in itertools.product(*(axis.values for axis in sweep.axes)):
            changes = dict(pair for change in combination for pair in change)
            batch = changes.pop("batch", info.batch)
            options = SchedulerOptions(**{k: changes.pop(k) for k in SCHEDULER_KEYS
                                          if k in changes})
            try:
                machine = derive_machine(base, changes)
            except ValueError as problem:
                raise sweep.source.error("machine", "mesh" if _has(sweep, "mesh") else "rows",
                                         str(problem)) from None
            key = point_key(ref.name, info.digest, batch, machine, options)
            points.append(Point(key, ref.name, str(ref.path), batch, machine, options, swept))
    return points


def _has(sweep: Sweep, key: str) -> bool:
    return any(axis.key == key for axis in sweep.axes)
