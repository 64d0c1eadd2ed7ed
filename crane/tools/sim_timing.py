"""The timing half of ``crane-sim``: ``--timing``, ``--trace FILE`` and ``--in-order``.

    crane-sim model.tile.mlir --timing                 # cycles, energy, vs crane.cost, per tile
    crane-sim model.tile.mlir --trace run.json         # the same, and a Perfetto trace
    crane-opt m.crn -p lower-to-tile | crane-sim - --timing --check

``crane.tools.sim`` adds these options with :func:`add_timing_arguments` and calls
:func:`run_timing` on the verified module when :func:`timing_requested`. Problems in the
programs (unmatched transfers, deadlock) are located ``DiagnosticError``\\ s for the caller
to render; the trace file is written atomically and only after a successful simulation.
"""

from __future__ import annotations

import argparse
import sys
from typing import TextIO

from crane.exec.tile_sim.timing import TimingConfig, simulate
from crane.exec.tile_sim.timing_compare import format_report
from crane.exec.tile_sim.timing_program import programs_of
from crane.ir.core import Operation
from crane.ir.diagnostics import DiagnosticError
from crane.tools.exit_codes import UsageError


def add_timing_arguments(parser: argparse.ArgumentParser) -> None:
    """The timing options of ``crane-sim``."""
    group = parser.add_argument_group("timing simulation")
    group.add_argument("--timing", action="store_true",
                       help="run the event-driven timing simulator: cycles, energy, the "
                            "difference from the module's crane.cost, busy/idle per tile")
    group.add_argument("--trace", metavar="FILE", default=None,
                       help="write a Chrome trace-event JSON of every tile (implies --timing)")
    group.add_argument("--in-order", action="store_true",
                       help="issue each tile's program strictly in order (default: per unit)")


def timing_requested(args: argparse.Namespace) -> bool:
    return bool(getattr(args, "timing", False) or getattr(args, "trace", None))


def run_timing(module: Operation, args: argparse.Namespace, out: TextIO | None = None) -> int:
    """Simulate ``module``, print the report, write the trace if asked; exit status 0."""
    if not programs_of(module):
        raise DiagnosticError.at(module.location, "the module holds no tile.program to simulate")
    config = TimingConfig(in_order=bool(getattr(args, "in_order", False)),
                          trace=bool(getattr(args, "trace", None)))
    report = simulate(module, config=config, check_ir=False)   # crane-sim verified it
    if args.trace:
        try:
            report.write_trace(args.trace)
        except OSError as problem:
            raise UsageError(f"--trace: cannot write '{args.trace}': {problem.strerror}") from None
    print(format_report(report, module), file=out or sys.stdout)
    return 0
