"""The commands of ``crane-dse``: ``run`` (or resume) a sweep, list its ``points``, ``plot``.

``run`` reads and checks the sweep file and every workload before it starts a cluster (so
that a typo costs no start-up time), opens the results file (locking it and cutting a torn
last line), runs the points not yet in it, appending each record as it arrives, and prints
a summary. SIGTERM is handled like Ctrl-C: queued tasks are cancelled, the cluster is shut
down, and the records written so far stay for the next run.
"""

from __future__ import annotations

import argparse
import signal
import sys
import uuid
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager, suppress
from pathlib import Path
from typing import Any

from crane.dse.pareto import front_table, plot_pareto
from crane.dse.points import Point, expand
from crane.dse.progress import SweepProgress
from crane.dse.results import ResultsFile, ResultsLocked, read_records
from crane.dse.run import Lost, dask_client, run_dask, run_serial
from crane.dse.sweep import Sweep, read_sweep
from crane.dse.workload import inspect_workload
from crane.ir.diagnostics import DiagnosticError, SourceManager, render
from crane.limits.files import read_text
from crane.tools.dse_point import describe, evaluate
from crane.tools.exit_codes import EXIT_DIAGNOSTICS, EXIT_INTERRUPTED, EXIT_OK, UsageError

PLOT_COLUMNS = ("batch", "rows", "cols", "sram_bytes", "noc_bandwidth", "dram_bandwidth",
                "policy", "objective")


