"""Time the ``autodiff`` expansion of OPT-6.7B (target: under 2 s on the 2-core machine).

    python bench/autodiff.py                   # examples/opt_6_7b.crn, best of 3
    python bench/autodiff.py -r 5 --file examples/gpt2.crn

Each run elaborates the network afresh (not timed), attaches a cross-entropy loss when the
network has no training section, then times the expansion into a training step, and
separately the verification of the result. Prints op counts, the forward/backward MACs
and the best times.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from crane.autodiff import attach_loss, expand_training_step, resolve_training
from crane.autodiff.stats import training_stats
from crane.dialects import default_context
from crane.dialects.graph import FuncOp
from crane.frontend.translate import crn_to_module
from crane.ir.verifier import verify

ROOT = Path(__file__).resolve().parents[1]
TARGET_SECONDS = 2.0


def load(path: Path) -> FuncOp:
    """The network's ``graph.func``, freshly elaborated."""
    module = crn_to_module(path.read_text(), str(path), default_context())
    return next(op for op in module.walk() if isinstance(op, FuncOp))


def one_run(path: Path) -> tuple[float, float, FuncOp, int]:
    """(expansion seconds, verification seconds, training step, forward op count)."""
    func = load(path)
    forward_ops = len(list(func.body.ops))
    start = time.perf_counter()
    config = resolve_training(func.attributes.get("training"), "", "", {})
    if config is None:
        attach_loss(func, "cross_entropy")
        config = resolve_training(None, "adam", "", {"lr": 1e-4})
    assert config is not None
    expand_training_step(func, config)
    expanded = time.perf_counter()
    problems = verify(func)
    verified = time.perf_counter()
    if problems:
        raise SystemExit(f"the training step does not verify: {problems[0].message}")
    return expanded - start, verified - expanded, func, forward_ops


def main() -> None:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--file", type=Path, default=ROOT / "examples" / "opt_6_7b.crn")
    parser.add_argument("-r", "--repeat", type=int, default=3)
    args = parser.parse_args()
    runs = [one_run(args.file) for _ in range(max(1, args.repeat))]
    best_expand = min(r[0] for r in runs)
    best_verify = min(r[1] for r in runs)
    func, forward_ops = runs[-1][2], runs[-1][3]
    stats = training_stats(func)
    print(f"network: {args.file.name}: {forward_ops} forward ops -> {len(list(func.body.ops))} ops in the training step")
    print(f"forward MACs {stats['forward_macs']:,}  backward MACs {stats['backward_macs']:,}  "
          f"ratio {stats['backward_macs'] / stats['forward_macs']:.3f}")
    print(f"training-step memory: weights {stats['weight_bytes']:,} B, gradients {stats['gradient_bytes']:,} B, "
          f"optimizer state {stats['optimizer_state_bytes']:,} B, activations {stats['activation_bytes']:,} B")
    print(f"autodiff: {best_expand:.3f} s (best of {len(runs)}), verify: {best_verify:.3f} s, "
          f"target < {TARGET_SECONDS} s: {'met' if best_expand < TARGET_SECONDS else 'MISSED'}")


if __name__ == "__main__":
    main()
