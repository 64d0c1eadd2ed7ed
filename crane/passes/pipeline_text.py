"""Parse and print MLIR's textual pass-pipeline syntax, keeping source spans.

The grammar follows ``mlir/docs/PassManagement.md``::

    pipeline ::= anchor '(' element (',' element)* ')'
    element  ::= pipeline | pass-name options?
    options  ::= '{' (key ('=' value)?)* '}'

plus the flat shorthand ``a,b{k=v}`` that a driver nests under its root op. Whitespace
may appear between any two tokens, option entries are separated by whitespace, and a
value is a bare word (``1,2,3``, ``-0.5``, ``^bb``), a ``"quoted string"`` with ``\\"``
and ``\\\\`` escapes, or a ``{...}`` group kept verbatim (braces included).

Every node records where it came from, so that the pass manager and the option binder
can point at the exact key or value that is wrong. Spans are provenance, not content:
they are excluded from equality, which makes ``parse(format(x)) == x`` meaningful.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]*")
# A run that reads as one (possibly malformed) name, for messages like "got '1cse'".
_WORD = re.compile(r"[A-Za-z0-9_.-]+")
# Parentheses are excluded from bare values so that a forgotten '}' is reported at the
# ')' that follows, instead of silently swallowing the rest of the pipeline.
_BARE_VALUE = re.compile(r"[^\s{}\"()]+")
_WHITESPACE = re.compile(r"\s*")
_QUOTED = re.compile(r'"((?:[^"\\]|\\.)*)"', re.DOTALL)
_UNESCAPE = re.compile(r'\\(["\\])')
_ESCAPE = re.compile(r'(["\\])')
_BRACE_TOKEN = re.compile(r'[^{}"]+|"(?:[^"\\]|\\.)*"|[{}"]', re.DOTALL)
_BRACE_DEPTH = {"{": 1, "}": -1}


@dataclass(frozen=True)
class Span:
    """Half-open range ``[start, end)`` of character offsets into the pipeline text."""

    start: int
    end: int

    @classmethod
    def synthetic(cls) -> Span:
        """The span given to nodes built in code rather than parsed."""
        return cls(0, 0)

    @classmethod
    def of_char(cls, offset: int) -> Span:
        """The one-character span at ``offset``."""
        return cls(offset, offset + 1)


@dataclass(frozen=True)
class PassOption:
    """One ``key`` or ``key=value`` entry of a pass's ``{...}`` options."""

    key: str
    value: str | None
    """The unquoted value; None for a bare key (which binds as boolean true)."""
    key_span: Span = field(compare=False)
    value_span: Span | None = field(compare=False)
    """Covers the value as written, including quotes or braces."""

    @classmethod
    def make(cls, key: str, value: str | None = None) -> PassOption:
        """An option built in code, with synthetic spans."""
        value_span = None if value is None else Span.synthetic()
        return cls(key, value, Span.synthetic(), value_span)


@dataclass(frozen=True)
class PassEntry:
    """A pass name with its options, e.g. ``partition{max-tiles=16 policy=greedy}``."""

    name: str
    options: tuple[PassOption, ...]
    span: Span = field(compare=False)

    @classmethod
    def make(cls, name: str, options: tuple[PassOption, ...] = ()) -> PassEntry:
        """An entry built in code, with a synthetic span."""
        return cls(name, options, Span.synthetic())

    @property
    def name_span(self) -> Span:
        """Where the pass name is written."""
        return Span(self.span.start, self.span.start + len(self.name))

    def option(self, key: str) -> PassOption | None:
        """The option written as ``key``, if any."""
        return next((option for option in self.options if option.key == key), None)


@dataclass(frozen=True)
class PipelineNode:
    """``anchor(element, ...)``, or a flat pass list when ``anchor`` is None."""

    anchor: str | None
    elements: tuple[PassEntry | PipelineNode, ...]
    span: Span = field(compare=False)

    @classmethod
    def anchored(cls, anchor: str, elements: tuple[PassEntry | PipelineNode, ...]) -> PipelineNode:
        """A nested pipeline built in code, with a synthetic span."""
        return cls(anchor, elements, Span.synthetic())

    @classmethod
    def flat(cls, elements: tuple[PassEntry | PipelineNode, ...]) -> PipelineNode:
        """A flat pass list built in code, with a synthetic span."""
        return cls(None, elements, Span.synthetic())

    @property
    def anchor_span(self) -> Span | None:
        """Where the anchor name is written; None for a flat list."""
        if self.anchor is None:
            return None
        return Span(self.span.start, self.span.start + len(self.anchor))


