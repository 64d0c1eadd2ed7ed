"""The cost model: SET utilisation, placement and hops, traffic pricing, layer costs, bounds."""

from __future__ import annotations

import itertools
import math

from hypothesis import given, settings
from hypothesis import strategies as st

from crane.cost.bounds import compulsory_dram_bytes, lower_bounds
from crane.cost.layer import layer_cost, reduced_gradient_bytes
from crane.cost.placement import Mesh, TileRun, dram_hops, mean_hops, split_regions
from crane.cost.traffic import Traffic, dram_cycles, overlapped_latency, traffic_energy
from crane.cost.utilisation import (
    MIN_UTILISATION,
    Partition,
    best_partition,
    dim_efficiency,
    exact_partition,
)
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


def _recursive_best(extents: tuple[int, int, int, int], tiles: int,
                    floor: float = MIN_UTILISATION) -> Partition:
    """``best_partition`` as it was first written: one recursion per tile."""
    if tiles <= 1:
        return Partition(1, 1, 1, 1, 1.0)
    smaller = _recursive_best(extents, tiles - 1, floor)
    exact = exact_partition(extents, tiles, floor)
    if exact is None or exact.throughput <= smaller.throughput:
        return smaller
    return exact


@settings(max_examples=60, deadline=None)
@given(st.tuples(*[st.integers(1, 64)] * 4), st.lists(st.integers(0, 200), min_size=1, max_size=4),
       st.sampled_from([MIN_UTILISATION, 0.5, 0.9]))
def test_best_partition_equals_the_recursive_definition(
        extents: tuple[int, int, int, int], counts: list[int], floor: float) -> None:
    # Several counts in random order: the loop extends answers it kept from earlier calls.
    for tiles in counts:
        assert best_partition(extents, tiles, floor) == _recursive_best(extents, tiles, floor)


def test_best_partition_of_a_64_by_64_mesh_needs_no_deep_recursion() -> None:
    part = best_partition((8, 2048, 56, 56), 64 * 64)
    assert part.tiles <= 64 * 64 and part.utilisation >= MIN_UTILISATION


def test_dim_efficiency_pads_to_multiple() -> None:
    assert dim_efficiency(7, 2) == 7 / 8
    assert dim_efficiency(8, 4) == 1.0


def test_hops_on_mesh() -> None:
    mesh = Mesh.of(EDGE)
    first_row, last_row = TileRun(0, 4), TileRun(12, 4)
    assert mean_hops(mesh, first_row, first_row) == 1.25  # mean |c1-c2| over a 4-wide row
    assert mean_hops(mesh, first_row, last_row) == 3 + 1.25
    # Each tile uses its nearest port: (0, 0) and (0, 1) the left one, (0, 2) and (0, 3) the
    # right one: 0, 1, 1 and 0 hops.
    assert dram_hops(mesh, first_row) == 0.5
    assert split_regions(2, (3, 5)) == (TileRun(2, 3), TileRun(5, 5))


def test_snake_order_keeps_ranges_connected() -> None:
    mesh = Mesh.of(EDGE)
    # Tiles 3 and 4 are vertically adjacent in a snake, so a range across rows stays close.
    assert mean_hops(mesh, TileRun(3, 1), TileRun(4, 1)) == 1.0


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
    one = layer_cost(layer, 1, TileRun(0, 16), EDGE)
    four = layer_cost(layer, 4, TileRun(0, 16), EDGE)
    assert four.cycles <= 4 * one.cycles + 1e-9
    # Weight reads are shared by the samples of a sub-batch, MAC energy is not.
    assert 4 * layer.macs * EDGE.mac_pj < four.energy_pj <= 4 * one.energy_pj
    assert one.weights_resident
    back = layer_cost(layer, 1, TileRun(0, 16), EDGE, backward=True)
    assert back.cycles >= 1.9 * one.cycles


