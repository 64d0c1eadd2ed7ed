"""One point of a ``crane-dse`` sweep: the ``segment`` pass on the point's machine.

:func:`evaluate` does what ``crane-opt WORKLOAD -p 'segment{...}' --cost-report`` does,
in-process: read the workload, verify it, make it target the point's machine, run the
``segment`` pass through a pass manager (verifying after it) and read the ``crane.cost``
report back. It runs on Dask workers, so it lives at module level and never raises: a
workload that cannot be scheduled (a training step that does not fit in DRAM, say) is a
record with status ``error`` and the located message.

It sits among the tools because it drives a pass (floor 4); the sweep library
(``crane.dse``) takes it as a plain function.
"""

from __future__ import annotations

import os
import socket
import time
from functools import cache
from typing import Any

from crane.cost.report import cost_report_of
from crane.dialects import default_context
from crane.dse.points import Point
from crane.dse.results import COST_FIELDS
from crane.dse.workload import read_module, retarget
from crane.ir.context import Context
from crane.ir.diagnostics import Diagnostic, DiagnosticEngine, DiagnosticError, Severity
from crane.ir.verifier import verify
from crane.passes.context import PassContext
from crane.passes.manager import PassManager
from crane.passes.pipeline import OpPipeline, PassStep
from crane.passes.segment import Segment


@cache
def _context() -> Context:
    """One IR context per process (it only registers the in-tree dialects)."""
    return default_context()


def segment_pass(point: Point) -> Segment:
    """The ``segment`` pass configured for ``point``: the cost model's figures, without
    the SRAM account (a sweep prices schedules; a batch below the network's has no
    program)."""
    options = point.scheduler
    return Segment(policy=options.policy,  # type: ignore[arg-type]
                   objective=options.objective, batch=point.batch,
                   time_limit=options.time_limit, max_block=options.max_block,
                   recompute=options.recompute,  # type: ignore[arg-type]
                   record_time=True, workers=1)  # a sweep's processes are its points


def schedule_point(point: Point) -> tuple[dict[str, Any] | None, str | None]:
    """The cost report of ``point``, or None and the first error message."""
    context = _context()
    try:
        module = read_module(point.path, context)
    except DiagnosticError as problem:
        return None, _message(problem.diagnostics)
    except (OSError, UnicodeDecodeError) as problem:
        return None, f"cannot read workload '{point.path}': {problem}"
    problems = verify(module)
    if problems:
        return None, _message(problems)
    retarget(module, point.machine)
    engine = DiagnosticEngine()
    manager = PassManager(OpPipeline("builtin.module", (PassStep(segment_pass(point), ()),)))
    ok = manager.run(module, PassContext(context, engine))
    errors = [d for d in engine.diagnostics if d.severity is Severity.ERROR]
    if errors or not ok:
        return None, _message(errors) if errors else "the segment pass failed"
    report = cost_report_of(module)
    if report is None:
        return None, "the segment pass left no cost report (no graph.func to schedule?)"
    return report, None


def _message(diagnostics: list[Diagnostic]) -> str:
    """The first diagnostic on one line: ``file:line:col: message``."""
    first = diagnostics[0]
    position = first.location.file_line_col()
    return f"{position}: {first.message}" if position is not None else first.message


def evaluate(point: Point) -> dict[str, Any]:
    """The results record of ``point`` (see :mod:`crane.dse.results`)."""
    began = time.perf_counter()
    try:
        report, error = schedule_point(point)
    except Exception as exc:  # a bug in Crane: record it and let the sweep go on
        report, error = None, f"internal error: {type(exc).__name__}: {exc}"
    record: dict[str, Any] = {"key": point.key, **point.params(),
                              "status": "ok" if report is not None else "error",
                              "error": error}
    for field in COST_FIELDS:
        record[field] = None if report is None else report.get(field)
    record["seconds"] = round(time.perf_counter() - began, 6)
    record["worker"] = f"{socket.gethostname()}:{os.getpid()}"
    record["finished"] = round(time.time(), 3)
    return record


def describe(point: Point) -> str:
    """A one-line label of a point for listings and messages."""
    machine = point.machine
    swept = " ".join(f"{name}={_shown(name, getattr(machine, name))}" for name in point.swept
                     if name not in ("rows", "cols") and getattr(machine, name) is not None)
    options = point.scheduler
    return (f"{point.workload} batch {point.batch} on {machine.name} {machine.rows}x{machine.cols}"
            f"{' ' + swept if swept else ''} ({options.policy}, {options.objective})")


def _shown(name: str, value: float) -> str:
    """A machine field's value in a readable unit."""
    if name.endswith("_bytes"):
        for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
            if value >= scale and value % scale == 0:
                return f"{value // scale:g}{unit}"
        return f"{value:g}B"
    if name.endswith("bandwidth"):
        return f"{value / 1e9:g}GB/s"
    if name == "frequency_hz":
        return f"{value / 1e9:g}GHz"
    return f"{value:g}"
