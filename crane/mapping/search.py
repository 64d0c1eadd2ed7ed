"""Z3 placement search for small meshes: minimise hop-bytes state by state.

States are independent (every rule and the objective are per state), so each state is a
separate ``z3.Optimize`` problem over the tiles' rows and columns and the columns' ports,
with tile exclusivity and SRAM capacity as constraints, partitions of a column in
increasing tile order (they are interchangeable), and the hop-bytes of ``crane.mapping.hops``
(flow bytes spread evenly over tile pairs, DRAM bytes over a column's tiles, rounded to
whole bytes) as the objective. The heuristic's layout bounds the objective from above; a
state keeps the heuristic's layout unless Z3 finds a strictly cheaper one within its share
of the time limit. Meshes above ``MAX_TILES`` tiles are left to the heuristic.
"""

from __future__ import annotations

import z3

from crane.mapping.hops import state_hop_bytes
from crane.mapping.problem import BlockProblem, Mapping
from crane.solve.smt import minimize

MAX_TILES = 16


def _dist(a: z3.ArithRef, b: z3.ArithRef) -> z3.ArithRef:
    return z3.If(a >= b, a - b, b - a)


def _state_model(problem: BlockProblem, i: int, bound: float
                 ) -> tuple[list[z3.BoolRef], z3.ArithRef, dict[int, list[tuple[z3.ArithRef, z3.ArithRef]]],
                            dict[int, z3.ArithRef]]:
    mesh = problem.mesh
    rc: dict[int, list[tuple[z3.ArithRef, z3.ArithRef]]] = {}
    ports: dict[int, z3.ArithRef] = {}
    rules: list[z3.BoolRef] = []
    for j in problem.placed_columns(i):
        rc[j] = [(z3.Int(f"r{j}_{k}"), z3.Int(f"c{j}_{k}")) for k in range(problem.tiles[i][j])]
        ports[j] = z3.Int(f"port{j}")
        rules += [z3.And(r >= 0, r < mesh.rows, c >= 0, c < mesh.cols) for r, c in rc[j]]
        rules.append(z3.And(ports[j] >= 0, ports[j] < len(mesh.ports)))
    pos = {j: [r * mesh.cols + c for r, c in cells] for j, cells in rc.items()}
    everyone = [x for xs in pos.values() for x in xs]
    if len(everyone) > 1:
        rules.append(z3.Distinct(*everyone))
    for xs in pos.values():
        rules += [a < b for a, b in zip(xs, xs[1:], strict=False)]
    cap = problem.sram_bytes - problem.held[i]
    rules += [z3.BoolVal(problem.sram_need[i][j] <= cap) for j in pos]
    terms: list[z3.ArithRef] = []
    for f in problem.flows[i]:
        weight = max(1, round(f.bytes / (len(rc[f.src]) * len(rc[f.dst]))))
        terms += [weight * (_dist(ra, rb) + _dist(ca, cb))
                  for ra, ca in rc[f.src] for rb, cb in rc[f.dst]]
    for j, cells in rc.items():
        weight = round(problem.dram_bytes[i][j] / len(cells))
        if not weight:
            continue
        pr = _coord(problem, ports[j], 0)
        pc = _coord(problem, ports[j], 1)
        terms += [weight * (_dist(r, pr) + _dist(c, pc)) for r, c in cells]
    objective = z3.Sum(*terms) if terms else z3.IntVal(0)
    rules.append(objective <= int(bound) + 1)
    return rules, objective, rc, ports


def _coord(problem: BlockProblem, port: z3.ArithRef, axis: int) -> z3.ArithRef:
    term: z3.ArithRef = z3.IntVal(problem.mesh.ports[0][axis])
    for k, where in enumerate(problem.mesh.ports):
        term = z3.If(port == k, z3.IntVal(where[axis]), term)
    return term


Layout = tuple[tuple[tuple[int, ...], ...], tuple[int, ...]]


def search_state(problem: BlockProblem, i: int, start: Mapping,
                 seconds: float) -> tuple[Layout | None, float]:
    """A strictly cheaper layout of state ``i`` than ``start``'s (or None), and Z3's time."""
    before = state_hop_bytes(problem, i, start.placement[i], start.ports[i])
    rules, objective, rc, ports = _state_model(problem, i, before)
    model, spent = minimize(rules, objective, int(seconds * 1000))
    if model is None:
        return None, spent
    placement = [()] * problem.columns
    chosen = [-1] * problem.columns
    for j, cells in rc.items():
        placement[j] = tuple(model.eval(r, model_completion=True).as_long() * problem.mesh.cols
                             + model.eval(c, model_completion=True).as_long() for r, c in cells)
        chosen[j] = model.eval(ports[j], model_completion=True).as_long()
    if state_hop_bytes(problem, i, placement, chosen) >= before:
        return None, spent
    return (tuple(placement), tuple(chosen)), spent


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