def test_backward_adds_the_partial_weight_gradients_of_a_shared_slice_over_the_noc() -> None:
    layer = chain(1).layers[0]
    region = TileRun(0, 16)
    back = layer_cost(layer, 16, region, EDGE, backward=True)
    sharing = back.partition.weight_copies
    assert sharing > 1  # sixteen samples on sixteen tiles: the slices are shared
    reduced = reduced_gradient_bytes(layer, back.partition)
    assert reduced == layer.weight_bytes * (sharing - 1)
    moved = reduced * mean_hops(Mesh.of(EDGE), region, region)
    assert moved > 0 and back.operand_traffic.noc_byte_hops >= moved
    alone = layer_cost(layer, 1, TileRun(0, 1), EDGE, backward=True)
    assert reduced_gradient_bytes(layer, alone.partition) == 0


def test_big_weights_are_restreamed() -> None:
    fc = resnet50().layer("fc")
    tiny = EDGE.with_changes(sram_bytes=64 * 1024)
    assert not layer_cost(fc, 1, TileRun(0, 1), tiny).weights_resident
    assert layer_cost(fc, 1, TileRun(0, 16), EDGE).weights_resident


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
        for src, dst in ((TileRun(0, 4), TileRun(12 % (rows * cols), 3)), (TileRun(1, 7), TileRun(0, 5)),
                         (TileRun(0, rows * cols), TileRun(2, 2))):
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
    assert link_share(Mesh.of(EDGE), TileRun(0, 16), TileRun(5, 1)) >= 0.25


def test_ties_of_throughput_go_to_the_split_reading_least() -> None:
    from crane.cost.utilisation import per_tile_reads, preferred_partition

    # A 3x3 conv over 16 output channels of a 32x32 image on 4 tiles: splitting columns
    # four ways, rows and columns two ways each, or channels four ways all keep every MAC
    # busy; the 2x2 spatial split reads the least input (halos on two sides only).
    extents, window = (1, 16, 32, 32), (3, 3, 3)
    best = preferred_partition(extents, 4, window)
    assert (best.kb, best.kk, best.kh, best.kw) == (1, 1, 2, 2)
    assert best.utilisation == 1.0 == best_partition(extents, 4).utilisation
    reads = {f: per_tile_reads(extents, f, window) for f in ((1, 1, 2, 2), (1, 1, 1, 4), (1, 4, 1, 1))}
    assert reads[(1, 1, 2, 2)] == min(reads.values())


def test_a_columns_tiles_hold_its_working_set() -> None:
    from crane.cost.layer import WORKING_SET_SHARE, min_tiles, working_set_bytes
    from crane.cost.utilisation import preferred_partition

    layer = resnet50().layers[0]  # the 7x7 stem: 150 KB in, 800 KB out per sample
    tiles = min_tiles(layer, 1, EDGE)
    dims = layer.dims
    part = preferred_partition((1, dims.k, dims.h, dims.w), tiles, (dims.c, dims.r, dims.s))
    assert working_set_bytes(layer, 1, part, EDGE.sram_bytes) <= WORKING_SET_SHARE * EDGE.sram_bytes
    if tiles > 1:
        fewer = preferred_partition((1, dims.k, dims.h, dims.w), tiles - 1, (dims.c, dims.r, dims.s))
        assert working_set_bytes(layer, 1, fewer, EDGE.sram_bytes) > WORKING_SET_SHARE * EDGE.sram_bytes
    assert 1 < tiles <= EDGE.tiles


def test_channel_wise_layers_read_only_their_channels() -> None:
    from crane.cost.layer import input_readers
    from crane.cost.utilisation import Partition
    from crane.cost.workload import Dims, LayerWork

    split = Partition(1, 4, 1, 1, 1.0)
    conv = LayerWork.make("c", "conv", macs=1, vector_ops=0, weight_bytes=1, output_bytes=1,
                          dims=Dims.conv(64, 32, 8, 8, 3, 3))
    pool = LayerWork.make("p", "pool", macs=0, vector_ops=1, weight_bytes=0, output_bytes=1,
                          dims=Dims.conv(64, 1, 8, 8))
    depthwise = LayerWork.make("d", "conv", macs=1, vector_ops=0, weight_bytes=1, output_bytes=1,
                               dims=Dims.conv(64, 1, 8, 8, 3, 3))
    assert [input_readers(layer, split) for layer in (conv, pool, depthwise)] == [4, 1, 1]


