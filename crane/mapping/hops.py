"""Dimension-ordered (XY) routes and the hop-bytes a mapping costs.

An XY route goes along the source tile's row to the destination's column, then along that
column to the destination: ``hops = |dr| + |dc|``. Traffic between two placed columns is
all-to-all (every consumer partition reads from every producer partition, as in the cost
model, ``crane.cost.placement``), so its hop-bytes are its bytes times the mean distance
between the two tile sets; DRAM traffic of a column is spread evenly over its tiles, each
tile's through the DRAM port nearest to it (``Machine.nearest_port``, as codegen emits it
and the cost model counts it).
"""

from __future__ import annotations

from collections.abc import Sequence

from crane.cost.placement import Mesh
from crane.mapping.problem import BlockProblem, Mapping, coords

Link = tuple[tuple[int, int], tuple[int, int]]


def xy_route(mesh: Mesh, src: tuple[int, int], dst: tuple[int, int]) -> list[Link]:
    """The links (from, to) of the XY route between two (row, col) positions."""
    (r, c), (r2, c2) = src, dst
    links: list[Link] = []
    step = 1 if c2 >= c else -1
    for col in range(c, c2, step):
        links.append(((r, col), (r, col + step)))
    step = 1 if r2 >= r else -1
    for row in range(r, r2, step):
        links.append(((row, c2), (row + step, c2)))
    return links


def link_exists(mesh: Mesh, link: Link) -> bool:
    """Whether a link joins two neighbouring tiles of the mesh."""
    (r, c), (r2, c2) = link
    inside = all(0 <= a < mesh.rows and 0 <= b < mesh.cols for a, b in ((r, c), (r2, c2)))
    return inside and abs(r - r2) + abs(c - c2) == 1


def first_missing_link(mesh: Mesh, src: tuple[int, int], dst: tuple[int, int]) -> Link | None:
    """The first link of the XY route from ``src`` to ``dst`` that the mesh lacks, or None.

    Found without walking the route (ids far outside the mesh make it arbitrarily long).
    """
    (r, c), (r2, c2) = src, dst
    for (a, b), (a2, b2), along_cols in (((r, c), (r, c2), True), ((r, c2), (r2, c2), False)):
        if (a, b) == (a2, b2):
            continue
        step = 1 if (b2 >= b if along_cols else a2 >= a) else -1
        if not (0 <= a < mesh.rows and 0 <= b < mesh.cols):
            nxt = (a, b + step) if along_cols else (a + step, b)
            return (a, b), nxt
        # Inside at the start: the first link crossing the mesh boundary, if any.
        if along_cols and not 0 <= b2 < mesh.cols:
            edge = mesh.cols - 1 if step > 0 else 0
            return (a, edge), (a, edge + step)
        if not along_cols and not 0 <= a2 < mesh.rows:
            edge = mesh.rows - 1 if step > 0 else 0
            return (edge, b), (edge + step, b)
    return None


def mean_distance(mesh: Mesh, a: Sequence[int], b: Sequence[int]) -> float:
    """Mean XY hops between a tile of ``a`` and a tile of ``b``."""
    if not a or not b:
        return 0.0
    pa = [coords(mesh, t) for t in a]
    pb = [coords(mesh, t) for t in b]
    rows = sum(abs(x[0] - y[0]) for x in pa for y in pb)
    cols = sum(abs(x[1] - y[1]) for x in pa for y in pb)
    return (rows + cols) / (len(pa) * len(pb))


def port_distance(mesh: Mesh, port: int, tiles: Sequence[int]) -> float:
    """Mean XY hops from DRAM port ``port`` to the tiles of a partition."""
    if not tiles or not 0 <= port < len(mesh.ports):
        return 0.0
    pr, pc = mesh.ports[port]
    return sum(abs(r - pr) + abs(c - pc) for r, c in (coords(mesh, t) for t in tiles)) / len(tiles)


def nearest_port_distance(mesh: Mesh, tiles: Sequence[int]) -> float:
    """Mean XY hops from each tile of a partition to the DRAM port nearest to it (the port
    its loads and stores go through, ``Machine.nearest_port``)."""
    if not tiles or not mesh.ports:
        return 0.0
    total = 0
    for r, c in (coords(mesh, t) for t in tiles):
        total += min(abs(r - pr) + abs(c - pc) for pr, pc in mesh.ports)
    return total / len(tiles)


def state_hop_bytes(problem: BlockProblem, state: int,
                    placement: Sequence[Sequence[int]], ports: Sequence[int]) -> float:
    """Hop-bytes of one state: column-to-column flows plus DRAM traffic through ports."""
    mesh = problem.mesh
    total = sum(f.bytes * mean_distance(mesh, placement[f.src], placement[f.dst])
                for f in problem.flows[state])
    # Each tile's DMA goes through its nearest port, whichever port the table names.
    return total + sum(problem.dram_bytes[state][j] * nearest_port_distance(mesh, placement[j])
                       for j in problem.placed_columns(state))


def hop_bytes(problem: BlockProblem, mapping: Mapping) -> float:
    """Hop-bytes of a whole block's mapping."""
    return sum(state_hop_bytes(problem, i, mapping.placement[i], mapping.ports[i])
               for i in range(problem.states))
