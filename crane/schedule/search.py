"""The search: blocks over a workload, each solved by a policy, combined on convex fronts.

The hierarchy is a sequence of blocks (contiguous runs of the topological order, at most
``max_block`` layers) run one after another; a dynamic program over the cut positions keeps,
for every prefix of the network, the lower-left convex hull of its (latency, energy)
schedules, so the final L^p E^q choice is exact over the blocks' candidate points (see
``_thin``; hulls beyond ``front_size`` points are thinned to bound the work). Data crossing a
cut stays in SRAM when the whole batch of it fits in half of the activation SRAM, else it
goes through DRAM; a result that went through DRAM is read from there by all its later
readers, however the later cuts are crossed (codegen holds on chip only what the producing
block kept).

With ``grouped``, a run of consecutive blocks may also form a *group*: a composite block
with its own sub-batch size G (a proper divisor of the batch) whose sub-blocks run one
after another on G samples, and the whole run repeats for the next G samples. Inside the
group a cut stays in SRAM when G samples of it fit, which is how early layers with large
activations avoid DRAM; the price is that the group's weights are read once per
repetition. A group is entered and left through DRAM, and its blocks have at most
``GROUP_BLOCK`` layers. The DP tracks, per cut, whether it is crossed at whole-batch scale,
through DRAM after a group, or inside a group of G.

Blocks are solved by a ``policy`` (``crane.schedule.policies``); identical blocks (same
shapes, different names) share one solve through a cache keyed by an anonymised block.
"""

from __future__ import annotations

import math
import multiprocessing
import os
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, replace
from functools import partial
from multiprocessing import get_context

from crane.cost.bounds import LowerBounds, lower_bounds
from crane.cost.workload import Workload
from crane.hardware.machine import Machine
from crane.schedule.block import Block, crossing_bytes
from crane.schedule.evaluate import BlockCost, Plan, evaluate, held_capacity
from crane.schedule.objective import Objective

BlockSolver = Callable[[Block, int, Machine, Objective, float], list[tuple[Plan, BlockCost]]]
"""(block, batch, machine, objective, SRAM reserved) -> candidate plans with their costs."""


@dataclass(frozen=True, slots=True)
class BlockChoice:
    """Layers [start, stop) run with ``plan``; ``cost`` covers every repetition.

    ``repeat > 1``: the block belongs to a group run ``repeat`` times on consecutive
    slices of ``plan.subbatch * plan.q`` samples; ``opens`` marks a group's first block.
    """

    start: int
    stop: int
    plan: Plan
    cost: BlockCost
    repeat: int = 1
    opens: bool = False

    @property
    def samples(self) -> int:
        """Samples one run of the block processes."""
        return self.plan.subbatch * self.plan.q


@dataclass(frozen=True, slots=True)
class Schedule:
    """A whole-network schedule: blocks in order, with total cost and bounds."""

    workload: str
    batch: int
    policy: str
    blocks: tuple[BlockChoice, ...]
    cost: BlockCost
    bounds: LowerBounds
    seconds: float

    @property
    def edp(self) -> float:
        return self.cost.latency_cycles * self.cost.energy_pj


@dataclass(frozen=True, slots=True)
class _Entry:
    """A prefix schedule: its latency and energy sums, and how it was reached.

    The full ``BlockCost`` of a prefix is not kept: the DP compares latency and energy
    only, and building a ``BlockCost`` (traffic sums, peaks) for every entry cost more than
    the rest of the DP. ``cost`` rebuilds it for the chosen schedule alone, adding the
    blocks in the same order, so it is the same float sum.
    """

    latency: float
    energy: float
    prev: _Entry | None
    choice: BlockChoice | None

    def cost(self) -> BlockCost:
        """``BlockCost.zero()`` followed by every block of the prefix, first to last."""
        chain: list[BlockChoice] = []
        entry: _Entry | None = self
        while entry is not None and entry.choice is not None:
            chain.append(entry.choice)
            entry = entry.prev
        total = BlockCost.zero()
        for choice in reversed(chain):
            total = total.then(choice.cost)
        return total


