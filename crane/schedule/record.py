"""A scheduled block and the ``segment.block`` recording it, both ways, without searching.

:func:`plan_facts` is what the ``segment`` pass records of a plan beside its tables (the mix
of tile splits, the SRAM boundary, the cost model's state latencies, snake regions and
partitions; ``crane.dialects.segment_facts``). :func:`plan_of` rebuilds the plan a recorded
block stands for from those facts and the scheduled function's workload, so a later pass or
a picture can re-cost it exactly; :func:`block_of` finds the scheduler's block of a block's
layers.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from crane.cost.utilisation import preferred_partition
from crane.cost.workload import Dims, Workload
from crane.dialects.segment import BlockOp
from crane.dialects.segment_facts import PlanFacts
from crane.hardware.machine import Machine
from crane.ir.attributes import DenseIntsAttr, IntAttr
from crane.schedule.block import Block, gradient_block
from crane.schedule.evaluate import Plan, state_latencies
from crane.schedule.options import state_options

GRAD_SUFFIX = ".grad"
"""Column names of a training schedule's back-propagation blocks: ``<layer>.grad``."""

IDLE_PARTITION = (1, 1, 1, 1)


def block_of(workload: Workload | None, layers: Sequence[str],
             from_saved: bool = False) -> Block | None:
    """The scheduler's block of these layers (contiguous in the workload), or None.

    Columns all named ``<layer>.grad`` (a training schedule's back-propagation blocks) are
    the gradient block of those forward layers, in reverse order
    (``crane.schedule.block.gradient_block``; ``from_saved`` for a BW1 block).
    """
    if workload is None or not layers:
        return None
    if all(n.endswith(GRAD_SUFFIX) for n in layers):
        forward = block_of(workload, [n[: -len(GRAD_SUFFIX)] for n in reversed(layers)])
        return gradient_block(forward, from_saved) if forward is not None else None
    try:
        start = workload.position(layers[0])
    except KeyError:
        return None
    if start + len(layers) > len(workload):
        return None
    block = Block.of(workload, start, start + len(layers))
    return block if tuple(lay.name for lay in block.layers) == tuple(layers) else None


def _regions(plan: Plan, state: int, machine: Machine) -> tuple[tuple[int, int], ...]:
    """(first, count) of every column's snake run in ``state`` over the splits it uses."""
    runs = [(0, 0)] * plan.block.n
    if not any(plan.mix[state]):
        return tuple(runs)
    options = state_options(plan.block, state, plan.subbatch, machine)
    for option, count in zip(options, plan.mix[state], strict=True):
        for j, region in zip(option.columns, option.regions, strict=True):
            runs[j] = (region.start, region.count) if count else runs[j]
    return tuple(runs)


def _partitions(plan: Plan, regions: tuple[tuple[int, int], ...]) -> tuple[tuple[int, int, int, int], ...]:
    return tuple(_partition(layer.dims, plan.subbatch, count) if count else IDLE_PARTITION
                 for layer, (_, count) in zip(plan.block.layers, regions, strict=True))


def _partition(dims: Dims, subbatch: int, tiles: int) -> tuple[int, int, int, int]:
    """The cost model's split of one sub-batch of a layer over ``tiles`` tiles."""
    split = preferred_partition((subbatch, *dims.partitionable), tiles, (dims.c, dims.r, dims.s))
    return (split.kb, split.kk, split.kh, split.kw)


def plan_facts(plan: Plan, machine: Machine) -> PlanFacts:
    """What a ``segment.block`` records of ``plan`` beside its tables."""
    states = range(len(plan.mix))
    regions = tuple(_regions(plan, i, machine) for i in states)
    return PlanFacts(
        mix=tuple(tuple(row) for row in plan.mix),
        boundary=(plan.block.in_from_sram, plan.block.out_to_sram),
        state_cycles=state_latencies(plan, machine),
        regions=regions,
        partitions=tuple(_partitions(plan, row) for row in regions),
        dram_in=plan.block.dram_in,
        dram_out=plan.block.dram_out,
    )


def plan_of(op: BlockOp, workload: Workload | None) -> Plan | None:
    """The plan a recorded block stands for; None when it records no facts or its layers
    are not a block of ``workload``."""
    facts, base = op.plan_facts(), block_of(workload, op.layer_names, op.phase == "bw1")
    if facts is None or base is None:
        return None
    block = replace(base, in_from_sram=facts.boundary[0], out_to_sram=facts.boundary[1],
                    dram_in=facts.dram_in, dram_out=facts.dram_out)
    fused = op.attributes.get("fused")
    subbatch, q = op.attributes.get("subbatch"), op.attributes.get("subbatches")
    assert isinstance(subbatch, IntAttr) and isinstance(q, IntAttr) and isinstance(fused, DenseIntsAttr)
    return Plan(block, subbatch.value, q.value, facts.mix, tuple(bool(f) for f in fused))
