"""``crane-dse``: design-space sweeps over workloads, batch sizes, machines and schedulers.

    crane-dse run sweep.toml -o results.jsonl            # every point, on a local Dask cluster
    crane-dse run sweep.toml -o results.jsonl --workers 8 --plot pareto.png
    crane-dse run sweep.toml --scheduler tcp://host:8786 # on an existing Dask cluster
    crane-dse run sweep.toml --serial                    # in this process, no Dask
    crane-dse points sweep.toml -o results.jsonl         # list the points and which are done
    crane-dse plot results.jsonl -o pareto.svg           # latency-energy Pareto plot

The sweep file format is in :mod:`crane.dse.sweep` (and ``docs/dse.md``). Results are
appended to a JSON Lines file as points finish; running the same command again after an
interruption computes only the points that are not in it yet. Exit status: 0 success
(points that cannot be scheduled are results, recorded as errors), 1 errors in the sweep
file or a workload, or points lost by the cluster, 2 usage errors, 3 internal errors,
130 interrupted.

Imports are deferred until after argument parsing, so that ``--help`` starts fast.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from crane.tools.exit_codes import EXIT_INTERRUPTED


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got '{text}'") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def build_parser() -> argparse.ArgumentParser:
    """The ``crane-dse`` command line."""
    from crane import __version__

    parser = argparse.ArgumentParser(
        prog="crane-dse", description="Schedule every point of a design-space sweep and "
        "plot latency against energy.",
        epilog="Exit status: 0 ok, 1 diagnostics or lost points, 2 usage error, 3 internal "
               "error, 130 interrupted.")
    parser.add_argument("--version", action="version", version=f"crane-dse {__version__}")
    parser.add_argument("--debug", action="store_true", help="show Python tracebacks for internal errors")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    run = commands.add_parser("run", help="run (or resume) a sweep")
    run.add_argument("sweep", help="the sweep file (TOML)")
    run.add_argument("-o", "--output", metavar="RESULTS.jsonl",
                     help="results file, appended to (default: SWEEP-NAME.jsonl here)")
    where = run.add_mutually_exclusive_group()
    where.add_argument("--workers", type=_positive, metavar="N",
                       help="processes of the local Dask cluster (default: the CPU count)")
    where.add_argument("--scheduler", metavar="ADDRESS",
                       help="use the Dask cluster whose scheduler is at ADDRESS (tcp://host:port)")
    where.add_argument("--serial", action="store_true", help="run in this process, without Dask")
    run.add_argument("--retry-errors", action="store_true",
                     help="compute again the points recorded with status error")
    run.add_argument("--plot", metavar="FILE", help="then draw the Pareto plot (.png, .svg, .pdf)")
    run.add_argument("--per-sample", action="store_true",
                     help="plot latency and energy per sample (divided by the batch)")
    run.add_argument("--progress", choices=("auto", "always", "never"), default="auto",
                     help="progress bar on stderr: auto (on a terminal), always, never")

    points = commands.add_parser("points", help="list the points of a sweep")
    points.add_argument("sweep", help="the sweep file (TOML)")
    points.add_argument("-o", "--output", metavar="RESULTS.jsonl",
                        help="mark the points already in this results file")

    plot = commands.add_parser("plot", help="draw the latency-energy Pareto plot of results")
    plot.add_argument("results", help="a results file (JSON Lines)")
    plot.add_argument("-o", "--output", required=True, metavar="FILE",
                      help="the picture: .png, .svg or .pdf (written atomically)")
    plot.add_argument("--per-sample", action="store_true",
                      help="latency and energy per sample (divided by the batch)")
    plot.add_argument("--title", help="a title above the panels")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the exit status."""
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exc:  # argparse reports usage errors itself, with status 2
        return int(exc.code or 0)
    from crane.tools.guard import guarded

    return guarded("crane-dse", lambda: _dispatch(args), args.debug, interrupted=EXIT_INTERRUPTED)


def _dispatch(args: argparse.Namespace) -> int:
    from crane.tools import dse_run

    if args.command == "run":
        return dse_run.run_command(args)
    if args.command == "points":
        return dse_run.points_command(args)
    return dse_run.plot_command(args)


def console_main() -> None:
    """The ``crane-dse`` console script."""
    try:
        status = main()
        sys.stdout.flush()
    except BrokenPipeError:
        sys.stderr.close()
        status = 0
    sys.exit(status)


if __name__ == "__main__":
    console_main()
