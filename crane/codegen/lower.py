"""Lower one scheduled and placed ``graph.func`` to a program per mesh tile.

    tile_module = lower_func(func, schedule, machine)

``schedule`` is the function's ``segment.schedule`` with ``placement``/``ports`` on every
block (the ``map`` pass). The steps are the modules of this package: ownership (which
layer runs each op), plan (phases and items), emit (instructions). The result holds the
programs as records (``crane.codegen.program``) and the DRAM tensors they name: network
inputs and outputs under the reference interpreter's names, weights and optimizer state
under their ``name`` attributes, spilled activations and gradients under their values'
names.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import replace

from crane.autodiff import is_training_step
from crane.codegen.context import Context
from crane.codegen.emit import Emitter
from crane.codegen.ownership import CodegenError, Ownership, owners
from crane.codegen.plan import (
    Home,
    Phase,
    PlacedBlock,
    Runs,
    backward_phases,
    block_phase,
    block_phases,
    forward_phases,
    placement_of,
    recomputed_blocks,
    widest,
    with_recomputation,
    with_refresh,
)
from crane.codegen.program import TileModule
from crane.codegen.rules import shape_of, whole_batch
from crane.cost.layer import HELD_SHARE, STREAM_SHARE, TRAINING_STEP_SHARE, WEIGHT_SLICE_SHARE
from crane.dialects.graph import FuncOp, LayerOp, ReturnOp
from crane.dialects.graph_batch import graph_batch, rebatched
from crane.dialects.graph_grad import AccumulateOp
from crane.dialects.layers.definition import Lowering
from crane.dialects.segment import BlockOp, ScheduleOp
from crane.hardware.machine import Machine
from crane.ir.attributes import DenseIntsAttr, IntAttr, StringAttr
from crane.ir.core import Operation, Value


def output_names(func: FuncOp) -> dict[Value, str]:
    """Returned values -> names, as ``crane.exec.interpreter.run_function`` keys them."""
    names: dict[Value, str] = {}
    taken: list[str] = []
    for op in func.body.ops:
        if not isinstance(op, ReturnOp):
            continue
        for index, value in enumerate(op.operands):
            name = value.name_hint or f"output{index}"
            name = name if name not in taken else f"{name}#{index}"
            taken.append(name)
            names.setdefault(value, name)
    return names


def _batch(func: FuncOp, schedule: ScheduleOp) -> tuple[FuncOp, int]:
    attr = schedule.attributes.get("batch")
    wanted = attr.value if isinstance(attr, IntAttr) else graph_batch(func)
    copy = rebatched(func, wanted)
    if copy is None:
        raise CodegenError(f"the schedule's batch {wanted} is not a multiple of the graph's "
                           f"batch {graph_batch(func)}", schedule)
    return copy, wanted


def _check_mode(func: FuncOp, schedule: ScheduleOp, training: bool) -> None:
    """A training schedule lowers a training step, an inference schedule a network."""
    planned = any(block_phase(b) != "forward" for b in schedule.blocks)
    if planned and not training:
        raise CodegenError(f"the schedule of @{schedule.func_name} plans a training step but the "
                           "function is not one: run 'autodiff' before 'segment' (as "
                           "'lower-to-tile' does), or schedule inference with "
                           "'segment{mode=inference}'", func)
    if training and not planned:
        raise CodegenError(f"@{schedule.func_name} is a training step but its schedule plans "
                           "inference: re-run 'segment' after 'autodiff'", func)


def _fused(block: BlockOp) -> list[bool]:
    attr = block.attributes.get("fused")
    return [bool(v) for v in attr] if isinstance(attr, DenseIntsAttr) else []


def _check_layers(own: Ownership, block_of: dict[str, int], schedule: ScheduleOp) -> None:
    for op, layer in own.forward:
        if layer not in block_of:
            raise CodegenError(f"layer '{layer}' is not in the schedule of @{schedule.func_name} "
                               "(was the schedule made for this graph? re-run 'segment')", op)


def _accumulate_owners(own: Ownership, block_of: dict[str, int]) -> list[tuple[Operation, str]]:
    """An accumulation runs with the operand produced last in backward order (lowest block)."""
    layer = {**dict(own.forward), **dict(own.backward)}
    moved = []
    for op, name in own.backward:
        if isinstance(op, AccumulateOp):
            sources = [layer[v.owner_op] for v in op.operands if v.owner_op in layer]
            name = min(sources, key=lambda s: block_of[s]) if sources else name
        moved.append((op, name))
    return moved


def lower_func(func: FuncOp, schedule: ScheduleOp, machine: Machine,
               fit_sram: bool = False) -> TileModule:
    """Programs for every mesh tile running ``func`` as ``schedule`` says.

    ``fit_sram`` lets a forward op whose preferred split would read and write more than
    half a tile's SRAM per part take the next split that fits (often space instead of
    channel), at the price of more transfers between differently split ops.
    """
    training = is_training_step(func)
    _check_mode(func, schedule, training)
    original = func
    func, batch = _batch(func, schedule)
    blocks = [b for b in schedule.blocks if block_phase(b) == "forward"]
    block_of = {name: b for b, block in enumerate(blocks) for name in block.layer_names}
    own = owners(func, training)
    if training and any(layer not in block_of for _, layer in own.forward):
        own = owners(func, training, forward_only=False)
    _check_layers(own, block_of, schedule)
    ops_of: dict[str, list[Operation]] = {}
    for op, layer in own.forward:
        ops_of.setdefault(layer, []).append(op)
    fused: dict[str, bool] = {}
    homes: dict[str, Home] = {}
    placed: list[PlacedBlock] = []
    for block in blocks:
        table, _ = placement_of(block, machine.tiles, len(machine.dram_ports))
        for j, (name, flag) in enumerate(zip(block.layer_names, _fused(block), strict=False)):
            fused[name] = flag
            homes[name] = widest(table, j)
        placed.append((block, table, _runs(block, ops_of, batch, training)))
    phases = forward_phases(placed, batch)
    backward = _accumulate_owners(own, block_of)
    rank = {name: len(blocks) - b for name, b in block_of.items()}
    _backward_homes(schedule, machine, homes, rank)
    again = recomputed_blocks(schedule.blocks, blocks, batch)
    rerun = {b: _recompute_phases(runs, len(blocks) + b, machine, batch, ops_of, training)
             for b, runs in again.items()}
    recomputed = frozenset(name for b in again for name in blocks[b].layer_names)
    hold_budget = int(HELD_SHARE * machine.sram_bytes)
    refreshed = _refreshed(own, ops_of, recomputed, homes, hold_budget // machine.data_bytes) \
        if training else frozenset()
    phases += with_recomputation(
        with_refresh(backward_phases(backward, rank, homes, block_of, batch), refreshed), rerun,
        {b: blocks[b].layer_names for b in again})
    layer_of = {**dict(own.forward), **dict(backward)}
    ctx = Context(batch, training, layer_of, fused, block_of, output_names(func),
                  frozenset(op for op, _ in backward),
                  budget=machine.sram_bytes // 2 if fit_sram else 0,
                  elem_bytes=machine.data_bytes,
                  chunk_budget=int(WEIGHT_SLICE_SHARE * machine.sram_bytes),
                  step_budget=int(STREAM_SHARE * machine.sram_bytes),
                  training_budget=int(TRAINING_STEP_SHARE * machine.sram_bytes), hold_budget=hold_budget,
                  copy_budget=machine.sram_bytes // 2, retain_budget=machine.sram_bytes // 4,
                  anchors=own.anchors, dims=own.dims,
                  kept=frozenset(name for block in blocks for name in kept_outputs(block)),
                  groups={b: block.group for b, block in enumerate(blocks)
                          if block.group is not None},
                  backward_phase={op: k for k, phase in enumerate(phases) for op in phase.ops},
                  recomputed=recomputed, refreshed=refreshed,
                  ports=tuple(machine.nearest_port(t) for t in range(machine.tiles)))
    emitter = Emitter(machine.rows, machine.cols, ctx)
    for phase in phases:
        emitter.run_phase(phase, ops_of)
    sym = original.attributes.get("sym_name")
    label = sym.value if isinstance(sym, StringAttr) else ""
    return TileModule(label, emitter.programs, list(emitter.tensors.values()))


REFRESHED_KINDS = frozenset({Lowering.CONV, Lowering.LINEAR, Lowering.MATMUL})
"""Lowering classes of a layer's main op whose later ops codegen recomputes in backward."""