class PipelineSyntaxError(Exception):
    """A located error in pipeline text, or in the options bound from it."""

    def __init__(self, message: str, span: Span) -> None:
        super().__init__(message, span)
        self.message = message
        self.span = span

    def __str__(self) -> str:
        return self.message

    def render(self, text: str, source_name: str = "<pipeline>") -> str:
        """``NAME:LINE:COL: error: MESSAGE``, then the source line and a caret line."""
        line, column = line_and_column(text, self.span.start)
        header = f"{source_name}:{line}:{column}: error: {self.message}"
        return "\n".join([header, *_caret_snippet(text, self.span)])


def line_and_column(text: str, offset: int) -> tuple[int, int]:
    """1-based line and column of ``offset`` in ``text``."""
    line_start = text.rfind("\n", 0, offset) + 1
    return text.count("\n", 0, offset) + 1, offset - line_start + 1


def is_valid_name(name: str) -> bool:
    """Whether ``name`` can be written as a pass, anchor or option name."""
    return _NAME.fullmatch(name) is not None


def parse_pipeline(text: str) -> PipelineNode:
    """Parse ``anchor(...)`` as a nested pipeline, and anything else as a flat list.

    A flat list holding exactly one nested pipeline is returned as that pipeline, so
    ``builtin.module(cse)`` keeps its anchor while ``cse,dce`` gets ``anchor=None``.
    """
    flat = parse_pass_list(text)
    if len(flat.elements) == 1 and isinstance(flat.elements[0], PipelineNode):
        return flat.elements[0]
    return flat


def parse_pass_list(text: str) -> PipelineNode:
    """Parse the flat shorthand ``a,b{k=v},c(d)``; the result has ``anchor=None``."""
    start = _skip_whitespace(text, 0)
    if start == len(text):
        return PipelineNode(None, (), Span(start, start))
    elements, end = _parse_elements(text, start, opener=None)
    if end < len(text):
        raise _stray_closer(text, end)
    return PipelineNode(None, elements, Span(start, elements[-1].span.end))


def format_pipeline(node: PipelineNode) -> str:
    """Canonical text: no whitespace except between options, minimal quoting.

    Options keep their given order. ``parse_pipeline`` reads the result back to an equal
    node, except a flat list holding one nested pipeline, which needs ``parse_pass_list``.
    """
    body = ",".join(_format_element(element) for element in node.elements)
    if node.anchor is None:
        return body
    return f"{node.anchor}({body})"


def format_pass_entry(entry: PassEntry) -> str:
    """``name`` or ``name{k=v ...}``; an empty option list prints no braces."""
    if not entry.options:
        return entry.name
    return entry.name + "{" + " ".join(_format_option(option) for option in entry.options) + "}"


def quote_option_value(value: str) -> str:
    """``value`` as it must be written after ``key=`` to parse back unchanged."""
    if _BARE_VALUE.fullmatch(value) and not value.endswith(","):
        return value
    if value.startswith("{") and _brace_group_end(value, 0) == len(value):
        return value
    return '"' + _ESCAPE.sub(r"\\\1", value) + '"'


def _format_element(element: PassEntry | PipelineNode) -> str:
    if isinstance(element, PipelineNode):
        return format_pipeline(element)
    return format_pass_entry(element)


def _format_option(option: PassOption) -> str:
    if option.value is None:
        return option.key
    return f"{option.key}={quote_option_value(option.value)}"


def _skip_whitespace(text: str, pos: int) -> int:
    match = _WHITESPACE.match(text, pos)
    return match.end() if match else pos


@dataclass(frozen=True)
class _Opener:
    """The ``anchor(`` whose elements are being parsed, for error messages."""

    anchor: str
    paren: Span


def _parse_elements(
    text: str, pos: int, opener: _Opener | None
) -> tuple[tuple[PassEntry | PipelineNode, ...], int]:
    """Parse ``element (',' element)*`` and return the offset of whatever ends it.

    Inside an anchor (``opener`` given) that is the closing ')'; at top level it is the
    end of the text or a stray closer, which the caller reports.
    """
    elements: list[PassEntry | PipelineNode] = []
    while True:
        element, pos = _parse_element(text, pos)
        elements.append(element)
        pos = _skip_whitespace(text, pos)
        if pos == len(text) or text[pos] in ")}":
            return tuple(elements), _check_closer(text, pos, opener)
        if text[pos] != ",":
            raise _missing_comma(text, pos, element)
        pos = _after_comma(text, pos, opener)


def _check_closer(text: str, pos: int, opener: _Opener | None) -> int:
    if opener is None:
        return pos
    if pos == len(text):
        raise PipelineSyntaxError(f"missing ')' to close '{opener.anchor}('", opener.paren)
    if text[pos] == "}":
        raise _stray_closer(text, pos)
    return pos


