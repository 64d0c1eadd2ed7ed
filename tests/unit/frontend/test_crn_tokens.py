"""The `.crn` tokenizer (crane/frontend/crn/tokens.py) reads exactly what Lark's contextual
lexer reads: the same tokens with the same positions, the same syntax errors.

Every comparison runs the same grammar and transformer twice, once with ``CrnLexer`` and
once with ``lexer="contextual"`` (the reference).
"""

from __future__ import annotations

import functools
from pathlib import Path

import lark
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lark.exceptions import GrammarError, UnexpectedInput
from test_crn_fuzz import TOKENS

from crane.frontend.crn.syntax import build_parser, parser
from crane.frontend.crn.syntax_errors import describe_syntax_error
from crane.frontend.crn.tokens import LexemeTable

ROOT = Path(__file__).resolve().parents[3]
SOURCES = sorted([*(ROOT / "examples").rglob("*.crn"), *(ROOT / "tests" / "filecheck").rglob("*.crn")])

TokenRow = tuple[str, str, int | None, int | None, int | None, int | None, int | None, int | None]


@functools.cache
def reference() -> lark.Lark:
    return build_parser("contextual")


def tokens(grammar: lark.Lark, text: str) -> list[TokenRow]:
    """Every token of a text that parses, with all its positions."""
    return [(t.type, t.value, t.start_pos, t.line, t.column, t.end_line, t.end_column, t.end_pos)
            for t in grammar.parse_interactive(text).exhaust_lexer()]


def outcome(grammar: lark.Lark, text: str) -> object:
    """The syntax tree, or the error: its class, token, expected set and friendly message."""
    try:
        return grammar.parse(text)
    except UnexpectedInput as error:
        token = getattr(error, "token", None)
        where = None if token is None else (token.type, str(token), token.line, token.column, token.end_pos)
        problem = describe_syntax_error(error, text, grammar)
        expected = sorted(getattr(error, "expected", None) or getattr(error, "allowed", None) or ())
        return (type(error).__name__, error.line, error.column, where, expected, problem.pos, problem.message)


def assert_same(text: str) -> None:
    assert outcome(parser(), text) == outcome(reference(), text)


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_example_and_test_file_reads_the_same(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    assert_same(text)
    if not isinstance(outcome(reference(), text), tuple):
        assert tokens(parser(), text) == tokens(reference(), text)


KINDS = """# a comment line
// a line comment at the top
import "lib/common.crn";
let k = 2 * -3 // 2 + 7 % 4 - 1.5e3 / 2.0 + 1e-3;
machine m extends edge {
  mesh 4 x 4;
  sram 1 MiB;
  dram_bw 25.6 GB/s;
  dram_ports [0, 1], [3, 3];
}
block b(x, c=4) { return conv2d(x, out=c, kernel=1); }
network batch_net {
\tmachine m;\r
  input x: f32[batch, 3, 8, 8];
  batch 2;
    // an indented line comment
  y = b(x, c=k // 2);  # floor division, then a comment
  repeat i in 0..2 { y = relu(y); }
  output y;
  train { loss mse(y, y); optimizer sgd(lr=0.1, nesterov=true, wd=false); }
}
"""


def test_every_token_kind_and_position() -> None:
    assert_same(KINDS)
    rows = tokens(parser(), KINDS)
    assert rows == tokens(reference(), KINDS)
    kinds = {row[0] for row in rows}
    grammar_terminals = {t.name for t in parser().terminals} - {"COMMENT", "LINE_COMMENT", "BLANKS", "NEWLINE"}
    assert kinds == grammar_terminals  # every terminal occurs
    assert {r[0] for r in rows if r[1] == "batch"} == {"NAME", "BATCH"}
    assert {r[0] for r in rows if r[1] == "x"} == {"NAME", "X"}
    assert {r[0] for r in rows if r[1] == "-"} == {"MINUS", "BINOP"}
    assert {r[0] for r in rows if r[1] == "/"} == {"BINOP", "SLASH"}
    tab_line = next(r for r in rows if r[0] == "MACHINE" and r[3] == 13)
    assert tab_line[4] == 2  # a tab is one column, as in Lark


@pytest.mark.parametrize("text", [
    "network n { input x: f32[1]; y = relu(x) @ 2; }",     # unknown character
    "network n { y = relu('x'); }",                          # single quotes
    'network n { let s = "open; }',                          # unterminated string
    "network n { repeat i ink 0..3 { } }",                   # a keyword is a prefix of the word
    "machine m { mesh 4 x4; }",                              # `x` glued to a number: valid
    "machine m { mesh 4x4; }",
    "network n { let a = 1.; }",                             # a lone '.'
    "network n { let a = 1...3; }",
    "network n { batch batch; }",
    "network n {\n  y = relu(x)\n  z = relu(y);\n}\n",    # missing ';' at a line end
    "network n { input x: f32[1]; }   \t\r",                 # trailing blanks
    "\t// only a comment",
    "\r// not a comment: \\r is no blank before //",
    "",
    "network n { let a = 4 //\n2; }",
    "network n {\n// c\n  let a = 4\n  // 2;\n}",
    "network n { let a = 4 /\n/ 2; }",
    "network n { let a = 4\n\r// 2; }",                      # \r before // : floor division
    "network n { let a = 4\n \t// 2;\n 1; }",
    "network n { y = f(x, k= -1, -2) ; }",
    "netw\u00f6rk n { }",
])
def test_edge_cases_read_the_same(text: str) -> None:
    assert_same(text)


def test_bad_character_message_is_located() -> None:
    found = outcome(parser(), "network n {\n  y = relu(x) @ 2;\n}\n")
    assert isinstance(found, tuple)
    assert found[-2:] == ((2, 15, 1), "unexpected character '@'")


FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FUZZ
@given(st.text(alphabet=st.sampled_from(list("abcinxy_019 .,;:=+-*/%()[]{}\"'#\n\t\r@e")), max_size=120))
def test_random_characters_read_the_same(text: str) -> None:
    assert_same(text)


@FUZZ
@given(st.lists(st.sampled_from([*TOKENS, "ink", "x4", "4x", "1.", "..", "//", "\n//", "\n  // c\n"]),
                max_size=60))
def test_random_token_soup_reads_the_same(parts: list[str]) -> None:
    assert_same(" ".join(parts))
    assert_same("network n {\n  input x: f32[1, 3, 8, 8];\n  " + "".join(parts) + "\n}\n")


def test_a_grammar_the_tokenizer_cannot_read_is_refused() -> None:
    terminals = list(parser().terminals)
    extra = lark.lexer.TerminalDef("ARROW", lark.lexer.PatternStr("->"))
    with pytest.raises(GrammarError, match="no punctuation"):
        LexemeTable.from_terminals([*terminals, extra], ["COMMENT", "LINE_COMMENT", "BLANKS", "NEWLINE"])
    changed = [lark.lexer.TerminalDef("NAME", lark.lexer.PatternRE("[a-z]+")) if t.name == "NAME" else t
               for t in terminals]
    with pytest.raises(GrammarError, match="reads NAME"):
        LexemeTable.from_terminals(changed, ["COMMENT", "LINE_COMMENT", "BLANKS", "NEWLINE"])
    with pytest.raises(GrammarError, match="skips"):
        LexemeTable.from_terminals(terminals, ["COMMENT", "BLANKS", "NEWLINE"])


def test_a_slice_of_a_text_is_read_by_the_contextual_lexer() -> None:
    text = "junk @ network n { input x: f32[1]; y = relu(x); }"
    part = lark.utils.TextSlice(text, 7, len(text))
    assert parser().parse(part) == reference().parse(part)
