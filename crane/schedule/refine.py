"""Refinement of a found hierarchy until its cost settles (papers.md section 1.8, step 2).

The dynamic programme picks blocks of at most ``max_block`` layers with a time-limited
solver. Refinement then revisits the hierarchy: each pair of neighbouring blocks is tried
as one merged block (so a block can grow past the DP's limit), and every block is
re-solved with a stronger solver (all sub-batch sizes, a longer time limit). Blocks of a
group, and the blocks next to one (whose boundary the group fixes), are left as found. A
change is kept only if the whole schedule's objective improves; rounds repeat until one
improves the objective by less than ``theta`` (2 % as in the paper).
"""

from __future__ import annotations

from dataclasses import replace

from crane.cost.workload import Workload
from crane.hardware.machine import Machine
from crane.schedule.block import Block, crossing_bytes
from crane.schedule.evaluate import BlockCost
from crane.schedule.objective import Objective
from crane.schedule.search import BlockChoice, BlockSolver, Schedule, fused_cut


def _total(choices: list[BlockChoice]) -> BlockCost:
    total = BlockCost.zero()
    for c in choices:
        total = total.then(c.cost)
    return total


def _value(objective: Objective, choices: list[BlockChoice]) -> float:
    total = _total(choices)
    return objective(total.latency_cycles, total.energy_pj)


def _solve(workload: Workload, start: int, stop: int, batch: int, machine: Machine,
           solver: BlockSolver, objective: Objective,
           before: list[BlockChoice]) -> BlockChoice | None:
    """The solver's best plan for layers [start, stop) after the blocks ``before`` (it
    reads the results of their groups from DRAM), or None if it finds none."""
    in_sram = fused_cut(workload, start, batch, machine)
    grouped = frozenset(layer.name for c in before if c.repeat > 1 for layer in c.plan.block.layers)
    block = Block.of(workload, start, stop, in_from_sram=in_sram,
                     out_to_sram=fused_cut(workload, stop, batch, machine),
                     from_dram=grouped if in_sram else frozenset())
    reserved = crossing_bytes(workload, start) * batch if in_sram else 0.0
    found = solver(block, batch, machine, objective, reserved)
    if not found:
        return None
    plan, cost = min(found, key=lambda pc: objective(pc[1].latency_cycles, pc[1].energy_pj))
    return BlockChoice(start, stop, plan, cost)


def _free(choices: list[BlockChoice], i: int) -> bool:
    """Whether choice ``i`` and its neighbours run on the whole batch (no group)."""
    return all(c.repeat == 1 for c in choices[max(0, i - 1): i + 2])


def _round(workload: Workload, choices: list[BlockChoice], batch: int, machine: Machine,
           solver: BlockSolver, objective: Objective, max_merged: int) -> list[BlockChoice]:
    """One pass of re-solving and merging; keeps every change that lowers the objective."""
    current = list(choices)
    for i, c in enumerate(current):
        if not _free(current, i):
            continue
        better = _solve(workload, c.start, c.stop, batch, machine, solver, objective,
                        current[:i])
        trial = current[:i] + [better] + current[i + 1:] if better else current
        if better and _value(objective, trial) < _value(objective, current):
            current = trial
    i = 0
    while i + 1 < len(current):
        a, b = current[i], current[i + 1]
        merged = (_solve(workload, a.start, b.stop, batch, machine, solver, objective,
                         current[:i])
                  if b.stop - a.start <= max_merged and _free(current, i)
                  and _free(current, i + 1) else None)
        trial = current[:i] + [merged] + current[i + 2:] if merged else current
        if merged and _value(objective, trial) < _value(objective, current):
            current = trial
            continue
        i += 1
    return current


def refine(schedule: Schedule, workload: Workload, machine: Machine, solver: BlockSolver,
           objective: Objective, theta: float = 0.02, max_merged: int = 8,
           max_rounds: int = 4) -> Schedule:
    """Refine a schedule's hierarchy until a round gains less than ``theta``."""
    choices = list(schedule.blocks)
    value = _value(objective, choices)
    for _ in range(max_rounds):
        choices = _round(workload, choices, schedule.batch, machine, solver, objective,
                         max_merged)
        new = _value(objective, choices)
        settled = value - new < theta * value
        value = new
        if settled:
            break
    return replace(schedule, blocks=tuple(choices), cost=_total(choices))
