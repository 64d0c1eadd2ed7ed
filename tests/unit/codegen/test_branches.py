"""Branches joined by a concatenation, as in Inception: codegen reads the concatenation's
boxes straight from its inputs' pieces (it is never materialised), and the tile programs
still compute what the reference interpreter computes."""

from __future__ import annotations

import pytest

from crane.codegen.program import Compute

from .support import network_lowered_and_checked

NET = """
block cbr(x, c, k=1) {
  return relu(batchnorm(conv2d(x, out=c, kernel=k, padding=same, bias=false)));
}
network incept {
  machine edge;
  batch 4;
  input image: f32[batch, 3, 16, 16];
  stem = cbr(image, 8, k=3);
  a = cbr(stem, 4);
  b = cbr(cbr(stem, 4), 6, k=3);
  c = cbr(max_pool2d(stem, kernel=3, stride=1, padding=1), 2);
  joined = concat(a, b, c, axis=1);
  head = cbr(joined, 8, k=3);
  logits = linear(flatten(global_avg_pool(head)), out=5);
  output logits;
}
"""


@pytest.mark.parametrize("mesh", [2, 4])
def test_concatenated_branches_run_without_materialising_the_concat(mesh: int) -> None:
    made, report = network_lowered_and_checked(NET, "incept.crn", mesh)
    ops = {i.op for p in made.programs for i in p.body if isinstance(i, Compute)}
    assert "concat" not in ops and "conv2d" in ops and "max_pool2d" in ops
    assert report.comparisons and all(c.ok for c in report.comparisons)
