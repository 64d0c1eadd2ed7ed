"""Memory of the functional tile simulator, per tile instruction, against a 4 KB target.

The issue's acceptance: ``crane-sim`` holds at most ``TARGET_BYTES`` per tile instruction
(ResNet-50 at batch 8 on ``edge`` in at most 600 MB). Each network is lowered with
``crane-opt examples/NET.crn -p 'autodiff,segment{batch=B},map,codegen,alloc'`` (a
subprocess), then a fresh process parses and simulates the tile IR as ``crane-sim`` does
(parse, verify, ``simulate``). The table gives the process's peak resident memory above
its footprint once imports are done, that figure per executed instruction, and the peak
resident memory of the whole process. A row above either target is marked ``MISS``.

Run: ``python bench/sim_memory.py [--nets resnet50,tiny_resnet] [--batch 8]``; or
``python bench/sim_memory.py --ir FILE.tile.mlir`` for tile IR already lowered.
Exit status 1 when a row misses the target.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

TARGET_BYTES = 4096
TOTAL_TARGET_BYTES = 600 * 10**6
"""The whole process, for ResNet-50 at batch 8 (and anything smaller)."""
EXAMPLES = Path(__file__).resolve().parents[1] / "examples"

_MEASURE = """
import json, resource, sys
from crane.dialects import default_context
from crane.exec.tile_sim.functional import simulate
from crane.ir.verifier import verify
from crane.tools.inputs import parse_ir
def peak():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
base = peak()
text = open(sys.argv[1], encoding="utf-8").read()
module = parse_ir(text, sys.argv[1], default_context())
del text
assert not verify(module)
dram, counters = simulate(module, check_ir=False)
print(json.dumps({"base": base, "peak": peak(), "instructions": counters.instructions}))
"""


def lower(net: str, batch: int, out: Path) -> None:
    pipeline = f"autodiff,segment{{batch={batch}}},map,codegen,alloc"
    command = [sys.executable, "-m", "crane.opt", str(EXAMPLES / f"{net}.crn"), "-p", pipeline,
               "-o", str(out)]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode:
        raise SystemExit(f"lowering {net} failed:\n{done.stderr}")


def measure(path: Path) -> dict[str, int]:
    """Peak RSS before and after parsing and simulating ``path`` in a fresh process."""
    done = subprocess.run([sys.executable, "-c", _MEASURE, str(path)], capture_output=True,
                          text=True, check=False)
    if done.returncode:
        raise SystemExit(f"simulating {path} failed:\n{done.stderr}")
    figures: dict[str, int] = json.loads(done.stdout.strip().splitlines()[-1])
    return figures


def row(name: str, figures: dict[str, int]) -> tuple[str, bool]:
    held = figures["peak"] - figures["base"]
    per = held / max(1, figures["instructions"])
    ok = per <= TARGET_BYTES and figures["peak"] <= TOTAL_TARGET_BYTES
    line = (f"{name:24s} {figures['instructions']:>12,} {held / 1e6:>10.1f} {per:>12,.0f} "
            f"{figures['peak'] / 1e6:>10.1f}  {'ok' if ok else 'MISS'}")
    return line, ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nets", default="resnet50,tiny_resnet", help="comma-separated example names")
    parser.add_argument("--batch", type=int, default=8, help="batch to schedule and lower at (default 8)")
    parser.add_argument("--ir", action="append", default=[], help="tile IR to measure instead (repeatable)")
    args = parser.parse_args()
    print(f"functional simulator memory (target: {TARGET_BYTES} bytes per instruction)")
    print(f"{'input':24s} {'instructions':>12s} {'held MB':>10s} {'B/instr':>12s} {'peak MB':>10s}")
    results = []
    with tempfile.TemporaryDirectory() as scratch:
        inputs = [(Path(p).name, Path(p)) for p in args.ir]
        for net in ([] if args.ir else [n for n in args.nets.split(",") if n]):
            out = Path(scratch) / f"{net}.b{args.batch}.tile.mlir"
            lower(net, args.batch, out)
            inputs.append((f"{net} batch {args.batch}", out))
        for name, path in inputs:
            line, ok = row(name, measure(path))
            print(line, flush=True)
            results.append(ok)
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
