"""Steps of a tile's part: weight slices that fit their budget, cuts that read the least
input, the cost model counting the same slices and halos, and no steps where nothing
streams in."""

from __future__ import annotations

import dataclasses
import math

from crane.codegen.boxes import volume
from crane.codegen.lower import lower_func
from crane.codegen.program import Compute, Copy, Load, Recv
from crane.codegen.rules import NEEDS, Part
from crane.codegen.steps import temporal_chunks
from crane.codegen.to_ir import tile_ops
from crane.cost.layer import (
    STREAM_SHARE,
    WEIGHT_SLICE_SHARE,
    halo_factor,
    input_passes,
    step_halo_factor,
)
from crane.cost.utilisation import Partition
from crane.dialects.graph import FuncOp, LayerOp
from crane.exec.tile_sim.check import check
from crane.schedule.from_graph import workload_of

from .support import body, load, prepared

ELEM = 4


def _conv(name: str, weight_shape: tuple[int, ...]) -> tuple[FuncOp, LayerOp]:
    func = next(o for o in body(load(name)) if isinstance(o, FuncOp))
    conv = next(o for o in func.body.ops if isinstance(o, LayerOp)
                and o.kind.name == "conv2d" and o.operands[1].type.shape == weight_shape)
    return func, conv


def _part(conv: LayerOp, out: tuple[tuple[int, int], ...]) -> Part:
    ins, attrs = NEEDS[conv.kind.lowering](conv, out)
    return Part((out,), ins, attrs, (False,))


def _weight_bytes(conv: LayerOp, part: Part) -> int:
    weights = set(conv.weights)
    return ELEM * sum(volume(b) for v, b in zip(conv.operands, part.ins, strict=True)
                      if b is not None and v in weights)


def test_weight_slices_each_fit_their_budget_and_the_model_counts_them() -> None:
    func, conv = _conv("tiny_resnet", (32, 32, 3, 3))
    out = ((0, 1), (0, 32), (0, 16), (0, 16))
    part = _part(conv, out)
    weights = _weight_bytes(conv, part)
    # Five slices would hold ceil(32 / 5) = 7 channels each, over the budget: six do.
    budget = weights // 5 + 1
    steps = temporal_chunks(conv, part, 10**9, ELEM, budget)
    assert len(steps) == 6
    assert all(_weight_bytes(conv, s) <= budget for s in steps)
    layer = next(w for w in workload_of(func, ELEM).layers
                 if w.name == conv.results[0].name_hint or conv.results[0].name_hint in w.name)
    sram = int(budget / WEIGHT_SLICE_SHARE)
    assert input_passes(layer, Partition(1, 1, 1, 1, 1.0), sram) == len(steps)
    assert input_passes(layer, Partition(1, 1, 1, 1, 1.0), 8 * sram) == 1  # they fit


def test_steps_cut_the_batch_before_rows_when_that_reads_less_input() -> None:
    _, conv = _conv("tiny_resnet", (32, 32, 3, 3))
    out = ((0, 2), (0, 32), (0, 16), (0, 16))
    part = _part(conv, out)
    steps = temporal_chunks(conv, part, 1, ELEM)  # as many steps as the axes allow
    assert len(steps) > 2
    two = temporal_chunks(conv, part, _activation_budget(conv, part, 2), ELEM)
    assert [s.outs[0][0] for s in two] == [(0, 1), (1, 2)]  # a sample each: no halo read twice


def test_patches_read_less_than_thin_rows() -> None:
    _, conv = _conv("tiny_resnet", (32, 32, 3, 3))
    out = ((0, 1), (0, 32), (0, 16), (0, 16))
    part = _part(conv, out)
    steps = temporal_chunks(conv, part, _activation_budget(conv, part, 16), ELEM)
    rows_only = sum(volume(s.ins[0]) for s in _rows(conv, out, 16))
    assert sum(volume(s.ins[0]) for s in steps if s.ins[0] is not None) < rows_only
    covered = sorted((s.outs[0][2], s.outs[0][3]) for s in steps)
    assert len(covered) == len(set(covered)) >= 16


