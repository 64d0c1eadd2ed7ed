"""``crane-sim``: run tile programs with the functional simulator, optionally checked.

    crane-sim model.tile.mlir                  # run every tile.program, summarise DRAM outputs
    crane-sim model.tile.mlir --check          # compare with the reference interpreter
    crane-opt m.crn -p lower-to-tile | crane-sim - --check --rtol 1e-4
    crane-sim model.tile.mlir --timing --trace run.json   # timing (crane.tools.sim_timing)

The input is IR text holding ``tile.program`` ops beside their ``hw.machine`` and (for
``--check``) the ``graph.func`` they were lowered from. Without ``--check`` every DRAM
tensor of role ``output`` is summarised; with it, every interpreter output is compared
(``crane.exec.tile_sim.check``) and the maximum error printed. Exit status: 0 success,
1 an error in the input or the run (located, e.g. a deadlock or an out-of-bounds access),
2 bad command-line usage (one line naming the flag), 3 a mismatch with the interpreter or
an internal error (one line; ``--debug`` shows the traceback).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from crane.dialects import default_context
from crane.dialects.tile import DramOp
from crane.exec.tile_sim.check import check
from crane.exec.tile_sim.functional import module_ops, scratch_tensors, simulate
from crane.ir.diagnostics import DiagnosticError, SourceManager, render
from crane.ir.verifier import verify
from crane.tools.exit_codes import UsageError
from crane.tools.guard import check_finite, guarded
from crane.tools.inputs import input_format, translate
from crane.tools.run import _inputs, _read_input, _weights, check_flags, summarise
from crane.tools.sim_timing import add_timing_arguments, run_timing, timing_requested

MISMATCH = 3


def build_parser() -> argparse.ArgumentParser:
    """The ``crane-sim`` command line."""
    parser = argparse.ArgumentParser(prog="crane-sim", description="run tile programs on numpy arrays")
    parser.add_argument("input", help="tile IR file ('-' reads standard input)")
    parser.add_argument("--check", action="store_true",
                        help="compare with the reference interpreter on the module's graph.func")
    parser.add_argument("--rtol", type=float, default=1e-5,
                        help="largest accepted max|sim - ref| / max|ref| per output (default 1e-5)")
    parser.add_argument("--strict", action="store_true",
                        help="no float64 second opinion for outputs float32 cannot resolve")
    parser.add_argument("--seed", type=int, default=0, help="seed for random inputs, weights and dropout")
    parser.add_argument("--func", default=None, help="graph.func to check against (default: the scheduled one)")
    parser.add_argument("--input", dest="inputs", action="append", default=[], metavar="NAME=FILE.npy",
                        help="give an input (repeatable)")
    parser.add_argument("--weights", default=None, metavar="DIR|FILE.npz",
                        help="read weights as DIR/<name>.npy, or from a .npz archive, where present")
    parser.add_argument("--show", type=int, default=4, help="how many leading values to print (default 4)")
    parser.add_argument("--debug", action="store_true", help="show Python tracebacks for internal errors")
    add_timing_arguments(parser)
    return parser


def run(args: argparse.Namespace, sources: SourceManager) -> int:
    """Run the command; returns the exit status (raises for located and usage errors)."""
    if not args.rtol >= 0:
        raise UsageError(f"--rtol must be a non-negative number, got {args.rtol}")
    check_finite("--rtol", args.rtol, 0.0)
    check_flags(args)
    fmt = input_format("<stdin>" if args.input == "-" else args.input, None)
    text, filename = _read_input(args.input, fmt)
    sources.add(filename, text)
    module = translate(fmt, text, filename, default_context())
    problems = verify(module)
    if problems:
        raise DiagnosticError(*problems)
    if timing_requested(args):
        run_timing(module, args)
        if not args.check:
            return 0
    inputs, weights = _inputs(args.inputs), _weights(args.weights)
    if args.check:
        report = check(module, rtol=args.rtol, seed=args.seed, inputs=inputs, weights=weights, func=args.func,
                       strict=args.strict)
        print("\n".join(report.lines()))
        return 0 if report.ok else MISMATCH
    # Only outputs are printed: scratch tensors may leave DRAM once read for the last time.
    dram, counters = simulate(module, inputs, weights, seed=args.seed, check_ir=False,
                              release=scratch_tensors(module))
    for op in module_ops(module):
        if isinstance(op, DramOp) and op.role == "output":
            print(summarise(op.tensor_name, dram[op.tensor_name], args.show))
    print(f"{counters.instructions} instructions, {counters.dma_bytes} DMA bytes, "
          f"{counters.noc_bytes} NoC bytes")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the exit status (:func:`crane.tools.guard.guarded`)."""
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exc:  # argparse reports usage errors itself, with status 2
        return int(exc.code or 0)
    sources = SourceManager()
    return guarded("crane-sim", lambda: _reported(args, sources), args.debug)


def _reported(args: argparse.Namespace, sources: SourceManager) -> int:
    """:func:`run`, with located errors printed (exit status 1)."""
    try:
        return run(args, sources)
    except DiagnosticError as problem:
        for diag in problem.diagnostics:
            print(render(diag, sources), file=sys.stderr)
        return 1


def console_main() -> None:
    """The ``crane-sim`` console script."""
    try:
        status = main()
        sys.stdout.flush()
    except BrokenPipeError:
        sys.stderr.close()
        status = 0
    sys.exit(status)


if __name__ == "__main__":
    console_main()
