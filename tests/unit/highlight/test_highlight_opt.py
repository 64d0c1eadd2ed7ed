"""``crane-opt --color``: coloured IR on stdout and coloured diagnostics on stderr exactly
when asked for (or, with ``auto``, on a terminal), and never anything but added escapes."""

from __future__ import annotations

import os
import pty
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from crane.highlight import ANSI_ESCAPE, strip_ansi
from crane.tools.exit_codes import EXIT_DIAGNOSTICS, EXIT_OK, EXIT_USAGE
from crane.tools.opt import main

ROOT = Path(__file__).resolve().parents[3]
GOOD = """test.func @f(%a: i32) -> i32 {
  %x = test.addi %a, %a : i32
  test.return %x : i32
}
"""
BAD = """test.func @f(%a: i32) -> i32 {
  %x = test.addi %a, %undefined : i32
  test.return %x : i32
}
"""
Run = Callable[[list[str]], tuple[int, str, str]]


@pytest.fixture
def run(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> Run:
    """``crane-opt`` in-process (stdout and stderr are pipes, not terminals)."""
    monkeypatch.delenv("NO_COLOR", raising=False)

    def call(args: list[str]) -> tuple[int, str, str]:
        capsys.readouterr()
        rc = main(args)
        out, err = capsys.readouterr()
        return rc, out, err

    return call


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    good, bad = tmp_path / "good.mlir", tmp_path / "bad.mlir"
    good.write_text(GOOD)
    bad.write_text(BAD)
    return {"good": good, "bad": bad}


def test_always_colours_the_ir_and_stripping_gives_the_plain_output(run: Run) -> None:
    model = str(ROOT / "examples/tiny_resnet.crn")
    rc, colored, _ = run([model, "--color=always"])
    rc_plain, plain, _ = run([model, "--color=never"])
    assert rc == rc_plain == EXIT_OK
    assert len(ANSI_ESCAPE.findall(colored)) > 500
    assert "\x1b[" not in plain
    assert strip_ansi(colored) == plain
    assert plain.startswith("builtin.module @tiny_resnet")


def test_auto_on_a_pipe_and_the_default_are_plain(run: Run, files: dict[str, Path]) -> None:
    outputs = [run([str(files["good"]), *mode]) for mode in ([], ["--color=auto"], ["--color=never"])]
    assert len({out for _, out, _ in outputs}) == 1
    assert all("\x1b" not in out and "test.addi" in out for _, out, _ in outputs)


def test_generic_and_split_output_colour_losslessly(run: Run, files: dict[str, Path], tmp_path: Path) -> None:
    split = tmp_path / "split.mlir"
    split.write_text(GOOD + "\n// -----\n\n" + GOOD)
    for args in ([str(files["good"]), "--print-op-generic", "--print-debuginfo"],
                 [str(split), "--split-input-file"]):
        _, colored, _ = run([*args, "--color=always"])
        _, plain, _ = run(args)
        assert "\x1b[" in colored
        assert strip_ansi(colored) == plain


def test_always_colours_diagnostics(run: Run, files: dict[str, Path]) -> None:
    rc, out, err = run([str(files["bad"]), "--color=always"])
    _, _, plain = run([str(files["bad"])])
    assert rc == EXIT_DIAGNOSTICS and out == ""
    assert f"\x1b[1m{files['bad']}:2:22: \x1b[0m\x1b[1;31merror:\x1b[0m" in err
    assert "\x1b[1;32m                     ^~~~~~~~~~\x1b[0m" in err
    assert strip_ansi(err) == plain
    assert "\x1b" not in plain


def test_usage_and_pipeline_errors_are_coloured_too(run: Run, files: dict[str, Path]) -> None:
    rc, _, err = run([str(files["good"]) + ".missing", "--color=always"])
    assert rc == EXIT_USAGE
    assert err.startswith("\x1b[1mcrane-opt: \x1b[0m\x1b[1;31merror:")
    rc, _, err = run([str(files["good"]), "-p", "cse,canonicalise", "--color=always"])
    assert rc == EXIT_USAGE
    assert "\x1b[1m<pass-pipeline>:1:5: \x1b[0m\x1b[1;31merror:" in err
    assert strip_ansi(err).splitlines()[1:] == ["cse,canonicalise", "    ^~~~~~~~~~~~"]


def test_output_files_are_never_coloured(run: Run, files: dict[str, Path], tmp_path: Path) -> None:
    target = tmp_path / "out.mlir"
    rc, out, _ = run([str(files["good"]), "--color=always", "-o", str(target)])
    assert rc == EXIT_OK and out == ""
    assert "\x1b" not in target.read_text()
    assert "test.addi" in target.read_text()


def test_verify_diagnostics_reports_stay_plain(run: Run, files: dict[str, Path]) -> None:
    rc, _, err = run([str(files["bad"]), "--verify-diagnostics", "--color=always"])
    assert rc == EXIT_DIAGNOSTICS
    assert "error: unexpected error: use of undefined value '%undefined'" in err
    assert "\x1b" not in err


def test_bad_color_value_is_a_usage_error(run: Run, files: dict[str, Path]) -> None:
    rc, _, err = run([str(files["good"]), "--color=sometimes"])
    assert rc == EXIT_USAGE
    assert "invalid choice: 'sometimes'" in err


# ----- real processes: terminals and lazy imports


def run_on_terminal(args: list[str], env: dict[str, str]) -> tuple[int, str]:
    """Run crane-opt with stdout and stderr on a pseudo-terminal; what it wrote there."""
    leader, follower = pty.openpty()
    with subprocess.Popen([sys.executable, "-m", "crane.opt", *args], stdout=follower,
                          stderr=follower, stdin=subprocess.DEVNULL, env=env) as proc:
        os.close(follower)
        chunks = []
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # EIO: the process closed the terminal
                break
            if not chunk:
                break
            chunks.append(chunk)
        rc = proc.wait(timeout=60)
    os.close(leader)
    return rc, b"".join(chunks).decode().replace("\r\n", "\n")


def clean_env(**extra: str) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if key not in ("NO_COLOR", "TERM")}
    return {**env, **extra}