def _refreshed(own: Ownership, ops_of: dict[str, list[Operation]], recomputed: frozenset[str],
               homes: Mapping[str, Home], hold: int) -> frozenset[str]:
    """Layers whose internals backward recomputes: made by a ``REFRESHED_KINDS`` op followed
    by more ops, in blocks that are not recomputed as a whole, whose results each tile of
    the layer can hold (``hold`` elements; the recomputed results stay on chip for the
    training ops, so a layer bigger than that stores them in forward instead)."""
    return frozenset(layer for op, layer in own.anchors.items()
                     if isinstance(op, LayerOp) and op.kind.lowering in REFRESHED_KINDS
                     and layer not in recomputed and len(ops_of.get(layer, ())) > 1
                     and _per_tile(ops_of[layer], homes.get(layer)) <= hold)


def _per_tile(ops: Sequence[Operation], home: Home | None) -> float:
    """Elements of the largest result of ``ops`` per tile of ``home``."""
    tiles = max(1, len(home.tiles)) if home is not None else 1
    return max((math.prod(shape_of(r)) for op in ops for r in op.results), default=0) / tiles


def _recompute_phases(blocks: Sequence[BlockOp], index: int, machine: Machine, batch: int,
                      ops_of: dict[str, list[Operation]], training: bool) -> list[Phase]:
    """The phases of the ``bw2`` blocks recomputing one forward block (block index ``index``,
    past the forward ones, so the forward run's pieces are not taken for this run's)."""
    phases: list[Phase] = []
    for block in blocks:
        table, _ = placement_of(block, machine.tiles, len(machine.dram_ports))
        phases += [replace(phase, label=f"recompute:{phase.label}", recompute=True)
                   for phase in block_phases(block, index, table, batch,
                                             _runs(block, ops_of, batch, training))]
    return phases


