"""crane.mapping without the driver: XY routes, the heuristic, the Z3 checker, the search."""

from __future__ import annotations

import dataclasses
import itertools

import pytest
import z3

from crane.cost.placement import Mesh
from crane.dialects.segment_tables import ScT, is_active
from crane.hardware.machine import DramPort, Machine
from crane.mapping.from_schedule import block_problem
from crane.mapping.heuristic import place, snake_paths
from crane.mapping.hops import (
    first_missing_link,
    hop_bytes,
    link_exists,
    mean_distance,
    xy_route,
)
from crane.mapping.legality import (
    DEPENDENCY,
    EXCLUSIVE,
    PORT,
    ROUTE,
    SRAM,
    check,
)
from crane.mapping.problem import BlockProblem, Mapping
from crane.mapping.search import search
from crane.solve.smt import NamedSolver

MESH2 = Machine.edge().with_changes(name="m2", rows=2, cols=2,
                                    dram_ports=Machine.edge_ports(2, 2))
EDGE = Machine.edge()


def _problem(machine: Machine, workloads: tuple[int, ...], n: int,
             tiles: tuple[tuple[int, ...], ...], met_sram: tuple[tuple[int, ...], ...] | None = None,
             deps: tuple[tuple[int, int], ...] | None = None) -> BlockProblem:
    """A block of ``n`` columns in a chain, without a workload (unit byte figures)."""
    sct = ScT.from_workloads(workloads, n)
    low = met_sram or tuple(tuple(0 for _ in range(n)) for _ in sct.values)
    chain = deps if deps is not None else tuple((j, j + 1) for j in range(n - 1))
    return block_problem("a..b", [f"l{j}" for j in range(n)], (sct, low), chain, tiles,
                         (1,) * n, 1, machine, None)


def _pipeline(machine: Machine, n: int) -> BlockProblem:
    """A pipelined chain of ``n`` columns sharing the mesh evenly in every state."""
    states = 2 * n - 1
    tiles = []
    for i in range(states):
        active = [j for j in range(n) if is_active(n, i, j)]
        share = machine.tiles // len(active)
        tiles.append(tuple(share if j in active else 0 for j in range(n)))
    # Workloads repeat with period n (every column processes the same total); the twos
    # let consumers take sub-batches straight from their producers.
    workloads = tuple(2 if i % n == 1 else 1 for i in range(states))
    return _problem(machine, workloads, n, tuple(tiles))


def test_xy_route_goes_along_the_row_then_the_column() -> None:
    mesh = Mesh.of(EDGE)
    route = xy_route(mesh, (0, 0), (2, 3))
    assert route[0] == ((0, 0), (0, 1)) and route[2] == ((0, 2), (0, 3))
    assert route[-1] == ((1, 3), (2, 3)) and len(route) == 5
    assert all(link_exists(mesh, link) for link in route)
    assert not link_exists(mesh, ((3, 0), (4, 0)))
    assert xy_route(mesh, (1, 1), (1, 1)) == []


def test_first_missing_link_agrees_with_walking_the_route() -> None:
    mesh = Mesh.of(EDGE)
    points = [(r, c) for r in range(-2, 7) for c in range(-2, 7)]
    for a, b in itertools.product(points, points):
        walked = next((link for link in xy_route(mesh, a, b) if not link_exists(mesh, link)),
                      None)
        assert first_missing_link(mesh, a, b) == walked


def test_a_tile_id_far_outside_the_mesh_is_diagnosed_at_once() -> None:
    problem = _pipeline(EDGE, 2)
    legal = place(problem)
    far = _with(legal, 0, 0, (*legal.placement[0][0][:-1], 10**11))
    found = check(problem, far).violations
    assert [v.constraint for v in found] == [PORT] and found[0].tiles == (10**11,)
    assert "(row 25000000000, col 0)" in found[0].message and "no link (3, 0) -> (4, 0)" in found[0].message


def test_mean_distance_and_snake_paths() -> None:
    mesh = Mesh.of(MESH2)
    assert mean_distance(mesh, [0], [3]) == 2.0
    assert mean_distance(mesh, [0, 1], [2, 3]) == 1.5
    for path in snake_paths(Mesh.of(EDGE)):
        assert sorted(path) == list(range(16))
        steps = [divmod(a, 4) for a in path]
        assert all(abs(r - r2) + abs(c - c2) == 1
                   for (r, c), (r2, c2) in itertools.pairwise(steps))


@pytest.mark.parametrize(("machine", "n"), [(MESH2, 1), (MESH2, 2), (EDGE, 2), (EDGE, 3),
                                            (EDGE, 4)])
def test_heuristic_placements_are_proved_legal(machine: Machine, n: int) -> None:
    problem = _pipeline(machine, n)
    mapping = place(problem)
    for i, row in enumerate(mapping.placement):
        assert [len(t) for t in row] == list(problem.tiles[i])
        assert all((port == -1) == (not tiles) for port, tiles in zip(mapping.ports[i], row,
                                                                      strict=True))
    result = check(problem, mapping)
    assert result.legal, [v.render() for v in result.violations]


