"""Benchmark of ``crane-dse``: points per second of the serial and the Dask backends.

Runs every point of a sweep (default: ``examples/sweeps/edge_design.toml``, three bundled
networks x two batch sizes x four mesh/SRAM variants of ``edge``, 24 points) once in this
process and once on a local Dask cluster, through the same evaluation ``crane-dse run``
uses (the ``segment`` pass per point), and prints the throughput of each, the cluster's
start-up time and whether both runs produced identical results (cost fields compared,
wall times left out). ``--quick`` runs the 64 tiny points of the unit tests instead.

    python bench/dse.py [--quick] [--sweep FILE] [--workers N] [--backends serial,dask]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from crane.dialects import default_context
from crane.dse.points import Point, expand
from crane.dse.results import comparable
from crane.dse.run import Lost, dask_client, run_dask, run_serial
from crane.dse.sweep import read_sweep
from crane.dse.workload import inspect_workload
from crane.tools.dse_point import evaluate

ROOT = Path(__file__).resolve().parents[1]
DEFAULT = ROOT / "examples" / "sweeps" / "edge_design.toml"
QUICK = ROOT / "tests" / "unit" / "dse" / "data" / "sweep64.toml"

Records = dict[str, dict[str, Any]]


def load_points(path: Path) -> list[Point]:
    sweep = read_sweep(path)
    context = default_context()
    return expand(sweep, {ref.path: inspect_workload(ref.path, context)
                          for ref in sweep.workloads})


def timed(run: Callable[[Callable[[dict[str, Any]], None]], list[Lost]]) -> tuple[Records, float]:
    records: list[dict[str, Any]] = []
    began = time.perf_counter()
    lost = run(records.append)
    seconds = time.perf_counter() - began
    if lost:
        sys.exit(f"bench/dse.py: {len(lost)} points lost: {lost[0].reason}")
    return {r["key"]: r for r in records}, seconds


def report(name: str, records: Records, seconds: float, extra: str = "") -> None:
    failed = sum(1 for r in records.values() if r["status"] != "ok")
    busy = sum(r["seconds"] for r in records.values())
    print(f"{name:<7} {len(records)} points in {seconds:7.2f} s = {len(records) / seconds:6.2f} "
          f"points/s  (scheduling time summed over points {busy:.1f} s, {failed} failed){extra}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sweep", type=Path, default=None, help=f"default: {DEFAULT}")
    parser.add_argument("--quick", action="store_true", help=f"the tiny sweep {QUICK.name}")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--backends", default="serial,dask")
    args = parser.parse_args()
    path = args.sweep or (QUICK if args.quick else DEFAULT)
    backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    points = load_points(path)
    print(f"sweep {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}: "
          f"{len(points)} points, {os.cpu_count()} CPUs")
    runs: dict[str, Records] = {}
    serial_seconds = 0.0
    if "serial" in backends:
        runs["serial"], seconds = timed(lambda sink: run_serial(points, evaluate, sink))
        report("serial", runs["serial"], seconds)
        serial_seconds = seconds
    if "dask" in backends:
        began = time.perf_counter()
        with dask_client(None, args.workers) as client:
            startup = time.perf_counter() - began
            runs["dask"], seconds = timed(lambda sink: run_dask(points, evaluate, sink, client))
        speedup = f", {serial_seconds / seconds:.2f}x serial" if "serial" in runs else ""
        report("dask", runs["dask"], seconds,
               f"\n        {args.workers} worker processes; cluster start-up {startup:.2f} s "
               f"(not counted){speedup}")
    if len(runs) == 2:
        same = all(comparable(runs["dask"][k]) == comparable(r) for k, r in runs["serial"].items())
        print(f"results equal: {'yes' if same and runs['dask'].keys() == runs['serial'].keys() else 'NO'}"
              " (every record without its wall times, worker and run)")


if __name__ == "__main__":
    main()