def _anonymous(block: Block) -> Block:
    """The block with names erased, so equal shapes hit the same cache entry.

    Every layer loses its name (the block's edges already say who feeds whom, and no cost
    reads a name): a layer then keys the per-layer cost caches (splits, layer costs, cycle
    tables) alike at whatever position of whatever block it sits. Two blocks are equal
    after this exactly when they were with positional names, so the memo is the same.
    """
    layers = tuple(replace(layer, name="", inputs=tuple(("", b) for _, b in layer.inputs))
                   for layer in block.layers)
    return replace(block, name="", layers=layers)


PARALLEL_BLOCKS = 256
"""Fewest distinct blocks worth a pool of worker processes (starting one costs about 0.1 s,
and small networks have a few dozen blocks)."""
MAX_WORKERS = 8


def usable_workers(requested: int) -> int:
    """Processes for ``requested`` workers: 0 asks for one per CPU this process may use (at
    most ``MAX_WORKERS``); a daemon process (a DSE worker) cannot start any, so it gets 1."""
    if multiprocessing.current_process().daemon:
        return 1
    if requested > 0:
        return requested
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return max(1, min(MAX_WORKERS, cpus or 1))


class BlockCache:
    """Memoises a block solver on anonymised blocks."""

    def __init__(self, solver: BlockSolver) -> None:
        self.solver = solver
        self.memo: dict[tuple[Block, int, Objective, float], list[tuple[Plan, BlockCost]]] = {}
        self.hits = 0

    def prefetch(self, blocks: list[tuple[Block, int, float]], machine: Machine,
                 objective: Objective, workers: int) -> None:
        """Solve the distinct (block, samples, reserved SRAM) up front in ``workers``
        processes."""
        keys = list(dict.fromkeys((_anonymous(b), samples, objective, r)
                                  for b, samples, r in blocks))
        todo = [k for k in keys if k not in self.memo]
        if workers <= 1 or len(todo) < PARALLEL_BLOCKS:
            return
        with ProcessPoolExecutor(workers, mp_context=get_context("fork")) as pool:
            # Neighbouring blocks share most of their cost model's caches (the states of
            # blocks with one start or one stop, the layers' splits): each worker takes
            # long runs of them, two per worker to even out the load.
            results = pool.map(_solve_key, [(self.solver, k, machine) for k in todo],
                               chunksize=math.ceil(len(todo) / (2 * workers)))
            for key, found in zip(todo, results, strict=True):
                self.memo[key] = [(Plan(key[0], *plan), cost) for plan, cost in found]

    def __call__(self, block: Block, batch: int, machine: Machine, objective: Objective,
                 reserved: float) -> list[tuple[Plan, BlockCost]]:
        key = (_anonymous(block), batch, objective, reserved)
        if key in self.memo:
            self.hits += 1
            return [(replace(p, block=block), c) for p, c in self.memo[key]]
        found = self.solver(key[0], batch, machine, objective, reserved)
        self.memo[key] = found
        return [(replace(p, block=block), c) for p, c in found]


def _solve_key(job: tuple[BlockSolver, tuple[Block, int, Objective, float], Machine]
               ) -> list[tuple[tuple[int, int, tuple[tuple[int, ...], ...], tuple[bool, ...]],
                               BlockCost]]:
    """A block's candidates as a worker sends them back: each plan without its block (the
    caller has it), so the result does not carry the block's layers once per plan."""
    solver, (block, batch, objective, reserved), machine = job
    return [((p.subbatch, p.q, p.mix, p.fused), cost)
            for p, cost in solver(block, batch, machine, objective, reserved)]


def _cross(o: _Entry, a: _Entry, b: _Entry) -> float:
    return (a.latency - o.latency) * (b.energy - o.energy) - \
        (a.energy - o.energy) * (b.latency - o.latency)


