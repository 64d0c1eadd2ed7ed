"""A schedule as time: when each state of each ``segment.block`` runs and on which tiles.

Blocks run one after another in the order listed (schedules of several functions too). A
state's duration is the cost model's latency of that state, as the ``segment`` pass
recorded it (``state_cycles``, ``crane.dialects.segment_facts``): nothing is searched or
costed again here. A block must record its plan, and its layers must be those of the
scheduled function's workload.

When the states do not add up to the recorded latency (a training forward block also
writes the activations it saves, overlapped with its states, which can make it DRAM-bound
as a whole), the states are stretched in proportion so that the block spans its recorded
latency; ``BlockSpan.stretch`` says by how much. A block of a group records the latency
of all its runs; its states are drawn once, stretched over them (``stretch`` is then about
the number of runs).

Tiles come from the ``map`` pass's ``placement`` when present, else from the regions the
cost model used (contiguous runs along the snake path, recorded as ``regions``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from crane.cost.workload import Workload
from crane.dialects.segment import BlockOp
from crane.dialects.segment_facts import PlanFacts
from crane.hardware.machine import Machine
from crane.ir.attributes import DenseIntsAttr, FloatAttr, IntAttr
from crane.ir.core import Operation
from crane.schedule.from_graph import trains
from crane.schedule.record import block_of
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
"""Relative difference below which a schedule's recorded latency is its blocks' alone (no
step after them)."""


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


def _float(op: Operation, name: str) -> float:
    attr = op.attributes.get(name)
    return float(attr.value) if isinstance(attr, FloatAttr | IntAttr) else 0.0


def _ints(op: Operation, name: str) -> tuple[int, ...]:
    attr = op.attributes.get(name)
    return tuple(attr) if isinstance(attr, DenseIntsAttr) else ()


def _tiles(op: BlockOp, facts: PlanFacts, state: int, target: Machine) -> list[tuple[int, ...]]:
    """Tile ids of every column in ``state``: the placement, else the recorded regions."""
    n = len(op.layer_names)
    mapping = op.mapping()
    if mapping is not None:
        return [tuple(ids) for ids in mapping[0][state * n: (state + 1) * n]]
    return [tuple(snake_tile(k, target.cols) for k in range(first, first + count))
            for first, count in facts.regions[state]]


def block_span(index: int, func: str, op: BlockOp, facts: PlanFacts, start: float,
               target: Machine) -> BlockSpan:
    """The block's states laid out from ``start`` (stretched to the recorded latency)."""
    latencies = facts.state_cycles
    modelled = sum(latencies)
    recorded = op.latency_cycles or modelled
    stretch = recorded / modelled if modelled > 0 else 1.0
    states: list[StateSpan] = []
    at = start
    for i, (cycles, count) in enumerate(zip(latencies, _ints(op, "workloads"), strict=True)):
        if not count:
            continue
        tiles = _tiles(op, facts, i, target)
        runs = tuple(ColumnRun(j, name, tiles[j])
                     for j, name in enumerate(op.layer_names) if tiles[j])
        states.append(StateSpan(i, at, cycles * stretch, count, runs))
        at += cycles * stretch
    return BlockSpan(index, func, op.label, op.phase, op.layer_names, start, recorded,
                     stretch, op.mapping() is not None, tuple(states))


def _facts(op: BlockOp, func: str, workload: Workload | None) -> PlanFacts:
    """The block's recorded plan; ``PictureError`` when it has none or does not fit."""
    facts = op.plan_facts()
    if facts is None:
        raise PictureError(f"block '{op.label}' of @{func} records no plan (state_cycles, "
                           "regions...): schedule with the 'segment' pass")
    if block_of(workload, op.layer_names) is None:
        raise PictureError(f"cannot cost block '{op.label}' of @{func}: its layers and tile "
                           "split are not a schedule of that function's workload on this "
                           "machine")
    return facts


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
            facts = _facts(op, schedule.func_name, workload)
            spans.append(block_span(len(spans), schedule.func_name, op, facts, at, target))
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
