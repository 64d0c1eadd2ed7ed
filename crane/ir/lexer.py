"""Tokens of the IR text, scanned on demand by position (one compiled regex per token).

The parser asks for the next token at its current offset; types such as
``tensor<1x64xf32>`` are scanned whole by dedicated patterns, so dimension lists never
need a tokeniser of their own.
"""

from __future__ import annotations

import bisect
import itertools
import re
from collections.abc import Iterator

from crane.ir.location import FileLineColLoc

SKIP = re.compile(r"(?:[ \t\r\n]+|//[^\n]*)*")
# Whitespace and comments are skipped possessively: a comment must never give back
# characters that could then be read as a token. Alternatives are ordered by how often they occur (values, names, punctuation), since
# the regex engine tries them in turn; ``shaped`` must precede ``ident`` and ``->`` and
# negative numbers must precede the ``-`` punctuation.
TOKEN = re.compile(
    r"""(?:[ \t\r\n]++|//[^\n]*+)*+
    (?:(?P<value>%[A-Za-z0-9_$.-]+(?:\#[0-9]+)?)
      | (?P<shaped>(?:tensor|buffer)<(?:(?:[0-9]+|\?)x)*[a-z][a-z0-9]*)
      | (?P<ident>[A-Za-z_][A-Za-z0-9_$.]*)
      | (?P<arrow>->)
      | (?P<dcolon>::)
      | (?P<float>-?(?:[0-9]+\.[0-9]*(?:[eE][+-]?[0-9]+)?|[0-9]+[eE][+-]?[0-9]+))
      | (?P<int>-?[0-9]+)
      | (?P<punct>[(){}\[\]<>,:=?*+-])
      | (?P<string>"(?:[^"\\\n]|\\.)*")
      | (?P<symbol>@(?:[A-Za-z_][A-Za-z0-9_$.-]*|"(?:[^"\\\n]|\\.)*"))
      | (?P<hash>\#[A-Za-z_][A-Za-z0-9_$.]*)
      | (?P<block>\^[A-Za-z0-9_$.-]+))
    """,
    re.VERBOSE,
)
_ESCAPE = re.compile(r"\\(u\{[0-9A-Fa-f]+\}|[0-9A-Fa-f]{2}|.)")
_SIMPLE_ESCAPES = {"n": "\n", "t": "\t", '"': '"', "\\": "\\"}


class Token:
    """One token: its kind (the regex group name), text and offsets."""

    __slots__ = ("kind", "text", "start", "end")

    def __init__(self, kind: str, text: str, start: int, end: int) -> None:
        self.kind = kind
        self.text = text
        self.start = start
        self.end = end


def unescape(literal: str) -> str:
    """The value of a string literal (with its quotes)."""
    body = literal[1:-1]
    if "\\" not in body:
        return body
    return _ESCAPE.sub(_unescape_one, body)


def _unescape_one(match: re.Match[str]) -> str:
    code = match.group(1)
    if code in _SIMPLE_ESCAPES:
        return _SIMPLE_ESCAPES[code]
    if code.startswith("u{"):
        return chr(int(code[2:-1], 16))
    if len(code) == 2:
        return chr(int(code, 16))
    return code


def tokenize(text: str) -> list[Token]:
    """All tokens of ``text``, ending with an ``eof`` token (or a ``bad`` one, then ``eof``)."""
    return list(iter_tokens(text))


def iter_tokens(text: str) -> Iterator[Token]:
    """The tokens of ``text`` one by one, ending like :func:`tokenize`."""
    end = 0
    for match in TOKEN.finditer(text):
        kind = match.lastgroup
        if match.start() != end or kind is None:
            break
        end = match.end()
        yield Token(kind, match.group(kind), match.start(kind), end)
    start = SKIP.match(text, end).end()  # type: ignore[union-attr]
    if start < len(text):
        yield Token("bad", text[start], start, start + 1)
    yield Token("eof", "", len(text), len(text))


class TokenStream:
    """The tokens of a text, made as a parser reaches them and forgotten well behind it.

    A whole file's tokens at once cost about 250 bytes per token (a 20 MB tile program
    took a gigabyte to parse); the stream holds a window of them. Parsers look ahead a
    few tokens and back up within one construct, far less than :data:`KEEP`."""

    KEEP = 4096
    """Tokens kept behind the furthest one asked for."""
    CHUNK = 4096

    def __init__(self, text: str) -> None:
        self._source = iter_tokens(text)
        self._window: list[Token] = []
        self._base = 0
        self._ended = False

    def at(self, index: int) -> Token:
        """Token ``index`` (counting from 0 in the text); the ``eof`` token past the end."""
        offset = index - self._base
        if 0 <= offset < len(self._window):  # the usual case: the parser's current token
            return self._window[offset]
        return self._reach(index)

    def _reach(self, index: int) -> Token:
        while index - self._base >= len(self._window) and not self._ended:
            self._fill()
        offset = min(index - self._base, len(self._window) - 1)
        if offset < 0:
            raise IndexError(f"token {index} was forgotten (the window starts at {self._base})")
        return self._window[offset]

    def _fill(self) -> None:
        if len(self._window) > 2 * self.KEEP:
            drop = len(self._window) - self.KEEP
            del self._window[:drop]
            self._base += drop
        before = len(self._window)
        self._window.extend(itertools.islice(self._source, self.CHUNK))
        self._ended = len(self._window) - before < self.CHUNK


class SourceText:
    """Text plus line starts, to turn offsets into ``file:line:col`` locations quickly."""

    __slots__ = ("name", "text", "_line_starts")

    def __init__(self, name: str, text: str) -> None:
        self.name = name
        self.text = text
        self._line_starts = [0] + [m.end() for m in re.finditer("\n", text)]

    def location(self, offset: int) -> FileLineColLoc:
        line = bisect.bisect_right(self._line_starts, offset)
        col = offset - self._line_starts[line - 1] + 1
        return FileLineColLoc(self.name, line, col)
