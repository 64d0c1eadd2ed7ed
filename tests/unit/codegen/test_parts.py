"""Split rules, ownership and the plan's reading of the placement, one by one."""

from __future__ import annotations

import pytest

from crane.codegen.boxes import full, intersect, split_span, volume
from crane.codegen.lower import lower_func
from crane.codegen.ownership import CodegenError, owners
from crane.codegen.rules import NEEDS, choose, footprint, forward_op_parts, shape_of
from crane.codegen.to_ir import tile_ops
from crane.dialects.graph import FuncOp, LayerOp, from_attribute
from crane.dialects.graph_batch import graph_batch
from crane.dialects.layers.kinds import LAYER_KINDS
from crane.exec.tile_sim.check import check
from crane.exec.tile_sim.functional import graph_func
from crane.exec.tile_sim.timing_work import compute_work
from crane.ir.attributes import ArrayAttr, DenseIntsAttr, IntAttr

from .support import body, load, prepared


def _op(func: FuncOp, kind: str) -> LayerOp:
    return next(o for o in func.body.ops if isinstance(o, LayerOp) and o.kind.name == kind)


def _func(name: str) -> FuncOp:
    return next(o for o in body(load(name)) if isinstance(o, FuncOp))


def test_split_span_is_balanced_and_covers() -> None:
    assert split_span(0, 10, 3) == [(0, 4), (4, 7), (7, 10)]
    assert split_span(2, 4, 5) == [(2, 3), (3, 4)]


def test_choose_prefers_batch_then_channel_then_space() -> None:
    box = ((0, 8), (0, 16), (0, 32), (0, 32))
    candidates = [(0,), (1,), (2, 3)]
    assert [b[0] for b in choose(box, candidates, 4)] == [(0, 2), (2, 4), (4, 6), (6, 8)]
    by_channel = choose(((0, 2), (0, 16), (0, 32), (0, 32)), candidates, 4)
    assert [b[1] for b in by_channel] == [(0, 4), (4, 8), (8, 12), (12, 16)]
    spatial = choose(((0, 1), (0, 2), (0, 32), (0, 32)), candidates, 4)
    assert len(spatial) == 4 and {b[2] for b in spatial} == {(0, 16), (16, 32)}
    assert choose(((0, 1), (0, 3)), [(0,), (1,)], 4) == [((0, 1), (0, 1)), ((0, 1), (1, 2)), ((0, 1), (2, 3))]


def test_spatial_conv_parts_read_halos_and_pad_only_borders() -> None:
    conv = _op(_func("tiny_resnet"), "conv2d")  # 3x3, padding 1, 8x3x32x32 -> 8x16x32x32
    parts = forward_op_parts(conv, (0, 1), 8, 4, False)
    assert len(parts) == 4  # one sample, 16 channels: channel split first
    assert all(p.ins[0] is not None and p.ins[0][1] == (0, 3) for p in parts)  # every input channel
    one = ((0, 1), (0, 16), (0, 16), (16, 32))
    from crane.codegen.rules import NEEDS
    ins, attrs = NEEDS[LAYER_KINDS["conv2d"].lowering](conv, one)
    assert ins[0][2:] == ((0, 17), (15, 32))
    padding = attrs["padding"]
    assert isinstance(padding, DenseIntsAttr) and tuple(padding) == (1, 0, 0, 1)
    assert isinstance(attrs["out"], IntAttr) and attrs["out"].value == 16


def test_parts_tile_the_output_disjointly() -> None:
    conv = _op(_func("tiny_resnet"), "conv2d")
    parts = forward_op_parts(conv, (0, 8), 8, 3, False)
    outs = [p.outs[0] for p in parts]
    assert sum(volume(b) for b in outs) == volume(full((8, 16, 32, 32)))
    assert all(intersect(a, b) is None for i, a in enumerate(outs) for b in outs[i + 1:])


def test_batchnorm_splits_by_channel_over_the_whole_batch() -> None:
    bn = _op(_func("tiny_resnet"), "batchnorm")
    parts = forward_op_parts(bn, (0, 8), 8, 4, False)
    assert [p.outs[0][1] for p in parts] == [(0, 4), (4, 8), (8, 12), (12, 16)]
    assert all(p.outs[0][0] == (0, 8) and p.ins[1] == (p.outs[0][1],) for p in parts)


