"""Run the lit golden tests under ``tests/filecheck`` from pytest, so plain ``pytest`` covers them."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

FILECHECK_DIR = Path(__file__).parent / "filecheck"


def _lit_command() -> list[str]:
    script = shutil.which("lit")
    if script is not None:
        return [script]
    return [sys.executable, "-c", "import sys; from lit.main import main; sys.exit(main())"]


def test_lit_suite(tmp_path: Path) -> None:
    """Every .mlir/.crn test under tests/filecheck passes (lit exit status 0)."""
    pytest.importorskip("lit")
    pytest.importorskip("filecheck")
    env = dict(os.environ, CRANE_LIT_OUTPUT=str(tmp_path / "Output"))
    jobs = str(max(2, os.cpu_count() or 2))
    proc = subprocess.run(
        [*_lit_command(), "-q", f"-j{jobs}", "--no-progress-bar", str(FILECHECK_DIR)],
        capture_output=True, text=True, env=env, timeout=900,
    )
    assert proc.returncode == 0, f"lit failed:\n{proc.stdout}\n{proc.stderr}"
