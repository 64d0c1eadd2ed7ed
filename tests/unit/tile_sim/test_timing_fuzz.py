"""Corrupted tile IR never makes ``crane-sim --timing`` (or ``alloc``) raise: every outcome is
a report (exit 0) or located diagnostics (exit 1)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_timing_basic import pipeline

from crane.tools.opt import main as opt_main
from crane.tools.sim import main as sim_main

SOURCE = "builtin.module @t attributes {crane.machine = @m} {\n" + pipeline() + "\n}\n"
NUMBER = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?:e[+-]?\d+)?")


@st.composite
def mutants(draw: st.DrawFn) -> str:
    """The pipeline module with a few numbers changed, lines dropped or lines duplicated."""
    lines = SOURCE.split("\n")
    for _ in range(draw(st.integers(1, 3))):
        k = draw(st.integers(0, len(lines) - 1))
        action = draw(st.sampled_from(["number", "number", "drop", "duplicate"]))
        if action == "drop":
            del lines[k]
        elif action == "duplicate":
            lines.insert(k, lines[k])
        else:
            spots = list(NUMBER.finditer(lines[k]))
            if spots:
                spot = spots[draw(st.integers(0, len(spots) - 1))]
                value = draw(st.sampled_from(["0", "-1", "1", "3", "7", "64", "100000", "1e30"]))
                lines[k] = lines[k][:spot.start()] + value + lines[k][spot.end():]
    return "\n".join(lines)


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(text=mutants())
def test_corrupt_programs_give_diagnostics(text: str, tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "m.mlir"
    path.write_text(text)
    trace = tmp_path / "t.json"
    trace.unlink(missing_ok=True)
    status = sim_main([str(path), "--trace", str(trace)])
    err = capsys.readouterr().err
    assert status in (0, 1), err
    assert "Traceback" not in err and "internal error" not in err
    assert trace.exists() == (status == 0)
    status = opt_main([str(path), "-p", "alloc", "-o", str(tmp_path / "out.mlir")])
    err = capsys.readouterr().err
    assert status in (0, 1), err
    assert "internal error" not in err
