"""SET-style utilisation: factorise a layer's sub-batch over a cluster of tiles.

A cluster of T tiles is split as ``T = kb * kk * kh * kw`` over batch, output channels and
output rows/columns (Crane Eq. 16). The utilisation of a split is the fraction of useful work
once every dimension is padded to a multiple of its factor; no dimension is split into more
parts than it has elements (no tile gets an empty slice). SET prunes splits whose
utilisation is below 0.75; a layer may also leave tiles of its cluster idle when a smaller
cluster does better, so the model keeps, for every cluster size, the best useful size at or
below it.

Splits of equal throughput can move very different amounts of data: a channel split makes
every tile read the whole input, a spatial split reads halos, a batch or spatial split
copies the weights. :func:`preferred_partition` breaks such ties (within
``TIE_TOLERANCE`` of the best throughput) by the data one tile reads per step, as SET's
intra-layer search prices each partition by its traffic.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

MIN_UTILISATION = 0.75
TIE_TOLERANCE = 0.05
"""Splits within this fraction of the best throughput count as ties (broken by traffic)."""


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


ONE_TILE = Partition(1, 1, 1, 1, 1.0)


@lru_cache(maxsize=20_000)
def _running_best(extents: tuple[int, int, int, int], floor: float) -> list[Partition]:
    """Entry t-1: :func:`best_partition` for t tiles, grown on demand by that function.

    A loop over the tile counts rather than a recursion on ``tiles - 1``, whose depth grew
    with the mesh (a RecursionError from 24 x 24 tiles up); the list keeps the answers for
    smaller counts, as the recursion's cache did."""
    return [ONE_TILE]


@lru_cache(maxsize=100_000)
def best_partition(extents: tuple[int, int, int, int], tiles: int,
                   floor: float = MIN_UTILISATION) -> Partition:
    """The highest-throughput split using at most ``tiles`` tiles (one tile always works)."""
    if tiles <= 1:
        return ONE_TILE
    known = _running_best(extents, floor)
    while len(known) < tiles:
        exact = exact_partition(extents, len(known) + 1, floor)
        smaller = known[-1]
        known.append(smaller if exact is None or exact.throughput <= smaller.throughput else exact)
    return known[tiles - 1]


def _factorisations(tiles: int, extents: tuple[int, int, int, int]) -> list[tuple[int, ...]]:
    """Every (kb, kk, kh, kw) with product ``tiles`` and no factor above its extent."""
    found: list[tuple[int, ...]] = [()]
    for index, extent in enumerate(extents):
        last = index == len(extents) - 1
        grown = []
        for head in found:
            used = 1
            for f in head:
                used *= f
            rest = tiles // used
            options = [rest] if last else [f for f in _divisors(rest) if f <= extent]
            grown += [(*head, f) for f in options if f <= extent]
        found = grown
    return found


def per_tile_reads(extents: tuple[int, int, int, int], factors: tuple[int, ...],
                   window: tuple[int, int, int]) -> int:
    """Elements one tile reads per step under a split: its input box (every input channel,
    with the window's halo) and its slice of the weights. ``window`` is (C, R, S)."""
    b, k, h, w = (-(-e // f) for e, f in zip(extents, factors, strict=True))
    c, r, s = window
    return b * c * (h + r - 1) * (w + s - 1) + k * c * r * s


@lru_cache(maxsize=100_000)
def preferred_partition(extents: tuple[int, int, int, int], tiles: int,
                        window: tuple[int, int, int] = (1, 1, 1),
                        floor: float = MIN_UTILISATION) -> Partition:
    """The best split of :func:`best_partition`, ties broken by :func:`per_tile_reads`."""
    best = best_partition(extents, tiles, floor)
    if best.tiles <= 1:
        return best
    candidates: list[tuple[int, Partition]] = []
    for factors in _factorisations(best.tiles, extents):
        util = 1.0
        for e, f in zip(extents, factors, strict=True):
            util *= dim_efficiency(e, f)
        if util < best.utilisation * (1.0 - TIE_TOLERANCE):
            continue
        kb, kk, kh, kw = factors
        candidates.append((per_tile_reads(extents, factors, window), Partition(kb, kk, kh, kw, util)))
    if not candidates:
        return best
    return min(candidates, key=lambda pair: (pair[0], -pair[1].utilisation))[1]
