"""``crane-opt``: read IR (or a ``.crn`` or ONNX model), run a pass pipeline, print the result.

Exit status: 0 success, 1 diagnostics (errors in the input or from passes, or a
``--verify-diagnostics`` mismatch), 2 usage errors (bad flags, unknown passes, bad
pipeline text, missing files), 3 an internal error of Crane itself.

Imports are deferred until after argument parsing so that ``--version`` and ``--help``
start fast.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from crane.tools.opt_run import Invocation


def _comma_list(text: str) -> frozenset[str]:
    return frozenset(part.strip() for part in text.split(",") if part.strip())


def build_arg_parser() -> argparse.ArgumentParser:
    from crane import __version__

    parser = argparse.ArgumentParser(
        prog="crane-opt",
        description="Run Crane passes over IR, a .crn model or an ONNX model and print the result.",
        epilog="Exit status: 0 ok, 1 diagnostics, 2 usage error, 3 internal error.",
    )
    add = parser.add_argument
    add("input", nargs="?", default="-", help="input file ('-' for stdin, the default)")
    add("-o", dest="output", metavar="FILE", help="write the output here (atomically)")
    add("-p", "--pass-pipeline", dest="pipeline", metavar="PIPELINE",
        help="passes to run: 'a,b{k=v}' or 'builtin.module(graph.func(a),b)'")
    add("--list-passes", action="store_true", help="list passes, options and named pipelines")
    add("--dump-pass-pipeline", action="store_true", help="print the resolved pipeline to stderr")
    add("--verify-each", dest="verify_each", action="store_true", default=True,
        help="verify the IR after every pass (default)")
    add("--no-verify-each", dest="verify_each", action="store_false",
        help="verify only after parsing")
    add("--print-ir-before", type=_comma_list, default=frozenset(), metavar="PASSES")
    add("--print-ir-after", type=_comma_list, default=frozenset(), metavar="PASSES")
    add("--print-ir-before-all", action="store_true")
    add("--print-ir-after-all", action="store_true")
    add("--print-ir-after-change", action="store_true", help="only when the pass changed the IR")
    add("--print-ir-after-failure", action="store_true")
    add("--timing", action="store_true", help="print a tree of per-pass wall times to stderr")
    add("--pass-statistics", action="store_true", help="print pass counters to stderr")
    add("--split-input-file", action="store_true",
        help="treat each '// -----' line as the end of an independent input")
    add("--verify-diagnostics", action="store_true",
        help="check diagnostics against expected-error/warning/note/remark annotations")
    add("--print-op-generic", action="store_true", help="print every op in the generic form")
    add("--print-debuginfo", action="store_true", help="print op locations")
    add("--color", choices=("auto", "always", "never"), default="auto", metavar="WHEN",
        help="highlight the IR printed to stdout and colour diagnostics on stderr: auto "
             "(default: on a terminal, unless NO_COLOR is set), always, never")
    add("--allow-unregistered-dialect", action="store_true",
        help="accept ops of unknown dialects (generic form only)")
    add("--input-format", choices=("ir", "crn", "onnx"), help="override the format guessed from the suffix")
    add("--onnx-batch", type=int, metavar="N", help="ONNX input: size of a symbolic batch dimension (default 1)")
    add("--onnx-dim", action="append", default=[], metavar="NAME=SIZE",
        help="ONNX input: size of a named symbolic dimension (repeatable)")
    add("--onnx-weights", metavar="FILE.npz", help="ONNX input: write the weights here (for --weights of crane-run/sim)")
    add("--machine", metavar="NAME|FILE.crn",
        help="target this machine instead of the input's: a built-in (edge, cloud, mbs, "
             "gpu11), a .crn file (FILE.crn or FILE.crn:NAME), or NAME.crn on "
             "CRANE_MACHINE_PATH")
    add("--load-pass-plugin", action="append", default=[], metavar="FILE.py",
        help="load passes and dialects from a Python file (repeatable)")
    add("--cost-report", metavar="FILE",
        help="write the schedule's cost (from the segment pass) as JSON; '-' prints a table to stderr")
    add("--emit", default="ir", metavar="KIND",
        choices=("ir", "gantt", "mesh", "graph", "segment-graph"),
        help="what to write after the pipeline: ir (default), or a picture: gantt (schedule "
             "over time on the tiles), mesh (SRAM per tile, NoC bytes per link), graph or "
             "segment-graph (Graphviz views); see docs/pictures.md")
    add("--emit-format", choices=("png", "svg", "dot"),
        help="format of the --emit picture (default: from the -o suffix)")
    add("--crash-reproducer", metavar="FILE",
        help="on an internal error, write the input and pipeline here")
    add("--debug", action="store_true", help="show Python tracebacks for internal errors")
    add("--version", action="version", version=f"crane-opt {__version__}")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_arg_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse reports usage errors itself, with status 2
        return int(exc.code or 0)
    from crane.tools.opt_run import Invocation

    invocation = Invocation(args)
    return _guarded(invocation, args.debug)


def _guarded(invocation: Invocation, debug: bool) -> int:
    from crane.tools.guard import guarded

    return guarded("crane-opt", invocation.run, debug, on_crash=invocation.write_crash_reproducer)


def console_main() -> None:
    sys.exit(main())


if __name__ == "__main__":
    console_main()