def _after_comma(text: str, comma: int, opener: _Opener | None) -> int:
    pos = _skip_whitespace(text, comma + 1)
    if pos == len(text):
        raise PipelineSyntaxError(
            "trailing ',': expected a pass name after it", Span.of_char(comma)
        )
    if text[pos] == ")" and opener is not None:
        raise PipelineSyntaxError("trailing ',' before ')'", Span.of_char(comma))
    return pos


def _missing_comma(text: str, pos: int, previous: PassEntry | PipelineNode) -> PipelineSyntaxError:
    name = previous.name if isinstance(previous, PassEntry) else previous.anchor
    if text[pos] == "(" and isinstance(previous, PassEntry):
        message = f"unexpected '(' after the options of '{name}': an anchor takes no options"
        return PipelineSyntaxError(message, Span.of_char(pos))
    if text[pos] == "{" and isinstance(previous, PipelineNode):
        message = f"unexpected '{{' after '{name}(...)': options belong to a pass, not an anchor"
        return PipelineSyntaxError(message, Span.of_char(pos))
    return PipelineSyntaxError(
        f"expected ',' after '{name}', got {_describe(text, pos)}", _token_span(text, pos)
    )


def _stray_closer(text: str, pos: int) -> PipelineSyntaxError:
    return PipelineSyntaxError(f"unmatched '{text[pos]}'", Span.of_char(pos))


def _parse_element(text: str, pos: int) -> tuple[PassEntry | PipelineNode, int]:
    match = _NAME.match(text, pos)
    if match is None:
        raise _expected_name(text, pos)
    name_end = match.end()
    after = _skip_whitespace(text, name_end)
    if after < len(text) and text[after] == "(":
        return _parse_nested(text, pos, match.group(), after)
    if after < len(text) and text[after] == "{":
        options, end = _parse_options(text, after, match.group())
        return PassEntry(match.group(), options, Span(pos, end)), end
    return PassEntry(match.group(), (), Span(pos, name_end)), name_end


def _parse_nested(text: str, start: int, anchor: str, paren: int) -> tuple[PipelineNode, int]:
    opener = _Opener(anchor, Span.of_char(paren))
    pos = _skip_whitespace(text, paren + 1)
    if pos < len(text) and text[pos] == ")":
        return PipelineNode(anchor, (), Span(start, pos + 1)), pos + 1
    if pos == len(text):
        raise PipelineSyntaxError(f"missing ')' to close '{anchor}('", opener.paren)
    elements, close = _parse_elements(text, pos, opener)
    return PipelineNode(anchor, elements, Span(start, close + 1)), close + 1


def _expected_name(text: str, pos: int) -> PipelineSyntaxError:
    if pos == len(text):
        return PipelineSyntaxError("expected a pass name", Span(pos, pos))
    char = text[pos]
    if char in ")}":
        return _stray_closer(text, pos)
    if char == "(":
        return PipelineSyntaxError("expected an anchor name before '('", Span.of_char(pos))
    if char == "{":
        return PipelineSyntaxError("expected a pass name before '{'", Span.of_char(pos))
    word = _WORD.match(text, pos)
    if word is not None:
        message = f"invalid pass name '{word.group()}': names start with a letter or '_'"
        return PipelineSyntaxError(message, Span(pos, word.end()))
    return PipelineSyntaxError(f"expected a pass name, got '{char}'", Span.of_char(pos))


def _parse_options(text: str, brace: int, pass_name: str) -> tuple[tuple[PassOption, ...], int]:
    """Parse ``{...}`` starting at ``brace``; return the options and the offset after '}'."""
    options: list[PassOption] = []
    pos = brace + 1
    while True:
        pos = _skip_whitespace(text, pos)
        if pos == len(text):
            message = f"missing '}}' to close the options of '{pass_name}'"
            raise PipelineSyntaxError(message, Span.of_char(brace))
        if text[pos] == "}":
            return tuple(options), pos + 1
        option, pos = _parse_option(text, pos, pass_name)
        _check_duplicate(text, options, option)
        _check_separator(text, pos, option, pass_name)
        options.append(option)


def _parse_option(text: str, pos: int, pass_name: str) -> tuple[PassOption, int]:
    match = _NAME.match(text, pos)
    if match is None:
        raise _expected_option_name(text, pos, pass_name)
    key_span = Span(pos, match.end())
    equals = _skip_whitespace(text, match.end())
    if equals == len(text) or text[equals] != "=":
        return PassOption(match.group(), None, key_span, None), match.end()
    value, value_span = _parse_value(
        text, _skip_whitespace(text, equals + 1), match.group(), equals
    )
    return PassOption(match.group(), value, key_span, value_span), value_span.end


