"""Fixtures of the ``crane-dse`` tests."""

from __future__ import annotations

from pathlib import Path

import pytest
from dse_testing import DATA, SweepWriter


@pytest.fixture
def write_sweep(tmp_path: Path) -> SweepWriter:
    """``write_sweep(text, name="sweep.toml")``: a sweep file beside the tiny workloads."""
    for crn in DATA.glob("*.crn"):
        (tmp_path / crn.name).write_text(crn.read_text())

    def write(text: str, name: str = "sweep.toml") -> Path:
        path = tmp_path / name
        path.write_text(text)
        return path

    return write