def kept_outputs(block: BlockOp) -> list[str]:
    """Columns whose output the block's memory table leaves in SRAM after its last state
    (for consumers in later blocks)."""
    tables = block.tables()
    if not tables.sct.values:
        return []
    done, sram = tables.sct.values[-1], tables.met.sram[-1]
    return [name for name, high, low in zip(block.layer_names, done, sram, strict=False) if low < high]


def _backward_homes(schedule: ScheduleOp, machine: Machine, homes: dict[str, Home],
                    rank: dict[str, int]) -> None:
    """Homes and ranks of layers with a ``<layer>.grad`` column in a placed backward block."""
    moved: set[str] = set()
    for position, block in enumerate(schedule.blocks):
        if block_phase(block) == "forward" or "placement" not in block.attributes:
            continue
        table, _ = placement_of(block, machine.tiles, len(machine.dram_ports))
        for j, name in enumerate(block.layer_names):
            layer = name.removesuffix(".grad")
            if name == layer or layer in moved or layer not in homes or not widest(table, j).tiles:
                continue
            moved.add(layer)
            homes[layer] = widest(table, j)
            rank[layer] = -len(schedule.blocks) + position


def _runs(block: BlockOp, ops_of: dict[str, list[Operation]], batch: int,
          training: bool) -> Runs | None:
    """Op runs of each layer when the block must go layer by layer (else None)."""
    sub = block.attributes.get("subbatch")
    if isinstance(sub, IntAttr) and sub.value >= batch:
        return None
    flags = {name: [whole_batch(op, training) for op in ops_of.get(name, ())]
             for name in block.layer_names}
    if not any(any(f) for f in flags.values()):
        return None
    runs: dict[str, list[tuple[int, int, bool]]] = {}
    for name, marks in flags.items():
        for k, mark in enumerate(marks):
            last = runs.setdefault(name, [])
            if last and last[-1][2] == mark:
                last[-1] = (last[-1][0], k + 1, mark)
            else:
                last.append((k, k + 1, mark))
    return runs


def scheduled_funcs(body: Sequence[Operation]) -> list[tuple[FuncOp, ScheduleOp | None]]:
    """Every ``graph.func`` of a module body with its ``segment.schedule`` (None if absent)."""
    schedules = {op.func_name: op for op in body if isinstance(op, ScheduleOp)}
    found = []
    for op in body:
        if isinstance(op, FuncOp):
            name = op.attributes.get("sym_name")
            key = name.value if isinstance(name, StringAttr) else ""
            found.append((op, schedules.get(key)))
    return found