def test_shared_boxes_spread_in_slabs_and_weights_take_a_tree() -> None:
    from crane.cost.layer import SCATTER_BYTES, scatter_slabs, weight_spread_cycles
    from crane.cost.utilisation import Partition
    from crane.cost.workload import Dims, LayerWork

    assert scatter_slabs(2, 10 * SCATTER_BYTES, 64) == 1           # too few readers
    assert scatter_slabs(16, SCATTER_BYTES // 2, 64) == 1          # too small
    assert scatter_slabs(16, SCATTER_BYTES, 64) == 8
    assert scatter_slabs(16, SCATTER_BYTES, 3) == 3                # no more slabs than rows
    layer = LayerWork.make("c", "conv", macs=1, vector_ops=0, weight_bytes=64 * 1024,
                           output_bytes=1, dims=Dims.conv(64, 64, 8, 8, 3, 3))
    alone = weight_spread_cycles(layer, Partition(1, 16, 1, 1, 1.0), EDGE)
    shared = weight_spread_cycles(layer, Partition(16, 1, 1, 1, 1.0), EDGE)
    load = 64 * 1024 / EDGE.dram_bandwidth * EDGE.frequency_hz
    assert math.isclose(alone, load)
    # 16 tiles share the whole kernel: 8 slabs, each down a 4-deep tree.
    assert math.isclose(shared, load + 4 * (64 * 1024 / 8) / EDGE.noc_bandwidth * EDGE.frequency_hz)


def test_a_state_waits_for_its_weights_and_cannot_hide_its_last_step() -> None:
    from crane.schedule.block import Block
    from crane.schedule.evaluate import Plan, state_cost
    from crane.schedule.options import state_options

    block = Block.of(chain(1), 0, 1)
    option = state_options(block, 0, 1, EDGE)[0]
    assert option.lead > 0 and option.tail == option.cycles
    for steps in (1, 4):
        cost = state_cost(Plan(block, 1, steps, ((steps,),), (False,)), 0, EDGE)
        assert cost.latency_cycles >= steps * option.cycles + option.lead - 1e-9


def test_a_state_storing_its_results_cannot_hide_the_last_store() -> None:
    """The last step's results leave for DRAM after its compute: a block writing its
    output to DRAM waits for that store, one keeping it in SRAM does not."""
    from crane.schedule.block import Block
    from crane.schedule.options import state_options

    stored = Block.of(chain(1), 0, 1)
    kept = Block.of(chain(1), 0, 1, out_to_sram=True)
    drain = dram_cycles(stored.external_out[0] * 4, EDGE)
    assert drain > 0
    lead_stored = state_options(stored, 0, 4, EDGE)[0].lead
    assert lead_stored == state_options(kept, 0, 4, EDGE)[0].lead + drain


def test_a_weight_gradient_too_big_to_hold_goes_to_dram_and_back() -> None:
    """A tile's box of a weight gradient bigger than ``HELD_SHARE`` of SRAM is stored as it
    is made and read back by the update (codegen's flush): twice its bytes through DRAM,
    beside the compute, once per state."""
    from crane.cost.layer import HELD_SHARE, flushes_gradient

    fc = resnet50().layer("fc")
    small = EDGE.with_changes(sram_bytes=fc.weight_bytes)
    back = layer_cost(fc, 1, TileRun(0, 1), small, backward=True)
    assert flushes_gradient(fc, back.partition, small) and fc.weight_bytes > HELD_SHARE * small.sram_bytes
    assert back.flushed_gradient.dram_bytes == 2 * fc.weight_bytes
    assert layer_cost(fc, 1, TileRun(0, 1), small).flushed_gradient == Traffic()
    roomy = layer_cost(fc, 1, TileRun(0, 1), EDGE.with_changes(sram_bytes=8 * fc.weight_bytes),
                       backward=True)
    assert roomy.flushed_gradient == Traffic()


def test_backward_in_steps_reads_its_saved_input_again() -> None:
    """A tile running a layer's backward in steps reads the saved input once more (its
    gradient ops step their boxes differently); one step reads it once."""
    layer = resnet50().layers[0]
    streamed = layer_cost(layer, 8, TileRun(0, 1), EDGE, backward=True)
    assert streamed.spills.dram_bytes == layer.input_bytes * 8
    assert layer_cost(layer, 8, TileRun(0, 1), EDGE).spills == Traffic()
    roomy = EDGE.with_changes(sram_bytes=1 << 34)
    assert layer_cost(layer, 1, TileRun(0, 1), roomy, backward=True).spills == Traffic()


def test_inner_values_too_big_to_hold_go_to_dram_in_backward() -> None:
    """A conv with a batchnorm and a relu merged after it makes two inner values; when a
    tile's box of its output is bigger than what a result may hold, its backward stores
    each of them and its gradient once and reads them back twice."""
    from crane.cost.layer import backward_spills
    from crane.cost.workload import Dims, LayerWork

    conv = LayerWork.make("c", "conv", macs=10**6, vector_ops=5000, weight_bytes=1000,
                          output_bytes=4096, dims=Dims.conv(16, 16, 16, 16, 3, 3),
                          inputs=(("x", 4096),), inner_values=2)
    part = layer_cost(conv, 4, TileRun(0, 1), EDGE, backward=True).partition
    tight = EDGE.with_changes(sram_bytes=8 * 4096)
    spilled = backward_spills(conv, 4, part, tight, 1.0, streamed=False)
    assert spilled.dram_bytes == 3 * 2 * 2 * 4096 * 4
    assert backward_spills(conv, 4, part, EDGE, 1.0, streamed=False) == Traffic()
    plain = LayerWork.make("c", "conv", macs=10**6, vector_ops=0, weight_bytes=1000,
                           output_bytes=4096, dims=Dims.conv(16, 16, 16, 16, 3, 3))
    assert backward_spills(plain, 4, part, tight, 1.0, streamed=False) == Traffic()


def test_a_part_computed_in_pieces_hides_all_but_the_last_pieces_compute() -> None:
    """A backward part runs in training steps, each computed as its data arrives (the
    state's tail is the last step's compute); a forward part is one piece, its weight
    slices included (the program does not pipeline them)."""
    from crane.cost.layer import compute_pieces, input_passes
    from crane.schedule.block import Block, gradient_block
    from crane.schedule.options import state_options

    net = resnet50()
    index, conv = max(enumerate(net.layers), key=lambda pair: pair[1].weight_bytes
                      if pair[1].kind == "conv" else 0)
    one = EDGE.with_changes(rows=1, cols=1, dram_ports=Machine.edge_ports(1, 1),
                            sram_bytes=conv.weight_bytes // 2)
    alone = layer_cost(conv, 1, TileRun(0, 1), one).partition
    assert input_passes(conv, alone, one.sram_bytes) > 1
    assert compute_pieces(conv, 1, alone, one.sram_bytes, backward=False) == 1
    forward = state_options(Block.of(net, index, index + 1), 0, 1, one)[0]
    assert forward.tail == forward.cycles
    back = compute_pieces(conv, 64, alone, one.sram_bytes, backward=True)
    assert back == math.ceil(2 * (conv.input_bytes + conv.output_bytes) * 64 / (one.sram_bytes / 8)) > 1
    grad = gradient_block(Block.of(net, index, index + 1))
    option = state_options(grad, 0, 64, one, backward=True)[0]
    assert option.tail == option.cycles / back
