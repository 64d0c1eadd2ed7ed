"""A CI slice of bench/schedule.py: one tiny network through every policy."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

from crane.hardware.machine import Machine
from crane.schedule.builders import chain, residual_block
from crane.schedule.policies import POLICIES

BENCH = Path(__file__).resolve().parents[3] / "bench" / "schedule.py"


def _bench():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("bench_schedule", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_schedule"] = module
    spec.loader.exec_module(module)
    return module


def test_bench_slice(tmp_path: Path) -> None:
    bench = _bench()
    rows = bench.run_case(chain(3), Machine.edge(), 4, time_limit=1.0)
    assert [r.policy for r in rows] == [*POLICIES, "tangram+g"]
    crane = rows[0]
    assert all(crane.edp <= r.edp * (1 + 1e-9) for r in rows)
    assert all(r.latency_over_bound >= 1 - 1e-9 and r.energy_over_bound >= 1 for r in rows)
    text = bench.report(rows)
    assert "chain3" in text and "gain" in text


def test_groups_strengthen_the_tangram_baseline_but_not_past_crane() -> None:
    bench = _bench()
    rows = bench.run_case(residual_block(64, 56), Machine.edge(), 16,
                          ("crane", "tangram", "tangram+g"), time_limit=1.0)
    crane, flat, grouped = (r.edp for r in rows)
    assert crane <= grouped * (1 + 1e-9) and grouped < flat


def test_scaling_rows_cover_the_targets_and_say_whether_they_are_met() -> None:
    bench = _bench()
    scaling = sys.modules["schedule_scaling"]
    found = {(net, m.name, batch) for net, m, batch in scaling.cases()}
    assert set(scaling.TARGETS) <= found
    assert {m.tiles for _, m, _ in scaling.cases()} >= {16, 4096}
    assert {batch for _, _, batch in scaling.cases()} >= {1, 256}
    row = scaling.run_row(lambda net, elem: chain(2), "resnet50", Machine.edge(), 8)
    assert row.target == 4.0 and row.edp > 0
    assert bench.schedule_scaling is scaling
    slow = scaling.ScalingRow("resnet50", "edge", 8, 16, 5.0, 5.0, 1.0)
    assert scaling.report([row]).splitlines()[1].endswith("yes")
    assert scaling.report([slow]).splitlines()[1].endswith("NO")