def _thin(entries: list[_Entry], size: int) -> list[_Entry]:
    """The lower-left convex hull of the entries, thinned evenly to at most ``size``.

    L^p E^q is quasi-concave and increasing, so its minimum over the schedules of a
    network sits on a vertex of this hull, and a vertex of a sum of blocks is a sum of
    the blocks' vertices: keeping the hull of every prefix loses no optimum.
    """
    entries.sort(key=lambda e: (e.latency, e.energy))
    front: list[_Entry] = []
    for e in entries:
        if front and e.energy >= front[-1].energy:
            continue
        while len(front) >= 2 and _cross(front[-2], front[-1], e) <= 0:
            front.pop()
        front.append(e)
    if len(front) <= size:
        return front
    step = (len(front) - 1) / (size - 1)
    return [front[round(k * step)] for k in range(size)]


def _extend(entry: _Entry, choice: BlockChoice) -> _Entry:
    """A prefix schedule followed by one more block."""
    cost = choice.cost
    return _Entry(entry.latency + cost.latency_cycles, entry.energy + cost.energy_pj,
                  entry, choice)


def fused_cut(workload: Workload, cut: int, batch: int, machine: Machine) -> bool:
    """Whether the tensors crossing ``cut`` stay in SRAM for ``batch`` samples: they fit the
    chip's share for kept results (``held_capacity`` per tile, what codegen holds whole
    before it streams a result to DRAM)."""
    if cut <= 0 or cut >= len(workload):
        return False
    return crossing_bytes(workload, cut) * batch <= machine.tiles * held_capacity(machine)


WHOLE = 0
"""DP mode of a cut crossed at whole-batch scale (SRAM when the whole batch fits)."""
AFTER_GROUP = -1
"""DP mode of a cut a group has just left through DRAM."""


@dataclass(frozen=True, slots=True)
class _Move:
    """One way to run layers [start, stop) from a cut in mode ``source``."""

    source: int
    target: int
    samples: int
    in_sram: bool
    out_sram: bool
    opens: bool = False
    stores: bool = False
    """A block of a group that writes its results read beyond the next cut to DRAM as
    well, so that the group may be left before their last reader (``Block.dram_out``)."""


FRONT_SIZE = 256
"""Hull points kept per prefix and cut mode. The largest hull of the benchmark grid has
111 points (GoogLeNet, batch 64, ``edge``); at 64, thinning there cost Crane 0.03% of EDP
against a baseline whose smaller hulls were kept whole."""

GROUP_BLOCK = 2
"""Most layers in one block of a group: groups favour short blocks (their cuts stay in
SRAM anyway), and the bound keeps the grouped search affordable."""


def _moves(workload: Workload, start: int, stop: int, batch: int, machine: Machine,
           groups: tuple[int, ...]) -> list[_Move]:
    """The DP transitions of block [start, stop): a whole-batch block, or a block of a
    group of G samples that opens, continues or closes the group (see the module
    docstring; blocks of at most ``GROUP_BLOCK`` layers, none needing the whole batch)."""
    whole_in = fused_cut(workload, start, batch, machine)
    whole_out = fused_cut(workload, stop, batch, machine)
    moves = [_Move(WHOLE, WHOLE, batch, whole_in, whole_out),
             _Move(AFTER_GROUP, WHOLE, batch, False, whole_out)]
    sources = (AFTER_GROUP,) if whole_in else (WHOLE, AFTER_GROUP)
    for g in groups if _groupable(workload, start, stop) else ():
        g_in, g_out = fused_cut(workload, start, g, machine), fused_cut(workload, stop, g, machine)
        stays = (False, True) if g_out and _read_far(workload, start, stop) else (False,)
        for source in sources:
            moves += [_Move(source, g, g, False, g_out, True, stores) for stores in stays]
            moves.append(_Move(source, AFTER_GROUP, g, False, False, True))
        moves += [_Move(g, g, g, g_in, g_out, False, stores) for stores in stays]
        moves.append(_Move(g, AFTER_GROUP, g, g_in, False))
    return moves


def _read_far(workload: Workload, start: int, stop: int) -> frozenset[str]:
    """Results of layers [start, stop) read beyond the next cut: a group may be left before
    their last reader, and must then have stored them in DRAM."""
    if stop >= len(workload):
        return frozenset()
    return workload.crossing[stop + 1] & frozenset(layer.name for layer in workload.layers[start:stop])


