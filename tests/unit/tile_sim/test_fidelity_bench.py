"""A CI slice of bench/fidelity.py: the cost model against the timing simulator on bundled
CNNs on edge (an inference network and the training step of the tiny ResNet), held to the
benchmark's 10% target."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[3] / "bench" / "fidelity.py"


@pytest.mark.parametrize("net", ["darknet19", "tiny_resnet"])
def test_the_model_is_within_the_target_on_edge(net: str) -> None:
    done = subprocess.run([sys.executable, str(BENCH), "--nets", net],
                          capture_output=True, text=True, check=False, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    row = next(line for line in done.stdout.splitlines() if line.startswith(net))
    latency_diff, energy_diff = (float(f.rstrip("%")) for f in row.split()[3:7:3])
    assert abs(latency_diff) <= 10.0 and abs(energy_diff) <= 10.0
    assert "0 row(s) miss it" in done.stdout
