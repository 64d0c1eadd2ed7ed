"""Terminal colour: ``colorize`` and ``color_diagnostics`` only add escapes, ``use_color``
implements ``--color=auto|always|never``, and the package imports Pygments lazily."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import pytest

from crane.highlight import ANSI_ESCAPE, color_diagnostics, colorize, strip_ansi, use_color

ROOT = Path(__file__).resolve().parents[3]

BOLD_RED, BOLD_GREEN = "\x1b[1;31m", "\x1b[1;32m"


class FakeTerminal(io.StringIO):
    def __init__(self, tty: bool) -> None:
        super().__init__()
        self.tty = tty

    def isatty(self) -> bool:
        return self.tty


# ----- colorize


@pytest.mark.parametrize("path, language", [
    ("examples/resnet50.crn", "crn"),
    ("examples/machines/edge.crn", "crn"),
    ("tests/filecheck/dsl/invalid.crn", "crn"),
    ("tests/filecheck/ir/attributes.mlir", "ir"),
    ("tests/filecheck/tile_sim/pipeline.mlir", "ir"),
    ("tests/filecheck/ir/invalid_parse.mlir", "ir"),
])
def test_colorize_adds_only_escapes(path: str, language: str) -> None:
    text = (ROOT / path).read_text(encoding="utf-8")
    colored = colorize(text, language)  # type: ignore[arg-type]
    assert colored != text
    assert len(ANSI_ESCAPE.findall(colored)) > 50
    assert strip_ansi(colored) == text


def test_colorize_keeps_awkward_text_exactly() -> None:
    """CRLF, tabs, form feeds, no final newline, blank lines: stripping gives them back."""
    text = '%x = test.constant 1 : i32\r\n\t\x0c\n\n%y = "test.op"(%x) : (i32) -> i32  // end'
    assert strip_ansi(colorize(text, "ir")) == text
    crn = "network n {\r\n\tinput x: f32[1];\x0c\n  y = relu(x) @ 2;}"
    assert strip_ansi(colorize(crn, "crn")) == crn
    assert colorize("", "ir") == ""


def test_colorize_colours_the_tokens_that_matter() -> None:
    """An op name is bold blue, a value cyan, a type green (bright on a dark background)."""
    colored = colorize("%y = graph.relu %x : tensor<4xf32>\n", "ir", environ={})
    assert "\x1b[01m\x1b[94mgraph.relu" in colored
    assert "\x1b[96m%y" in colored
    assert "\x1b[92mtensor<4xf32>" in colored
    light = colorize("%y = graph.relu %x : tensor<4xf32>\n", "ir", environ={"COLORFGBG": "0;15"})
    assert "\x1b[01m\x1b[34mgraph.relu" in light
    assert "\x1b[36m%y" in light


def test_whitespace_gets_no_escapes() -> None:
    """Indentation stays bare, so coloured output is not bloated by escapes around blanks."""
    colored = colorize("    %y = graph.relu %x\n", "ir")
    assert colored.startswith("    \x1b[")


# ----- color_diagnostics

DIAGNOSTIC = """\
model.crn:3:14: error: expected ';' after 'relu(x)'
  y = relu(x)
             ^
model.crn:1:1: note: error: this source line looks like a header
error: this source line too
^~~~
crane-opt: error: cannot open input file 'x.mlir': no such file
<stdin>:2:5: warning: unused value
  remark: x
    ^~"""


def test_color_diagnostics() -> None:
    colored = color_diagnostics(DIAGNOSTIC)
    lines = colored.split("\n")
    assert strip_ansi(colored) == DIAGNOSTIC
    assert lines[0] == ("\x1b[1mmodel.crn:3:14: \x1b[0m" + BOLD_RED + "error:\x1b[0m "
                        "\x1b[1mexpected ';' after 'relu(x)'\x1b[0m")
    assert lines[1] == "  y = relu(x)"  # the source line is left alone
    assert lines[2] == BOLD_GREEN + "             ^\x1b[0m"
    assert "\x1b[1;36mnote:" in lines[3]
    assert lines[4] == "error: this source line too"  # a source line, though it looks like a header
    assert lines[5] == BOLD_GREEN + "^~~~\x1b[0m"
    assert lines[6].startswith("\x1b[1mcrane-opt: \x1b[0m" + BOLD_RED + "error:")
    assert "\x1b[1;35mwarning:" in lines[7]
    assert lines[8] == "  remark: x"
    assert lines[9] == BOLD_GREEN + "    ^~\x1b[0m"


def test_color_diagnostics_leaves_other_text_alone() -> None:
    text = "// -----// IR Dump After cse //----- //\nbuiltin.module {\n}"
    assert color_diagnostics(text) == text


# ----- use_color


@pytest.mark.parametrize("mode, tty, environ, expected", [
    ("always", False, {}, True),
    ("always", False, {"NO_COLOR": "1"}, True),
    ("never", True, {}, False),
    ("auto", True, {}, True),
    ("auto", False, {}, False),
    ("auto", True, {"NO_COLOR": "1"}, False),
    ("auto", True, {"NO_COLOR": ""}, True),  # https://no-color.org: set *and non-empty*
    ("auto", True, {"TERM": "dumb"}, False),
    ("auto", True, {"TERM": "xterm-256color"}, True),
])
def test_use_color(mode: str, tty: bool, environ: dict[str, str], expected: bool) -> None:
    assert use_color(mode, FakeTerminal(tty), environ) is expected


def test_use_color_on_odd_streams() -> None:
    closed = io.StringIO()
    closed.close()  # isatty() raises ValueError

    class NoIsatty:
        pass

    assert use_color("auto", closed, {}) is False
    assert use_color("auto", NoIsatty(), {}) is False  # type: ignore[arg-type]


# ----- lazy import


def test_importing_the_package_does_not_import_pygments() -> None:
    code = ("import sys, crane.highlight, crane.tools.opt_run\n"
            "print(sorted(m for m in sys.modules if m.startswith('pygments')))\n"
            "crane.highlight.colorize('%x = a.b', 'ir')\n"
            "print('pygments' in sys.modules)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split("\n")[:2] == ["[]", "True"]
