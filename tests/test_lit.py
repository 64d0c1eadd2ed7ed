"""The lit golden tests under ``tests/filecheck``, one pytest item per file.

lit runs once per session, over exactly the files the session selected and with a worker per
core (as ``lit -j`` would), writing its JSON results; each item then asserts its own file's
result and shows lit's output for it. lit and filecheck are test dependencies (``.[dev]``), so
nothing here is ever skipped; lit runs under this interpreter, so its RUN lines do too.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

FILECHECK_DIR = Path(__file__).parent / "filecheck"
SUFFIXES = (".mlir", ".crn")

LIT_FILES = sorted(
    str(path.relative_to(FILECHECK_DIR)) for path in FILECHECK_DIR.rglob("*")
    if path.suffix in SUFFIXES and "Output" not in path.relative_to(FILECHECK_DIR).parts)
"""Every lit test, relative to ``tests/filecheck`` (what lit names them after ``crane ::``)."""

LIT = [sys.executable, "-c", "import sys; from lit.main import main; sys.exit(main())"]


def _selected(session: pytest.Session) -> list[str]:
    return [item.callspec.params["lit_file"] for item in session.items
            if isinstance(item, pytest.Function) and item.originalname == "test_lit_file"]


@pytest.fixture(scope="session")
def lit_results(request: pytest.FixtureRequest,
                tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    """lit's result of every selected file, by its name relative to ``tests/filecheck``."""
    scratch = tmp_path_factory.mktemp("lit")
    report = scratch / "results.json"
    env = dict(os.environ, CRANE_LIT_OUTPUT=str(scratch / "Output"))
    jobs = str(max(2, os.cpu_count() or 2))
    files = [str(FILECHECK_DIR / name) for name in _selected(request.session)]
    subprocess.run([*LIT, "-q", f"-j{jobs}", "--no-progress-bar", "-o", str(report), *files],
                   capture_output=True, text=True, env=env, timeout=1800)
    tests = json.loads(report.read_text())["tests"]
    return {test["name"].split(" :: ", 1)[1]: test for test in tests}


def test_lit_files_are_collected() -> None:
    """Discovery finds the golden tests (a broken glob must not turn the suite green)."""
    assert len(LIT_FILES) >= 40
    assert "ir/types.mlir" in LIT_FILES and "spatial_tile/spatial.crn" in LIT_FILES


@pytest.mark.parametrize("lit_file", LIT_FILES)
def test_lit_file(lit_file: str, lit_results: dict[str, dict[str, Any]]) -> None:
    """The file's RUN lines pass (lit result PASS, or XFAIL for an expected failure)."""
    result = lit_results.get(lit_file)
    assert result is not None, f"lit reported nothing for {lit_file}"
    assert result["code"] in ("PASS", "XFAIL"), f"lit: {result['code']}\n{result.get('output', '')}"
