"""Named checks of every ScT / MeT constraint (papers.md sections 1.4-1.6).

``check_tables`` returns one ``Violation`` per broken (constraint, state, column); an empty
list means the tables are a valid schedule. Constraint names carry the paper's equation
number so a user editing a schedule by hand sees which rule failed.

Two readings are fixed here where the paper is loose (papers.md section 1.13):
* Accumulation (Eq. 6) is checked over *all* states where a column is active, including its
  last one, so that the workload of a state is what every active column processes in it.
* Retention (Eq. 13) uses the semantic direction: a producer retains at least as many
  sub-batches as its consumer, i.e. its DRAM lower bound after forward is not larger.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from crane.dialects.segment_tables import Tables, is_active, num_states

NONNEG = "ScT.integral_nonnegative(Eq.1)"
NOT_STARTED = "ScT.not_started(Eq.2)"
COMPLETE = "ScT.complete(Eq.3)"
MONOTONE = "ScT.monotone(Eq.4)"
DEPENDENCY = "ScT.dependency(Eq.5)"
ACCUMULATION = "ScT.accumulation(Eq.6)"
MET_NONNEG = "MeT.integral_nonnegative(Eq.7)"
MET_MONOTONE = "MeT.fifo_monotone(Eq.8)"
MET_BOUND = "MeT.below_sct(Eq.9)"
MET_AVAILABLE = "MeT.input_available(Eq.10)"
SRAM_CAPACITY = "MeT.sram_capacity(Eq.11)"
DRAM_CAPACITY = "MeT.dram_capacity(Eq.12)"
RETENTION = "BW.producer_retains(Eq.13)"
BW1_BOUNDARY = "BW1.retained_boundary(Eq.14)"
BW2_BOUNDARY = "BW2.recompute_boundary(Eq.15)"
SHAPE = "Tables.shape"


@dataclass(frozen=True, slots=True)
class Violation:
    """A broken constraint, where it breaks, and what was found."""

    constraint: str
    block: str
    state: int | None
    column: int | None
    message: str


def _shape(t: Tables) -> Iterator[tuple[str, int | None, int | None, str]]:
    rows = num_states(t.n)
    grids = {"ScT": t.sct.values, "MeT.dram": t.met.dram, "MeT.sram": t.met.sram}
    for label, g in grids.items():
        if len(g) != rows or any(len(r) != t.n for r in g):
            yield SHAPE, None, None, f"{label} must be {rows} x {t.n}"
    if len(t.sct.workloads) != rows:
        yield SHAPE, None, None, f"need {rows} state workloads, got {len(t.sct.workloads)}"


def _sct(t: Tables) -> Iterator[tuple[str, int | None, int | None, str]]:
    v, s, n = t.sct.values, t.sct.workloads, t.n
    for i in range(num_states(n)):
        if s[i] < 0:
            yield NONNEG, i, None, f"state workload {s[i]} < 0"
        for j in range(n):
            yield from _sct_cell(t, i, j)
    for m, j in t.deps:
        for i in range(j, j + n - 1):
            if v[i][m] < v[i][j] + 1:
                yield DEPENDENCY, i, j, f"consumer at {v[i][j]} not behind producer {m} at {v[i][m]}"


def _sct_cell(t: Tables, i: int, j: int) -> Iterator[tuple[str, int | None, int | None, str]]:
    v, s, n, q = t.sct.values, t.sct.workloads, t.n, t.totals[j]
    if v[i][j] < 0:
        yield NONNEG, i, j, f"{v[i][j]} < 0"
    if i < j and v[i][j] != 0:
        yield NOT_STARTED, i, j, f"{v[i][j]} done before the column's first state"
    if i >= j + n - 1 and v[i][j] != q:
        yield COMPLETE, i, j, f"{v[i][j]} done, expected all {q}"
    prev = v[i - 1][j] if i else 0
    if v[i][j] < prev:
        yield MONOTONE, i, j, f"{v[i][j]} after {prev}"
    if is_active(n, i, j) and v[i][j] != prev + s[i]:
        yield ACCUMULATION, i, j, f"{v[i][j]} != {prev} + workload {s[i]}"


def _met(t: Tables) -> Iterator[tuple[str, int | None, int | None, str]]:
    v, n = t.sct.values, t.n
    grids = (("dram", t.met.dram), ("sram", t.met.sram))
    for i, j, (label, g) in itertools.product(range(num_states(n)), range(n), grids):
        yield from _met_cell(g, label, v, i, j)
    for m, j in t.deps:
        for i in range(max(1, j), j + n):
            low = min(t.met.sram[i - 1][m], t.met.dram[i - 1][m])
            if low > v[i - 1][j]:
                yield (MET_AVAILABLE, i, j,
                       f"producer {m} kept only ({low}, ...] but consumer is at {v[i - 1][j]}")


def _met_cell(g: tuple[tuple[int, ...], ...], label: str, v: tuple[tuple[int, ...], ...],
              i: int, j: int) -> Iterator[tuple[str, int | None, int | None, str]]:
    if g[i][j] < 0:
        yield MET_NONNEG, i, j, f"{label} bound {g[i][j]} < 0"
    if i and g[i][j] < g[i - 1][j]:
        yield MET_MONOTONE, i, j, f"{label} bound fell from {g[i - 1][j]} to {g[i][j]}"
    if g[i][j] > v[i][j]:
        yield MET_BOUND, i, j, f"{label} bound {g[i][j]} above ScT {v[i][j]}"


def _capacity(t: Tables) -> Iterator[tuple[str, int | None, int | None, str]]:
    if not t.volumes:
        return
    v = t.sct.values
    for i in range(num_states(t.n)):
        for name, g, cap in ((SRAM_CAPACITY, t.met.sram, t.sram_capacity),
                             (DRAM_CAPACITY, t.met.dram, t.dram_capacity)):
            used = sum((v[i][j] - g[i][j]) * t.volumes[j] for j in range(t.n))
            if cap is not None and used > cap:
                yield name, i, None, f"{used:.0f} bytes held > capacity {cap:.0f}"


def check_tables(tables: Tables, block: str = "") -> list[Violation]:
    """Every violated ScT/MeT constraint of a block's tables (empty when valid)."""
    shape = [Violation(c, block, i, j, m) for c, i, j, m in _shape(tables)]
    if shape:
        return shape
    found = [*_sct(tables), *_met(tables), *_capacity(tables)]
    return [Violation(c, block, i, j, m) for c, i, j, m in found]


