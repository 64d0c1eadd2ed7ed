"""The text of a sweep file: TOML decoding and errors placed at the key they are about.

``tomllib`` reports syntax errors with a line and column (in its message) but gives no
positions for the values it returns, so :meth:`SweepText.locate` finds a key again in the
text: the line ``key = ...`` under the ``[table]`` header (or ``table.key = ...`` at top
level), then, for a value of a list, that value's literal after the key. Where the key
cannot be found (an inline table, say) the error names it instead: ``[machine] sram: ...``.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from typing import Any

from crane.ir.diagnostics import Diagnostic, DiagnosticError, Severity
from crane.ir.lexer import SourceText
from crane.ir.location import UNKNOWN, Location

_HEADER = re.compile(r"^[ \t]*\[[ \t]*([A-Za-z0-9_.\-\"' \t]+?)[ \t]*\][ \t]*(?:#.*)?$")
_KEY = re.compile(r"^[ \t]*([A-Za-z0-9_\-.\"']+)[ \t]*=")
_TOML_POSITION = re.compile(r"\s*\(at line (\d+), column (\d+)\)$")
_TOML_END = re.compile(r"\s*\(at end of document\)$")


def _bare(name: str) -> str:
    """A key or header as plain dotted text (quotes and blanks dropped)."""
    return re.sub(r"[\"'\s]", "", name)


@dataclass(frozen=True)
class SweepText:
    """A sweep file's name (as shown in messages) and text."""

    name: str
    text: str

    def decode(self) -> dict[str, Any]:
        """The TOML document; a syntax error becomes a located :class:`DiagnosticError`."""
        try:
            return tomllib.loads(self.text)
        except tomllib.TOMLDecodeError as problem:
            raise self._syntax_error(str(problem)) from None

    def _syntax_error(self, message: str) -> DiagnosticError:
        source = SourceText(self.name, self.text)
        if (match := _TOML_POSITION.search(message)) is not None:
            line, col = int(match.group(1)), int(match.group(2))
            location: Location = source.location(self._offset(line, col))
            message = message[: match.start()]
        elif (match := _TOML_END.search(message)) is not None:
            location = source.location(len(self.text.rstrip("\n")))
            message = message[: match.start()] + " at the end of the file"
        else:
            location = source.location(0)
        return DiagnosticError.at(location, f"invalid TOML: {message[:1].lower()}{message[1:]}")

    def _offset(self, line: int, col: int) -> int:
        lines = self.text.splitlines(keepends=True)
        return sum(len(text) for text in lines[: line - 1]) + col - 1

    # ----- finding keys and values again

    def key_span(self, table: str, key: str) -> tuple[int, int, int] | None:
        """(start, length, end of its statement) of ``key`` in ``[table]``, or None."""
        wanted = f"{table}.{key}" if table else key
        current, offset, found = "", 0, None
        for line in self.text.splitlines(keepends=True):
            if found is not None and (_KEY.match(line) or _HEADER.match(line)):
                return found[0], found[1], offset
            if (header := _HEADER.match(line)) is not None:
                current = _bare(header.group(1))
            elif found is None and (match := _KEY.match(line)) is not None:
                name = _bare(match.group(1))
                if (f"{current}.{name}" if current else name) == wanted:
                    found = (offset + match.start(1), len(match.group(1)))
            offset += len(line)
        return None if found is None else (found[0], found[1], len(self.text))

    def locate(self, table: str, key: str, value: object = None) -> tuple[Location, int]:
        """Where ``key`` of ``[table]`` (or its ``value``, if given and found) is written."""
        span = self.key_span(table, key)
        if span is None:
            return UNKNOWN, 1
        start, length, end = span
        literal = _literal(value)
        if literal is not None:
            match = re.search(literal, self.text[start:end])
            if match is not None:
                start, length = start + match.start(), match.end() - match.start()
        return SourceText(self.name, self.text).location(start), length

    def error(self, table: str, key: str, message: str, value: object = None,
              keyed: bool = False) -> DiagnosticError:
        """An error about ``key`` (and one of its values): located, else naming the key.

        ``keyed`` puts ``key:`` before a located message that does not name the key itself.
        """
        location, length = self.locate(table, key, value)
        if location is UNKNOWN:
            where = f"[{table}] {key}" if table else key
            message = f"{self.name}: {where}: {message}"
        elif keyed:
            message = f"{key}: {message}"
        return DiagnosticError(Diagnostic(Severity.ERROR, message, location, length))

    def file_error(self, message: str) -> DiagnosticError:
        """An error about the file as a whole (a missing key)."""
        return DiagnosticError(Diagnostic(Severity.ERROR, f"{self.name}: {message}"))


def _literal(value: object) -> str | None:
    """A pattern matching how ``value`` is written in TOML (strings quoted either way)."""
    if isinstance(value, str):
        escaped = re.escape(value)
        return f"\"{escaped}\"|'{escaped}'"
    if isinstance(value, bool):
        return r"\b" + ("true" if value else "false") + r"\b"
    if isinstance(value, int | float):
        return r"(?<![\w.])" + re.escape(repr(value)) + r"(?![\w.])"
    return None
