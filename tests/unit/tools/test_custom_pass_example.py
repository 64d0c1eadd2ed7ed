"""The worked plugin example in examples/custom_pass/ works through both plugin routes:
``--load-pass-plugin FILE.py`` and a ``crane.plugins`` entry point."""

from __future__ import annotations

import importlib.metadata
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

EXAMPLE = Path(__file__).parents[3] / "examples" / "custom_pass"
PLUGIN = EXAMPLE / "plugin.py"
INPUT = EXAMPLE / "input.mlir"


def test_load_pass_plugin_runs_the_pass(opt: Any) -> None:
    """The plugin's dialect parses and its pass expands small factors only."""
    result = opt(["--load-pass-plugin", str(PLUGIN), str(INPUT), "-p",
                  "demo-expand-scale{max-factor=4}"])
    assert result.rc == 0, result.err
    assert result.out.count("test.addi") == 2
    assert "demo.scale %1 {factor = 10} : i32" in result.out


def test_option_changes_the_result(opt: Any) -> None:
    """``max-factor`` is honoured: with 10 both ops are expanded (2 + 9 additions)."""
    result = opt(["--load-pass-plugin", str(PLUGIN), str(INPUT), "-p",
                  "demo-expand-scale{max-factor=10}"])
    assert result.rc == 0, result.err
    assert "demo.scale" not in result.out
    assert result.out.count("test.addi") == 11


def test_bad_option_value_is_reported_by_the_pass(opt: Any) -> None:
    """The pass reports an invalid option value as a diagnostic (exit 1), not a traceback."""
    result = opt(["--load-pass-plugin", str(PLUGIN), str(INPUT), "-p",
                  "demo-expand-scale{max-factor=0}"])
    assert result.rc == 1
    assert "max-factor must be >= 1, got 0" in result.err


def test_plugin_op_verifier(opt: Any) -> None:
    """The plugin op's verifier runs, with the op's location."""
    result = opt(["--load-pass-plugin", str(PLUGIN), "-"],
                 stdin="%x = test.constant 1 : i32\n%y = demo.scale %x {factor = 0} : i32\n")
    assert result.rc == 1
    assert "<stdin>:2:6: error: 'demo.scale' op requires 'factor' >= 1, got 0" in result.err


def test_list_passes_shows_plugin_option(opt: Any) -> None:
    """The option's attribute docstring is the --list-passes help text."""
    result = opt(["--load-pass-plugin", str(PLUGIN), "--list-passes"])
    assert "demo-expand-scale" in result.out
    assert "max-factor: int (default 4)" in result.out
    assert "Largest factor to expand; bigger ones are left alone." in result.out


def test_entry_point_route(opt: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Registered as a ``crane.plugins`` entry point (as an installed package would be),
    the pass is found without --load-pass-plugin."""
    monkeypatch.syspath_prepend(str(EXAMPLE))
    entry = importlib.metadata.EntryPoint(name="demo", value="plugin:register",
                                          group="crane.plugins")
    real = importlib.metadata.entry_points

    def fake_entry_points(**kwargs: Any) -> Any:
        if kwargs.get("group") == "crane.plugins":
            return [entry]
        return real(**kwargs)

    monkeypatch.setattr(importlib.metadata, "entry_points", fake_entry_points)
    listed = opt(["--list-passes"])
    assert "demo-expand-scale" in listed.out
    ran = opt([str(INPUT), "-p", "demo-expand-scale"])
    assert ran.rc == 0, ran.err
    assert ran.out.count("test.addi") == 2


def test_readme_command_in_a_subprocess() -> None:
    """The command shown in the README works as a real process."""
    proc = subprocess.run([sys.executable, "-m", "crane.opt", "--load-pass-plugin", str(PLUGIN),
                           str(INPUT), "-p", "demo-expand-scale{max-factor=4}"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "test.addi" in proc.stdout


def test_entry_point_dialect_without_plugin_pass(opt: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """An input using an entry-point plugin's ops parses with no pipeline at all."""
    monkeypatch.syspath_prepend(str(EXAMPLE))
    entry = importlib.metadata.EntryPoint(name="demo", value="plugin:register",
                                          group="crane.plugins")
    real = importlib.metadata.entry_points

    def fake_entry_points(**kwargs: Any) -> Any:
        return [entry] if kwargs.get("group") == "crane.plugins" else real(**kwargs)

    monkeypatch.setattr(importlib.metadata, "entry_points", fake_entry_points)
    result = opt([str(INPUT)])
    assert result.rc == 0, result.err
    assert "demo.scale" in result.out
