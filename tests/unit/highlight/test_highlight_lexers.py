"""The Pygments lexers for `.crn` and the IR: lossless on every bundled and golden file,
no Error tokens where the compiler reads the text, the right token type for each construct,
and found by Pygments through the ``pygments.lexers`` entry points."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from pygments import highlight
from pygments.formatters import HtmlFormatter
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

from crane.highlight.crn_lexer import DTYPES, LAYER_KINDS, OPTIMIZERS, CrnLexer
from crane.highlight.ir_lexer import SCALAR_TYPES, CraneIRLexer

ROOT = Path(__file__).resolve().parents[3]
CRN_FILES = sorted({*ROOT.glob("examples/**/*.crn"), *ROOT.glob("tests/filecheck/**/*.crn")})
IR_FILES = sorted({*ROOT.glob("examples/**/*.mlir"), *ROOT.glob("tests/filecheck/**/*.mlir")})
EXPECTED_ERRORS = {
    "tests/filecheck/dsl/invalid.crn": [(78, "@"), (87, "'"), (87, "'")],
}
"""Characters that golden inputs hold on purpose (to test the compiler's message for them):
(line, text) of each Error token. Every other file must have none."""

ENTRY_POINTS = {
    "crn": "crane.highlight.crn_lexer:CrnLexer",
    "crane-ir": "crane.highlight.ir_lexer:CraneIRLexer",
}
"""The ``[project.entry-points."pygments.lexers"]`` table of pyproject.toml."""


def lex(lexer: Lexer, text: str) -> list[tuple[int, _TokenType, str]]:
    return list(lexer.get_tokens_unprocessed(text))


def pairs(lexer: Lexer, text: str) -> list[tuple[_TokenType, str]]:
    """The tokens of ``text`` other than whitespace, as (type, text)."""
    return [(token, value) for _, token, value in lex(lexer, text) if token is not Whitespace]


def token_of(lexer: Lexer, text: str, value: str, nth: int = 0) -> _TokenType:
    """The token type of the ``nth`` token whose text is ``value``."""
    found = [token for token, text_ in pairs(lexer, text) if text_ == value]
    assert len(found) > nth, f"no token {value!r} (#{nth}) in {pairs(lexer, text)}"
    return found[nth]


def check_lossless(lexer: Lexer, text: str) -> list[tuple[int, _TokenType, str]]:
    tokens = lex(lexer, text)
    assert "".join(value for _, _, value in tokens) == text
    offset = 0
    for start, _, value in tokens:
        assert start == offset
        assert value  # no empty tokens
        offset += len(value)
    return tokens


def error_tokens(text: str, tokens: list[tuple[int, _TokenType, str]]) -> list[tuple[int, str]]:
    return [(text.count("\n", 0, start) + 1, value) for start, token, value in tokens if token in Error]


# ----- every real input


def test_the_corpus_is_there() -> None:
    """The file lists below are not empty (a moved directory must not pass silently)."""
    assert len(CRN_FILES) >= 25
    assert len(IR_FILES) >= 25
    assert ROOT / "examples/resnet50.crn" in CRN_FILES
    assert ROOT / "tests/filecheck/ir/attributes.mlir" in IR_FILES


@pytest.mark.parametrize("path", CRN_FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_crn_files_lex_losslessly_without_errors(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    tokens = check_lossless(CrnLexer(), text)
    assert error_tokens(text, tokens) == EXPECTED_ERRORS.get(str(path.relative_to(ROOT)), [])


@pytest.mark.parametrize("path", IR_FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_ir_files_lex_losslessly_without_errors(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    tokens = check_lossless(CraneIRLexer(), text)
    assert error_tokens(text, tokens) == []


def test_expected_error_characters_are_the_compilers_errors() -> None:
    """The Error tokens allowed in invalid.crn are the characters that its annotations say
    the compiler rejects: each sits under an ``unexpected character`` expected-error."""
    for name, errors in EXPECTED_ERRORS.items():
        lines = (ROOT / name).read_text(encoding="utf-8").splitlines()
        for line, char in errors:
            annotations = [text for text in lines[line - 5 : line - 1] if "expected-error" in text]
            assert annotations and "unexpected character" in annotations[-1]
            assert repr(char)[1:-1] in annotations[-1] or char in annotations[-1]


def test_printed_ir_of_every_form_lexes_without_errors() -> None:
    """IR as crane-opt prints it (custom, generic, with locations) for a real network."""
    from crane.dialects import default_context
    from crane.frontend.translate import crn_to_module
    from crane.ir.printer import print_op

    path = ROOT / "examples/tiny_transformer.crn"
    module = crn_to_module(path.read_text(encoding="utf-8"), str(path), default_context())
    for generic in (False, True):
        text = print_op(module, generic=generic, debuginfo=True)
        tokens = check_lossless(CraneIRLexer(), text)
        assert error_tokens(text, tokens) == []
        kinds = {token for _, token, _ in tokens}
        assert {Name.Builtin, Name.Variable, Name.Function, Keyword.Type, Keyword.Pseudo} <= kinds


def test_bad_characters_are_errors_and_still_lossless() -> None:
    text = "network n {\n  y = relu(x) @ 2; z = 'q' \x0c\n}"
    tokens = check_lossless(CrnLexer(), text)
    assert [value for _, token, value in tokens if token in Error] == ["@", "'", "'", "\x0c"]
    ir = '%x = test.op ` : i32 $ "unterminated\n'
    tokens = check_lossless(CraneIRLexer(), ir)
    assert [value for _, token, value in tokens if token in Error] == ["`", "$", '"']


def test_empty_and_blank_texts() -> None:
    for lexer in (CrnLexer(), CraneIRLexer()):
        assert lex(lexer, "") == []
        assert check_lossless(lexer, " \n\t\r\n") == [(0, Whitespace, " \n\t\r\n")]


# ----- .crn token types

CRN_SAMPLE = """\
// RUN: crane-opt %s
import "lib/common.crn";   # shared blocks
let width = 16;

block residual(x, c, stride=1, padding=same) {
  a = conv_bn_relu(x, c, kernel=3);
  return relu(add(conv2d(a, out=c, kernel=3, dtype=bf16), x));
}

machine small extends edge {
  mesh 2 x 2;
  sram 512 KiB;
  noc_bandwidth 24 GB/s;
  dram_ports edges;
}

network tiny {
  machine small;
  input image: f32[batch, 3, 32, 32];
  input labels: int32[batch];
  half = width // 2;
  repeat i in 0..3 {
    h = residual(image, width);
  }
  output h;
  train {
    loss cross_entropy(h, labels);
    optimizer adam(lr=0.001, amsgrad=false);
    batch 8;
  }
}
"""


@pytest.mark.parametrize("value, nth, expected", [
    ("import", 0, Keyword.Namespace),
    ('"lib/common.crn"', 0, String.Double),
    ("# shared blocks", 0, Comment.Single),
    ("// RUN: crane-opt %s", 0, Comment.Single),
    ("let", 0, Keyword.Declaration),
    ("width", 0, Name.Constant),            # let-bound constant where defined
    ("block", 0, Keyword.Declaration),
    ("residual", 0, Name.Function),         # block definition
    ("residual", 1, Name.Function),         # block call
    ("x", 0, Name.Variable),                # parameter
    ("stride", 0, Name.Variable),           # parameter with a default
    ("same", 0, Name),                      # a bare word value
    ("a", 0, Name.Variable),                # assigned name
    ("conv_bn_relu", 0, Name.Function),     # a block from the library
    ("kernel", 0, Name.Attribute),          # keyword argument
    ("return", 0, Keyword),
    ("relu", 0, Name.Builtin),              # layer kinds
    ("add", 0, Name.Builtin),
    ("conv2d", 0, Name.Builtin),
    ("bf16", 0, Keyword.Type),              # dtype as a parameter value
    ("machine", 0, Keyword.Declaration),    # a machine definition
    ("small", 0, Name.Class),
    ("extends", 0, Keyword),
    ("edge", 0, Name.Class),
    ("mesh", 0, Keyword),
    ("x", 3, Operator.Word),                # mesh 2 x 2
    ("sram", 0, Name.Attribute),            # machine field
    ("512", 0, Number.Integer),
    ("KiB", 0, Keyword.Type),               # units
    ("GB", 0, Keyword.Type),
    ("/", 0, Operator),
    ("s", 0, Keyword.Type),
    ("dram_ports", 0, Keyword),
    ("edges", 0, Name.Constant),
    ("network", 0, Keyword.Declaration),
    ("tiny", 0, Name.Class),
    ("machine", 1, Keyword),                # a machine use
    ("small", 1, Name.Class),
    ("input", 0, Keyword),
    ("image", 0, Name.Variable),
    (":", 0, Punctuation),
    ("f32", 0, Keyword.Type),
    ("int32", 0, Keyword.Type),
    ("batch", 0, Name.Builtin),             # the predefined name in an expression
    ("//", 0, Operator),                    # floor division, not a comment
    ("repeat", 0, Keyword),
    ("i", 0, Name.Variable),
    ("in", 0, Keyword),
    ("..", 0, Operator),
    ("output", 0, Keyword),
    ("h", 1, Name.Variable),                # output h
    ("h", 2, Name),                         # a use
    ("train", 0, Keyword),
    ("loss", 0, Keyword),
    ("cross_entropy", 0, Name.Builtin),
    ("optimizer", 0, Keyword),
    ("adam", 0, Name.Builtin),
    ("lr", 0, Name.Attribute),
    ("0.001", 0, Number.Float),
    ("false", 0, Keyword.Constant),
    ("batch", 2, Keyword),                  # the batch statement
])
def test_crn_token_types(value: str, nth: int, expected: _TokenType) -> None:
    assert token_of(CrnLexer(), CRN_SAMPLE, value, nth) is expected


def test_crn_floor_division_keeps_the_rest_of_the_line() -> None:
    """``//`` after code is an operator and the words after it are still lexed."""
    assert pairs(CrnLexer(), "network n { h = w // 2 + k; }")[6:10] == [
        (Operator, "//"), (Number.Integer, "2"), (Operator, "+"), (Name, "k")]
    assert pairs(CrnLexer(), "  // expected-error@+1 {{x}}\nlet a = 1;")[0] == (
        Comment.Single, "// expected-error@+1 {{x}}")


def test_crn_keywords_are_contextual() -> None:
    """Words that are keywords in one place are names in another, as for the compiler."""
    text = "network n {\n  input input: f32[1];\n  output = relu(input);\n  loss = relu(output);\n}"
    tokens = pairs(CrnLexer(), text)
    assert tokens[3] == (Keyword, "input") and tokens[4] == (Name.Variable, "input")
    assert (Keyword, "output") in tokens  # a statement head wins, as in the compiler
    assert (Name.Variable, "loss") in tokens  # `loss` is a keyword only in train
    assert (Name, "output") in tokens


def test_crn_split_marker_resets_an_unclosed_body() -> None:
    text = "network n {\n  input x: f32[1];\n\n// -----\n\nnetwork m { machine edge; }\n"
    assert token_of(CrnLexer(), text, "network", 1) is Keyword.Declaration
    unsplit = text.replace("// -----", "")
    assert token_of(CrnLexer(), unsplit, "network", 1) is Name  # what the reset prevents


# ----- IR token types

IR_SAMPLE = """\
// A module.
builtin.module @net attributes {crane.machine = @edge} {
  graph.func @f(%x: tensor<1x?x8xf32>, %b: buffer<4x4xf16, sram>) -> tensor<1x8xf32> {
    %w = graph.weight {name = "w\\"1\\0A", flag, "quoted key" = -7 : i32} : () -> tensor<8xf32>
    %r, %s = "test.pair"(%x) ({
    ^bb0(%arg0: i64):
      "test.yield"(%arg0) : (i64) -> ()
    }) {kind = #graph.pool<max>, pad = array<i64: 1, -2>, eps = 1e-05, s = @a::@"b c"} : (tensor<1x?x8xf32>) -> (i1, index) loc(fused["m.crn":3:7, "n"])
    test.effect {t = true, u = unit, n = -inf} : () -> () loc(unknown)
    graph.return %r#1 : tensor<1x8xf32>
  }
}
"""


@pytest.mark.parametrize("value, nth, expected", [
    ("// A module.", 0, Comment.Single),
    ("builtin.module", 0, Name.Builtin),
    ("@net", 0, Name.Function),
    ("attributes", 0, Keyword),
    ("crane.machine", 0, Name.Attribute),       # a dotted key is a key, not an op
    ("@edge", 0, Name.Function),
    ("graph.func", 0, Name.Builtin),
    ("%x", 0, Name.Variable),
    ("tensor<1x?x8xf32>", 0, Keyword.Type),
    ("buffer<4x4xf16, sram>", 0, Keyword.Type),
    ("->", 0, Operator),
    ("%w", 0, Name.Variable),
    ("graph.weight", 0, Name.Builtin),
    ("name", 0, Name.Attribute),
    ('"w', 0, String.Double),
    ('\\"', 0, String.Escape),
    ("\\0A", 0, String.Escape),
    ("flag", 0, Name.Attribute),                # a unit attribute (bare key)
    ('"quoted key"', 0, Name.Attribute),
    ("-7", 0, Number.Integer),
    ("i32", 0, Keyword.Type),
    ("%r", 0, Name.Variable),
    ("%s", 0, Name.Variable),
    ('"test.pair"', 0, Name.Builtin),           # generic form: the op name is quoted
    ("^bb0", 0, Name.Label),
    ('"test.yield"', 0, Name.Builtin),
    ("#graph.pool", 0, Name.Constant),
    ("max", 0, Name.Constant),
    ("array", 0, Keyword.Type),
    ("i64", 0, Keyword.Type),
    ("-2", 0, Number.Integer),
    ("1e-05", 0, Number.Float),
    ("@a", 0, Name.Function),
    ("::", 0, Punctuation),
    ('@"b c"', 0, Name.Function),
    ("index", 0, Keyword.Type),
    ("loc", 0, Keyword.Pseudo),
    ("fused", 0, Keyword.Pseudo),
    ('"m.crn"', 0, String.Double),
    ("test.effect", 0, Name.Builtin),
    ("true", 0, Keyword.Constant),
    ("unit", 0, Keyword.Constant),
    ("inf", 0, Keyword.Constant),
    ("unknown", 0, Keyword.Pseudo),
    ("%r#1", 0, Name.Variable),
    ("=", 0, Operator),
    ("{", 0, Punctuation),
])
def test_ir_token_types(value: str, nth: int, expected: _TokenType) -> None:
    assert token_of(CraneIRLexer(), IR_SAMPLE, value, nth) is expected


def test_ir_sample_is_valid_ir_and_lossless() -> None:
    """The sample is real IR text: the compiler's own tokenizer reads all of it."""
    from crane.ir.lexer import tokenize

    assert [t.kind for t in tokenize(IR_SAMPLE) if t.kind == "bad"] == []
    check_lossless(CraneIRLexer(), IR_SAMPLE)


# ----- the vocabularies the lexers spell out match the compiler's


def test_vocabularies_match_the_compiler() -> None:
    from crane.dialects.layers.kinds import LAYER_KINDS as KINDS
    from crane.dialects.layers.values import DTYPE_BYTES
    from crane.dialects.optimizers import OPTIMIZERS as OPTIMIZER_TABLE
    from crane.ir.types import SCALAR_NAMES

    assert set(KINDS) == LAYER_KINDS
    assert set(OPTIMIZER_TABLE) == OPTIMIZERS
    assert set(DTYPE_BYTES) == DTYPES
    assert set(SCALAR_NAMES) == SCALAR_TYPES


def test_every_unit_of_the_language_is_a_unit_token() -> None:
    from crane.frontend.units import UNITS

    assert len(UNITS) >= 20
    for unit in UNITS:
        plain = pairs(CrnLexer(), f"machine m {{ sram 2 {unit}; }}")
        assert plain[4:7] == [(Number.Integer, "2"), (Keyword.Type, unit), (Punctuation, ";")]
        per = pairs(CrnLexer(), f"machine m {{ noc_bandwidth 0.5 {unit} / s; }}")
        assert per[4:9] == [(Number.Float, "0.5"), (Keyword.Type, unit), (Operator, "/"),
                             (Keyword.Type, "s"), (Punctuation, ";")]


# ----- Pygments integration


def test_html_output_uses_standard_classes() -> None:
    """Sphinx and MkDocs style tokens by CSS class; the classes are Pygments' standard ones."""
    html = highlight("network n { y = relu(x); }", CrnLexer(), HtmlFormatter())
    assert '<span class="kd">network</span>' in html
    assert '<span class="nb">relu</span>' in html
    html = highlight("%y = graph.relu %x : tensor<4xf32>", CraneIRLexer(), HtmlFormatter())
    assert '<span class="nv">%y</span>' in html and '<span class="kt">tensor&lt;4xf32&gt;</span>' in html


def test_guessing_by_content() -> None:
    assert CrnLexer.analyse_text((ROOT / "examples/resnet50.crn").read_text()) > 0
    assert CraneIRLexer.analyse_text((ROOT / "tests/filecheck/ir/attributes.mlir").read_text()) > 0
    assert CrnLexer.analyse_text("%x = graph.relu %y") == 0


def test_entry_points_register_the_lexers(tmp_path: Path) -> None:
    """With the entry points of pyproject.toml installed (here: a distribution made up in a
    temporary directory), Pygments finds both lexers by name and by file name."""
    dist = tmp_path / "crane_highlight_probe-0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: crane-highlight-probe\nVersion: 0\n")
    lines = "".join(f"{name} = {target}\n" for name, target in ENTRY_POINTS.items())
    (dist / "entry_points.txt").write_text(f"[pygments.lexers]\n{lines}")
    probe = (
        "from pygments.lexers import get_lexer_by_name, get_lexer_for_filename\n"
        "for name in ('crn', 'crane-crn', 'crane-ir', 'crane-mlir'):\n"
        "    print(type(get_lexer_by_name(name)).__name__)\n"
        "print(type(get_lexer_for_filename('m.crn')).__name__)\n"
        "print(type(get_lexer_for_filename('m.mlir')).__name__)\n"
    )
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(tmp_path)})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["CrnLexer", "CrnLexer", "CraneIRLexer", "CraneIRLexer",
                                   "CrnLexer", "CraneIRLexer"]


def test_pyproject_entry_points_when_present() -> None:
    """Once pyproject.toml declares the plugin table, it must be the one tested above."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    declared = project.get("entry-points", {}).get("pygments.lexers")
    if declared is None:
        pytest.skip("pyproject.toml has no pygments.lexers entry points yet")
    assert declared == ENTRY_POINTS
