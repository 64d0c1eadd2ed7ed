"""``spatial-tile``: segmented fused-tiled execution of spatial chains, written out in
``graph`` IR (not to be confused with the ``tile`` dialect of per-tile programs)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated

from crane.autodiff import is_training_step
from crane.dialects.graph import FuncOp, LayerOp, WeightOp
from crane.dialects.hw import machine_of
from crane.frontend.units import BYTES, UnitError, convert, unit_def
from crane.hardware.machine import Machine
from crane.ir.attributes import DictAttr, IntAttr, StringAttr
from crane.ir.core import Operation
from crane.ir.types import TensorType
from crane.limits.ranges import Between, Checked
from crane.passes.context import PassContext
from crane.passes.pass_base import Pass
from crane.tiling.chains import Chain, find_chains
from crane.tiling.memory import CostModel, MemoryModel
from crane.tiling.plan import GIB, NoPlanFitsError, Plan, Planner
from crane.tiling.regions import Rect, split_grid
from crane.tiling.rewrite import TileError, check_grid, rewrite_segment

PLAN_ATTR = "tile_plan"
"""Function attribute of an automatic choice: the cap, the predicted peak and the segments."""

_SIZE = re.compile(r"\s*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([A-Za-z]+)?\s*")


@dataclass(frozen=True)
class SegmentSpec:
    """One segment to rewrite: ops ``[start, stop)`` of ``chain`` on a ``rows`` x ``cols`` grid."""

    chain: Chain
    start: int
    stop: int
    rows: int
    cols: int


class OptionError(ValueError):
    """Options that do not describe a tiling of this function."""


def parse_size(text: str) -> int:
    """Bytes of a size written like the ``.crn`` language's (``11GB``, ``10.5 GiB``, ``512 MiB``)."""
    match = _SIZE.fullmatch(text)
    if match is None:
        raise OptionError(f"memory-cap '{text}' is not a size (e.g. 11GB or 10.5GiB)")
    number, unit = match.groups()
    if unit is None:
        raise OptionError(f"memory-cap '{text}' needs a unit, e.g. 11GB or 10.5GiB")
    try:
        value = convert(float(number), unit_def(unit, None), BYTES, "memory-cap", text)
    except UnitError as problem:
        raise OptionError(problem.message) from None
    return int(value)


def explicit_segments(chains: Sequence[Chain], counts: Sequence[int],
                      grid: Sequence[int]) -> list[SegmentSpec]:
    """Segments from ``segments=`` (ops per segment along the chains) and ``grid=`` pairs."""
    spans: list[tuple[Chain, int, int]] = []
    todo = list(counts)
    for chain in chains:
        position = 0
        while position < len(chain.ops) and (todo or not counts):
            size = todo.pop(0) if counts else len(chain.ops)
            if size < 1 or position + size > len(chain.ops):
                first = chain.ops[position]
                raise OptionError(f"a segment of {size} ops does not fit the chain from "
                                  f"{_label(first)} ({first.name}): "
                                  f"{len(chain.ops) - position} ops left")
            spans.append((chain, position, position + size))
            position += size
    if todo:
        raise OptionError(f"segments= lists {len(counts)} segments, but the chains hold only "
                          f"{len(counts) - len(todo)}")
    if min(grid) < 1:
        raise OptionError(f"grid= values must be positive, got {','.join(map(str, grid))}")
    if len(grid) not in (2, 2 * len(spans)):
        raise OptionError(f"grid= needs one rows,cols pair for all segments or one per segment "
                          f"({len(spans)}), got {len(grid)} values")
    pairs = [(grid[0], grid[1])] * len(spans) if len(grid) == 2 else list(zip(grid[::2], grid[1::2], strict=True))
    return [SegmentSpec(c, a, b, r, k) for (c, a, b), (r, k) in zip(spans, pairs, strict=True)]


def rest_bytes(func: FuncOp, chain: Chain, optimizer_states: int) -> int:
    """Memory of the function outside ``chain``: the other weights with their gradients and
    optimizer state, and the outputs of every layer op outside ``chain``, kept for backward
    (ops of other chains are counted as if untiled)."""
    inside = {w for op in chain.ops for w in op.weights}
    weights = sum(_bytes(op) for op in func.body.ops if isinstance(op, WeightOp) and op.results[0] not in inside)
    outputs = sum(_bytes(op) for op in func.body.ops if isinstance(op, LayerOp) and op not in chain.ops)
    return weights * (2 + optimizer_states) + outputs