def test_every_live_op_has_a_layer_of_the_workload() -> None:
    func = _func("tiny_resnet")
    own = owners(func, training=False)
    layer = {o: n for o, n in own.forward if isinstance(o, LayerOp)}
    assert len(layer) == len(own.forward)
    assert set(layer.values()) <= set(own.layers)
    ops = {o.kind.name for o in layer}
    assert {"conv2d", "batchnorm", "relu", "add", "global_avg_pool", "flatten", "linear"} <= ops
    assert "cross_entropy" not in ops  # dead at inference: its loss is not returned
    stem = next(o for o in layer if o.kind.name == "relu")
    assert layer[stem] == "stem.conv_bn.y"  # merged into its convolution
    flatten = next(o for o in layer if o.kind.name == "flatten")
    assert layer[flatten] == "logits"  # transparent: runs with its reader


def test_attention_runs_on_its_own_layer() -> None:
    func = _func("tiny_transformer")
    own = owners(func, training=False)
    attention = [(o, n) for o, n in own.forward if isinstance(o, LayerOp) and o.kind.name == "attention"]
    assert attention and all(n == o.results[0].name_hint for o, n in attention)
    assert not any(name.endswith((".qkv", ".core")) for name in own.layers)


def test_missing_placement_is_a_located_error() -> None:
    module, func, schedule, machine = prepared("tiny_resnet", 2, 2, False)
    block = schedule.blocks[1]
    del block.attributes["placement"], block.attributes["ports"]
    with pytest.raises(CodegenError, match="has no placement") as caught:
        lower_func(func, schedule, machine)
    assert caught.value.op is block


@pytest.mark.parametrize(("attr", "value", "message"), [
    ("placement", ArrayAttr((DenseIntsAttr((0,)),) * 7), "must hold"),
    ("ports", None, "DRAM port 9"),
    ("tiles", None, "tile ids below 4"),
])
def test_bad_placement_is_rejected(attr: str, value: ArrayAttr | None, message: str) -> None:
    module, func, schedule, machine = prepared("tiny_resnet", 2, 2, False)
    block = schedule.blocks[0]
    if attr == "placement":
        block.attributes["placement"] = value  # type: ignore[assignment]
    elif attr == "ports":
        ports = list(block.attributes["ports"])  # type: ignore[call-overload]
        block.attributes["ports"] = DenseIntsAttr(tuple(9 if p >= 0 else p for p in ports))
    else:
        lists = list(block.attributes["placement"])  # type: ignore[call-overload]
        first = next(k for k, a in enumerate(lists) if len(a))
        lists[first] = DenseIntsAttr(tuple(t + 7 for t in lists[first]))
        block.attributes["placement"] = ArrayAttr(tuple(lists))
    with pytest.raises(CodegenError, match=message):
        lower_func(func, schedule, machine)


def test_schedule_at_a_larger_batch_lowers_a_rebatched_copy() -> None:
    module, func, schedule, machine = prepared("tiny_transformer", 2, 2, False, batch=8)
    made = lower_func(func, schedule, machine)
    tokens = next(t for t in made.tensors if t.name == "tokens")
    assert tokens.shape == (8, 16)
    assert next(t for t in made.tensors if t.name == "logits").shape == (8, 16, 100)
    assert func.body.args[0].type.shape == (4, 16)  # type: ignore[attr-defined]


def test_schedule_at_a_batch_that_is_not_a_multiple_is_rejected() -> None:
    module, func, schedule, machine = prepared("tiny_transformer", 2, 2, False, batch=8)
    schedule.attributes["batch"] = IntAttr(6)
    with pytest.raises(CodegenError, match="batch 6 is not a multiple of the graph's batch 4"):
        lower_func(func, schedule, machine)


def test_rebatched_programs_are_checked_against_the_graph_at_the_schedules_batch() -> None:
    module, func, schedule, machine = prepared("tiny_transformer", 2, 2, False, batch=8)
    for op in tile_ops(lower_func(func, schedule, machine)):
        module.regions[0].blocks[0].append(op)
    seen = graph_func(module)
    assert seen is not None and seen is not func and graph_batch(seen) == 8
    assert seen.body.args[0].type.shape == (8, 16)  # type: ignore[attr-defined]
    report = check(module)
    assert report.ok, report.lines()
    assert next(c for c in report.comparisons if c.name == "logits").shape == (8, 16, 100)
    assert graph_batch(func) == 4


