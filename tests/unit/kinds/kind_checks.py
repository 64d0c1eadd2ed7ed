"""Every consumer of a layer kind, as one check per consumer: each finds the kind's facts
or registered behaviour and uses them on the sample ops (``kind_samples``), and raises
``AssertionError`` (or the consumer's own error) when one is missing.

``test_kinds`` runs every check on every kind; ``bench/kind_mutations.py`` deletes each
kind from each table in turn and counts the checks that catch it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

import numpy as np
from kind_samples import Samples

from crane.codegen.boxes import Box
from crane.codegen.rules import NEEDS, forward_op_parts, split_training
from crane.dialects.graph import LAYER_OPS, LayerOp, from_attribute
from crane.dialects.graph_grad import GRAD_INPUT_OPS, GRAD_WEIGHT_OPS
from crane.dialects.layers import activations
from crane.dialects.layers.definition import LayerKind, Lowering
from crane.dialects.layers.values import AttrValue
from crane.exec.backward import GRAD_INPUT, GRAD_WEIGHT
from crane.exec.evaluate import forward, gradient
from crane.exec.forward import FORWARD
from crane.exec.kernels.activation import ACTIVATIONS
from crane.exec.tile_sim.timing_work import compute_work
from crane.frontend.onnx import ops_elementwise
from crane.frontend.onnx.registry import CONVERTERS
from crane.highlight import crn_lexer
from crane.ir.core import Value
from crane.ir.traits import Pure
from crane.ir.types import TensorType
from crane.schedule.from_graph import workload_of
from crane.tiling.chains import SPATIAL_OPS, to_layer, why_not_tileable

ROOT = Path(__file__).resolve().parents[3]
DATA_MOVEMENT = frozenset({Lowering.RESHAPE, Lowering.PERMUTE, Lowering.ALONG_AXIS, Lowering.GATHER})
"""Lowering classes of kinds that only move data (and so cost no FLOPs)."""

Check = Callable[[LayerKind, Samples], None]


def _shape(value: Value) -> tuple[int, ...]:
    assert isinstance(value.type, TensorType)
    return tuple(value.type.shape)


def _array(value: Value, rng: np.random.Generator) -> np.ndarray:
    assert isinstance(value.type, TensorType)
    if not value.type.element.is_float:
        return np.zeros(value.type.shape, np.int64)  # valid ids and labels
    return rng.standard_normal(value.type.shape)


def check_graph_ops(kind: LayerKind, s: Samples) -> None:
    """The graph dialect has the kind's op and gradient ops; only a random kind is impure."""
    op_class = LAYER_OPS[kind.name]
    assert op_class.kind == kind
    assert GRAD_INPUT_OPS[kind.name].kind == kind
    assert (kind.name in GRAD_WEIGHT_OPS) == kind.has_weights
    assert any(isinstance(t, Pure) for t in op_class.traits) != kind.is_random


def check_interpreter(kind: LayerKind, s: Samples) -> None:
    """The reference interpreter's forward and gradient rules run on the sample ops."""
    assert kind.name in FORWARD and kind.name in GRAD_INPUT
    assert (kind.name in GRAD_WEIGHT) == kind.has_weights
    if kind.name in {k.name for k in activations.KINDS}:
        assert kind.name in ACTIVATIONS, "an activation registers its kernels"
    rng = np.random.default_rng(0)
    for op in s.forward[kind.name][:1]:
        ins = [_array(v, rng) for v in op.inputs]
        weights = [_array(v, rng) for v in op.weights]
        out = forward(kind.name, op.layer_attrs, ins, weights, _shape(op.results[0]),
                      dtype=np.float64)
        assert out.shape == _shape(op.results[0])
        wrt = tuple(i for i, v in enumerate(op.inputs) if isinstance(v.type, TensorType)
                    and v.type.element.is_float)
        grads = gradient(kind.name, "input", op.layer_attrs, np.ones_like(out), ins, weights,
                         wrt, dtype=np.float64)
        assert [g.shape for g in grads] == [ins[i].shape for i in wrt]


def check_cost(kind: LayerKind, s: Samples) -> None:
    """MACs for the dense kinds only; FLOPs for every kind that computes."""
    for op in s.forward[kind.name]:
        figures = op.accounting()
        assert (figures["macs"] > 0) == (kind.lowering in (Lowering.CONV, Lowering.LINEAR,
                                                           Lowering.MATMUL, Lowering.ATTENTION))
        assert (figures["flops"] > 0) == (kind.lowering not in DATA_MOVEMENT)


def _cut(array: np.ndarray, box: Box) -> np.ndarray:
    return array[tuple(slice(a, b) for a, b in box)]


