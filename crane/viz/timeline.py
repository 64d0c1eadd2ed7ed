"""A schedule as time: when each state of each ``segment.block`` runs and on which tiles.

Blocks run one after another in the order listed (schedules of several functions too).
A state's duration is the cost model's latency of that state
(``crane.schedule.evaluate.state_latencies``) for the plan the block stands for. The plan
is rebuilt from the block's attributes: its layers give the scheduler's ``Block`` (from the
workload of the scheduled ``graph.func``, ``crane.mapping.from_schedule.block_of``), the
``workloads`` row gives each state's sub-batches, and the ``tiles`` row names the tile split
(``crane.schedule.options.state_options``) that runs them. Whether the block's input or
output stays in SRAM across its boundary is not stored; both are tried and the variant whose
total equals the block's recorded ``latency_cycles`` is kept.

When the states do not add up to the recorded latency (a training forward block also
writes the activations it saves, overlapped with its states, which can make it DRAM-bound
as a whole), the states are stretched in proportion so that the block spans its recorded
latency; ``BlockSpan.stretch`` says by how much. A block of a group records the latency
of all its runs; its states are drawn once, stretched over them (``stretch`` is then about
the number of runs).

Tiles come from the ``map`` pass's ``placement`` when present, else from the cost model's
regions (contiguous runs along the snake path, ``crane.cost.placement``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from crane.cost.workload import Workload
from crane.dialects.segment import BlockOp
from crane.hardware.machine import Machine
from crane.ir.attributes import DenseIntsAttr, FloatAttr, IntAttr
from crane.ir.core import Operation
from crane.mapping.from_schedule import block_of
from crane.schedule.block import Block
from crane.schedule.evaluate import Plan, state_cost, state_latencies
from crane.schedule.from_graph import trains
from crane.schedule.options import StateOption, state_options
from crane.viz.source import (
    PictureError,
    func_name,
    funcs,
    machine,
    require_schedules,
    snake_tile,
    workloads,
)

EXACT = 1e-9
"""Relative difference below which the rebuilt plan reproduces the recorded latency."""


@dataclass(frozen=True, slots=True)
class ColumnRun:
    """One sub-block (column) active in a state, and the tiles it runs on."""

    column: int
    layer: str
    tiles: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class StateSpan:
    """One state of a block on the time axis (cycles from the start of the run)."""

    state: int
    start: float
    cycles: float
    subbatches: int
    columns: tuple[ColumnRun, ...]

    @property
    def stop(self) -> float:
        return self.start + self.cycles


@dataclass(frozen=True, slots=True)
class BlockSpan:
    """One ``segment.block`` on the time axis."""

    index: int
    """Position in execution order over the whole module (0-based)."""
    func: str
    label: str
    phase: str
    layers: tuple[str, ...]
    start: float
    cycles: float
    """The block's recorded ``latency_cycles`` (the cost model's sum when not recorded)."""
    stretch: float
    """Recorded latency / sum of the cost model's state latencies (1.0 when they agree)."""
    mapped: bool
    """True when the tiles are the ``map`` pass's placement, False for cost-model regions."""
    states: tuple[StateSpan, ...]

    @property
    def stop(self) -> float:
        return self.start + self.cycles


@dataclass(frozen=True, slots=True)
class Step:
    """Time a schedule spends outside its blocks (a training step's optimizer update)."""

    func: str
    label: str
    start: float
    cycles: float

    @property
    def stop(self) -> float:
        return self.start + self.cycles


@dataclass(frozen=True, slots=True)
class Timeline:
    """Every block of every schedule of a module, in execution order."""

    machine: Machine
    funcs: tuple[str, ...]
    blocks: tuple[BlockSpan, ...]
    steps: tuple[Step, ...] = ()
    """What each schedule's recorded latency has beyond its blocks, after them."""

    @property
    def total_cycles(self) -> float:
        ends = [b.stop for b in self.blocks] + [s.stop for s in self.steps]
        return max(ends, default=0.0)

    @property
    def mapped(self) -> bool:
        return all(b.mapped for b in self.blocks)


