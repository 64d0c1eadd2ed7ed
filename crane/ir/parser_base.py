"""Token plumbing shared by the IR parsers: peeking, punctuation, keywords, literals.

Naming follows MLIR: ``parse_optional_X`` returns None (or False) when X is not next,
``parse_X`` raises a located :class:`ParseError`.
"""

from __future__ import annotations

import re

from crane.ir.context import Context
from crane.ir.lexer import SourceText, Token, TokenStream, unescape
from crane.ir.location import FileLineColLoc
from crane.ir.types import (
    SCALAR_NAMES,
    ScalarType,
)

_SCALARS = {name: ScalarType(name) for name in SCALAR_NAMES}
_SHAPE = re.compile(r"((?:(?:[0-9]+|\?)x)*)(.*)\Z")
MAX_REGION_DEPTH = 200
"""Deeper nesting is refused with an error, so that no input can exhaust the stack."""



class ParseError(Exception):
    """A syntax or naming error at an offset of the source text."""

    def __init__(self, message: str, offset: int, length: int = 1) -> None:
        super().__init__(message)
        self.message = message
        self.offset = offset
        self.length = max(1, length)



def _check_int_range(value: int, width: int, tok: Token) -> None:
    low = 0 if width == 1 else -(2 ** (width - 1))
    high = 1 if width == 1 else 2**width - 1  # signless: accept the unsigned range too
    if not low <= value <= high:
        raise ParseError(f"integer {value} does not fit in i{width}", tok.start, tok.end - tok.start)



class BaseParser:
    """Tokens of one source text and the helpers every parser layer uses."""

    def __init__(self, context: Context, source: SourceText) -> None:
        self.context = context
        self.source = source
        self.text = source.text
        self._tokens = TokenStream(source.text)
        self._index = 0

    # ----- tokens

    def peek(self, ahead: int = 0) -> Token:
        """The next token (or one further ahead) without consuming it."""
        return self._tokens.at(self._index + ahead)  # past the end: the eof token

    def next(self) -> Token:
        tok = self._tokens.at(self._index)
        if tok.kind != "eof":
            self._index += 1
        return tok

    def error(self, message: str, tok: Token | None = None) -> ParseError:
        tok = tok if tok is not None else self.peek()
        return ParseError(message, tok.start, tok.end - tok.start)

    def _describe(self, tok: Token) -> str:
        if tok.kind == "eof":
            return "end of input"
        return f"'{tok.text}'"

    def parse_optional_punct(self, punct: str) -> bool:
        tok = self._tokens.at(self._index)
        if tok.text == punct and tok.kind in ("punct", "arrow", "dcolon"):
            self._index += 1
            return True
        return False

    def parse_punct(self, punct: str, context: str = "") -> None:
        if not self.parse_optional_punct(punct):
            where = f" {context}" if context else ""
            raise self.error(f"expected '{punct}'{where}, found {self._describe(self.peek())}")

    def parse_optional_keyword(self, keyword: str) -> bool:
        tok = self._tokens.at(self._index)
        if tok.kind == "ident" and tok.text == keyword:
            self._index += 1
            return True
        return False

    def parse_keyword(self, keyword: str) -> None:
        if not self.parse_optional_keyword(keyword):
            raise self.error(f"expected '{keyword}', found {self._describe(self.peek())}")

    def location_here(self) -> FileLineColLoc:
        return self.source.location(self.peek().start)

    # ----- literals

    def parse_integer(self) -> int:
        tok = self.next()
        if tok.kind != "int":
            raise self.error(f"expected an integer, found {self._describe(tok)}", tok)
        return int(tok.text)

    def parse_string(self) -> str:
        tok = self.next()
        if tok.kind != "string":
            raise self.error(f"expected a string literal, found {self._describe(tok)}", tok)
        return unescape(tok.text)

    def parse_symbol_name(self) -> str:
        """``@name`` or ``@"quoted name"``, returning the bare name."""
        tok = self.next()
        if tok.kind != "symbol":
            raise self.error(f"expected a symbol name like '@main', found {self._describe(tok)}", tok)
        body = tok.text[1:]
        return unescape(body) if body.startswith('"') else body

    def parse_optional_symbol_name(self) -> str | None:
        return self.parse_symbol_name() if self.peek().kind == "symbol" else None

