"""Legality of a mapping, encoded in Z3 and proved per block; unsat cores become diagnostics.

Variables: the tile ``pos[i][j][k]`` of partition k of column j in state i, the DRAM port
``port[i][j]`` and ``placed[i][j]``. A mapping is a set of *pins* fixing them. The rules,
each a named group (``crane.solve.smt.NamedSolver``):

``Map.tile_exclusive`` (state i)
    the partitions of a state sit on pairwise distinct tiles;
``Map.sram_capacity`` (state i, column j)
    on every tile of column j, the resident needs of all partitions on that tile plus the
    tile's share of held activations fit in its SRAM (a load array summed per tile, so the
    rule holds for any placement, shared tiles included);
``Map.dependency_order`` (state i, producer p, consumer c)
    a consumer placed in state i has its producer placed in state i or before, and is not
    ahead of it in sub-batches (``ScT[i][c] <= ScT[i][p]``);
``Map.route_valid`` (state i, flow p -> c)
    every XY route between a tile of p and a tile of c uses existing links: the horizontal
    leg runs on the source's row, the vertical leg on the destination's column, so all its
    links exist exactly when both end tiles lie inside the mesh (the conjunction over all
    tile pairs is encoded per end tile);
``Map.port_reachable`` (state i, column j)
    the column's port is one of the machine's DRAM ports and the XY route from it reaches
    every tile of the column.

``check`` pins a mapping, asks Z3, and on unsat shrinks each conflict to a minimal core:
its rule names the constraint, block, state and columns, its pins name the tiles.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import z3

from crane.mapping.hops import first_missing_link
from crane.mapping.problem import BlockProblem, Mapping, coords, in_mesh
from crane.solve.smt import Name, NamedSolver, is_pin

EXCLUSIVE = "Map.tile_exclusive"
SRAM = "Map.sram_capacity"
DEPENDENCY = "Map.dependency_order"
ROUTE = "Map.route_valid"
PORT = "Map.port_reachable"
RULES = {"exclusive": EXCLUSIVE, "sram": SRAM, "dependency": DEPENDENCY, "route": ROUTE,
         "port": PORT}


@dataclass(frozen=True, slots=True)
class MapViolation:
    """A broken legality rule: where, which layers and tiles, and what was found."""

    constraint: str
    block: str
    state: int
    columns: tuple[str, ...]
    tiles: tuple[int, ...]
    message: str

    def render(self) -> str:
        return (f"violates {self.constraint} in block '{self.block}', state {self.state}: "
                f"{self.message}")


@dataclass(frozen=True)
class Variables:
    """The Z3 variables of one block's mapping."""

    pos: tuple[tuple[tuple[z3.ArithRef, ...], ...], ...]
    port: tuple[tuple[z3.ArithRef, ...], ...]
    placed: tuple[tuple[z3.BoolRef, ...], ...]

    @classmethod
    def of(cls, problem: BlockProblem) -> Variables:
        def tag(i: int, j: int) -> str:
            return f"s{i}c{j}"
        pos = tuple(tuple(tuple(z3.Int(f"pos_{tag(i, j)}_{k}") for k in range(t))
                          for j, t in enumerate(row)) for i, row in enumerate(problem.tiles))
        port = tuple(tuple(z3.Int(f"port_{tag(i, j)}") for j in range(problem.columns))
                     for i in range(problem.states))
        placed = tuple(tuple(z3.Bool(f"placed_{tag(i, j)}") for j in range(problem.columns))
                       for i in range(problem.states))
        return cls(pos, port, placed)

    def state(self, i: int) -> list[z3.ArithRef]:
        return [x for column in self.pos[i] for x in column]


def _end_ok(problem: BlockProblem, x: z3.ArithRef) -> z3.BoolRef:
    """An end tile of XY legs: its row and column are inside the mesh.

    For ``x = row * cols + col`` with ``0 <= col < cols`` that is ``0 <= x < rows * cols``.
    """
    return z3.And(x >= 0, x < problem.mesh.tiles)


def _port_coord(problem: BlockProblem, port: z3.ArithRef, axis: int) -> z3.ArithRef:
    term: z3.ArithRef = z3.IntVal(-1)
    for k, where in reversed(list(enumerate(problem.mesh.ports))):
        term = z3.If(port == k, z3.IntVal(where[axis]), term)
    return term


