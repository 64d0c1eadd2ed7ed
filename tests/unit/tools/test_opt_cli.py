"""The ``crane-opt`` command line: exit statuses, diagnostics checking, output files, stdin,
plugins, crash handling and robustness against garbage input."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from crane.tools.exit_codes import EXIT_DIAGNOSTICS, EXIT_INTERNAL, EXIT_OK, EXIT_USAGE

OptRunner = Any  # the ``opt`` fixture of conftest.py: (args, stdin=None) -> OptResult

GOOD = """test.func @f(%a: i32) -> i32 {
  %x = test.addi %a, %a : i32
  %y = test.addi %a, %a : i32
  test.return %x : i32
}
"""
BAD = """test.func @f(%a: i32) -> i32 {
  %x = test.addi %a, %undefined : i32
  test.return %x : i32
}
"""


@pytest.fixture
def good(tmp_path: Path) -> Path:
    path = tmp_path / "good.mlir"
    path.write_text(GOOD)
    return path


# ----- exit statuses


def test_success_exits_0(opt: OptRunner, good: Path) -> None:
    """A valid file with a valid pipeline exits 0 and prints the module on stdout only."""
    result = opt([str(good), "-p", "cse"])
    assert result.rc == EXIT_OK
    assert result.out.startswith("builtin.module {")
    assert result.out.count("test.addi") == 1
    assert result.err == ""


def test_input_error_exits_1_with_location(opt: OptRunner, tmp_path: Path) -> None:
    """A parse error exits 1 with file:line:col and a caret, and prints no IR."""
    path = tmp_path / "bad.mlir"
    path.write_text(BAD)
    result = opt([str(path)])
    assert result.rc == EXIT_DIAGNOSTICS
    assert f"{path}:2:22: error: use of undefined value '%undefined'" in result.err
    assert "^~~~~~~~~~" in result.err
    assert result.out == ""
    assert "Traceback" not in result.err


def test_unknown_flag_exits_2(opt: OptRunner, good: Path) -> None:
    """An unknown flag is a usage error."""
    result = opt([str(good), "--no-such-flag"])
    assert result.rc == EXIT_USAGE
    assert "unrecognized arguments: --no-such-flag" in result.err


def test_missing_file_exits_2(opt: OptRunner, tmp_path: Path) -> None:
    """A missing input file is a usage error with a one-line message."""
    result = opt([str(tmp_path / "nope.mlir")])
    assert result.rc == EXIT_USAGE
    assert result.err.strip() == f"crane-opt: error: cannot open input file '{tmp_path / 'nope.mlir'}': no such file"


def test_misspelled_pass_exits_2_with_located_suggestion(opt: OptRunner, good: Path) -> None:
    """``-p cse,canonicalise``: exit 2, a caret under the bad name, a 'did you mean'."""
    result = opt([str(good), "-p", "cse,canonicalise"])
    assert result.rc == EXIT_USAGE
    lines = result.err.splitlines()
    assert lines[0] == ("<pass-pipeline>:1:5: error: unknown pass or pipeline 'canonicalise'; "
                        "did you mean 'canonicalize'?")
    assert lines[1] == "cse,canonicalise"
    assert lines[2] == "    ^" + "~" * (len("canonicalise") - 1)
    assert "Traceback" not in result.err
    assert result.out == ""


@pytest.mark.parametrize("pipeline, message", [
    ("cse{foo=1}", "unknown option 'foo'"),
    ("builtin.module(test.funk(cse))", "did you mean 'test.func'"),
    ("cse,,dce", "error"),
    ("builtin.module(cse", "error"),
])
def test_bad_pipelines_exit_2(opt: OptRunner, good: Path, pipeline: str, message: str) -> None:
    """Malformed pipelines, unknown options and anchors are usage errors, never tracebacks."""
    result = opt([str(good), "-p", pipeline])
    assert result.rc == EXIT_USAGE
    assert message in result.err
    assert "<pass-pipeline>:1:" in result.err
    assert "Traceback" not in result.err


def test_version(good: Path) -> None:
    """``--version`` prints the version and exits 0 (checked in a real process)."""
    proc = subprocess.run([sys.executable, "-m", "crane.opt", "--version"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0
    assert proc.stdout.startswith("crane-opt ")


def test_stdin_dash(opt: OptRunner) -> None:
    """``-`` reads the input from stdin and names it <stdin> in diagnostics."""
    assert opt(["-"], stdin=GOOD).out.count("test.addi") == 2
    bad = opt(["-"], stdin=BAD)
    assert bad.rc == EXIT_DIAGNOSTICS
    assert bad.err.startswith("<stdin>:2:22: error:")


def test_subprocess_pipe_round_trip(good: Path) -> None:
    """A real ``crane-opt X | crane-opt -`` pipe, through the console entry point."""
    first = subprocess.run([sys.executable, "-m", "crane.opt", str(good)],
                           capture_output=True, text=True, timeout=60)
    second = subprocess.run([sys.executable, "-m", "crane.opt", "-"], input=first.stdout,
                            capture_output=True, text=True, timeout=60)
    assert first.returncode == second.returncode == 0
    assert second.stdout == first.stdout


# ----- --verify-diagnostics

EXPECTED_OK = """test.func @f(%a: i32) -> i32 {
  // expected-error@+1 {{use of undefined value '%undefined'}}
  %x = test.addi %a, %undefined : i32
  test.return %x : i32
}
"""


def _verify(opt: OptRunner, tmp_path: Path, text: str, *extra: str) -> tuple[int, str]:
    path = tmp_path / "expect.mlir"
    path.write_text(text)
    result = opt([str(path), "--verify-diagnostics", *extra])
    return result.rc, result.err


def test_verify_diagnostics_all_matched_exits_0(opt: OptRunner, tmp_path: Path) -> None:
    """Every expected diagnostic produced, nothing else: exit 0 and silence."""
    rc, err = _verify(opt, tmp_path, EXPECTED_OK)
    assert (rc, err) == (EXIT_OK, "")


def test_verify_diagnostics_missing_error_fails(opt: OptRunner, tmp_path: Path) -> None:
    """An expected error that is not produced (the input is valid) makes the run fail."""
    text = EXPECTED_OK.replace("%undefined", "%a")
    rc, err = _verify(opt, tmp_path, text.replace("'%a'", "'%undefined'"))
    assert rc == EXIT_DIAGNOSTICS
    assert "was not produced" in err


def test_verify_diagnostics_different_text_fails(opt: OptRunner, tmp_path: Path) -> None:
    """An error on the right line whose text differs counts as missing plus unexpected."""
    rc, err = _verify(opt, tmp_path, EXPECTED_OK.replace("use of undefined", "use of unknown"))
    assert rc == EXIT_DIAGNOSTICS
    assert "was not produced" in err
    assert "unexpected error: use of undefined value '%undefined'" in err


def test_verify_diagnostics_unexpected_error_fails(opt: OptRunner, tmp_path: Path) -> None:
    """An error nobody expected fails the run, even when no expectation is written at all."""
    rc, err = _verify(opt, tmp_path, BAD)
    assert rc == EXIT_DIAGNOSTICS
    assert "unexpected error: use of undefined value '%undefined'" in err


def test_verify_diagnostics_wrong_line_fails(opt: OptRunner, tmp_path: Path) -> None:
    """The right text on the wrong line (@+2 instead of @+1) is not a match."""
    rc, _ = _verify(opt, tmp_path, EXPECTED_OK.replace("@+1", "@+2"))
    assert rc == EXIT_DIAGNOSTICS


def test_verify_diagnostics_per_split_chunk(opt: OptRunner, tmp_path: Path) -> None:
    """With --split-input-file each chunk is checked; one bad chunk fails the whole run."""
    good_chunk = "// expected-error@+1 {{requires a positive 'value', got 0}}\n" \
                 "%p = test.positive {value = 0} : () -> i32\n"
    assert _verify(opt, tmp_path, good_chunk + "// -----\n" + good_chunk,
                   "--split-input-file")[0] == EXIT_OK
    rc, err = _verify(opt, tmp_path, good_chunk + "// -----\n" + good_chunk.replace("got 0", "got 1"),
                      "--split-input-file")
    assert rc == EXIT_DIAGNOSTICS
    assert ":4: error: expected error" in err  # absolute line of the second chunk's annotation


# ----- -o FILE


def test_output_file_written(opt: OptRunner, good: Path, tmp_path: Path) -> None:
    """``-o FILE`` writes the module there and nothing to stdout; no temp file is left."""
    target = tmp_path / "out.mlir"
    result = opt([str(good), "-o", str(target)])
    assert result.rc == EXIT_OK and result.out == ""
    assert target.read_text().startswith("builtin.module {")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["good.mlir", "out.mlir"]


def test_output_file_not_created_on_failure(opt: OptRunner, tmp_path: Path) -> None:
    """A failing run does not create the output file."""
    path = tmp_path / "bad.mlir"
    path.write_text(BAD)
    target = tmp_path / "out.mlir"
    assert opt([str(path), "-o", str(target)]).rc == EXIT_DIAGNOSTICS
    assert not target.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.mlir"]


def test_output_file_not_overwritten_on_failure(opt: OptRunner, tmp_path: Path) -> None:
    """A failing run leaves an existing output file byte for byte as it was."""
    path = tmp_path / "bad.mlir"
    path.write_text(BAD)
    target = tmp_path / "out.mlir"
    target.write_text("previous contents\n")
    assert opt([str(path), "-o", str(target)]).rc == EXIT_DIAGNOSTICS
    assert target.read_text() == "previous contents\n"


# ----- garbage input never produces a traceback


def test_random_bytes(opt: OptRunner, tmp_path: Path) -> None:
    """Undecodable bytes: a one-line error, no traceback."""
    path = tmp_path / "noise.mlir"
    path.write_bytes(bytes(range(256)) * 8)
    result = opt([str(path)])
    assert result.rc in (EXIT_DIAGNOSTICS, EXIT_USAGE)
    assert "Traceback" not in result.err
    assert len(result.err.strip().splitlines()) == 1


def test_binary_but_valid_utf8(opt: OptRunner) -> None:
    """Control characters and NULs that decode fine are reported as a located parse error."""
    result = opt(["-"], stdin="\x00\x01\x02 test.func \x7f @f ( \x1b")
    assert result.rc == EXIT_DIAGNOSTICS
    assert result.err.startswith("<stdin>:1:")
    assert "Traceback" not in result.err


@pytest.mark.parametrize("text", [
    "test.region ({\n" * 5000 + "}) : () -> ()\n" * 5000,
    '"test.effect"() {a = ' + "[" * 5000 + "]" * 5000 + "} : () -> ()\n",
    '"test.effect"() {a = ' + "{a = " * 5000 + "}" * 5000 + "} : () -> ()\n",
    '"test.effect"() {a = ' + "() -> (" * 5000 + "i32" + ")" * 5000 + "} : () -> ()\n",
    '"test.effect"() : () -> () loc(' + "fused[" * 5000 + "unknown" + "]" * 5000 + ")\n",
])
def test_huge_nesting_is_a_diagnostic(opt: OptRunner, text: str) -> None:
    """5000 levels of regions, arrays, dicts, function types or locations: a located error."""
    result = opt(["-"], stdin=text)
    assert result.rc == EXIT_DIAGNOSTICS
    assert "nested too deeply" in result.err
    assert "Traceback" not in result.err and "internal error" not in result.err


_TOKENS = ["test.func", "@f", "(", ")", "%a", ":", "i32", "->", "{", "}", "test.return",
           "test.addi", ",", "=", '"test.effect"', "[", "]", "<", ">", "tensor<", "x", "?",
           "f32", "loc(", "#test.kind<", "read", "array<i64:", "1", "-", "0.5", "^bb0",
           "unit", "@a::@b", "buffer<", "sram", "fused[", "test.region", "\n", '"', "\\",
           "builtin.module", "attributes", "// -----\n", "%0", "test.constant", "nan"]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.sampled_from(_TOKENS), max_size=40))
def test_token_soup_never_crashes(opt: OptRunner, tokens: list[str]) -> None:
    """Random sequences of IR tokens give exit 0 or 1, never an internal error."""
    text = " ".join(tokens)
    for extra in ([], ["--split-input-file", "--verify-diagnostics"],
                  ["--allow-unregistered-dialect", "-p", "canonicalize,cse,dce"]):
        result = opt(["-", *extra], stdin=text)
        assert result.rc in (EXIT_OK, EXIT_DIAGNOSTICS), (text, result.err)


# ----- plugins, --list-passes and crash reproducers

RAISING_PLUGIN = '''
from dataclasses import dataclass

from crane.passes.pass_base import Pass


@dataclass(frozen=True)
class Explode(Pass):
    """A pass with a bug."""

    name = "explode"
    summary = "raise an exception"

    def run(self, op, ctx):
        raise RuntimeError("boom")


def register(registrar):
    registrar.register_pass(Explode)
'''


@pytest.fixture
def raising_plugin(tmp_path: Path) -> Path:
    path = tmp_path / "raising_plugin.py"
    path.write_text(RAISING_PLUGIN)
    return path


def test_internal_error_writes_crash_reproducer(opt: OptRunner, good: Path, tmp_path: Path,
                                                raising_plugin: Path) -> None:
    """A pass that raises: exit 3, a one-line message (no traceback), and a reproducer
    holding the pipeline and the exact input."""
    repro = tmp_path / "repro.mlir"
    result = opt([str(good), "--load-pass-plugin", str(raising_plugin), "-p", "cse,explode",
                  "--crash-reproducer", str(repro)])
    assert result.rc == EXIT_INTERNAL
    assert "Traceback" not in result.err
    internal = [line for line in result.err.splitlines() if "internal error" in line]
    assert internal == ["crane-opt: internal error: RuntimeError: boom (this is a bug in Crane; "
                        "rerun with --debug for a traceback)"]
    text = repro.read_text()
    assert text.startswith("// crane-opt crash reproducer\n")
    assert "-p 'cse,explode'" in text.splitlines()[1]
    assert text.endswith(GOOD)
    assert result.out == ""


def test_internal_error_with_debug_raises(opt: OptRunner, good: Path, raising_plugin: Path) -> None:
    """``--debug`` lets the original exception through (for a traceback)."""
    with pytest.raises(RuntimeError, match="boom"):
        opt([str(good), "--load-pass-plugin", str(raising_plugin), "-p", "explode", "--debug"])


def test_internal_error_in_subprocess(good: Path, raising_plugin: Path) -> None:
    """The real process exits 3 and prints no traceback either."""
    proc = subprocess.run([sys.executable, "-m", "crane.opt", str(good), "--load-pass-plugin",
                           str(raising_plugin), "-p", "explode"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == EXIT_INTERNAL
    assert "Traceback" not in proc.stderr
    assert "internal error: RuntimeError: boom" in proc.stderr


def test_missing_plugin_file_exits_2(opt: OptRunner, good: Path, tmp_path: Path) -> None:
    """A plugin path that does not exist is a usage error."""
    result = opt([str(good), "--load-pass-plugin", str(tmp_path / "none.py")])
    assert result.rc == EXIT_USAGE
    assert "does not exist" in result.err


def test_broken_plugin_exits_2(opt: OptRunner, good: Path, tmp_path: Path) -> None:
    """A plugin that fails to import is reported in one line, not as a traceback."""
    path = tmp_path / "broken.py"
    path.write_text("import no_such_module_anywhere\n")
    result = opt([str(good), "--load-pass-plugin", str(path)])
    assert result.rc == EXIT_USAGE
    assert "failed to import" in result.err and "Traceback" not in result.err


def test_list_passes_shows_options(opt: OptRunner, tmp_path: Path) -> None:
    """``--list-passes`` lists in-tree passes, plugin passes with option types, defaults
    and docstrings, and the named pipelines."""
    plugin = tmp_path / "opts_plugin.py"
    plugin.write_text('''
from dataclasses import dataclass
from typing import Literal

from crane.passes.pass_base import Pass


@dataclass(frozen=True)
class Knobs(Pass):
    name = "knobs"
    summary = "a pass with options"

    rows: int = 2
    """Patches along H."""
    mode: Literal["fast", "exact"] = "exact"
    """How hard to try."""

    def run(self, op, ctx):
        pass


def register(registrar):
    registrar.register_pass(Knobs)
''')
    result = opt(["--list-passes", "--load-pass-plugin", str(plugin)])
    assert result.rc == EXIT_OK
    out = result.out
    for name in ("canonicalize", "cse", "dce", "strip-debuginfo", "print-op-stats", "knobs"):
        assert f"  {name} " in out
    assert "rows: int (default 2)" in out
    assert "Patches along H." in out
    assert "mode:" in out and "exact" in out and "How hard to try." in out
    assert "Named pipelines:" in out and "cleanup" in out and "= canonicalize,cse,dce" in out


def test_machine_retargets_any_input(opt: OptRunner, tmp_path: Path) -> None:
    model = tmp_path / "n.crn"
    model.write_text("network n {\n  machine edge;\n  input x: f32[1, 2];\n  y = relu(x);\n}\n")
    result = opt([str(model), "--machine", "cloud"])
    assert result.rc == EXIT_OK
    assert "crane.machine = @cloud" in result.out and 'sym_name = "cloud", rows = 12' in result.out
    assert 'sym_name = "edge"' not in result.out
    wrong = opt([str(model), "--machine", "cluod"])
    assert wrong.rc == EXIT_USAGE and "unknown machine 'cluod'" in wrong.err
