"""Benchmark of the inter-layer scheduler: every policy on every (network, machine, batch).

The inference grid of the Crane paper: ResNet-50, GoogLeNet, Transformer-Large and GPT-2
(the ``.crn`` examples, through the frontend and ``crane.schedule.from_graph``) on the
``edge`` and ``cloud`` machines at batch 1, 8 and 64. ``--quick`` runs the tiny example
networks instead (the CI slice); ``--networks``/``--machines``/``--batches`` pick a part.

    python bench/schedule.py [--quick] [--csv FILE] [--workers N] [--time-limit S]
                             [--networks resnet50,gpt2] [--machines edge] [--batches 1,8]

prints latency, energy and EDP per policy, Crane's EDP gain over each baseline, the ratio
to the lower bounds and the scheduling time, the mean gains over the grid, and writes all
rows to a CSV.
"""

from __future__ import annotations

import argparse
import csv
import math
import sys
import time
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from functools import cache
from pathlib import Path

from crane.dialects import default_context
from crane.hardware.machine import Machine
from crane.schedule.from_graph import workload_of
from crane.schedule.policies import POLICIES, schedule
from crane.schedule.workload import Workload
from crane.tools.inputs import translate

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
NETWORKS = ("resnet50", "googlenet", "transformer_large", "gpt2")
QUICK_NETWORKS = ("tiny_resnet", "tiny_transformer")
BATCHES = (1, 8, 64)


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


@cache
def load_network(name: str, elem_bytes: int = 1) -> Workload:
    """The workload of ``examples/<name>.crn`` (its first ``graph.func``)."""
    path = EXAMPLES / f"{name}.crn"
    module = translate("crn", path.read_text(), str(path), default_context())
    func = next(op for op in module.walk() if op.name == "graph.func")
    return workload_of(func, elem_bytes)


def grid(quick: bool, networks: Iterable[str] = (), machines: Iterable[str] = (),
         batches: Iterable[int] = ()) -> list[tuple[Workload, Machine, int]]:
    """The cases: the paper's inference grid, or the tiny examples on ``edge`` for CI."""
    known = {"edge": Machine.edge(), "cloud": Machine.cloud()}
    nets = tuple(networks) or (QUICK_NETWORKS if quick else NETWORKS)
    chosen = [known[m] for m in machines] or ([known["edge"]] if quick else list(known.values()))
    sizes = tuple(batches) or ((1, 4) if quick else BATCHES)
    return [(load_network(net, m.data_bytes), m, batch)
            for net in nets for m in chosen for batch in sizes]


def mean_gains(rows: list[Row]) -> dict[str, tuple[float, float]]:
    """Per baseline: arithmetic and geometric mean of its EDP over Crane's, over the cases."""
    crane = {(r.network, r.machine, r.batch): r.edp for r in rows if r.policy == "crane"}
    gains: dict[str, list[float]] = {}
    for r in rows:
        key = (r.network, r.machine, r.batch)
        if r.policy != "crane" and key in crane:
            gains.setdefault(r.policy, []).append(r.edp / crane[key])
    return {p: (sum(g) / len(g), math.exp(sum(map(math.log, g)) / len(g)))
            for p, g in gains.items()}


def report(rows: list[Row]) -> str:
    """A table with Crane's EDP gain over each baseline per case."""
    lines = [f"{'network':<17} {'machine':<6} {'batch':>5} {'policy':<10} {'latency':>11} "
             f"{'energy pJ':>11} {'EDP':>11} {'L/LB':>6} {'E/LB':>6} {'gain':>6} {'sec':>6}"]
    crane = {(r.network, r.machine, r.batch): r.edp for r in rows if r.policy == "crane"}
    for r in rows:
        gain = r.edp / crane[(r.network, r.machine, r.batch)] if crane else float("nan")
        lines.append(f"{r.network:<17} {r.machine:<6} {r.batch:>5} {r.policy:<10} "
                     f"{r.latency_cycles:>11.4g} {r.energy_pj:>11.4g} {r.edp:>11.4g} "
                     f"{r.latency_over_bound:>6.2f} {r.energy_over_bound:>6.2f} {gain:>6.2f} "
                     f"{r.schedule_seconds:>6.1f}")
    lines.append("")
    for policy, (mean, geo) in mean_gains(rows).items():
        lines.append(f"crane EDP gain over {policy:<10}: mean {mean:.2f}x, geomean {geo:.2f}x")
    return "\n".join(lines)


def _names(text: str) -> tuple[str, ...]:
    return tuple(part for part in text.split(",") if part)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny networks only (CI)")
    parser.add_argument("--csv", default="schedule-bench.csv")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--time-limit", type=float, default=0.2)
    parser.add_argument("--networks", default="", help="comma-separated example names")
    parser.add_argument("--machines", default="", help="edge and/or cloud")
    parser.add_argument("--batches", default="", help="comma-separated batch sizes")
    args = parser.parse_args(argv)
    rows: list[Row] = []
    cases = grid(args.quick, _names(args.networks), _names(args.machines),
                 tuple(int(b) for b in _names(args.batches)))
    for workload, machine, batch in cases:
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
