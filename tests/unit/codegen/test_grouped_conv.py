"""Grouped convolutions of any group count split over tiles and match the interpreter.

Before: a channel split gave each tile part of the output channels but all the input
channels and the full group count (a wrong result for 1 < groups < channels, a verifier
error for depthwise multipliers); now a part is whole groups with their own input channels.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from crane.dialects import default_context
from crane.exec.tile_sim.check import check
from crane.ir.parser import parse_ops
from crane.tools.opt import main as opt_main

CASES = [  # (channels in, channels out, groups, kernel, stride)
    (16, 16, 4, 3, 1), (16, 16, 16, 3, 1), (16, 32, 16, 3, 2), (24, 48, 3, 1, 1),
    (24, 24, 8, 3, 2), (8, 24, 2, 5, 1), (32, 32, 32, 3, 1), (12, 36, 6, 3, 1),
]


def _network(c: int, k: int, groups: int, kernel: int, stride: int, train: bool) -> str:
    head = "input labels: int32[1];" if train else ""
    tail = "train { loss cross_entropy(logits, labels); optimizer sgd(lr=0.1); }" if train else ""
    return f"""
network grouped {{
  input x: f32[1, 8, 14, 14];
  {head}
  a = relu(conv2d(x, out={c}, kernel=3, padding=1));
  b = relu(conv2d(a, out={k}, kernel={kernel}, stride={stride}, padding={kernel // 2}, groups={groups}));
  logits = linear(flatten(global_avg_pool(b)), out=5);
  output logits;
  {tail}
}}
"""


@pytest.mark.parametrize("train", [False, True], ids=["inference", "training"])
@pytest.mark.parametrize("case", CASES, ids=[f"c{c}k{k}g{g}r{r}s{s}" for c, k, g, r, s in CASES])
def test_grouped_convolution_lowers_and_matches(tmp_path: Path, case: tuple[int, ...],
                                                train: bool) -> None:
    source = tmp_path / "grouped.crn"
    source.write_text(_network(*case, train))
    out = tmp_path / "grouped.tile.mlir"
    pipeline = "lower-to-tile" if train else "segment,map,codegen,alloc"
    assert opt_main([str(source), "--machine", "edge", "-p", pipeline, "-o", str(out)]) == 0
    (module,) = parse_ops(default_context(), out.read_text(), str(out))
    report = check(module, rtol=1e-5)
    assert report.ok, report.lines()
