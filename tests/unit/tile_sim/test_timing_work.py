"""Work of one tile.compute: MACs and vector operations from the layer table's rules."""

import pytest

from crane.exec.tile_sim.timing_work import Work, compute_work
from crane.hardware.machine import Machine

CONV = {"out": 4, "kernel": (3, 3), "stride": (1, 1), "padding": (1, 1, 1, 1),
        "dilation": (1, 1), "groups": 1, "depthwise": False, "bias": False}


def test_forward_layers() -> None:
    conv = compute_work("conv2d", [(1, 4, 8, 8)], [(1, 3, 8, 8), (4, 3, 3, 3)], CONV)
    assert conv == Work(4 * 8 * 8 * 3 * 3 * 3, 0)
    assert compute_work("relu", [(2, 8)], [(2, 8)], {}) == Work(0, 16)
    assert compute_work("matmul", [(4, 16)], [(4, 8), (8, 16)], {"transpose_b": False}) == Work(512, 0)


def test_gradients_cost_a_forward_pass_each() -> None:
    forward = 4 * 8 * 8 * 27
    operands = [(1, 4, 8, 8), (1, 3, 8, 8), (4, 3, 3, 3)]
    dx = compute_work("conv2d_grad_input", [(1, 3, 8, 8)], operands, CONV)
    dw = compute_work("conv2d_grad_weight", [(4, 3, 3, 3)], operands, CONV)
    assert dx == Work(forward, 3 * 64) and dw == Work(forward, 108)
    relu = compute_work("relu_grad_input", [(2, 8)], [(2, 8), (2, 8)], {"wrt": (0,)})
    assert relu == Work(0, 16 + 16)


def test_updates_sums_fills_and_copies() -> None:
    assert compute_work("sgd", [(10,)], [(10,), (10,)], {"lr": 0.1}) == Work(0, 30)
    assert compute_work("adam", [(10,)] * 3, [(10,)] * 4, {}) == Work(0, 120)
    assert compute_work("accumulate", [(10,)], [(10,)] * 3, {}) == Work(0, 20)
    assert compute_work("fill", [(10,)], [], {"value": 1.0}) == Work(0, 10)
    assert compute_work("concat", [(1, 8)], [(1, 4), (1, 4)], {"axis": 1}) == Work(0, 8)
    assert compute_work("reshape", [(8,)], [(2, 4)], {"shape": (8,)}) == Work(0, 0)
    with pytest.raises(ValueError, match="unknown compute op"):
        compute_work("frobnicate", [(1,)], [(1,)], {})


def test_cycles_overlap_the_array_and_the_vector_unit() -> None:
    edge = Machine.edge()                       # 1024 MACs and 64 lanes per cycle
    assert Work(4096, 64).cycles(edge) == pytest.approx(4.0)
    assert Work(1024, 640).cycles(edge) == pytest.approx(10.0)
    assert Work(0, 0).cycles(edge) == 0.0
    assert Work(1000, 10).energy_pj(edge) == pytest.approx(1000 * edge.mac_pj + 10 * edge.vector_op_pj)


def test_a_batchnorm_over_the_batch_costs_the_same_whole_or_in_parts() -> None:
    """A batchnorm over the batch's own statistics does its sums, deviations and
    normalisation whether one op runs it or its parts over boxes of the batch do; with the
    running statistics it is a scale and a shift."""
    from crane.dialects.layers.costs import BATCH_STATISTICS_FLOPS, BATCH_STATISTICS_GRAD_FLOPS
    from crane.exec.tile_sim.timing_work import BATCHNORM_PART_OPS

    x, c = (2, 4, 8, 8), (4,)
    elements = 2 * 4 * 8 * 8
    batch = compute_work("batchnorm", [x], [x, c, c], {"eps": 1e-5, "running": False})
    running = compute_work("batchnorm", [x], [x, c, c, c, c], {"eps": 1e-5, "running": True})
    assert batch == Work(0, BATCH_STATISTICS_FLOPS * elements) and running == Work(0, 2 * elements)
    parts = BATCHNORM_PART_OPS
    assert parts["batchnorm_sum"] + parts["batchnorm_sqdev"] + parts["batchnorm_apply"] \
        == BATCH_STATISTICS_FLOPS
    assert parts["batchnorm_grad_sums"] + parts["batchnorm_grad_apply"] == BATCH_STATISTICS_GRAD_FLOPS
    grad = compute_work("batchnorm_grad_input", [x], [x, x, c, c], {"running": False, "wrt": (0,)})
    assert grad == Work(0, BATCH_STATISTICS_GRAD_FLOPS * elements)
