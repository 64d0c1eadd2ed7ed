"""Diagnostics: errors, warnings, notes and remarks with locations, rendered with a caret.

Everything a user can get wrong is reported through a :class:`Diagnostic`, never a
traceback. A :class:`DiagnosticEngine` collects them (several per run) and a
:class:`SourceManager` remembers the text of each input so that a diagnostic can show
the offending line.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from crane.ir.location import UNKNOWN, Location


class Severity(Enum):
    ERROR = "error"
    WARNING = "warning"
    NOTE = "note"
    REMARK = "remark"


@dataclass(slots=True)
class Diagnostic:
    """One message at one location, with attached notes."""

    severity: Severity
    message: str
    location: Location = UNKNOWN
    length: int = 1
    """How many columns the caret underline covers."""
    notes: list[Diagnostic] = field(default_factory=list)

    def attach_note(self, message: str, location: Location = UNKNOWN) -> Diagnostic:
        """Add a note (for instance pointing at a first definition) and return self."""
        self.notes.append(Diagnostic(Severity.NOTE, message, location))
        return self


class DiagnosticError(Exception):
    """Raised to abandon work after one or more diagnostics; carries them."""

    def __init__(self, *diagnostics: Diagnostic) -> None:
        super().__init__(diagnostics[0].message if diagnostics else "error")
        self.diagnostics = list(diagnostics)

    @classmethod
    def at(cls, location: Location, message: str, length: int = 1) -> DiagnosticError:
        """An error at a location."""
        return cls(Diagnostic(Severity.ERROR, message, location, length))


class SourceManager:
    """Maps file names to their text so diagnostics can quote source lines."""

    def __init__(self) -> None:
        self._files: dict[str, list[str]] = {}

    def add(self, name: str, text: str) -> None:
        self._files[name] = text.splitlines()

    def line(self, name: str, line: int) -> str | None:
        lines = self._files.get(name)
        if lines is None or not 1 <= line <= len(lines):
            return None
        return lines[line - 1]


def render(diag: Diagnostic, sources: SourceManager | None = None) -> str:
    """``file:line:col: error: message`` plus the source line and a caret, then notes."""
    pos = diag.location.file_line_col()
    prefix = f"{pos}: " if pos is not None else ""
    lines = [f"{prefix}{diag.severity.value}: {diag.message}"]
    source = sources.line(pos.file, pos.line) if sources is not None and pos is not None else None
    if source is not None and pos is not None:
        shown, col = _window(source.expandtabs(1), pos.col)
        underline = "^" + "~" * max(0, min(diag.length, len(shown) - col + 1) - 1)
        lines.append(shown)
        lines.append(" " * (col - 1) + underline)
    rendered = "\n".join(lines)
    for note in diag.notes:
        rendered += "\n" + render(note, sources)
    return rendered


_WINDOW = 100


def _window(line: str, col: int) -> tuple[str, int]:
    """A long source line cut to about 100 columns around ``col``, and the new column."""
    if len(line) <= _WINDOW:
        return line, col
    start = max(0, col - 1 - _WINDOW // 2)
    end = min(len(line), start + _WINDOW)
    prefix = "..." if start > 0 else ""
    suffix = "..." if end < len(line) else ""
    return prefix + line[start:end] + suffix, col - start + len(prefix)


class DiagnosticEngine:
    """Collects diagnostics for one run; counts errors."""

    def __init__(self, sources: SourceManager | None = None) -> None:
        self.sources = sources if sources is not None else SourceManager()
        self.diagnostics: list[Diagnostic] = []

    def emit(self, diag: Diagnostic) -> Diagnostic:
        self.diagnostics.append(diag)
        return diag

    def error(self, location: Location, message: str) -> Diagnostic:
        return self.emit(Diagnostic(Severity.ERROR, message, location))

    def warning(self, location: Location, message: str) -> Diagnostic:
        return self.emit(Diagnostic(Severity.WARNING, message, location))

    def note(self, location: Location, message: str) -> Diagnostic:
        return self.emit(Diagnostic(Severity.NOTE, message, location))

    def remark(self, location: Location, message: str) -> Diagnostic:
        return self.emit(Diagnostic(Severity.REMARK, message, location))

    @property
    def error_count(self) -> int:
        return sum(1 for d in self.diagnostics if d.severity is Severity.ERROR)

    def render_all(self) -> str:
        return "\n".join(render(d, self.sources) for d in self.diagnostics)
