"""The cost model: SET utilisation, placement and hops, traffic pricing, layer costs, bounds."""

from __future__ import annotations

import itertools
import math

from hypothesis import given, settings
from hypothesis import strategies as st

from crane.cost.bounds import compulsory_dram_bytes, lower_bounds
from crane.cost.layer import layer_cost
from crane.cost.placement import Mesh, Region, dram_hops, mean_hops, split_regions
from crane.cost.traffic import Traffic, dram_cycles, overlapped_latency, traffic_energy
from crane.cost.utilisation import MIN_UTILISATION, best_partition, dim_efficiency, exact_partition
from crane.hardware.machine import Machine
from crane.schedule.builders import chain, resnet50

EDGE, CLOUD = Machine.edge(), Machine.cloud()


def _brute(extents: tuple[int, int, int, int], tiles: int) -> float:
    best = 0.0
    for f in itertools.product(range(1, tiles + 1), repeat=4):
        # A dimension is never split into more parts than it has elements.
        if math.prod(f) != tiles or any(k > e for k, e in zip(f, extents, strict=True)):
            continue
        best = max(best, math.prod(dim_efficiency(e, k) for e, k in zip(extents, f, strict=True)))
    return best


@settings(max_examples=40, deadline=None)
@given(st.tuples(*[st.integers(1, 40)] * 4), st.integers(1, 24))
def test_exact_partition_matches_brute_force(extents: tuple[int, int, int, int], tiles: int) -> None:
    part = exact_partition(extents, tiles)
    best = _brute(extents, tiles)
    if best < MIN_UTILISATION:
        assert part is None
        return
    assert part is not None and part.tiles == tiles
    assert math.isclose(part.utilisation, best)


def test_best_partition_never_loses_throughput_with_more_tiles() -> None:
    extents = (3, 64, 7, 7)
    throughputs = [best_partition(extents, t).throughput for t in range(1, 145)]
    assert all(b >= a for a, b in itertools.pairwise(throughputs))
    assert best_partition(extents, 1).utilisation == 1.0


def test_dim_efficiency_pads_to_multiple() -> None:
    assert dim_efficiency(7, 2) == 7 / 8
    assert dim_efficiency(8, 4) == 1.0


def test_hops_on_mesh() -> None:
    mesh = Mesh.of(EDGE)
    first_row, last_row = Region(0, 4), Region(12, 4)
    assert mean_hops(mesh, first_row, first_row) == 1.25  # mean |c1-c2| over a 4-wide row
    assert mean_hops(mesh, first_row, last_row) == 3 + 1.25
    # One port serves a region: the corner port (0, 0) is 0, 1, 2 and 3 hops from the row.
    assert dram_hops(mesh, first_row) == 1.5
    assert split_regions(2, (3, 5)) == (Region(2, 3), Region(5, 5))


def test_snake_order_keeps_ranges_connected() -> None:
    mesh = Mesh.of(EDGE)
    # Tiles 3 and 4 are vertically adjacent in a snake, so a range across rows stays close.
    assert mean_hops(mesh, Region(3, 1), Region(4, 1)) == 1.0


def test_traffic_energy_and_time() -> None:
    t = Traffic.dram_read(1000, 2.0)
    assert t.noc_byte_hops == 2000 and t.dram_bytes == 1000
    expected = 1000 * EDGE.dram_pj_per_byte + 2000 * EDGE.noc_hop_pj_per_byte + 1000 * 1.87
    assert math.isclose(traffic_energy(t, EDGE), expected)
    assert math.isclose(dram_cycles(16e9, EDGE), 1e9)
    assert overlapped_latency(5.0, t, 16, EDGE) == max(5.0, dram_cycles(1000, EDGE),
                                                       2000 / (32 * 24e9) * 1e9)


def test_layer_cost_scales_and_resides() -> None:
    layer = chain(1).layers[0]
    one = layer_cost(layer, 1, Region(0, 16), EDGE)
    four = layer_cost(layer, 4, Region(0, 16), EDGE)
    assert four.cycles <= 4 * one.cycles + 1e-9
    # Weight reads are shared by the samples of a sub-batch, MAC energy is not.
    assert 4 * layer.macs * EDGE.mac_pj < four.energy_pj <= 4 * one.energy_pj
    assert one.weights_resident
    back = layer_cost(layer, 1, Region(0, 16), EDGE, backward=True)
    assert back.cycles >= 1.9 * one.cycles


def test_big_weights_are_restreamed() -> None:
    fc = resnet50().layer("fc")
    tiny = EDGE.with_changes(sram_bytes=64 * 1024)
    assert not layer_cost(fc, 1, Region(0, 1), tiny).weights_resident
    assert layer_cost(fc, 1, Region(0, 16), EDGE).weights_resident


def test_lower_bounds() -> None:
    net = resnet50()
    lb = lower_bounds(net, 64, CLOUD)
    assert math.isclose(lb.latency_cycles, net.total_macs * 64 / (144 * 1024))
    assert lb.energy_pj > net.total_macs * 64 * CLOUD.mac_pj
    assert compulsory_dram_bytes(net, 64, training=True) > compulsory_dram_bytes(net, 64)
    train = lower_bounds(net, 64, CLOUD, training=True)
    assert math.isclose(train.latency_cycles, 3 * lb.latency_cycles)


def test_link_share_is_the_busiest_link_of_xy_routing() -> None:
    from collections import Counter

    from crane.cost.placement import _coords, link_share
    from crane.exec.tile_sim.timing_flows import xy_route

    for rows, cols in ((4, 4), (3, 5)):
        mesh = Mesh(rows, cols, ((0, 0),))
        for src, dst in ((Region(0, 4), Region(12 % (rows * cols), 3)), (Region(1, 7), Region(0, 5)),
                         (Region(0, rows * cols), Region(2, 2))):
            a = [int(r) * cols + int(c) for r, c in _coords(mesh, src)]
            b = [int(r) * cols + int(c) for r, c in _coords(mesh, dst)]
            load: Counter[tuple[int, int]] = Counter()
            for x in a:
                for y in b:
                    route = xy_route(x, y, cols)
                    load.update(zip(route, route[1:], strict=False))
            expected = max(load.values(), default=0) / (len(a) * len(b))
            assert abs(link_share(mesh, src, dst) - expected) < 1e-12
    # Every tile to one tile: all of it arrives over the receiver's two links at most.
    assert link_share(Mesh.of(EDGE), Region(0, 16), Region(5, 1)) >= 0.25