def test_auto_colours_on_a_terminal(files: dict[str, Path]) -> None:
    rc, shown = run_on_terminal([str(files["good"])], clean_env())
    assert rc == EXIT_OK
    assert "\x1b[01m\x1b[94mtest.addi" in shown
    assert strip_ansi(shown) == main_output(files["good"])


def test_auto_colours_diagnostics_on_a_terminal(files: dict[str, Path]) -> None:
    rc, shown = run_on_terminal([str(files["bad"])], clean_env())
    assert rc == EXIT_DIAGNOSTICS
    assert "\x1b[1;31merror:" in shown and "\x1b[1;32m" in shown


@pytest.mark.parametrize("args, env", [
    ([], {"NO_COLOR": "1"}),
    ([], {"TERM": "dumb"}),
    (["--color=never"], {}),
])
def test_no_colour_on_a_terminal_when_told(files: dict[str, Path], args: list[str], env: dict[str, str]) -> None:
    rc, shown = run_on_terminal([str(files["bad"]), *args], clean_env(**env))
    assert rc == EXIT_DIAGNOSTICS
    assert "error: use of undefined value" in shown
    assert "\x1b" not in shown


def main_output(path: Path) -> str:
    proc = subprocess.run([sys.executable, "-m", "crane.opt", str(path)], capture_output=True,
                          text=True, timeout=60)
    return proc.stdout


def test_pygments_is_imported_only_to_colour(files: dict[str, Path]) -> None:
    """Without colour (a pipe, ``auto``) a run never imports Pygments; with it, it does."""
    code = ("import sys\nfrom crane.tools.opt import main\nrc = main(sys.argv[1:])\n"
            "print('pygments:', 'pygments' in sys.modules, file=sys.stderr)\n")
    for mode, imported in (("auto", False), ("never", False), ("always", True)):
        proc = subprocess.run([sys.executable, "-c", code, str(files["good"]), f"--color={mode}"],
                              capture_output=True, text=True, timeout=60, env=clean_env())
        assert proc.returncode == 0, proc.stderr
        assert proc.stderr.strip() == f"pygments: {imported}"
