"""Shared bandwidth and the scoreboard: contention on ports and links, double buffering.

Same machine as ``test_timing_basic``: a 1024-byte transfer alone takes 64 cycles.
"""

import pytest
from test_timing_fixtures import (
    alloc,
    buf,
    dram,
    load,
    machine,
    module,
    program,
    recv,
    relu,
    send,
    store,
)

from crane.exec.tile_sim.timing import TimingConfig, simulate
from crane.exec.tile_sim.timing_deps import ByteMap, Scoreboard
from crane.exec.tile_sim.timing_flows import fair_rates, xy_route
from crane.ir.core import Operation

S = "32x32"


def loads_through(ports: tuple[int, int], **changes: float) -> float:
    tiles = [program(t, 2, "\n".join([alloc("x", S), load("x", S, "x", ports[t])]))
             for t in range(2)]
    return simulate(module(machine(1, 2, [(0, 0), (0, 1)], **changes), dram("x", (32, 32)),
                           *tiles)).cycles


def test_one_port_shared_by_two_loads_doubles_their_time() -> None:
    assert loads_through((0, 1)) == pytest.approx(64)
    assert loads_through((0, 0)) == pytest.approx(128)


def test_dram_aggregate_bandwidth_is_shared_by_all_ports() -> None:
    # 16 B/cycle of DRAM for two ports: each load gets 8 B/cycle.
    assert loads_through((0, 1), dram_bandwidth=16.0e9) == pytest.approx(128)


def sends(pairs: list[tuple[int, int, int]], cols: int = 3) -> float:
    """Tiles of a 1 x ``cols`` mesh send 1024 bytes each: (src, dst, tag)."""
    bodies: dict[int, list[str]] = {t: [] for t in range(cols)}
    for k, (src, dst, tag) in enumerate(pairs):
        bodies[src] += [alloc(f"s{k}", S), send(f"s{k}", S, dst, tag)]
        bodies[dst] += [alloc(f"r{k}", S), recv(f"r{k}", S, src, tag)]
    programs = [program(t, cols, "\n".join(b)) for t, b in bodies.items() if b]
    return simulate(module(machine(1, cols, [(0, 0)]), *programs)).cycles


def test_two_transfers_on_one_link_take_twice_as_long() -> None:
    assert sends([(0, 2, 1)]) == pytest.approx(64 * 1)          # two hops, no contention
    assert sends([(0, 1, 1), (1, 2, 2)]) == pytest.approx(64)   # disjoint links
    assert sends([(0, 2, 1), (1, 2, 2)]) == pytest.approx(128)  # both cross link 1 -> 2
    assert sends([(0, 1, 1), (2, 1, 2)]) == pytest.approx(64)   # opposite directions


def test_max_min_fair_sharing_gives_leftovers_to_the_unblocked() -> None:
    # Link 1->2 carries A, B, D (16/3 B/cycle each: 192 cycles); link 0->1 carries A and C,
    # and C gets what A leaves: 16 - 16/3 = 32/3 B/cycle, 96 cycles.
    rates = fair_rates({"A": ("l01", "l12"), "B": ("l12",), "C": ("l01",), "D": ("l12",)},
                       {"l01": 16.0, "l12": 16.0})
    assert rates["A"] == pytest.approx(16 / 3) and rates["C"] == pytest.approx(32 / 3)
    assert sends([(0, 2, 1), (1, 2, 2), (0, 1, 3), (1, 2, 4)]) == pytest.approx(192)


def test_xy_routes_go_along_the_row_first() -> None:
    assert xy_route(0, 5, 3) == (0, 1, 2, 5)
    assert xy_route(5, 0, 3) == (5, 4, 3, 0)
    assert xy_route(4, 4, 3) == (4,)


def double_buffer_program(x1_offset: int, with_stores: bool = False) -> str:
    """load x0; relu y0 <- x0; [store y0]; load x1; relu y1 <- x1; [store y1].

    Offsets are IR bytes (a 32x32 f32 buffer spans 4096 of them); time counts 1-byte elements.
    """
    lines = [alloc("x0", S, 0), alloc("y0", S, 4096), alloc("x1", S, x1_offset),
             alloc("y1", S, 8192), load("x0", S, "x", 0), relu("y0", "x0", S)]
    lines += [store("y0", S, "y", 0)] if with_stores else []
    lines += [load("x1", S, "x", 0), relu("y1", "x1", S)]
    lines += [store("y1", S, "y", 0)] if with_stores else []
    return "\n".join([machine(1, 1, [(0, 0)]), dram("x", (32, 32)), dram("y", (32, 32)),
                      program(0, 1, "\n".join(lines))])