def _state_rules(problem: BlockProblem, v: Variables, i: int) -> dict[Name, z3.BoolRef]:
    found: dict[Name, z3.BoolRef] = {}
    everyone = v.state(i)
    if len(everyone) > 1:
        found[("exclusive", i)] = z3.Distinct(*everyone)
    load = z3.K(z3.IntSort(), z3.IntVal(0))
    for j in problem.placed_columns(i):
        for x in v.pos[i][j]:
            load = z3.Store(load, x, z3.Select(load, x) + problem.sram_need[i][j])
    cap = problem.sram_bytes - problem.held[i]
    for j in problem.placed_columns(i):
        found[("sram", i, j)] = z3.And(*(z3.Select(load, x) <= cap for x in v.pos[i][j]))
        pr, pc = _port_coord(problem, v.port[i][j], 0), _port_coord(problem, v.port[i][j], 1)
        found[("port", i, j)] = z3.And(
            v.port[i][j] >= 0, v.port[i][j] < len(problem.mesh.ports),
            pr >= 0, pr < problem.mesh.rows, pc >= 0, pc < problem.mesh.cols,
            *(_end_ok(problem, x) for x in v.pos[i][j]))
    for f in problem.flows[i]:
        ends = (*v.pos[i][f.src], *v.pos[i][f.dst])
        found[("route", i, f.src, f.dst)] = z3.And(*(_end_ok(problem, x) for x in ends))
    return found


def rules(problem: BlockProblem, v: Variables) -> dict[Name, z3.BoolRef]:
    """Every legality rule of a block, by name (see the module docstring)."""
    found: dict[Name, z3.BoolRef] = {}
    for i in range(problem.states):
        found.update(_state_rules(problem, v, i))
    for p, c in problem.deps:
        for i in range(problem.states):
            if not problem.placed(i, c):
                continue
            earlier = z3.Or(*(v.placed[k][p] for k in range(i + 1)))
            ahead = problem.sct[i][c] <= problem.sct[i][p]
            found[("dependency", i, p, c)] = z3.Implies(v.placed[i][c],
                                                         z3.And(earlier, z3.BoolVal(ahead)))
    return found


def pins(problem: BlockProblem, mapping: Mapping, v: Variables) -> dict[Name, z3.BoolRef]:
    """Facts fixing the variables to ``mapping`` (whose lengths must match the tiles)."""
    found: dict[Name, z3.BoolRef] = {}
    for i, row in enumerate(mapping.placement):
        for j, tiles in enumerate(row):
            if len(tiles) != problem.tiles[i][j]:
                raise ValueError(f"state {i}, column {j}: {len(tiles)} tiles listed, "
                                 f"the schedule gives {problem.tiles[i][j]}")
            found[("pin", i, j, "placed")] = v.placed[i][j] == bool(tiles)
            for k, tile in enumerate(tiles):
                found[("pin", i, j, k)] = v.pos[i][j][k] == tile
            if tiles:
                found[("pin", i, j, "port")] = v.port[i][j] == mapping.ports[i][j]
    return found


@dataclass(frozen=True)
class CheckResult:
    violations: tuple[MapViolation, ...]
    seconds: float

    @property
    def legal(self) -> bool:
        return not self.violations


def check(problem: BlockProblem, mapping: Mapping, limit: int = 10) -> CheckResult:
    """Prove ``mapping`` legal with Z3, or explain each minimal conflict."""
    v = Variables.of(problem)
    solver = NamedSolver()
    for name, rule in (*rules(problem, v).items(), *pins(problem, mapping, v).items()):
        solver.add(name, rule)
    cores = solver.violations(limit)
    found = [_explain(problem, mapping, core) for core in cores]
    return CheckResult(tuple(found), solver.seconds)


def _tile_text(problem: BlockProblem, tile: int) -> str:
    r, c = coords(problem.mesh, tile)
    return f"tile {tile} (row {r}, col {c})"


def _explain(problem: BlockProblem, mapping: Mapping, core: Sequence[Name]) -> MapViolation:
    rule = next(n for n in core if not is_pin(n))
    assert isinstance(rule, tuple)
    pinned = tuple(sorted({mapping.placement[n[1]][n[2]][n[3]] for n in core
                           if is_pin(n) and isinstance(n, tuple) and isinstance(n[3], int)}))
    kind, state = rule[0], rule[1]
    explain = {"exclusive": _exclusive, "sram": _sram, "dependency": _dependency,
               "route": _route, "port": _port}[kind]
    columns, tiles, message = explain(problem, mapping, rule[1:], pinned)
    return MapViolation(RULES[kind], problem.label, state,
                        tuple(problem.layers[j] for j in columns), tiles, message)


