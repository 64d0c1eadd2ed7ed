"""A CI slice of bench/fidelity.py: the cost model against the timing simulator on one
bundled CNN on edge, held to the benchmark's 10% target."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[3] / "bench" / "fidelity.py"


def test_darknet19_on_edge_is_within_the_target() -> None:
    done = subprocess.run([sys.executable, str(BENCH), "--nets", "darknet19"],
                          capture_output=True, text=True, check=False, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    row = next(line for line in done.stdout.splitlines() if line.startswith("darknet19"))
    latency_diff, energy_diff = (float(f.rstrip("%")) for f in row.split()[3:7:3])
    assert abs(latency_diff) <= 10.0 and abs(energy_diff) <= 10.0
    assert "0 row(s) miss it" in done.stdout
