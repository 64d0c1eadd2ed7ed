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


@lru_cache(maxsize=100_000)
def mean_hops(mesh: Mesh, src: TileRun, dst: TileRun) -> float:
    """Mean Manhattan distance between a tile of ``src`` and a tile of ``dst``.

    The distance is a row part plus a column part, so the sum over all pairs is taken from
    the regions' row and column counts (rows x rows and cols x cols, not tiles x tiles): the
    same exact integer, divided by the number of pairs."""
    a, b = _coords(mesh, src), _coords(mesh, dst)
    total = _pair_distance(a[:, 0], b[:, 0], mesh.rows) + _pair_distance(a[:, 1], b[:, 1], mesh.cols)
    return total / (len(a) * len(b))


def _pair_distance(xs: np.ndarray, ys: np.ndarray, size: int) -> int:
    """The sum of ``|x - y|`` over every pair of ``xs`` and ``ys`` (positions below ``size``)."""
    positions = np.arange(size)
    gaps = np.abs(positions[:, None] - positions[None, :])
    return int(np.bincount(xs, minlength=size) @ gaps @ np.bincount(ys, minlength=size))


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
    """
    a, b = _grid(mesh, src), _grid(mesh, dst)
    pairs = a.sum() * b.sum()
    if not pairs:
        return 0.0
    # Row legs: senders of row r left of (or at) column c, receivers right of c, and back.
    senders_left = np.cumsum(a, axis=1)[:, :-1]
    senders_right = np.cumsum(a[:, ::-1], axis=1)[:, ::-1][:, 1:]
    receivers_col = b.sum(axis=0)
    receivers_right = np.cumsum(receivers_col[::-1])[::-1][1:]
    receivers_left = np.cumsum(receivers_col)[:-1]
    east = senders_left * receivers_right[None, :]
    west = senders_right * receivers_left[None, :]
    # Column legs in the receiver's column c: senders above row r, receivers below, and back.
    senders_row = a.sum(axis=1)
    senders_above = np.cumsum(senders_row)[:-1]
    senders_below = np.cumsum(senders_row[::-1])[::-1][1:]
    receivers_below = np.cumsum(b[::-1, :], axis=0)[::-1, :][1:, :]
    receivers_above = np.cumsum(b, axis=0)[:-1, :]
    south = senders_above[:, None] * receivers_below
    north = senders_below[:, None] * receivers_above
    busiest = max((float(x.max()) for x in (east, west, south, north) if x.size), default=0.0)
    return busiest / pairs


@lru_cache(maxsize=100_000)
def dram_hops(mesh: Mesh, region: TileRun) -> float:
    """Mean distance from a tile of ``region`` to its DRAM port: every tile's DMA goes
    through the port nearest to it (``Machine.nearest_port``, as codegen emits it)."""
    tiles = _coords(mesh, region)
    ports = np.array(mesh.ports)
    dist = np.abs(tiles[:, None, :] - ports[None, :, :]).sum(axis=2)
    return float(dist.min(axis=1).mean())


def split_regions(start: int, counts: tuple[int, ...]) -> tuple[TileRun, ...]:
    """Consecutive regions of the given sizes starting at tile ``start``."""
    regions: list[TileRun] = []
    cursor = start
    for count in counts:
        regions.append(TileRun(cursor, count))
        cursor += count
    return tuple(regions)
