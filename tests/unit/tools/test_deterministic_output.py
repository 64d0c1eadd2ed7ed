"""Identical input gives identical bytes: ``crane-opt X -p lower-to-tile`` run twice.

The ``crane.cost`` report leaves out the search's wall time (``schedule_seconds``) unless
``segment{record-time=true}`` asks for it; nothing else in the lowered IR may depend on
the run. The small examples run here in subprocesses, as a user runs them. (The segment
search's MILP solves have a time limit: a solve cut short by it under load could pick
another schedule, which this test would catch.)
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


def _lower(net: str, machine: str, out: Path) -> bytes:
    command = [sys.executable, "-m", "crane.opt", str(EXAMPLES / f"{net}.crn"), "--machine",
               machine, "-p", "lower-to-tile", "-o", str(out)]
    done = subprocess.run(command, capture_output=True, text=True, check=False, timeout=300)
    assert done.returncode == 0, done.stderr
    return out.read_bytes()


@pytest.mark.parametrize(("net", "machine"), [("tiny_resnet", "edge"), ("tiny_transformer", "mbs")])
def test_lower_to_tile_twice_gives_the_same_bytes(net: str, machine: str, tmp_path: Path) -> None:
    first = _lower(net, machine, tmp_path / "a.mlir")
    second = _lower(net, machine, tmp_path / "b.mlir")
    assert b"schedule_seconds" not in first
    assert first == second
