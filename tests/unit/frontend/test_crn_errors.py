"""Every kind of `.crn` mistake, each reported at the right line and column.

The texts are small, so the expected positions can be checked by eye: ``(line, col)`` count
from 1, and point at the token the caret sits under.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from crn_testing import errors_of, only_error

from crane.frontend.crn import load_crn, parse_crn
from crane.frontend.errors import CrnErrors

NO_NET = "network n {\n}\n"
"""An empty network on lines 1-2, for mistakes in machine definitions (which start on line 3)."""

NET = "network n {\n  input x: f32[1, 3, 8, 8];\n"
"""Two lines of prelude: mistakes in the cases below sit on line 3."""

CASES: list[tuple[str, str, tuple[int, int], str]] = [
    # (id, text, (line, col), message fragment)
    ("missing-semicolon", NET + "  y = relu(x)\n  z = relu(y);\n}\n", (3, 14), "expected ';' after 'relu(x)'"),
    ("kwarg-colon", NET + "  y = conv2d(x, kernel: 3);\n}\n", (3, 23), "name=value"),
    ("input-without-colon", "network n {\n  input x f32[1];\n}\n", (2, 11), "expected ':'"),
    ("input-without-shape", "network n {\n  input x: f32;\n}\n", (2, 15), "shape in brackets"),
    ("repeat-range", NET + "  repeat i in 4 { }\n}\n", (3, 17), "start..stop"),
    ("call-without-parens", NET + "  y = relu x;\n}\n", (3, 12), "parentheses"),
    ("missing-comma", NET + "  y = conv2d(x kernel=3);\n}\n", (3, 16), "expected ','"),
    ("unexpected-eof", NET, (2, 28), "unexpected end of file: a '}' is missing"),
    ("bad-character", NET + "  y = relu(x) @ 2;\n}\n", (3, 15), "unexpected character '@'"),
    ("single-quotes", NET + "  y = relu('x');\n}\n", (3, 12), "double quotes"),
    ("wrong-rank", "network n {\n  input x: f32[1, 8];\n  y = conv2d(x, out=4, kernel=3);\n}\n",
     (3, 7), "4-d NCHW input, got rank 2 [1, 8]"),
    ("channel-mismatch-add", NET + "  a = conv2d(x, out=4, kernel=1);\n  b = add(a, x);\n}\n",
     (4, 7), "dimension 1 is 4 vs 3 (channel mismatch)"),
    ("channel-mismatch-groups", NET + "  y = conv2d(x, out=4, kernel=1, groups=2);\n}\n",
     (3, 34), "input has 3 channels, not divisible by groups=2"),
    ("output-size-zero", NET + "  y = conv2d(x, out=4, kernel=9);\n}\n", (3, 24), "output height would be"),
    ("pool-too-big", NET + "  y = max_pool2d(x, kernel=9, stride=2);\n}\n", (3, 21), "smaller than the kernel extent 9"),
    ("undefined-name", "network n {\n  input image: f32[1, 3, 8, 8];\n  y = relu(imag);\n}\n",
     (3, 12), "undefined name 'imag'; did you mean 'image'?"),
    ("duplicate-name", NET + "  y = relu(x);\n  y = relu(y);\n}\n", (4, 3), "duplicate name 'y'"),
    ("duplicate-input", NET + "  input x: f32[1];\n}\n", (3, 9), "duplicate name 'x'"),
    ("unknown-kind", NET + "  y = conv2(x, out=3, kernel=1);\n}\n", (3, 7), "did you mean 'conv2d'?"),
    ("unknown-param", NET + "  y = conv2d(x, out=3, kernal=1);\n}\n", (3, 24), "did you mean 'kernel'? (valid: out, kernel"),
    ("param-twice", NET + "  y = conv2d(x, out=3, kernel=1, out=4);\n}\n", (3, 34), "given twice"),
    ("missing-param", NET + "  y = conv2d(x, out=3);\n}\n", (3, 7), "conv2d needs kernel="),
    ("wrong-param-type", NET + "  y = conv2d(x, out=3, kernel=1.5);\n}\n", (3, 31), "got float 1.5"),
    ("negative-stride", NET + "  y = conv2d(x, out=3, kernel=1, stride=-1);\n}\n", (3, 41), "must be positive"),
    ("bad-padding-word", NET + "  y = conv2d(x, out=3, kernel=3, padding=sam);\n}\n", (3, 42), "did you mean 'same'?"),
    ("number-as-tensor", NET + "  y = relu(3);\n}\n", (3, 12), "must be a tensor, got int 3"),
    ("tensor-in-arithmetic", NET + "  let k = x + 1;\n}\n", (3, 11), "expected a number here, got tensor 'x'"),
    ("division-by-zero", NET + "  let k = 4 / (2 - 2);\n}\n", (3, 13), "division by zero"),
    ("too-many-inputs", NET + "  y = relu(x, x);\n}\n", (3, 7), "relu takes 1 tensor input(s) (x), got 2"),
    ("positional-after-keyword", NET + "  y = concat(x, axis=1, x);\n}\n", (3, 25), "positional argument after a keyword"),
    ("matmul-inner", "network n {\n  input a: f32[2, 3];\n  y = matmul(a, a);\n}\n", (3, 7), "inner dimensions differ"),
    ("reshape-count", NET + "  y = reshape(x, shape=[5, -1]);\n}\n", (3, 18), "changes the element count"),
    ("transpose-perm", NET + "  y = transpose(x, perm=[0, 1, 1, 2]);\n}\n", (3, 20), "not a permutation"),
    ("heads-divide", "network n {\n  input s: f32[1, 4, 10];\n  y = attention(s, heads=3);\n}\n", (3, 20), "not divisible by heads=3"),
    ("embedding-float-ids", NET + "  y = embedding(x, vocab=10, dim=4);\n}\n", (3, 17), "must have an integer dtype"),
    ("labels-shape", "network n {\n  input l: f32[2, 5];\n  input t: int32[3];\n  y = cross_entropy(l, t);\n}\n",
     (4, 7), "labels [3] must have the logits' shape"),
    ("unknown-dtype", "network n {\n  input x: f33[1];\n}\n", (2, 12), "unknown dtype 'f33'; did you mean 'f32'?"),
    ("nonpositive-dim", "network n {\n  input x: f32[1, 0];\n}\n", (2, 19), "must be positive"),
    ("float-dim", "network n {\n  input x: f32[1, 2.5];\n}\n", (2, 19), "must be an integer"),
    ("recursion", "block a(x) {\n  return b(x);\n}\nblock b(x) {\n  return a(x);\n}\n"
     "network n {\n  input x: f32[1];\n  y = a(x);\n}\n", (5, 10), "calls itself (a -> b -> a)"),
    ("block-missing-param", "block b(x, c) {\n  return relu(x);\n}\nnetwork n {\n  input x: f32[1];\n  y = b(x);\n}\n",
     (6, 7), "block 'b' needs parameter 'c'"),
    ("block-unknown-kwarg", "block b(x, width=1) {\n  return relu(x);\n}\nnetwork n {\n  input x: f32[1];\n"
     "  y = b(x, widht=2);\n}\n", (6, 12), "did you mean 'width'?"),
    ("block-without-return", "block b(x) {\n  y = relu(x);\n}\nnetwork n {\n}\n", (1, 7), "has no return statement"),
    ("input-in-block", "block b(x) {\n  input y: f32[1];\n  return x;\n}\nnetwork n {\n  input x: f32[1];\n"
     "  z = b(x);\n}\n", (2, 9), "'input' belongs in a network"),
    ("return-in-network", NET + "  return x;\n}\n", (3, 3), "'return' belongs in a block"),
    ("repeat-too-long", NET + "  repeat i in 0..1000000000 { }\n}\n", (3, 18), "at most 100000"),
    ("undefined-output", NET + "  output y;\n}\n", (3, 10), "undefined name 'y'"),
    ("unit-mismatch", NO_NET + "machine m extends edge {\n  noc_bandwidth 16 GB;\n}\n", (4, 20),
     "noc_bandwidth wants a bandwidth (bytes per second), e.g. `24 GB/s`, but `16 GB` is a size (bytes)"),
    ("unit-missing", NO_NET + "machine m extends edge {\n  sram 16;\n}\n", (4, 8), "sram needs a unit"),
    ("unit-unknown", NO_NET + "machine m extends edge {\n  sram 16 Mb;\n}\n", (4, 11), "unknown unit 'Mb'; did you mean 'MB'?"),
    ("unit-energy", NO_NET + "machine m extends edge {\n  mac_energy 0.02 pJ/bit;\n}\n", (4, 19), "wants an energy"),
    ("machine-field-unknown", NO_NET + "machine m extends edge {\n  sarm 1 MiB;\n}\n", (4, 3), "did you mean 'sram'?"),
    ("machine-field-twice", NO_NET + "machine m extends edge {\n  sram 1 MiB;\n  sram 2 MiB;\n}\n", (5, 3), "set twice"),
    ("machine-missing-fields", NO_NET + "machine m {\n  mesh 2 x 2;\n}\n", (3, 9), "needs macs, sram, frequency"),
    ("machine-base-unknown", NO_NET + "machine m extends egde {\n}\n", (3, 19), "unknown machine 'egde'; did you mean 'edge'?"),
    ("machine-port-outside", NO_NET + "machine m extends edge {\n  dram_ports [4, 0];\n}\n", (4, 15), "outside the 4 x 4 mesh"),
    ("machine-use-unknown", "network n {\n  machine egde;\n}\n", (2, 11), "did you mean 'edge'?"),
    ("mesh-syntax", NO_NET + "machine m extends edge {\n  mesh 4, 4;\n}\n", (4, 9), "mesh rows x cols"),
    ("import-missing", "import \"nope.crn\";\nnetwork n {\n}\n", (1, 8), "cannot import \"nope.crn\": no such file"),
    ("optimizer-unknown", NET + "  train {\n    loss mse(x, x);\n    optimizer adamw(lr=0.1);\n  }\n}\n",
     (5, 15), "unknown optimizer 'adamw'; did you mean 'adam'?"),
    ("optimizer-missing-lr", NET + "  train {\n    loss mse(x, x);\n    optimizer sgd();\n  }\n}\n", (5, 15), "sgd needs lr="),
    ("optimizer-lr-zero", NET + "  train {\n    loss mse(x, x);\n    optimizer sgd(lr=0);\n  }\n}\n", (5, 22),
     "hyper-parameter 'lr' must be a number above 0 and at most 1000000, got 0"),
    ("optimizer-beta-one", NET + "  train {\n    loss mse(x, x);\n    optimizer adam(beta2=1.0);\n  }\n}\n",
     (5, 26), "hyper-parameter 'beta2' must be a number at least 0 and below 1, got 1"),
    ("optimizer-momentum-negative", NET + "  train {\n    loss mse(x, x);\n    optimizer momentum(lr=1, momentum=-0.5);\n"
     "  }\n}\n", (5, 39), "hyper-parameter 'momentum' must be a number from 0 to 1, got -0.5"),
    ("loss-not-a-loss", NET + "  train {\n    loss relu(x);\n    optimizer sgd(lr=0.1);\n  }\n}\n", (4, 10),
     "the loss must come from a loss layer"),
    ("batch-twice", "network n {\n  batch 2;\n  train {\n    loss mse(x, x);\n    optimizer sgd(lr=1);\n"
     "    batch 4;\n  }\n  input x: f32[batch];\n}\n", (6, 5), "the batch size is set twice"),
    ("no-network", "let k = 3;\n", (1, 1), "defines no network"),
]


@pytest.mark.parametrize(("text", "where", "fragment"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_error_is_located_and_specific(text: str, where: tuple[int, int], fragment: str) -> None:
    error = only_error(text)
    assert (error.loc.line, error.loc.col) == where, error.render()
    assert fragment in error.message, error.render()


def test_there_are_many_distinct_mistakes() -> None:
    assert len({c[0] for c in CASES}) >= 30


def test_render_shows_the_line_and_a_caret_under_the_token() -> None:
    error = only_error("network n {\n  input image: f32[1, 3, 8, 8];\n  y = relu(imag);\n}\n")
    assert error.render().splitlines() == [
        "t.crn:3:12: error: undefined name 'imag'; did you mean 'image'?",
        "    y = relu(imag);",
        "             ^~~~",
    ]


def test_duplicate_name_notes_the_first_definition() -> None:
    error = only_error(NET + "  y = relu(x);\n  y = relu(y);\n}\n")
    (note,) = error.notes
    assert note.loc is not None and (note.loc.line, note.loc.col) == (3, 3)
    assert "t.crn:3:3: note: 'y' was first defined here" in error.render()


def test_independent_mistakes_are_all_reported_without_cascades() -> None:
    text = NET + "  y = relu(z);\n  w = relu(y);\n  q = conv2(x);\n  r = conv2d(x, out=3);\n}\n"
    errors = errors_of(text)
    assert [(e.loc.line, e.loc.col) for e in errors] == [(3, 12), (5, 7), (6, 7)]


def test_an_error_inside_a_block_points_into_the_block_once() -> None:
    text = ("block b(x) {\n  return conv2d(x, out=4, kernel=3, stride=0);\n}\n"
            "network n {\n  input x: f32[1, 3, 8, 8];\n  a = b(x);\n  c = b(x);\n}\n")
    error = only_error(text)
    assert (error.loc.line, error.loc.col) == (2, 44)


def test_import_cycle_is_reported(tmp_path: Path) -> None:
    (tmp_path / "a.crn").write_text('import "b.crn";\nnetwork n {\n}\n')
    (tmp_path / "b.crn").write_text('import "a.crn";\n')
    with pytest.raises(CrnErrors) as info:
        load_crn(tmp_path / "a.crn")
    (error,) = info.value.errors
    assert error.message == "import cycle: a.crn -> b.crn -> a.crn"
    assert (error.loc.file, error.loc.line, error.loc.col) == (str(tmp_path / "b.crn"), 1, 8)


def test_error_in_an_imported_file_names_that_file(tmp_path: Path) -> None:
    (tmp_path / "lib.crn").write_text("block b(x) {\n  return relu(x, x);\n}\n")
    (tmp_path / "m.crn").write_text('import "lib.crn";\nnetwork n {\n  input x: f32[1];\n  y = b(x);\n}\n')
    with pytest.raises(CrnErrors) as info:
        load_crn(tmp_path / "m.crn")
    (error,) = info.value.errors
    assert (error.loc.file, error.loc.line) == (str(tmp_path / "lib.crn"), 2)


def test_runaway_nested_repeat_stops_with_a_message() -> None:
    error = only_error(NET + "  repeat i in 0..100000 {\n    repeat j in 0..100000 { }\n  }\n}\n")
    assert "the model is too large" in error.message


def test_unreadable_file_is_a_crn_error(tmp_path: Path) -> None:
    with pytest.raises(CrnErrors) as info:
        load_crn(tmp_path / "missing.crn")
    assert "cannot read" in info.value.errors[0].message


def test_parse_errors_never_leak_lark_exceptions() -> None:
    with pytest.raises(CrnErrors):
        parse_crn("network { }", "t.crn")
