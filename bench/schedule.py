"""Benchmark of the inter-layer scheduler: every policy on every (network, machine, batch).

The real grid of the Crane paper (ResNet-50, GoogLeNet, Transformer-Large, GPT-2 from the
frontend) plugs in through ``run_case(workload, machine, batch)``; until the frontend
adapter exists the grid uses the hand-built workloads of ``crane.schedule.builders``.

    python bench/schedule.py [--quick] [--csv FILE] [--workers N] [--time-limit S]

prints latency, energy and EDP per policy, Crane's EDP gain over each baseline, the ratio
to the lower bounds and the scheduling time, and writes all rows to a CSV.
"""

from __future__ import annotations

import argparse
import csv
import sys
import time
from collections.abc import Iterable
from dataclasses import asdict, dataclass

from crane.hardware.machine import Machine
from crane.schedule import builders
from crane.schedule.policies import POLICIES, schedule
from crane.schedule.workload import Workload


@dataclass(frozen=True, slots=True)
class Row:
    network: str
    machine: str
    batch: int
    policy: str
    latency_cycles: float
    energy_pj: float
    edp: float
    latency_over_bound: float
    energy_over_bound: float
    schedule_seconds: float


def run_case(workload: Workload, machine: Machine, batch: int,
             policies: Iterable[str] = POLICIES, time_limit: float | None = 0.2,
             workers: int = 1) -> list[Row]:
    """Schedule one workload with every policy; one row per policy."""
    rows: list[Row] = []
    for policy in policies:
        began = time.perf_counter()
        s = schedule(workload, batch, machine, policy, time_limit=time_limit, workers=workers)
        rows.append(Row(
            workload.name, machine.name, batch, policy, s.cost.latency_cycles, s.cost.energy_pj,
            s.edp, s.cost.latency_cycles / s.bounds.latency_cycles,
            s.cost.energy_pj / s.bounds.energy_pj, time.perf_counter() - began))
    return rows


def grid(quick: bool) -> list[tuple[Workload, Machine, int]]:
    """The cases: tiny networks for CI, the hand-built ResNet-50 and blocks otherwise."""
    edge, cloud = Machine.edge(), Machine.cloud()
    if quick:
        nets = [builders.chain(3), builders.diamond(), builders.transformer_block(128, 64, 2)]
        return [(net, edge, batch) for net in nets for batch in (1, 4)]
    nets = [builders.residual_block(), builders.transformer_block(), builders.resnet50()]
    return [(net, m, batch) for net in nets for m in (edge, cloud) for batch in (1, 8, 64)]


def report(rows: list[Row]) -> str:
    """A table with Crane's EDP gain over each baseline per case."""
    lines = [f"{'network':<12} {'machine':<6} {'batch':>5} {'policy':<10} {'latency':>11} "
             f"{'energy pJ':>11} {'EDP':>11} {'L/LB':>6} {'E/LB':>6} {'gain':>6} {'sec':>6}"]
    crane = {(r.network, r.machine, r.batch): r.edp for r in rows if r.policy == "crane"}
    for r in rows:
        gain = r.edp / crane[(r.network, r.machine, r.batch)] if crane else float("nan")
        lines.append(f"{r.network:<12} {r.machine:<6} {r.batch:>5} {r.policy:<10} "
                     f"{r.latency_cycles:>11.4g} {r.energy_pj:>11.4g} {r.edp:>11.4g} "
                     f"{r.latency_over_bound:>6.2f} {r.energy_over_bound:>6.2f} {gain:>6.2f} "
                     f"{r.schedule_seconds:>6.1f}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny networks only (CI)")
    parser.add_argument("--csv", default="schedule-bench.csv")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--time-limit", type=float, default=0.2)
    args = parser.parse_args(argv)
    rows: list[Row] = []
    for workload, machine, batch in grid(args.quick):
        rows += run_case(workload, machine, batch, time_limit=args.time_limit,
                         workers=args.workers)
        print(f"done {workload.name} {machine.name} b{batch}", file=sys.stderr, flush=True)
    print(report(rows))
    with open(args.csv, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(asdict(rows[0])))
        writer.writeheader()
        writer.writerows(asdict(r) for r in rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
