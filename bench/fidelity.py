"""Fidelity benchmark: the analytical cost model against the timing simulator.

The issue's acceptance: on every bundled CNN on ``edge`` the analytical model is within
``TARGET_PERCENT`` of the timing simulator. Each network is lowered with
``crane-opt examples/NET.crn --machine edge -p lower-to-tile`` (a subprocess, as a user
runs it), its tile programs are simulated (``crane.exec.tile_sim.timing.simulate``), and
the table prints latency and energy, analytical and simulated, and the difference
``(analytical - simulated) / simulated`` in percent, with the lowering and simulation
times. A row whose latency or energy misses the target is marked ``MISS``. An example with
a ``train`` section (``tiny_resnet``) is lowered as the training step it describes.

Run: ``python bench/fidelity.py [--nets resnet50,vgg16] [--batch 1] [--machine edge]``.
Exit status 1 when a row misses the target.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from crane.dialects import default_context
from crane.exec.tile_sim.timing import simulate
from crane.exec.tile_sim.timing_compare import Comparison, compare_with_cost
from crane.ir.parser import parse_ops

TARGET_PERCENT = 10.0
EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
CNNS = ("resnet50", "resnet101", "vgg16", "darknet19", "mobilenet_v2", "googlenet",
        "inception_v3", "tiny_resnet")
"""The bundled CNNs; ``tiny_resnet`` is a training step (forward, backward, update)."""


def lower(net: str, batch: int, machine: str, out: Path) -> float:
    """Lower ``net`` for ``machine`` into ``out``; the seconds it took."""
    pipeline = "lower-to-tile" if batch == 0 else f"autodiff,segment{{batch={batch}}},map,codegen,alloc"
    command = [sys.executable, "-m", "crane.opt", str(EXAMPLES / f"{net}.crn"), "--machine", machine,
               "-p", pipeline, "-o", str(out)]
    began = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode:
        raise SystemExit(f"lowering {net} failed:\n{done.stderr}")
    return time.perf_counter() - began


def measure(path: Path) -> tuple[dict[str, Comparison], float]:
    """The analytical-vs-simulated comparison by metric, and the simulation's seconds."""
    (module,) = parse_ops(default_context(), path.read_text(), str(path))
    began = time.perf_counter()
    report = simulate(module, check_ir=False)
    seconds = time.perf_counter() - began
    return {c.metric: c for c in compare_with_cost(module, report)}, seconds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nets", default=",".join(CNNS), help="comma-separated example names")
    parser.add_argument("--batch", type=int, default=0, help="samples (0: the example's own)")
    parser.add_argument("--machine", default="edge", help="built-in machine (the target is for edge)")
    args = parser.parse_args()
    print(f"{'network':<14}{'L model':>12}{'L sim':>12}{'L diff':>9}{'E model':>12}"
          f"{'E sim':>12}{'E diff':>9}{'lower s':>9}{'sim s':>7}")
    missed = 0
    with tempfile.TemporaryDirectory() as scratch:
        for net in args.nets.split(","):
            path = Path(scratch) / f"{net}.tile.mlir"
            lowering = lower(net, args.batch, args.machine, path)
            rows, simulating = measure(path)
            latency, energy = rows["latency_cycles"], rows["energy_pj"]
            diffs = [latency.difference_percent or 0.0, energy.difference_percent or 0.0]
            miss = any(abs(d) > TARGET_PERCENT for d in diffs)
            missed += miss
            print(f"{net:<14}{latency.analytical:>12.4g}{latency.simulated:>12.4g}{diffs[0]:>+8.1f}%"
                  f"{energy.analytical:>12.4g}{energy.simulated:>12.4g}{diffs[1]:>+8.1f}%"
                  f"{lowering:>9.1f}{simulating:>7.1f}{'  MISS' if miss else ''}")
    print(f"target: |diff| <= {TARGET_PERCENT:.0f}% on latency and energy; "
          f"{missed} row(s) miss it")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
