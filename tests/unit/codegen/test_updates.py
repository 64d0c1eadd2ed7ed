"""Optimizer updates spread over their layer's tiles.

An update reads its weight and its state from DRAM and writes them back (six copies of
its box for Adam); its gradient may sit whole on one tile (small partial sums are added on
one tile). Codegen splits the update over every tile of the layer anyway: receiving part
of the gradient over the NoC costs less than one tile doing every load, store and vector
operation of the update.
"""

from __future__ import annotations

import math

from crane.codegen.lower import lower_func
from crane.codegen.program import Compute
from crane.codegen.to_ir import tile_ops
from crane.exec.tile_sim.check import check

from .support import prepared


def test_adam_updates_are_split_evenly_over_the_tiles() -> None:
    module, func, schedule, machine = prepared("tiny_transformer", 1, 2, True)
    made = lower_func(func, schedule, machine)
    updated = [sum(math.prod(ins.outs[0].shape) for ins in program.body
                   if isinstance(ins, Compute) and ins.op == "adam")
               for program in made.programs]
    # Before, the tile holding the small gathered gradients ran most updates: 28,160
    # elements against 4,224.
    assert len(updated) == 2 and updated[0] == updated[1] > 0
    for op in tile_ops(made):
        module.regions[0].blocks[0].append(op)
    report = check(module)
    assert report.comparisons and all(c.ok for c in report.comparisons)
