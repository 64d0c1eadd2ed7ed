"""A layer whose single output channel's weights overflow a tile's weight share runs whole,
in input-channel chunks: its weights and its input are each read once.

Before, codegen cut such a part into weight slices (one channel each, still too big to keep)
and each slice into steps of its samples, so every weight chunk streamed in again for every
sample: `linear(x: f32[2, 300000], out=16)` on `edge` read 10.2 MB of DRAM for 4.8 MB of
weights, and ran 637,651 simulated cycles against the model's 338,089. The model
(``crane.cost.layer.runs_in_input_chunks``) and the program now agree."""

from __future__ import annotations

import pytest

from crane.dialects import default_context
from crane.exec.tile_sim.check import check
from crane.exec.tile_sim.timing import simulate
from crane.exec.tile_sim.timing_compare import compare_with_cost
from crane.ir.parser import parse_ops
from crane.tools.opt import main as opt_main

WIDE = """
network wide {
  machine edge;
  batch 2;
  input x: f32[batch, 300000];
  y = linear(x, out=16);
  output y;
}
"""
WEIGHT_BYTES = 300000 * 16  # `edge` counts one byte per element
INPUT_BYTES = 2 * 300000


@pytest.fixture(scope="module")
def wide_program(tmp_path_factory: pytest.TempPathFactory) -> str:
    folder = tmp_path_factory.mktemp("wide")
    net, out = folder / "wide.crn", folder / "wide.tile.mlir"
    net.write_text(WIDE)
    assert opt_main([str(net), "-p", "lower-to-tile", "-o", str(out)]) == 0
    return out.read_text()


def test_every_weight_and_input_byte_is_read_once(wide_program: str) -> None:
    (module,) = parse_ops(default_context(), wide_program, "wide.tile.mlir")
    report = simulate(module)
    figures = {c.metric: c for c in compare_with_cost(module, report)}
    assert figures["dram_bytes"].simulated <= WEIGHT_BYTES + INPUT_BYTES + 64 * 16
    assert figures["dram_bytes"].analytical == pytest.approx(figures["dram_bytes"].simulated, rel=0.01)
    assert figures["latency_cycles"].analytical == pytest.approx(
        figures["latency_cycles"].simulated, rel=0.05)


def test_each_tile_computes_both_samples_in_every_chunk(wide_program: str) -> None:
    chunks = [line for line in wide_program.splitlines() if 'op = "linear"' in line]
    assert chunks and all(" : (buffer<2x" in line for line in chunks)  # results of 2 samples


def test_the_chunked_layer_matches_the_interpreter(wide_program: str) -> None:
    (module,) = parse_ops(default_context(), wide_program, "wide.tile.mlir")
    report = check(module, rtol=1e-5)
    assert report.ok, report.lines()
