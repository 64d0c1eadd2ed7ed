"""``crane-sim --timing`` per block: each scheduled block's model latency beside the simulated
time of its phases, on a real training step (forward, backward and recomputed blocks)."""

from __future__ import annotations

from pathlib import Path

import pytest
from tile_sim_testing import ROOT

from crane.dialects import default_context
from crane.exec.tile_sim.timing import TimingReport, simulate
from crane.exec.tile_sim.timing_blocks import (
    block_timings,
    format_block_timings,
    owner_of,
    scheduled_blocks,
)
from crane.ir.core import Operation
from crane.tools.inputs import parse_ir
from crane.tools.opt import main as opt_main
from crane.tools.sim import main as sim_main


@pytest.fixture(scope="module")
def lowered(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Operation, TimingReport]:
    """tiny_resnet's training step on ``mesh2x2``: its schedule recomputes the stem."""
    out = tmp_path_factory.mktemp("blocks") / "step.tile.mlir"
    assert opt_main([str(ROOT / "examples" / "tiny_resnet.crn"), "--machine",
                     str(ROOT / "examples" / "machines" / "mesh2x2.crn"),
                     "-p", "lower-to-tile", "-o", str(out)]) == 0
    module = parse_ir(out.read_text(), str(out), default_context())
    return out, module, simulate(module, check_ir=False)


def test_every_phase_belongs_to_a_block_and_the_rows_add_up_to_the_run(
        lowered: tuple[Path, Operation, TimingReport]) -> None:
    _, module, report = lowered
    blocks = scheduled_blocks(module)
    rows = block_timings(module, report)
    assert [r.index for r in rows] == list(range(len(blocks)))  # none unclaimed, none missing
    assert sum(r.simulated_cycles for r in rows) == pytest.approx(report.cycles)
    assert [r.model_cycles for r in rows] == [b.latency_cycles for b in blocks]
    assert all(r.simulated_cycles > 0 and r.phases >= 1 for r in rows)
    phases = [label for label, _ in report.barriers if not label.startswith(("stream:", "flush:"))]
    assert sum(r.phases for r in rows) == len(phases)


def test_each_block_has_its_model_energy_and_the_energy_of_its_phases(
        lowered: tuple[Path, Operation, TimingReport]) -> None:
    _, module, report = lowered
    rows = block_timings(module, report)
    assert [r.model_energy_pj for r in rows] == [b.energy_pj for b in scheduled_blocks(module)]
    assert all(r.simulated_energy_pj > 0 for r in rows)
    # Every instruction's energy is closed by one barrier: the rows add up to the run's.
    assert sum(r.simulated_energy_pj for r in rows) == pytest.approx(report.energy_pj)
    assert len(report.barrier_energy) == len(report.barriers)


def test_labels_name_forward_backward_and_recomputed_blocks(
        lowered: tuple[Path, Operation, TimingReport]) -> None:
    _, module, report = lowered
    blocks = scheduled_blocks(module)
    labels = [label for label, _ in report.barriers]
    recomputed = next(label for label in labels if label.startswith("recompute:"))
    name = recomputed.split(":")[1]
    first = next(k for k, b in enumerate(blocks) if b.label == name)
    assert owner_of(recomputed, blocks) > first and blocks[owner_of(recomputed, blocks)].label == name
    assert owner_of(f"{name}:state0", blocks) == first
    backward = next(label for label in labels if label.startswith("backward:"))
    layer = backward.removeprefix("backward:").split("+")[0]
    assert f"{layer}.grad" in blocks[owner_of(backward, blocks)].layer_names
    assert owner_of("nothing:state0", blocks) == -1


def test_crane_sim_timing_prints_a_row_per_block(lowered: tuple[Path, Operation, TimingReport],
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    path, module, report = lowered
    assert sim_main([str(path), "--timing"]) == 0
    out = capsys.readouterr().out
    table = out.split("per block:")[1].split("\n\n")[0]
    for row in block_timings(module, report):
        assert f"{row.model_cycles:,.0f}" in table and f"{row.simulated_cycles:,.0f}" in table
    short = format_block_timings(block_timings(module, report), limit=3)
    assert len(short.splitlines()) == 1 + 3 + 1 and "more blocks" in short
