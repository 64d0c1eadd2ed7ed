"""``--split-input-file``: cut a test file into chunks at ``// -----`` lines.

Unlike MLIR, which splits on the substring, only a line holding nothing but the marker
splits, so ``// CHECK: // -----`` (which checks the joined output) is left alone. Each
chunk remembers the absolute line it starts on: diagnostics must name lines of the
file the user has open, not of the chunk (the bug fixed in edin-dal/scair#64).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

SPLIT_MARKER = "// -----"
_MARKER_LINE = re.compile(r"[ \t]*// -----[ \t\r]*")
# Lines that look like a marker typed slightly wrong: '//-----', '// ----', '// ------'.
_NEAR_MISS = re.compile(r"[ \t]*//[ \t]*-{3,}[ \t\r]*")
_LINE = re.compile(r"[^\n]*\n|[^\n]+")


@dataclass(frozen=True)
class Chunk:
    """One piece of a split file."""

    text: str
    """The chunk's lines, each with its newline; the marker lines are not included."""
    first_line: int
    """1-based line number, in the whole file, of the chunk's first line."""

    def padded_text(self) -> str:
        """``text`` after ``first_line - 1`` newlines, so a parser reports file lines."""
        return "\n" * (self.first_line - 1) + self.text


def split_input(text: str) -> list[Chunk]:
    """Split ``text`` at marker lines; there is always at least one chunk.

    A marker as the first or last line yields an empty chunk there, as in MLIR.
    """
    chunks: list[Chunk] = []
    current: list[str] = []
    first_line = 1
    for number, line in enumerate(_LINE.findall(text), start=1):
        if not is_split_marker(line):
            current.append(line)
            continue
        chunks.append(Chunk("".join(current), first_line))
        current, first_line = [], number + 1
    chunks.append(Chunk("".join(current), first_line))
    return chunks


def is_split_marker(line: str) -> bool:
    """Whether ``line`` (with or without its newline) is a split marker."""
    return _MARKER_LINE.fullmatch(line.rstrip("\n")) is not None


def near_miss_markers(text: str) -> list[int]:
    """1-based numbers of lines that look like a mistyped marker, for a warning."""
    return [
        number
        for number, line in enumerate(_LINE.findall(text), start=1)
        if _NEAR_MISS.fullmatch(line.rstrip("\n")) and not is_split_marker(line)
    ]


def join_outputs(outputs: Iterable[str]) -> str:
    """Join per-chunk outputs with ``// -----`` lines, as MLIR prints them.

    An output that does not end in a newline gets one before the marker, so the marker
    always stands on its own line.
    """
    pieces = [
        output if output.endswith("\n") or not output else output + "\n" for output in outputs
    ]
    return (SPLIT_MARKER + "\n").join(pieces)
