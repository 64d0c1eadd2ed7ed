"""Benchmark of the inter-layer scheduler: every policy on every (network, machine, batch).

The grid of the Crane paper. Inference: ResNet-50, GoogLeNet, Transformer-Large and GPT-2
(the ``.crn`` examples, through the frontend and ``crane.schedule.from_graph``) on the
``edge`` and ``cloud`` machines at batch 1, 8 and 64. Training (one step: forward, BW1,
BW2 and the optimizer update, ``crane.schedule.training``): ResNet-50, Transformer-Large
and GPT-2 at batch 128 on ``cloud``; ResNet-50, ResNet-101 and Inception-V3 at batch 256
on ``mbs``; OPT-6.7B on ``cloud`` (where it must fit in 128 GB). Training policies:
``crane`` (its recomputation choice), ``keep`` and ``full`` (Crane's forward schedule
with every activation kept / recomputed) and the baselines with everything kept.
The inference rows add ``tangram+g``: the Tangram-like policy given Crane's groups. Tangram's
temporal pipelining (a chain of layers time-multiplexed on the same tiles, a batch group at
a time) is not modelled by ``tangram``, and it is narrower than a group (a chain keeps on
chip only what the next layer of the chain reads), so Tangram itself lies between the two
rows: ``tangram`` flatters Crane, ``tangram+g`` flatters Tangram.
``--quick`` runs the tiny example networks instead (the CI slice);
``--networks``/``--machines``/``--batches`` pick a part of the inference grid,
``--training only|no`` keeps or drops the training rows.

    python bench/schedule.py [--quick] [--csv FILE] [--workers N] [--time-limit S]
                             [--networks resnet50,gpt2] [--machines edge] [--batches 1,8]
                             [--training yes|only|no] [--scaling yes|only|no]
                             [--scaling-meshes 4,8,16,32,64] [--scaling-batches 1,8,64,256]

prints latency, energy and EDP per policy, Crane's EDP gain over each policy, the ratio
to the lower bounds, the peak DRAM (training) and the scheduling time, the mean gains over
the grid, and writes all rows to a CSV (``--csv``, default ``bench/out/schedule.csv``);
then the scaling rows (``bench/schedule_scaling.py``): Crane's search on ResNet-50 as the
mesh grows from 4 x 4 to 64 x 64 and the batch from 1 to 256, against their targets
(``--scaling only`` prints just those).
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

from crane.cost.bounds import lower_bounds
from crane.cost.workload import Workload
from crane.dialects import default_context
from crane.hardware.machine import Machine
from crane.schedule.from_graph import workload_of
from crane.schedule.objective import Objective
from crane.schedule.policies import MAX_BLOCK, POLICIES, block_solver, schedule
from crane.schedule.search import Schedule
from crane.schedule.training import TrainingSchedule, train
from crane.tools.inputs import translate

sys.path.insert(0, str(Path(__file__).resolve().parent))
import schedule_scaling  # noqa: E402  (beside this file)

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
NETWORKS = ("resnet50", "googlenet", "transformer_large", "gpt2")
QUICK_NETWORKS = ("tiny_resnet", "tiny_transformer")
BATCHES = (1, 8, 64)
OPT_BATCH = 32


TRAINING = (("resnet50", "cloud", 128), ("transformer_large", "cloud", 128),
            ("gpt2", "cloud", 128), ("resnet50", "mbs", 256), ("resnet101", "mbs", 256),
            ("inception_v3", "mbs", 256), ("opt_6_7b", "cloud", OPT_BATCH))
QUICK_TRAINING = (("tiny_resnet", "edge", 8), ("tiny_transformer", "edge", 4))
TRAIN_POLICIES = ("crane", "keep", "full", "sequential", "tangram", "set")
INFERENCE_POLICIES = (*POLICIES, "tangram+g")
"""Every policy, and the Tangram-like one with groups (``+g``; see the module docstring)."""
MACHINES = {"edge": Machine.edge, "cloud": Machine.cloud, "mbs": Machine.mbs}


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
    task: str = "inference"
    peak_dram_gb: float = 0.0
    fits: bool = True


def run_case(workload: Workload, machine: Machine, batch: int,
             policies: Iterable[str] = INFERENCE_POLICIES, time_limit: float | None = 0.05,
             workers: int = 1) -> list[Row]:
    """Schedule one workload with every policy (a ``+g`` suffix turns groups on); one row
    per policy."""
    rows: list[Row] = []
    for policy in policies:
        began = time.perf_counter()
        base = policy.removesuffix("+g")
        s = schedule(workload, batch, machine, base, time_limit=time_limit, workers=workers,
                     grouped=True if base != policy else None)
        rows.append(Row(
            workload.name, machine.name, batch, policy, s.cost.latency_cycles, s.cost.energy_pj,
            s.edp, s.cost.latency_cycles / s.bounds.latency_cycles,
            s.cost.energy_pj / s.bounds.energy_pj, time.perf_counter() - began))
    return rows


def _train_row(workload: Workload, machine: Machine, policy: str, trained: TrainingSchedule,
               seconds: float) -> Row:
    bounds = lower_bounds(workload, trained.batch, machine, training=True)
    cost = trained.cost
    return Row(workload.name, machine.name, trained.batch, policy, cost.latency_cycles,
               cost.energy_pj, cost.latency_cycles * cost.energy_pj,
               cost.latency_cycles / bounds.latency_cycles, cost.energy_pj / bounds.energy_pj,
               seconds, "training", trained.peak_dram_bytes / 1e9, trained.fits)


def run_training_case(workload: Workload, machine: Machine, batch: int,
                      time_limit: float | None = 0.05, max_block: int = MAX_BLOCK) -> list[Row]:
    """One training step with every policy of ``TRAIN_POLICIES``; one row per policy.

    Forward schedules are made once per policy; Crane trains over each of them with its
    own recomputation choice and keeps the best that fits (as ``schedule_training`` does),
    sharing one block-solver cache across its runs.
    """
    obj = Objective()
    forwards: dict[str, tuple[Schedule, float]] = {}
    for policy in POLICIES:
        began = time.perf_counter()
        forwards[policy] = (schedule(workload, batch, machine, policy, obj, max_block,
                                     time_limit, grouped=False), time.perf_counter() - began)
    crane_solver = block_solver("crane", time_limit)
    rows: list[Row] = []
    runs: list[tuple[TrainingSchedule, float]] = []
    for policy in POLICIES:
        began = time.perf_counter()
        trained = train(forwards[policy][0], workload, machine, crane_solver, obj, "crane")
        runs.append((trained, time.perf_counter() - began + forwards[policy][1]))
    fitting = [r for r in runs if r[0].fits] or runs
    best = min(fitting, key=lambda r: obj(r[0].cost.latency_cycles, r[0].cost.energy_pj))
    rows.append(_train_row(workload, machine, "crane", best[0], sum(r[1] for r in runs)))
    for recompute in ("keep", "full"):
        began = time.perf_counter()
        trained = train(forwards["crane"][0], workload, machine, crane_solver, obj, recompute)
        rows.append(_train_row(workload, machine, recompute, trained,
                               time.perf_counter() - began + forwards["crane"][1]))
    for policy in POLICIES[1:]:
        began = time.perf_counter()
        trained = train(forwards[policy][0], workload, machine, block_solver(policy), obj,
                        "keep")
        rows.append(_train_row(workload, machine, policy, trained,
                               time.perf_counter() - began + forwards[policy][1]))
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


def _key(r: Row) -> tuple[str, str, int, str]:
    return (r.network, r.machine, r.batch, r.task)


def mean_gains(rows: list[Row], task: str = "inference") -> dict[str, tuple[float, float]]:
    """Per baseline: arithmetic and geometric mean of its EDP over Crane's, over the cases
    of ``task`` (rows whose baseline does not fit in DRAM are left out)."""
    crane = {_key(r): r.edp for r in rows if r.policy == "crane" and r.task == task}
    gains: dict[str, list[float]] = {}
    for r in rows:
        if r.policy != "crane" and _key(r) in crane and r.fits:
            gains.setdefault(r.policy, []).append(r.edp / crane[_key(r)])
    return {p: (sum(g) / len(g), math.exp(sum(map(math.log, g)) / len(g)))
            for p, g in gains.items()}


def report(rows: list[Row]) -> str:
    """A table with Crane's EDP gain over each baseline per case."""
    lines = [f"{'network':<17} {'task':<5} {'machine':<6} {'batch':>5} {'policy':<10} "
             f"{'latency':>11} {'energy pJ':>11} {'EDP':>11} {'L/LB':>6} {'E/LB':>6} "
             f"{'gain':>6} {'DRAM GB':>8} {'sec':>6}"]
    crane = {_key(r): r.edp for r in rows if r.policy == "crane"}
    for r in rows:
        gain = r.edp / crane[_key(r)] if _key(r) in crane else float("nan")
        dram = f"{r.peak_dram_gb:>7.1f}{'' if r.fits else '!'}" if r.task == "training" else ""
        lines.append(f"{r.network:<17} {r.task[:5]:<5} {r.machine:<6} {r.batch:>5} "
                     f"{r.policy:<10} {r.latency_cycles:>11.4g} {r.energy_pj:>11.4g} "
                     f"{r.edp:>11.4g} {r.latency_over_bound:>6.2f} {r.energy_over_bound:>6.2f} "
                     f"{gain:>6.2f} {dram:>8} {r.schedule_seconds:>6.1f}")
    lines.append("")
    for task in ("inference", "training"):
        for policy, (mean, geo) in mean_gains(rows, task).items():
            lines.append(f"{task}: crane EDP gain over {policy:<10}: mean {mean:.2f}x, "
                         f"geomean {geo:.2f}x")
    if any(r.task == "training" and not r.fits for r in rows):
        lines.append("! = does not fit in the machine's DRAM (left out of the means)")
    return "\n".join(lines)


