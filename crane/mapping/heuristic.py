"""A fast placer: contiguous runs along a snake path, the cheapest of a few layouts.

For every state the placed columns get consecutive runs of tiles along a snake
(boustrophedon) path, so each partition is a connected region and pipeline neighbours sit
side by side (the layout the cost model assumes, ``crane.cost.placement``). The candidates
are the row-wise and column-wise snakes, each walked from either end, with the columns in
order or reversed, starting at a few offsets when the state leaves tiles free. Each column's
table entry names the DRAM port nearest to its run (ties go to the port fewer columns use);
the DMA of each tile goes through the port nearest to that tile. The
candidate with the fewest hop-bytes (``crane.mapping.hops``) wins; ties keep the earlier.
"""

from __future__ import annotations

from collections.abc import Sequence

from crane.cost.placement import Mesh
from crane.mapping.hops import port_distance, state_hop_bytes
from crane.mapping.problem import BlockProblem, Mapping


def snake_paths(mesh: Mesh) -> list[tuple[int, ...]]:
    """Row-wise and column-wise snake orders of the tile ids, each from both ends."""
    rows = [r * mesh.cols + (c if r % 2 == 0 else mesh.cols - 1 - c)
            for r in range(mesh.rows) for c in range(mesh.cols)]
    cols = [(r if c % 2 == 0 else mesh.rows - 1 - r) * mesh.cols + c
            for c in range(mesh.cols) for r in range(mesh.rows)]
    paths: list[tuple[int, ...]] = []
    for path in (rows, cols, rows[::-1], cols[::-1]):
        if tuple(path) not in paths:
            paths.append(tuple(path))
    return paths


def nearest_ports(mesh: Mesh, runs: Sequence[Sequence[int]]) -> list[int]:
    """For each run of tiles (empty = not placed: -1), the nearest, least-shared port."""
    used = [0] * len(mesh.ports)
    chosen: list[int] = []
    for tiles in runs:
        if not tiles:
            chosen.append(-1)
            continue
        best = min(range(len(mesh.ports)),
                   key=lambda p: (port_distance(mesh, p, tiles), used[p], p))
        used[best] += 1
        chosen.append(best)
    return chosen


def _layout(path: Sequence[int], order: Sequence[int], counts: Sequence[int], offset: int,
            columns: int) -> list[tuple[int, ...]]:
    runs: list[tuple[int, ...]] = [() for _ in range(columns)]
    cursor = offset
    for j in order:
        runs[j] = tuple(path[cursor: cursor + counts[j]])
        cursor += counts[j]
    return runs


def place_state(problem: BlockProblem, state: int) -> tuple[list[tuple[int, ...]], list[int]]:
    """The cheapest candidate layout of one state: tiles and ports per column."""
    counts = problem.tiles[state]
    placed = problem.placed_columns(state)
    empty: list[tuple[int, ...]] = [() for _ in counts]
    if not placed:
        return empty, [-1] * len(counts)
    total = sum(counts)
    if total > problem.mesh.tiles:
        raise ValueError(f"state {state} needs {total} tiles, the mesh has {problem.mesh.tiles}")
    free = problem.mesh.tiles - total
    offsets = sorted({0, free // 2, free})
    best: tuple[float, list[tuple[int, ...]], list[int]] | None = None
    for path in snake_paths(problem.mesh):
        for order in (placed, placed[::-1]):
            for offset in offsets:
                runs = _layout(path, order, counts, offset, len(counts))
                ports = nearest_ports(problem.mesh, runs)
                cost = state_hop_bytes(problem, state, runs, ports)
                if best is None or cost < best[0]:
                    best = (cost, runs, ports)
    assert best is not None
    return best[1], best[2]


def place(problem: BlockProblem) -> Mapping:
    """A mapping of every state of a block (see the module docstring).

    Raises ``ValueError`` when a state asks for more tiles than the mesh has.
    """
    placement, ports = [], []
    for i in range(problem.states):
        runs, chosen = place_state(problem, i)
        placement.append(tuple(runs))
        ports.append(tuple(chosen))
    return Mapping(tuple(placement), tuple(ports))
