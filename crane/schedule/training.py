"""Training schedules: forward, BW1 on retained sub-batches, recompute + BW2 on the rest.

Every block of a forward schedule keeps the newest ``K`` of its ``Q`` sub-batches' activations
in DRAM (the same K for all its layers, which satisfies Eq. 13 in either reading). Then
(papers.md section 1.6):

* BW1 back-propagates those K sub-batches from the saved activations;
* BW2 recomputes the forward pass of the other Q-K sub-batches from the block's input
  (kept in DRAM as a checkpoint) and back-propagates them.

Each backward phase is a block of its own (``gradient_block``) solved by the same block
solver as inference, so BW1 and BW2 get their own ScT/MeT tables and sub-batch sizes.
DRAM capacity counts weights, weight gradients and two optimizer moments (4x the weights),
the saved activations of every block and the checkpoints, all alive at the end of forward.
Recomputation policies: ``keep`` (K = Q everywhere), ``full`` (K = 0 everywhere) and
``crane`` (K per block from a small set, chosen by a knapsack over the DRAM budget).

``schedule_training`` is the entry point of a scheduling policy for a training step: the
policy's forward schedule, its block solver for the backward blocks, and (for ``crane``)
the best fitting training schedule over its own and the baselines' forward schedules.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from crane.cost.layer import refreshes_on_chip
from crane.cost.placement import Mesh, TileRun, dram_hops
from crane.cost.traffic import Traffic, dram_cycles, traffic_energy
from crane.cost.workload import Workload
from crane.hardware.machine import Machine
from crane.schedule.block import Block, gradient_block, split_columns
from crane.schedule.evaluate import BlockCost, Plan
from crane.schedule.objective import Objective
from crane.schedule.policies import MAX_BLOCK, MILP_BLOCK, POLICIES, block_solver, schedule
from crane.schedule.search import BlockChoice, BlockSolver, Schedule

OPTIMIZER_COPIES = 4
"""Weights, gradients and two optimizer moments are resident in DRAM during training."""
ASSUMED_MOMENTS = 2
"""Optimizer state per weight of a function whose updates are not in the graph yet."""
RECOMPUTE = ("crane", "keep", "full")


@dataclass(frozen=True, slots=True)
class PhaseBlock:
    """One block of a backward phase: ``bw1`` (back-propagating the retained sub-batches)
    or ``bw2`` (recomputing the dropped ones, ``recompute=True``, then back-propagating)."""

    phase: str
    plan: Plan
    cost: BlockCost
    recompute: bool = False


@dataclass(frozen=True, slots=True)
class BlockTraining:
    """The training plan of one forward block: retained count and the three phases' costs."""

    choice: BlockChoice
    retained: int
    forward: BlockCost
    bw1: BlockCost
    bw2: BlockCost
    saved_bytes: float
    """DRAM bytes held for this block at the end of forward (activations + checkpoint)."""
    backward: tuple[PhaseBlock, ...] = ()
    """The blocks of BW1 and BW2 in execution order (empty phases leave none)."""


@dataclass(frozen=True, slots=True)
class TrainingSchedule:
    workload: str
    batch: int
    recompute: str
    blocks: tuple[BlockTraining, ...]
    cost: BlockCost
    peak_dram_bytes: float
    fits: bool


Found = list[tuple[Plan, BlockCost]]
"""Blocks of one phase of one forward block, run one after another, with their costs."""


def _pick(solver: BlockSolver, block: Block, batch: int, machine: Machine,
          objective: Objective) -> tuple[Plan, BlockCost] | None:
    found = solver(block, batch, machine, objective, 0.0)
    return min(found, key=lambda pc: objective(pc[1].latency_cycles, pc[1].energy_pj)) \
        if found else None


def _best(solver: BlockSolver, block: Block, batch: int, machine: Machine,
          objective: Objective) -> Found:
    """The better of the whole block and its columns one by one, at a batch (may be 0).

    The column-by-column plan also covers batches too small to fill the block's pipeline.
    """
    if batch == 0:
        return []
    whole = _pick(solver, block, batch, machine, objective)
    parts = [_pick(solver, part, batch, machine, objective) for part in split_columns(block)] \
        if block.n > 1 else []
    split = [p for p in parts if p is not None] if parts and None not in parts else []
    options = [found for found in ([whole] if whole else [], split) if found]
    if not options:
        raise ValueError(f"no schedule for {block.name} at batch {batch}")
    return min(options, key=lambda found: objective(*_sum(found)))


