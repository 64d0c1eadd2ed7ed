"""Codegen follows the training schedule's recomputation.

With ``recompute=full`` every forward block retains no sub-batch: codegen runs each block
again (``recompute:`` phases) before its layers' training ops, and the forward pass stores
only what leaves a block; with ``keep`` no block is recomputed, the forward pass stores
each layer's output and the training ops' other reads, except the intermediates of conv
layers, which their first backward phase recomputes (``+refresh``). Both give the
reference interpreter's results.
"""

from __future__ import annotations

from functools import cache

import pytest

from crane.codegen.lower import lower_func
from crane.codegen.program import Barrier, Store, TileModule
from crane.codegen.to_ir import tile_ops
from crane.dialects.builtin import ModuleOp
from crane.exec.tile_sim.check import check

from .support import prepared


@cache
def lowered(recompute: str) -> tuple[ModuleOp, TileModule]:
    module, func, schedule, machine = prepared("tiny_resnet", 2, 2, True, recompute=recompute)
    made = lower_func(func, schedule, machine)
    for op in tile_ops(made):
        module.regions[0].blocks[0].append(op)
    return module, made


def labels(made: TileModule) -> list[str]:
    return [ins.label for ins in made.programs[0].body if isinstance(ins, Barrier)]


def forward_stores(made: TileModule) -> set[str]:
    """Tensors stored by the forward phases (before the first training phase), all tiles."""
    stored: set[str] = set()
    for program in made.programs:
        phase: set[str] = set()
        for ins in program.body:
            if isinstance(ins, Store):
                phase.add(ins.tensor)
            if not isinstance(ins, Barrier):
                continue
            if ins.label.startswith(("backward:", "recompute:")):
                break
            stored |= phase
            phase = set()
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
    # The adds' results feed only their relus and the relus' gradients: recomputed with
    # the block under full, stored under keep.
    assert {"r1.add", "r2.add"} <= keep - full
    assert {"stem", "r1", "r2"} <= full  # blocks' outputs, which later blocks read


def test_kept_conv_layers_store_only_their_output() -> None:
    """Under keep, a conv layer's first backward phase runs its conv, batchnorm and relu
    again, so the forward pass stores the layer's output and not its intermediates."""
    module = lowered("keep")[1]
    stored = forward_stores(module)
    assert {"stem", "r1.a", "r2.a", "r2.b"} <= stored
    assert not stored & {"stem.conv_bn.y", "stem.conv_bn", "r1.a.conv_bn.y", "r2.a.conv_bn", "r2.b.y"}
    refreshed = {n.removeprefix("backward:").removesuffix("+refresh") for n in labels(module)
                 if n.endswith("+refresh")}
    assert {"stem.conv_bn.y", "r1.a.conv_bn.y", "r2.a.conv_bn.y", "r2.b.y"} <= refreshed
    assert "r1.add" not in refreshed  # an add with its relu: nothing to save by rerunning


@pytest.mark.parametrize("recompute", ["full", "keep"])
def test_training_step_matches_reference(recompute: str) -> None:
    report = check(lowered(recompute)[0])
    bad = [c.name for c in report.comparisons if not c.ok]
    assert len(report.comparisons) == 41
    assert not bad, bad
