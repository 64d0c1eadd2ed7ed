"""Codegen follows the training schedule's recomputation.

With ``recompute=full`` every forward block retains no sub-batch: codegen runs each block
again (``recompute:`` phases) before its layers' training ops, and the forward pass stores
only what leaves a block; with ``keep`` nothing is recomputed and the forward pass stores
everything the training ops read. Both give the reference interpreter's results.
"""

from __future__ import annotations

from functools import cache

import pytest

from crane.codegen.lower import lower_func
from crane.codegen.program import Barrier, Store, TileModule
from crane.codegen.to_ir import tile_ops
from crane.exec.tile_sim.check import check

from .support import prepared


@cache
def lowered(recompute: str) -> tuple[object, TileModule]:
    module, func, schedule, machine = prepared("tiny_resnet", 2, 2, True, recompute=recompute)
    made = lower_func(func, schedule, machine)
    for op in tile_ops(made):
        module.regions[0].blocks[0].append(op)
    return module, made


def labels(made: TileModule) -> list[str]:
    return [ins.label for ins in made.programs[0].body if isinstance(ins, Barrier)]


def forward_stores(made: TileModule) -> set[str]:
    """Tensors stored before the first training phase, over all tiles."""
    stored: set[str] = set()
    for program in made.programs:
        for ins in program.body:
            if isinstance(ins, Barrier) and not ins.label.startswith(("backward:", "recompute:")):
                continue
            if isinstance(ins, Barrier):
                break
            if isinstance(ins, Store):
                stored.add(ins.tensor)
    return stored


def test_full_recomputation_reruns_every_block_before_its_training_ops() -> None:
    names = labels(lowered("full")[1])
    forward = [n.split(":")[0] for n in names if not n.startswith(("recompute:", "backward:"))]
    rerun = [n.split(":")[1] for n in names if n.startswith("recompute:")]
    assert sorted(set(rerun)) == sorted(set(forward))
    for k, name in enumerate(names[:-1]):
        if not name.startswith("recompute:") or names[k + 1].startswith("recompute:"):
            continue
        block = name.split(":")[1]
        assert names[k + 1].startswith("backward:"), names
        assert names[k + 1].removeprefix("backward:") in block.split(".."), names
    assert not any(name.startswith("recompute:") for name in labels(lowered("keep")[1]))


def test_recomputed_blocks_store_only_what_leaves_them() -> None:
    full, keep = forward_stores(lowered("full")[1]), forward_stores(lowered("keep")[1])
    assert full < keep
    # The stem's convolution and batchnorm results are read only inside the stem's block
    # and by its training ops: recomputed, not stored.
    assert {"stem.conv_bn.y", "stem.conv_bn"} <= keep - full
    assert "stem" in full  # the block's output, which later blocks read


@pytest.mark.parametrize("recompute", ["full", "keep"])
def test_training_step_matches_reference(recompute: str) -> None:
    report = check(lowered(recompute)[0])
    bad = [c.name for c in report.comparisons if not c.ok]
    assert len(report.comparisons) == 41
    assert not bad, bad
