"""Explicit tile placement and hop counts on the mesh.

Tiles are numbered along a snake (boustrophedon) path over the mesh rows, so every
contiguous range of tile numbers is a connected region; a group of ``n`` tiles starting at
``start`` occupies tiles ``start .. start + n - 1``. Transfers between regions are modelled as
all-to-all (a consumer's partition needs data from every producer partition), so the hop
count is the mean Manhattan distance between the two regions. DRAM traffic of a tile goes
through its nearest DRAM port.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from crane.hardware.machine import Machine


@dataclass(frozen=True, slots=True)
class Region:
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

    @classmethod
    def of(cls, machine: Machine) -> Mesh:
        """The mesh of a machine; with no ports declared, one port at the top-left tile."""
        ports = tuple((p.row, p.col) for p in machine.dram_ports) or ((0, 0),)
        return cls(machine.rows, machine.cols, ports)

    @property
    def tiles(self) -> int:
        return self.rows * self.cols


def _coords(mesh: Mesh, region: Region) -> np.ndarray:
    """(row, col) of each tile of a region, following the snake order."""
    idx = np.arange(region.start, region.stop)
    row = idx // mesh.cols
    offset = idx % mesh.cols
    col = np.where(row % 2 == 0, offset, mesh.cols - 1 - offset)
    return np.stack([row, col], axis=1)


@lru_cache(maxsize=100_000)
def mean_hops(mesh: Mesh, src: Region, dst: Region) -> float:
    """Mean Manhattan distance between a tile of ``src`` and a tile of ``dst``."""
    a, b = _coords(mesh, src), _coords(mesh, dst)
    diff = np.abs(a[:, None, :] - b[None, :, :]).sum(axis=2)
    return float(diff.mean())


@lru_cache(maxsize=100_000)
def dram_hops(mesh: Mesh, region: Region) -> float:
    """Mean distance from a tile of ``region`` to its nearest DRAM port."""
    tiles = _coords(mesh, region)
    ports = np.array(mesh.ports)
    dist = np.abs(tiles[:, None, :] - ports[None, :, :]).sum(axis=2)
    return float(dist.min(axis=1).mean())


def split_regions(start: int, counts: tuple[int, ...]) -> tuple[Region, ...]:
    """Consecutive regions of the given sizes starting at tile ``start``."""
    regions: list[Region] = []
    cursor = start
    for count in counts:
        regions.append(Region(cursor, count))
        cursor += count
    return tuple(regions)
