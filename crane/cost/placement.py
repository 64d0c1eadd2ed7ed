"""Explicit tile placement and hop counts on the mesh.

Tiles are numbered along a snake (boustrophedon) path over the mesh rows, so every
contiguous range of tile numbers is a connected region; a group of ``n`` tiles starting at
``start`` occupies tiles ``start .. start + n - 1``. Transfers between regions are modelled as
all-to-all (a consumer's partition needs data from every producer partition), so the hop
count is the mean Manhattan distance between the two regions. DRAM traffic of a tile goes
through the DRAM port nearest to it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from crane.hardware.machine import Machine


@dataclass(frozen=True, slots=True)
class TileRun:
    """A contiguous range of tiles along the snake order."""

    start: int
    count: int

    @property
    def stop(self) -> int:
        return self.start + self.count


@dataclass(frozen=True, slots=True)
class Mesh:
    """The geometry a cost model needs: mesh size and DRAM port positions."""

    rows: int
    cols: int
    ports: tuple[tuple[int, int], ...]
    _hash: int = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        # Meshes key the hop and link caches, looked up for every split of every state:
        # hash the ports (one per edge tile on big meshes) once, not on every look-up.
        object.__setattr__(self, "_hash", hash((self.rows, self.cols, self.ports)))

    def __hash__(self) -> int:
        return self._hash

    @classmethod
    def of(cls, machine: Machine) -> Mesh:
        """The mesh of a machine; with no ports declared, one port at the top-left tile."""
        return _mesh_of(machine)

    @property
    def tiles(self) -> int:
        return self.rows * self.cols


@lru_cache(maxsize=1024)
def _mesh_of(machine: Machine) -> Mesh:
    ports = tuple((p.row, p.col) for p in machine.dram_ports) or ((0, 0),)
    return Mesh(machine.rows, machine.cols, ports)


def _coords(mesh: Mesh, region: TileRun) -> np.ndarray:
    """(row, col) of each tile of a region, following the snake order."""
    idx = np.arange(region.start, region.stop)
    row = idx // mesh.cols
    offset = idx % mesh.cols
    col = np.where(row % 2 == 0, offset, mesh.cols - 1 - offset)
    return np.stack([row, col], axis=1)


@dataclass(frozen=True, slots=True)
class _Profile:
    """What hop counts and link loads read from a region, computed once per region: the
    tile counts per mesh row and column, and per cut between neighbouring columns (rows)
    the most tiles one row (column) of the region has on either side of it. All counts
    are exact integers, so the figures built from them are exact too."""

    tiles: int
    rows: tuple[int, ...]
    cols: tuple[int, ...]
    left: tuple[int, ...]
    """Per cut after column c: the most tiles of one row at columns <= c."""
    right: tuple[int, ...]
    """Per cut after column c: the most tiles of one row at columns > c."""
    above: tuple[int, ...]
    """Per cut after row r: the most tiles of one column at rows <= r."""
    below: tuple[int, ...]
    """Per cut after row r: the most tiles of one column at rows > r."""


@lru_cache(maxsize=100_000)
def _profile(mesh: Mesh, region: TileRun) -> _Profile:
    grid = _grid(mesh, region).astype(np.int64)
    by_col, by_row = np.cumsum(grid, axis=1), np.cumsum(grid, axis=0)
    row_totals, col_totals = by_col[:, -1:], by_row[-1:, :]
    return _Profile(
        region.count, tuple(int(x) for x in row_totals[:, 0]),
        tuple(int(x) for x in col_totals[0]),
        tuple(int(x) for x in by_col[:, :-1].max(axis=0, initial=0)),
        tuple(int(x) for x in (row_totals - by_col)[:, :-1].max(axis=0, initial=0)),
        tuple(int(x) for x in by_row[:-1, :].max(axis=1, initial=0)),
        tuple(int(x) for x in (col_totals - by_row)[:-1, :].max(axis=1, initial=0)))


@lru_cache(maxsize=100_000)
def mean_hops(mesh: Mesh, src: TileRun, dst: TileRun) -> float:
    """Mean Manhattan distance between a tile of ``src`` and a tile of ``dst``.

    The distance is a row part plus a column part, so the sum over all pairs is taken from
    the regions' row and column counts (rows x rows and cols x cols, not tiles x tiles): the
    same exact integer, divided by the number of pairs."""
    a, b = _profile(mesh, src), _profile(mesh, dst)
    total = _pair_distance(a.rows, b.rows) + _pair_distance(a.cols, b.cols)
    return total / (a.tiles * b.tiles)


def _pair_distance(xs: tuple[int, ...], ys: tuple[int, ...]) -> int:
    """The sum of ``|i - j| * xs[i] * ys[j]`` over every pair of positions ``i`` and ``j``:
    each cut between neighbouring positions is crossed by every pair it separates."""
    total = left_x = left_y = 0
    all_x, all_y = sum(xs), sum(ys)
    for x, y in zip(xs[:-1], ys[:-1], strict=True):
        left_x, left_y = left_x + x, left_y + y
        total += left_x * (all_y - left_y) + left_y * (all_x - left_x)
    return total


def _grid(mesh: Mesh, region: TileRun) -> np.ndarray:
    """A rows x cols count of the region's tiles (0 or 1 per cell)."""
    grid = np.zeros((mesh.rows, mesh.cols))
    coords = _coords(mesh, region)
    grid[coords[:, 0], coords[:, 1]] = 1.0
    return grid