def _bytes(op: Operation) -> int:
    ttype = op.results[0].type
    return ttype.byte_size if isinstance(ttype, TensorType) else 0


def planned_segments(chain: Chain, plan: Plan) -> list[SegmentSpec]:
    """The checkpointed segments of a plan (stored ones are left as they are)."""
    return [SegmentSpec(chain, c.segment.start, c.segment.stop, c.segment.rows, c.segment.cols)
            for c in plan.choices if c.checkpointed]


def _label(op: LayerOp) -> str:
    """How messages name an op: its result's SSA name, else its op name."""
    hint = op.results[0].name_hint
    return f"%{hint}" if hint else op.name


def _batch(chain: Chain) -> int:
    ttype = chain.input.type
    return ttype.shape[0] if isinstance(ttype, TensorType) and ttype.shape else 1


def _element_bytes(chain: Chain) -> int:
    ttype = chain.input.type
    return ttype.element.byte_width if isinstance(ttype, TensorType) else 4


@dataclass(frozen=True)
class SpatialTile(Pass):
    """Split spatial chains into tiles computed patch by patch (segmented fused tiling).

    The pass finds the *chains* of each ``graph.func`` (:mod:`crane.tiling.chains`): paths
    of ``conv2d``, ``max_pool2d`` / ``avg_pool2d`` (no ``ceil_mode``) and activations
    (``relu``, ``gelu``, ... every kind declared pointwise) on NCHW tensors, each feeding
    only the next. Those are the ops whose output pixel reads a bounded window of the same
    sample, so a patch of the output needs only a patch (plus halo) of the input.
    Everything else ends a chain: batch norm (training statistics span the whole image),
    layer norm and softmax (normalise along an axis), linear, matmul, flatten and reshape
    (mix all positions), dropout (one mask for the whole tensor), add/mul (a second input)
    and global pooling; each kind says why (``LayerKind.tiling``).

    A chain is cut into *segments*; a segment's output H x W is split into a grid (sizes
    within one of each other, so 10 rows on 3 tiles are 4, 3, 3). For each tile the pass
    derives every op's exact input region (any kernel, stride, dilation, padding:
    :mod:`crane.tiling.regions`) and emits ``graph.slice`` (H, then W) of the segment
    input with the halo, a copy of every op of the segment whose ``padding`` is the
    tile's border padding (zero inside the image), and ``graph.concat`` (W within a grid
    row, then H) to reassemble the output. Patch ops carry ``tile = {segment, patch}`` and
    ``recompute = "s<seg>.r<row>c<col>"``: keep only the segment input and recompute the
    patch in backward, which ``autodiff`` honours (:mod:`crane.autodiff.recompute`).

    Choice of segments and grids:

    * explicit: ``spatial-tile{grid=2,3}`` tiles every chain as one segment on 2 x 3 tiles;
      ``spatial-tile{segments=5,4 grid=4,4,2,2}`` cuts the first chain(s) into segments of 5 and
      4 ops (a segment may not cross a chain's end), with one rows,cols pair per segment;
    * automatic (no ``grid``): per chain, :class:`crane.tiling.plan.Planner` picks the
      fastest segmentation and grids whose predicted training peak (a PyTorch-style
      memory model at the graph's batch and element size) fits ``memory-cap`` (e.g. ``11GB``) or else the DRAM
      capacity of the module's ``hw.machine``. The rest of the function (other weights
      with their gradients and optimizer state, the outputs of the ops outside the
      chain) is charged against the cap. A cap no plan meets is an error naming the smallest
      memory that would work. The function gets a ``tile_plan`` attribute: the cap, the
      predicted peak and, per chain the plan changes (named by its first value), its
      segments (``[start,stop) rows x cols ckpt|stored``).

    Run it before ``autodiff``. Statistics: ``segments``, ``tiles``, ``ops added``.
    """

    name = "spatial-tile"
    summary = "split conv/pool chains into halo'd spatial tiles recomputed in backward"
    anchor = "graph.func"

    grid: tuple[Annotated[int, Between(1, 4096)], ...] = ()
    """rows,cols of every segment's tile grid, or one rows,cols pair per segment; empty: automatic."""
    segments: tuple[Annotated[int, Between(1, 1_000_000)], ...] = ()
    """Ops per segment, consecutive along the chains; empty: each chain is one segment (needs grid)."""
    memory_cap: Annotated[str, Checked(parse_size, "a size with a unit, e.g. 11GB or 10.5GiB",
                                       empty_ok=True)] = ""
    """Automatic choice: memory a training step may use (11GB, 10.5GiB); empty: the machine's DRAM."""
    optimizer_states: Annotated[int, Between(0, 16)] = 1
    """Automatic choice: optimizer tensors per weight (SGD with momentum 1, Adam 2)."""
    recompute: bool = True
    """Mark patches for recomputation in backward; false keeps their activations."""

    def run(self, op: Operation, ctx: PassContext) -> None:
        if not isinstance(op, FuncOp):
            return
        if is_training_step(op):
            ctx.emit_error(op, "spatial-tile runs on forward networks: put it before autodiff")
            return
        chains = find_chains(op)
        if not chains:
            return
        try:
            specs = self._choose(op, chains, ctx)
        except OptionError as problem:
            ctx.emit_error(op, str(problem))
            return
        if specs is not None:
            self._apply(specs, ctx)

    def _choose(self, func: FuncOp, chains: list[Chain], ctx: PassContext) -> list[SegmentSpec] | None:
        if self.grid:
            return explicit_segments(chains, self.segments, self.grid)
        if self.segments:
            raise OptionError("segments= needs grid= (or leave both out for the automatic choice)")
        return self._automatic(func, chains, ctx)

    def _automatic(self, func: FuncOp, chains: list[Chain], ctx: PassContext) -> list[SegmentSpec] | None:
        machine = _machine(func)
        cap = self._cap(machine)
        machine = machine or Machine.gpu11()
        memory = MemoryModel(dtype_bytes=_element_bytes(chains[0]), optimizer_states=self.optimizer_states,
                             batch=_batch(chains[0]))
        cost = CostModel.of_machine(machine.total_macs_per_cycle * machine.frequency_hz, machine.dram_bandwidth)
        specs: list[SegmentSpec] = []
        described: list[str] = []
        peak = 0
        for chain in chains:
            rest = rest_bytes(func, chain, self.optimizer_states)
            planner = Planner(chain.layers, chain.hw(0), memory, cost)
            try:
                plan = planner.search(cap - rest)
            except NoPlanFitsError as problem:
                need = problem.minimum_bytes + rest
                ctx.emit_error(chain.ops[0], f"no tiling plan fits the memory cap of {cap} bytes "
                               f"({cap / GIB:.2f} GiB); the smallest memory that would work is "
                               f"{need} bytes ({need / GIB:.2f} GiB)")
                return None
            specs += planned_segments(chain, plan)
            if any(c.checkpointed for c in plan.choices):
                described.append(f"{_label(chain.ops[0])}: {plan.describe()}")
            peak = max(peak, plan.peak_bytes + rest)
        func.attributes[PLAN_ATTR] = DictAttr.of({
            "memory_cap_bytes": IntAttr(cap), "predicted_peak_bytes": IntAttr(peak),
            "segments": StringAttr(" | ".join(described))})
        return specs

    def _cap(self, machine: Machine | None) -> int:
        if self.memory_cap:
            return parse_size(self.memory_cap)
        if machine is None or machine.dram_capacity_bytes is None:
            where = "the module names no machine" if machine is None else \
                f"machine '{machine.name}' has no dram_capacity"
            raise OptionError(f"no memory cap: {where}; give memory-cap= (e.g. 11GB) or an explicit grid=")
        return machine.dram_capacity_bytes

    def _apply(self, specs: list[SegmentSpec], ctx: PassContext) -> None:
        grids: list[tuple[Rect, ...]] = []
        for spec in specs:
            out_hw = spec.chain.hw(spec.stop)
            try:
                grids.append(split_grid(out_hw[0], out_hw[1], spec.rows, spec.cols))
                check_grid(spec.chain, spec.start, spec.stop, grids[-1])
            except TileError as problem:
                ctx.emit_error(problem.op, problem.message)
                return
            except ValueError as problem:
                ctx.emit_error(spec.chain.ops[spec.stop - 1], f"cannot tile this segment's output: {problem}")
                return
        # Checked first, so a bad segment leaves the function untouched.
        for index, (spec, grid) in enumerate(zip(specs, grids, strict=True)):
            done = rewrite_segment(spec.chain, spec.start, spec.stop, grid, index, self.recompute)
            ctx.statistic("segments")
            ctx.statistic("tiles", done.tiles)
            ctx.statistic("ops added", done.ops_added)


def _machine(func: FuncOp) -> Machine | None:
    """The machine of the enclosing module, if it names one."""
    module = func.parent_op
    return machine_of(module) if module is not None else None
