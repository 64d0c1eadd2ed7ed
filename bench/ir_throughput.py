"""IR throughput: parse, print, verify, clone and cse on a module of 10,000 ops.

The workload is the one xDSL was measured on (toolkit-anchors.md section 6): one function
of 10,000 ops, 20% constants and 80% binary integer ops, each using one of the last 20
values. Targets on the 2-core CI-class machine, and xDSL 0.75 on the same class:

| figure | target | xDSL |
|---|---|---|
| parse (custom form) | >= 20,000 ops/s | 9,200 |
| print (custom form) | >= 100,000 ops/s | 79,000 |
| verify | >= 100,000 ops/s | 53,000 |
| clone | (reported) | 57,000 |
| cse | (reported) | 86,000 |
| ``crane-opt --version`` cold start | <= 150 ms | 140 ms |

Run: ``python bench/ir_throughput.py [--ops N] [--repeat K]``. Times are the best of K.
"""

from __future__ import annotations

import argparse
import random
import subprocess
import sys
import time
from collections.abc import Callable

from crane.dialects import default_context
from crane.dialects.builtin import ModuleOp, as_module
from crane.ir.core import Operation
from crane.ir.parser import parse_ops
from crane.ir.printer import print_op
from crane.ir.verifier import verify

TARGETS = {"parse": 20_000, "print": 100_000, "verify": 100_000}
COLD_START_TARGET_MS = 150.0


def generate(ops: int, seed: int = 0) -> str:
    """The text of the benchmark module (custom form)."""
    rng = random.Random(seed)
    lines = ["test.func @bench(%arg0: i32) -> i32 {"]
    names = ["%arg0"]
    for i in range(ops - 1):
        name = f"%v{i}"
        if rng.random() < 0.2:
            lines.append(f"  {name} = test.constant {rng.randrange(100)} : i32")
        else:
            kind = rng.choice(("addi", "muli", "subi", "xori"))
            a, b = rng.choice(names[-20:]), rng.choice(names[-20:])
            lines.append(f"  {name} = test.{kind} {a}, {b} : i32")
        names.append(name)
    lines.append(f"  test.return {names[-1]} : i32")
    lines.append("}")
    return "\n".join(lines) + "\n"


def best_of(repeat: int, action: Callable[[], object]) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        action()
        best = min(best, time.perf_counter() - start)
    return best


def parse_module(text: str) -> ModuleOp:
    ops = parse_ops(default_context(), text, "bench")
    return as_module(ops)


def run_cse(module: Operation) -> None:
    from crane.passes.generic.cse import eliminate_common_subexpressions

    eliminate_common_subexpressions(module.clone())


def cold_start_ms(repeat: int) -> float:
    command = [sys.executable, "-m", "crane.opt", "--version"]
    return 1000 * best_of(repeat, lambda: subprocess.run(command, check=True, capture_output=True))


def main() -> int:
    args = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    args.add_argument("--ops", type=int, default=10_000)
    args.add_argument("--repeat", type=int, default=5)
    opts = args.parse_args()
    text = generate(opts.ops)
    module = parse_module(text)
    count = sum(1 for _ in module.walk())
    clone_time = best_of(opts.repeat, module.clone)
    figures = {
        "parse": best_of(opts.repeat, lambda: parse_module(text)),
        "print": best_of(opts.repeat, lambda: print_op(module)),
        "verify": best_of(opts.repeat, lambda: verify(module)),
        "clone": clone_time,
        "cse": best_of(opts.repeat, lambda: run_cse(module)) - clone_time,
    }
    print(f"module: {count} ops, {len(text) / 1e6:.2f} MB of text")
    failed = False
    for name, seconds in figures.items():
        rate = count / seconds
        target = TARGETS.get(name)
        verdict = "" if target is None else (" ok" if rate >= target else f" BELOW {target:,}")
        failed |= target is not None and rate < target
        print(f"{name:>8}: {seconds * 1000:8.1f} ms  {rate:>10,.0f} ops/s{verdict}")
    start = cold_start_ms(opts.repeat)
    verdict = "ok" if start <= COLD_START_TARGET_MS else f"ABOVE {COLD_START_TARGET_MS:.0f} ms"
    print(f"cold start (crane-opt --version): {start:.0f} ms {verdict}")
    return 1 if failed or start > COLD_START_TARGET_MS else 0


if __name__ == "__main__":
    raise SystemExit(main())