def _int(op: Operation, name: str) -> int:
    attr = op.attributes.get(name)
    return attr.value if isinstance(attr, IntAttr) else 0


def _float(op: Operation, name: str) -> float:
    attr = op.attributes.get(name)
    return float(attr.value) if isinstance(attr, FloatAttr | IntAttr) else 0.0


def _ints(op: Operation, name: str) -> tuple[int, ...]:
    attr = op.attributes.get(name)
    return tuple(attr) if isinstance(attr, DenseIntsAttr) else ()


def _counts(option: StateOption, n: int) -> tuple[int, ...]:
    return tuple(option.region(j).count if j in option.columns else 0 for j in range(n))


def _compositions(total: int, parts: int) -> list[tuple[int, ...]]:
    """Every way to write ``total`` as ``parts`` non-negative counts."""
    if parts == 1:
        return [(total,)]
    return [(k, *rest) for k in range(total, -1, -1) for rest in _compositions(total - k, parts - 1)]


def _rows(block: Block, op: BlockOp, state: int, count: int,
          target: Machine) -> list[tuple[int, ...]]:
    """Mixes of one state whose dominant split (the first with the most sub-batches, as
    ``crane.passes.segment.tile_split`` records it) has the recorded tile counts; the
    mix with every sub-batch on that split first."""
    options = state_options(block, state, _int(op, "subbatch"), target) if count else ()
    if not count:
        return [()]
    recorded = op.tile_split()[state]
    matching = [k for k, o in enumerate(options) if _counts(o, block.n) == recorded]
    if not matching:
        return []
    rows = [row for row in _compositions(count, len(options))
            if row.index(max(row)) == matching[0]]
    return sorted(rows, key=lambda row: -row[matching[0]])


CANDIDATE_LIMIT = 50_000
"""Partial sums kept while matching a block's latency (beyond: the dominant mix is kept)."""

Mix = tuple[tuple[int, ...], ...]


def _plan(block: Block, op: BlockOp, mix: Mix) -> Plan:
    fused = tuple(bool(f) for f in _ints(op, "fused"))
    return Plan(block, _int(op, "subbatch"), _int(op, "subbatches"), mix, fused)


def _exact_mix(block: Block, op: BlockOp, rows: list[list[tuple[int, ...]]],
               target: Machine) -> Mix | None:
    """A mix whose state latencies add up to the recorded latency, or None.

    States cost independently, so this is a search over partial sums, pruned above the
    target (latencies are non-negative), trying each state's dominant row first."""
    dominant = tuple(r[0] for r in rows)
    recorded = op.latency_cycles
    tolerance = EXACT * max(recorded, 1.0)
    partial: list[tuple[float, Mix]] = [(0.0, ())]
    for i, choices in enumerate(rows):
        costs = [(state_cost(_plan(block, op, (*dominant[:i], row, *dominant[i + 1:])), i,
                             target).latency_cycles, row) for row in choices]
        partial = [(total + cycles, (*mix, row)) for total, mix in partial
                   for cycles, row in costs if total + cycles <= recorded + tolerance]
        if len(partial) > CANDIDATE_LIMIT:
            return None
    return next((mix for total, mix in partial if abs(total - recorded) <= tolerance), None)


def block_plan(op: BlockOp, workload: Workload | None, target: Machine) -> Plan | None:
    """The scheduler's plan a ``segment.block`` stands for, or None if it cannot be rebuilt.

    The boundary variant and mix reproducing the recorded latency win; failing that, the
    variant whose dominant mix comes closest, preferring those not above the recorded
    latency (a training step's forward block records its states plus the activations and
    checkpoint it saves, never less)."""
    base = block_of(workload, op.layer_names)
    if base is None:
        return None
    recorded = op.latency_cycles / op.runs
    closest: tuple[tuple[bool, float], Plan] | None = None
    for in_sram, out_sram in ((False, False), (True, False), (False, True), (True, True)):
        block = replace(base, in_from_sram=in_sram, out_to_sram=out_sram)
        rows = [_rows(block, op, i, c, target) for i, c in enumerate(_ints(op, "workloads"))]
        if any(not r for r in rows):
            continue
        plan = _plan(block, op, tuple(r[0] for r in rows))
        modelled = sum(state_latencies(plan, target))
        error = abs(modelled - recorded) / max(recorded, 1.0)
        if error <= EXACT:
            return plan
        exact = _exact_mix(block, op, rows, target)
        if exact is not None:
            return _plan(block, op, exact)
        rank = (modelled > recorded, error)
        if closest is None or rank < closest[0]:
            closest = (rank, plan)
    return closest[1] if closest is not None else None


