"""A softmax after a streamed matmul runs on each step's scores on chip: the steps keep its
axis whole, so only the probabilities go to DRAM (as the cost model prices the layer).

Before, the chain stopped at the softmax: BERT-Base on ``gpu11`` stored every layer's 12.6 MB
of attention scores, read them back, and stored the probabilities again."""

from __future__ import annotations

import pytest

from crane.dialects import default_context
from crane.exec.tile_sim.check import check
from crane.ir.parser import parse_ops

from .support import lowered_text

SCORES = """
machine small extends gpu11 {
  sram 256 KiB;
}
network scores {
  machine small;
  input q: f32[1, 4, 256, 32];
  input k: f32[1, 4, 256, 32];
  s = matmul(q, k, transpose_b=true);
  p = softmax(s, axis=3, scale=0.125);
  output p;
}
"""


@pytest.fixture(scope="module")
def scores_program(tmp_path_factory: pytest.TempPathFactory) -> str:
    return lowered_text(tmp_path_factory.mktemp("scores"), "scores", SCORES)


def test_the_scores_never_reach_dram(scores_program: str) -> None:
    stores = [line for line in scores_program.splitlines() if "tile.store" in line]
    assert stores and all('tensor = "p"' in line for line in stores)
    softmaxes = [line for line in scores_program.splitlines() if 'op = "softmax"' in line]
    assert softmaxes and all("x256xf32" in line.split(":")[-1] for line in softmaxes)  # rows whole


def test_the_chained_softmax_matches_the_interpreter(scores_program: str) -> None:
    (module,) = parse_ops(default_context(), scores_program, "scores.tile.mlir")
    report = check(module, rtol=1e-5)
    assert report.ok, report.lines()
