"""The acceptance of issue 8's sweeps: 64 points on a local Dask cluster, equal to a serial
run, and a sweep killed halfway that resumes without computing finished points again.

One local cluster (two worker processes) serves the whole module.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from dse_testing import SWEEP64, load

from crane.dse.points import Point
from crane.dse.results import COST_FIELDS, comparable, parse_lines
from crane.dse.run import dask_client, run_dask, run_serial
from crane.tools.dse_point import evaluate

if sys.platform == "win32":  # pragma: no cover
    pytest.skip("process groups are POSIX", allow_module_level=True)

Records = dict[str, dict[str, Any]]


@pytest.fixture(scope="module")
def client() -> Iterator[Any]:
    with dask_client(None, workers=2) as connected:
        yield connected


@pytest.fixture(scope="module")
def points() -> list[Point]:
    return load(SWEEP64)[1]


@pytest.fixture(scope="module")
def serial(points: list[Point]) -> Records:
    records: list[dict[str, Any]] = []
    assert run_serial(points, evaluate, records.append) == []
    return {r["key"]: r for r in records}


def test_serial_results_are_real_schedules(serial: Records, points: list[Point]) -> None:
    assert len(serial) == 64
    for record in serial.values():
        assert record["status"] == "ok" and record["error"] is None
        assert all(isinstance(record[f], int | float) for f in COST_FIELDS)
        assert record["latency_cycles"] >= record["latency_lower_bound_cycles"] > 0
        assert record["energy_pj"] >= record["energy_lower_bound_pj"] > 0
        assert record["edp"] == pytest.approx(record["latency_cycles"] * record["energy_pj"])
    # The swept hardware matters: the smallest SRAM costs tiny_cnn DRAM traffic.
    cnn = [r for r in serial.values() if r["workload"] == "tiny_cnn.crn" and r["batch"] == 4]
    small = {r["dram_bytes"] for r in cnn if r["sram_bytes"] == 256}
    large = {r["dram_bytes"] for r in cnn if r["sram_bytes"] == 1 << 20}
    assert min(small) > max(large)


def test_64_points_on_a_local_dask_cluster_equal_a_serial_run(
        client: Any, points: list[Point], serial: Records) -> None:
    records: list[dict[str, Any]] = []
    lost = run_dask(points, evaluate, records.append, client)
    assert lost == []
    assert sorted(r["key"] for r in records) == sorted(serial)
    workers = {r["worker"] for r in records}
    assert len(workers) == 2 and f":{os.getpid()}" not in "".join(workers)
    for record in records:
        assert comparable(record) == comparable(serial[record["key"]])
        assert record["schedule_seconds"] > 0  # kept in the record, not compared


def _lines(path: Path) -> int:
    try:
        return path.read_bytes().count(b"\n")
    except FileNotFoundError:
        return 0


def test_a_killed_sweep_resumes_without_recomputing(
        tmp_path: Path, client: Any, points: list[Point], serial: Records) -> None:
    results = tmp_path / "results.jsonl"
    command = [sys.executable, "-m", "crane.tools.dse", "run", str(SWEEP64), "-o", str(results)]
    # Its own local cluster, in a process group of its own: killing the group is `kill -9`
    # of crane-dse and its workers, mid-sweep.
    first = subprocess.Popen([*command, "--workers", "2"], start_new_session=True,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 90
    while _lines(results) < 8:
        assert first.poll() is None, first.communicate()[1].decode()
        assert time.monotonic() < deadline, "no results after 90 s"
        time.sleep(0.005)
    os.killpg(first.pid, signal.SIGKILL)
    first.communicate()
    before = results.read_bytes()
    whole = before[: before.rfind(b"\n") + 1]
    done = [json.loads(line) for line in whole.splitlines()]
    assert 8 <= len(done) < 64, f"{len(done)} points were done when the sweep was killed"
    # A kill during a write leaves a torn last line; make sure this file has one.
    pending = next(p for p in points if p.key not in {r["key"] for r in done})
    results.write_bytes(whole + json.dumps(serial[pending.key]).encode()[:60])

    # Resume on the module's cluster, by address.
    address = client.scheduler.address
    second = subprocess.run([*command, "--scheduler", address], capture_output=True, text=True,
                            timeout=120)
    assert second.returncode == 0, second.stderr
    assert "cut a torn last line" in second.stderr
    assert f"64 points; {len(done)} already in" in second.stderr
    assert f"{64 - len(done)} computed now" in second.stderr

    final = results.read_bytes()
    assert final.startswith(whole)  # the first run's records are untouched
    records, bad = parse_lines(final)
    assert bad == 0
    keys = [r["key"] for r in records]
    assert len(keys) == len(set(keys)) == 64 and set(keys) == {p.key for p in points}
    runs = [r["run"] for r in records]
    assert len(set(runs)) == 2 and runs.count(runs[0]) == len(done)
    assert pending.key in keys[len(done):]  # the torn point was computed again
    for record in records:
        assert comparable(record) == comparable(serial[record["key"]])
