"""Scheduling policies: Crane and the baselines, all in the same cost model.

* ``crane``: blocks of up to ``max_block`` layers; every block gets the baselines' pipeline
  patterns as candidates, and blocks of up to ``milp_block`` layers are also solved by the
  MILP (any state workloads, tile split per state among candidates, fused/spilled
  producers, every sub-batch size that survives the closed-form compute ranking, K1 = half
  of the candidates as in the paper). Every baseline schedule is thus a candidate schedule
  of Crane's search, whose convex-hull DP is exact over its candidates: the policy can
  only gain over any baseline. Runs of blocks may form groups with their own sub-batch
  size (``crane.schedule.search``), the paper's composite blocks.
* ``sequential``: one layer at a time on the whole machine, best sub-batch size per layer,
  tensors kept in SRAM across layers whenever the whole batch fits.
* ``tangram``: Tangram-like spatial pipelining of layer segments (DP over the segment
  cuts), every layer of a segment active at once, tiles in proportion to MACs, on-chip
  forwarding of intermediate tensors, best sub-batch size per segment. No groups: each
  segment takes the whole batch. Tangram's temporal pipelining (a chain of layers
  time-multiplexed on the same tiles, a batch group at a time, without write-back) is not
  modelled; it is narrower than a group, whose cuts keep every crossing tensor on chip where
  a chain keeps only what its next layer reads. ``schedule(..., grouped=True)`` gives this
  policy groups: Tangram lies between the two (``bench/schedule.py`` prints both).
* ``set``: SET-like S-cut segments under a top T-cut, with the utilisation-aware balanced
  tile split, per-segment sub-batching and per-segment choice of keeping the segment's
  intermediate tensors in SRAM or DRAM (SET's ``to_dram``), DP over the cuts. Segments
  may be nested in a T-cut with its own sub-batch count (a group), as SET's RA tree allows.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from crane.cost.workload import Workload
from crane.hardware.machine import Machine
from crane.schedule.block import Block
from crane.schedule.canonical import compute_optimum, required_fill
from crane.schedule.evaluate import BlockCost, Plan, evaluate
from crane.schedule.formulate import formulate
from crane.schedule.objective import Objective
from crane.schedule.options import block_options
from crane.schedule.pareto import hull_covers, sweep
from crane.schedule.refine import refine
from crane.schedule.search import BlockCache, Schedule, search

POLICIES = ("crane", "sequential", "tangram", "set")
GROUPED = frozenset({"crane", "set"})
"""Policies whose search may nest blocks in groups with their own sub-batch size."""
MAX_BLOCK = 12
"""Most layers in one block (segment), for every policy but ``sequential``."""
MILP_BLOCK = 2
"""Most layers of a block Crane also solves with the MILP (larger ones get the patterns).
Measured over 48 inference cells (8 bundled networks x edge, cloud, mbs x batch 1, 8), 4
instead of 2 took 2.4x the search time (236 s against 100 s in all) for an EDP at most
0.08% lower (ResNet-50, cloud, batch 8; 43 cells equal); ``segment{milp-block=4}`` asks
for it."""


def divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def _front(found: list[tuple[Plan, BlockCost]]) -> list[tuple[Plan, BlockCost]]:
    """Feasible, non-dominated candidates."""
    ok = sorted((pc for pc in found if pc[1].feasible),
                key=lambda pc: (pc[1].latency_cycles, pc[1].energy_pj))
    front: list[tuple[Plan, BlockCost]] = []
    for pc in ok:
        if not front or pc[1].energy_pj < front[-1][1].energy_pj:
            front.append(pc)
    return front


def _subbatches(block: Block, batch: int) -> list[int]:
    """Sub-batch sizes whose sub-batch count can fill the block's pipeline."""
    need = sum(required_fill(block))
    return [b for b in divisors(batch) if batch // b >= need]


def _value(objective: Objective, pc: tuple[Plan, BlockCost]) -> float:
    return objective(pc[1].latency_cycles, pc[1].energy_pj)


@dataclass(frozen=True, slots=True)
class CraneSolver:
    """Block solver of the ``crane`` policy (a picklable callable, for worker processes).

    Single layers are enumerated exactly over sub-batch sizes. Larger blocks: the
    baselines' patterns give incumbents, the closed-form compute optimum ranks the sub-batch
    sizes and the best ``keep`` fraction (the paper's K1) go to the MILP sweep, seeded with
    the incumbent of the same size so a time-limited solve never returns worse.
    """

    time_limit: float | None = None
    keep: float = 0.5
    max_points: int = 8
    milp_block: int = MILP_BLOCK

    def __call__(self, block: Block, batch: int, machine: Machine, objective: Objective,
                 reserved: float) -> list[tuple[Plan, BlockCost]]:
        patterns = PatternSolver("balanced", (True, False)), PatternSolver("flops", (True,))
        found = [pc for pattern in patterns
                 for pc in pattern(block, batch, machine, objective, reserved)]
        if block.n == 1 or block.n > self.milp_block or not found:
            return _front(found)
        ranked: list[tuple[float, int]] = []
        for b in _subbatches(block, batch):
            quick = compute_optimum(block, b, batch // b, machine, objective)
            if quick is not None:
                ranked.append((quick[0], b))
        ranked.sort()
        to_beat = min(_value(objective, pc) for pc in found)
        for bound, b in ranked[: max(1, math.ceil(self.keep * len(ranked)))]:
            if bound >= to_beat:
                break  # compute alone (a lower bound of the full cost) cannot beat it
            fastest = compute_optimum(block, b, batch // b, machine, Objective(1.0, 0.0))
            floor = compute_optimum(block, b, batch // b, machine, Objective(0.0, 1.0))
            corner = (fastest[0] if fastest else 0.0, floor[0] if floor else 0.0)
            if hull_covers([(c.latency_cycles, c.energy_pj) for _, c in found], corner):
                continue  # nothing at this sub-batch size can be a supported point
            form = formulate(block, b, batch // b, machine, sram_reserved=reserved)
            if form is None:
                continue
            same = [pc for pc in found if pc[0].subbatch == b]
            seed = min(same, key=lambda pc: _value(objective, pc))[0] if same else None
            result = sweep(form, objective, self.time_limit, self.max_points, seed, to_beat,
                           floor[0] if floor else 0.0)
            found += [(pt.plan, evaluate(pt.plan, machine, reserved)) for pt in result.frontier]
            to_beat = min(to_beat, min((_value(objective, pc) for pc in found), default=to_beat))
        return _front(found)


def crane_solver(time_limit: float | None = None, keep: float = 0.5,
                 max_points: int = 40, milp_block: int = MILP_BLOCK) -> CraneSolver:
    """The ``crane`` block solver with a per-MILP time limit."""
    return CraneSolver(time_limit, keep, max_points, milp_block)


def _pipeline_plan(block: Block, b: int, q: int, machine: Machine, split: str,
                   fused: bool) -> Plan | None:
    """All layers of the block active together after a one-sub-batch fill per layer."""
    need = required_fill(block)
    free = list(need)
    free[-1] += q - sum(need)
    workloads = free + free[: block.n - 1]
    mix: list[tuple[int, ...]] = []
    for s, opts in zip(workloads, block_options(block, b, machine), strict=True):
        if not opts:
            return None
        pick = next((k for k, o in enumerate(opts) if o.split == split), 0)
        mix.append(tuple(s if k == pick else 0 for k in range(len(opts))))
    flags = tuple(fused and bool(block.consumers(m)) for m in range(block.n))
    return Plan(block, b, q, tuple(mix), flags)


@dataclass(frozen=True, slots=True)
class PatternSolver:
    """Block solver of the pipelining baselines (one fixed pattern, searched batching)."""

    split: str
    fusion_choices: tuple[bool, ...]

    def __call__(self, block: Block, batch: int, machine: Machine, objective: Objective,
                 reserved: float) -> list[tuple[Plan, BlockCost]]:
        plans = [_pipeline_plan(block, b, batch // b, machine, self.split, fused)
                 for b in _subbatches(block, batch) for fused in self.fusion_choices]
        return _front([(p, evaluate(p, machine, reserved)) for p in plans if p is not None])


def pipeline_solver(split: str, fusion_choices: tuple[bool, ...]) -> PatternSolver:
    return PatternSolver(split, fusion_choices)


def block_solver(policy: str, time_limit: float | None = 0.05,
                 milp_block: int = MILP_BLOCK) -> BlockCache:
    """The (memoised) block solver of a policy; training solves its backward blocks too."""
    if policy == "crane":
        return BlockCache(crane_solver(time_limit, milp_block=milp_block))
    patterns = {"sequential": ("balanced", (False,)), "tangram": ("flops", (True,)),
                "set": ("balanced", (True, False))}
    if policy not in patterns:
        raise ValueError(f"unknown policy {policy!r}; expected one of {POLICIES}")
    split, fusion = patterns[policy]
    return BlockCache(pipeline_solver(split, fusion))


def schedule(workload: Workload, batch: int, machine: Machine, policy: str = "crane",
             objective: Objective | str = "edp", max_block: int = MAX_BLOCK,
             time_limit: float | None = 0.05,
             progress: Callable[[str], None] | None = None, workers: int = 1,
             refine_rounds: int = 0, grouped: bool | None = None,
             milp_block: int = MILP_BLOCK) -> Schedule:
    """Schedule ``workload`` at ``batch`` on ``machine`` with one of ``POLICIES``.

    ``time_limit`` bounds each MILP solve (None: prove optimality); ``workers`` solves
    distinct blocks in that many processes; ``refine_rounds > 0`` runs the hierarchy
    refinement of ``crane.schedule.refine`` on the ``crane`` result (merging neighbouring
    blocks, re-solving with every sub-batch size) until the cost settles. ``grouped``
    (default: the policy is in ``GROUPED``) lets runs of blocks form groups with their own
    sub-batch size. ``milp_block``: most layers of a block the ``crane`` MILP also solves.
    """
    obj = Objective.parse(objective) if isinstance(objective, str) else objective
    solver = block_solver(policy, time_limit, milp_block)
    nest = policy in GROUPED if grouped is None else grouped
    if policy != "crane":
        return search(workload, batch, machine, solver, obj, policy,
                      1 if policy == "sequential" else max_block, progress=progress,
                      grouped=nest)
    # Inside groups Crane keeps its patterns only: the MILP's gain on a block is small
    # and groups multiply the blocks to solve by the number of group sizes.
    patterns = BlockCache(CraneSolver(time_limit, milp_block=0))
    best = search(workload, batch, machine, solver, obj, policy, max_block, progress=progress,
                  workers=workers, grouped=nest, group_solver=patterns)
    if refine_rounds > 0:
        stronger = CraneSolver(None if time_limit is None else 5 * time_limit, keep=1.0)
        best = refine(best, workload, machine, stronger, obj, max_rounds=refine_rounds,
                      max_merged=2 * max_block)
    return best