def _expected_option_name(text: str, pos: int, pass_name: str) -> PipelineSyntaxError:
    char = text[pos]
    span = Span.of_char(pos)
    if char == "=":
        return PipelineSyntaxError("expected an option name before '='", span)
    if char == ",":
        return PipelineSyntaxError("options are separated by spaces, not ','", span)
    if char == ")":
        message = f"expected '}}' to close the options of '{pass_name}', got ')'"
        return PipelineSyntaxError(message, span)
    word = _WORD.match(text, pos)
    if word is not None:
        message = f"invalid option name '{word.group()}': names start with a letter or '_'"
        return PipelineSyntaxError(message, Span(pos, word.end()))
    return PipelineSyntaxError(f"expected an option name, got '{char}'", span)


def _parse_value(text: str, pos: int, key: str, equals: int) -> tuple[str, Span]:
    if pos == len(text) or text[pos] in "})":
        message = f"expected a value after '=' for option '{key}'"
        raise PipelineSyntaxError(message, Span.of_char(equals))
    if text[pos] == '"':
        return _parse_quoted(text, pos)
    if text[pos] == "{":
        return _parse_braced(text, pos, key)
    match = _BARE_VALUE.match(text, pos)
    if match is None:
        message = f"expected a value for option '{key}', got '{text[pos]}'"
        raise PipelineSyntaxError(message, Span.of_char(pos))
    if match.group().endswith(","):
        message = f"trailing ',' in the value of option '{key}' (options are separated by spaces)"
        raise PipelineSyntaxError(message, Span.of_char(match.end() - 1))
    return match.group(), Span(pos, match.end())


def _parse_quoted(text: str, quote: int) -> tuple[str, Span]:
    match = _QUOTED.match(text, quote)
    if match is None:
        raise PipelineSyntaxError("unterminated string", Span(quote, len(text)))
    return _UNESCAPE.sub(r"\1", match.group(1)), Span(quote, match.end())


def _parse_braced(text: str, brace: int, key: str) -> tuple[str, Span]:
    end = _brace_group_end(text, brace)
    if end is None:
        message = f"missing '}}' to close '{{' in the value of option '{key}'"
        raise PipelineSyntaxError(message, Span.of_char(brace))
    return text[brace:end], Span(brace, end)


def _brace_group_end(text: str, brace: int) -> int | None:
    """Offset just after the '}' matching the '{' at ``brace``; quotes hide braces."""
    depth = 0
    for token in _BRACE_TOKEN.finditer(text, brace):
        if token.group() == '"':
            return None
        depth += _BRACE_DEPTH.get(token.group(), 0)
        if depth == 0:
            return token.end()
    return None


def _check_duplicate(text: str, options: list[PassOption], option: PassOption) -> None:
    first = next((seen for seen in options if seen.key == option.key), None)
    if first is None:
        return
    _, column = line_and_column(text, first.key_span.start)
    message = f"duplicate option '{option.key}' (first given at column {column})"
    raise PipelineSyntaxError(message, option.key_span)


def _check_separator(text: str, pos: int, option: PassOption, pass_name: str) -> None:
    """After an option there must be whitespace, the closing '}', or the end of text."""
    if pos == len(text) or text[pos].isspace() or text[pos] == "}":
        return
    if text[pos] == ",":
        message = "options are separated by spaces, not ','"
        raise PipelineSyntaxError(message, Span.of_char(pos))
    if text[pos] == ")":
        message = f"expected '}}' to close the options of '{pass_name}', got ')'"
        raise PipelineSyntaxError(message, Span.of_char(pos))
    message = f"expected a space or '}}' after option '{option.key}', got '{text[pos]}'"
    raise PipelineSyntaxError(message, Span.of_char(pos))


def _describe(text: str, pos: int) -> str:
    word = _WORD.match(text, pos)
    return f"'{word.group()}'" if word else f"'{text[pos]}'"


def _token_span(text: str, pos: int) -> Span:
    word = _WORD.match(text, pos)
    return Span(pos, word.end()) if word else Span.of_char(pos)


def _caret_snippet(text: str, span: Span) -> list[str]:
    """The line holding ``span.start`` and a ``^~~~`` line under the span."""
    line_start = text.rfind("\n", 0, span.start) + 1
    line_end = text.find("\n", span.start)
    line_end = len(text) if line_end == -1 else line_end
    line = text[line_start:line_end]
    # Copy tabs from the source line so the caret stays aligned in a terminal.
    padding = "".join(c if c == "\t" else " " for c in line[: span.start - line_start])
    width = max(1, min(span.end, line_end) - span.start)
    return [line, padding + "^" + "~" * (width - 1)]
