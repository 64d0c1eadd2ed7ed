"""``crane-sim`` and the checker against the reference interpreter."""

from __future__ import annotations

from pathlib import Path

import pytest
from tile_sim_testing import FILECHECK, ROOT, crn_func, load, lower_whole_ops

from crane.autodiff import expand_training_step, resolve_training
from crane.exec.tile_sim.check import check
from crane.ir.printer import print_op
from crane.tools.sim import main


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def test_check_matches_exactly_for_the_channel_split_conv(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = _run(capsys, str(FILECHECK / "conv_split.mlir"), "--check", "--rtol", "0")
    assert status == 0
    assert out.splitlines()[-1] == "max error: abs 0, rel 0 (rtol 0) over 1 output(s): match"


def test_a_wrong_weight_slice_is_a_mismatch_with_exit_3(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = print_op(load("conv_split.mlir")).replace("offsets = array<i64: 2, 0, 0, 0>, port = 1",
                                                     "offsets = array<i64: 0, 0, 0, 0>, port = 1")
    path = tmp_path / "wrong.mlir"
    path.write_text(text)
    status, out, _ = _run(capsys, str(path), "--check")
    assert status == 3
    assert out.splitlines()[0].startswith("FAIL  y  1x4x8x8  max_abs=")
    assert out.splitlines()[-1].endswith("over 1 output(s): MISMATCH")


def test_an_output_no_dram_tensor_holds_is_a_mismatch() -> None:
    text = print_op(load("pipeline.mlir")).replace('{name = "z",', '{name = "zz",').replace('tensor = "z"', 'tensor = "zz"')
    from tile_sim_testing import parse
    report = check(parse(text))
    assert not report.ok
    assert report.lines()[0] == "FAIL  z  4x8  max_abs=inf  max_rel=inf  <- (missing: no DRAM tensor holds it)"


def test_without_check_outputs_are_summarised_and_stdin_is_read(capsys: pytest.CaptureFixture[str],
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    import io
    monkeypatch.setattr("sys.stdin", io.StringIO((FILECHECK / "pipeline.mlir").read_text()))
    status, out, _ = _run(capsys, "-")
    assert status == 0
    assert out.startswith("z  4x8  mean=")
    assert out.splitlines()[-1] == "21 instructions, 256 DMA bytes, 256 NoC bytes"


def test_errors_are_located_with_exit_1_and_usage_errors_exit_2(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    status, _, err = _run(capsys, str(FILECHECK / "deadlock.mlir"))
    assert status == 1
    assert err.startswith(f"{FILECHECK / 'deadlock.mlir'}:12:5: error: 'tile.recv' op deadlock: 3 tile(s) blocked")
    bad = tmp_path / "bad.mlir"
    bad.write_text((FILECHECK / "pipeline.mlir").read_text().replace("tile.recv %c {peer = 1, tag = 0}",
                                                                     "tile.recv %c {peer = 1 tag = 0}"))
    status, _, err = _run(capsys, str(bad))
    assert status == 1 and err.startswith(f"{bad}:38:28: error: expected ',' or ")
    status, _, err = _run(capsys, str(tmp_path / "missing.mlir"))
    assert status == 2 and "cannot read input file" in err
    status, _, err = _run(capsys, str(bad), "--rtol", "-1")
    assert status == 2 and "--rtol must be a non-negative number" in err
    status, _, err = _run(capsys, str(ROOT / "examples" / "tiny_resnet.crn"))
    assert status == 1 and "holds no tile.program to simulate" in err
    status, _, err = _run(capsys, str(FILECHECK / "deadlock.mlir"), "--check")
    assert status == 1 and "keeps no graph.func to check against" in err


@pytest.mark.parametrize("network", ["tiny_resnet", "tiny_transformer"])
@pytest.mark.parametrize("train", [False, True], ids=["inference", "training"])
@pytest.mark.parametrize("mesh", [2, 4], ids=["2x2", "4x4"])
def test_whole_networks_op_by_op_match_the_interpreter(network: str, train: bool, mesh: int) -> None:
    _, func = crn_func(ROOT / "examples" / f"{network}.crn")
    if train:
        config = resolve_training(func.attributes.get("training"), "", "", {"lr": None})
        assert config is not None
        expand_training_step(func, config)
    report = check(lower_whole_ops(func, mesh, mesh))
    assert report.ok, report.lines()
    assert len(report.comparisons) > (10 if train else 0)
    assert report.counters.noc_bytes > 0


def test_allocated_programs_run_in_the_sram_arena_and_still_match() -> None:
    import subprocess
    import sys

    from tile_sim_testing import parse
    _, func = crn_func(ROOT / "examples" / "tiny_resnet.crn")
    text = print_op(lower_whole_ops(func, 2, 2))
    done = subprocess.run([sys.executable, "-m", "crane.opt", "-p", "alloc", "-"], input=text,
                          capture_output=True, text=True, cwd=str(ROOT), timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert "{offset = -1}" not in done.stdout
    report = check(parse(done.stdout))
    assert report.ok, report.lines()
