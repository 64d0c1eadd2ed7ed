"""SET-style utilisation: factorise a layer's sub-batch over a cluster of tiles.

A cluster of T tiles is split as ``T = kb * kk * kh * kw`` over batch, output channels and
output rows/columns (Crane Eq. 16). The utilisation of a split is the fraction of useful work
once every dimension is padded to a multiple of its factor; no dimension is split into more
parts than it has elements (no tile gets an empty slice). SET prunes splits whose
utilisation is below 0.75; a layer may also leave tiles of its cluster idle when a smaller
cluster does better, so the model keeps, for every cluster size, the best useful size at or
below it.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

MIN_UTILISATION = 0.75


@dataclass(frozen=True, slots=True)
class Partition:
    """How one sub-batch of a layer is spread over ``tiles`` tiles."""

    kb: int
    kk: int
    kh: int
    kw: int
    utilisation: float

    @property
    def tiles(self) -> int:
        return self.kb * self.kk * self.kh * self.kw

    @property
    def weight_copies(self) -> int:
        """Tiles that need the same weight slice: every split except the channel split."""
        return self.kb * self.kh * self.kw

    @property
    def input_copies(self) -> int:
        """Each output-channel slice reads the whole input."""
        return self.kk

    @property
    def throughput(self) -> float:
        """Useful tiles: tiles times utilisation."""
        return self.tiles * self.utilisation


def dim_efficiency(extent: int, factor: int) -> float:
    """Useful fraction of ``extent`` split into ``factor`` equal padded parts."""
    return extent / (-(-extent // factor) * factor)


@lru_cache(maxsize=4096)
def _divisors(n: int) -> tuple[int, ...]:
    return tuple(d for d in range(1, n + 1) if n % d == 0)


Split = tuple[float, tuple[int, ...]]


@lru_cache(maxsize=20_000)
def _split_table(extents: tuple[int, ...], max_tiles: int) -> tuple[Split, ...]:
    """Entry t-1: the best (utilisation, factors) using exactly t tiles over ``extents``.

    Dynamic programme over the dimensions: the best split of t tiles over (e, rest...) is
    the best over divisors f of t of eff(e, f) times the best split of t/f over the rest.
    """
    if not extents:
        return tuple((1.0, ()) if t == 1 else (0.0, ()) for t in range(1, max_tiles + 1))
    head, rest = extents[0], _split_table(extents[1:], max_tiles)
    table: list[Split] = []
    for t in range(1, max_tiles + 1):
        best: Split = (0.0, ())
        for f in _divisors(t):
            if f > head:
                break
            util, factors = rest[t // f - 1]
            value = dim_efficiency(head, f) * util
            if util and value > best[0]:
                best = (value, (f, *factors))
        table.append(best)
    return tuple(table)


@lru_cache(maxsize=200_000)
def exact_partition(extents: tuple[int, int, int, int], tiles: int,
                    floor: float = MIN_UTILISATION) -> Partition | None:
    """The best split of exactly ``tiles`` tiles over (batch, K, H, W), or None below floor."""
    util, factors = _split_table(extents, _table_size(tiles))[tiles - 1]
    if util < floor or not factors:
        return None
    kb, kk, kh, kw = factors
    return Partition(kb, kk, kh, kw, util)


def _table_size(tiles: int) -> int:
    """Tables are built for sizes rounded up to a power of two, so few tables are built."""
    return 1 << max(0, (tiles - 1).bit_length())


@lru_cache(maxsize=100_000)
def best_partition(extents: tuple[int, int, int, int], tiles: int,
                   floor: float = MIN_UTILISATION) -> Partition:
    """The highest-throughput split using at most ``tiles`` tiles (one tile always works)."""
    if tiles <= 1:
        return Partition(1, 1, 1, 1, 1.0)
    smaller = best_partition(extents, tiles - 1, floor)
    exact = exact_partition(extents, tiles, floor)
    if exact is None or exact.throughput <= smaller.throughput:
        return smaller
    return exact
