"""Brute-force enumeration of a small block's schedules: the oracle for the MILP.

Every state workload vector satisfying the ScT constraints, every distribution of each
state's sub-batches over its tile splits, and every fused/spilled choice of the producers
are evaluated with ``crane.schedule.evaluate``. Exponential; for tests on tiny blocks only.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator

from crane.dialects.segment_checks import check_tables
from crane.dialects.segment_tables import num_states
from crane.hardware.machine import Machine
from crane.schedule.block import Block
from crane.schedule.evaluate import Plan, evaluate, tables_of
from crane.schedule.objective import Objective
from crane.schedule.options import state_options


def _compositions(total: int, parts: int) -> Iterator[tuple[int, ...]]:
    if parts == 1:
        yield (total,)
        return
    for first in range(total + 1):
        for rest in _compositions(total - first, parts - 1):
            yield (first, *rest)


def plans(block: Block, subbatch: int, q: int, machine: Machine) -> Iterator[Plan]:
    """All plans whose tables pass every ScT/MeT check."""
    states = num_states(block.n)
    widths = [len(state_options(block, i, subbatch, machine)) for i in range(states)]
    producers = [m for m in range(block.n) if block.consumers(m)]
    fusions = [tuple(m in chosen for m in range(block.n))
               for k in range(len(producers) + 1)
               for chosen in itertools.combinations(producers, k)]
    for workloads in itertools.product(range(q + 1), repeat=states):
        mixes = [list(_compositions(s, w)) for s, w in zip(workloads, widths, strict=True)]
        for mix, fused in itertools.product(itertools.product(*mixes), fusions):
            plan = Plan(block, subbatch, q, tuple(mix), fused)
            if not check_tables(tables_of(plan)):
                yield plan


def best_plan(block: Block, subbatch: int, q: int, machine: Machine,
              objective: Objective) -> tuple[float, Plan] | None:
    """The feasible plan with the smallest objective, by enumeration."""
    best: tuple[float, Plan] | None = None
    for plan in plans(block, subbatch, q, machine):
        cost = evaluate(plan, machine)
        if not cost.feasible:
            continue
        value = objective(cost.latency_cycles, cost.energy_pj)
        if best is None or value < best[0]:
            best = (value, plan)
    return best