def check_training(forward: Tables, bw1: Tables, bw1_columns: Sequence[int], bw2: Tables,
                   bw2_columns: Sequence[int], block: str = "") -> list[Violation]:
    """Each table on its own, plus the forward/backward coupling of Eqs. 13-15.

    ``bw1_columns[c]`` names the forward column that BW1 column c back-propagates;
    ``bw2_columns`` does the same for BW2, whose first half recomputes and second half
    back-propagates (so each forward column appears twice).
    """
    found = [*check_tables(forward, block), *check_tables(bw1, f"{block}.bw1"),
             *check_tables(bw2, f"{block}.bw2")]
    last = forward.met.dram[-1]
    q = forward.totals
    for m, j in forward.deps:
        if last[m] > last[j]:
            found.append(Violation(RETENTION, block, num_states(forward.n) - 1, j,
                                   f"producer {m} retains {q[m] - last[m]} < consumer's {q[j] - last[j]}"))
    for c, fw in enumerate(bw1_columns):
        if bw1.totals[c] != q[fw] - last[fw]:
            found.append(Violation(BW1_BOUNDARY, f"{block}.bw1", None, c,
                                   f"processes {bw1.totals[c]}, retained {q[fw] - last[fw]}"))
    for c, fw in enumerate(bw2_columns):
        if bw2.totals[c] != last[fw]:
            found.append(Violation(BW2_BOUNDARY, f"{block}.bw2", None, c,
                                   f"processes {bw2.totals[c]}, discarded {last[fw]}"))
    return found