def _progress(text: str, began: float) -> None:
    print(f"{text} ({time.perf_counter() - began:.0f} s)", file=sys.stderr, flush=True)


def _names(text: str) -> tuple[str, ...]:
    return tuple(part for part in text.split(",") if part)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny networks only (CI)")
    parser.add_argument("--csv", default=str(Path(__file__).parent / "out" / "schedule.csv"),
                        help="where to write every row (default bench/out/schedule.csv, git-ignored)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--time-limit", type=float, default=0.05)
    parser.add_argument("--networks", default="", help="comma-separated example names")
    parser.add_argument("--machines", default="", help="edge and/or cloud")
    parser.add_argument("--batches", default="", help="comma-separated batch sizes")
    parser.add_argument("--training", default="yes", choices=("yes", "only", "no"),
                        help="with the training rows, only them, or none")
    parser.add_argument("--scaling", default="yes", choices=("yes", "only", "no"),
                        help="with the scaling rows (mesh 4x4..64x64, batch 1..256, against "
                             "their targets), only them, or none (--quick: none)")
    parser.add_argument("--scaling-meshes", default="4,8,16,32,64", help="mesh sides of the scaling rows")
    parser.add_argument("--scaling-batches", default="1,8,64,256", help="batches of the scaling rows")
    args = parser.parse_args(argv)
    if args.scaling == "only":
        return _scaling(args)
    rows: list[Row] = []
    began = time.perf_counter()
    cases = grid(args.quick, _names(args.networks), _names(args.machines),
                 tuple(int(b) for b in _names(args.batches))) if args.training != "only" else []
    for workload, machine, batch in cases:
        rows += run_case(workload, machine, batch, time_limit=args.time_limit,
                         workers=args.workers)
        _progress(f"done {workload.name} {machine.name} b{batch}", began)
    nets, machines = _names(args.networks), _names(args.machines)
    training = [(net, name, batch) for net, name, batch in (
        (QUICK_TRAINING if args.quick else TRAINING) if args.training != "no" else ())
        if (not nets or net in nets) and (not machines or name in machines)]
    for net, name, batch in training:
        machine = MACHINES[name]()
        rows += run_training_case(load_network(net, machine.data_bytes), machine, batch,
                                  args.time_limit)
        _progress(f"done training {net} {name} b{batch}", began)
    print(report(rows))
    print(f"total {time.perf_counter() - began:.0f} s")
    if args.scaling == "yes" and not args.quick:
        _scaling(args)
    Path(args.csv).parent.mkdir(parents=True, exist_ok=True)
    with open(args.csv, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(asdict(rows[0])))
        writer.writeheader()
        writer.writerows(asdict(r) for r in rows)
    return 0


def _scaling(args: argparse.Namespace) -> int:
    """Print the scaling rows (``bench/schedule_scaling.py``)."""
    began = time.perf_counter()
    rows = []
    for net, machine, batch in schedule_scaling.cases(
            tuple(int(s) for s in _names(args.scaling_meshes)),
            tuple(int(b) for b in _names(args.scaling_batches))):
        rows.append(schedule_scaling.run_row(load_network, net, machine, batch))
        _progress(f"scaled {net} {machine.name} b{batch}", began)
    print(schedule_scaling.report(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
