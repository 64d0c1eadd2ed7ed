"""Crane's tables: state workloads, the scheduling table ScT and the memory table MeT.

A block with N sub-blocks has 2N-1 pipeline-derived states (papers.md section 1.3): state i
(1-based) activates sub-blocks max(1, i-N+1) .. min(i, N). Here states and columns are
0-based: state i activates columns j with j <= i <= j + N - 1.

``ScT[i][j]`` counts the sub-batches column j has finished by the end of state i;
``MeT.dram[i][j]`` / ``MeT.sram[i][j]`` are the open lower bounds of the sub-batch range of
column j's output held in DRAM / SRAM, whose closed upper bound is ``ScT[i][j]``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

Grid = tuple[tuple[int, ...], ...]


def num_states(n: int) -> int:
    """Pipeline-derived states of a block of ``n`` sub-blocks."""
    return 2 * n - 1


def is_active(n: int, state: int, column: int) -> bool:
    """Whether sub-block ``column`` runs in ``state`` (0-based; papers.md Def. 2)."""
    return column <= state <= column + n - 1


@lru_cache(maxsize=4096)
def active_columns(n: int, state: int) -> tuple[int, ...]:
    """Columns active in ``state`` (cached: the scheduler asks for every state of every
    block it prices)."""
    return tuple(j for j in range(n) if is_active(n, state, j))


def active_states(n: int, column: int) -> tuple[int, ...]:
    return tuple(range(column, column + n))


def grid(rows: Sequence[Sequence[int]]) -> Grid:
    return tuple(tuple(int(v) for v in row) for row in rows)


@dataclass(frozen=True, slots=True)
class ScT:
    """State workloads ``s`` and the cumulative table they induce."""

    workloads: tuple[int, ...]
    values: Grid

    @property
    def columns(self) -> int:
        return len(self.values[0]) if self.values else 0

    @classmethod
    def from_workloads(cls, workloads: Sequence[int], n: int) -> ScT:
        """Accumulate the workloads of the states where each column is active (Eq. 6)."""
        s = tuple(int(v) for v in workloads)
        rows: list[list[int]] = []
        for i in range(num_states(n)):
            prev = rows[-1] if rows else [0] * n
            rows.append([prev[j] + (s[i] if is_active(n, i, j) else 0) for j in range(n)])
        return cls(s, grid(rows))


@dataclass(frozen=True, slots=True)
class MeT:
    """Open lower bounds of the DRAM- and SRAM-held output ranges of every column."""

    dram: Grid
    sram: Grid


@dataclass(frozen=True, slots=True)
class Tables:
    """One block's ScT and MeT with what the constraints need to be checked.

    ``totals[j]`` is the number of sub-batches column j must process (Q in forward; the
    retained or discarded counts in the backward phases, Eqs. 14-15). ``volumes[j]`` is the
    bytes of one sub-batch of column j's output; capacities of None are unconstrained.
    """

    sct: ScT
    met: MeT
    deps: tuple[tuple[int, int], ...]
    totals: tuple[int, ...]
    volumes: tuple[float, ...] = ()
    sram_capacity: float | None = None
    dram_capacity: float | None = None

    @property
    def n(self) -> int:
        return len(self.totals)

    @classmethod
    def uniform(cls, sct: ScT, met: MeT, deps: Sequence[tuple[int, int]], q: int,
                volumes: Sequence[float] = (), sram_capacity: float | None = None,
                dram_capacity: float | None = None) -> Tables:
        """Tables where every column processes all ``q`` sub-batches (forward, inference)."""
        return cls(sct, met, tuple(deps), (q,) * sct.columns, tuple(volumes),
                   sram_capacity, dram_capacity)