def check_codegen(kind: LayerKind, s: Samples) -> None:
    """Code generation splits the kind's ops over two and four tiles by the rule of its lowering
    class, and each part, run by the interpreter on the boxes it reads with the attributes
    it gets, computes its box of the whole op's result, or a partial sum that the parts over
    that box add up to (while training: batch statistics
    and dropout masks included); the gradient of a kind needing the whole batch is never
    cut along the batch."""
    assert kind.lowering in NEEDS
    rng = np.random.default_rng(1)
    for op in s.forward[kind.name]:
        batch = _shape(op.results[0])[0] if _shape(op.results[0]) else 1
        operands = [_array(v, rng) for v in op.operands]
        split = len(op.inputs)

        def run(arrays: list[np.ndarray], attrs: dict[str, AttrValue], shape: tuple[int, ...],
                op: LayerOp = op, split: int = split) -> np.ndarray:
            return forward(kind.name, attrs, arrays[:split], arrays[split:], shape,
                           dtype=np.float64, training=True, key="k")

        whole = run(operands, op.layer_attrs, _shape(op.results[0]))
        for tiles in (2, 4):
            parts = forward_op_parts(op, (0, batch), batch, tiles, True)
            assert parts
            sums: dict[Box, np.ndarray] = {}
            for part in parts:
                attrs = {**op.layer_attrs, **{k: from_attribute(v) for k, v in part.attrs.items()}}
                ins = [_cut(a, box) for a, box in zip(operands, part.ins, strict=True) if box is not None]
                expected = _cut(whole, part.outs[0])
                got = run(ins, attrs, expected.shape)
                if part.partial[:1] == (True,):  # a partial sum: the parts over one box add up to it
                    sums[part.outs[0]] = sums.get(part.outs[0], 0) + got
                    continue
                assert np.allclose(got, expected, atol=1e-9), part
            for box, total in sums.items():
                assert np.allclose(total, _cut(whole, box), atol=1e-9), (kind.name, tiles, box)
    for grad in s.grads[kind.name]:
        parts = split_training(grad, 2, 2)
        whole_batch = kind.has_batch_statistics or kind.is_random or kind.is_loss
        cut = any(box[0] != (0, 2) for p in parts for box in p.outs if box and len(box) > 1
                  and _shape(grad.results[0])[:1] == (2,))
        assert not (whole_batch and cut)


def check_tiling(kind: LayerKind, s: Samples) -> None:
    """Segmented fused tiling keeps the kind in spatial chains, or says why it ends one."""
    tiling = kind.tiling
    if tiling.spatial is None:
        assert tiling.reason
        for op in s.forward[kind.name]:
            assert why_not_tileable(op) == tiling.reason
        return
    layer_kind = SPATIAL_OPS[tiling.spatial]
    nchw = [op for op in s.forward[kind.name] if len(_shape(op.inputs[0])) == 4]
    assert nchw, f"no 4-d sample of the spatial kind {kind.name}"
    for op in nchw:
        assert why_not_tileable(op) is None
        assert to_layer(op).kind is layer_kind


def check_schedule(kind: LayerKind, s: Samples) -> None:
    """The scheduler's workload builder has a rule for what the kind is (``Work``)."""
    for func in s.funcs:
        if any(isinstance(op, LayerOp) and op.kind.name == kind.name for op in func.body.ops):
            workload_of(func)


def check_tile_simulator(kind: LayerKind, s: Samples) -> None:
    """The timing simulator prices the kind's compute instructions and their gradients."""
    for op in s.forward[kind.name]:
        work = compute_work(kind.name, [_shape(op.results[0])],
                            [_shape(v) for v in op.operands], op.layer_attrs)
        assert work.macs >= 0 and work.vector_ops >= 0
    for grad in s.grads[kind.name]:
        name = f"{kind.name}_grad_{grad.role}"
        compute_work(name, [_shape(r) for r in grad.results],
                     [_shape(v) for v in grad.operands], grad.layer_attrs)


def check_onnx(kind: LayerKind, s: Samples) -> None:
    """ONNX models reach the kind through a declared one-to-one import or converters the
    importer has, or the kind says why none does."""
    onnx = kind.onnx
    assert onnx.ops or onnx.via or onnx.absent
    for op in onnx.ops:
        assert (op, kind.name) in ops_elementwise.ONE_TO_ONE[op.op_type]
        assert op.op_type in CONVERTERS
    for op_type in onnx.via:
        assert op_type in CONVERTERS, f"no ONNX converter for {op_type}"


def check_highlighting(kind: LayerKind, s: Samples) -> None:
    assert kind.name in crn_lexer.LAYER_KINDS


def check_docs(kind: LayerKind, s: Samples) -> None:
    """The language reference's table of kinds has a row for it."""
    table = (ROOT / "docs" / "crn-language.md").read_text()
    assert f"\n| `{kind.name}` |" in table


CHECKS: Mapping[str, Check] = {
    "graph ops": check_graph_ops,
    "interpreter": check_interpreter,
    "cost": check_cost,
    "codegen": check_codegen,
    "tiling": check_tiling,
    "schedule": check_schedule,
    "tile simulator": check_tile_simulator,
    "onnx": check_onnx,
    "highlighting": check_highlighting,
    "docs": check_docs,
}
"""Consumer -> its check; every kind goes through every one."""