@lru_cache(maxsize=100_000)
def link_share(mesh: Mesh, src: TileRun, dst: TileRun) -> float:
    """The share of a transfer spread evenly from every tile of ``src`` to every tile of
    ``dst`` that crosses the busiest directed mesh link under XY routing (along the
    sender's row first, then along the receiver's column), as the NoC routes it.

    A link carries ``share * bytes``, so the transfer takes at least ``share * bytes``
    over the link bandwidth however the rest of the mesh is used.

    The eastward link after column c of row r carries the pairs of a sender of row r at a
    column <= c and a receiver at a column > c (any row): its load is a count of the
    sender's row times a count of the receiver, and the busiest such link takes the row
    with the most senders left of the cut. Westward, southward (the receiver's column, from
    the rows above the cut) and northward links are alike.
    """
    a, b = _profile(mesh, src), _profile(mesh, dst)
    pairs = a.tiles * b.tiles
    if not pairs:
        return 0.0
    busiest = 0
    col_left = row_above = 0
    for c, (senders_left, senders_right) in enumerate(zip(a.left, a.right, strict=True)):
        col_left += b.cols[c]
        busiest = max(busiest, senders_left * (b.tiles - col_left),
                      senders_right * col_left)
    for r, (receivers_above, receivers_below) in enumerate(zip(b.above, b.below, strict=True)):
        row_above += a.rows[r]
        busiest = max(busiest, row_above * receivers_below,
                      (a.tiles - row_above) * receivers_above)
    return busiest / pairs


@lru_cache(maxsize=100_000)
def dram_hops(mesh: Mesh, region: TileRun) -> float:
    """Mean distance from a tile of ``region`` to its DRAM port: every tile's DMA goes
    through the port nearest to it (``Machine.nearest_port``, as codegen emits it)."""
    before = _port_distance_sums(mesh)
    return (before[region.stop] - before[region.start]) / region.count


@lru_cache(maxsize=1024)
def _port_distance_sums(mesh: Mesh) -> tuple[int, ...]:
    """Per tile number t: the summed nearest-port distances of tiles 0 .. t-1 (exact
    integers, so a region's mean is one subtraction and one division)."""
    tiles = _coords(mesh, TileRun(0, mesh.tiles))
    ports = np.array(mesh.ports)
    nearest = np.abs(tiles[:, None, :] - ports[None, :, :]).sum(axis=2).min(axis=1)
    return (0, *(int(x) for x in np.cumsum(nearest)))


def split_regions(start: int, counts: tuple[int, ...]) -> tuple[TileRun, ...]:
    """Consecutive regions of the given sizes starting at tile ``start``."""
    regions: list[TileRun] = []
    cursor = start
    for count in counts:
        regions.append(TileRun(cursor, count))
        cursor += count
    return tuple(regions)