def _print(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def _report(problem: DiagnosticError, sources: SourceManager) -> int:
    """Render located diagnostics, quoting the files they point into."""
    for diag in problem.diagnostics:
        position = diag.location.file_line_col()
        if position is None:
            _print(f"crane-dse: error: {diag.message}")
            continue
        if sources.line(position.file, 1) is None:
            with suppress(OSError, UnicodeDecodeError):
                sources.add(position.file, read_text(position.file))
        _print(render(diag, sources))
    return EXIT_DIAGNOSTICS


def load_points(path: str, sources: SourceManager) -> tuple[Sweep, list[Point]]:
    """The sweep at ``path`` and its points (DiagnosticError, or UsageError if unreadable)."""
    from crane.dialects import default_context

    try:
        sweep = read_sweep(path)
    except (OSError, UnicodeDecodeError) as problem:
        raise UsageError(f"cannot read sweep file '{path}': {problem}") from None
    sources.add(sweep.source.name, sweep.source.text)
    context = default_context()
    infos = {}
    for ref in sweep.workloads:
        try:
            infos[ref.path] = inspect_workload(ref.path, context)
        except (OSError, UnicodeDecodeError) as problem:
            raise UsageError(f"cannot read workload '{ref.path}': {problem}") from None
    return sweep, expand(sweep, infos)


def _results_path(args: argparse.Namespace) -> Path:
    return Path(args.output) if args.output else Path(Path(args.sweep).stem + ".jsonl")


# ----- run


def run_command(args: argparse.Namespace) -> int:
    sources = SourceManager()
    try:
        sweep, points = load_points(args.sweep, sources)
    except DiagnosticError as problem:
        return _report(problem, sources)
    output = _results_path(args)
    try:
        results = ResultsFile(output).open()
    except ResultsLocked as problem:
        raise UsageError(str(problem)) from None
    except OSError as problem:
        raise UsageError(f"cannot open results file '{output}': {problem.strerror}") from None
    with results, _sigterm_interrupts():
        return _run(args, points, results)


def _run(args: argparse.Namespace, points: list[Point], results: ResultsFile) -> int:
    todo = [p for p in points if not _done(results.records.get(p.key), args.retry_errors)]
    done = len(points) - len(todo)
    if results.repaired:
        _print(f"crane-dse: cut a torn last line from '{results.path}' (an interrupted run)")
    _print(f"crane-dse: {len(points)} points; {done} already in '{results.path}', "
           f"{len(todo)} to run {_where(args)}")
    progress = SweepProgress(len(points), done, _progress_stream(args.progress))
    run_id = uuid.uuid4().hex[:8]

    def sink(record: dict[str, Any]) -> None:
        record["run"] = run_id
        results.append(record)
        progress.advance(record)

    try:
        with progress:
            lost = _execute(args, todo, sink) if todo else []
    except KeyboardInterrupt:
        _print(f"crane-dse: interrupted: {done + progress.computed} of {len(points)} points are "
               f"in '{results.path}'; run the same command again to resume")
        return EXIT_INTERRUPTED
    _summary(points, results, progress, lost)
    if args.plot:
        _plot([results.records[p.key] for p in points if p.key in results.records],
              args.plot, args.per_sample, None)
    return EXIT_DIAGNOSTICS if lost else EXIT_OK


def _done(record: dict[str, Any] | None, retry_errors: bool) -> bool:
    return record is not None and not (retry_errors and record.get("status") != "ok")


def _where(args: argparse.Namespace) -> str:
    if args.serial:
        return "in this process"
    if args.scheduler:
        return f"on the Dask cluster at {args.scheduler}"
    return f"on a local Dask cluster of {args.workers or 'CPU-count'} workers"


def _progress_stream(mode: str) -> Any:
    wanted = mode == "always" or (mode == "auto" and sys.stderr.isatty())
    return sys.stderr if wanted else None


def _execute(args: argparse.Namespace, todo: list[Point], sink: Any) -> list[Lost]:
    if args.serial:
        return run_serial(todo, evaluate, sink)
    with ExitStack() as stack:
        try:
            client = stack.enter_context(dask_client(args.scheduler, args.workers))
        except (OSError, TimeoutError) as problem:
            raise UsageError(f"cannot reach the Dask scheduler at {args.scheduler}: "
                             f"{problem}") from None
        return run_dask(todo, evaluate, sink, client)


@contextmanager
def _sigterm_interrupts() -> Iterator[None]:
    """Treat SIGTERM like Ctrl-C while a sweep runs (so that it shuts down cleanly)."""
    try:
        previous = signal.signal(signal.SIGTERM, signal.default_int_handler)
    except ValueError:  # not the main thread (in-process tests): leave signals alone
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _summary(points: Sequence[Point], results: ResultsFile, progress: SweepProgress,
             lost: list[Lost]) -> None:
    records = [results.records[p.key] for p in points if p.key in results.records]
    failed = sum(1 for r in records if r.get("status") != "ok")
    rate = f" in {progress.seconds:.1f} s ({progress.rate:.2f} points/s)" if progress.computed else ""
    _print(f"crane-dse: {len(records)} of {len(points)} points done ({len(records) - failed} ok, "
           f"{failed} could not be scheduled); {progress.computed} computed now{rate}")
    for item in lost[:10]:
        _print(f"crane-dse: error: lost {describe(item.point)}: {item.reason}")
    if lost:
        _print(f"crane-dse: {len(lost)} points were lost by the cluster; run the same command "
               "again to compute them")


# ----- points and plot


def points_command(args: argparse.Namespace) -> int:
    sources = SourceManager()
    try:
        _, points = load_points(args.sweep, sources)
    except DiagnosticError as problem:
        return _report(problem, sources)
    records = {r["key"]: r for r in _read(args.output)} if args.output else {}
    for point in points:
        record = records.get(point.key)
        state = "todo" if record is None else str(record.get("status"))
        print(f"{point.key}  {state:<5}  {describe(point)}")
    print(f"{len(points)} points, {sum(1 for p in points if p.key in records)} done")
    return EXIT_OK


def _read(path: str) -> list[dict[str, Any]]:
    try:
        return read_records(path)
    except FileNotFoundError:
        return []
    except OSError as problem:
        raise UsageError(f"cannot read results file '{path}': {problem.strerror}") from None


def plot_command(args: argparse.Namespace) -> int:
    if not Path(args.results).exists():
        raise UsageError(f"results file '{args.results}' not found")
    _plot(_read(args.results), args.output, args.per_sample, args.title)
    return EXIT_OK


def _plot(records: list[dict[str, Any]], output: str, per_sample: bool,
          title: str | None) -> None:
    try:
        drawn = plot_pareto(records, output, per_sample, title)
    except ValueError as problem:
        raise UsageError(str(problem)) from None
    except OSError as problem:
        raise UsageError(f"-o: cannot write '{output}': {problem.strerror}") from None
    print(front_table(drawn, per_sample, PLOT_COLUMNS))
    _print(f"crane-dse: wrote {output}")

