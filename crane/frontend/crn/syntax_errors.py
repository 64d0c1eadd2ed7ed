"""Turning Lark's parse errors into messages a newcomer can act on.

Two mechanisms: hand-written examples of common mistakes, matched by LALR state with
Lark's ``match_examples``; and, for everything else, a message built from the expected
tokens ("expected ';' after 'relu(x)'"), placed where the missing token belongs.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import lark
from lark.exceptions import UnexpectedCharacters, UnexpectedInput, UnexpectedToken

from crane.frontend.crn.ast import Pos


@dataclass(eq=False)
class SyntaxProblem(Exception):
    """A syntax error with its position; the caller adds the file name."""

    pos: Pos
    message: str


_EXAMPLES: dict[str, list[str]] = {
    "parameters are written name=value, as in `kernel=3`": [
        "network n { y = conv2d(x, kernel: 3); }",
        "block b(x) { y = conv2d(x, kernel: 3); }",
    ],
    "expected ':' between the input name and its type, as in `input x: f32[1, 3, 224, 224];`": [
        "network n { input x f32[1]; }",
    ],
    "an input type needs a shape in brackets, as in `f32[batch, 3, 224, 224]`": [
        "network n { input x: f32; }",
        "network n { input x: f32(1); }",
    ],
    "a repeat range is written `start..stop`, as in `repeat i in 0..4 { ... }`": [
        "network n { repeat i in 3 { } }",
        "network n { repeat i in 0, 3 { } }",
        "network n { repeat i 0..3 { } }",
    ],
    "a layer or block is called with parentheses, as in `relu(x)`": [
        "network n { y = relu x; }",
        "network n { y = relu 3; }",
    ],
    "expected ',' between arguments": [
        "network n { y = conv2d(x kernel=3); }",
        "network n { y = conv2d(x 3); }",
    ],
    "a statement starts with a name to bind (`y = relu(x);`) or a keyword (input, output, let, repeat, machine, batch, train)": [
        "network n { relu(x); }",
        "network n { 3; }",
    ],
    "machine fields are written `name value unit;`, as in `sram 1 MiB;`": [
        "machine m { sram = 1; }",
        "machine m { sram: 1; }",
    ],
    "the mesh is written `mesh rows x cols;`, as in `mesh 4 x 4;`": [
        "machine m { mesh 4, 4; }",
        "machine m { mesh 4 4; }",
        "machine m { mesh 4 * 4; }",
    ],
}

_REGEX_TERMINALS = {
    "NAME": "a name",
    "INT": "an integer",
    "FLOAT": "a number",
    "STRING": "a string",
    "$END": "end of file",
}


def describe_syntax_error(error: UnexpectedInput, text: str, parser: lark.Lark) -> SyntaxProblem:
    """A friendly, located message for a Lark parse error."""
    if isinstance(error, UnexpectedCharacters):
        return _bad_character(error, text)
    if not isinstance(error, UnexpectedToken):
        return SyntaxProblem((error.line or 1, error.column or 1, 1), "syntax error")
    if "SEMICOLON" in error.expected and _starts_new_line(error.token, text):
        # The most common slip of all: the statement on the line above lacks its ';'.
        where, before = _after_previous_token(text, error.token)
        return SyntaxProblem(where, f"expected ';' after {before!r}")
    label = _match_example(error, parser)
    if label is not None:
        return SyntaxProblem(_token_pos(error.token, text), label)
    return _unexpected_token(error, text, parser)


def _starts_new_line(token: lark.Token, text: str) -> bool:
    if token.type == "$END":
        return True
    where, _ = _after_previous_token(text, token)
    return where[0] < (token.line or 1)


def _match_example(error: UnexpectedInput, parser: lark.Lark) -> str | None:
    if not isinstance(error, UnexpectedToken) or error.state is None:
        return None
    table = _example_table(parser)
    position = error.state.position
    return table.get((position, error.token.type)) or table.get((position, None))


@functools.cache
def _example_table(parser: lark.Lark) -> dict[tuple[int, str | None], str]:
    """LALR state (and offending token type) of each example mistake, mapped to its message.

    Like Lark's ``match_examples``, but keyed on the parser state alone rather than the
    whole stack, so an example matches at any nesting depth (first statement or tenth,
    network or block).
    """
    table: dict[tuple[int, str | None], str] = {}
    for label, snippets in _EXAMPLES.items():
        for snippet in snippets:
            try:
                parser.parse(snippet)
            except UnexpectedToken as found:
                if found.state is not None:
                    table.setdefault((found.state.position, found.token.type), label)
                    table.setdefault((found.state.position, None), label)
    return table


def _bad_character(error: UnexpectedCharacters, text: str) -> SyntaxProblem:
    offset = error.pos_in_stream or 0
    char = text[offset] if offset < len(text) else "?"
    hint = ""
    if char == "'":
        hint = "; strings use double quotes"
    elif char in "{}":
        hint = "; braces open a network, block, machine, repeat or train body"
    return SyntaxProblem((error.line, error.column, 1), f"unexpected character {char!r}{hint}")


def _unexpected_token(error: UnexpectedToken, text: str, parser: lark.Lark) -> SyntaxProblem:
    token = error.token
    expected = sorted(error.expected, key=lambda name: (name in _REGEX_TERMINALS, name))
    if "SEMICOLON" in expected:
        where, before = _after_previous_token(text, token)
        return SyntaxProblem(where, f"expected ';' after {before!r}, found {_describe_found(token)}")
    if token.type == "$END" and "RBRACE" in expected:
        return SyntaxProblem(_token_pos(token, text), "unexpected end of file: a '}' is missing")
    if {"COMMA", "RPAR"} <= set(expected):
        return SyntaxProblem(_token_pos(token, text), f"expected ',' or ')' in the argument list, "
                             f"found {_describe_found(token)}")
    wanted = ", ".join(_describe_terminal(name, parser) for name in expected[:10])
    found = _describe_found(token)
    if len(expected) == 1:
        return SyntaxProblem(_token_pos(token, text), f"expected {wanted}, found {found}")
    return SyntaxProblem(_token_pos(token, text), f"unexpected {found}; expected one of {wanted}")


def _describe_found(token: lark.Token) -> str:
    if token.type == "$END":
        return "end of file"
    return f"{token.value!r}"


def _describe_terminal(name: str, parser: lark.Lark) -> str:
    if name in _REGEX_TERMINALS:
        return _REGEX_TERMINALS[name]
    try:
        pattern = parser.get_terminal(name).pattern
    except KeyError:
        return name
    return f"'{pattern.value}'"


def _token_pos(token: lark.Token, text: str) -> Pos:
    if token.type == "$END":
        return _end_of_text(text)
    return (token.line or 1, token.column or 1, max(len(token.value), 1))


def _end_of_text(text: str) -> Pos:
    lines = text.split("\n")
    for index in range(len(lines) - 1, -1, -1):
        content = _code_part(lines[index])
        if content:
            return (index + 1, len(content) + 1, 1)
    return (1, 1, 1)


def _after_previous_token(text: str, token: lark.Token) -> tuple[Pos, str]:
    """The position just after the code before ``token``, and that code's last word."""
    lines = text.split("\n")
    line = (token.line or len(lines)) if token.type != "$END" else len(lines)
    col = (token.column or 1) if token.type != "$END" else len(lines[-1]) + 1
    current = lines[line - 1][: col - 1] if line <= len(lines) else ""
    for index in range(line - 1, -1, -1):
        content = _code_part(current) if index == line - 1 else _code_part(lines[index])
        if content:
            return (index + 1, len(content) + 1, 1), _last_word(content)
    return (1, 1, 1), ""


def _code_part(line: str) -> str:
    # A '#' starts a comment; strings cannot hold newlines, so a per-line cut is exact
    # except for '#' inside a string, where cutting only shortens the echoed context.
    if line.lstrip().startswith("//"):
        return ""
    return line.split("#", 1)[0].rstrip()


def _last_word(content: str) -> str:
    words = content.split()
    return words[-1] if words else content
