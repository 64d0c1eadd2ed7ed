"""Helpers of the ``crane-dse`` tests: the data directory and sweep loading."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from crane.dialects import default_context
from crane.dse.points import Point, expand
from crane.dse.sweep import Sweep, read_sweep
from crane.dse.workload import inspect_workload

DATA = Path(__file__).parent / "data"
SWEEP64 = DATA / "sweep64.toml"

SweepWriter = Callable[..., Path]


def load(path: Path) -> tuple[Sweep, list[Point]]:
    """A sweep file and its points, as ``crane-dse run`` expands them."""
    sweep = read_sweep(path)
    context = default_context()
    infos = {ref.path: inspect_workload(ref.path, context) for ref in sweep.workloads}
    return sweep, expand(sweep, infos)