def _sum(found: Found) -> tuple[float, float]:
    cost = _cost(found)
    return cost.latency_cycles, cost.energy_pj


def _cost(found: Found) -> BlockCost:
    total = BlockCost.zero()
    for _, cost in found:
        total = total.then(cost)
    return total


def _phase(phase: str, found: Found, recompute: bool = False) -> tuple[PhaseBlock, ...]:
    return tuple(PhaseBlock(phase, plan, cost, recompute) for plan, cost in found)


def _with_saves(forward: BlockCost, block: Block, samples: int, machine: Machine,
                checkpoint: float = 0.0) -> BlockCost:
    """Forward plus writing ``samples`` samples of its activations and ``checkpoint`` bytes
    of its input to DRAM.

    The writes overlap the forward pass: the block takes the longer of its own latency and
    the DRAM time of all its DRAM traffic including the saves.
    """
    nbytes = sum(layer.output_bytes for layer in block.layers) * samples + checkpoint
    chip = TileRun(0, machine.tiles)
    saves = Traffic.dram_write(nbytes, dram_hops(Mesh.of(machine), chip))
    traffic = forward.traffic + saves
    latency = max(forward.latency_cycles, dram_cycles(traffic.dram_bytes, machine))
    return BlockCost(latency, forward.energy_pj + traffic_energy(saves, machine), traffic,
                     forward.compute_cycles, forward.peak_sram_bytes,
                     forward.peak_dram_bytes + nbytes, forward.feasible)


