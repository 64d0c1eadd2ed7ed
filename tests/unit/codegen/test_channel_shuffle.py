"""ShuffleNet's units: half of the channels pass unchanged through a channel split,
concatenation and shuffle (reshape, transpose, reshape) to the next unit, and on to the
one after, while the other half feeds the unit's convolutions. The transparent ops of that
chain run with their earliest reader's layer, so the shuffled tensor is made before the
next unit's convolution reads it and stored for the units after (with the first reader in
graph order, codegen found it neither on chip nor in DRAM)."""

from __future__ import annotations

import pytest

from .support import network_lowered_and_checked

NET = """
block cbr(x, c, k=1) {
  return relu(batchnorm(conv2d(x, out=c, kernel=k, padding=same, bias=false)));
}
block unit(x) {
  kept = slice(x, axis=1, start=0, stop=4);
  made = cbr(cbr(slice(x, axis=1, start=4, stop=8), 4, k=3), 4);
  joined = concat(kept, made, axis=1);
  return reshape(transpose(reshape(joined, shape=[-1, 2, 4, 8, 8]), perm=[0, 2, 1, 3, 4]),
                 shape=[-1, 8, 8, 8]);
}
network shuffle {
  machine edge;
  batch 2;
  input image: f32[batch, 3, 8, 8];
  x = unit(unit(unit(cbr(image, 8, k=3))));
  logits = linear(flatten(global_avg_pool(cbr(x, 8))), out=5);
  output logits;
}
"""


@pytest.mark.parametrize("mesh", [1, 2])
def test_a_shuffled_tensor_read_by_later_units_matches_the_interpreter(mesh: int) -> None:
    _, report = network_lowered_and_checked(NET, "shuffle.crn", mesh, max_block=2)
    assert report.comparisons and all(c.ok for c in report.comparisons)
