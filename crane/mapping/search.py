"""Z3 placement search for small meshes: minimise hop-bytes state by state.

States are independent (every rule and the objective are per state), so each state is a
separate ``z3.Optimize`` problem. Partitions of one column are interchangeable, so the
variables are per column and tile: ``y[j][t]`` (column j occupies tile t) and per column and
port ``q[j][k]`` (column j uses DRAM port k). Constraints: each column occupies exactly its
tile count and uses one port; a tile holds at most one column (tile exclusivity); SRAM
capacity then reduces to each column's per-tile need plus the held share fitting in a tile
(checked up front). The objective is the hop-bytes of ``crane.mapping.hops``: for a flow
p -> c, ``bytes / (|p| |c|)`` times the distance of every occupied tile pair, for DRAM
traffic ``bytes / |j|`` times the distance from the port to every occupied tile (weights
rounded to whole bytes), bounded above by the heuristic's layout. A state keeps the
heuristic's layout unless Z3 finds a strictly cheaper one within its share of the time;
the result is proved legal by ``crane.mapping.legality`` like any other mapping. Meshes
above ``MAX_TILES`` tiles are left to the heuristic.
"""

from __future__ import annotations

import z3

from crane.mapping.hops import state_hop_bytes
from crane.mapping.problem import BlockProblem, Mapping, coords
from crane.solve.smt import minimize

MAX_TILES = 16

Layout = tuple[tuple[tuple[int, ...], ...], tuple[int, ...]]
Occupancy = dict[int, list[z3.BoolRef]]


def _distance(a: tuple[int, int], b: tuple[int, int]) -> int:
    return abs(a[0] - b[0]) + abs(a[1] - b[1])


def _objective(problem: BlockProblem, i: int, y: Occupancy, q: Occupancy) -> z3.ArithRef:
    mesh = problem.mesh
    where = [coords(mesh, t) for t in range(mesh.tiles)]
    terms: list[z3.ArithRef] = []
    for f in problem.flows[i]:
        weight = max(1, round(f.bytes / (problem.tiles[i][f.src] * problem.tiles[i][f.dst])))
        terms += [z3.If(z3.And(y[f.src][t], y[f.dst][u]), weight * _distance(a, b), 0)
                  for t, a in enumerate(where) for u, b in enumerate(where) if a != b]
    for j in y:
        weight = round(problem.dram_bytes[i][j] / problem.tiles[i][j])
        if not weight:
            continue
        terms += [z3.If(z3.And(y[j][t], q[j][k]), weight * _distance(a, port), 0)
                  for t, a in enumerate(where) for k, port in enumerate(mesh.ports)
                  if a != port]
    return z3.Sum(*terms) if terms else z3.IntVal(0)


def _rules(problem: BlockProblem, i: int, y: Occupancy, q: Occupancy) -> list[z3.BoolRef]:
    rules: list[z3.BoolRef] = []
    for j in y:
        rules.append(z3.PbEq([(v, 1) for v in y[j]], problem.tiles[i][j]))
        rules.append(z3.PbEq([(v, 1) for v in q[j]], 1))
    for t in range(problem.mesh.tiles):
        rules.append(z3.PbLe([(y[j][t], 1) for j in y], 1))
    return rules


def search_state(problem: BlockProblem, i: int, start: Mapping,
                 seconds: float) -> tuple[Layout | None, float]:
    """A strictly cheaper layout of state ``i`` than ``start``'s (or None), and Z3's time."""
    columns = problem.placed_columns(i)
    cap = problem.sram_bytes - problem.held[i]
    if any(problem.sram_need[i][j] > cap for j in columns):
        return None, 0.0
    mesh = problem.mesh
    y = {j: [z3.Bool(f"y{j}_{t}") for t in range(mesh.tiles)] for j in columns}
    q = {j: [z3.Bool(f"q{j}_{k}") for k in range(len(mesh.ports))] for j in columns}
    before = state_hop_bytes(problem, i, start.placement[i], start.ports[i])
    objective = _objective(problem, i, y, q)
    rules = [*_rules(problem, i, y, q), objective <= int(before) + 1]
    model, spent = minimize(rules, objective, int(seconds * 1000))
    if model is None:
        return None, spent
    placement: list[tuple[int, ...]] = [() for _ in range(problem.columns)]
    ports = [-1] * problem.columns
    for j in columns:
        placement[j] = tuple(t for t, v in enumerate(y[j])
                             if z3.is_true(model.eval(v, model_completion=True)))
        ports[j] = next(k for k, v in enumerate(q[j])
                        if z3.is_true(model.eval(v, model_completion=True)))
    if state_hop_bytes(problem, i, placement, ports) >= before:
        return None, spent
    return (tuple(placement), tuple(ports)), spent


def search(problem: BlockProblem, start: Mapping, seconds: float) -> tuple[Mapping, float]:
    """``start`` improved by Z3 where it can within ``seconds`` (small meshes only), and
    the seconds Z3 spent."""
    states = [i for i in range(problem.states) if problem.placed_columns(i)]
    if problem.mesh.tiles > MAX_TILES or not states:
        return start, 0.0
    placement, ports = list(start.placement), list(start.ports)
    total = 0.0
    for i in states:
        found, spent = search_state(problem, i, start, seconds / len(states))
        total += spent
        if found is not None:
            placement[i], ports[i] = found
    return Mapping(tuple(placement), tuple(ports)), total
