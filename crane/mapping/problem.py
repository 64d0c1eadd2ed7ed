"""What placing one block of a schedule on the mesh must respect and what it should minimise.

A ``BlockProblem`` is plain data, one per ``segment.block``: per state and column the tile
count the schedule gave the column (``tiles``; 0 = not placed), what one tile of that
partition must keep in SRAM during the state, the bytes flowing between columns that run
side by side, and each column's DRAM traffic. ``crane.mapping.from_schedule`` derives it
from the block's tables and the workload the scheduler used.

SRAM need of one tile (the inelastic part; streamed weights and working activations are cut
into chunks by code generation and sized by the ``alloc`` pass):

* the column's resident weight slice: ``weight_bytes / K-split`` when the cost model's rule
  (``crane.cost.layer.weights_fit``: the slice fits its share of SRAM) makes them resident
  for the partition ``crane.cost.utilisation.best_partition`` picks for that tile count;
* a share of the activations held on chip across the state (the MeT SRAM ranges), spread
  evenly over the mesh as the scheduler's capacity model does
  (``crane.schedule.evaluate.activation_capacity``): ``held[i]`` bytes on every tile.

A ``Mapping`` is the answer: tile ids per (state, column), in partition order, and the DRAM
port (index into the machine's ports) per (state, column), -1 where the column is not placed.
Tile id = row * cols + col.
"""

from __future__ import annotations

from dataclasses import dataclass

from crane.cost.placement import Mesh

Grid = tuple[tuple[int, ...], ...]


@dataclass(frozen=True, slots=True)
class Flow:
    """Column ``src`` sends ``bytes`` to column ``dst`` over the NoC within one state."""

    src: int
    dst: int
    bytes: int


@dataclass(frozen=True, slots=True)
class BlockProblem:
    """One block's placement problem (see the module docstring)."""

    label: str
    layers: tuple[str, ...]
    mesh: Mesh
    sram_bytes: int
    tiles: Grid
    """States x columns: tiles the schedule gives each column (0 = not placed)."""
    sct: Grid
    workloads: tuple[int, ...]
    deps: tuple[tuple[int, int], ...]
    sram_need: Grid
    """States x columns: bytes one tile of the column's partition keeps resident."""
    held: tuple[int, ...]
    """Per state: bytes of held activations every tile keeps (an even share)."""
    flows: tuple[tuple[Flow, ...], ...]
    """Per state: producer-to-consumer traffic between columns placed in that state."""
    dram_bytes: Grid
    """States x columns: DRAM bytes the column moves through its port in that state."""
    sizes_known: bool = True
    """False when the workload was unavailable and byte figures are placeholders."""

    @property
    def states(self) -> int:
        return len(self.tiles)

    @property
    def columns(self) -> int:
        return len(self.layers)

    def placed(self, state: int, column: int) -> bool:
        return self.tiles[state][column] > 0

    def placed_columns(self, state: int) -> tuple[int, ...]:
        return tuple(j for j in range(self.columns) if self.placed(state, j))


@dataclass(frozen=True, slots=True)
class Mapping:
    """Tile ids and DRAM ports of every (state, column); empty / -1 when not placed."""

    placement: tuple[tuple[tuple[int, ...], ...], ...]
    ports: Grid

    @classmethod
    def from_flat(cls, placement: list[tuple[int, ...]], ports: list[int],
                  columns: int) -> Mapping:
        """From the state-major flattened lists of the ``placement``/``ports`` attributes."""
        rows = range(0, len(placement), columns)
        return cls(tuple(tuple(placement[k: k + columns]) for k in rows),
                   tuple(tuple(ports[k: k + columns]) for k in rows))

    def flat_placement(self) -> list[tuple[int, ...]]:
        return [tiles for row in self.placement for tiles in row]

    def flat_ports(self) -> list[int]:
        return [port for row in self.ports for port in row]


def coords(mesh: Mesh, tile: int) -> tuple[int, int]:
    """(row, col) of a tile id."""
    return divmod(tile, mesh.cols)


def in_mesh(mesh: Mesh, tile: int) -> bool:
    return 0 <= tile < mesh.tiles
