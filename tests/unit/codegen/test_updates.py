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


def test_an_update_runs_in_the_phase_of_its_gradient_even_in_graph_order() -> None:
    """When the layers' backward ranks are not a topological order of the training ops,
    they run in graph order, where autodiff puts every update after all the gradients:
    each update still joins the phase that made its weight gradient (which then stays in
    SRAM) instead of a phase of its own that reads it back from DRAM."""
    from crane.codegen.ownership import owners
    from crane.codegen.plan import backward_phases
    from crane.dialects.graph_grad import UpdateOp

    _, func, _, _ = prepared("tiny_resnet", 1, 1, True)
    own = owners(func, True)
    names = list(dict.fromkeys(name for _, name in own.backward))
    # Every layer at one rank: graph order within it, and no rank order to try first.
    rank = dict.fromkeys(names, 0)
    forward_order = {name: -k for k, name in enumerate(names)}  # the stem first: not topological
    for ranks in (rank, forward_order):
        phases = backward_phases(own.backward, ranks, dict.fromkeys(names, None),  # type: ignore[arg-type]
                                 dict.fromkeys(names, 0), 8)
        phase_of = {op: k for k, phase in enumerate(phases) for op in phase.ops}
        updates = [op for op in phase_of if isinstance(op, UpdateOp)]
        assert updates
        for update in updates:
            made = update.operands[1].owner_op
            assert phase_of[update] == phase_of[made], update
