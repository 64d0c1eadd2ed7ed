"""The Pareto front and its plot."""

from __future__ import annotations

import re
import struct
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from crane.dse.pareto import panels, pareto_front, plot_pareto


def dominated(a: tuple[float, float], b: tuple[float, float]) -> bool:
    """Whether ``b`` dominates ``a``."""
    return b[0] <= a[0] and b[1] <= a[1] and b != a


def test_front_of_a_small_set() -> None:
    costs = [(3.0, 1.0), (1.0, 5.0), (2.0, 2.0), (2.5, 2.0), (1.0, 6.0), (4.0, 0.5), (2.0, 2.0)]
    assert pareto_front(costs) == [1, 2, 6, 0, 5]
    assert pareto_front([]) == []


@given(st.lists(st.tuples(st.integers(1, 20), st.integers(1, 20)), max_size=40))
def test_front_is_exactly_the_non_dominated_points(raw: list[tuple[int, int]]) -> None:
    costs = [(float(x), float(y)) for x, y in raw]
    front = pareto_front(costs)
    expected = {i for i, c in enumerate(costs) if not any(dominated(c, o) for o in costs)}
    assert set(front) == expected and len(front) == len(set(front))
    assert [costs[i][0] for i in front] == sorted(costs[i][0] for i in front)


def rec(workload: str, batch: int, latency: float, energy: float,
        status: str = "ok") -> dict[str, object]:
    return {"key": f"{workload}{batch}{latency}{energy}", "workload": workload, "batch": batch,
            "status": status, "latency_cycles": latency, "energy_pj": energy}


RECORDS = [rec("a.crn", 1, 10, 50), rec("a.crn", 1, 20, 20), rec("a.crn", 1, 30, 30),
           rec("a.crn", 1, 40, 10), rec("a.crn", 4, 40, 200), rec("a.crn", 4, 80, 100),
           rec("b.crn", 1, 1e3, 1e6), rec("b.crn", 1, 2e3, 2e6), rec("b.crn", 1, 0, 0, "error")]


def test_panels_split_workloads_and_batches() -> None:
    drawn = panels(RECORDS)
    assert [(p.workload, len(p.records), len(p.front), p.errors) for p in drawn] == [
        ("a.crn, batch 1", 4, 3, 0), ("a.crn, batch 4", 2, 2, 0), ("b.crn, batch 1", 2, 1, 1)]
    per_sample = panels(RECORDS, per_sample=True)
    assert [p.workload for p in per_sample] == ["a.crn", "b.crn"]
    # Per sample, batch 4's (40, 200) is (10, 50): a tie with batch 1's (10, 50), both on
    # the front; its (80, 100) is (20, 25), beaten by batch 1's (20, 20).
    front = [per_sample[0].records[i] for i in per_sample[0].front]
    assert [(f["batch"], f["latency_cycles"]) for f in front] == [(1, 10), (4, 40), (1, 20),
                                                                  (1, 40)]


def test_svg_plot_has_one_marker_per_point_and_front_point(tmp_path: Path) -> None:
    out = tmp_path / "pareto.svg"
    plot_pareto(RECORDS, out, title="tiny")
    svg = out.read_text()
    assert svg.startswith("<?xml") and "<svg" in svg
    for n, (points, front) in enumerate([(4, 3), (2, 2), (2, 1)]):
        assert _markers(svg, f"points-{n}") == points
        assert _markers(svg, f"pareto-front-{n}") == front
    assert not list(tmp_path.glob(".*.tmp"))


def _markers(svg: str, gid: str) -> int:
    """``<use>`` elements (markers) inside the group with id ``gid``."""
    match = re.search(rf'<g id="{gid}">(.*?)</g>', svg, re.S)
    assert match is not None, f"no group {gid}"
    return match.group(1).count("<use ")


def test_png_plot_is_a_png_of_the_expected_size(tmp_path: Path) -> None:
    out = tmp_path / "pareto.png"
    plot_pareto(RECORDS, out)
    data = out.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    assert (width, height) == (round(3 * 5.2 * 120), round(4.2 * 120))


def test_plot_refuses_unknown_formats_and_empty_results(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="picture format"):
        plot_pareto(RECORDS, tmp_path / "p.gif")
    with pytest.raises(ValueError, match="no successful point"):
        plot_pareto([rec("a.crn", 1, 0, 0, "error")], tmp_path / "p.png")
    assert not list(tmp_path.iterdir())
