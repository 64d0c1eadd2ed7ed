"""A Pygments lexer for Crane's IR text (MLIR-like; ``docs/ir-syntax.md``).

Usage::

    pygmentize -l crane-ir model.mlir                   # once the entry point is installed
    from crane.highlight.ir_lexer import CraneIRLexer   # or directly

The lexer reads the lexemes of the compiler's own tokenizer (:data:`crane.ir.lexer.TOKEN`)
plus blanks and ``//`` comments, so that every character of the text is in exactly one
token; a character the compiler cannot read is an ``Error`` token. Both op forms are
covered: the custom form (``%r = graph.relu %x : ...``) and the generic form
(``%r = "graph.relu"(%x) : ...``). Token types follow the LLVM project's MLIR lexer:

=====================  =============================================================
token                  what
=====================  =============================================================
``Name.Builtin``       op names: ``graph.conv2d``, and ``"graph.conv2d"`` in the generic
                       form (where an op name stands)
``Name.Variable``      SSA values ``%x``, ``%layer1.y.2``, ``%0#1``
``Name.Function``      symbols ``@net``, ``@"a b"``, ``@outer::@inner``
``Name.Label``         blocks ``^bb0``
``Name.Attribute``     keys of attribute dictionaries (``{kernel = ..., flag}``)
``Name.Constant``      enum attributes ``#graph.pool<max>`` (name and case)
``Keyword.Type``       types: ``tensor<8x3xf32>``, ``buffer<4x4xf16, sram>``, ``i64``,
                       ``index``; ``array`` of ``array<i64: 1, 2>``
``Keyword``            ``attributes``
``Keyword.Pseudo``     locations: ``loc``, ``fused``, ``unknown``
``Keyword.Constant``   ``true``, ``false``, ``unit``, ``inf``, ``nan``
``Number.Integer``     ``3``, ``-7``;  ``Number.Float``: ``0.5``, ``1e-05``
``String.Double``      strings, with ``String.Escape`` for ``\\n``, ``\\"``, ``\\0A``...
``Comment.Single``     ``// ...`` to the end of the line
=====================  =============================================================
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from pygments.lexer import Lexer
from pygments.token import (
    Comment,
    Error,
    Keyword,
    Name,
    Number,
    Operator,
    Punctuation,
    String,
    Whitespace,
    _TokenType,
)

__all__ = ["CraneIRLexer", "SCALAR_TYPES"]

SCALAR_TYPES = frozenset({"i1", "i8", "i16", "i32", "i64", "index", "bf16", "f16", "f32", "f64"})
"""Scalar type names (``crane.ir.types.SCALAR_NAMES``; a unit test keeps them equal)."""

LEXEME = re.compile(
    r"""(?P<ws>[ \t\r\n]+)?
    (?:(?P<comment>//[^\n]*)
      | (?P<value>%[A-Za-z0-9_$.-]+(?:\#[0-9]+)?)
      | (?P<type>(?:tensor|buffer)<(?:(?:[0-9]+|\?)x)*[a-z][a-z0-9]*(?:,[ \t]*[a-z]+)?>)
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
      | (?P<block>\^[A-Za-z0-9_$.-]+)
      | (?P<bad>.)
      | (?P<end>\Z))
    """,
    re.VERBOSE | re.DOTALL,
)
"""Blanks, then one lexeme: the compiler's token patterns (same order), a ``//`` comment,
a whole shaped type (``type``; ``shaped`` is the start of one the compiler would reject),
any other character (``bad``), or the end of the text. Blanks and lexeme in one match
halve the matches (most lexemes follow a blank)."""
SPLIT_MARKER = re.compile(r"// -----[ \t\r]*")
"""The comment that separates independent pieces of a test file (``crane.tools.split_input``)."""
ESCAPE = re.compile(r"\\(?:u\{[0-9A-Fa-f]+\}|[0-9A-Fa-f]{2}|.)")
"""An escape in a string literal (``crane.ir.lexer.unescape`` reads the same)."""

_BY_KIND: dict[str, _TokenType] = {
    "value": Name.Variable, "type": Keyword.Type, "shaped": Keyword.Type,
    "arrow": Operator, "dcolon": Punctuation, "float": Number.Float, "int": Number.Integer,
    "symbol": Name.Function, "hash": Name.Constant, "block": Name.Label, "bad": Error,
}
"""Lexemes whose token does not depend on their neighbours (not ident, punct, string)."""
_CONSTANTS = frozenset({"true", "false", "unit", "inf", "nan"})
_LOCATION_WORDS = frozenset({"fused", "unknown"})
_OPERATORS = frozenset({"=", "*", "+", "-", "?"})

_Lexeme = tuple[str, int, str, str]
"""Kind (a group of :data:`LEXEME`), offset, text, and the blanks before it."""
_Seen = tuple[str, str]
"""Kind and text of a significant lexeme already read (``("", "")``: none)."""


class CraneIRLexer(Lexer):
    """Pygments lexer for Crane IR (``.mlir``); the module docstring has the token table."""

    name = "Crane IR"
    aliases = ["crane-ir", "crane-mlir"]
    filenames = ["*.mlir"]
    mimetypes = ["text/x-crane-ir"]

    @staticmethod
    def analyse_text(text: str) -> float:
        """How likely ``text`` is Crane IR (for ``pygments.lexers.guess_lexer``)."""
        if re.search(r"\b(builtin\.module|graph\.func|test\.func)\b|%[\w.$-]+ = \"?\w+\.\w+", text):
            return 0.5
        return 0.0

    def get_tokens_unprocessed(self, text: str) -> Iterator[tuple[int, _TokenType, str]]:
        """``(offset, token type, text)`` for every lexeme; the texts concatenate to ``text``."""
        lexemes = _scan(text)
        brackets: list[str] = []
        prev: _Seen = ("", "")
        before_prev: _Seen = ("", "")
        for n, (kind, start, value, blanks) in enumerate(lexemes):
            if blanks:
                yield start - len(blanks), Whitespace, blanks
            if kind == "comment":
                yield start, Comment.Single, value
                if SPLIT_MARKER.fullmatch(value):  # the next piece is a file of its own
                    brackets.clear()
                    prev = before_prev = ("", "")
                continue
            if kind == "end":
                continue
            token = _BY_KIND.get(kind)
            if token is None:
                line_start = not prev[0] or "\n" in blanks
                token = _in_context(kind, value, (before_prev, prev), _next_text(lexemes, n),
                                    brackets, line_start)
            if token is String.Double and "\\" in value:
                yield from _string_pieces(start, value)
            else:
                yield start, token, value
            before_prev, prev = prev, (kind, value)


def _scan(text: str) -> list[_Lexeme]:
    lexemes: list[_Lexeme] = []
    append = lexemes.append
    for match in LEXEME.finditer(text):
        kind = match.lastgroup or "end"  # a match always ends in a lexeme group
        blanks = match.group("ws") or ""
        start = match.start() + len(blanks)
        append((kind, start, text[start : match.end()], blanks))
    return lexemes


def _next_text(lexemes: list[_Lexeme], n: int) -> str:
    """The text of the significant lexeme after the ``n``-th ("" at the end)."""
    for index in range(n + 1, len(lexemes)):
        lexeme = lexemes[index]
        if lexeme[0] != "comment":
            return lexeme[2]
    return ""


def _string_pieces(start: int, text: str) -> Iterator[tuple[int, _TokenType, str]]:
    """A string literal split around its escapes."""
    done = 0
    for escape in ESCAPE.finditer(text):
        if escape.start() > done:
            yield start + done, String.Double, text[done : escape.start()]
        yield start + escape.start(), String.Escape, escape.group()
        done = escape.end()
    yield start + done, String.Double, text[done:]


def _in_context(kind: str, text: str, before: tuple[_Seen, _Seen], nxt: str,
                brackets: list[str], line_start: bool) -> _TokenType:
    """An identifier, mark or string, given its neighbours (``brackets``: the open ones)."""
    op_position = line_start or (before[1][1] == "=" and before[0][0] == "value")
    if kind == "punct":
        _track(brackets, text)
        return Operator if text in _OPERATORS else Punctuation
    if kind == "ident":
        return _ident(text, before, nxt, brackets[-1:] == ["{"], op_position)
    if nxt == "=":
        return Name.Attribute  # a quoted key
    if op_position and nxt == "(":
        return Name.Builtin  # the op name of the generic form
    return String.Double


def _track(brackets: list[str], mark: str) -> None:
    if mark in "{([<":
        brackets.append(mark)
    elif mark in "})]>" and brackets:
        brackets.pop()


def _ident(word: str, before: tuple[_Seen, _Seen], nxt: str, in_braces: bool, op_position: bool) -> _TokenType:
    """An identifier: a key, type, constant, keyword, op name or bare word."""
    prev = before[1][1]
    if nxt == "=":
        return Name.Attribute
    if in_braces and prev in ("{", ",") and nxt in (",", "}") and not (op_position and "." in word):
        return Name.Attribute  # a unit attribute: a bare key
    if word in SCALAR_TYPES or (word == "array" and nxt == "<"):
        return Keyword.Type
    if word in _CONSTANTS:
        return Keyword.Constant
    if word == "attributes":
        return Keyword
    if word == "loc" and nxt == "(":
        return Keyword.Pseudo
    if word in _LOCATION_WORDS and prev == "(" and before[0][1] == "loc":
        return Keyword.Pseudo
    if prev == "<" and before[0][0] == "hash":
        return Name.Constant  # the case of an enum attribute
    return Name.Builtin if "." in word else Name
