"""SET-style utilisation: factorise a layer's sub-batch over a cluster of tiles.

A cluster of T tiles is split as ``T = kb * kk * kh * kw`` over batch, output channels and
output rows/columns (Crane Eq. 16). The utilisation of a split is the fraction of useful work
once every dimension is padded to a multiple of its factor. SET prunes splits whose
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


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def _best_split(extents: tuple[int, ...], tiles: int, floor: float) -> tuple[float, tuple[int, ...]]:
    """Best product-of-efficiencies split of ``tiles`` over ``extents`` (depth-first, pruned).

    Efficiencies only shrink as factors are applied, so any prefix below ``floor`` is cut.
    """
    if not extents:
        return (1.0, ()) if tiles == 1 else (0.0, ())
    best: tuple[float, tuple[int, ...]] = (0.0, ())
    head, rest = extents[0], extents[1:]
    for factor in _divisors(tiles):
        if factor > head:
            break
        eff = dim_efficiency(head, factor)
        if eff < floor:
            continue
        sub, factors = _best_split(rest, tiles // factor, floor / eff)
        if eff * sub > best[0]:
            best = (eff * sub, (factor, *factors))
    return best


@lru_cache(maxsize=200_000)
def exact_partition(extents: tuple[int, int, int, int], tiles: int,
                    floor: float = MIN_UTILISATION) -> Partition | None:
    """The best split of exactly ``tiles`` tiles over (batch, K, H, W), or None below floor."""
    util, factors = _best_split(extents, tiles, floor)
    if util < floor or not factors:
        return None
    kb, kk, kh, kw = factors
    return Partition(kb, kk, kh, kw, util)


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