Explained = tuple[tuple[int, ...], tuple[int, ...], str]


def _exclusive(problem: BlockProblem, mapping: Mapping, where: tuple, pinned: tuple) -> Explained:
    (i,) = where
    owners: dict[int, list[int]] = {}
    for j, tiles in enumerate(mapping.placement[i]):
        for tile in tiles:
            owners.setdefault(tile, []).append(j)
    shared = [t for t, js in sorted(owners.items()) if len(js) > 1]
    tile = shared[0] if shared else (pinned[0] if pinned else -1)
    holders = list(dict.fromkeys(owners.get(tile, [])))
    names = " and ".join(f"'{problem.layers[j]}'" for j in holders)
    twice = " twice" if len(holders) == 1 else ""
    more = f" ({len(shared) - 1} more shared tiles)" if len(shared) > 1 else ""
    return (tuple(holders), tuple(shared),
            f"{_tile_text(problem, tile)} is given to {names}{twice}{more}")


def _sram(problem: BlockProblem, mapping: Mapping, where: tuple, pinned: tuple) -> Explained:
    i, j = where
    loads: dict[int, int] = {}
    for c, tiles in enumerate(mapping.placement[i]):
        for tile in tiles:
            loads[tile] = loads.get(tile, 0) + problem.sram_need[i][c]
    over = [t for t in mapping.placement[i][j]
            if loads.get(t, 0) + problem.held[i] > problem.sram_bytes]
    tile = over[0] if over else (pinned[0] if pinned else -1)
    return ((j,), tuple(over),
            f"{_tile_text(problem, tile)} of '{problem.layers[j]}' needs "
            f"{loads.get(tile, 0) + problem.held[i]} bytes (resident weights "
            f"{loads.get(tile, 0)}, held activations {problem.held[i]}) > SRAM "
            f"{problem.sram_bytes}")


def _dependency(problem: BlockProblem, mapping: Mapping, where: tuple,
                pinned: tuple) -> Explained:
    i, p, c = where
    producer, consumer = problem.layers[p], problem.layers[c]
    if not any(mapping.placement[k][p] for k in range(i + 1)):
        message = f"consumer '{consumer}' is placed but its producer '{producer}' is not " \
                  f"placed in this or an earlier state"
    else:
        message = f"consumer '{consumer}' at {problem.sct[i][c]} sub-batches is ahead of " \
                  f"its producer '{producer}' at {problem.sct[i][p]}"
    return (p, c), tuple(mapping.placement[i][c]), message


def _broken_route(problem: BlockProblem, src: tuple[int, int], dst: tuple[int, int]) -> str:
    """Why the XY route between two positions (one of them outside the mesh) is broken."""
    missing = first_missing_link(problem.mesh, src, dst)
    if missing is not None:
        return f"no link {missing[0]} -> {missing[1]}"
    return f"{dst} is outside the mesh"


def _route(problem: BlockProblem, mapping: Mapping, where: tuple, pinned: tuple) -> Explained:
    i, p, c = where
    mesh = problem.mesh
    for a in mapping.placement[i][p]:
        for b in mapping.placement[i][c]:
            if in_mesh(mesh, a) and in_mesh(mesh, b):
                continue
            why = _broken_route(problem, coords(mesh, a), coords(mesh, b))
            return ((p, c), (a, b),
                    f"the XY route from {_tile_text(problem, a)} of '{problem.layers[p]}' to "
                    f"{_tile_text(problem, b)} of '{problem.layers[c]}' leaves the "
                    f"{mesh.rows}x{mesh.cols} mesh ({why})")
    return (p, c), pinned, "a route leaves the mesh"


def _port(problem: BlockProblem, mapping: Mapping, where: tuple, pinned: tuple) -> Explained:
    i, j = where
    mesh, port = problem.mesh, mapping.ports[i][j]
    name = problem.layers[j]
    if not 0 <= port < len(mesh.ports):
        return ((j,), (), f"'{name}' uses DRAM port {port}, but the machine has "
                          f"{len(mesh.ports)} ports (0..{len(mesh.ports) - 1})")
    bad = [t for t in mapping.placement[i][j] if not in_mesh(mesh, t)]
    tile = bad[0] if bad else (pinned[0] if pinned else -1)
    why = _broken_route(problem, mesh.ports[port], coords(mesh, tile))
    return ((j,), tuple(bad),
            f"{_tile_text(problem, tile)} of '{name}' cannot be reached from DRAM port "
            f"{port} at {mesh.ports[port]} ({why})")
