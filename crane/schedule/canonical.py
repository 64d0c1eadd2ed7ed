"""Closed-form optimum of the compute-stage ScT problem of an inference block.

With all 2N-1 states, completeness of every column forces ``s[N+k] = s[k]`` and
``s[0] + ... + s[N-1] = Q``; the dependency of column j on any producer reduces to
``s[j-1] >= 1`` (its tightest instance, at the consumer's second-to-last state). The feasible
set is a shifted simplex. Compute latency and energy (Eqs. 18, 20) are linear in the
sub-batches of each (state, split), and L^p E^q with p, q >= 0 is minimised over a polytope
at a vertex (its logarithm is concave), so the optimum is one of the N simplex vertices with
every state's sub-batches on a single split (papers.md section 1.13, item 3).

Used as a fast path to rank sub-batch sizes and as a test oracle for the MILP.
"""

from __future__ import annotations

import itertools

from crane.dialects.segment_tables import num_states
from crane.hardware.machine import Machine
from crane.schedule.block import Block
from crane.schedule.evaluate import Plan
from crane.schedule.objective import Objective
from crane.schedule.options import StateOption, state_options


def required_fill(block: Block) -> tuple[int, ...]:
    """Lower bound of each free workload s[0..N-1]: 1 where a consumer follows."""
    need = [0] * block.n
    for _, j in block.deps:
        need[j - 1] = 1
    return tuple(need)


def vertices(block: Block, q: int) -> list[tuple[int, ...]]:
    """The integral vertices of the feasible workloads, as full 2N-1 state vectors."""
    n, need = block.n, required_fill(block)
    spare = q - sum(need)
    if spare < 0:
        return []
    found: list[tuple[int, ...]] = []
    for t in range(n):
        free = [need[k] + (spare if k == t else 0) for k in range(n)]
        full = tuple(free + free[: n - 1])
        if full not in found:
            found.append(full)
    return found


def _compute_cost(opts: tuple[tuple[StateOption, ...], ...], workloads: tuple[int, ...],
                  choice: tuple[int, ...]) -> tuple[float, float]:
    latency = sum(s * opts[i][o].cycles for i, (s, o) in enumerate(zip(workloads, choice, strict=True)))
    energy = sum(s * opts[i][o].energy_pj for i, (s, o) in enumerate(zip(workloads, choice, strict=True)))
    return latency, energy


def compute_optimum(block: Block, subbatch: int, q: int, machine: Machine,
                    objective: Objective) -> tuple[float, Plan] | None:
    """(objective value, plan) of the best vertex; None when the block cannot fill."""
    opts = tuple(state_options(block, i, subbatch, machine) for i in range(num_states(block.n)))
    if any(not o for o in opts):
        return None
    candidates = [(workloads, choice) for workloads in vertices(block, q)
                  for choice in _choices(opts, workloads)]
    best: tuple[float, Plan] | None = None
    for workloads, choice in candidates:
        value = objective(*_compute_cost(opts, workloads, choice))
        if best is not None and value >= best[0]:
            continue
        mix = tuple(tuple(s if o == choice[i] else 0 for o in range(len(opts[i])))
                    for i, s in enumerate(workloads))
        best = (value, Plan(block, subbatch, q, mix, (False,) * block.n))
    return best


def _choices(opts: tuple[tuple[StateOption, ...], ...],
             workloads: tuple[int, ...]) -> list[tuple[int, ...]]:
    """One split per busy state (idle states keep split 0): the vertices' split choices."""
    ranges = [range(len(opts[i])) if s else range(1) for i, s in enumerate(workloads)]
    return list(itertools.product(*ranges))