def _activation_budget(conv: LayerOp, part: Part, steps: int) -> int:
    """A step budget that asks for ``steps`` steps of ``part``."""
    weights = set(conv.weights)
    total = ELEM * (volume(part.outs[0]) + sum(
        volume(b) for v, b in zip(conv.operands, part.ins, strict=True)
        if b is not None and v not in weights))
    return -(-total // steps)


def _rows(conv: LayerOp, out: tuple[tuple[int, int], ...], count: int) -> list[Part]:
    rows = out[2][1] - out[2][0]
    spans = [(out[2][0] + k * rows // count, out[2][0] + (k + 1) * rows // count)
             for k in range(count)]
    return [_part(conv, (out[0], out[1], span, out[3])) for span in spans]


def test_inference_steps_only_what_streams_in() -> None:
    # On 64 KiB tiles tiny_resnet's parts run in steps; an op whose inputs are all on its
    # tile already runs whole: a step of it would only copy its box out of those buffers.
    module, func, schedule, machine = prepared("tiny_resnet", 1, 1, False)
    small = dataclasses.replace(machine, sram_bytes=64 * 1024)
    made = lower_func(func, schedule, small)
    stepped = copied = 0
    for program in made.programs:
        writer: dict[int, str] = {}
        for ins in program.body:
            if isinstance(ins, Load | Recv):
                writer[ins.buffer.id] = "transfer"
            elif isinstance(ins, Copy):
                writer[ins.dst.id] = "copy"
            elif isinstance(ins, Compute):
                stepped += ins.window is not None
                copied += ins.window is not None and all(writer.get(b.id) == "copy"
                                                         for b in ins.ins)
                writer.update((b.id, "compute") for b in ins.outs)
    assert stepped and not copied
    body_ = module.regions[0].blocks[0]
    for op in tile_ops(made):
        body_.append(op)
    assert all(c.ok for c in check(module).comparisons)


def test_the_model_reads_the_halos_codegen_reads() -> None:
    # A spatial split's input boxes overlap by the window's excess over its stride: the
    # model's halo factor is the codegen boxes' volume over the input's, exactly.
    for shape in ((16, 3, 3, 3), (32, 16, 3, 3), (32, 32, 3, 3)):  # stride 1, 2, 1
        func, conv = _conv("tiny_resnet", shape)
        x, y = conv.operands[0].type.shape, conv.results[0].type.shape
        layer = next(w for w in workload_of(func, ELEM).layers
                     if w.name.startswith(conv.results[0].name_hint or "?"))
        for kh, kw in ((4, 4), (2, 4), (2, 1)):
            read = sum(volume(_part(conv, ((0, 1), (0, y[1]), rows, cols)).ins[0] or ())
                       for rows in _cuts(y[2], kh) for cols in _cuts(y[3], kw))
            model = halo_factor(layer.dims, Partition(1, 1, kh, kw, 1.0))
            assert model > 1.0
            assert math.isclose(read / (x[1] * x[2] * x[3]), model)


def _cuts(extent: int, parts: int) -> list[tuple[int, int]]:
    return [(i * extent // parts, (i + 1) * extent // parts) for i in range(parts)]


def test_the_model_reads_the_halos_codegen_steps_read() -> None:
    # A tile whose part exceeds its step budget runs it in steps over cuts of its output
    # (samples first, then square patches) and reads each cut's window overlap again: the
    # model's step halo factor is the steps' input over the part's, within 1%, from the
    # 256 KiB tiles of research meshes to gpu11's 6 MiB.
    for name, shape in (("tiny_resnet", (32, 32, 3, 3)), ("vgg16_trunk", (64, 64, 3, 3)),
                        ("vgg16_trunk", (256, 256, 3, 3))):
        func, conv = _conv(name, shape)
        x, y = conv.operands[0].type.shape, conv.results[0].type.shape
        layer = next(w for w in workload_of(func, ELEM).layers
                     if w.name.startswith(conv.results[0].name_hint or "?"))
        for samples, sram in ((1, 2**18), (4, 2**18), (1, 2**20), (4, 6 * 2**20)):
            part = _part(conv, ((0, samples), (0, y[1]), (0, y[2]), (0, y[3])))
            steps = temporal_chunks(conv, part, int(STREAM_SHARE * sram), ELEM,
                                    int(WEIGHT_SLICE_SHARE * sram), 1 if layer.vector_ops else 0)
            slices = len({step.outs[0][1] for step in steps})
            read = sum(volume(step.ins[0] or ()) for step in steps) / slices
            model = step_halo_factor(layer, samples, Partition(1, 1, 1, 1, 1.0), sram)
            assert math.isclose(read / (samples * x[1] * x[2] * x[3]), model, rel_tol=0.01), \
                (name, shape, samples, sram)
