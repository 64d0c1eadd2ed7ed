"""Source locations attached to every operation.

The four kinds mirror MLIR: ``loc("file":line:col)``, ``loc("name")`` or
``loc("name"(child))``, ``loc(fused[a, b])`` and ``loc(unknown)``. Locations are immutable
and hashable so that they can be shared freely between ops.
"""

from __future__ import annotations

from dataclasses import dataclass


class Location:
    """Base class of all locations."""

    __slots__ = ()

    def text(self) -> str:
        """The body of ``loc(...)``."""
        raise NotImplementedError

    def file_line_col(self) -> FileLineColLoc | None:
        """The first concrete source position inside this location, if any."""
        return None

    def __str__(self) -> str:
        return f"loc({self.text()})"


def quote(text: str) -> str:
    """A string literal in IR syntax (double quotes, backslash escapes)."""
    if text.isprintable() and '"' not in text and "\\" not in text:
        return f'"{text}"'
    out = []
    for ch in text:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif not ch.isprintable():
            out.append(f"\\{ord(ch):02X}" if ord(ch) < 256 else f"\\u{{{ord(ch):X}}}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


@dataclass(frozen=True, slots=True)
class UnknownLoc(Location):
    """No source information."""

    def text(self) -> str:
        return "unknown"


@dataclass(frozen=True, slots=True)
class FileLineColLoc(Location):
    """A position in a file: 1-based line and column."""

    file: str
    line: int
    col: int

    def text(self) -> str:
        return f"{quote(self.file)}:{self.line}:{self.col}"

    def file_line_col(self) -> FileLineColLoc | None:
        return self

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"


@dataclass(frozen=True, slots=True)
class NameLoc(Location):
    """A named location, optionally wrapping a child location (e.g. an ONNX node name)."""

    name: str
    child: Location | None = None

    def text(self) -> str:
        if self.child is None:
            return quote(self.name)
        return f"{quote(self.name)}({self.child.text()})"

    def file_line_col(self) -> FileLineColLoc | None:
        return None if self.child is None else self.child.file_line_col()


@dataclass(frozen=True, slots=True)
class FusedLoc(Location):
    """Several locations merged, as when a rewrite fuses ops."""

    locations: tuple[Location, ...]

    def text(self) -> str:
        return "fused[" + ", ".join(loc.text() for loc in self.locations) + "]"

    def file_line_col(self) -> FileLineColLoc | None:
        for loc in self.locations:
            if (found := loc.file_line_col()) is not None:
                return found
        return None

    @staticmethod
    def of(*locations: Location) -> Location:
        """Fuse locations, dropping unknowns and duplicates; one survivor is returned as is."""
        flat: list[Location] = []
        for loc in locations:
            parts = loc.locations if isinstance(loc, FusedLoc) else (loc,)
            flat.extend(p for p in parts if not isinstance(p, UnknownLoc) and p not in flat)
        if not flat:
            return UNKNOWN
        return flat[0] if len(flat) == 1 else FusedLoc(tuple(flat))


UNKNOWN = UnknownLoc()
