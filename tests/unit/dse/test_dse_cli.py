"""``crane-dse`` in-process: run (serial), resume, retry errors, points, plot, mistakes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from dse_testing import DATA, SweepWriter, load

from crane.dse.results import COST_FIELDS, ResultsFile, read_records
from crane.tools.dse import main
from crane.tools.dse_point import evaluate
from crane.tools.opt import main as opt_main

# A training step that does not fit a 4 KiB DRAM: one error point among four.
ERRORS = ('workloads = ["tiny_train.crn", "tiny_mlp.crn"]\n\n[machine]\n'
          'dram_capacity = ["4 KiB", "1 GiB"]\n\n[scheduler]\npolicy = "set"\n')


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    capsys.readouterr()
    status = main(list(args))
    out, err = capsys.readouterr()
    return status, out, err


def test_run_records_errors_resumes_and_retries(
        write_sweep: SweepWriter, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    sweep = write_sweep(ERRORS)
    results = tmp_path / "out.jsonl"
    status, _, err = run(capsys, "run", str(sweep), "-o", str(results), "--serial")
    assert status == 0, err
    assert "4 points; 0 already in" in err and "(3 ok, 1 could not be scheduled)" in err
    records = read_records(results)
    failed = [r for r in records if r["status"] == "error"]
    assert len(records) == 4 and len(failed) == 1
    assert failed[0]["workload"] == "tiny_train.crn" and failed[0]["dram_capacity_bytes"] == 4096
    assert failed[0]["error"].endswith(
        "tiny_train.crn:3:9: training step does not fit in DRAM: it needs 10.95 KiB (weights, "
        "gradients, optimizer state and saved activations) but 'edge' has 4.00 KiB "
        "(recompute=crane)")
    assert all(failed[0][f] is None for f in COST_FIELDS)

    text = results.read_text()
    status, _, err = run(capsys, "run", str(sweep), "-o", str(results), "--serial")
    assert status == 0 and "4 already in" in err and "0 to run" in err
    assert results.read_text() == text  # nothing computed, nothing appended

    status, _, err = run(capsys, "run", str(sweep), "-o", str(results), "--serial",
                         "--retry-errors", "--progress", "always")
    assert status == 0 and "3 already in" in err and "1 to run" in err
    assert "4/4" in err  # the progress bar, forced on
    lines = results.read_text().splitlines()
    assert len(lines) == 5 and json.loads(lines[-1])["key"] == failed[0]["key"]


def test_a_point_costs_what_crane_opt_reports(tmp_path: Path) -> None:
    _, points = load(DATA / "sweep64.toml")
    point = next(p for p in points if p.workload == "tiny_cnn.crn" and p.batch == 4
                 and p.machine.rows == 4 and p.machine.sram_bytes == 1 << 20
                 and p.machine.dram_bandwidth == 16e9 and p.scheduler.policy == "set")
    record = evaluate(point)
    report = tmp_path / "cost.json"
    status = opt_main([str(DATA / "tiny_cnn.crn"), "-p", "segment{policy=set time-limit=5}",
                       "--cost-report", str(report), "-o", str(tmp_path / "out.mlir")])
    assert status == 0
    expected = json.loads(report.read_text())
    assert {f: record[f] for f in COST_FIELDS if f != "schedule_seconds"} == {
        f: expected[f] for f in COST_FIELDS if f != "schedule_seconds"}


def test_plot_and_points_commands(write_sweep: SweepWriter, tmp_path: Path,
                                  capsys: pytest.CaptureFixture[str]) -> None:
    sweep = write_sweep('workloads = ["tiny_cnn.crn"]\nbatch = 2\n[machine]\n'
                        'sram = ["128 B", "512 B", "1 MiB"]\nmesh = ["2x2", "4x4"]\n'
                        '[scheduler]\npolicy = "set"\n')
    results = tmp_path / "r.jsonl"
    status, _, err = run(capsys, "run", str(sweep), "-o", str(results), "--serial",
                         "--plot", str(tmp_path / "front.png"))
    assert status == 0, err
    assert (tmp_path / "front.png").read_bytes()[:4] == b"\x89PNG"
    status, out, _ = run(capsys, "plot", str(results), "-o", str(tmp_path / "front.svg"))
    assert status == 0
    header, *rows = out.splitlines()
    assert header.startswith("tiny_cnn.crn, batch 2: ") and header.endswith(
        " of 6 points on the Pareto front")
    assert len(rows) == int(header.split(": ")[1].split()[0]) >= 1
    assert all("batch=2" in row and "policy=set" in row for row in rows)
    assert "<svg" in (tmp_path / "front.svg").read_text()

    status, out, _ = run(capsys, "points", str(sweep), "-o", str(results))
    lines = out.splitlines()
    assert status == 0 and lines[-1] == "6 points, 6 done"
    assert lines[0].endswith("ok     tiny_cnn.crn batch 2 on edge 2x2 sram_bytes=128B (set, edp)")


def test_mistakes_give_located_errors_and_exit_codes(
        write_sweep: SweepWriter, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = write_sweep('workloads = ["tiny_cnn.crn"]\n[machine]\nsram = "1 MB/s"\n')
    status, _, err = run(capsys, "run", str(bad), "--serial", "-o", str(tmp_path / "x.jsonl"))
    assert status == 1
    assert err.splitlines() == [
        f"{bad}:3:8: error: sram: sram wants a size (bytes), e.g. `1 MiB`, but `1 MB/s` is a "
        "bandwidth (bytes per second)", 'sram = "1 MB/s"', "       ^~~~~~~~"]
    assert not (tmp_path / "x.jsonl").exists()

    broken = write_sweep('workloads = ["broken.crn"]\n', "b.toml")
    (tmp_path / "broken.crn").write_text("network broken {\n  input x: f32[1, 4];\n"
                                          "  y = relu(z);\n  output y;\n}\n")
    status, _, err = run(capsys, "run", str(broken), "--serial")
    assert status == 1 and err.startswith(f"{tmp_path / 'broken.crn'}:3:")
    assert "  y = relu(z);" in err

    status, _, err = run(capsys, "run", str(tmp_path / "none.toml"))
    assert status == 2 and err.startswith("crane-dse: error: cannot read sweep file")
    status, _, err = run(capsys, "plot", str(tmp_path / "none.jsonl"), "-o", "p.png")
    assert status == 2 and "not found" in err
    status, _, err = run(capsys, "run", str(bad), "--workers", "0")
    assert status == 2 and "must be at least 1" in err

    good = write_sweep('workloads = ["tiny_mlp.crn"]\n', "g.toml")
    held = tmp_path / "held.jsonl"
    with ResultsFile(held):
        status, _, err = run(capsys, "run", str(good), "--serial", "-o", str(held))
    assert status == 2 and "being written by another crane-dse" in err
