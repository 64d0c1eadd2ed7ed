"""Issue acceptance: for every golden input under tests/filecheck that parses on its own,
``crane-opt X | crane-opt -`` and ``crane-opt --print-op-generic X | crane-opt -`` print
exactly what ``crane-opt X`` prints (also with --print-debuginfo). Runs in-process."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

FILECHECK_DIR = Path(__file__).parents[2] / "filecheck"
GOLDEN = sorted(p for p in FILECHECK_DIR.rglob("*.mlir") if "Output" not in p.parts)


def _flags(path: Path) -> list[str]:
    """Flags the file's own RUN lines need to parse it at all."""
    text = path.read_text()
    return ["--allow-unregistered-dialect"] if "--allow-unregistered-dialect" in text else []


def test_there_are_golden_inputs() -> None:
    """Guards the parametrisation below against silently testing nothing."""
    assert len(GOLDEN) >= 10


@pytest.mark.parametrize("path", GOLDEN, ids=lambda p: str(p.relative_to(FILECHECK_DIR)))
@pytest.mark.parametrize("debuginfo", [False, True], ids=["plain", "debuginfo"])
def test_round_trip(opt: Any, path: Path, debuginfo: bool) -> None:
    """Custom and generic output both parse back to the same custom text."""
    flags = _flags(path) + (["--print-debuginfo"] if debuginfo else [])
    first = opt([str(path), *flags])
    if first.rc != 0:
        pytest.skip("needs --split-input-file or is an error test")
    again = opt(["-", *flags], stdin=first.out)
    assert again.rc == 0, again.err
    assert again.out == first.out
    generic = opt([str(path), "--print-op-generic", *flags])
    assert generic.rc == 0, generic.err
    back = opt(["-", *flags], stdin=generic.out)
    assert back.rc == 0, back.err
    assert back.out == first.out
    generic_again = opt(["-", "--print-op-generic", *flags], stdin=generic.out)
    assert generic_again.out == generic.out
