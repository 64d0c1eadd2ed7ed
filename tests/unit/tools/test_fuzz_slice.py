"""A seeded slice of the fuzz campaign (bench/fuzz.py) in the test suite: every input of the
slice ends cleanly (exit 0, 1 or 2 with a located message, or a crane-sim mismatch), within
the time limit and without leftover files. The full campaign is ``python bench/fuzz.py
--inputs 10000``."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parents[3] / "bench" / "fuzz.py"


def test_a_seeded_slice_of_the_fuzz_campaign_has_no_bad_outcome(tmp_path: Path) -> None:
    began = time.perf_counter()
    done = subprocess.run([sys.executable, str(BENCH), "--inputs", "300", "--seed", "24", "--quick",
                           "--time-limit", "30", "--keep", str(tmp_path / "findings")],
                          capture_output=True, text=True, check=False, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    total = next(line for line in done.stdout.splitlines() if line.startswith("total"))
    counts = [int(cell) for cell in total.split()[1:-1]]
    assert counts[0] == 300 and sum(counts[1:4]) + counts[4] == 300  # exit 0/1/2 or a mismatch
    assert not any(counts[5:]), done.stdout
    assert not (tmp_path / "findings").exists()
    assert time.perf_counter() - began < 60


def test_a_run_out_of_memory_is_its_own_outcome_not_an_unlocated_diagnostic(tmp_path: Path) -> None:
    sys.path.insert(0, str(BENCH.parent))
    try:
        import fuzz
        from fuzz_cases import Case
    finally:
        sys.path.remove(str(BENCH.parent))
    case = Case("crn", "crane-opt", ("big.crn",))
    said = "crane-opt: error: out of memory: the input is too large to process on this host\n"
    assert fuzz.classify(case, 1, said, "", tmp_path, timed_out=False) == ["out of memory"]
    assert fuzz.classify(case, 1, "error: no location\n", "", tmp_path, timed_out=False) == ["unlocated"]