def _groupable(workload: Workload, start: int, stop: int) -> bool:
    """Whether block [start, stop) may run in a group: short, and no layer of it needs
    every sample at once (codegen runs a group on slices of the batch)."""
    layers = workload.layers[start:stop]
    return stop - start <= GROUP_BLOCK and not any(layer.whole_batch for layer in layers)


def _block(workload: Workload, start: int, stop: int, move: _Move,
           left: frozenset[str] = frozenset()) -> tuple[Block, float]:
    """The block a move solves and the SRAM its fused input reserves; ``left``: results in
    DRAM crossing ``start`` (``_Cut.left``), which the block reads from DRAM."""
    block = Block.of(workload, start, stop, in_from_sram=move.in_sram, out_to_sram=move.out_sram,
                     from_dram=left if move.in_sram else frozenset(),
                     to_dram=_read_far(workload, start, stop) if move.stores else frozenset())
    return block, crossing_bytes(workload, start) * move.samples if move.in_sram else 0.0


@dataclass(frozen=True, slots=True)
class _Cut:
    """A DP key: the cut's mode and where the results crossing it are.

    ``inside``: results of the open group crossing the cut; ``left``: results in DRAM
    crossing it, read from DRAM however the later cuts are crossed (``Block.dram_in``):
    those of groups already left (codegen keeps a group's results on chip for the group's
    own blocks only) and those of whole-batch blocks that stored them (codegen keeps on
    chip only what the producing block's memory table keeps). ``held_until``: the last
    position reading a result of the open group that is on chip only (-1: none after the
    cut); the group may not be left before it (codegen would store the result, and its
    producer's cost would not show it). A position, not the set of results, so that
    prefixes differing only in which results they hold share one front."""

    mode: int
    inside: frozenset[str] = frozenset()
    left: frozenset[str] = frozenset()
    held_until: int = -1

    def may_leave(self, stop: int) -> bool:
        """Whether a block ending at ``stop`` may leave the group open at this cut."""
        return self.held_until < stop

    def after(self, workload: Workload, start: int, stop: int, move: _Move) -> _Cut:
        """The key at ``stop`` once layers [start, stop) run by ``move``."""
        crossing = workload.crossing[stop]
        made = frozenset(layer.name for layer in workload.layers[start:stop])
        if move.target == WHOLE:  # a whole-batch block; results it stores stay in DRAM
            stored = frozenset() if move.out_sram else made
            return _Cut(WHOLE, frozenset(), (self.left | stored) & crossing)
        inside = made if move.opens else self.inside | made
        if move.target == AFTER_GROUP:
            return _Cut(move.target, frozenset(), (self.left | inside) & crossing)
        stored = made if not move.out_sram else (
            _read_far(workload, start, stop) if move.stores else frozenset())
        held = max((workload.last_reader[name] for name in made - stored), default=-1)
        if not move.opens:
            held = max(held, self.held_until)
        return _Cut(move.target, inside & crossing, self.left & crossing,
                    held if held >= stop else -1)


def _blocks(workload: Workload, batch: int, machine: Machine, max_block: int,
            groups: tuple[int, ...]) -> list[tuple[Block, int, float]]:
    """Every candidate block of the search with its samples and reserved SRAM."""
    found: list[tuple[Block, int, float]] = []
    for stop in range(1, len(workload) + 1):
        for start in range(max(0, stop - max_block), stop):
            for move in _moves(workload, start, stop, batch, machine, groups):
                block, reserved = _block(workload, start, stop, move)
                found.append((block, move.samples, reserved))
    return found


def _solve_block(solve: BlockSolver, samples: int, machine: Machine, objective: Objective,
                 block: Block, reserved: float) -> list[tuple[Plan, BlockCost]]:
    return solve(block, samples, machine, objective, reserved)


