"""The mesh heatmap: SRAM and link traffic cross-checked against the IR, and its files."""

from __future__ import annotations

import pytest

from crane.dialects.tile import AllocOp, LoadOp, ProgramOp, StoreOp
from crane.dialects.tile_sync import SendOp
from crane.hardware.machine import Machine
from crane.mapping.hops import hop_bytes
from crane.mapping.problem import Mapping
from crane.schedule.record import block_of
from crane.viz.mesh import mesh_dot, mesh_picture, neighbour_links, render_mesh
from crane.viz.mesh_load import dram_split, from_schedules, mesh_load, port_tile, problem_of
from crane.viz.source import PictureError, machine, programs, schedules, workloads

from .dot_check import check_dot
from .support import compiled, png_size, shapes_in, svg_ids, svg_root, svg_texts


def _distance(a: int, b: int, cols: int) -> int:
    (ra, ca), (rb, cb) = divmod(a, cols), divmod(b, cols)
    return abs(ra - rb) + abs(ca - cb)


def _bytes(op: SendOp | LoadOp | StoreOp) -> int:
    owner = op.buffer.owner_op
    assert isinstance(owner, AllocOp)
    return owner.byte_size


@pytest.mark.parametrize("mesh", ["edge", "mesh2x2"])
def test_tile_programs_load_matches_the_instructions(mesh: str) -> None:
    module = compiled("lower-to-tile", machine=mesh)
    target = machine(module)
    load = mesh_load(module)
    assert load.source == "tile programs" and "alloc offsets" in load.sram_measure
    hop_total, ports = 0, [0] * len(target.dram_ports)
    for program in programs(module):
        ops = program.instructions
        peak = max(op.offset + op.byte_size for op in ops if isinstance(op, AllocOp))
        assert load.sram[program.tile] == peak
        for op in ops:
            if isinstance(op, SendOp):
                hop_total += _bytes(op) * _distance(program.tile, op.peer, target.cols)
            elif isinstance(op, LoadOp | StoreOp):
                ports[op.port] += _bytes(op)
                hop_total += _bytes(op) * _distance(program.tile, port_tile(target, op.port),
                                                    target.cols)
    assert sum(load.links.values()) == pytest.approx(hop_total)
    assert list(load.ports) == pytest.approx(ports)
    assert set(load.links) <= set(neighbour_links(target.rows, target.cols))
    assert max(load.sram) <= target.sram_bytes


def test_unallocated_programs_use_the_live_peak() -> None:
    module = compiled("lower-to-tile")
    for program in programs(module):
        for op in program.instructions:
            if isinstance(op, AllocOp):
                op.attributes["offset"] = type(op.attributes["offset"])(-1)
    load = mesh_load(module)
    assert "not allocated" in load.sram_measure
    assert all(0 < s <= Machine.edge().sram_bytes for s in load.sram)


def test_mapped_schedule_traffic_equals_the_map_pass_hop_bytes() -> None:
    module = compiled("segment,map")
    target = machine(module)
    load = from_schedules(module, target)
    expected = 0.0
    for schedule in schedules(module):
        workload = workloads(module, target)[schedule.func_name]
        for op in schedule.blocks:
            problem = problem_of(op, target, workload)
            given = op.mapping()
            assert given is not None
            expected += hop_bytes(problem, Mapping.from_flat(given[0], given[1], problem.columns))
            block = block_of(workload, op.layer_names)
            assert block is not None
            for i in range(problem.states):
                for j in problem.placed_columns(i):
                    read, written = dram_split(block, problem.workloads[i],
                                               op.attributes["subbatch"].value,
                                               list(op.attributes["fused"]), j)
                    assert read + written == problem.dram_bytes[i][j]
    assert sum(load.links.values()) == pytest.approx(expected, rel=1e-9)
    assert max(load.sram) > 0 and "placement estimate" in load.sram_measure


def test_svg_png_and_dot_hold_every_tile_link_and_port() -> None:
    picture = mesh_picture(mesh_load(compiled("lower-to-tile")))
    root = svg_root(render_mesh(picture, "svg"))
    tiles, links, ports = svg_ids(root, "tile-"), svg_ids(root, "link-"), svg_ids(root, "port-")
    assert {f"tile-{t}" for t in range(16)} <= set(tiles)
    assert set(links) == {f"link-{a}-{b}" for a, b in neighbour_links(4, 4)}
    assert len(links) == 48
    assert {f"port-{k}" for k in range(8)} <= set(ports)
    assert all(shapes_in(tiles[f"tile-{t}"]) >= 1 for t in range(16))
    lines = {line.strip() for text in svg_texts(root) for line in text.splitlines()}
    assert {f"t{t}" for t in range(16)} | {f"P{k}" for k in range(8)} <= lines
    width, height = png_size(render_mesh(picture, "png"))
    assert width > 400 and height > 400
    dot = check_dot(mesh_dot(picture))
    assert set(dot.nodes) == {f"t{t}" for t in range(16)} | {f"P{k}" for k in range(8)}
    mesh_edges = [(a, b) for a, b, _ in dot.edges if not a.startswith("P")]
    assert sorted(mesh_edges) == sorted((f"t{a}", f"t{b}") for a, b in neighbour_links(4, 4))
    assert all(dot.nodes[f"t{t}"]["pos"].endswith("!") for t in range(16))


def test_missing_placement_is_an_error() -> None:
    with pytest.raises(PictureError, match="add the 'map' pass"):
        mesh_load(compiled("segment"))
    with pytest.raises(PictureError, match="segment,map"):
        mesh_load(compiled(""))


def test_programs_are_preferred_to_the_schedule() -> None:
    module = compiled("lower-to-tile")
    assert programs(module) and all(isinstance(p, ProgramOp) for p in programs(module))
    assert mesh_load(module).source == "tile programs"