def _with(mapping: Mapping, state: int, column: int, tiles: tuple[int, ...] | None = None,
          port: int | None = None) -> Mapping:
    placement = [list(row) for row in mapping.placement]
    ports = [list(row) for row in mapping.ports]
    if tiles is not None:
        placement[state][column] = tiles
    if port is not None:
        ports[state][column] = port
    return Mapping(tuple(tuple(r) for r in placement), tuple(tuple(r) for r in ports))


def _constraints(problem: BlockProblem, mapping: Mapping) -> set[str]:
    return {v.constraint for v in check(problem, mapping).violations}


def test_each_broken_rule_is_named() -> None:
    problem = _pipeline(EDGE, 2)
    legal = place(problem)
    a, b = legal.placement[1]
    shared = _with(legal, 1, 1, (a[0], *b[1:]))
    assert _constraints(problem, shared) == {EXCLUSIVE}
    outside = _with(legal, 1, 1, (*b[:-1], 16))
    assert _constraints(problem, outside) == {ROUTE, PORT}
    assert _constraints(problem, _with(legal, 1, 1, port=8)) == {PORT}
    assert problem.flows[1], "the pipelined state has a producer-to-consumer flow"
    small = dataclasses.replace(problem, held=(0, 2_000_000, 0))
    assert _constraints(small, legal) == {SRAM}


def test_dependency_order_names_the_layers() -> None:
    # Column 1 feeds column 0, but column 0 runs first: the consumer is ahead.
    problem = _problem(EDGE, (1, 0, 1), 2, ((16, 0), (0, 0), (0, 16)), deps=((1, 0),))
    found = check(problem, place(problem)).violations
    assert [v.constraint for v in found] == [DEPENDENCY]
    assert found[0].columns == ("l1", "l0") and found[0].state == 0
    assert "producer 'l1' is not placed" in found[0].message


def test_exclusivity_diagnostic_lists_tiles_and_layers() -> None:
    problem = _pipeline(MESH2, 2)
    legal = place(problem)
    a = legal.placement[1][0]
    broken = _with(legal, 1, 1, (a[1], a[0]))
    (violation,) = check(problem, broken).violations
    assert violation.constraint == EXCLUSIVE and violation.state == 1
    assert violation.columns == ("l0", "l1") and set(violation.tiles) == set(a)
    assert violation.render().startswith("violates Map.tile_exclusive in block 'a..b', state 1")


def test_sram_rule_sums_every_partition_on_a_tile() -> None:
    problem = _pipeline(MESH2, 2)
    need = tuple(tuple(600_000 if t else 0 for t in row) for row in problem.tiles)
    heavy = dataclasses.replace(problem, sram_need=need)
    legal = place(heavy)
    assert check(heavy, legal).legal
    a = legal.placement[1][0]
    shared = _with(legal, 1, 1, (a[0], legal.placement[1][1][1]))
    assert _constraints(heavy, shared) == {EXCLUSIVE, SRAM}


def test_z3_search_never_loses_to_the_heuristic_and_stays_legal() -> None:
    problem = _pipeline(MESH2, 2)
    start = place(problem)
    found, seconds = search(problem, start, 2.0)
    assert seconds >= 0.0
    assert hop_bytes(problem, found) <= hop_bytes(problem, start)
    assert check(problem, found).legal
    big = _pipeline(Machine.cloud(), 2)
    assert search(big, place(big), 1.0)[0] == place(big)


def test_z3_search_finds_the_optimum_the_snake_cannot_reach() -> None:
    # One 5-tile layer heavy on DRAM, on a 3x3 mesh whose only port sits at the centre:
    # the best layout is the cross around the port, which no snake run is.
    machine = Machine.edge().with_changes(name="m3", rows=3, cols=3,
                                          dram_ports=(DramPort(1, 1),))
    problem = dataclasses.replace(_problem(machine, (1,), 1, ((5,),)), dram_bytes=((1000,),))
    start = place(problem)
    found, _ = search(problem, start, 10.0)
    assert found.placement == (((1, 3, 4, 5, 7),),) and found.ports == ((0,),)
    assert hop_bytes(problem, found) == 800.0 < hop_bytes(problem, start)
    assert check(problem, found).legal


def test_named_solver_reports_one_core_per_broken_rule() -> None:
    x, y = z3.Ints("x y")
    solver = NamedSolver()
    solver.add(("positive",), x > 0)
    solver.add(("small",), y < 3)
    solver.add(("distinct",), x != y)
    solver.add(("pin", "x"), x == -1)
    solver.add(("pin", "y"), y == 5)
    cores = solver.violations()
    assert sorted(sorted(map(str, core)) for core in cores) == [
        ["('pin', 'x')", "('positive',)"], ["('pin', 'y')", "('small',)"]]
    legal = NamedSolver()
    legal.add(("positive",), x > 0)
    legal.add(("pin", "x"), x == 2)
    assert legal.violations() == [] and legal.holds()