def _advance(candidates: dict[_Cut, list[_Entry]], front: dict[_Cut, list[_Entry]],
             workload: Workload, span: tuple[int, int], move: _Move, repeat: int,
             solve: Callable[[Block, float], list[tuple[Plan, BlockCost]]]) -> None:
    """Extend the prefixes ending at the span's start in the move's source mode by the
    span's block (run ``repeat`` times), into ``candidates`` by the key at its stop.
    Prefixes whose cuts hold different results of groups left behind read different
    inputs from DRAM, so their blocks are solved apart (each distinct block once)."""
    start, stop = span
    solved: dict[Block, list[BlockChoice]] = {}
    for cut, entries in front.items():
        if cut.mode != move.source or not entries:
            continue
        if move.target == AFTER_GROUP and not cut.may_leave(stop):
            continue
        block, reserved = _block(workload, start, stop, move, cut.left)
        if block not in solved:
            # One choice per plan, shared by every prefix it extends.
            solved[block] = [BlockChoice(start, stop, plan, cost.repeated(repeat), repeat,
                                         move.opens) for plan, cost in solve(block, reserved)]
        candidates.setdefault(cut.after(workload, start, stop, move), []).extend(
            _extend(e, choice) for choice in solved[block] for e in entries)


def group_sizes(batch: int) -> tuple[int, ...]:
    """Sub-batch sizes a group may take: the proper divisors of the batch."""
    return tuple(g for g in range(1, batch) if batch % g == 0)


def search(workload: Workload, batch: int, machine: Machine, solver: BlockSolver,
           objective: Objective, policy: str, max_block: int = 4,
           front_size: int = FRONT_SIZE, progress: Callable[[str], None] | None = None,
           workers: int = 1, grouped: bool = False,
           group_solver: BlockSolver | None = None) -> Schedule:
    """The best schedule of ``workload`` whose blocks come from ``solver``.

    ``grouped`` lets runs of blocks form groups with their own sub-batch size (module
    docstring), whose blocks ``group_solver`` solves (default: ``solver``). With
    ``workers > 1`` and ``BlockCache`` solvers, the distinct blocks are solved in parallel
    processes before the dynamic programme runs.
    """
    began = time.perf_counter()
    n = len(workload)
    groups = group_sizes(batch) if grouped else ()
    in_group = group_solver or solver
    if workers > 1:
        every = _blocks(workload, batch, machine, max_block, groups)
        for solve, whole in ((solver, True), (in_group, False)):
            if isinstance(solve, BlockCache):
                solve.prefetch([b for b in every if (b[1] == batch) == whole], machine,
                               objective, workers)
    fronts: list[dict[_Cut, list[_Entry]]] = [{} for _ in range(n + 1)]
    fronts[0] = {_Cut(WHOLE): [_Entry(0.0, 0.0, None, None)]}
    for stop in range(1, n + 1):
        candidates: dict[_Cut, list[_Entry]] = {}
        for start in range(max(0, stop - max_block), stop):
            for move in _moves(workload, start, stop, batch, machine, groups):
                solve = solver if move.samples == batch else in_group
                _advance(candidates, fronts[start], workload, (start, stop), move,
                         batch // move.samples,
                         partial(_solve_block, solve, move.samples, machine, objective))
        fronts[stop] = {mode: _thin(found, front_size) for mode, found in candidates.items()}
        if progress:
            size = sum(len(f) for f in fronts[stop].values())
            progress(f"{policy}: {stop}/{n} layers, front {size}")
    final = [e for entries in fronts[n].values() for e in entries]
    if not final:
        raise ValueError(f"policy {policy} found no feasible schedule for {workload.name}")
    best = min(final, key=lambda e: objective(e.latency, e.energy))
    chosen: list[BlockChoice] = []
    entry: _Entry | None = best
    while entry is not None and entry.choice is not None:
        chosen.append(entry.choice)
        entry = entry.prev
    return Schedule(workload.name, batch, policy, tuple(reversed(chosen)), best.cost(),
                    lower_bounds(workload, batch, machine), time.perf_counter() - began)


def reevaluate(schedule: Schedule, machine: Machine) -> BlockCost:
    """Recompute a schedule's cost from its plans (a consistency check)."""
    total = BlockCost.zero()
    for choice in schedule.blocks:
        total = total.then(evaluate(choice.plan, machine).repeated(choice.repeat))
    return total
