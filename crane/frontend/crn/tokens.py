"""The `.crn` tokenizer: one compiled regex per lexeme, feeding Lark's LALR parser.

Lark's contextual lexer matches, at every position, a regex built from the terminals the
parser accepts in its current state, then runs a second regex to tell keywords from names.
:class:`CrnLexer` (``Lark(..., lexer=CrnLexer)``) reads each lexeme -- a word, a number, a
string, a punctuation mark -- with a single pattern, and names it with a dictionary built
from the grammar's own terminals: a word is a keyword where the parser accepts that keyword
and a NAME elsewhere (``batch`` is both), ``-`` is MINUS or BINOP, ``/`` SLASH or BINOP.

The tokens are the contextual lexer's, type, text and positions alike. Whenever a lexeme
cannot be named that way -- an unknown character, an unterminated string, a word where only
a keyword that is a prefix of it would fit -- the rest of the text is handed to Lark's
contextual lexer, which reads or rejects it exactly as it always did, so that syntax errors
(and their messages) do not change.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from lark import Token
from lark.common import LexerConf
from lark.exceptions import GrammarError
from lark.lexer import ContextualLexer, Lexer, LexerState, PatternStr, TerminalDef
from lark.utils import TextSlice

LEXEME = re.compile(
    r"""[ \t\r]*+
    (?:(?P<word>[A-Za-z_][A-Za-z0-9_]*)
      | (?P<mark>\.\.|//|[-+*/%(){}\[\];,:=])
      | (?P<FLOAT>[0-9]+\.[0-9]+(?:[eE][+-]?[0-9]+)?|[0-9]+[eE][+-]?[0-9]+)
      | (?P<INT>[0-9]+)
      | (?P<newline>\n(?:[ \t]*//[^\n]*)?)
      | (?P<comment>\#[^\n]*)
      | (?P<STRING>"[^"\n]*")
      | (?P<bad>.))
    """,
    re.VERBOSE,
)
"""Blanks, then one lexeme. A newline takes the next line along when that line is a
``//`` comment (LINE_COMMENT: only blanks before it), so a ``//`` read as a mark is always
floor division. Any other character is ``bad``: a match starts wherever the previous one
ended, up to the blanks that end the text."""
LEADING_COMMENT = re.compile(r"[ \t]*//[^\n]*")
"""A ``//`` comment on the first line (which no newline precedes)."""

EXPECTED_PATTERNS = {
    "NAME": ("re", "[A-Za-z_][A-Za-z0-9_]*", 0),
    "INT": ("re", "[0-9]+", 0),
    "FLOAT": ("re", r"[0-9]+\.[0-9]+([eE][+-]?[0-9]+)?|[0-9]+[eE][+-]?[0-9]+", 2),
    "STRING": ("re", '"[^"\n]*"', 0),
    "COMMENT": ("re", "#[^\n]*", 0),
    "LINE_COMMENT": ("re", "(?<![^\n])[ \t]*\\/\\/[^\n]*", 3),
    "BLANKS": ("re", "[ \t\r]+", 0),
    "NEWLINE": ("re", "\n", 0),
}
"""The terminals :data:`LEXEME` hard-codes, as the grammar must define them."""
IGNORED = frozenset({"COMMENT", "LINE_COMMENT", "BLANKS", "NEWLINE"})
MARKS = ("..", "//", "-", "+", "*", "/", "%", "(", ")", "{", "}", "[", "]", ";", ",", ":", "=")
"""Every punctuation mark :data:`LEXEME` reads."""


@dataclass(frozen=True, slots=True)
class LexemeTable:
    """What each lexeme may be, most preferred first (derived from the grammar's terminals)."""

    keywords: Mapping[str, str]
    """Keyword text -> its terminal (a word that is not a keyword is a NAME)."""
    kinds: Mapping[str, tuple[str, ...]]
    """Punctuation mark, or the name of a regex group (FLOAT, INT, STRING) -> terminals."""

    @staticmethod
    def from_terminals(terminals: Collection[TerminalDef], ignore: Collection[str]) -> LexemeTable:
        """The table for ``terminals``; a GrammarError if :data:`LEXEME` cannot read them."""
        by_name = {t.name: t for t in terminals}
        _check_fixed_terminals(by_name, ignore)
        name = re.compile(by_name["NAME"].pattern.to_regexp())
        strings = [t for t in terminals if isinstance(t.pattern, PatternStr)]
        keywords = {t.pattern.value: t.name for t in strings if name.fullmatch(t.pattern.value)}
        marks = {t.pattern.value: t for t in strings if t.pattern.value not in keywords}
        regexes = [t for t in terminals if t.name not in EXPECTED_PATTERNS and t not in strings]
        unknown = sorted(set(marks) - set(MARKS))
        if unknown:
            raise GrammarError(f"the .crn tokenizer reads no punctuation {unknown}; add it to MARKS")
        kinds: dict[str, tuple[str, ...]] = {"FLOAT": ("FLOAT",), "INT": ("INT",), "STRING": ("STRING",)}
        for mark in MARKS:
            kinds[mark] = _mark_kinds(mark, marks.get(mark), regexes)
        covered = {kind for kinds_of in kinds.values() for kind in kinds_of}
        missing = sorted(t.name for t in regexes if t.name not in covered)
        if missing:
            raise GrammarError(f"the .crn tokenizer cannot read terminals {missing}")
        return LexemeTable(keywords, kinds)


def _check_fixed_terminals(by_name: Mapping[str, TerminalDef], ignore: Collection[str]) -> None:
    if set(ignore) != IGNORED:
        raise GrammarError(f"the .crn tokenizer skips {sorted(IGNORED)}, the grammar {sorted(ignore)}")
    for name, (kind, pattern, priority) in EXPECTED_PATTERNS.items():
        term = by_name.get(name)
        found = None if term is None else (term.pattern.type, term.pattern.value, term.priority)
        if found != (kind, pattern, priority) or (term is not None and term.pattern.flags):
            raise GrammarError(f"the .crn tokenizer reads {name} as {pattern!r} (priority "
                               f"{priority}); the grammar defines it as {found}")
    others = [t for t in by_name.values() if t.name not in EXPECTED_PATTERNS]
    if any(t.priority != 0 or t.pattern.flags for t in others):
        raise GrammarError("the .crn tokenizer assumes keywords and marks have no priority or flags")


def _mark_kinds(mark: str, string: TerminalDef | None, regexes: list[TerminalDef]) -> tuple[str, ...]:
    """The terminals ``mark`` may be, in the order Lark's lexer would prefer them.

    A string terminal first: where a regex terminal of the same priority matches it too,
    Lark reads the regex and then renames the token after the string terminal.
    """
    ordered = sorted(regexes, key=lambda t: (-t.priority, -t.pattern.max_width, -len(t.pattern.value), t.name))
    matching = [t.name for t in ordered if re.fullmatch(t.pattern.to_regexp(), mark)]
    return ((string.name,) if string is not None else ()) + tuple(matching)


class CrnLexer(Lexer):
    """A Lark lexer (interface 2) for the `.crn` grammar; see the module docstring."""

    __future_interface__ = 2

    def __init__(self, conf: LexerConf) -> None:
        self.conf = conf
        self.table = LexemeTable.from_terminals(conf.terminals, conf.ignore)
        self._contextual: ContextualLexer | None = None

    def contextual(self, parser_state: Any) -> ContextualLexer:
        """Lark's contextual lexer for this grammar, built as ``lexer="contextual"`` would."""
        if self._contextual is None:
            table = parser_state.parse_conf.parse_table
            states: dict[int, Collection[str]] = {index: list(actions) for index, actions in table.states.items()}
            self._contextual = ContextualLexer(self.conf, states)
        return self._contextual

    def lex(self, lexer_state: LexerState, parser_state: Any) -> Iterator[Token]:
        # Not a generator itself: the parser pulls tokens straight from `_lex`.
        text = lexer_state.text
        whole = isinstance(text, TextSlice) and text.is_complete_text() and isinstance(text.text, str)
        if not whole or lexer_state.line_ctr.char_pos != 0:
            return self.contextual(parser_state).lex(lexer_state, parser_state)
        return self._lex(text.text, lexer_state, parser_state)

    def _lex(self, source: str, lexer_state: LexerState, parser_state: Any) -> Iterator[Token]:
        states = parser_state.parse_conf.states
        stack = parser_state.state_stack  # the parser pushes and pops this very list
        keywords, kinds = self.table.keywords, self.table.kinds
        make = str.__new__
        line, line_start, last, stop = 1, 0, None, len(source)
        leading = LEADING_COMMENT.match(source)
        for match in LEXEME.finditer(source, 0 if leading is None else leading.end()):
            group: str = match.lastgroup  # type: ignore[assignment]  # every alternative is a group
            if group == "newline":
                line, line_start = line + 1, match.start(group) + 1
                continue
            if group == "comment":
                continue
            value = match[group]
            accepts = states[stack[-1]]
            if group == "word":
                kind: str | None = keywords.get(value, "NAME")
                if kind not in accepts:
                    kind = "NAME" if "NAME" in accepts else None
            else:
                choices = kinds.get(value if group == "mark" else group, _NOTHING)
                kind = choices[0]
                if kind not in accepts:
                    kind = _first_accepted(choices[1:], accepts)
            if kind is None:
                stop = match.start()
                break
            end = match.end()
            start = end - len(value)
            token = make(Token, value)
            token.type, token.value, token.start_pos, token.end_pos = kind, value, start, end
            token.line = token.end_line = line
            token.column, token.end_column = start - line_start + 1, end - line_start + 1
            last = token
            yield token
        _move(lexer_state, stop, line, line_start, last)
        if stop < len(source):
            yield from self.contextual(parser_state).lex(lexer_state, parser_state)


_NOTHING = ("",)
"""The choices of a ``bad`` character: none (no terminal is called "")."""


def _first_accepted(kinds: tuple[str, ...], accepts: Mapping[str, object]) -> str | None:
    for kind in kinds:
        if kind in accepts:
            return kind
    return None


def _move(lexer_state: LexerState, pos: int, line: int, line_start: int, last: Token | None) -> None:
    """Bring Lark's lexer state to ``pos`` (where the contextual lexer takes over, if it does)."""
    counter = lexer_state.line_ctr
    counter.char_pos, counter.line, counter.line_start_pos = pos, line, line_start
    counter.column = pos - line_start + 1
    if last is not None:
        lexer_state.last_token = last