def test_a_load_into_bytes_still_being_read_waits_for_the_reader() -> None:
    # Same bytes: load x1 waits for relu 0 (64..192): 192..256, relu 256..384.
    assert simulate(module(double_buffer_program(0))).cycles == pytest.approx(384)
    # Other bytes: load x1 runs 64..128 during relu 0; relu 1 192..320.
    assert simulate(module(double_buffer_program(12288))).cycles == pytest.approx(320)


def test_in_order_issue_lets_a_waiting_store_block_the_next_load() -> None:
    decoupled = simulate(module(double_buffer_program(12288, with_stores=True)))
    strict = simulate(module(double_buffer_program(12288, with_stores=True)),
                      config=TimingConfig(in_order=True))
    # decoupled: store 0 192..256, relu 1 192..320, store 1 320..384;
    # in order: load x1 cannot start before store 0 (192), and then shares port 0 with it
    # (8 B/cycle each): both end at 320; relu 1 320..448, store 1 448..512.
    assert decoupled.cycles == pytest.approx(384)
    assert strict.cycles == pytest.approx(512)


def test_unallocated_buffers_never_alias() -> None:
    assert simulate(module(double_buffer_program(-1))).cycles == pytest.approx(320)


def test_bytemap_tracks_partial_overlaps() -> None:
    bytes_ = ByteMap()
    deps: set[int] = set()
    bytes_.write((0, 100), 0, deps)
    bytes_.read((50, 150), "compute", 1, deps)
    assert deps == {0}
    deps = set()
    bytes_.write((120, 200), 2, deps)        # overlaps the read of 1 only
    assert deps == {1}
    deps = set()
    bytes_.write((0, 10), 3, deps)           # overlaps the write of 0 only
    assert deps == {0}
    deps = set()
    bytes_.read((0, 300), "store", 4, deps)
    assert deps == {0, 2, 3}


def test_scoreboard_barrier_orders_everything() -> None:
    board = Scoreboard()
    assert board.add(0, "load", [], [(0, 8)], True) == ()
    assert board.add(1, "noc", [(0, 8)], [], False) == (0,)
    assert board.add(2, "compute", [], [(64, 72)], True) == ()
    assert board.barrier(3) == (0, 1, 2)
    assert board.add(4, "compute", [], [(128, 136)], True) == (3,)


def join_program() -> Operation:
    """Tile 0 joins two halves of a 32x32 buffer: its own half by a windowed copy (512
    vector ops: 64 cycles), tile 1's by a windowed receive (512 B: 32 cycles); then a
    relu reads the whole (128 cycles)."""
    whole, half = buf("32x32"), buf("32x16")
    windows = "offsets = array<i64: 0, 16>, shape = array<i64: 32, 16>"
    joiner = "\n".join([
        alloc("own", "32x16"), alloc("j", "32x32"),
        f"  tile.copy %j, %own {{src_offsets = array<i64: 0, 0>, dst_offsets = array<i64: 0, 0>, "
        f"shape = array<i64: 32, 16>}} : ({whole}, {half}) -> ()",
        f"  tile.recv %j {{peer = 1, tag = 1, {windows}}} : ({whole}) -> ()",
        relu("j", "j", "32x32"),
    ])
    sender = "\n".join([alloc("h", "32x16"), send("h", "32x16", 0, 1)])
    return module(machine(1, 2, [(0, 0)]), program(0, 2, joiner), program(1, 2, sender))


def test_a_windowed_copy_and_receive_into_one_buffer_overlap() -> None:
    # Disjoint windows: the receive (0..32) runs beside the copy (0..64), the relu waits
    # for both (64..192); were the copy a whole write, the receive would wait for it.
    assert simulate(join_program()).cycles == pytest.approx(192)
