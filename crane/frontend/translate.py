"""The `.crn` input of ``crane-opt``: source text to a ``builtin.module`` of graph IR.

Listed in ``crane/tools/inputs.py``; mistakes in the file become
:class:`crane.ir.diagnostics.DiagnosticError`, which the driver renders (with the source
line and a caret) or matches against ``// expected-error`` lines.
"""

from __future__ import annotations

from crane.dialects.builtin import ModuleOp
from crane.frontend.crn import parse_crn
from crane.frontend.errors import CrnError, CrnErrors
from crane.frontend.lower import lower_network
from crane.ir.context import Context
from crane.ir.diagnostics import Diagnostic, DiagnosticError, Severity
from crane.ir.location import UNKNOWN, FileLineColLoc
from crane.ir.parser import gc_paused


def crn_to_module(text: str, filename: str, context: Context) -> ModuleOp:
    """Elaborate `.crn` text and lower it to graph IR."""
    with gc_paused():  # everything built here stays alive: the collector would find nothing
        try:
            network = parse_crn(text, filename)
        except CrnErrors as errors:
            raise DiagnosticError(*(to_diagnostic(e) for e in errors.errors)) from None
        return lower_network(network)


def to_diagnostic(error: CrnError) -> Diagnostic:
    """The IR-level diagnostic for a frontend error (notes included)."""
    loc = FileLineColLoc(error.loc.file, error.loc.line, error.loc.col)
    diag = Diagnostic(Severity.ERROR, error.message, loc, error.width)
    for note in error.notes:
        where = UNKNOWN if note.loc is None else FileLineColLoc(note.loc.file, note.loc.line, note.loc.col)
        diag.attach_note(note.message, where)
    return diag
