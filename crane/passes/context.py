"""What a running pass sees besides its op: diagnostics, statistics and analyses.

Diagnostics are collected, not raised: a pass may report several errors in one run, and
the pass manager stops the pipeline after a pass that reported an error or called
:meth:`PassContext.fail`. Analyses are computed once per (analysis, op) and dropped
after each pass unless the pass marks them preserved.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from crane.ir.context import Context
from crane.ir.core import Operation
from crane.ir.diagnostics import Diagnostic, DiagnosticEngine, Severity

A = TypeVar("A")


class PassContext:
    """The per-run services offered to passes."""

    def __init__(self, ir_context: Context, diagnostics: DiagnosticEngine) -> None:
        self.ir_context = ir_context
        self.diagnostics = diagnostics
        self.statistics: dict[str, dict[str, int]] = {}
        """Pass name -> counter name -> value, summed over all runs of that pass."""
        self._current_pass = ""
        self._failed = False
        self._analyses: dict[tuple[type, int], object] = {}
        self._preserved: set[type] | None = set()

    # ----- diagnostics

    def emit_error(self, op: Operation, message: str) -> Diagnostic:
        """Report an error at ``op``; the pipeline stops after the current pass."""
        return self.diagnostics.emit(Diagnostic(Severity.ERROR, message, op.location))

    def emit_warning(self, op: Operation, message: str) -> Diagnostic:
        return self.diagnostics.emit(Diagnostic(Severity.WARNING, message, op.location))

    def emit_remark(self, op: Operation, message: str) -> Diagnostic:
        return self.diagnostics.emit(Diagnostic(Severity.REMARK, message, op.location))

    def emit_note(self, op: Operation, message: str) -> Diagnostic:
        return self.diagnostics.emit(Diagnostic(Severity.NOTE, message, op.location))

    def fail(self) -> None:
        """Signal failure without (another) message."""
        self._failed = True

    # ----- statistics

    def statistic(self, name: str, increment: int = 1) -> None:
        """Add to a named counter of the running pass (shown by ``--pass-statistics``)."""
        counters = self.statistics.setdefault(self._current_pass, {})
        counters[name] = counters.get(name, 0) + increment

    # ----- analyses

    def get_analysis(self, analysis: Callable[[Operation], A], op: Operation) -> A:
        """The analysis of ``op``, computed on first request (``analysis`` is a class)."""
        key = (analysis if isinstance(analysis, type) else type(analysis), id(op))
        cached = self._analyses.get(key)
        if cached is None:
            cached = analysis(op)
            self._analyses[key] = cached
        return cached  # type: ignore[return-value]

    def mark_preserved(self, *analyses: type) -> None:
        """Keep these analyses valid after the current pass."""
        if self._preserved is not None:
            self._preserved.update(analyses)

    def mark_all_preserved(self) -> None:
        """The current pass changed nothing any analysis depends on."""
        self._preserved = None

    # ----- used by the pass manager

    def begin_pass(self, name: str) -> None:
        self._current_pass = name
        self._failed = False
        self._preserved = set()

    def end_pass(self) -> bool:
        """Invalidate analyses not preserved; True if the pass failed."""
        if self._preserved is not None:
            keep = self._preserved
            self._analyses = {k: v for k, v in self._analyses.items() if k[0] in keep}
        return self._failed