def _options(q: int) -> list[int]:
    """Retained counts tried per block: none, quarters, all."""
    return sorted({0, q, *(q * k // 4 for k in range(1, 4))})


def plan_block(choice: BlockChoice, batch: int, retained: int, machine: Machine,
               solver: BlockSolver, objective: Objective) -> BlockTraining:
    """Costs of one block trained with ``retained`` of its sub-batches saved."""
    plan = choice.plan
    b, q = plan.subbatch, plan.q
    grad = gradient_block(plan.block)
    kept, dropped = retained * b, (q - retained) * b
    recompute = _best(solver, plan.block, dropped, machine, objective)
    checkpoint = sum(plan.block.external_in) * dropped
    # An input taken from SRAM was never written to DRAM: the checkpoint is written now.
    written = checkpoint if plan.block.in_from_sram else 0.0
    forward = _with_saves(choice.cost, plan.block, kept, machine, written)
    saved = gradient_block(plan.block, from_saved=True,
                           refreshed=lambda layer: refreshes_on_chip(layer, batch, machine))
    bw1 = _best(solver, saved, kept, machine, objective)
    bw2 = _best(solver, grad, dropped, machine, objective)
    activations = sum(layer.output_bytes for layer in plan.block.layers) * kept
    phases = _phase("bw1", bw1) + _phase("bw2", recompute, True) + _phase("bw2", bw2)
    return BlockTraining(choice, retained, forward, _cost(bw1),
                         _cost(recompute).then(_cost(bw2)), activations + checkpoint, phases)


def optimizer_step(workload: Workload, machine: Machine) -> BlockCost:
    """Read the weights and the optimizer's state and write both back once per step, and
    run the updates' vector work spread over every tile (the longer of the two).

    The weight gradients do not cross DRAM: codegen runs each update on the tiles that
    made its gradient, right after it. The state is what the step's updates read
    (``Workload.optimizer_state_bytes``); a function without updates (a forward pass
    planned for training) is assumed to use two moments per weight, as Adam does."""
    weights = workload.total_weight_bytes
    state = workload.optimizer_state_bytes if workload.optimizer_vector_ops \
        else ASSUMED_MOMENTS * weights
    nbytes = 2 * (weights + state)
    t = Traffic(dram_bytes=nbytes)
    ops = workload.optimizer_vector_ops
    compute = ops / (machine.vector_lanes * machine.tiles)
    energy = traffic_energy(t, machine) + ops * machine.vector_op_pj
    return BlockCost(max(dram_cycles(nbytes, machine), compute), energy, t, compute, 0.0,
                     0.0, True)


def train(forward: Schedule, workload: Workload, machine: Machine, solver: BlockSolver,
          objective: Objective, recompute: str = "crane") -> TrainingSchedule:
    """A training schedule over a forward schedule's blocks with a recomputation policy."""
    if recompute not in RECOMPUTE:
        raise ValueError(f"unknown recomputation policy {recompute!r}")
    menus = [[plan_block(c, forward.batch, k, machine, solver, objective)
              for k in _options(c.plan.q)] for c in forward.blocks]
    static = workload.total_weight_bytes * OPTIMIZER_COPIES
    budget = (machine.dram_capacity_bytes or math.inf) - static
    keep = [max(m, key=lambda t: t.retained) for m in menus]
    full = [min(m, key=lambda t: t.retained) for m in menus]
    if recompute == "keep":
        return _assemble(forward, workload, machine, recompute, keep, static)
    if recompute == "full":
        return _assemble(forward, workload, machine, recompute, full, static)
    # Crane: the knapsack choice, or a uniform policy if that is better and fits.
    options = [_assemble(forward, workload, machine, recompute, picks, static)
               for picks in (_knapsack(menus, budget, objective), keep, full)]
    fitting = [t for t in options if t.fits] or options[:1]
    return min(fitting, key=lambda t: objective(t.cost.latency_cycles, t.cost.energy_pj))


def _assemble(forward: Schedule, workload: Workload, machine: Machine, recompute: str,
              picks: list[BlockTraining], static: float) -> TrainingSchedule:
    """Forward blocks in order, then each block's BW1 and BW2 in reverse, then the update."""
    total = BlockCost.zero()
    for t in picks:
        total = total.then(t.forward)
    for t in reversed(picks):
        total = total.then(t.bw1).then(t.bw2)
    total = total.then(optimizer_step(workload, machine))
    peak = static + sum(t.saved_bytes for t in picks)
    return TrainingSchedule(workload.name, forward.batch, recompute, tuple(picks), total, peak,
                            peak <= (machine.dram_capacity_bytes or math.inf))


def _phase_cost(t: BlockTraining) -> tuple[float, float]:
    cost = t.forward.then(t.bw1).then(t.bw2)
    return cost.latency_cycles, cost.energy_pj


def _knapsack(menus: list[list[BlockTraining]], budget: float,
              objective: Objective) -> list[BlockTraining]:
    """Pick one option per block: cheapest objective whose saved bytes fit the budget.

    Greedy on the exchange rate: start from the cheapest option of every block, and while
    over budget move the block whose next smaller-memory option costs least per byte saved.
    """
    def value(t: BlockTraining) -> float:
        return objective(*_phase_cost(t))

    picks = [min(m, key=value) for m in menus]
    while sum(t.saved_bytes for t in picks) > budget:
        moves = [((value(alt) - value(pick)) / (pick.saved_bytes - alt.saved_bytes), i, alt)
                 for i, (pick, menu) in enumerate(zip(picks, menus, strict=True))
                 for alt in menu if alt.saved_bytes < pick.saved_bytes]
        if not moves:
            break
        _, i, alt = min(moves, key=lambda mv: mv[0])
        picks[i] = alt
    return picks


def schedule_training(workload: Workload, batch: int, machine: Machine, policy: str = "crane",
                      objective: Objective | str = "edp", recompute: str = "crane",
                      max_block: int = MAX_BLOCK, time_limit: float | None = 0.05,
                      milp_block: int = MILP_BLOCK, workers: int = 1
                      ) -> tuple[Schedule, TrainingSchedule]:
    """The forward schedule and training schedule of ``policy`` for one training step.

    ``crane`` trains over each of the policies' forward schedules and keeps the best one
    that fits in DRAM (the smallest-footprint one when none fits, so callers can report
    the capacity it needs); a baseline trains over its own forward schedule. ``workers``
    solves the forward schedules' distinct blocks in that many processes.
    """
    if recompute not in RECOMPUTE:
        raise ValueError(f"unknown recomputation policy {recompute!r}; expected one of "
                         f"{', '.join(RECOMPUTE)}")
    obj = Objective.parse(objective) if isinstance(objective, str) else objective
    solver = block_solver(policy, time_limit, milp_block)
    fronts = POLICIES if policy == "crane" else (policy,)
    runs: list[tuple[Schedule, TrainingSchedule]] = []
    for p in fronts:
        forward = schedule(workload, batch, machine, p, obj, max_block, time_limit,
                           grouped=False, milp_block=milp_block, workers=workers)
        runs.append((forward, train(forward, workload, machine, solver, obj, recompute)))
    fitting = [r for r in runs if r[1].fits]
    if not fitting:
        return min(runs, key=lambda r: r[1].peak_dram_bytes)
    return min(fitting, key=lambda r: obj(r[1].cost.latency_cycles, r[1].cost.energy_pj))
