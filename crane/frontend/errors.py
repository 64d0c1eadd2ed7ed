"""Located, teaching errors of the `.crn` frontend.

Every problem with a `.crn` file becomes a :class:`CrnError` pointing at the offending
token; a whole file's problems travel together in :class:`CrnErrors`. Nothing else escapes
the frontend, so a driver can print ``errors.render()`` and exit, never a traceback.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from crane.frontend.model import SourceLoc


@dataclass(frozen=True, slots=True)
class Note:
    """Extra context for an error, optionally at another place (a first definition)."""

    message: str
    loc: SourceLoc | None = None
    line_text: str = ""


# Not frozen: Python assigns ``__traceback__`` on exceptions, which a frozen dataclass forbids.
@dataclass(eq=False)
class CrnError(Exception):
    """One problem in a `.crn` file, at ``loc``, with the text of its source line."""

    loc: SourceLoc
    message: str
    notes: tuple[Note, ...] = ()
    line_text: str = ""
    """The source line ``loc`` points into, for the caret display."""
    width: int = 1
    """How many characters the offending token spans."""

    def __str__(self) -> str:
        return f"{self.loc}: error: {self.message}"

    def render(self) -> str:
        """``file:line:col: error: message``, the source line, a caret, then the notes."""
        parts = [str(self), *_snippet(self.line_text, self.loc.col, self.width)]
        for note in self.notes:
            where = f"{note.loc}: " if note.loc is not None else ""
            parts.append(f"{where}note: {note.message}")
            if note.loc is not None:
                parts.extend(_snippet(note.line_text, note.loc.col, 1))
        return "\n".join(parts)


class CrnErrors(Exception):
    """All errors found in one `.crn` file (and the files it imports), in source order."""

    def __init__(self, errors: Iterable[CrnError]) -> None:
        self.errors = tuple(errors)
        super().__init__(self.render())

    def render(self) -> str:
        """Every error rendered, separated by blank lines."""
        return "\n\n".join(error.render() for error in self.errors)

    @property
    def first(self) -> CrnError:
        return self.errors[0]


def _snippet(line_text: str, col: int, width: int) -> list[str]:
    if not line_text:
        return []
    # Tabs keep their width under the caret so it lines up in a terminal.
    pad = "".join("\t" if ch == "\t" else " " for ch in line_text[: col - 1])
    return [f"  {line_text}", f"  {pad}^{'~' * max(width - 1, 0)}"]
