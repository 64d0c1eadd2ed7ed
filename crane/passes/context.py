"""What a running pass sees besides its op: diagnostics and statistics.

Diagnostics are collected, not raised: a pass may report several errors in one run, and
the pass manager stops the pipeline after a pass that reported an error or called
:meth:`PassContext.fail`.
"""

from __future__ import annotations

from crane.ir.context import Context
from crane.ir.core import Operation
from crane.ir.diagnostics import Diagnostic, DiagnosticEngine, Severity


class PassContext:
    """The per-run services offered to passes."""

    def __init__(self, ir_context: Context, diagnostics: DiagnosticEngine) -> None:
        self.ir_context = ir_context
        self.diagnostics = diagnostics
        self.statistics: dict[str, dict[str, int]] = {}
        """Pass name -> counter name -> value, summed over all runs of that pass."""
        self._current_pass = ""
        self._failed = False

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

    # ----- used by the pass manager

    def begin_pass(self, name: str) -> None:
        self._current_pass = name
        self._failed = False

    def end_pass(self) -> bool:
        """True if the pass failed."""
        return self._failed