def _tiles(op: BlockOp, plan: Plan, state: int, target: Machine) -> list[tuple[int, ...]]:
    """Tile ids of every column in ``state``: the placement, else the cost-model regions."""
    n = len(op.layer_names)
    mapping = op.mapping()
    if mapping is not None:
        return [tuple(ids) for ids in mapping[0][state * n: (state + 1) * n]]
    out: list[tuple[int, ...]] = [() for _ in range(n)]
    options = state_options(plan.block, state, plan.subbatch, target)
    for option, count in zip(options, plan.mix[state], strict=True):
        if not count:
            continue
        for j, region in zip(option.columns, option.regions, strict=True):
            out[j] = tuple(snake_tile(k, target.cols) for k in range(region.start, region.stop))
    return out


def block_span(index: int, func: str, op: BlockOp, plan: Plan, start: float,
               target: Machine) -> BlockSpan:
    """The block's states laid out from ``start`` (stretched to the recorded latency)."""
    latencies = state_latencies(plan, target)
    modelled = sum(latencies)
    recorded = op.latency_cycles or modelled
    stretch = recorded / modelled if modelled > 0 else 1.0
    states: list[StateSpan] = []
    at = start
    for i, (cycles, count) in enumerate(zip(latencies, plan.workloads, strict=True)):
        if not count:
            continue
        tiles = _tiles(op, plan, i, target)
        runs = tuple(ColumnRun(j, name, tiles[j])
                     for j, name in enumerate(op.layer_names) if tiles[j])
        states.append(StateSpan(i, at, cycles * stretch, count, runs))
        at += cycles * stretch
    return BlockSpan(index, func, op.label, op.phase, op.layer_names, start, recorded,
                     stretch, op.mapping() is not None, tuple(states))


def timeline(module: Operation) -> Timeline:
    """The module's schedules as a timeline; ``PictureError`` when there is none or a block
    cannot be costed (its layers are not those of the scheduled function)."""
    found = require_schedules(module, "Gantt chart")
    target = machine(module)
    loads = workloads(module, target)
    training = {func_name(f) for f in funcs(module) if trains(f)}
    spans: list[BlockSpan] = []
    steps: list[Step] = []
    at = 0.0
    for schedule in found:
        began, workload = at, loads.get(schedule.func_name)
        for op in schedule.blocks:
            plan = block_plan(op, workload, target)
            if plan is None:
                raise PictureError(f"cannot cost block '{op.label}' of @{schedule.func_name}: "
                                   "its layers and tile split are not a schedule of that "
                                   "function's workload on this machine")
            spans.append(block_span(len(spans), schedule.func_name, op, plan, at, target))
            at = spans[-1].stop
        rest = _float(schedule, "latency_cycles") - (at - began)
        if rest > EXACT * max(at - began, 1.0):
            label = ("optimizer update" if schedule.func_name in training
                     else "outside the blocks")
            steps.append(Step(schedule.func_name, label, at, rest))
            at += rest
    return Timeline(target, tuple(s.func_name for s in found), tuple(spans), tuple(steps))


def tile_rows(spans: Sequence[BlockSpan]) -> int:
    """How many tile rows a chart needs (the highest tile id used, plus one)."""
    used = [t for b in spans for s in b.states for c in s.columns for t in c.tiles]
    return max(used) + 1 if used else 0
