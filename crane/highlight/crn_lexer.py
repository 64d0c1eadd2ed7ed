"""A Pygments lexer for the `.crn` language (networks, blocks, machines).

Usage::

    pygmentize -l crn examples/resnet50.crn          # once the entry point is installed
    from crane.highlight.crn_lexer import CrnLexer   # or directly

The lexer reads the same lexemes as the compiler's tokenizer
(:mod:`crane.frontend.crn.tokens`, ``grammar/crn.lark``): words, integers, floats,
double-quoted strings, the marks ``.. // + - * / % ( ) { } [ ] ; , : =``, ``#`` comments
anywhere and ``//`` comments only at the start of a line (elsewhere ``//`` is floor
division). Any other character is an ``Error`` token, as it is a syntax error for the
compiler.

Keywords are contextual in `.crn` (``batch`` is a statement in a body and a predefined
name in an expression; ``input`` is only a keyword at the start of a statement), so words
are classified by where they stand: the statement they begin or belong to, and the body
(file, network/block/repeat, ``train``, ``machine``) that holds the statement.

========================  ==========================================================
token                     what
========================  ==========================================================
``Keyword.Namespace``     ``import``
``Keyword.Declaration``   ``let``, ``block``, ``network``, ``machine`` (a definition)
``Keyword``               statements: ``input output return repeat in batch train loss
                          optimizer``, ``machine`` (a use), ``extends``, ``mesh``,
                          ``dram_ports``
``Keyword.Constant``      ``true``, ``false``
``Keyword.Type``          dtypes of inputs (``f32[...]``) and units (``1 MiB``,
                          ``24 GB/s``, ``0.7 pJ/bit``)
``Name.Builtin``          layer kinds called (``conv2d(...)``), optimizers, ``batch``
                          in an expression
``Name.Function``         a block's name where defined and where called
``Name.Class``            network and machine names
``Name.Variable``         names bound by ``x = ...``, inputs, outputs, block parameters,
                          loop variables
``Name.Constant``         ``let`` constants where defined; ``dram_ports edges|none``
``Name.Attribute``        keyword arguments (``kernel=3``) and machine fields (``sram``)
``Operator.Word``         the ``x`` of ``mesh 4 x 4``
========================  ==========================================================
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

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

from crane.dialects.layers.kinds import LAYER_KINDS as _KIND_TABLE
from crane.dialects.layers.values import DTYPE_BYTES
from crane.dialects.optimizers import OPTIMIZERS as _OPTIMIZER_TABLE

__all__ = ["CrnLexer", "LAYER_KINDS", "OPTIMIZERS", "DTYPES"]

LAYER_KINDS = frozenset(_KIND_TABLE)
"""Layer kinds (``crane.dialects.layers.kinds.LAYER_KINDS``: a new kind is coloured as soon
as it is defined)."""
OPTIMIZERS = frozenset(_OPTIMIZER_TABLE)
"""Optimizers of a ``train`` section (``crane.dialects.optimizers.OPTIMIZERS``)."""
DTYPES = frozenset(DTYPE_BYTES)
"""Element types of inputs (``crane.dialects.layers.values.DTYPE_BYTES``)."""


LEXEME = re.compile(
    r"""(?P<ws>[ \t\r\n]+)
      | (?P<comment>\#[^\n]*)
      | (?P<word>[A-Za-z_][A-Za-z0-9_]*)
      | (?P<float>[0-9]+\.[0-9]+(?:[eE][+-]?[0-9]+)?|[0-9]+[eE][+-]?[0-9]+)
      | (?P<int>[0-9]+)
      | (?P<string>"[^"\n]*")
      | (?P<mark>\.\.|//|[-+*/%(){}\[\];,:=])
      | (?P<bad>.)
    """,
    re.VERBOSE | re.DOTALL,
)
"""One lexeme at each position (the grammar's terminals, plus blanks and ``bad``), so
that the tokens cover the text exactly. A ``//`` mark at the start of a line begins a
comment instead (see :func:`_scan`)."""

SPLIT_MARKER = re.compile(r"// -----[ \t\r]*")
"""The comment that separates independent pieces of a test file (``crane.tools.split_input``)."""

_STATEMENT_KEYWORDS: dict[str, dict[str, _TokenType]] = {
    "file": {"import": Keyword.Namespace, "let": Keyword.Declaration,
             "block": Keyword.Declaration, "network": Keyword.Declaration,
             "machine": Keyword.Declaration},
    "body": {"let": Keyword.Declaration, "input": Keyword, "output": Keyword,
             "return": Keyword, "repeat": Keyword, "machine": Keyword, "batch": Keyword,
             "train": Keyword},
    "train": {"loss": Keyword, "optimizer": Keyword, "batch": Keyword},
    "machine": {"mesh": Keyword, "dram_ports": Keyword},
}
"""Words that begin a statement, by the kind of body that holds the statement."""
_OPENS = {"block": "body", "network": "body", "repeat": "body", "train": "train",
          "machine": "machine"}
"""The kind of body a statement's ``{`` opens, by the statement's keyword."""
_NAMED_BY_HEAD: dict[str, _TokenType] = {
    "block": Name.Function, "network": Name.Class, "machine": Name.Class,
    "let": Name.Constant, "input": Name.Variable, "repeat": Name.Variable,
}
"""The token of the word right after a statement's keyword."""
_FIELD = "<field>"
"""The head of a machine field statement (``sram 1 MiB;``), whose first word is no keyword."""
_EXPRESSION_BEFORE = frozenset({"+", "-", "*", "/", "//", "%", "(", "[", ",", "=", ":", ".."})
"""Marks after which an expression (not a unit) follows."""
_OPERATORS = frozenset({"..", "//", "+", "-", "*", "/", "%", "="})
_LITERALS: dict[str, _TokenType] = {
    "int": Number.Integer, "float": Number.Float, "string": String.Double, "bad": Error,
    "ws": Whitespace, "comment": Comment.Single,
}


@dataclass(frozen=True, slots=True)
class _Lexeme:
    start: int
    kind: str
    """A group name of :data:`LEXEME` (``comment`` also for a ``//`` line comment)."""
    text: str


@dataclass(slots=True)
class _Statement:
    """What the classifier knows about the statement it is reading."""

    scope: str
    """The body that holds it: ``file``, ``body`` (network, block, repeat), ``train``, ``machine``."""
    head: str | None = None
    """Its first word if that is a keyword there, :data:`_FIELD` for a machine field."""
    position: int = 0
    """Significant lexemes read so far."""
    depth: int = 0
    """Open parentheses and brackets."""
    unit: bool = False
    """Whether the previous word was a unit (``GB`` of ``GB/s``)."""


class CrnLexer(Lexer):
    """Pygments lexer for `.crn` files; the module docstring has the token table."""

    name = "Crane .crn"
    aliases = ["crn", "crane-crn"]
    filenames = ["*.crn"]
    mimetypes = ["text/x-crane-crn"]

    @staticmethod
    def analyse_text(text: str) -> float:
        """How likely ``text`` is `.crn` (for ``pygments.lexers.guess_lexer``)."""
        if re.search(r"^[ \t]*(network|machine)[ \t]+\w+[ \t]*(\{|extends)", text, re.MULTILINE):
            return 0.5
        return 0.0

    def get_tokens_unprocessed(self, text: str) -> Iterator[tuple[int, _TokenType, str]]:
        """``(offset, token type, text)`` for every lexeme; the texts concatenate to ``text``."""
        lexemes = _scan(text)
        for lexeme, token in zip(lexemes, _classify(lexemes), strict=True):
            yield lexeme.start, token, lexeme.text


def _scan(text: str) -> list[_Lexeme]:
    lexemes: list[_Lexeme] = []
    pos, size = 0, len(text)
    while pos < size:
        match = LEXEME.match(text, pos)
        assert match is not None  # `bad` matches any character
        kind, end = match.lastgroup or "bad", match.end()
        if kind == "mark" and match.group() == "//" and _at_line_start(text, pos):
            newline = text.find("\n", pos)
            kind, end = "comment", size if newline < 0 else newline
        lexemes.append(_Lexeme(pos, kind, text[pos:end]))
        pos = end
    return lexemes


def _at_line_start(text: str, pos: int) -> bool:
    """Whether only blanks stand between the start of the line and ``pos``."""
    line_start = text.rfind("\n", 0, pos) + 1
    return not text[line_start:pos].strip(" \t")


def _classify(lexemes: list[_Lexeme]) -> list[_TokenType]:
    """The token type of each lexeme, given the body and statement it stands in."""
    tokens = [_LITERALS.get(lx.kind, Error) for lx in lexemes]  # words and marks: below
    significant = [i for i, lx in enumerate(lexemes) if lx.kind not in ("ws", "comment")]
    scopes = ["file"]
    stmt = _Statement("file")
    prev: _Lexeme | None = None
    for n, index in enumerate(significant):
        lexeme = lexemes[index]
        if n > 0 and _split_between(lexemes, significant[n - 1], index):
            scopes, stmt, prev = ["file"], _Statement("file"), None
        after = [lexemes[i] for i in significant[n + 1 : n + 3]]
        tokens[index] = _token(lexeme, prev, after, stmt)
        stmt = _advance(stmt, lexeme, scopes)
        prev = lexeme
    return tokens


def _split_between(lexemes: list[_Lexeme], first: int, last: int) -> bool:
    """Whether a ``// -----`` line (``--split-input-file``) stands between two lexemes:
    each piece is a file of its own, so an unclosed body does not spill into the next."""
    return any(lx.kind == "comment" and SPLIT_MARKER.fullmatch(lx.text) for lx in lexemes[first + 1 : last])


def _token(lexeme: _Lexeme, prev: _Lexeme | None, after: list[_Lexeme], stmt: _Statement) -> _TokenType:
    if lexeme.kind == "mark":
        return Operator if lexeme.text in _OPERATORS else Punctuation
    if lexeme.kind != "word":
        return _LITERALS[lexeme.kind]
    nxt = after[0].text if after else ""
    if stmt.position == 0:
        return _first_word(lexeme.text, nxt, stmt)
    token = _word(lexeme.text, prev.text if prev is not None else "", after, stmt)
    stmt.unit = token is Keyword.Type and stmt.head == _FIELD
    return token


def _first_word(word: str, nxt: str, stmt: _Statement) -> _TokenType:
    """The word that begins a statement: a keyword there, a machine field, or a name."""
    keyword = _STATEMENT_KEYWORDS[stmt.scope].get(word)
    if keyword is not None:
        stmt.head = word
        return keyword
    if stmt.scope == "machine":
        stmt.head = _FIELD
        return Name.Attribute
    return Name.Variable if nxt == "=" else Name


def _word(word: str, prev: str, after: list[_Lexeme], stmt: _Statement) -> _TokenType:
    """A word inside a statement (not its first)."""
    head, nxt = stmt.head, after[0].text if after else ""
    if word in ("true", "false"):
        return Keyword.Constant
    if head in _NAMED_BY_HEAD and stmt.position == 1:
        return _NAMED_BY_HEAD[head]
    if head is not None and stmt.depth == 0:
        special = _word_of_statement(word, prev, after, stmt)
        if special is not None:
            return special
    if head == "block" and stmt.depth == 1 and prev in ("(", ","):
        return Name.Variable  # a parameter
    if nxt == "(":
        builtin = word in (OPTIMIZERS if head == "optimizer" else LAYER_KINDS)
        return Name.Builtin if builtin else Name.Function
    if nxt == "=" and stmt.depth > 0:
        return Name.Attribute
    if word == "batch":
        return Name.Builtin
    return Keyword.Type if word in DTYPES else Name


def _word_of_statement(word: str, prev: str, after: list[_Lexeme], stmt: _Statement) -> _TokenType | None:
    """Words that a statement's keyword gives a meaning, outside parentheses; else None."""
    head, position = stmt.head, stmt.position
    if head == "machine" and stmt.scope == "file":
        return Keyword if position == 2 and word == "extends" else Name.Class
    if head == "input" and prev == ":":
        return Keyword.Type
    if head == "repeat" and position == 2 and word == "in":
        return Keyword
    if head == "output":
        return Name.Variable
    if head == "dram_ports":
        return Name.Constant
    if head == "mesh" and word == "x" and prev not in _EXPRESSION_BEFORE:
        return Operator.Word
    if head == _FIELD and _is_unit(prev, after, stmt):
        return Keyword.Type
    return None


def _is_unit(prev: str, after: list[_Lexeme], stmt: _Statement) -> bool:
    """``GB`` and ``s`` of ``sram 24 GB/s;``: the words between a value and the ``;``."""
    if prev == "/" and stmt.unit:
        return True
    if stmt.position < 2 or prev in _EXPRESSION_BEFORE:
        return False
    texts = [lx.text for lx in after]
    return texts[:1] == [";"] or (texts[:1] == ["/"] and len(after) == 2 and after[1].kind == "word")


def _advance(stmt: _Statement, lexeme: _Lexeme, scopes: list[str]) -> _Statement:
    """The statement state after ``lexeme``: a new statement after ``;``, ``{`` and ``}``."""
    text = lexeme.text if lexeme.kind == "mark" else ""
    if text == ";":
        return _Statement(scopes[-1])
    if text == "{":
        scopes.append(_OPENS.get(stmt.head or "", "body"))
        return _Statement(scopes[-1])
    if text == "}":
        if len(scopes) > 1:
            scopes.pop()
        return _Statement(scopes[-1])
    if text in ("(", "["):
        stmt.depth += 1
    elif text in (")", "]") and stmt.depth > 0:
        stmt.depth -= 1
    stmt.position += 1
    return stmt