def test_schedule_of_another_graph_is_rejected() -> None:
    module, func, schedule, machine = prepared("tiny_resnet", 2, 2, False)
    block = schedule.blocks[0]
    names = [f"{n}x" for n in block.layer_names]
    from crane.ir.attributes import StringAttr
    block.attributes["layers"] = ArrayAttr(tuple(StringAttr(n) for n in names))
    with pytest.raises(CodegenError, match="is not in the schedule"):
        lower_func(func, schedule, machine)


def test_a_budget_trades_the_channel_split_for_one_that_fits() -> None:
    func = _func("tiny_resnet")
    conv = next(o for o in func.body.ops if isinstance(o, LayerOp) and o.kind.name == "conv2d"
                and o.results[0].name_hint == "r2.a.conv_bn.y")
    preferred = forward_op_parts(conv, (0, 1), 8, 4, False)
    assert {p.outs[0][1] for p in preferred} == {(0, 8), (8, 16), (16, 24), (24, 32)}
    fitted = forward_op_parts(conv, (0, 1), 8, 4, False, budget=60_000)
    assert len(fitted) == 4 and all(p.outs[0][1] == (0, 32) for p in fitted)  # spatial
    assert max(footprint(p) for p in fitted) <= 60_000 < max(footprint(p) for p in preferred)


def test_parts_too_big_for_sram_run_in_steps() -> None:
    import dataclasses

    from crane.codegen.program import Compute
    from crane.codegen.to_ir import tile_ops
    from crane.exec.tile_sim.check import check

    module, func, schedule, machine = prepared("tiny_resnet", 2, 2, False)
    small = dataclasses.replace(machine, sram_bytes=96 * 1024)
    made = lower_func(func, schedule, small)
    convs = [i for p in made.programs for i in p.body if isinstance(i, Compute) and i.op == "conv2d"]
    # A few output rows at a time, each into its window of the part's one output buffer.
    stepped = [c for c in convs if c.window is not None and c.window[1][2] < c.outs[0].shape[2]]
    assert stepped and all(c.ins[1].shape[1] in (3, 16, 32) for c in stepped)
    body_ = module.regions[0].blocks[0]
    for op in tile_ops(made):
        body_.append(op)
    report = check(module)
    assert all(c.ok for c in report.comparisons)


def test_kernels_too_big_for_their_sram_share_run_in_input_channel_chunks() -> None:
    from crane.codegen.rules import Part
    from crane.codegen.steps import reduction_chunks

    conv = next(o for o in _func("tiny_resnet").body.ops if isinstance(o, LayerOp)
                and o.kind.name == "conv2d" and o.operands[1].type.shape == (32, 32, 3, 3))
    row = ((0, 1), (0, 32), (0, 1), (0, 16))  # one output row: a 9,216-byte kernel slice
    ins, attrs = NEEDS[LAYER_KINDS["conv2d"].lowering](conv, row)
    part = Part((row,), ins, attrs, (False,))
    assert reduction_chunks(conv, part, 10_000, 1) == [part]  # the kernel fits
    chunks = reduction_chunks(conv, part, 4_000, 1)
    assert len(chunks) == 3
    assert [c.ins[0][1] for c in chunks] == [(0, 11), (11, 22), (22, 32)]
    assert [c.ins[1][1] for c in chunks] == [(0, 11), (11, 22), (22, 32)]
    assert all(c.outs == part.outs for c in chunks)


def test_a_channel_part_of_a_depthwise_conv_is_depthwise_over_its_own_channels() -> None:
    func = _func("mobilenet_v2")
    conv = next(o for o in func.body.ops if isinstance(o, LayerOp) and o.kind.name == "conv2d"
                and getattr(o.attributes.get("depthwise"), "value", False))
    n, c, h, w = shape_of(conv.results[0])
    part = ((0, n), (0, c // 2), (0, h), (0, w))
    ins, attrs = NEEDS[LAYER_KINDS["conv2d"].lowering](conv, part)
    assert ins[0][1] == (0, c // 2) and ins[1][0] == (0, c // 2)
    groups = attrs["groups"]
    assert isinstance(groups, IntAttr) and groups.value == c // 2
    # The simulator counts a part's work from its attributes: half the channels, half the MACs.
    merged = {k: from_attribute(v) for k, v in {**conv.attributes, **attrs}.items()}
    kernel = merged["kernel"]
    assert isinstance(kernel, tuple)
    x_shape = tuple(b - a for a, b in ins[0])
    work = compute_work("conv2d", [(n, c // 2, h, w)], [x_shape, (c // 2, 1, *kernel)], merged)
    assert work.macs == n * (c // 2) * h * w * kernel[0] * kernel[1]
